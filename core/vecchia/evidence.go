package vecchia

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/gpc-mc/gpc/core"
)

// Laplace's approximation of a Vecchia model's log marginal likelihood, a
// deterministic evidence for fitting the kernel (Zilber and Katzfuss 2021,
// Vecchia-Laplace). With Psi(x) = sum_k log P(Lower_k <= x_v(k) + sqrt(Noise)
// eps <= Upper_k) - |A x|^2 / 2 (Laplace, the posterior's log density up to
// a constant), its mode x^ and W = -Psi's likelihood part's second
// derivative there,
//
//	log Z_LA = sum_k log p_k(x^) - |A x^|^2 / 2 + log det A - log det T,
//
// T the reverse Cholesky factor of H = A'A + W (T'T = H, lower-triangular):
// log det A - log det T = -log det(I + W^1/2 Sigma W^1/2) / 2, Sigma =
// (A'A)^-1, the dense Laplace evidence (Rasmussen and Williams 2006, eq.
// 3.32) of the Vecchia prior. T's exact fill-in is dense, so T is the
// incomplete factor in A's pattern (tri.ic0 without a shift: Zilber and
// Katzfuss's Vecchia-Laplace), or in the pattern with the first Block rows
// dense (the coarse variables of a maxmin order, where W is not small
// beside the prior's conditional precision and the dropped fill-in is
// largest). Where every row conditions on all the rows before it, or Block
// covers every row, T is exact and so is log Z_LA.
//
// Its gradient in A's entries (FactorAdjoint; Structure.AdjointGradTo
// carries it to the kernel's hyperparameters) is exact for the evidence as
// computed, T included:
//
//   - the mode is stationary in x, so Psi's part is its explicit
//     derivative, the prior's score at x^ (Model.PriorAdjoint);
//   - G = sum_k log T_kk depends on H's entries in T's pattern, through A
//     and through W(x^); its adjoint in those entries, Gbar, comes from the
//     factorisation run backwards (tri.logDetAdjoint, reverse-mode
//     differentiation of the elimination; with an exact T, Gbar = H^-1 / 2
//     on the diagonal and H^-1 off it);
//   - A's part of dG is sum_k dA_k' (2 Gs_k A_k), Gs the symmetric matrix
//     with Gbar on the diagonal and Gbar / 2 off it, over the pairs of row
//     k's entries that T's pattern holds (the products A'A is assembled
//     from, run backwards);
//   - W's part goes through the mode (the implicit function theorem):
//     dx^ = -H^-1 dA'A x^, so that sum_v Gbar_vv W'_v dx^_v = -u' dA'A x^ with
//     u = H^-1 s, s_v = Gbar_vv W'_v, W' the likelihood's third derivative,
//     one more solve with H.
//
// References: C. E. Rasmussen and C. K. I. Williams (2006), Gaussian
// Processes for Machine Learning, section 3.4 and Algorithm 5.1; D. Zilber
// and M. Katzfuss (2021), "Vecchia-Laplace approximations of generalized
// Gaussian processes for big non-Gaussian spatial data", CSDA 153:107081;
// A. Griewank and A. Walther (2008), Evaluating Derivatives, 2nd ed., SIAM
// (reverse mode).

// LaplaceOptions are the settings of LaplaceEvidence; the zero value of
// each selects its default.
type LaplaceOptions struct {
	// Block is the number of leading rows that are dense in the
	// log-determinant's factor T (0: T in A's pattern throughout). It is
	// part of the evidence's definition: keep it fixed while comparing
	// evidences.
	Block int
}

// LaplaceResult is the Laplace evidence of a model.
type LaplaceResult struct {
	// LogZ is log Z_LA; LogLik, Quad, LogDetA and LogDetT its parts:
	// sum_k log p_k(x^), |A x^|^2 / 2, log det A and log det T (LogZ =
	// LogLik - Quad + LogDetA - LogDetT).
	LogZ, LogLik, Quad, LogDetA, LogDetT float64
	// Mode is the posterior mode x^ (by position; a repeated point's
	// entry is 0, its value its point's).
	Mode []float64
	// Adjoint is d LogZ / dA (with the gradient asked for).
	Adjoint *FactorAdjoint
	// Newton counts the Newton steps, CG the conjugate gradient steps of
	// all solves.
	Newton, CG int
}

