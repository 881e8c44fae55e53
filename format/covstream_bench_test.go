package format

import (
	"io"
	"math"
	"strconv"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"
)

// benchCov is an n x n covariance with labels and t test rows, shaped as
// gpc-kernel's output.
func benchCov(n, t int) *Covariance {
	c := &Covariance{N: n, Cov: make([]float64, n*n), Y: make([]float64, n)}
	for i := range n {
		c.Y[i] = float64(1 - 2*(i%2))
		for j := range n {
			c.Cov[i*n+j] = math.Exp(-math.Abs(float64(i-j)) / 64)
		}
	}
	c.Test = TestRows{Cov: make([]float64, t*n), Var: make([]float64, t), Y: make([]float64, t)}
	for r := range t {
		c.Test.Var[r], c.Test.Y[r] = 2, 1
		for j := range n {
			c.Test.Cov[r*n+j] = math.Exp(-math.Abs(float64(r-j)) / 64)
		}
	}
	return c
}

// BenchmarkCovStream writes an N x N covariance stream (with N/10 test
// rows) through a pipe and reads it back, as gpc-kernel | gpc-train do;
// write= times the writer alone (to io.Discard).
func BenchmarkCovStream(b *testing.B) {
	for _, n := range []int{1000, 4000} {
		c := benchCov(n, n/10)
		meta := map[string]string{"gpc:tool": "bench"}
		b.Run("write/n="+strconv.Itoa(n), func(b *testing.B) {
			b.SetBytes(int64(8 * n * (n + n/10)))
			for range b.N {
				if err := WriteCovariance(io.Discard, c, meta, 4096, memory.NewGoAllocator()); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("pipe/n="+strconv.Itoa(n), func(b *testing.B) {
			b.SetBytes(int64(8 * n * (n + n/10)))
			for range b.N {
				pr, pw := io.Pipe()
				go func() {
					pw.CloseWithError(WriteCovariance(pw, c, meta, 4096, memory.NewGoAllocator()))
				}()
				got, err := ReadCovariance(pr, "bench", memory.NewGoAllocator())
				if err != nil {
					b.Fatal(err)
				}
				if got.N != n || len(got.Test.Var) != n/10 {
					b.Fatalf("read back N %d with %d test rows", got.N, len(got.Test.Var))
				}
			}
		})
	}
}
