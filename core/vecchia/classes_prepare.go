package vecchia

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/gpc-mc/gpc/core"
)

// PreparedMulticlass is a Multiclass model with the proposal its
// estimator draws from, as Prepared is for two classes. The estimator
// carries L latent coordinates per point (Multiclass.latentDims: the
// C - 1 contrasts of the classes where they share a kernel, the C classes
// otherwise), variable k L + a for row k's coordinate a, whose prior is L
// Vecchia processes on the shared sets, independent of each other; the
// classes' latent values are x_k = E g_k. The proposal is a Gaussian q of
// the coordinates,
//
//	q(g) proportional to exp(-|T g - eta|^2 / 2),   T'T ~ A'A + W,   T' eta = nu,
//
// A the coordinates' Vecchia factors side by side and W block-diagonal,
// an L x L block per point: the sites exp(-g_k' W_k g_k / 2 + nu_k' g_k)
// that stand for the labels of the rows that observe the point, the sum
// of each row's own site. A site couples a point's coordinates (its label
// says which utility is largest), so T couples them too: T lives in the
// pattern of the expanded model (each coordinate conditioned on every
// coordinate of the point's neighbours, and on the point's earlier
// coordinates), exact and dense on a block of the coarsest points, an
// incomplete factorisation after it (tri), whose dropped fill-in is small
// where the sites are small beside the prior's conditional precision, as
// for two classes. q's conditional of a point's L coordinates given the
// earlier points' is an L-dimensional Gaussian, with precision T_kk'T_kk
// (T_kk the point's lower-triangular block of T) and a mean that is an
// O(L^2 M) sparse combination.
//
// The sites start from Laplace's (Rasmussen and Williams 2006, section
// 3.5, with the probit's likelihood: classLogLik): Newton's method on the
// posterior mode with conjugate gradients preconditioned by the
// incomplete factor, each row's site its likelihood's negative Hessian
// and gradient at the mode (as Laplace for two classes); rounds of
// expectation propagation refine them (runEP).
//
// The estimator (its runner) goes through the training rows in the
// model's order: a point's step draws its L coordinates jointly from q's
// conditional with the row's site divided out, twisted toward its label
// by the Geweke-Hajivassiliou-Keane sequence over the C - 1 differences
// u_y - u_c (each a fully adapted one-dimensional step of its own, with
// its own weight and resampling), and each particle carries the log of
// r(g) = p(g) prod_k site_k(g_k) / q(g), its correction to the model's
// prior: the estimate is unbiased for the model's probability whatever q
// is.
type PreparedMulticlass struct {
	m *Multiclass
	// L is the latent coordinates per point and e (C x L) their map to
	// the classes' latent values (Multiclass.latentDims); de[y] (C - 1 x
	// L) maps them to the differences of label y, u_y - u_o(j).
	L  int
	e  []float64
	de [][]float64
	// rowDE holds each row's DE (C - 1 x L) in its GHK order: its label's
	// differences by q's mean of them, the smallest first (ghkOrder).
	rowDE []float64
	em    *Model // the expanded pattern (expanded)
	prop  *tri
	pb    []float64 // the prior's coefficients in prop's pattern (rows after the block)
	eta   []float64
	// w, nu are the sites by point (L x L and L values; a repeat's zero:
	// its rows' sites are its point's); rw, rnu each row's own, which its
	// step divides out.
	w, nu   []float64
	rw, rnu []float64
	// Block is the number of leading training rows (points and their
	// repeats) with dense rows of T.
	Block int
	// BlockRule is the number of leading training rows the block's rule
	// asks for before its cap of MaxBlock variables (blockSize): where it
	// exceeds Block, rows with large sites fall after the block, and the
	// estimate can be far too low (docs/vecchia.md).
	BlockRule int
	// Laplace is the preparation's Laplace approximation, EP the rounds
	// of expectation propagation that refined its sites (runEP).
	Laplace *ClassSites
	EP      core.EPStats
	// Shift is the largest diagonal shift an incomplete factorisation
	// needed (0 unless a pivot failed).
	Shift float64
	// Widened counts the sites whose precision was lowered (widen).
	Widened int
	// Clipped counts the points whose site precision was lowered to keep
	// the proposal's conditional precision without it positive definite.
	Clipped int
	// MeanSteps counts the conjugate gradient steps of q's mean.
	MeanSteps int
	// SiteScale is the share of the sites after the block that the
	// proposal keeps (Prepared.SiteScale).
	SiteScale float64
	// KeepPaths is the number of particle paths the estimate keeps for
	// later prediction (Prepared.KeepPaths): each of L N coordinates.
	KeepPaths int
}

