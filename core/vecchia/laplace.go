package vecchia

import (
	"context"
	"fmt"
	"math"

	"github.com/gpc-mc/gpc/core"
)

// obsDerivs returns log P(a <= x + sqrt(s) eps <= b), eps standard normal
// (s > 0), and its first derivative g and negative second derivative w
// (>= 0: the probability is log-concave in x).
func obsDerivs(x, a, b, s float64) (lp, g, w float64) {
	sd := math.Sqrt(s)
	lo, hi := (a-x)/sd, (b-x)/sd
	lp = core.LogPhiDiff(lo, hi)
	// r(t) = phi(t) / P(lo <= Z <= hi), in logs (0 at an infinite bound).
	r := func(t float64) float64 {
		if math.IsInf(t, 0) {
			return 0
		}
		return math.Exp(core.LogPhiDensity(t) - lp)
	}
	rl, rh := r(lo), r(hi)
	g = (rl - rh) / sd
	tl, th := 0.0, 0.0
	if rl != 0 {
		tl = lo * rl
	}
	if rh != 0 {
		th = hi * rh
	}
	w = max(0, g*g-(tl-th)/s)
	return lp, g, w
}

// Sites is the Gaussian approximation of the box's constraints that
// twists the estimator's proposal: latent variable k's constraints (its
// own row's bound and those of the points that repeat it) are replaced by
// the site exp(-Tau_k x^2/2 + Nu_k x). Mode is the point at which Laplace's
// approximation took them (the posterior mode of x), and Iterations the
// Newton steps it took.
type Sites struct {
	Tau, Nu, Mode []float64
	Iterations    int
	// CGSteps counts the conjugate gradient steps of all Newton steps.
	CGSteps int
}

// Newton's stopping rule and bounds.
const (
	// maxNewton bounds the Newton steps of the mode: it only starts EP's
	// rounds, which refine the sites (on the large-N issue's problem at
	// N = 10^4, M = 10^4, 5 steps give the standard errors of 9, 3 a
	// third larger).
	maxNewton = 5
	// newtonTol is the largest change of a latent value (whose scale is the
	// probit's noise, 1) at which Newton stops: the mode only starts EP's
	// rounds (parallelEP), which refine the sites.
	newtonTol = 0.01
	// cgTol is the conjugate gradient's relative residual in a Newton
	// step.
	cgTol = 1e-4
	// maxCG bounds the conjugate gradient steps per Newton step.
	maxCG = 100
)

// Laplace finds the mode of the latent posterior, the maximum of
//
//	Psi(x) = sum_k log P(Lower_k <= x_v(k) + sqrt(Noise) eps <= Upper_k) - |A x|^2 / 2,
//
// v(k) the latent variable of row k (the point it repeats, for a repeated
// point), by Newton's method with the Hessian's systems solved by
// conjugate gradients preconditioned by the incomplete factor of A'A + W
// (tri.ic0; A itself where that breaks down), and returns Laplace's sites
// at the mode: Tau = W, the observations' negative second derivative, and
// Nu = W x + g, g their gradient, so that N(x; 0, (A'A)^-1) prod_k
// exp(-Tau_k x_k^2/2 + Nu_k x_k) is Laplace's Gaussian. Each Newton step
// costs a few dozen sparse products, O(N M) each. It returns ctx's error
// if ctx is cancelled, and a *core.InputError if a site is not finite.
//
// References: C. E. Rasmussen and C. K. I. Williams (2006), Gaussian
// Processes for Machine Learning, Algorithm 3.1; D. Zilber and M. Katzfuss
// (2021), "Vecchia-Laplace approximations of generalized Gaussian
// processes for big non-Gaussian spatial data", CSDA 153:107081.
func Laplace(ctx context.Context, m *Model, a *tri, pc *pairCache) (*Sites, error) {
	st, _, err := laplace(ctx, m, a, pc)
	return st, err
}

