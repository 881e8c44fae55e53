package core

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpc-mc/gpc/internal/gemm"
)

// TestSolveRowsUpperAndMulLowerRight: the panel routines of testBasis
// against the definitions (back substitution, the plain product), on
// sizes around their block widths, with 1 and 2 workers giving the same
// bits.
func TestSolveRowsUpperAndMulLowerRight(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, sz := range [][2]int{{1, 1}, {3, 5}, {7, 64}, {5, 65}, {4, 300}, {9, 513}} {
		rows, n := sz[0], sz[1]
		l := make([]float64, n*n)
		for i := range n {
			for j := 0; j < i; j++ {
				l[i*n+j] = rng.NormFloat64() / math.Sqrt(float64(n))
			}
			l[i*n+i] = 1 + rng.Float64()
		}
		y := make([]float64, rows*n)
		for i := range y {
			y[i] = rng.NormFloat64()
		}
		var got [2][]float64
		var prod [2][]float64
		for wk := 1; wk <= 2; wk++ {
			var ws gemm.Workspace
			x := append([]float64(nil), y...)
			solveRowsUpper(x, rows, l, n, &ws, wk)
			got[wk-1] = x
			w := make([]float64, rows*n)
			mulLowerRight(w, y, rows, l, n, &ws, wk)
			prod[wk-1] = w
		}
		for i := range got[0] {
			if math.Float64bits(got[0][i]) != math.Float64bits(got[1][i]) || math.Float64bits(prod[0][i]) != math.Float64bits(prod[1][i]) {
				t.Fatalf("%dx%d: 1 and 2 workers differ at %d", rows, n, i)
			}
		}
		for r := range rows {
			// x' l = y': back substitution, and (y l)_c = sum_k y_k l[k][c].
			want := make([]float64, n)
			for c := n - 1; c >= 0; c-- {
				s := y[r*n+c]
				for k := c + 1; k < n; k++ {
					s -= want[k] * l[k*n+c]
				}
				want[c] = s / l[c*n+c]
			}
			for c := range n {
				if d := math.Abs(got[0][r*n+c] - want[c]); d > 1e-12*(1+math.Abs(want[c])) {
					t.Fatalf("%dx%d: solve row %d col %d = %v, want %v", rows, n, r, c, got[0][r*n+c], want[c])
				}
				p := 0.0
				for k := c; k < n; k++ {
					p += y[r*n+k] * l[k*n+c]
				}
				if d := math.Abs(prod[0][r*n+c] - p); d > 1e-12*(1+math.Abs(p)) {
					t.Fatalf("%dx%d: product row %d col %d = %v, want %v", rows, n, r, c, prod[0][r*n+c], p)
				}
			}
		}
	}
}
