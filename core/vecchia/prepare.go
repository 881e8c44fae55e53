package vecchia

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/gpc-mc/gpc/core"
)

// Prepared is a Model with the proposal its estimator draws from: the
// Gaussian
//
//	q(x) proportional to exp(-|T x - eta|^2 / 2),   T'T ~ A'A + diag(Tau),  T' eta = Nu,
//
// T lower-triangular, so that q's conditional of x_k given the earlier
// variables is N((eta_k - sum_{j<k} T_kj x_j) / T_kk, 1/T_kk^2), and
// exp(-Tau_k x^2/2 + Nu_k x) the site that stands for the bounds of the
// rows that observe x_k: row k's and its repeats', the product of each
// row's own site. q approximates the posterior of x: its conditionals
// see the constraints still ahead through the sites, so the proposal looks
// ahead as MethodEP's does on a dense covariance.
//
// The sites and T come in two parts. The first Block variables (the
// coarsest of a maxmin order, where a site is not small beside the
// prior's conditional precision) have expectation propagation's sites and
// dense rows of T: the exact reverse Cholesky factor of their block of
// A'A + diag(Tau) once the later variables are eliminated. The later ones
// have Laplace's sites (Laplace: their posterior is nearly Gaussian, each
// pinned down by its neighbours) and rows of T in the pattern of A, from an
// incomplete factorisation (tri.ic0) that drops the fill-in the sites make,
// which is small there.
//
// The estimator is MethodEP's fully adapted filter on the twisted model:
// the targets are gamma_k(x_1..k) = q(x_1..k) prod_{i <= k} pot_i(x_v(i)) /
// s_i(x_v(i)), pot_i the probability of row i's bound given its latent
// value x_v(i) (its noise integrated out; v(i) = i but for a repeat) and
// s_i row i's own site, so that each step weights a particle by the
// integral of its twisted conditional against the bound, resamples when
// the effective sample size falls, and draws w_k = x_k + noise from the
// truncated normal and x_k given w_k; a repeat's step weights by
// pot_i / s_i at its point's value. (Dividing out at a point's step the
// sites of all its rows, but multiplying in its own row's bound alone,
// leaves weights of infinite variance where the rows' labels disagree.)
// Each particle also carries the log of r(x) = p(x) prod_j site_j(x_j) /
// q(x) (p the model's prior, site_j latent variable j's: the product of
// its rows' s_i), by which its weight is multiplied at the end, so that
// the estimate is unbiased for the model's P whatever q is; with the exact
// factor r would be constant, and the dropped fill-in is what makes it
// vary.
type Prepared struct {
	m       *Model
	prop    *tri
	eta     []float64
	tau, nu []float64 // the sites, by latent variable (the sums of its rows')
	// rtau, rnu are the rows' own sites (rowSites): the filter's step for
	// row k divides out row k's, not its latent variable's, so that a
	// variable observed by several rows (a point and its repeats) is
	// twisted by each row's site at that row's own bound.
	rtau, rnu []float64
	// Block is the number of leading variables with EP's sites and dense
	// rows (N for a complete proposal: Complete); Laplace and EP describe
	// the two solves.
	Block   int
	Laplace *Sites
	EP      core.EPStats
	// Shift is the diagonal shift the incomplete factorisation needed (0
	// unless a pivot failed; see tri.ic0).
	Shift float64
	// Widened counts the sites whose precision was lowered (widenSites).
	Widened int
	// MeanSteps counts the conjugate gradient steps of q's mean.
	MeanSteps int
	// Clipped counts the rows whose site precision was lowered to keep
	// the proposal's conditional precision without it positive.
	Clipped int
	// SiteScale is the share of EP's sites after the block that the
	// proposal keeps: 1, or halved until its incomplete factorisation
	// succeeds with a diagonal shift of at most maxProposalShift (where the
	// conditionals are weak beside the sites, their fill-in is not small).
	SiteScale float64
	// BlockCorrected reports that the dense block's marginal was corrected
	// for the fill the incomplete factor drops (correctBlock).
	BlockCorrected bool
	blockVectors   int // the Lanczos vectors of the correction
	refineVectors  int // and of its refinement on the proposal's factor
	// KeepPaths is the number of particle paths the estimate keeps for
	// later prediction (0: none), split over the groups as
	// KeptSizes says; each group's go with its output
	// (core.CloudGroup.Paths).
	KeepPaths int
	// Score, if not nil, makes each group estimate the gradient of log P
	// in the kernel's log-hyperparameters by Fisher's identity over its
	// final weighted paths (score.go; core.CloudGroup.Score): the model's
	// conditionals' derivatives, ConditionalDerivs of the structure and
	// kernel that made the model. At a group's end it adds two
	// triangular solves and 2 m passes over its particles per row, and
	// 16 bytes per particle and row of scratch.
	Score *CondDerivs
}

