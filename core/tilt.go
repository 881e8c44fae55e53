package core

import (
	"fmt"
	"math"
)

// truncMoments returns the mean and variance of the standard normal
// truncated to [a, b]. In the tails it works from the Mills ratio, where
// the textbook formula 1 + (a phi(a) - b phi(b))/Z - m^2 cancels.
func truncMoments(a, b float64) (m, v float64) {
	if a+b > 0 { // mirror: the interval's mass lies above zero
		m, v = truncMoments(-b, -a)
		return -m, v
	}
	lz := LogPhiDiff(a, b)
	if math.IsInf(lz, -1) || math.IsNaN(lz) {
		// An interval of probability zero in float64: a point mass at the
		// nearer bound.
		if math.IsInf(a, -1) {
			return b, 0
		}
		return a, 0
	}
	// Now b <= -a, so phi(b) >= phi(a) and the interval leans left.
	ra, rb := 0.0, 0.0 // phi(a)/Z, phi(b)/Z
	if !math.IsInf(a, -1) {
		ra = math.Exp(LogPhiDensity(a) - lz)
	}
	if !math.IsInf(b, 1) {
		rb = math.Exp(LogPhiDensity(b) - lz)
	}
	m = ra - rb
	// Var = 1 + a ra - b rb - m^2 = 1 - rb (b + rb) + ra (a + 2 rb - ra)... in
	// the lower tail (a = -Inf) this is 1 - rb (b + rb), whose two terms
	// nearly cancel only when b is far below zero; there rb ~ -b and
	// 1 - rb (b + rb) is computed from the continued-fraction remainder.
	switch {
	case math.IsInf(a, -1) && b < -8:
		// rb = -b (1 + r), r small: Var = 1 - rb (b + rb) with b + rb = -b r.
		r := -rb/b - 1
		v = 1 + rb*b*r
	default:
		v = 1
		if ra != 0 {
			v += a * ra
		}
		if rb != 0 {
			v -= b * rb
		}
		v -= m * m
	}
	return m, math.Max(v, 0)
}

// TiltStats describes a minimax tilting solve.
type TiltStats struct {
	// Iterations counts Newton steps; Krylov counts the GMRES iterations
	// (Jacobian-vector products) they took.
	Iterations, Krylov int
	// Residual is the largest absolute residual of the saddle-point
	// equations at the solution.
	Residual float64
	// LogBound is psi(x*, mu*), Botev's upper bound on log P.
	LogBound float64
}

// TiltTol is the residual at which the tilting solve stops. Any shift gives
// an unbiased estimator; the saddle point only has to be close enough for
// the proposal to be good.
const TiltTol = 1e-9

// Tilt computes Botev's minimax exponential tilting for the sequential
// estimator on f and stores it in f.Mu (Botev 2017, section 3): shifts
// mu_k of the proposal z_k ~ N(mu_k, 1) truncated to its interval, chosen as
// the saddle point (x*, mu*) of
//
//	psi(x, mu) = sum_k [ mu_k^2/2 - x_k mu_k + log(Phi(b_k - mu_k) - Phi(a_k - mu_k)) ],
//	a_k = (A_k - sum_{j<k} L_kj x_j) / L_kk,   b_k likewise with B_k,
//
// with mu_N = 0. The gradient conditions are
//
//	x_k  = mu_k + m_k           (m_k: the mean of N(0,1) truncated to [a_k - mu_k, b_k - mu_k])
//	mu_j = sum_{k>j} C_kj m_k   (C = D^-1 L - I, D = diag L)
//
// solved by an inexact Newton method with a backtracking line search on the
// squared residual. Each Newton system J d = -F, with
//
//	J = [[I + W C, -V], [C'W C, I + C'W]],   V = diag(truncated variances), W = I - V,
//
// is solved by GMRES: a product with J costs two triangular matrix-vector
// products, O(N^2), and the block-triangular preconditioner [[I + W C, -V],
// [0, I + C'W]] two triangular solves, so a solve costs O(N^2) per Krylov
// iteration instead of the O(N^3) of a dense factorisation.
//
// It returns the solve's statistics, or an error if Newton's method does not
// converge in maxIter iterations (f.Mu is then left unset).
//
// References: Z. I. Botev (2017), "The normal law under linear restrictions:
// simulation and estimation via minimax tilting", JRSS B 79:125-148;
// Y. Saad and M. Schultz (1986), "GMRES", SIAM J. Sci. Stat. Comput. 7:856-869.
func (f *Factor) Tilt(maxIter int) (TiltStats, error) {
	n := f.N
	var st TiltStats
	if n == 1 {
		f.Mu = make([]float64, 1)
		return st, nil
	}
	t := newTiltSolver(f)
	res := make([]float64, 2*t.k1)
	t.eval(t.x, t.mu, res)
	trial := make([]float64, 2*t.k1)
	xt, mut := make([]float64, n), make([]float64, n)
	d := make([]float64, 2*t.k1)
	for st.Iterations = 0; ; st.Iterations++ {
		r2 := dot(res, res)
		st.Residual = maxAbs(res)
		if st.Residual < TiltTol {
			break
		}
		if st.Iterations >= maxIter {
			return st, fmt.Errorf("core: the tilting solve did not converge in %d Newton iterations (residual %.3g)", maxIter, st.Residual)
		}
		// Inexact Newton: solve to a relative accuracy that tightens as the
		// residual falls (Eisenstat and Walker's choice 2, capped).
		eta := math.Min(0.1, math.Sqrt(r2))
		for i := range res {
			res[i] = -res[i]
		}
		st.Krylov += t.gmres(d, res, eta, 4*t.k1)
		for i := range res {
			res[i] = -res[i]
		}
		step := 1.0
		for {
			for i := range t.k1 {
				xt[i] = t.x[i] + step*d[i]
				mut[i] = t.mu[i] + step*d[t.k1+i]
			}
			xt[n-1], mut[n-1] = t.x[n-1], 0
			t.eval(xt, mut, trial)
			if dot(trial, trial) < r2 || step < 1e-8 {
				break
			}
			step /= 2
		}
		copy(t.x, xt)
		copy(t.mu, mut)
		copy(res, trial)
	}
	st.LogBound = t.eval(t.x, t.mu, res)
	f.Mu = t.mu
	return st, nil
}

