package vecchia

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpc-mc/gpc/core"
)

// TestClassLogLik checks the one-point multinomial probit likelihood's
// quadrature against the bivariate normal closed form for three classes
// (the two differences u_y - u_j have correlation 1/2), its C = 2 case
// against Phi, and its gradient and negative Hessian against central
// differences of itself, on margins from close calls to far tails.
func TestClassLogLik(t *testing.T) {
	// likTol is the quadrature's agreement with the closed forms, relative
	// to the probability (its log's absolute error).
	const likTol = 1e-10
	var w likWork
	r := rand.New(rand.NewPCG(1, 2))
	for it := range 300 {
		sd := 0.3 + 1.5*r.Float64()
		scale := []float64{0.5, 3, 12}[it%3]
		x := []float64{scale * r.NormFloat64(), scale * r.NormFloat64(), scale * r.NormFloat64()}
		y := r.IntN(3)
		lp := classLogLik(x, y, sd, nil, nil, &w)
		var o [2]int
		q := 0
		for c := range 3 {
			if c != y {
				o[q] = c
				q++
			}
		}
		s2 := math.Sqrt2 * sd
		// The bivariate normal's error is absolute (1e-15): compare where
		// the probability is not small, and in the tails against a
		// trapezoidal rule on a fine grid.
		if exact := core.BivariateUpper(-(x[y]-x[o[0]])/s2, -(x[y]-x[o[1]])/s2, 0.5); exact > 1e-4 && !(math.Abs(lp-math.Log(exact)) <= likTol) {
			t.Errorf("x %v, y %d, sd %.3g: log P %.15g, bivariate %.15g", x, y, sd, lp, math.Log(exact))
		}
		if ref := trapezoidLogLik(x, y, sd); !(math.Abs(lp-ref) <= likTol*math.Max(1, math.Abs(ref))) {
			t.Errorf("x %v, y %d, sd %.3g: log P %.15g, trapezoidal rule %.15g", x, y, sd, lp, ref)
		}
		x2 := x[:2]
		y2 := y % 2
		if lp2, exact2 := classLogLik(x2, y2, sd, nil, nil, &w), core.LogPhi((x2[y2]-x2[1-y2])/s2); !(math.Abs(lp2-exact2) <= likTol) {
			t.Errorf("two classes, x %v, y %d: log P %.15g, log Phi %.15g", x2, y2, lp2, exact2)
		}
	}
	// derivTol bounds the derivatives' disagreement with central
	// differences of step 1e-4 (their error is about 1e-8 times the
	// third derivative).
	const derivTol = 1e-6
	for it := range 60 {
		c := 3 + it%4
		x := make([]float64, c)
		for i := range x {
			x[i] = 2 * r.NormFloat64()
		}
		y, sd := r.IntN(c), 0.5+r.Float64()
		g, h := make([]float64, c), make([]float64, c*c)
		classLogLik(x, y, sd, g, h, &w)
		gp, hp := make([]float64, c), make([]float64, c*c)
		for i := range c {
			const eps = 1e-4
			xp := append([]float64(nil), x...)
			xp[i] += eps
			fp := classLogLik(xp, y, sd, gp, hp, &w)
			gi := append([]float64(nil), gp...)
			xp[i] -= 2 * eps
			fm := classLogLik(xp, y, sd, gp, hp, &w)
			if d := (fp - fm) / (2 * eps); !(math.Abs(d-g[i]) <= derivTol) {
				t.Errorf("C %d, x %v: gradient %d %.10g, difference %.10g", c, x, i, g[i], d)
			}
			for j := range c {
				if d := -(gi[j] - gp[j]) / (2 * eps); !(math.Abs(d-h[i*c+j]) <= derivTol) {
					t.Errorf("C %d, x %v: negative Hessian (%d, %d) %.10g, difference %.10g", c, x, i, j, h[i*c+j], d)
				}
			}
		}
		// The common shift of the classes changes nothing.
		for i := range c {
			s := 0.0
			for j := range c {
				s += h[i*c+j]
			}
			if math.Abs(s) > 1e-9 {
				t.Errorf("C %d: the negative Hessian's row %d sums to %.3g", c, i, s)
			}
		}
	}
}

// trapezoidLogLik is classLogLik's log probability by the trapezoidal
// rule on a grid of step 5e-3 over [-150, 150] (the integrand is smooth and
// its tails Gaussian: the rule converges faster than any power of the
// step), summed in logs.
func trapezoidLogLik(x []float64, y int, sd float64) float64 {
	const step = 5e-3
	var terms []float64
	mx := math.Inf(-1)
	for t := -150.0; t <= 150; t += step {
		v := core.LogPhiDensity(t)
		for j := range x {
			if j != y {
				v += core.LogPhi((x[y]-x[j])/sd + t)
			}
		}
		terms = append(terms, v)
		mx = math.Max(mx, v)
	}
	s := 0.0
	for _, v := range terms {
		s += math.Exp(v - mx)
	}
	return mx + math.Log(s*step)
}