// ClassSites is Laplace's approximation of a Multiclass model's labels:
// Mode, the posterior mode of the latent coordinates (by variable, k L +
// a), and the Newton and conjugate gradient steps that found it.
type ClassSites struct {
	Mode       []float64
	Iterations int
	CGSteps    int
	// LogLik and Quad are the mode's sum_k log P(y_k | E g_v(k)) and
	// |A g|^2 / 2.
	LogLik, Quad float64
}

// newtonTols are the tolerances of the multi-class Laplace's Newton
// steps: maxNewton bounds them; Newton stops after a step that moved no
// coordinate by more than step (times 1 + the largest |g| with relStep);
// a step's conjugate gradients stop at relative residual cgTol(the
// gradient's largest entry); Newton step i factors the preconditioner
// (the incomplete factor of A'A + W at the step's W) where factorAt(i),
// and where the last solve took more than refactor steps (0: no such
// rule); a step whose best Psi falls by more than psiRound |Psi| is not
// taken.
type newtonTols struct {
	maxNewton int
	step      float64
	relStep   bool
	cgTol     func(gmax float64) float64
	factorAt  func(i int) bool
	refactor  int
	psiRound  float64
}

// proposalNewton are the proposal's tolerances: its mode only starts EP's
// rounds (maxNewton, newtonTol, cgTol: the two-class Laplace's), from 0,
// the preconditioner factored at the first, second and fourth steps.
var proposalNewton = newtonTols{maxNewton: maxNewton, step: newtonTol, cgTol: func(float64) float64 { return cgTol },
	factorAt: func(i int) bool { return i <= 2 || i == 4 }, psiRound: 1e-9}

// evidenceNewton are the evidence's (ClassLaplace): the mode to rounding,
// as LaplaceEvidence solves it, an inexact Newton step's residual
// following the gradient down (lapForcing); a fit starts each evaluation
// near its mode (the last one's), so the preconditioner is factored at
// the first step and again only where the solves grow long.
var evidenceNewton = newtonTols{maxNewton: lapMaxNewton, step: lapStepTol, relStep: true, refactor: lapPrecSteps, psiRound: lapPsiRound,
	cgTol:    func(gmax float64) float64 { return max(lapCGTol, min(lapForcing, lapForcing*gmax)) },
	factorAt: func(i int) bool { return i == 1 }}

// Model returns the prepared model.
func (p *PreparedMulticlass) Model() *Multiclass { return p.m }