// maxProposalShift is the largest diagonal shift of the proposal's own
// factor; minSiteScale the least share of the later sites it may keep
// (about 2^-20).
const (
	maxProposalShift = 1e-2
	minSiteScale     = 1e-6
)

// Model returns the prepared model.
func (p *Prepared) Model() *Model { return p.m }

// The dense block's size: the variables up to the last whose prior
// conditional variance D_k times the largest site precision is at least
// blockTol, at most BlockLimit of them, and any repeats of them.
const (
	blockTol = 1e-3
	// MaxBlock bounds the dense block's variables (its regular rows) in a
	// model of up to 2.5 x 10^5 points at m = 30 (BlockLimit), and in the
	// Laplace evidence's and the multi-class proposal's blocks: they cost
	// O(MaxBlock^2) per particle, its EP O(MaxBlock^3); a repeat's row is
	// empty.
	MaxBlock = 1000
	// MaxBlockLarge bounds the two-class proposal's block in a larger
	// model (BlockLimit): EP's block sweeps (a factorisation of Lambda and
	// the marginals, O(Block^3), thirty of them) took 0.3 s each at 2000
	// variables on two cores, so about 2.4 s each at 4000.
	MaxBlockLarge = 4000
	// MaxComplete bounds the rows (repeats included) of a model whose
	// proposal may be complete (prepareComplete).
	MaxComplete = 6000
)

// blockCap is the block's least cap: MaxBlock, lowered by tests so that
// small models have rows after it.
var blockCap = MaxBlock

// BlockLimit returns the most variables (regular rows) the two-class
// proposal's dense block may hold in model m: MaxBlock, or in a model
// whose rows after the first MaxBlock hold more than 7.5 MaxBlock^2
// neighbour entries (2.5 x 10^5 points at m = 30) sqrt(entries / 7.5), at
// most MaxBlockLarge. A particle's steps through the block cost about
// Block^2 / 2 multiply-adds in all, through the later rows about one per
// neighbour entry: the block's share of the particles' work stays about a
// fifteenth as it grows with N. It has to grow: the block's rule asks for
// more of the coarsest rows as N grows (3564 at N = 10^6 on
// docs/vecchia.md's two-class problem at m = 30), and the rows the cap
// leaves after it are eliminated onto the block by the incomplete factor,
// which drops the fill-in that carries the later rows' information to
// them. At 10^6 with a block of 1000 what it dropped was no longer small:
// EP's block marginals went wrong (means of -71, variances above the
// prior's), its sweeps did not converge (a last change of 222), and the
// estimate was 14 nats low (se 0.68). With 2000 (this rule there) EP
// converged (0.066) and the estimate moved up by 14 nats, its standard
// error 0.20; with 3160 (a sixth) it was the same and the run 70 s
// longer.
func BlockLimit(m *Model) int {
	return blockLimit(len(m.Nbr) - m.Start[min(m.N, blockCap)])
}

// blockLimit is BlockLimit for a model whose rows after the first
// blockCap hold the given neighbour entries.
func blockLimit(entries int) int {
	c := int(math.Sqrt(float64(entries) / 7.5))
	return min(MaxBlockLarge, max(blockCap, c))
}

// maxSiteShare is the largest share of a step's proposal precision that
// its site may take.
const maxSiteShare = 0.99