// laplace is Laplace, also returning the products A'A on a's pattern that
// its preconditioner assembled (the pattern and aaD, aaO alone: aaOf a),
// which EP's factor reuses (tri.productsFrom).
func laplace(ctx context.Context, m *Model, a *tri, pc *pairCache) (*Sites, *tri, error) {
	n := m.N
	x := make([]float64, n)
	g, w := make([]float64, n), make([]float64, n)
	grad, delta := make([]float64, n), make([]float64, n)
	ax, tmp := make([]float64, n), make([]float64, n)
	pre := newTri(m)
	pre.pc = pc
	pd, po := make([]float64, n), make([]float64, len(pre.nbr))
	cg := newCG(n)
	st := &Sites{}
	// Psi and the derivatives, the rows at once on every core, their sums
	// by chunks (chunkSum); a repeated point's row adds its derivatives
	// to its point's after the others.
	psi := func(x []float64) float64 {
		a.mulTo(ax, x)
		v := -chunkSum(n, func(lo, hi int) float64 {
			s := 0.0
			for k := lo; k < hi; k++ {
				s += ax[k] * ax[k] / 2
			}
			return s
		})
		return v + chunkSum(n, func(lo, hi int) float64 {
			s := 0.0
			for k := lo; k < hi; k++ {
				lp, _, _ := obsDerivs(x[latent(m, k)], m.Lower[k], m.Upper[k], m.Noise)
				s += lp
			}
			return s
		})
	}
	derivs := func(x []float64) {
		parallelFor(0, n, func(lo, hi int) {
			for k := lo; k < hi; k++ {
				g[k], w[k] = 0, 0
				if m.Dup(k) < 0 {
					_, g[k], w[k] = obsDerivs(x[k], m.Lower[k], m.Upper[k], m.Noise)
				}
			}
		})
		for k := range n {
			if v := m.Dup(k); v >= 0 {
				_, gk, wk := obsDerivs(x[v], m.Lower[k], m.Upper[k], m.Noise)
				g[v] += gk
				w[v] += wk
			}
		}
	}
	cur := psi(x)
	for st.Iterations = 1; st.Iterations <= maxNewton; st.Iterations++ {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		derivs(x)
		// grad = g - A'A x
		a.mulTo(ax, x)
		a.mulTransTo(tmp, ax)
		parallelFor(0, n, func(lo, hi int) {
			for k := lo; k < hi; k++ {
				grad[k] = g[k] - tmp[k]
			}
		})
		// The preconditioner follows W at the first steps only (each
		// factorisation touches every row's neighbours).
		if st.Iterations <= 2 || st.Iterations == 4 {
			if _, err := pre.ic0(a, w, pd, po); err != nil {
				// The sites fill in more than the pattern holds: the
				// prior's own factor A (exact for A'A) preconditions
				// instead, at the cost of more conjugate gradient steps.
				copy(pre.diag, a.diag)
				copy(pre.off, a.off)
				pre.stale()
			}
		}
		steps := cg.solve(delta, grad, func(dst, v []float64) {
			a.mulTo(ax, v)
			a.mulTransTo(dst, ax)
			parallelFor(0, n, func(lo, hi int) {
				for k := lo; k < hi; k++ {
					dst[k] += w[k] * v[k]
				}
			})
		}, func(dst, r []float64) {
			pre.solveTransTo(tmp, r)
			pre.solveTo(dst, tmp)
		})
		st.CGSteps += steps
		// Backtrack until Psi does not fall.
		step := 1.0
		var next float64
		xn := make([]float64, n)
		for range 30 {
			parallelFor(0, n, func(lo, hi int) {
				for k := lo; k < hi; k++ {
					xn[k] = x[k] + step*delta[k]
				}
			})
			next = psi(xn)
			if next >= cur || math.Abs(next-cur) <= 1e-12*math.Abs(cur) {
				break
			}
			step /= 2
		}
		if !(next >= cur-1e-9*math.Abs(cur)) {
			break // no progress: the mode to rounding
		}
		change := parallelMax(0, n, func(lo, hi int) float64 {
			c := 0.0
			for k := lo; k < hi; k++ {
				c = max(c, math.Abs(xn[k]-x[k]))
			}
			return c
		})
		x, cur = xn, next
		if change < newtonTol {
			break
		}
	}
	st.Iterations = min(st.Iterations, maxNewton)
	derivs(x)
	st.Tau, st.Nu, st.Mode = w, make([]float64, n), x
	for k := range n {
		st.Nu[k] = w[k]*x[k] + g[k]
	}
	for k := range n {
		if math.IsNaN(st.Nu[k]) || math.IsInf(st.Nu[k], 0) || math.IsNaN(st.Tau[k]) || math.IsInf(st.Tau[k], 0) {
			return nil, nil, &core.InputError{Index: k, Msg: fmt.Sprintf("Laplace's site of row %d is not finite: the model's values are out of the range this estimator handles", k)}
		}
	}
	aa := &tri{n: n, start: pre.start, nbr: pre.nbr, dup: pre.dup, aaOf: pre.aaOf, aaD: pre.aaD, aaO: pre.aaO}
	return st, aa, nil
}