// PrepareMulticlass checks the model and computes its proposal (see
// PreparedMulticlass), telling tr (if not nil) of its phases. It returns
// a *core.InputError for a model that is not valid or whose proposal
// cannot be factorised, and ctx's error if ctx is cancelled.
func PrepareMulticlass(ctx context.Context, m *Multiclass, tr core.Trace) (*PreparedMulticlass, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	say := func(format string, args ...any) {
		if tr != nil {
			tr(fmt.Sprintf(format, args...))
		}
	}
	p := newPreparedMulticlass(m)
	l, e, em := p.L, p.e, p.em
	n := em.N
	p.eta = make([]float64, n)
	p.de = make([][]float64, m.C)
	for y := range m.C {
		p.de[y] = make([]float64, (m.C-1)*l)
		for j := range m.C - 1 {
			o := j
			if j >= y {
				o = j + 1
			}
			for b := range l {
				p.de[y][j*l+b] = e[y*l+b] - e[o*l+b]
			}
		}
	}
	a := newTri(em)
	a.priorFactor(em)
	pc := newPairCache(a)
	say("Laplace: the posterior mode of %d latent values (%d classes, %d per point)", n, m.C, l)
	pre := newTri(em)
	pre.pc = pc
	st, err := p.laplace(ctx, a, pre, proposalNewton, nil)
	if err != nil {
		return nil, err
	}
	p.Laplace = st
	p.Block, p.BlockRule = p.blockSize()
	say("the proposal's factor: %d Newton steps done; a dense block of %d rows", st.Iterations, p.Block)
	k0 := p.Block * l
	t := hybridPattern(em, a, k0)
	t.pc = pc
	if p.EP, err = p.runEP(ctx, a, t, say); err != nil {
		return nil, err
	}
	pd, po := make([]float64, n), make([]float64, len(t.nbr))
	for {
		p.assemble(t, a, pd, po)
		if t.factorUnshifted(pd, po, n) {
			break
		}
		if p.SiteScale < minSiteScale {
			return nil, &core.InputError{Index: -1, Msg: "the proposal's incomplete factorisation breaks down even with the later sites nearly removed: the Vecchia conditionals are far weaker than the labels' information (length scales long beside the points' spacing, or many features): give more neighbours, or use the dense path"}
		}
		p.SiteScale /= 2
		p.scaleRows(p.Block, m.N, 0.5, true)
	}
	p.prop = t
	// The proposal's conditional precision of a point's coordinates, with
	// the point's site divided out, must stay positive definite: lower a
	// site's precision to maxSiteShare of it where it is not, and
	// factorise again (a few times: each factorisation moves the
	// precisions a little).
	p.ghkOrder(st.Mode) // the order of q's mean, below (the checks hold for any)
	var sw stepWork
	for pass := 0; ; pass++ {
		clipped := 0
		for k := range m.N {
			if m.Dup(k) < 0 {
				if f := p.siteShare(k, &sw); f > maxSiteShare {
					p.scalePoint(k, maxSiteShare/f)
					clipped++
				}
			}
		}
		p.Clipped += clipped
		if clipped == 0 {
			break
		}
		if pass == 4 {
			return nil, &core.InputError{Index: -1, Msg: "the proposal's conditional precision stays singular after its sites are lowered: give more neighbours, or use the dense path"}
		}
		p.assemble(t, a, pd, po)
		shift, err := t.factorShifted(pd, po, 0, n, maxShift)
		if err != nil {
			return nil, &core.InputError{Index: -1, Msg: "the proposal's incomplete factorisation breaks down: give more neighbours, or use the dense path"}
		}
		p.Shift = max(p.Shift, shift)
	}
	for k := range m.N {
		if m.Dup(k) < 0 && !p.stepConsts(k, &sw) {
			return nil, &core.InputError{Index: k, Msg: fmt.Sprintf("row %d: the proposal's conditional covariance of the point's classes is not positive definite: give more neighbours, or use the dense path", k)}
		}
	}
	// The prior's coefficients in the proposal's pattern after the block
	// (the expanded model's own pattern there).
	p.pb = make([]float64, len(t.nbr))
	for v := k0; v < n; v++ {
		if !t.dup[v] {
			copy(p.pb[t.start[v]:t.start[v+1]], em.Coef[em.Start[v]:em.Start[v+1]])
		}
	}
	// q's mean: the exact mean of the prior times the sites, by conjugate
	// gradients preconditioned by T'T, from Laplace's mode; eta = T mu
	// (Prepare says why).
	mu := slices.Clone(st.Mode)
	p.MeanSteps = p.mean(mu, a, t, meanTol)
	t.mulTo(p.eta, mu)
	p.ghkOrder(mu)
	t.release()
	return p, nil
}

// newPreparedMulticlass returns m's latent coordinates (L, e) and their
// expanded pattern (em), with nothing prepared.
func newPreparedMulticlass(m *Multiclass) *PreparedMulticlass {
	l, e := m.latentDims()
	return &PreparedMulticlass{m: m, L: l, e: e, em: m.expanded(l), SiteScale: 1}
}

