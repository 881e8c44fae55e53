package vecchia

import (
	"math"
	"sync"

	"gonum.org/v1/gonum/mat"

	"github.com/gpc-mc/gpc/core"
)

// The multinomial probit likelihood of one point and the small dense
// algebra of a point's C classes.

// ghN is the number of Gauss-Hermite nodes of classLogLik's quadrature.
// Adapted to the integrand's mode and curvature, 24 nodes reproduce the
// three-class likelihood's bivariate normal closed form to about 1e-12
// (TestClassLogLik).
const ghN = 24

var (
	ghOnce         sync.Once
	ghNode, ghWeig []float64 // nodes and weights of int exp(-t^2) f(t) dt, times exp(t^2)
)

// gaussHermite returns the ghN Gauss-Hermite nodes and weights (for the
// weight exp(-t^2)), the weights multiplied by exp(t^2) for an integrand
// that carries its own Gaussian, by Golub and Welsch's eigenvalue method
// on gonum's symmetric eigensolver.
//
// References: G. H. Golub and J. H. Welsch (1969), "Calculation of Gauss
// quadrature rules", Math. Comp. 23:221-230.
func gaussHermite() (nodes, weights []float64) {
	ghOnce.Do(func() {
		j := mat.NewSymDense(ghN, nil)
		for k := 1; k < ghN; k++ {
			j.SetSym(k-1, k, math.Sqrt(float64(k)/2))
		}
		var es mat.EigenSym
		if !es.Factorize(j, true) {
			panic("vecchia: the Gauss-Hermite eigenproblem failed")
		}
		ghNode = es.Values(nil)
		var v mat.Dense
		es.VectorsTo(&v)
		ghWeig = make([]float64, ghN)
		for i, t := range ghNode {
			ghWeig[i] = math.Sqrt(math.Pi) * v.At(0, i) * v.At(0, i) * math.Exp(t*t)
		}
	})
	return ghNode, ghWeig
}

// millsRatio returns phi(z) / Phi(z).
func millsRatio(z float64) float64 {
	return math.Exp(core.LogPhiDensity(z) - core.LogPhi(z))
}

// likWork is classLogLik's scratch for C classes.
type likWork struct {
	a, lam, el, ell, eld []float64
}

func (w *likWork) size(c int) {
	if len(w.a) < c {
		w.a, w.lam, w.el, w.eld = make([]float64, c), make([]float64, c), make([]float64, c), make([]float64, c)
		w.ell = make([]float64, c*c)
	}
}