// tiltSolver holds the tilting problem in scaled form.
type tiltSolver struct {
	n, k1  int       // variables; unknowns per block (n - 1)
	c      []float64 // n x n strictly lower: L_kj / L_kk
	lt, ut []float64 // bounds over L_kk
	x, mu  []float64
	m, v   []float64 // truncated means and variances at the last eval
	tmp    []float64
}

func newTiltSolver(f *Factor) *tiltSolver {
	n := f.N
	t := &tiltSolver{n: n, k1: n - 1, c: make([]float64, n*n), lt: make([]float64, n), ut: make([]float64, n),
		x: make([]float64, n), mu: make([]float64, n), m: make([]float64, n), v: make([]float64, n), tmp: make([]float64, n)}
	for i := range n {
		d := f.L[i*n+i]
		for j := range i {
			t.c[i*n+j] = f.L[i*n+j] / d
		}
		t.lt[i], t.ut[i] = f.A[i]/d, f.B[i]/d
	}
	// Start from the plug-in truncated means, with no tilt.
	for k := range n {
		s := dot(t.c[k*n:k*n+k], t.x[:k])
		t.x[k], _ = truncMoments(t.lt[k]-s, t.ut[k]-s)
	}
	return t
}

// eval sets m and v at (x, mu), writes the residual F = (F1, F2) to res and
// returns psi(x, mu).
func (t *tiltSolver) eval(x, mu, res []float64) (psi float64) {
	n, k1, c := t.n, t.k1, t.c
	for k := range n {
		s := dot(c[k*n:k*n+k], x[:k])
		a, b := t.lt[k]-s-mu[k], t.ut[k]-s-mu[k]
		t.m[k], t.v[k] = truncMoments(a, b)
		psi += mu[k]*mu[k]/2 - x[k]*mu[k] + LogPhiDiff(a, b)
	}
	// F2 = mu - C'm, accumulated row by row of C.
	f2 := res[k1:]
	copy(f2, mu[:k1])
	for k := 1; k < n; k++ {
		axpy(-t.m[k], c[k*n:k*n+min(k, k1)], f2)
	}
	for k := range k1 {
		res[k] = x[k] - mu[k] - t.m[k]
	}
	return psi
}

// jv writes J u to out, u = (ux, umu).
func (t *tiltSolver) jv(out, u []float64) {
	n, k1, c := t.n, t.k1, t.c
	ux, umu := u[:k1], u[k1:]
	cx := t.tmp // C ux, all n rows
	for k := range n {
		cx[k] = dot(c[k*n:k*n+min(k, k1)], ux[:min(k, k1)])
	}
	for k := range k1 {
		out[k] = ux[k] + (1-t.v[k])*cx[k] - t.v[k]*umu[k]
	}
	// out2 = C'(W C ux + W umu) + umu, with umu_{n-1} = 0.
	o2 := out[k1:]
	copy(o2, umu)
	for k := 1; k < n; k++ {
		w := (1 - t.v[k]) * cx[k]
		if k < k1 {
			w += (1 - t.v[k]) * umu[k]
		}
		axpy(w, c[k*n:k*n+min(k, k1)], o2)
	}
}