// ghkOrder sets each row's GHK order of its label's differences (rowDE):
// by q's mean of each difference at the row's point, mu's, the smallest
// first, so that the step's first, fully adapted weight is the label's
// most binding difference's (Genz's order for GHK).
func (p *PreparedMulticlass) ghkOrder(mu []float64) {
	m, l := p.m, p.L
	q := m.C - 1
	p.rowDE = make([]float64, m.N*q*l)
	means := make([]float64, q)
	ord := make([]int, q)
	for k := range m.N {
		v := latent1(m, k)
		de := p.de[m.Y[k]]
		for j := range q {
			s := 0.0
			for b := range l {
				s += de[j*l+b] * mu[v*l+b]
			}
			means[j] = s
			ord[j] = j
		}
		slices.SortStableFunc(ord, func(a, b int) int { return cmp.Compare(means[a], means[b]) })
		for i, j := range ord {
			copy(p.rowDE[(k*q+i)*l:(k*q+i+1)*l], de[j*l:(j+1)*l])
		}
	}
}

// sums sets the points' sites w, nu from the rows' rw, rnu.
func (p *PreparedMulticlass) sums() {
	m, l := p.m, p.L
	clear(p.w)
	clear(p.nu)
	for k := range m.N {
		v := latent1(m, k)
		core.Axpy(p.w[v*l*l:(v+1)*l*l], 1, p.rw[k*l*l:(k+1)*l*l])
		core.Axpy(p.nu[v*l:(v+1)*l], 1, p.rnu[k*l:(k+1)*l])
	}
}

// latent1 returns row k's point: k, or the point it repeats.
func latent1(m *Multiclass, k int) int {
	if d := m.Dup(k); d >= 0 {
		return d
	}
	return k
}

// scaleRows multiplies the sites of rows [lo, hi) by f (their linear
// terms too, if both), and sums them again.
func (p *PreparedMulticlass) scaleRows(lo, hi int, f float64, both bool) {
	l := p.L
	for k := lo; k < hi; k++ {
		for i := range l * l {
			p.rw[k*l*l+i] *= f
		}
		if both {
			for i := range l {
				p.rnu[k*l+i] *= f
			}
		}
	}
	p.sums()
}

// scalePoint multiplies the site precisions of point k's rows (its own
// and its repeats', which follow it) by f.
func (p *PreparedMulticlass) scalePoint(k int, f float64) {
	hi := k + 1
	for hi < p.m.N && p.m.Dup(hi) == k {
		hi++
	}
	p.scaleRows(k, hi, f, false)
}

// assemble sets pd, po to A'A + W on t's pattern: the sites' diagonals as
// tri.assemble adds them, and each point's off-diagonal couplings in the
// last entries of its coordinates' rows (a row k L + a holds the point's
// coordinates before a last, in every pattern of the expanded model).
func (p *PreparedMulticlass) assemble(t, a *tri, pd, po []float64) {
	m, l := p.m, p.L
	diag := make([]float64, m.N*l)
	for k := range m.N {
		for i := range l {
			diag[k*l+i] = p.w[(k*l+i)*l+i]
		}
	}
	t.assemble(a, diag, pd, po)
	for k := range m.N {
		if m.Dup(k) >= 0 {
			continue
		}
		for i := 1; i < l; i++ {
			e := t.start[k*l+i+1]
			for j := range i {
				po[e-i+j] += p.w[(k*l+i)*l+j]
			}
		}
	}
}

// mulSites adds W v to dst.
func (p *PreparedMulticlass) mulSites(dst, v []float64) {
	l := p.L
	for k := range p.m.N {
		w := p.w[k*l*l : (k+1)*l*l]
		for i := range l {
			s := 0.0
			for j := range l {
				s += w[i*l+j] * v[k*l+j]
			}
			dst[k*l+i] += s
		}
	}
}

