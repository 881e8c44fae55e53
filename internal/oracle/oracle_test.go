package oracle

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/floats/scalar"
)

// TestOneFactorEquicorrelated: loadings 1/sqrt(2) give correlation 1/2,
// whose orthant probability is exactly 1/(N+1).
func TestOneFactorEquicorrelated(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 2, 10, 100, 1000, 5000} {
		d := make([]float64, n)
		for i := range d {
			d[i] = 1 / math.Sqrt2
		}
		if got, want := OneFactorLogP(d), -math.Log(float64(n+1)); !scalar.EqualWithinAbs(got, want, 1e-11) {
			t.Errorf("N = %d: %.15g, want %.15g", n, got, want)
		}
	}
}

// TestOneFactorStep: halving the step changes nothing, for the paper's
// Experiment 1 loadings.
func TestOneFactorStep(t *testing.T) {
	t.Parallel()
	d := make([]float64, 500)
	for i := range d {
		d[i] = math.Sin(float64(3*i+1)) * 0.999
	}
	c := make([]float64, len(d))
	for i, di := range d {
		c[i] = di / math.Sqrt(1-di*di)
	}
	a, b := oneFactor(c, 64), oneFactor(c, 128)
	if !scalar.EqualWithinAbs(a, b, 1e-11) {
		t.Errorf("step h: %.15g, h/2: %.15g", a, b)
	}
}

func TestClosedForms(t *testing.T) {
	t.Parallel()
	inf := math.Inf(1)
	// The bivariate orthant by quadrature against Sheppard's formula.
	for _, rho := range []float64{-0.9, 0, 0.5, 0.99} {
		got := LogBox2([2]float64{}, 1, rho, 1, [2]float64{0, 0}, [2]float64{inf, inf})
		if want := math.Log(Orthant2(rho)); !scalar.EqualWithinAbs(got, want, 1e-12) {
			t.Errorf("rho %v: quadrature %v, closed form %v", rho, got, want)
		}
	}
	// The trivariate quadrature against the trivariate closed form.
	s := [9]float64{1, 0.5, -0.2, 0.5, 1, 0.3, -0.2, 0.3, 1}
	got := LogBox3([3]float64{}, s, [3]float64{}, [3]float64{inf, inf, inf})
	if want := math.Log(Orthant3(0.5, -0.2, 0.3)); !scalar.EqualWithinAbs(got, want, 1e-10) {
		t.Errorf("trivariate: quadrature %v, closed form %v", got, want)
	}
	// Independent components: a product of univariate probabilities.
	got = LogBox3([3]float64{1, 0, 0}, [9]float64{4, 0, 0, 0, 1, 0, 0, 0, 9}, [3]float64{0, -1, math.Inf(-1)}, [3]float64{inf, 1, 3})
	want := math.Log(0.5*math.Erfc(-0.5/math.Sqrt2)) + math.Log(math.Erf(1/math.Sqrt2)) + math.Log(0.5*math.Erfc(-1/math.Sqrt2))
	if !scalar.EqualWithinAbs(got, want, 1e-10) {
		t.Errorf("independent box: %v, want %v", got, want)
	}
}
