package gemm

import (
	"math"
	"math/rand/v2"
	"testing"
)

// naiveNT is C = A B' by sequential dot products, for comparison within
// rounding.
func naiveNT(m, n, k int, a []float64, lda int, b []float64, ldb int) []float64 {
	c := make([]float64, m*n)
	for i := range m {
		for j := range n {
			s := 0.0
			for l := range k {
				s += a[i*lda+l] * b[j*ldb+l]
			}
			c[i*n+j] = s
		}
	}
	return c
}

func randSlice(r *rand.Rand, n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = r.NormFloat64()
	}
	return s
}

// shapes exercise every remainder: rows mod 3, columns mod 8, the inner
// dimension mod 8 and across chunks (KC).
var shapes = [][3]int{
	{1, 1, 1}, {2, 3, 5}, {3, 8, 8}, {4, 9, 7}, {5, 16, 16}, {7, 17, 33},
	{10, 64, 64}, {11, 5, 200}, {31, 64, 511}, {32, 63, 512}, {29, 70, 513},
	{6, 8, 1100}, {100, 24, 3}, {97, 40, 0},
}

// TestNTAgreesWithNaive checks the product against sequential dot
// products: the error of a dot product is at most about k eps sum |a b|.
// Every path, openblas included, is checked.
func TestNTAgreesWithNaive(t *testing.T) {
	for _, kern := range kernels {
		t.Run("path="+kern.name, func(t *testing.T) { agreesWithNaive(t, kern) })
	}
}

func agreesWithNaive(t *testing.T, kern *kernel) {
	r := rand.New(rand.NewPCG(1, 2))
	var w Workspace
	for _, s := range shapes {
		m, n, k := s[0], s[1], s[2]
		lda, ldb, ldc := k+3, k+1, n+2
		a, b := randSlice(r, m*lda), randSlice(r, n*ldb)
		for _, add := range []bool{false, true} {
			c := randSlice(r, m*ldc)
			c0 := append([]float64(nil), c...)
			w.ntGrouped(kern, m, n, k, a, lda, 8, b, ldb, c, ldc, 8, add, 1)
			want := naiveNT(m, n, k, a, lda, b, ldb)
			for i := range m {
				for j := range n {
					wij := want[i*n+j]
					if add {
						wij += c0[i*ldc+j]
					}
					bound := 0.0
					for l := range k {
						bound += math.Abs(a[i*lda+l] * b[j*ldb+l])
					}
					tol := 4 * float64(k+1) * 0x1p-53 * (bound + math.Abs(c0[i*ldc+j]))
					if d := math.Abs(c[i*ldc+j] - wij); d > tol {
						t.Fatalf("%v add=%v: C[%d][%d] = %v, want %v (tolerance %.3g)", s, add, i, j, c[i*ldc+j], wij, tol)
					}
				}
				// Padding of C is never written.
				for j := n; j < ldc && i*ldc+j < len(c); j++ {
					if c[i*ldc+j] != c0[i*ldc+j] {
						t.Fatalf("%v: C[%d][%d] beyond n was written", s, i, j)
					}
				}
			}
		}
	}
}

// TestNTWorkersIdentical checks that the result does not depend on the
// number of goroutines, on every path.
func TestNTWorkersIdentical(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	m, n, k := 3001, 40, 700
	if testing.Short() {
		m = 601 // still up to 8 workers (emulated arm64 runs -short)
	}
	a, b := randSlice(r, m*k), randSlice(r, n*k)
	var w Workspace
	for _, kern := range kernels {
		c1 := make([]float64, m*n)
		w.ntGrouped(kern, m, n, k, a, k, 8, b, k, c1, n, 8, false, 1)
		for _, workers := range []int{2, 3, 8} {
			c := make([]float64, m*n)
			w.ntGrouped(kern, m, n, k, a, k, 8, b, k, c, n, 8, false, workers)
			for i := range c {
				if math.Float64bits(c[i]) != math.Float64bits(c1[i]) {
					t.Fatalf("%s, workers=%d: element %d is %v, one worker gave %v", kern.name, workers, i, c[i], c1[i])
				}
			}
		}
	}
}

// grouped copies a rows x cols row-major matrix into groups of 8 columns,
// each a rows x 8 row-major block (the last zero-padded).
func grouped(x []float64, rows, cols int) []float64 {
	g := (cols + 7) / 8
	out := make([]float64, g*rows*8)
	for i := range rows {
		for l := range cols {
			out[l/8*rows*8+i*8+l%8] = x[i*cols+l]
		}
	}
	return out
}

// TestNTGrouped checks that A and C stored by groups of 8 columns give
// exactly the row-major product, on every path.
func TestNTGrouped(t *testing.T) {
	for _, kern := range kernels {
		t.Run("path="+kern.name, func(t *testing.T) { ntGrouped(t, kern) })
	}
}

func ntGrouped(t *testing.T, kern *kernel) {
	r := rand.New(rand.NewPCG(7, 8))
	var w Workspace
	for _, s := range shapes {
		m, n, k := s[0], s[1], s[2]
		a, b := randSlice(r, m*k), randSlice(r, n*k)
		for _, add := range []bool{false, true} {
			c0 := randSlice(r, m*n)
			want := append([]float64(nil), c0...)
			w.ntGrouped(kern, m, n, k, a, k, 8, b, k, want, n, 8, add, 1)
			ga, gc := grouped(a, m, k), grouped(c0, m, n)
			if k == 0 {
				ga = []float64{}
			}
			w.ntGrouped(kern, m, n, k, ga, 8, 8*m, b, k, gc, 8, 8*m, add, 2)
			if got := grouped(want, m, n); len(got) > 0 {
				for i := range got {
					if math.Float64bits(gc[i]) != math.Float64bits(got[i]) {
						t.Fatalf("%v add=%v: grouped element %d is %v, row-major %v", s, add, i, gc[i], got[i])
					}
				}
			}
		}
	}
}