// precond solves [[I + W C, -V], [0, I + C'W]] z = r.
func (t *tiltSolver) precond(z, r []float64) {
	n, k1, c := t.n, t.k1, t.c
	z1, z2 := z[:k1], z[k1:]
	// (I + C'W) z2 = r2: back substitution, column j of C' is row j of C.
	copy(z2, r[k1:])
	for i := k1 - 1; i >= 1; i-- {
		axpy(-(1-t.v[i])*z2[i], c[i*n:i*n+i], z2[:i])
	}
	// (I + W C) z1 = r1 + V z2: forward substitution.
	for k := range k1 {
		z1[k] = r[k] + t.v[k]*z2[k] - (1-t.v[k])*dot(c[k*n:k*n+k], z1[:k])
	}
	_ = n
}

// gmres solves J d = b to relative residual tol with right-preconditioned,
// restarted GMRES (restart 60) and returns the iterations used.
func (t *tiltSolver) gmres(d, b []float64, tol float64, maxIt int) int {
	const restart = 60
	size := len(b)
	clear(d)
	bn := math.Sqrt(dot(b, b))
	if bn == 0 {
		return 0
	}
	vs := make([][]float64, restart+1)
	zs := make([][]float64, restart)
	for i := range vs {
		vs[i] = make([]float64, size)
	}
	for i := range zs {
		zs[i] = make([]float64, size)
	}
	h := make([]float64, (restart+1)*restart)
	cs, sn, g := make([]float64, restart), make([]float64, restart), make([]float64, restart+1)
	w := make([]float64, size)
	its := 0
	for its < maxIt {
		// r = b - J d
		t.jv(w, d)
		for i := range w {
			vs[0][i] = b[i] - w[i]
		}
		beta := math.Sqrt(dot(vs[0], vs[0]))
		if beta <= tol*bn {
			return its
		}
		scal(1/beta, vs[0])
		clear(g)
		g[0] = beta
		k := 0
		for ; k < restart && its < maxIt; k++ {
			its++
			t.precond(zs[k], vs[k])
			t.jv(w, zs[k])
			for i := 0; i <= k; i++ { // modified Gram-Schmidt
				hij := dot(w, vs[i])
				h[i*restart+k] = hij
				axpy(-hij, vs[i], w)
			}
			hn := math.Sqrt(dot(w, w))
			h[(k+1)*restart+k] = hn
			if hn > 0 {
				copy(vs[k+1], w)
				scal(1/hn, vs[k+1])
			}
			for i := range k { // apply the previous rotations
				a, bb := h[i*restart+k], h[(i+1)*restart+k]
				h[i*restart+k] = cs[i]*a + sn[i]*bb
				h[(i+1)*restart+k] = -sn[i]*a + cs[i]*bb
			}
			a, bb := h[k*restart+k], h[(k+1)*restart+k]
			r := math.Hypot(a, bb)
			cs[k], sn[k] = a/r, bb/r
			h[k*restart+k] = r
			h[(k+1)*restart+k] = 0
			g[k+1] = -sn[k] * g[k]
			g[k] = cs[k] * g[k]
			if math.Abs(g[k+1]) <= tol*bn || hn == 0 {
				k++
				break
			}
		}
		// y = H^-1 g (upper triangular k x k); d += Z y.
		y := make([]float64, k)
		for i := k - 1; i >= 0; i-- {
			s := g[i]
			for j := i + 1; j < k; j++ {
				s -= h[i*restart+j] * y[j]
			}
			y[i] = s / h[i*restart+i]
		}
		for i := range k {
			axpy(y[i], zs[i], d)
		}
		if math.Abs(g[k]) <= tol*bn {
			return its
		}
	}
	return its
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func axpy(a float64, x, y []float64) {
	for i := range x {
		y[i] += a * x[i]
	}
}

func scal(a float64, x []float64) {
	for i := range x {
		x[i] *= a
	}
}

func maxAbs(x []float64) float64 {
	m := 0.0
	for _, v := range x {
		m = math.Max(m, math.Abs(v))
	}
	return m
}