// LaplaceBlock returns a dense block for model m's Laplace evidence
// (LaplaceOptions.Block): the rows up to the last whose prior conditional
// variance D_k is at least 1e-3 of the noise's variance (where W, at most
// 1 / Noise, is not small beside the prior's conditional precision 1 /
// D_k, the dropped fill-in is largest), and the repeats of its points,
// at most MaxBlock: the rule of the estimator's proposal (Prepared.Block)
// with every site at its largest precision.
func LaplaceBlock(m *Model) int {
	return blockSize(m, []float64{1 / m.Noise}, blockCap)
}

// ErrLaplaceBreakdown is returned by LaplaceEvidence.Eval where the
// log-determinant's incomplete factorisation meets a pivot that is not
// positive: the labels' information fills in far more than the pattern
// holds (a larger Block, or more neighbours, or the dense path).
var ErrLaplaceBreakdown = errors.New("vecchia: the Laplace evidence's incomplete factorisation breaks down")

// Newton's and the solves' tolerances of LaplaceEvidence: the evidence's
// gradient takes the mode to be stationary, and its log determinant moves
// with the mode to first order, so both are solved far below the
// evidence's own scale.
const (
	// lapStepTol: Newton stops once no latent value moved by more than
	// this (times 1 + the largest |x|), after a step.
	lapStepTol = 1e-10
	// lapMaxNewton bounds the Newton steps.
	lapMaxNewton = 60
	// lapCGTol is the solves' relative residual.
	lapCGTol = 1e-12
	// lapMaxCG bounds a solve's conjugate gradient steps (in restarts of
	// maxCG).
	lapMaxCG = 20 * maxCG
	// lapForcing bounds an inexact Newton step's relative residual, and
	// is its ratio to the gradient's largest entry.
	lapForcing = 1e-3
	// lapPrecSteps: a solve of more steps has the next Newton step
	// factor its own preconditioner.
	lapPrecSteps = 40
	// lapPsiRound is Psi's relative rounding, below which a fall in Psi
	// does not stop a Newton step.
	lapPsiRound = 1e-12
)

// LaplaceEvidence computes Laplace's evidence of Vecchia models that share
// one structure (the same rows, conditioning sets and repeated points):
// the patterns of A and T and their pairs are built once, by
// NewLaplaceEvidence. It is not safe for concurrent use.
type LaplaceEvidence struct {
	opt      LaplaceOptions
	n        int
	start    []int
	nbr      []int32
	a        *tri // A's values for the model being evaluated
	pre, fac *tri // Newton's preconditioner; log det's factor T
	pc       *pairCache
	buf      []pairRef
	// The last successful evaluation, for Adjoint: its model, result,
	// W, and T in fac; facOK while fac holds that T (Newton's first
	// preconditioner at the next evaluation).
	facOK bool
	last  *Model
	res   *LaplaceResult
	w     []float64
	cgw   *cg
	tmp   []float64
}

// NewLaplaceEvidence returns the evaluator for models of m's structure.
// It panics if opt.Block is negative.
func NewLaplaceEvidence(m *Model, opt LaplaceOptions) *LaplaceEvidence {
	if opt.Block < 0 {
		panic("vecchia: NewLaplaceEvidence: negative Block")
	}
	e := &LaplaceEvidence{opt: opt, n: m.N, start: slices.Clone(m.Start), nbr: slices.Clone(m.Nbr)}
	mm := &Model{N: m.N, Start: e.start, Nbr: e.nbr, CondVar: m.CondVar}
	e.a = newTri(mm)
	e.pc = newPairCache(e.a)
	e.pre = newTri(mm)
	e.pre.pc = e.pc
	block := min(opt.Block, m.N)
	for block < m.N && block > 0 && m.CondVar[block] == 0 {
		block++ // a repeat goes with the point it repeats
	}
	e.fac = hybridPattern(mm, e.a, block)
	e.fac.pc = e.pc
	return e
}