// mean sets mu to (A'A + W)^-1 nu by conjugate gradients from mu's own
// value to relative residual tol, preconditioned by t'T, and returns the
// steps taken.
func (p *PreparedMulticlass) mean(mu []float64, a, t *tri, tol float64) int {
	n := len(mu)
	ax, tmp := make([]float64, n), make([]float64, n)
	return newCG(n).solveTol(mu, p.nu, func(dst, v []float64) {
		a.mulTo(ax, v)
		a.mulTransTo(dst, ax)
		p.mulSites(dst, v)
	}, func(dst, r []float64) {
		t.solveTransTo(tmp, r)
		t.solveTo(dst, tmp)
	}, tol)
}

// blockSize returns the dense block's training rows: up to the last point
// whose largest conditional variance times the largest site precision is
// at least blockTol, at most MaxBlock variables (MaxBlock / L points), and
// the repeats of its points; and the rows the rule asks for without the
// cap (the same where the cap does not bind).
func (p *PreparedMulticlass) blockSize() (block, rule int) {
	m, l := p.m, p.L
	wmax := 0.0
	for k := range m.N {
		for i := range l {
			wmax = max(wmax, p.w[(k*l+i)*l+i])
		}
	}
	return classBlock(m, l, wmax)
}

// classBlock is the multi-class dense block's rule for site precisions up
// to wmax: the rows up to the last point whose largest conditional
// variance times wmax is at least blockTol, at most MaxBlock variables
// (MaxBlock / l points of l coordinates), and the repeats of its points;
// and the rows the rule asks for without the cap.
func classBlock(m *Multiclass, l int, wmax float64) (block, rule int) {
	k0 := 0
	for k := range m.N {
		if m.Dup(k) >= 0 {
			continue
		}
		for i := range m.CondVar {
			if m.CondVar[i][k]*wmax >= blockTol {
				k0 = k + 1
			}
		}
	}
	rule = k0
	regular := 0
	for k := range k0 {
		if m.Dup(k) < 0 {
			if regular == MaxBlock/l {
				k0 = k
				break
			}
			regular++
		}
	}
	for k0 < m.N && m.Dup(k0) >= 0 {
		k0++
	}
	return k0, max(rule, k0)
}

// siteShare returns the largest share of point k's proposal precision Q
// (T_kk'T_kk) that its site takes: the largest eigenvalue of
// Q^-1/2 W_k Q^-1/2.
func (p *PreparedMulticlass) siteShare(k int, sw *stepWork) float64 {
	l := p.L
	sw.size(l, p.m.C)
	p.blockOf(k, sw.tkk)
	w := p.w[k*l*l : (k+1)*l*l]
	// A quick test first: maxSiteShare Q - W positive definite.
	q := sw.q
	for i := range l {
		for j := range l {
			s := 0.0
			for a := max(i, j); a < l; a++ {
				s += sw.tkk[a*l+i] * sw.tkk[a*l+j]
			}
			q[i*l+j] = maxSiteShare*s - w[i*l+j]
		}
	}
	if cholLower(q, l) {
		return 0
	}
	// R = T_kk^-1 (lower), and R' W R: its eigenvalues are W's relative
	// to Q = T_kk'T_kk.
	r := sw.lamInv
	for col := range l {
		for i := range l {
			s := 0.0
			if i == col {
				s = 1
			}
			for a := range i {
				s -= sw.tkk[i*l+a] * r[a*l+col]
			}
			r[i*l+col] = s / sw.tkk[i*l+i]
		}
	}
	ms := mat.NewSymDense(l, nil)
	for i := range l {
		for j := range i + 1 {
			s := 0.0
			for a := range l {
				for b := range l {
					s += r[a*l+i] * w[a*l+b] * r[b*l+j]
				}
			}
			ms.SetSym(i, j, s)
		}
	}
	var es mat.EigenSym
	if !es.Factorize(ms, false) {
		return math.Inf(1)
	}
	return slices.Max(es.Values(nil))
}

// blockOf sets tkk (L x L, row-major lower) to point k's block of T: the
// diagonal of its coordinates' rows and, in row a, the entries of the
// coordinates before a (the row's last entries).
func (p *PreparedMulticlass) blockOf(k int, tkk []float64) {
	t, l := p.prop, p.L
	clear(tkk[:l*l])
	for i := range l {
		v := k*l + i
		tkk[i*l+i] = t.diag[v]
		e := t.start[v+1]
		for j := range i {
			tkk[i*l+j] = t.off[e-i+j]
		}
	}
}

