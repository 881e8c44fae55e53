// Package oracle computes exact Gaussian orthant and box probabilities for
// the special covariances where they reduce to closed forms or
// one-dimensional integrals. The tests and the benchmark harness judge the
// Monte Carlo estimators against these values (DESIGN.md section 6); none of
// it is Monte Carlo.
package oracle

import (
	"math"
	"slices"

	"github.com/gpc-mc/gpc/core"
)

// Orthant2 returns P(v1 >= 0, v2 >= 0) for a centered bivariate normal with
// correlation rho (Sheppard 1899): 1/4 + asin(rho)/(2 pi).
func Orthant2(rho float64) float64 {
	return 0.25 + math.Asin(rho)/(2*math.Pi)
}

// Orthant3 returns P(v >= 0) for a centered trivariate normal with
// correlations r12, r13, r23: 1/8 + (asin r12 + asin r13 + asin r23)/(4 pi).
func Orthant3(r12, r13, r23 float64) float64 {
	return 0.125 + (math.Asin(r12)+math.Asin(r13)+math.Asin(r23))/(4*math.Pi)
}

// OneFactor returns R = d d' + diag(1 - d^2), row-major: the covariance of
// the paper's Experiment 1 (unit variances, correlations d_i d_j). It
// panics if some |d_i| >= 1.
func OneFactor(d []float64) []float64 {
	n := len(d)
	r := make([]float64, n*n)
	for i, di := range d {
		if !(math.Abs(di) < 1) {
			panic("oracle: one-factor loadings must lie in (-1, 1)")
		}
		for j, dj := range d {
			r[i*n+j] = di * dj
		}
		r[i*n+i] = 1
	}
	return r
}

// OneFactorLogP returns log P(v >= 0) for v ~ N(0, OneFactor(d)), from the
// one-dimensional integral of the paper's eq. PROBVAL (Dunnett and Sobel
// 1955):
//
//	P = integral phi(u) prod_i Phi(c_i u) du,   c_i = d_i / sqrt(1 - d_i^2),
//
// evaluated in log space: the log integrand f(u) = log phi(u) + sum_i
// log Phi(c_i u) is strictly concave, so its maximum u* is found by bisection
// on f', and the trapezoid rule (geometrically convergent for such smooth,
// rapidly decaying integrands) is summed with log-sum-exp over a grid around
// u* until the terms fall 80 nats below the peak. The step is 1/64 of the
// curvature width at the peak; halving it changes the result by less than
// 1e-12 in the tests' settings.
func OneFactorLogP(d []float64) float64 {
	c := make([]float64, len(d))
	for i, di := range d {
		c[i] = di / math.Sqrt(1-di*di)
	}
	return oneFactor(c, 64)
}

func oneFactor(c []float64, perWidth float64) float64 {
	g := newGrid(c, perWidth)
	return core.LogSumExp(g.logf) + math.Log(g.h)
}

// grid is the trapezoid grid of the log integrand
// f(u) = log phi(u) + sum_i log Phi(c_i u) around its maximum.
type grid struct {
	u, logf []float64
	h       float64
}

