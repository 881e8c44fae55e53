package vecchia

import (
	"context"
	"fmt"
	"math"
	"slices"
)

// Laplace's evidence of the multinomial probit classifier under Vecchia
// priors (Multiclass), the multi-class counterpart of LaplaceEvidence:
// with g the model's N L latent coordinates (Multiclass.latentDims: the
// C - 1 orthonormal contrasts of the classes where they share a kernel),
// A their Vecchia factors side by side (the expanded pattern), Psi(g) =
// sum_k log P(y_k | E g_v(k)) - |A g|^2 / 2, g^ its maximum and W the
// likelihood's negative Hessian there (an L x L block per point),
//
//	log Z_LA = sum_k log P(y_k | E g^_v(k)) - |A g^|^2 / 2 + log det A - log det T,
//
// T the reverse Cholesky factor of A'A + W in the expanded pattern, dense on
// the first Block rows' coordinates and an incomplete factor after them
// (the proposal's factor, PreparedMulticlass). Where every row conditions
// on all the earlier ones and the block covers every row, T is exact and
// log Z_LA is the dense multinomial probit model's Laplace evidence
// (Rasmussen and Williams 2006, section 3.5; Williams and Barber 1998 for
// the multi-class Laplace approximation), computed here in the contrasts,
// which lose nothing (the common level integrates out exactly).
//
// The mode is found by the proposal's Newton steps (PreparedMulticlass's
// laplace) with the two-class evidence's tolerances (the mode to
// rounding), from warm. There is no analytic gradient: a fit takes its
// gradient by differences of evaluations at one structure and block
// (core/vecchia/vfit), on which the evidence is a smooth function of the
// kernel's hyperparameters.

// ClassLaplaceBlock returns a dense block for model m's Laplace evidence
// (LaplaceOptions.Block, in training rows): the rows up to the last whose
// prior conditional variance is at least 1e-3 of the noise's variance
// (LaplaceBlock's rule), at most MaxBlock coordinates (MaxBlock / L
// points), and the repeats of its points.
func ClassLaplaceBlock(m *Multiclass) int {
	l, _ := m.latentDims()
	block, _ := classBlock(m, l, 1/m.Noise)
	return block
}

// ClassLaplace computes the Laplace evidence of Multiclass models that
// share one structure (the same rows, classes, conditioning sets and
// repeated points): the expanded pattern, its factors' patterns, their
// pairs and level schedules are built once, by NewClassLaplace. It is not
// safe for concurrent use.
type ClassLaplace struct {
	opt         LaplaceOptions
	n, c, block int
	start       []int
	nbr         []int32
	p           *PreparedMulticlass
	a, pre, fac *tri
	pdf, pof    []float64
	// facOK: fac holds the last successful evaluation's T, the next
	// one's preconditioner (its hyperparameters nearby in a fit).
	facOK bool
}

// NewClassLaplace returns the evaluator for models of m's structure with
// opt.Block leading training rows dense in T. It panics if opt.Block is
// negative.
func NewClassLaplace(m *Multiclass, opt LaplaceOptions) *ClassLaplace {
	if opt.Block < 0 {
		panic("vecchia: NewClassLaplace: negative Block")
	}
	p := newPreparedMulticlass(m)
	e := &ClassLaplace{opt: opt, n: m.N, c: m.C, start: m.Start, nbr: m.Nbr, p: p}
	e.a = newTri(p.em)
	pc := newPairCache(e.a)
	e.pre = newTri(p.em)
	e.pre.pc = pc
	e.block = min(opt.Block, m.N)
	for e.block < m.N && e.block > 0 && m.Dup(e.block) >= 0 {
		e.block++ // a repeat goes with the point it repeats
	}
	e.fac = hybridPattern(p.em, e.a, e.block*p.L)
	e.fac.pc = pc
	return e
}

// Eval computes the Laplace evidence of model m (see above; its structure
// must be the evaluator's), Newton started at warm (by coordinate, k L +
// a; nil: 0). The result's Mode is g^ by coordinate. It returns
// ErrLaplaceBreakdown (wrapped) where T's factorisation meets a pivot that
// is not positive, a *core.InputError for a model that is not valid, and
// ctx's error if ctx is cancelled between Newton steps. It panics if m's
// structure is not the evaluator's.
func (e *ClassLaplace) Eval(ctx context.Context, m *Multiclass, warm []float64) (*LaplaceResult, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if m.N != e.n || m.C != e.c || !slices.Equal(m.Start, e.start) || !slices.Equal(m.Nbr, e.nbr) {
		panic("vecchia: ClassLaplace.Eval: the model's structure is not the evaluator's")
	}
	p := e.p
	l, n := p.L, p.em.N
	if warm != nil && len(warm) != n {
		panic("vecchia: ClassLaplace.Eval: warm is not one value per coordinate")
	}
	em := m.expanded(l)
	for v := range n {
		if (em.CondVar[v] == 0) != e.a.dup[v] {
			panic("vecchia: ClassLaplace.Eval: the model's repeated points are not the evaluator's")
		}
	}
	p.m, p.em = m, em
	e.a.priorFactor(em)
	// A's values changed: the patterns' cached A'A is stale.
	e.pre.aaOf, e.fac.aaOf = nil, nil
	// The preconditioner: the last evaluation's T, while the solves stay
	// short (a fit's evaluations come in nearby points, its gradient's
	// differences 1e-4 apart), else the incomplete factor of this A'A + W.
	nt, prec := evidenceNewton, e.pre
	if e.facOK {
		nt.factorAt = func(int) bool { return false }
		prec = e.fac
	}
	e.facOK = false
	st, err := p.laplace(ctx, e.a, prec, nt, warm)
	if err != nil {
		return nil, err
	}
	t := e.fac
	if e.pdf == nil {
		e.pdf, e.pof = make([]float64, n), make([]float64, len(t.nbr))
	}
	p.assemble(t, e.a, e.pdf, e.pof)
	t.stale()
	if !t.factorUnshifted(e.pdf, e.pof, n) {
		return nil, fmt.Errorf("%w (at %d rows of %d classes, the first %d rows dense)", ErrLaplaceBreakdown, m.N, m.C, e.block)
	}
	res := &LaplaceResult{Mode: st.Mode, LogLik: st.LogLik, Quad: st.Quad, Newton: st.Iterations, CG: st.CGSteps}
	for v := range n {
		if e.a.dup[v] {
			continue
		}
		res.LogDetA += math.Log(e.a.diag[v])
		res.LogDetT += math.Log(t.diag[v])
	}
	res.LogZ = res.LogLik - res.Quad + res.LogDetA - res.LogDetT
	if math.IsNaN(res.LogZ) || math.IsInf(res.LogZ, 0) {
		return nil, fmt.Errorf("vecchia: the multi-class Laplace evidence is not finite (%v)", res.LogZ)
	}
	e.facOK = true
	return res, nil
}

// ClassLaplaceEvidence is NewClassLaplace(m, opt).Eval(ctx, m, warm): one
// evaluation.
func ClassLaplaceEvidence(ctx context.Context, m *Multiclass, opt LaplaceOptions, warm []float64) (*LaplaceResult, error) {
	if opt.Block < 0 {
		panic("vecchia: ClassLaplaceEvidence: negative Block")
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return NewClassLaplace(m, opt).Eval(ctx, m, warm)
}