// Prepare checks the model and computes its proposal (see Prepared),
// telling tr (if not nil) of its phases. It returns a *core.InputError for
// a model that is not valid, and ctx's error if ctx is cancelled (checked
// between the phases' steps).
func Prepare(ctx context.Context, m *Model, tr core.Trace) (*Prepared, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	say := func(format string, args ...any) {
		if tr != nil {
			tr(fmt.Sprintf(format, args...))
		}
	}
	n := m.N
	a := newTri(m)
	a.priorFactor(m)
	say("Laplace: the posterior mode of %d latent values", n)
	pc := newPairCache(a)
	st, aa, err := laplace(ctx, m, a, pc)
	if err != nil {
		return nil, err
	}
	p := &Prepared{m: m, Laplace: st, eta: make([]float64, n)}
	if completeProposal(m, st.Tau) {
		switch ok, err := p.prepareComplete(ctx, a, tr, say); {
		case err != nil:
			return nil, err
		case ok:
			p.prop.release()
			return p, nil
		}
	}
	p.Block = blockSize(m, st.Tau, BlockLimit(m))
	say("EP: %d Newton steps done; parallel EP with a dense block of %d", st.Iterations, p.Block)
	h := hybridPattern(m, a, p.Block)
	h.pc = pc
	h.productsFrom(a, aa)
	aa = nil
	e := newParallelEP(m, a, h, st, p.Block)
	e.say = say
	if err := e.run(ctx); err != nil {
		return nil, err
	}
	say("the proposal's factor (EP: %v)", e.stats)
	p.EP = e.stats
	p.Shift = e.shift
	p.tau, p.nu = e.tau, e.nu
	p.Widened = widenSites(m, e)
	p.BlockCorrected = e.corrected // finish corrects the final factor's block too, from EP's correction
	// The proposal's own factor, in EP's pattern (dense rows in the block,
	// A's pattern after it), whose A'A is computed already.
	t := h
	pd, po := make([]float64, n), make([]float64, len(t.nbr))
	p.SiteScale = 1
	for {
		t.assemble(a, p.tau, pd, po)
		shift, err := t.factorShifted(pd, po, 0, n, maxProposalShift)
		if err == nil {
			p.Shift = max(p.Shift, shift)
			break
		}
		if p.SiteScale < minSiteScale {
			return nil, &core.InputError{Index: -1, Msg: "the proposal's incomplete factorisation breaks down even with the later sites nearly removed: the Vecchia conditionals are far weaker than the labels' information (length scales long beside the points' spacing, or many features): give more neighbours, or use the dense path"}
		}
		// The sites after the block fill in more than the pattern holds:
		// halve them (the block's rows are exact).
		p.SiteScale /= 2
		for k := p.Block; k < n; k++ {
			p.tau[k] /= 2
			p.nu[k] /= 2
		}
	}
	// the last round's mean: a start close to the end
	if err := p.finish(a, t, pd, po, e.rtau, e.rnu, e.mean, e.delta); err != nil {
		return nil, err
	}
	switch {
	case p.BlockCorrected && p.refineVectors > 0:
		say("the block's marginal corrected on %d Lanczos vectors and refined on %d more", p.blockVectors, p.refineVectors)
	case p.BlockCorrected:
		say("the block's marginal corrected on %d Lanczos vectors", p.blockVectors)
	}
	t.release()
	return p, nil
}

// finish completes the proposal from its factor t of A'A + diag(p.tau)
// (pd and po: scratch of t's pattern), EP's row sites ertau, ernu, a
// start mu for q's mean and EP's correction of the block's marginal ep
// (nil if none): the sites' clipping, the rows' sites, the block's
// correction, the prior's coefficients in t's pattern and q's mean.
func (p *Prepared) finish(a, t *tri, pd, po, ertau, ernu, mu []float64, ep *blockCorrection) error {
	m, n := p.m, p.m.N
	for k := range n {
		if m.CondVar[k] == 0 {
			continue
		}
		if lim := maxSiteShare * t.diag[k] * t.diag[k]; p.tau[k] > lim {
			p.tau[k] = lim
			p.Clipped++
		}
	}
	if p.Clipped > 0 {
		t.assemble(a, p.tau, pd, po)
		shift, err := t.factorShifted(pd, po, 0, n, maxShift)
		if err != nil {
			return &core.InputError{Index: -1, Msg: "the proposal's incomplete factorisation breaks down: give more neighbours, or use the dense path"}
		}
		p.Shift = max(p.Shift, shift)
	}
	p.rtau, p.rnu = rowSites(m, ertau, ernu, p)
	t.dw = nil // a complete factorisation's scratch
	p.prop = t
	if p.BlockCorrected {
		p.BlockCorrected = p.Block < n && p.correctBlock(t, ep)
	}
	// q's mean: the exact mean of p(x) prod site(x), mu = P^-1 Nu with
	// P = A'A + diag(Tau), by conjugate gradients preconditioned by T'T,
	// and eta = T mu. Then log r(x) = -(x - mu)'(P - T'T)(x - mu)/2 +
	// const: the dropped fill-in enters r only through the particles'
	// spread about the mean, not through the mean itself (which T'T eta =
	// Nu would leave |mu| away from P^-1 Nu).
	p.MeanSteps = meanOf(mu, a, t, p.tau, p.nu, meanTol)
	t.mulTo(p.eta, mu)
	return nil
}