// latent returns row k's latent variable: k, or the point it repeats.
func latent(m *Model, k int) int {
	if d := m.Dup(k); d >= 0 {
		return d
	}
	return k
}

// cg is the preconditioned conjugate gradient method's scratch.
type cg struct {
	r, z, p, q []float64
}

func newCG(n int) *cg {
	return &cg{make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)}
}

// solve sets x to the solution of M x = b (M symmetric positive definite,
// applied by mul; prec applies an approximation of its inverse), from 0,
// to relative residual cgTol or maxCG steps, and returns the steps taken.
func (c *cg) solve(x, b []float64, mul, prec func(dst, v []float64)) int {
	clear(x)
	return c.solveTol(x, b, mul, prec, cgTol)
}

// solveTol is solve to relative residual tol, starting from x's own
// value (0 for solve).
func (c *cg) solveTol(x, b []float64, mul, prec func(dst, v []float64), tol float64) int {
	nb := math.Sqrt(dot(b, b))
	if nb == 0 {
		clear(x)
		return 0
	}
	mul(c.r, x)
	for k, v := range b {
		c.r[k] = v - c.r[k]
	}
	prec(c.z, c.r)
	copy(c.p, c.z)
	rz := dot(c.r, c.z)
	if rz == 0 {
		// x solves it exactly (a start at the last solve's solution
		// with one free variable, as where every point repeats one): a
		// step would divide 0 by 0.
		return 0
	}
	for it := 1; it <= maxCG; it++ {
		mul(c.q, c.p)
		alpha := rz / dot(c.p, c.q)
		parallelFor(0, len(x), func(lo, hi int) {
			for k := lo; k < hi; k++ {
				x[k] += alpha * c.p[k]
				c.r[k] -= alpha * c.q[k]
			}
		})
		if math.Sqrt(dot(c.r, c.r)) <= tol*nb {
			return it
		}
		prec(c.z, c.r)
		rz2 := dot(c.r, c.z)
		beta := rz2 / rz
		rz = rz2
		parallelFor(0, len(c.p), func(lo, hi int) {
			for k := lo; k < hi; k++ {
				c.p[k] = c.z[k] + beta*c.p[k]
			}
		})
	}
	return maxCG
}

// dot returns a'b, summed in chunks of sumChunk terms (on every core),
// the chunks' sums added in order: the same bits for any thread count.
// A vector of one chunk (a row's, in the derivatives' inner loops) is
// summed here, with no closure to allocate.
func dot(a, b []float64) float64 {
	b = b[:len(a)]
	if len(a) <= sumChunk {
		return dotSeq(a, b)
	}
	return chunkSum(len(a), func(lo, hi int) float64 { return dotSeq(a[lo:hi], b[lo:hi]) })
}

// dotSeq returns a'b summed in order.
func dotSeq(a, b []float64) float64 {
	s := 0.0
	for k, v := range a {
		s += v * b[k]
	}
	return s
}
