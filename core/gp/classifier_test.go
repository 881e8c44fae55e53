package gp_test

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"testing"

	"github.com/gpc-mc/gpc/core/gp"
)

// covFeatures returns n points of d features, uniform on [-2, 2), and
// labels +-1, from a fixed seed.
func covFeatures(n, d int) (x, y []float64) {
	rng := rand.New(rand.NewPCG(7, uint64(n)))
	x, y = make([]float64, n*d), make([]float64, n)
	for i := range x {
		x[i] = 4*rng.Float64() - 2
	}
	for i := range y {
		y[i] = float64(1 - 2*rng.IntN(2))
	}
	return x, y
}

// TestClassifierCov: the tiled, parallel R is bit for bit the entries'
// definition y_i y_j k(x_i, x_j) + [i = j], for sizes around the tile's and
// any GOMAXPROCS, and so are the test rows y_j k(x_j, x*) (x* a training
// point: its variance is then R's diagonal), and so are the rows
// ClassifierCovRows hands over as they are done. Not parallel: it sets
// GOMAXPROCS.
func TestClassifierCov(t *testing.T) {
	kernels := []gp.Kernel{
		{Kind: gp.KernelRBF, Alpha: []float64{1}, Beta: 10},
		{Kind: gp.KernelARD, Alpha: []float64{0.5, 2, 1.3}, Beta: 2, Bias: 0.25},
		{Kind: gp.KernelMatern32, Alpha: []float64{1.1}, Beta: 10},
		{Kind: gp.KernelLinear, Beta: 1.5, Bias: 0.1},
	}
	for _, n := range []int{1, 2, 63, 64, 65, 200} {
		x, y := covFeatures(n, 3)
		for _, k := range kernels {
			want := make([]float64, n*n)
			for i := range n {
				for j := range n {
					want[i*n+j] = y[i] * y[j] * k.Eval(x[i*3:i*3+3], x[j*3:j*3+3])
				}
				want[i*n+i]++
			}
			row := make([]float64, n)
			for i := range n {
				v := gp.ClassifierTestRow(row, &k, x, 3, y, x[i*3:i*3+3])
				for j := range n {
					if want := y[j] * k.Eval(x[j*3:j*3+3], x[i*3:i*3+3]); row[j] != want {
						t.Fatalf("%v kernel, n = %d: test row %d, entry %d is %v, want %v", k.Kind, n, i, j, row[j], want)
					}
				}
				if v != want[i*n+i] {
					t.Errorf("%v kernel, n = %d: test row %d's variance %v, want %v", k.Kind, n, i, v, want[i*n+i])
				}
			}
			for _, procs := range []int{1, 2, 3} {
				old := runtime.GOMAXPROCS(procs)
				got := gp.ClassifierCov(&k, x, 3, y)
				runtime.GOMAXPROCS(old)
				if !slices.Equal(got, want) {
					t.Errorf("%v kernel, n = %d, GOMAXPROCS %d: R differs from its definition", k.Kind, n, procs)
				}
				// The rows handed over are final when they are, in order.
				var seen []float64
				runtime.GOMAXPROCS(procs)
				gp.ClassifierCovRows(&k, x, 3, y, func(rows []float64) {
					if len(rows) <= len(seen) || len(rows)%n != 0 {
						t.Fatalf("%v kernel, n = %d: rows handed over as %d entries after %d", k.Kind, n, len(rows), len(seen))
					}
					seen = append(seen, rows[len(seen):]...)
				})
				runtime.GOMAXPROCS(old)
				if !slices.Equal(seen, want) {
					t.Errorf("%v kernel, n = %d, GOMAXPROCS %d: the rows handed over differ from R's definition", k.Kind, n, procs)
				}
			}
		}
	}
}

// BenchmarkClassifierCov times the RBF classifier covariance of 2-D points
// (the N = 10^4 pipeline's kernel step at n = 10000).
func BenchmarkClassifierCov(b *testing.B) {
	k := &gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{1}, Beta: 10}
	for _, n := range []int{2000, 10000} {
		x, y := covFeatures(n, 2)
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			b.SetBytes(int64(8 * n * n))
			for range b.N {
				gp.ClassifierCov(k, x, 2, y)
			}
		})
	}
}