// stepWork holds the constants of a point's step (stepConsts), for L
// coordinates and C classes.
type stepWork struct {
	l, c int
	// tkk, q: the point's block of T and q's conditional precision
	// T_kk'T_kk; lam, lamChol, lamInv: Lambda = q less the row's site, its
	// Cholesky factor and inverse; mmat = Lambda^-1 q and cnu = Lambda^-1
	// nu_row give the twisted mean c = mmat mhat - cnu.
	tkk, q, lam, lamChol, lamInv, mmat, cnu []float64
	// ls: the Cholesky factor of S = DE Lambda^-1 (DE)' + Noise D D', the
	// covariance of the label's C - 1 differences d = D u (DE, the
	// coordinates' map to them: PreparedMulticlass.de); g = Lambda^-1
	// (DE)' ls^-T and rchol, the Cholesky factor of Lambda^-1 - g g': g =
	// c + g z + rchol xi given d = DE c + ls z.
	ls, g, rchol, dl []float64
	logdetQ          float64
	logdetLam        float64
	tmp              []float64
}

func (sw *stepWork) size(l, c int) {
	if sw.l == l && sw.c == c {
		return
	}
	sw.l, sw.c = l, c
	f := func(k int) []float64 { return make([]float64, k) }
	sw.tkk, sw.q, sw.lam, sw.lamChol, sw.lamInv, sw.mmat, sw.cnu = f(l*l), f(l*l), f(l*l), f(l*l), f(l*l), f(l*l), f(l)
	sw.ls, sw.g, sw.rchol, sw.dl, sw.tmp = f(c*c), f(l*c), f(l*l), f(l*c), f(l)
}

// stepConsts computes the constants of regular row k's step (stepWork)
// and reports whether its matrices are positive definite.
func (p *PreparedMulticlass) stepConsts(k int, sw *stepWork) bool {
	m, l := p.m, p.L
	q1 := m.C - 1
	sw.size(l, m.C)
	p.blockOf(k, sw.tkk)
	sw.logdetQ = 0
	for i := range l {
		sw.logdetQ += 2 * math.Log(sw.tkk[i*l+i])
		for j := range l {
			s := 0.0
			for a := max(i, j); a < l; a++ {
				s += sw.tkk[a*l+i] * sw.tkk[a*l+j]
			}
			sw.q[i*l+j] = s
		}
	}
	rw := p.rw[k*l*l : (k+1)*l*l]
	for i := range l * l {
		sw.lam[i] = sw.q[i] - rw[i]
	}
	copy(sw.lamChol, sw.lam)
	if !cholLower(sw.lamChol, l) {
		return false
	}
	sw.logdetLam = 0
	for i := range l {
		sw.logdetLam += 2 * math.Log(sw.lamChol[i*l+i])
	}
	invFromChol(sw.lamInv, sw.lamChol, l, sw.tmp)
	rnu := p.rnu[k*l : (k+1)*l]
	for i := range l {
		s := 0.0
		for j := range l {
			t := 0.0
			for a := range l {
				t += sw.lamInv[i*l+a] * sw.q[a*l+j]
			}
			sw.mmat[i*l+j] = t
			s += sw.lamInv[i*l+j] * rnu[j]
		}
		sw.cnu[i] = s
	}
	// dl = Lambda^-1 (DE)' (L x q1).
	de := p.rowDE[k*q1*l : (k+1)*q1*l]
	for i := range l {
		for j := range q1 {
			s := 0.0
			for b := range l {
				s += sw.lamInv[i*l+b] * de[j*l+b]
			}
			sw.dl[i*q1+j] = s
		}
	}
	// S = DE dl + Noise D D' (D D' = 1 + [j = i]).
	s := sw.ls
	for j := range q1 {
		for i := range j + 1 {
			v := m.Noise
			if i == j {
				v += m.Noise
			}
			for b := range l {
				v += de[j*l+b] * sw.dl[b*q1+i]
			}
			s[j*q1+i] = v
		}
	}
	if !cholLower(s, q1) {
		return false
	}
	// g's row i = ls^-1 (dl's row i).
	for i := range l {
		for j := range q1 {
			v := sw.dl[i*q1+j]
			for a := range j {
				v -= s[j*q1+a] * sw.g[i*q1+a]
			}
			sw.g[i*q1+j] = v / s[j*q1+j]
		}
	}
	for i := range l {
		for j := range i + 1 {
			v := sw.lamInv[i*l+j]
			for a := range q1 {
				v -= sw.g[i*q1+a] * sw.g[j*q1+a]
			}
			sw.rchol[i*l+j] = v
		}
	}
	return cholLower(sw.rchol, l)
}