// rowSites returns the proposal's sites by row: each latent variable's
// site p.tau, p.nu split among the rows that observe it (its point's and
// its repeats') in the shares of EP's row sites ertau, ernu, so that they
// sum to it. A variable observed once has its own site. The sites of a
// shared variable went through the proposal's halving (SiteScale, both
// parts) and clipping (its precision) since EP, never widenSites: the
// precisions are scaled as the sum was, the linear terms by SiteScale, and
// the point's own row takes the rest, so that the sum is exact.
func rowSites(m *Model, ertau, ernu []float64, p *Prepared) (rtau, rnu []float64) {
	n := m.N
	rtau, rnu = slices.Clone(p.tau), slices.Clone(p.nu)
	sum := make([]float64, n) // EP's row precisions, summed by variable
	shared := false
	for k := range n {
		if d := m.Dup(k); d >= 0 {
			sum[d] += ertau[k]
			shared = true
		} else {
			sum[k] += ertau[k]
		}
	}
	if !shared {
		return rtau, rnu
	}
	for k := range n {
		d := m.Dup(k)
		if d < 0 {
			continue
		}
		rtau[k], rnu[k] = 0, ernu[k]
		if sum[d] > 0 {
			rtau[k] = ertau[k] * (p.tau[d] / sum[d])
		}
		if d >= p.Block {
			rnu[k] *= p.SiteScale
		}
		rtau[d] -= rtau[k]
		rnu[d] -= rnu[k]
	}
	return rtau, rnu
}

// blockSize returns the dense block's size for the model with sites of
// precisions tau (see blockTol), at most limit regular rows.
func blockSize(m *Model, tau []float64, limit int) int {
	k0 := blockRule(m, tau)
	// At most limit regular rows: a repeat's row is empty, so the
	// block's cost is in its regular rows (at N = 10^5 of two-class data
	// rounded to one decimal, 96 % of the rows repeat).
	regular := 0
	for k := range k0 {
		if m.CondVar[k] != 0 {
			if regular == limit {
				k0 = k
				break
			}
			regular++
		}
	}
	for k0 < m.N && m.CondVar[k0] == 0 {
		k0++ // a repeat goes with the point it repeats
	}
	return k0
}

// blockRule returns the rows the block's rule asks for, before its cap:
// up to the last whose prior conditional variance times the largest site
// precision is at least blockTol.
func blockRule(m *Model, tau []float64) int {
	wmax := 0.0
	for _, v := range tau {
		wmax = max(wmax, v)
	}
	k0 := 0
	for k := range m.N {
		if m.CondVar[k]*wmax >= blockTol {
			k0 = k + 1
		}
	}
	return k0
}

// widenSites widens the sites of confidently classified points, as core's
// MethodEP widens its proposal's (core.WidenFactor, with the reasons and
// measurements there): of the fraction core.WidenFractionLarge of the
// latent variables with the smallest site precision, those observed once
// whose cavity mean lies at least core.WidenMinZ of the standard deviation
// of w = x + noise inside a one-sided bound get their precision multiplied
// by core.WidenFactor, and their linear terms moved so that q's mean stays
// EP's. EP's nearly flat site for such a point still thins the proposal's
// tail on the free side, where the target keeps the prior's tail: the
// particles that wander there make the heavy tail of the group estimates.
// It returns the number of sites widened.
func widenSites(m *Model, e *parallelEP) int {
	n := m.N
	single := make([]bool, n) // a latent variable observed by its own row only
	for k := range n {
		single[k] = m.CondVar[k] > 0
	}
	for k := range n {
		if d := m.Dup(k); d >= 0 {
			single[d] = false
		}
	}
	var cand []int
	for k := range n {
		if single[k] {
			cand = append(cand, k)
		}
	}
	slices.SortStableFunc(cand, func(a, b int) int { return cmp.Compare(e.tau[a], e.tau[b]) })
	cand = cand[:int(core.WidenFractionLarge*float64(len(cand)))]
	widened := 0
	for _, k := range cand {
		a, b := m.Lower[k], m.Upper[k]
		if math.IsInf(a, -1) == math.IsInf(b, 1) {
			continue // two bounds, or none: no free side
		}
		if !(e.vars[k] > 0) {
			continue // no round gave q's marginals (EP stopped at once)
		}
		tc := 1/e.vars[k] - e.tau[k]
		if !(tc > 0) {
			continue
		}
		mc := (e.mean[k]/e.vars[k] - e.nu[k]) / tc
		sd := math.Sqrt(1/tc + m.Noise)
		z := (mc - a) / sd
		if math.IsInf(a, -1) {
			z = (b - mc) / sd
		}
		if z < core.WidenMinZ {
			continue
		}
		t := e.tau[k] * core.WidenFactor
		e.nu[k] += (t - e.tau[k]) * e.mean[k]
		e.tau[k] = t
		widened++
	}
	return widened
}