func newGrid(c []float64, perWidth float64) *grid {
	f := func(u float64) float64 {
		s := core.LogPhiDensity(u)
		for _, ci := range c {
			s += core.LogPhi(ci * u)
		}
		return s
	}
	// f'(u) = -u + sum c_i lambda(c_i u), lambda(x) = phi(x)/Phi(x).
	// f''(u) = -1 - sum c_i^2 lambda(x) (x + lambda(x)).
	lambda := func(x float64) float64 { return math.Exp(core.LogPhiDensity(x) - core.LogPhi(x)) }
	df := func(u float64) float64 {
		s := -u
		for _, ci := range c {
			s += ci * lambda(ci*u)
		}
		return s
	}
	lo, hi := -100.0, 100.0
	for range 200 {
		mid := 0.5 * (lo + hi)
		if df(mid) > 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	u0 := 0.5 * (lo + hi)
	curv := 1.0
	for _, ci := range c {
		x := ci * u0
		l := lambda(x)
		curv += ci * ci * l * (x + l)
	}
	g := &grid{h: 1 / math.Sqrt(curv) / perWidth}
	f0 := f(u0)
	g.u, g.logf = append(g.u, u0), append(g.logf, f0)
	for _, dir := range []float64{-1, 1} {
		for k := 1; ; k++ {
			u := u0 + dir*float64(k)*g.h
			v := f(u)
			g.u, g.logf = append(g.u, u), append(g.logf, v)
			if v < f0-80 {
				break
			}
		}
	}
	return g
}

// LinearClassifier returns the exact log marginal likelihood and test
// posteriors of the probit GP classifier with the linear kernel
// k(x, x') = beta x x' on one feature (the paper's Experiment 2, eq. ONE-D):
// the latent function is f(x) = sqrt(beta) x u with u ~ N(0, 1), so
//
//	L  = integral phi(u) prod_i Phi(y_i sqrt(beta) x_i u) du,
//	J* = integral phi(u) Phi(sqrt(beta) x* u) prod_i Phi(...) du / L,
//
// both on the grid of OneFactorLogP.
func LinearClassifier(x, y []float64, beta float64, xs []float64) (logML float64, post []float64) {
	sb := math.Sqrt(beta)
	c := make([]float64, len(x))
	for i := range x {
		c[i] = y[i] * sb * x[i]
	}
	g := newGrid(c, 64)
	logML = core.LogSumExp(g.logf) + math.Log(g.h)
	mx := slices.Max(g.logf)
	w := make([]float64, len(g.logf))
	sw := 0.0
	for k, l := range g.logf {
		w[k] = math.Exp(l - mx)
		sw += w[k]
	}
	post = make([]float64, len(xs))
	for j, x := range xs {
		s := 0.0
		for k, u := range g.u {
			s += w[k] * core.Phi(sb*x*u)
		}
		post[j] = s / sw
	}
	return logML, post
}

// LogBox2 returns log P(a <= v <= b) for a bivariate normal with mean mu and
// covariance [[s11, s12], [s12, s22]], by Gauss-Legendre quadrature of
//
//	integral_{a1}^{b1} phi_1(x) P(a2 <= v2 <= b2 | v1 = x) dx
//
// over the first variable's interval intersected with mu1 +- 40 sd, in
// 400 panels of 20 points: exact to about 1e-13 for the smooth integrands
// of the tests.
func LogBox2(mu [2]float64, s11, s12, s22 float64, a, b [2]float64) float64 {
	sd1 := math.Sqrt(s11)
	beta := s12 / s11
	cs := math.Sqrt(s22 - s12*s12/s11)
	lo := math.Max(a[0], mu[0]-40*sd1)
	hi := math.Min(b[0], mu[0]+40*sd1)
	if !(lo < hi) {
		return math.Inf(-1)
	}
	g := func(x float64) float64 {
		z := (x - mu[0]) / sd1
		m := mu[1] + beta*(x-mu[0])
		return core.LogPhiDensity(z) - math.Log(sd1) + core.LogPhiDiff((a[1]-m)/cs, (b[1]-m)/cs)
	}
	return logQuad(g, lo, hi, 400)
}

// LogBox3 returns log P(a <= v <= b) for a trivariate normal with mean mu and
// covariance s (row-major 3 x 3), by nested Gauss-Legendre quadrature over
// the first two variables of the conditional probability of the third.
func LogBox3(mu [3]float64, s [9]float64, a, b [3]float64) float64 {
	// v1 ~ N(mu1, s11); v2 | v1 and v3 | v1, v2 by Schur complements.
	s11, s12, s13, s22, s23, s33 := s[0], s[1], s[2], s[4], s[5], s[8]
	sd1 := math.Sqrt(s11)
	b21 := s12 / s11
	v22 := s22 - s12*s12/s11
	sd2 := math.Sqrt(v22)
	// Cov(v3, (v1, v2)) regression coefficients.
	det := s11*s22 - s12*s12
	c1 := (s13*s22 - s23*s12) / det
	c2 := (s23*s11 - s13*s12) / det
	v33 := s33 - (c1*s13 + c2*s23)
	sd3 := math.Sqrt(v33)
	lo1, hi1 := math.Max(a[0], mu[0]-40*sd1), math.Min(b[0], mu[0]+40*sd1)
	if !(lo1 < hi1) {
		return math.Inf(-1)
	}
	outer := func(x1 float64) float64 {
		m2 := mu[1] + b21*(x1-mu[0])
		lo2, hi2 := math.Max(a[1], m2-40*sd2), math.Min(b[1], m2+40*sd2)
		if !(lo2 < hi2) {
			return math.Inf(-1)
		}
		inner := func(x2 float64) float64 {
			m3 := mu[2] + c1*(x1-mu[0]) + c2*(x2-mu[1])
			return core.LogPhiDensity((x2-m2)/sd2) - math.Log(sd2) + core.LogPhiDiff((a[2]-m3)/sd3, (b[2]-m3)/sd3)
		}
		return core.LogPhiDensity((x1-mu[0])/sd1) - math.Log(sd1) + logQuad(inner, lo2, hi2, 60)
	}
	return logQuad(outer, lo1, hi1, 60)
}

// logQuad returns log integral_lo^hi exp(g(x)) dx by composite 20-point
// Gauss-Legendre quadrature over `panels` equal panels, summed in log space.
func logQuad(g func(float64) float64, lo, hi float64, panels int) float64 {
	x, w := gaussLegendre20()
	h := (hi - lo) / float64(panels)
	terms := make([]float64, 0, panels*len(x))
	for p := range panels {
		c := lo + (float64(p)+0.5)*h
		for k := range x {
			terms = append(terms, g(c+0.5*h*x[k])+math.Log(0.5*h*w[k]))
		}
	}
	return core.LogSumExp(terms)
}

// gaussLegendre20 returns the nodes and weights of the 20-point
// Gauss-Legendre rule on [-1, 1], computed by Newton's method on the
// Legendre polynomial (Golub and Welsch would do as well).
func gaussLegendre20() (x, w []float64) {
	const n = 20
	x, w = make([]float64, n), make([]float64, n)
	for i := range n {
		z := math.Cos(math.Pi * (float64(i) + 0.75) / (n + 0.5))
		var dp float64
		for range 100 {
			p0, p1 := 1.0, z
			for k := 2; k <= n; k++ {
				p0, p1 = p1, ((2*float64(k)-1)*z*p1-(float64(k)-1)*p0)/float64(k)
			}
			dp = n * (z*p1 - p0) / (z*z - 1)
			dz := p1 / dp
			z -= dz
			if math.Abs(dz) < 1e-16 {
				break
			}
		}
		x[i] = z
		w[i] = 2 / ((1 - z*z) * dp * dp)
	}
	return x, w
}