// laplace finds the mode of the latent posterior,
//
//	Psi(g) = sum_k log P(y_k | E g_v(k)) - |A g|^2 / 2,
//
// v(k) row k's point, by Newton's method, the Hessian's systems solved by
// conjugate gradients preconditioned by the incomplete factor of A'A + W
// (A's where that breaks down), as Laplace does for two classes, and sets
// the rows' sites at the mode: rw the row's negative Hessian, rnu = rw g +
// its gradient (Rasmussen and Williams 2006, section 3.5; here with the
// probit's likelihood, classLogLik, through E). It returns ctx's error if
// ctx is cancelled, and a *core.InputError if a site is not finite.
func (p *PreparedMulticlass) laplace(ctx context.Context, a, pre *tri, nt newtonTols, warm []float64) (*ClassSites, error) {
	m, l, c := p.m, p.L, p.m.C
	n := m.N * l
	sd := math.Sqrt(m.Noise)
	x := make([]float64, n)
	if warm != nil {
		copy(x, warm)
	}
	grad, delta := make([]float64, n), make([]float64, n)
	ax, tmp := make([]float64, n), make([]float64, n)
	p.rw, p.rnu = make([]float64, m.N*l*l), make([]float64, m.N*l)
	p.w, p.nu = make([]float64, m.N*l*l), make([]float64, m.N*l)
	rg := make([]float64, m.N*l) // each row's gradient
	lp := make([]float64, m.N)
	pd, po := make([]float64, n), make([]float64, len(pre.nbr))
	cg := newCG(n)
	st := &ClassSites{}
	// rows evaluates each row's likelihood at x (and its derivatives in
	// the coordinates, with derivs), in parallel: each row's own slots.
	rows := func(x []float64, derivs bool) float64 {
		parallelRange(0, m.N, 0, func(lo, hi int) {
			var w likWork
			xc, gx, hx := make([]float64, c), make([]float64, c), make([]float64, c*c)
			for k := lo; k < hi; k++ {
				v := latent1(m, k)
				gv := x[v*l : (v+1)*l]
				for i := range c {
					s := 0.0
					for b := range l {
						s += p.e[i*l+b] * gv[b]
					}
					xc[i] = s
				}
				if !derivs {
					lp[k] = classLogLik(xc, m.Y[k], sd, nil, nil, &w)
					continue
				}
				lp[k] = classLogLik(xc, m.Y[k], sd, gx, hx, &w)
				// In the coordinates: E' g and E' H E.
				g, h := rg[k*l:(k+1)*l], p.rw[k*l*l:(k+1)*l*l]
				for a := range l {
					s := 0.0
					for i := range c {
						s += p.e[i*l+a] * gx[i]
					}
					g[a] = s
					for b := range l {
						s := 0.0
						for i := range c {
							t := 0.0
							for j := range c {
								t += hx[i*c+j] * p.e[j*l+b]
							}
							s += p.e[i*l+a] * t
						}
						h[a*l+b] = s
					}
				}
			}
		})
		s := 0.0
		for _, v := range lp {
			s += v
		}
		return s
	}
	psi := func(x []float64) float64 {
		a.mulTo(ax, x)
		v := rows(x, false)
		for _, t := range ax {
			v -= t * t / 2
		}
		return v
	}
	// derivs sets the points' sites to the rows' negative Hessians (w)
	// and gradients (nu), summed by point.
	derivs := func(x []float64) {
		rows(x, true)
		copy(p.rnu, rg)
		p.sums()
	}
	cur := psi(x)
	steps := 0
	for st.Iterations = 1; st.Iterations <= nt.maxNewton; st.Iterations++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		derivs(x)
		a.mulTo(ax, x)
		a.mulTransTo(tmp, ax)
		gmax := 0.0
		for i := range n {
			grad[i] = p.nu[i] - tmp[i]
			gmax = max(gmax, math.Abs(grad[i]))
		}
		if nt.factorAt(st.Iterations) || nt.refactor > 0 && steps > nt.refactor {
			p.assemble(pre, a, pd, po)
			if _, err := pre.factorShifted(pd, po, 0, n, maxShift); err != nil {
				// A itself (A'A's factor), or where pre has another
				// pattern (a fit's last T) A's diagonal alone.
				copy(pre.diag, a.diag)
				if len(pre.off) == len(a.off) {
					copy(pre.off, a.off)
				} else {
					clear(pre.off)
				}
				pre.stale()
			}
		}
		clear(delta)
		steps = cg.solveTol(delta, grad, func(dst, v []float64) {
			a.mulTo(ax, v)
			a.mulTransTo(dst, ax)
			p.mulSites(dst, v)
		}, func(dst, r []float64) {
			pre.solveTransTo(tmp, r)
			pre.solveTo(dst, tmp)
		}, nt.cgTol(gmax))
		st.CGSteps += steps
		step := 1.0
		var next float64
		xn := make([]float64, n)
		for range 30 {
			for i := range n {
				xn[i] = x[i] + step*delta[i]
			}
			next = psi(xn)
			if next >= cur || math.Abs(next-cur) <= 1e-12*math.Abs(cur) {
				break
			}
			step /= 2
		}
		if !(next >= cur-nt.psiRound*math.Abs(cur)) {
			break
		}
		change, scale := 0.0, 1.0
		for i := range n {
			change = max(change, math.Abs(xn[i]-x[i]))
			scale = max(scale, math.Abs(xn[i]))
		}
		x, cur = xn, next
		if change < nt.step || nt.relStep && change <= nt.step*scale {
			break
		}
	}
	st.Iterations = min(st.Iterations, nt.maxNewton)
	st.LogLik = rows(x, true)
	a.mulTo(ax, x)
	st.Quad = dot(ax, ax) / 2
	// The rows' sites at the mode: rnu = rw g + the gradient.
	for k := range m.N {
		v := latent1(m, k)
		gv := x[v*l : (v+1)*l]
		w := p.rw[k*l*l : (k+1)*l*l]
		for i := range l {
			s := rg[k*l+i]
			for j := range l {
				s += w[i*l+j] * gv[j]
			}
			p.rnu[k*l+i] = s
		}
	}
	p.sums()
	for i, v := range p.w {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, &core.InputError{Index: i / (l * l), Msg: fmt.Sprintf("Laplace's site of point %d is not finite: the model's values are out of the range this estimator handles", i/(l*l))}
		}
	}
	for i, v := range p.nu {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, &core.InputError{Index: i / l, Msg: fmt.Sprintf("Laplace's site of point %d is not finite: the model's values are out of the range this estimator handles", i/l)}
		}
	}
	st.Mode = x
	return st, nil
}

// factorUnshifted factors pd, po (not modified) into t with no diagonal
// shift, and reports false at a pivot that is not positive. The
// multi-class proposal takes no shift: a shift proportional to the
// diagonal, whose entries after the dense block are the prior's
// conditional precisions 1/D_k (up to 10^4 with the nugget), adds about
// 1e-4 / D_k times each later coordinate's squared deviation to the
// correction's exponent, which at N = 10^4 spread the correction over 36
// nats across the particles (three classes, two coordinates per point, a
// shift of 1e-4).
func (t *tri) factorUnshifted(pd, po []float64, hi int) bool {
	copy(t.diag[:hi], pd[:hi])
	copy(t.off[:t.start[hi]], po[:t.start[hi]])
	return t.eliminate(0, hi)
}