// Eval computes the Laplace evidence of model m (whose structure must be
// the evaluator's), its Newton iterations started at warm (nil: 0), and
// with grad its adjoint in A's entries. It returns ErrLaplaceBreakdown
// (wrapped) where T's factorisation fails, a *core.InputError for a model
// that is not valid, and ctx's error if ctx is cancelled between Newton
// steps. It panics if m's structure is not the evaluator's.
func (e *LaplaceEvidence) Eval(ctx context.Context, m *Model, warm []float64, grad bool) (*LaplaceResult, error) {
	res, err := e.value(ctx, m, warm)
	if err != nil || !grad {
		return res, err
	}
	res.Adjoint = e.Adjoint()
	return res, nil
}

// value is Eval without the adjoint, keeping what Adjoint needs.
func (e *LaplaceEvidence) value(ctx context.Context, m *Model, warm []float64) (*LaplaceResult, error) {
	e.last = nil
	if m.N != e.n || !slices.Equal(m.Start, e.start) || !slices.Equal(m.Nbr, e.nbr) {
		panic("vecchia: LaplaceEvidence.Eval: the model's structure is not the evaluator's")
	}
	for k := range m.N {
		if (m.CondVar[k] == 0) != e.a.dup[k] {
			panic("vecchia: LaplaceEvidence.Eval: the model's repeated points are not the evaluator's")
		}
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	n := m.N
	a := e.a
	a.priorFactor(m)
	// A's values changed: the patterns' cached A'A is stale.
	e.pre.aaOf, e.fac.aaOf = nil, nil
	res := &LaplaceResult{Mode: make([]float64, n)}
	x := res.Mode
	if warm != nil {
		copy(x, warm)
	}
	for k := range n {
		if a.dup[k] {
			x[k] = 0
		}
	}
	g, w := make([]float64, n), make([]float64, n)
	grad0, delta, xn := make([]float64, n), make([]float64, n), make([]float64, n)
	ax := make([]float64, n)
	pd, po := make([]float64, n), make([]float64, len(e.pre.nbr))
	if e.cgw == nil {
		e.cgw, e.tmp = newCG(n), make([]float64, n)
	}
	psi := func(x []float64) (float64, float64, float64) {
		a.mulTo(ax, x)
		quad := dot(ax, ax) / 2
		ll := 0.0
		for k := range n {
			lp, _, _ := obsDerivs(x[latent(m, k)], m.Lower[k], m.Upper[k], m.Noise)
			ll += lp
		}
		return ll - quad, ll, quad
	}
	derivs := func(x []float64) {
		clear(g)
		clear(w)
		for k := range n {
			v := latent(m, k)
			_, gk, wk := obsDerivs(x[v], m.Lower[k], m.Upper[k], m.Noise)
			g[v] += gk
			w[v] += wk
		}
	}
	cur, _, _ := psi(x)
	var prec *tri
	if e.facOK {
		prec = e.fac
	}
	e.facOK = false
	lastSteps := 0
	for res.Newton = 0; res.Newton < lapMaxNewton; {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		derivs(x)
		a.mulTo(ax, x)
		a.mulTransTo(grad0, ax)
		for k := range n {
			grad0[k] = g[k] - grad0[k]
		}
		// The preconditioner: the last evaluation's T (H at a nearby
		// theta, if it succeeded) while the solves stay short, else the
		// incomplete factor of this H, refreshed at the first steps
		// (each factorisation costs as much as a few dozen solves'
		// steps).
		if prec == nil || prec == e.pre && (res.Newton < 3 || res.Newton%4 == 0) || lastSteps > lapPrecSteps {
			if _, err := e.pre.ic0(a, w, pd, po); err != nil {
				return nil, fmt.Errorf("vecchia: Laplace's preconditioner: %w", err)
			}
			prec = e.pre
		}
		// An inexact Newton step: the solve's relative residual follows
		// the gradient down to lapCGTol (the forcing term of Dembo,
		// Eisenstat and Steihaug 1982), so the last steps are exact.
		gmax := 0.0
		for _, v := range grad0 {
			gmax = max(gmax, math.Abs(v))
		}
		lastSteps = e.solve(delta, grad0, w, prec, max(lapCGTol, min(lapForcing, lapForcing*gmax)))
		res.CG += lastSteps
		res.Newton++
		// Backtrack while Psi falls by more than its rounding: near the
		// mode a Newton step's gain (|delta|^2) is below Psi's rounding,
		// and the step must still be taken for the mode's accuracy.
		step := 1.0
		next := cur
		ok := false
		for range 40 {
			for k := range n {
				xn[k] = x[k] + step*delta[k]
			}
			next, _, _ = psi(xn)
			if ok = next >= cur-lapPsiRound*math.Abs(cur); ok {
				break
			}
			step /= 2
		}
		if !ok {
			break // no ascent along Newton's direction: the mode, to rounding
		}
		change, scale := 0.0, 1.0
		for k := range n {
			change = max(change, math.Abs(xn[k]-x[k]))
			scale = max(scale, math.Abs(xn[k]))
		}
		copy(x, xn)
		cur = next
		if change <= lapStepTol*scale {
			break
		}
	}
	_, res.LogLik, res.Quad = psi(x)
	derivs(x)
	// T: the factor of H = A'A + W in fac's pattern, without a shift.
	fac := e.fac
	pf, pof := make([]float64, n), make([]float64, len(fac.nbr))
	fac.assemble(a, w, pf, pof)
	copy(fac.diag, pf)
	copy(fac.off, pof)
	fac.stale()
	if !fac.eliminate(0, n) {
		return nil, fmt.Errorf("%w (at %d rows, the first %d dense)", ErrLaplaceBreakdown, n, fac.full)
	}
	for k := range n {
		if a.dup[k] {
			continue
		}
		res.LogDetA += math.Log(a.diag[k])
		res.LogDetT += math.Log(fac.diag[k])
	}
	res.LogZ = res.LogLik - res.Quad + res.LogDetA - res.LogDetT
	if math.IsNaN(res.LogZ) || math.IsInf(res.LogZ, 0) {
		return nil, fmt.Errorf("vecchia: the Laplace evidence is not finite (%v)", res.LogZ)
	}
	e.last, e.res, e.w, e.facOK = m, res, w, true
	return res, nil
}

// solve sets dst to H^-1 b, H = A'A + diag(w), by conjugate gradients
// preconditioned by t'T, to relative residual tol, and returns the steps
// taken.
func (e *LaplaceEvidence) solve(dst, b, w []float64, t *tri, tol float64) int {
	a, tmp, n := e.a, e.tmp, e.n
	hmul := func(dst, v []float64) {
		a.mulTo(tmp, v)
		a.mulTransTo(dst, tmp)
		for k := range n {
			dst[k] += w[k] * v[k]
		}
	}
	// tmp is shared by hmul and prec: each uses it within one call.
	prec := func(d, r []float64) {
		t.solveTransTo(tmp, r)
		t.solveTo(d, tmp)
	}
	clear(dst)
	total := 0
	for total < lapMaxCG {
		s := e.cgw.solveTol(dst, b, hmul, prec, tol)
		total += s
		if s < maxCG {
			break
		}
	}
	return total
}

// Adjoint returns the derivative of the last successful evaluation's
// LogZ with respect to the entries of its model's A (see LaplaceEvidence:
// the mode's, T's and W's parts), or nil if the last evaluation failed or
// there was none. It costs a pass backwards through T's factorisation and
// one solve with H.
func (e *LaplaceEvidence) Adjoint() *FactorAdjoint {
	m, res, w := e.last, e.res, e.w
	if m == nil {
		return nil
	}
	n, a, fac, x := e.n, e.a, e.fac, res.Mode
	ax := make([]float64, n)
	// Psi's part: the prior's score at the mode.
	adj := NewFactorAdjoint(m)
	a.mulTo(ax, x)
	for k := range n {
		if a.dup[k] {
			continue
		}
		adj.Diag[k] = 1/a.diag[k] - x[k]*ax[k]
		for q := a.start[k]; q < a.start[k+1]; q++ {
			adj.Off[q] = -x[a.nbr[q]] * ax[k]
		}
	}
	// G = log det T: its adjoint in H's entries of T's pattern.
	dbar, obar := make([]float64, n), make([]float64, len(fac.off))
	fac.logDetAdjoint(dbar, obar)
	// A's part of -dG: -2 Gs_k A_k for each row k, the products A'A
	// (tri.products) run backwards.
	for i := range n {
		if a.dup[i] {
			continue
		}
		s, end := a.start[i], a.start[i+1]
		adj.Diag[i] -= 2 * dbar[i] * a.diag[i]
		for q := s; q < end; q++ {
			adj.Off[q] -= 2 * dbar[a.nbr[q]] * a.off[q]
		}
		if c := fac.pc; c != nil && i >= fac.full && c.a == a {
			// products' cached pairs, backwards.
			cols := a.nbr[s:end]
			for _, r := range c.row(i) {
				bo := s + int(r.bo)
				if r.ao == pairDiag {
					ob := obar[fac.start[i]+int(r.y)]
					adj.Diag[i] -= ob * a.off[bo]
					adj.Off[bo] -= ob * a.diag[i]
					continue
				}
				p := int(cols[r.ao])
				if p < fac.full {
					continue
				}
				ao := s + int(r.ao)
				ob := obar[fac.start[p]+int(r.y)]
				adj.Off[ao] -= ob * a.off[bo]
				adj.Off[bo] -= ob * a.off[ao]
			}
			for ai, p := range cols {
				if int(p) >= fac.full {
					break
				}
				ps := fac.start[p]
				for x, q := range cols[:ai] {
					ob := obar[ps+int(fac.rank[q])]
					adj.Off[s+ai] -= ob * a.off[s+x]
					adj.Off[s+x] -= ob * a.off[s+ai]
				}
			}
			continue
		}
		e.buf = a.pairs(i, fac, e.buf)
		for _, r := range e.buf {
			ob := obar[r.pos]
			bv := a.off[r.bo]
			if r.ao < 0 {
				adj.Diag[i] -= ob * bv
				adj.Off[r.bo] -= ob * a.diag[i]
				continue
			}
			adj.Off[r.ao] -= ob * bv
			adj.Off[r.bo] -= ob * a.off[r.ao]
		}
	}
	// W's part, through the mode: s_v = Gbar_vv W'_v, u = H^-1 s, and
	// -dG gains u'dA'A x^ = sum_k dA_k'(u_k (A x^)_k + x^_k (A u)_k).
	sv := make([]float64, n)
	for k := range n {
		v := latent(m, k)
		sv[v] += dbar[v] * obsThird(x[v], m.Lower[k], m.Upper[k], m.Noise)
	}
	u := make([]float64, n)
	res.CG += e.solve(u, sv, w, fac, lapCGTol)
	au := make([]float64, n)
	a.mulTo(au, u)
	for k := range n {
		if a.dup[k] {
			continue
		}
		adj.Diag[k] += u[k]*ax[k] + x[k]*au[k]
		for q := a.start[k]; q < a.start[k+1]; q++ {
			j := a.nbr[q]
			adj.Off[q] += u[j]*ax[k] + x[j]*au[k]
		}
	}
	return adj
}

// obsThird returns the derivative in x of obsDerivs' w, the negative second
// derivative of log P(a <= x + sqrt(s) eps <= b): w = 1/s - kappa2/s^2 and
// dw/dx = -kappa3/s^3 for the cumulants kappa_n of x + sqrt(s) eps
// truncated to [a, b] (an exponential family in x / s), that is
// -kappa3(Z)/s^(3/2) for the standard normal Z truncated to [lo, hi], lo =
// (a - x)/sqrt(s), hi = (b - x)/sqrt(s), whose raw moments are
//
//	m1 = r_lo - r_hi,   m2 = 1 + lo r_lo - hi r_hi,   m3 = 2 m1 + lo^2 r_lo - hi^2 r_hi,
//
// r_t = phi(t) / P(lo <= Z <= hi) (0 at an infinite bound), kappa3 = m3 -
// 3 m1 m2 + 2 m1^3. For one bound, with r the inverse Mills ratio at lo,
// kappa3 = r ((r - lo)(2 r - lo) - 1), computed so.
func obsThird(x, a, b, s float64) float64 {
	sd := math.Sqrt(s)
	lo, hi := (a-x)/sd, (b-x)/sd
	lp := core.LogPhiDiff(lo, hi)
	r := func(t float64) float64 {
		if math.IsInf(t, 0) {
			return 0
		}
		return math.Exp(core.LogPhiDensity(t) - lp)
	}
	var k3 float64
	switch {
	case math.IsInf(hi, 1) && !math.IsInf(lo, -1):
		rl := r(lo)
		k3 = rl * ((rl-lo)*(2*rl-lo) - 1)
	case math.IsInf(lo, -1) && !math.IsInf(hi, 1):
		// Z <= hi is -Z >= -hi: the third cumulant changes sign.
		rh := r(hi)
		k3 = -rh * ((rh+hi)*(2*rh+hi) - 1)
	case math.IsInf(lo, -1) && math.IsInf(hi, 1):
		k3 = 0
	default:
		rl, rh := r(lo), r(hi)
		m1 := rl - rh
		m2 := 1 + lo*rl - hi*rh
		m3 := 2*m1 + lo*lo*rl - hi*hi*rh
		k3 = m3 - 3*m1*m2 + 2*m1*m1*m1
	}
	return -k3 / (s * sd)
}

// logDetAdjoint sets dbar and obar (t's diagonal and off-diagonal
// entries) to the derivative of G = sum_k log T_kk, t holding the factor
// T that eliminate computed, with respect to the entries of the matrix P
// it factored (t's pattern: an off-diagonal entry stands for both P_pq
// and P_qp). It runs eliminate backwards (reverse-mode differentiation):
// eliminate's step for row k takes T_kk = sqrt(P_kk - ...), T_kq = (P_kq -
// ...)/T_kk, and subtracts T_kq^2 from the diagonal of row q and T_kp T_kq
// from the entry (p, q) of the pattern; backwards, rows 0 to N-1 in turn,
// each row's adjoints of T_k. gather those of the later rows' entries it
// updated (already final: those rows were eliminated after it), and give
// its own entries of P theirs. With a complete pattern (every earlier
// column), G = log det P / 2, and dbar = diag(P^-1) / 2, obar = P^-1's
// entries.
func (t *tri) logDetAdjoint(dbar, obar []float64) {
	clear(dbar)
	clear(obar)
	var lbar []float64
	for k := range t.n {
		if t.dup[k] {
			continue
		}
		s, e := t.start[k], t.start[k+1]
		lbar = slices.Grow(lbar[:0], e-s)[:e-s]
		clear(lbar)
		if k < t.full {
			// A dense row: its entry ip updated row p = its column ip's
			// first ip entries (eliminate's outer product), contiguous.
			row := t.off[s:e]
			for ip, p := range t.nbr[s:e] {
				ob := obar[t.start[p] : t.start[p]+ip]
				lbar[ip] -= dot(ob, row[:ip])
				core.Axpy(lbar[:ip], -row[ip], ob)
			}
		} else if c := t.pc; c != nil {
			// eliminate's cached pairs, p after the dense block; the
			// block's rows, full, by rank.
			cols := t.nbr[s:e]
			for _, r := range c.row(k) {
				if r.ao == pairDiag {
					continue
				}
				p := int(cols[r.ao])
				if p < t.full {
					continue
				}
				ob := obar[t.start[p]+int(r.y)]
				lbar[r.ao] -= ob * t.off[s+int(r.bo)]
				lbar[r.bo] -= ob * t.off[s+int(r.ao)]
			}
			for ai, p := range cols {
				if int(p) >= t.full {
					break
				}
				ps := t.start[p]
				for x, q := range cols[:ai] {
					ob := obar[ps+int(t.rank[q])]
					lbar[ai] -= ob * t.off[s+x]
					lbar[x] -= ob * t.off[s+ai]
				}
			}
		} else {
			t.buf = t.pairs(k, t, t.buf)
			for _, r := range t.buf {
				if r.ao < 0 {
					continue
				}
				ob := obar[r.pos]
				lbar[int(r.ao)-s] -= ob * t.off[r.bo]
				lbar[int(r.bo)-s] -= ob * t.off[r.ao]
			}
		}
		d := t.diag[k]
		db := 1 / d
		for q := s; q < e; q++ {
			lq := t.off[q]
			lb := lbar[q-s] - 2*dbar[t.nbr[q]]*lq
			obar[q] = lb / d
			db -= lb * lq / d
		}
		dbar[k] = db / (2 * d)
	}
}