// classLogLik returns the log probability that class y has the largest
// utility, u_c = x_c + sd eps_c with eps iid standard normal,
//
//	P(y | x) = int phi(t) prod_{j != y} Phi(a_j + t) dt,   a_j = (x_y - x_j) / sd,
//
// by Gauss-Hermite quadrature adapted to the integrand's mode and
// curvature (the integrand is log-concave), and, if g is not nil, its
// gradient g (C) and its negative Hessian h (C x C, row-major; positive
// semidefinite, with the common shift of the classes in its null space),
// from the moments of the Mills ratios phi/Phi(a_j + t) under the
// integrand. The one-dimensional form holds for any C because the
// utilities are independent given x.
func classLogLik(x []float64, y int, sd float64, g, h []float64, w *likWork) float64 {
	c := len(x)
	w.size(c)
	// The other classes' standardized margins.
	a := w.a[:c-1]
	for j := range c - 1 {
		o := j
		if j >= y {
			o = j + 1
		}
		a[j] = (x[y] - x[o]) / sd
	}
	hOf := func(t float64) float64 {
		v := -0.5 * t * t
		for _, aj := range a {
			v += core.LogPhi(aj + t)
		}
		return v
	}
	// The mode of h(t) = -t^2/2 + sum_j log Phi(a_j + t): h is concave,
	// with h'' <= -1, so damped Newton steps converge.
	t0, h0 := 0.0, hOf(0)
	var d2 float64
	for range 100 {
		d1 := -t0
		d2 = -1.0
		for _, aj := range a {
			z := aj + t0
			l := millsRatio(z)
			d1 += l
			d2 -= l * (z + l)
		}
		step := -d1 / d2
		for range 60 {
			hn := hOf(t0 + step)
			if hn >= h0 || math.Abs(step) < 1e-12 {
				t0, h0 = t0+step, hn
				break
			}
			step /= 2
		}
		if math.Abs(step) < 1e-10 {
			break
		}
	}
	d2 = -1.0
	for _, aj := range a {
		z := aj + t0
		l := millsRatio(z)
		d2 -= l * (z + l)
	}
	sh := math.Sqrt2 / math.Sqrt(-d2)
	nodes, weights := gaussHermite()
	el, eld, ell := w.el[:c-1], w.eld[:c-1], w.ell[:(c-1)*(c-1)]
	clear(el)
	clear(eld)
	clear(ell)
	sum := 0.0
	lam := w.lam[:c-1]
	for i, tau := range nodes {
		t := t0 + sh*tau
		e := weights[i] * math.Exp(hOf(t)-h0)
		if !(e > 0) {
			continue
		}
		sum += e
		if g == nil {
			continue
		}
		for j, aj := range a {
			lam[j] = millsRatio(aj + t)
		}
		for j, aj := range a {
			el[j] += e * lam[j]
			eld[j] += e * (-(aj + t) * lam[j])
			for l := range j {
				ell[j*(c-1)+l] += e * lam[j] * lam[l]
			}
		}
	}
	lp := h0 + math.Log(sh*sum) - 0.5*math.Log(2*math.Pi)
	if g == nil {
		return lp
	}
	q := c - 1
	for j := range q {
		el[j] /= sum
		eld[j] /= sum
		for l := range j {
			ell[j*q+l] /= sum
		}
	}
	// The Hessian in a: E[l_j l_l] - E[l_j] E[l_l] off the diagonal,
	// E[-(a_j + t) l_j] - E[l_j]^2 on it; then in x, by a_j = (x_y -
	// x_o(j)) / sd.
	clear(g[:c])
	clear(h[:c*c])
	other := func(j int) int {
		if j >= y {
			return j + 1
		}
		return j
	}
	is := 1 / sd
	for j := range q {
		oj := other(j)
		g[y] += el[j] * is
		g[oj] -= el[j] * is
		for l := range q {
			var hal float64
			switch {
			case l == j:
				hal = eld[j] - el[j]*el[j]
			case l < j:
				hal = ell[j*q+l] - el[j]*el[l]
			default:
				hal = ell[l*q+j] - el[j]*el[l]
			}
			hal *= -is * is // the negative Hessian
			ol := other(l)
			h[y*c+y] += hal
			h[y*c+ol] -= hal
			h[oj*c+y] -= hal
			h[oj*c+ol] += hal
		}
	}
	return lp
}

// cholLower factors the symmetric c x c matrix a (row-major, lower half
// read) in place into its lower Cholesky factor (the upper half zeroed),
// and reports false where a pivot is not positive.
func cholLower(a []float64, c int) bool {
	for j := range c {
		s := a[j*c+j]
		for p := range j {
			s -= a[j*c+p] * a[j*c+p]
		}
		if !(s > 0) || math.IsInf(s, 1) {
			return false
		}
		d := math.Sqrt(s)
		a[j*c+j] = d
		for i := j + 1; i < c; i++ {
			t := a[i*c+j]
			for p := range j {
				t -= a[i*c+p] * a[j*c+p]
			}
			a[i*c+j] = t / d
			a[j*c+i] = 0
		}
	}
	return true
}

// invFromChol sets dst (c x c) to the inverse of L L', L lower (row-major)
// from cholLower; tmp has c values.
func invFromChol(dst, l []float64, c int, tmp []float64) {
	for col := range c {
		// Solve L y = e_col, then L' x = y.
		for i := range c {
			s := 0.0
			if i == col {
				s = 1
			}
			for p := range i {
				s -= l[i*c+p] * tmp[p]
			}
			tmp[i] = s / l[i*c+i]
		}
		for i := c - 1; i >= 0; i-- {
			s := tmp[i]
			for p := i + 1; p < c; p++ {
				s -= l[p*c+i] * dst[p*c+col]
			}
			dst[i*c+col] = s / l[i*c+i]
		}
	}
}
