package vecchia

import (
	"math"
	"testing"
)

// TestOrthantMoments checks the orthant's moments where its expectation
// propagation is exact: one constraint, and independent constraints (a
// diagonal covariance), against the truncated normal's closed form, on
// means from deep in the orthant to far outside it.
func TestOrthantMoments(t *testing.T) {
	// tol is the agreement with the closed form, relative to the
	// standard deviation (the mean) and the variance.
	const tol = 1e-9
	trunc := func(mu, v float64) (m, s float64) {
		sd := math.Sqrt(v)
		a := mu / sd
		lam := math.Exp(-a*a/2) / math.Sqrt(2*math.Pi) / (0.5 * math.Erfc(-a/math.Sqrt2))
		return mu + sd*lam, v * (1 - a*lam - lam*lam)
	}
	var w orthantWork
	for _, mu := range []float64{-6, -2, -0.3, 0, 0.7, 3, 8} {
		for _, v := range []float64{0.04, 1, 9} {
			m, sig, ok := orthantMoments([]float64{mu}, []float64{v}, &w)
			em, ev := trunc(mu, v)
			if !ok || math.Abs(m[0]-em) > tol*math.Sqrt(v) || math.Abs(sig[0]-ev) > tol*v {
				t.Errorf("q = 1, mu %g, v %g: (%g, %g), closed form (%g, %g)", mu, v, m, sig, em, ev)
			}
		}
	}
	mus, vs := []float64{-2.5, 0.4, 1.5}, []float64{0.5, 2, 1}
	m, sig, ok := orthantMoments(mus, []float64{vs[0], 0, 0, 0, vs[1], 0, 0, 0, vs[2]}, &w)
	if !ok {
		t.Fatal("diagonal covariance refused")
	}
	for j := range 3 {
		em, ev := trunc(mus[j], vs[j])
		if math.Abs(m[j]-em) > tol*math.Sqrt(vs[j]) || math.Abs(sig[j*3+j]-ev) > tol*vs[j] {
			t.Errorf("diagonal, d_%d: (%g, %g), closed form (%g, %g)", j, m[j], sig[j*3+j], em, ev)
		}
		for i := range 3 {
			if i != j && math.Abs(sig[j*3+i]) > tol {
				t.Errorf("diagonal: covariance (%d, %d) = %g, want 0", j, i, sig[j*3+i])
			}
		}
	}
	if _, _, ok := orthantMoments([]float64{0, 0}, []float64{1, 2, 2, 1}, &w); ok {
		t.Error("an indefinite covariance accepted")
	}
}
