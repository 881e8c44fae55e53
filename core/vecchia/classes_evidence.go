package vecchia

import (
	"context"
	"fmt"
	"math"
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
	k0 := 0
	for k := range m.N {
		if m.Dup(k) >= 0 {
			continue
		}
		for i := range m.CondVar {
			if m.CondVar[i][k]/m.Noise >= blockTol {
				k0 = k + 1
			}
		}
	}
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
	return k0
}

// ClassLaplaceEvidence computes the Laplace evidence of model m (see
// above) with opt.Block leading training rows dense in T, Newton started
// at warm (by coordinate, k L + a; nil: 0). The result's Mode is g^ by
// coordinate. It returns ErrLaplaceBreakdown (wrapped) where T's
// factorisation meets a pivot that is not positive, a *core.InputError
// for a model that is not valid, and ctx's error if ctx is cancelled
// between Newton steps.
func ClassLaplaceEvidence(ctx context.Context, m *Multiclass, opt LaplaceOptions, warm []float64) (*LaplaceResult, error) {
	if opt.Block < 0 {
		panic("vecchia: ClassLaplaceEvidence: negative Block")
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	p := newPreparedMulticlass(m)
	l, n := p.L, p.em.N
	if warm != nil && len(warm) != n {
		panic("vecchia: ClassLaplaceEvidence: warm is not one value per coordinate")
	}
	a := newTri(p.em)
	a.priorFactor(p.em)
	pc := newPairCache(a)
	st, err := p.laplace(ctx, a, pc, evidenceNewton, warm)
	if err != nil {
		return nil, err
	}
	block := min(opt.Block, m.N)
	for block < m.N && block > 0 && m.Dup(block) >= 0 {
		block++ // a repeat goes with the point it repeats
	}
	t := hybridPattern(p.em, a, block*l)
	t.pc = pc
	pd, po := make([]float64, n), make([]float64, len(t.nbr))
	p.assemble(t, a, pd, po)
	if !t.factorUnshifted(pd, po, n) {
		return nil, fmt.Errorf("%w (at %d rows of %d classes, the first %d rows dense)", ErrLaplaceBreakdown, m.N, m.C, block)
	}
	res := &LaplaceResult{Mode: st.Mode, LogLik: st.LogLik, Quad: st.Quad, Newton: st.Iterations, CG: st.CGSteps}
	for v := range n {
		if a.dup[v] {
			continue
		}
		res.LogDetA += math.Log(a.diag[v])
		res.LogDetT += math.Log(t.diag[v])
	}
	res.LogZ = res.LogLik - res.Quad + res.LogDetA - res.LogDetT
	if math.IsNaN(res.LogZ) || math.IsInf(res.LogZ, 0) {
		return nil, fmt.Errorf("vecchia: the multi-class Laplace evidence is not finite (%v)", res.LogZ)
	}
	return res, nil
}
