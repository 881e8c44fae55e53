package vecchia

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"

	"github.com/gpc-mc/gpc/core"
)

// Expectation propagation for the proposal's sites. Each row k (each
// observation: a repeated point has its own) has a site exp(-tau_k x^2/2 +
// nu_k x) on its latent variable; the proposal q is the Gaussian of the
// prior times the sites, through the factor T (Prepared). An update takes
// q's marginal of a row's latent variable, divides out the row's site (the
// cavity), matches the moments of the cavity times the row's bound (its
// noise integrated out: obsDerivs), and moves the site a damped step
// towards the Gaussian that matches them.
//
// A round first eliminates the later rows (those after the dense block)
// with their current sites: what is left is the block's prior given the
// later sites, N(Lambda^-1 h, Lambda^-1). Then the block's sites are
// updated in blockSweeps parallel sweeps on it alone, each with the
// block's exact marginals (its dense factor, O(Block^3/3) on the vector
// kernels); then, with the whole factor, the later rows' sites in one
// parallel update, with q's exact mean (conjugate gradients) and marginal
// variances from epSamples exact draws of q (T^-1 z, fixed random numbers:
// the preparation does not depend on the estimate's seed), whose relative
// error sqrt(2/epSamples) only shapes the proposal: a later row's site is
// small beside its neighbours' information.
//
// References: T. Minka (2001), "Expectation propagation for approximate
// Bayesian inference", UAI; M. van Gerven, B. Cseke, F. de Lange and T.
// Heskes (2010), "Efficient Bayesian multivariate fMRI analysis using a
// sparsifying spatio-temporal prior", NeuroImage 50:150-161 (parallel EP
// with sparse precisions).
type parallelEP struct {
	m     *Model
	a, t  *tri
	tau   []float64 // per latent variable, the sum of its rows' sites
	nu    []float64
	rtau  []float64 // per row
	rnu   []float64
	mean  []float64 // q's mean
	vars  []float64 // q's marginal variances
	stats core.EPStats
	shift float64

	block int
	say   func(format string, args ...any)

	saveTau, saveNu []float64 // the sites at a round's start

	// corrected: the last correctedRounds rounds correct the block's
	// prior (correctLambda), decided at the first of them by the
	// correction's variance (correctMin), and so does the proposal's
	// factor (Prepared.correctBlock).
	corrected bool
	// delta is the block's correction that the first corrected round
	// computed (blockDelta).
	delta *blockCorrection

	pd, po []float64
}

const (
	// epRounds is the number of rounds, all of them run (a breakdown
	// ends them sooner): the last round's change is recorded
	// (core.EPStats.Change), not a stopping rule.
	epRounds = 6
	// blockSweeps is the number of the block's sweeps in a round.
	blockSweeps = 4
	// blockDamping is the share of a step a block site takes.
	blockDamping = 0.5
	// epDamping is the share of a step a later row's site takes.
	epDamping = 0.9
	// epSamples is the number of draws of q for the later variables'
	// marginal variances.
	epSamples = 64
)

// meanTol is the relative residual of q's mean; roundMeanTol that of the
// mean in EP's rounds, which only shapes the cavities (each round starts
// from the last's).
const (
	meanTol      = 1e-10
	roundMeanTol = 1e-6
)

// epSeed is the fixed seed of the marginal variances' draws.
const epSeed = 0x76656363686961

func newParallelEP(m *Model, a, t *tri, st *Sites, block int) *parallelEP {
	n := m.N
	e := &parallelEP{m: m, a: a, t: t, rtau: make([]float64, n), rnu: make([]float64, n),
		tau: make([]float64, n), nu: make([]float64, n), mean: make([]float64, n), vars: make([]float64, n),
		pd: make([]float64, n), po: make([]float64, len(t.nbr)), block: block,
		saveTau: make([]float64, n), saveNu: make([]float64, n)}
	// Laplace's sites by row: each row's own negative second derivative
	// and gradient at the mode (Laplace's sites are their sums by latent
	// variable), so that a point's rows with opposite labels start from
	// their own sites, not from a share of their sum.
	for k := range n {
		v := latent(m, k)
		_, g, w := obsDerivs(st.Mode[v], m.Lower[k], m.Upper[k], m.Noise)
		e.rtau[k], e.rnu[k] = w, w*st.Mode[v]+g
	}
	return e
}

// sum sets tau and nu from the rows' sites.
func (e *parallelEP) sum() {
	clear(e.tau)
	clear(e.nu)
	for k := range e.m.N {
		v := latent(e.m, k)
		e.tau[v] += e.rtau[k]
		e.nu[v] += e.rnu[k]
	}
}

// update moves row k's site towards the one whose product with the
// cavity, from the marginal N(mean, s2) of its latent variable, matches
// the moments of the cavity times its bound, by the share damping of the
// step, and returns the step's size relative to the cavity's precision
// (0 where the cavity is not proper).
func (e *parallelEP) update(k int, mean, s2, damping float64) float64 {
	m := e.m
	tc := 1/s2 - e.rtau[k]
	nc := mean/s2 - e.rnu[k]
	if !(tc > 0) || math.IsInf(tc, 1) {
		return 0
	}
	mc, vc := nc/tc, 1/tc
	_, g, w := obsDerivs(mc, m.Lower[k], m.Upper[k], vc+m.Noise)
	mh := mc + vc*g
	vh := vc - vc*vc*w
	if !(vh > 0) {
		return 0
	}
	nt := math.Max(1/vh-tc, 0)
	nn := mh/vh - nc
	ch := math.Max(math.Abs(nt-e.rtau[k]), math.Abs(nn-e.rnu[k])*math.Sqrt(vc)) / tc
	e.rtau[k] = (1-damping)*e.rtau[k] + damping*nt
	e.rnu[k] = (1-damping)*e.rnu[k] + damping*nn
	return ch
}

// run iterates the rounds, leaving the sites in tau and nu.
func (e *parallelEP) run(ctx context.Context) error {
	m, t, k0 := e.m, e.t, e.block
	n := m.N
	e.sum()
	blk := newDenseBlock(t, k0)
	late := make([]float64, n)
	for e.stats.Sweeps = 1; e.stats.Sweeps <= epRounds; e.stats.Sweeps++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if e.stats.Sweeps > 1 && e.say != nil {
			e.say("EP: round %d, after change %.3g (shift %.3g)", e.stats.Sweeps, e.stats.Change, e.shift)
		}
		// A factorisation that breaks down (the sites fill in more than
		// the pattern holds, or the block's prior given the later rows'
		// shifted factor is not positive definite) ends the rounds with
		// the last round's sites (Laplace's before the first); the
		// proposal's own factor scales them (Prepared.SiteScale).
		copy(e.saveTau, e.rtau)
		copy(e.saveNu, e.rnu)
		stop := func(err error) error {
			if !errors.Is(err, errBreakdown) {
				return err
			}
			copy(e.rtau, e.saveTau)
			copy(e.rnu, e.saveNu)
			e.sum()
			e.stats.Sweeps--
			return nil
		}
		// The later rows, with their sites (the block's 0 for now).
		copy(late, e.tau)
		clear(late[:k0])
		t.assemble(e.a, late, e.pd, e.po)
		shift, err := t.factorShifted(e.pd, e.po, k0, n, maxShift)
		if err != nil {
			return stop(err)
		}
		e.shift = max(e.shift, shift)
		change := 0.0
		if k0 > 0 {
			// The block's prior given the later sites: its precision,
			// now in t's block rows, and its linear term.
			h := slices.Clone(e.nu)
			clear(h[:k0])
			t.backSubstitute(h, k0)
			blk.load(t)
			factored := false
			if e.stats.Sweeps == epRounds-correctedRounds+1 && k0 < n {
				// Whether the block needs it: the incomplete factor's
				// correction variance with the current sites.
				if err := blk.factor(e.tau); err != nil {
					return stop(err)
				}
				factored = true
				v := e.correctionVariance()
				e.corrected = correctBlocks && v > correctMin
				if e.say != nil {
					e.say("EP: the incomplete factor's correction variance %.3g (the block's marginal corrected above %g: %v)", v, correctMin, e.corrected)
				}
			}
			if e.corrected {
				if !factored {
					if err := blk.factor(e.tau); err != nil {
						return stop(err)
					}
				}
				if err := e.correctLambda(blk, h); err != nil {
					return stop(err)
				}
			}
			for range blockSweeps {
				if err := blk.factor(e.tau); err != nil {
					return stop(err)
				}
				mean, vars := blk.marginals(h, e.nu)
				for k := range k0 {
					v := latent(m, k)
					if i := blk.idx[v]; i >= 0 {
						change = max(change, e.update(k, mean[i], vars[i], blockDamping))
					}
				}
				e.sum()
			}
			if err := blk.factor(e.tau); err != nil {
				return stop(err)
			}
		}
		// The whole factor, q's mean and marginals: the later rows'
		// sites.
		meanOf(e.mean, e.a, t, e.tau, e.nu, roundMeanTol)
		e.sampleVariances()
		change = max(change, parallelMax(k0, n, func(lo, hi int) float64 {
			c := 0.0
			for k := lo; k < hi; k++ {
				v := latent(m, k)
				c = max(c, e.update(k, e.mean[v], e.vars[v], epDamping))
			}
			return c
		}))
		e.sum()
		e.stats.Change = change
	}
	e.stats.Sweeps = epRounds
	return nil
}

// correctedRounds is the number of EP's last rounds whose block sweeps
// see the block's prior given the later sites corrected for the fill the
// incomplete elimination drops (correctLambda).
const correctedRounds = 3

// correctionVariance estimates Var_q(r), the variance of the deferred
// correction that the factor t (its block factored with the current
// sites) leaves (Prepared.CorrectionVariance's estimate and probes, their
// products in batches: batchCorrectionVariance).
func (e *parallelEP) correctionVariance() float64 {
	v, _ := batchCorrectionVariance(e.t, epCorrectionProbes, e.m, e.tau)
	return v
}

// epCorrectionProbes is the probes of correctionVariance's estimate.
const epCorrectionProbes = 16

// correctLambda corrects the block's prior given the later sites, blk's
// Lambda (blk.load) and linear term h, for the fill that the incomplete
// elimination of the later rows drops: Lambda gains blockDelta's
// correction of the factor with the first corrected round's sites, on
// epIters Lanczos vectors (computed once, about 40 s at N = 10^6 on two
// cores in one run, and kept: the later sites, which make the dropped
// fill, move little from one round to the next; Prepared.correctBlock
// starts the proposal's from it), and h becomes (Lambda + diag(tau)) mu -
// nu on the block's rows, mu q's exact mean (conjugate gradients), so that the
// block's marginal N((Lambda + diag(tau))^-1 (h + nu), ...) has the exact
// mean. It leaves e.mean at mu. The block must be factored with the
// current sites (blk.factor), in e.t's block rows.
func (e *parallelEP) correctLambda(blk *denseBlock, h []float64) error {
	t, a := e.t, e.a
	if e.delta == nil {
		c, ok := blockDelta(t, e.block, e.m, e.tau, epIters)
		if !ok {
			return nil
		}
		e.delta = c
	}
	reg, delta := e.delta.reg, e.delta.delta
	for i, k := range reg {
		blk.pd[k] += delta.At(i, i)
		for j := range i {
			blk.po[t.start[k]+j] += delta.At(i, j)
		}
	}
	meanOf(e.mean, a, t, e.tau, e.nu, roundMeanTol)
	for i, k := range reg {
		s := (blk.pd[k] + e.tau[k]) * e.mean[k]
		for j := range i {
			s += blk.po[t.start[k]+j] * e.mean[reg[j]]
		}
		for j := i + 1; j < len(reg); j++ {
			s += blk.po[t.start[reg[j]]+i] * e.mean[reg[j]]
		}
		h[k] = s - e.nu[k]
	}
	return nil
}

// sampleVariances sets vars to q's marginal variances, estimated from
// epSamples draws x = T^-1 z (the block's too, unused; drawsOfQ).
func (e *parallelEP) sampleVariances() {
	clear(e.vars)
	drawsOfQ(e.t, epSamples, func(x []float64) {
		for k, v := range x {
			e.vars[k] += v * v
		}
	})
	for k := range e.vars {
		e.vars[k] /= epSamples
	}
}

// drawBatch is the draws of q that one pass of drawsOfQ's triangular solve
// takes at once (tri.solveManyTo): each of T's entries and each cache line
// of a neighbour's values is read once for all of them, where the solves
// are bound by memory traffic.
const drawBatch = 8

// drawsOfQ makes the given number of draws x = T^-1 z of q (t.n values
// each), drawBatch at a time in each of threads() workers (solveManyTo),
// draw d's normal numbers from the random stream d of epSeed (the
// ziggurat's, NormFloats, a few times cheaper than a uniform's normal
// quantile; the same numbers whatever thread draws it), and gives each x
// to use in draw order, so that what use sums is the same bits for any
// thread count (and each draw the bits of a solve of its own:
// solveManyTo).
func drawsOfQ(t *tri, draws int, use func(x []float64)) {
	n := t.n
	batches := (draws + drawBatch - 1) / drawBatch
	w := min(threads(), batches)
	x, z := make([][]float64, w), make([][]float64, w)
	for i := range w {
		x[i], z[i] = make([]float64, n*drawBatch), make([]float64, n)
	}
	one := make([]float64, n)
	size := func(b int) int { return min(drawBatch, draws-b*drawBatch) }
	var wg sync.WaitGroup
	for b := 0; b < batches; b += w {
		nb := min(w, batches-b)
		for i := range nb {
			wg.Go(func() {
				r := size(b + i)
				for j := range r {
					g := core.GroupStream(epSeed, (b+i)*drawBatch+j)
					g.NormFloats(z[i])
					for k, v := range z[i] {
						x[i][k*r+j] = v
					}
				}
				t.solveManyTo(x[i], x[i], r) // in place
			})
		}
		wg.Wait()
		for i := range nb {
			r := size(b + i)
			for j := range r {
				for k := range n {
					one[k] = x[i][k*r+j]
				}
				use(one)
			}
		}
	}
}

// meanOf sets mu to the mean of the Gaussian with precision P = A'A +
// diag(tau) and linear term nu, P^-1 nu, by conjugate gradients from mu's
// own value to relative residual tol, preconditioned by t'T, and returns
// the steps taken.
func meanOf(mu []float64, a, t *tri, tau, nu []float64, tol float64) int {
	n := len(mu)
	ax, tmp := make([]float64, n), make([]float64, n)
	return newCG(n).solveTol(mu, nu, func(dst, v []float64) {
		a.mulTo(ax, v)
		a.mulTransTo(dst, ax)
		parallelFor(0, n, func(lo, hi int) {
			for k := lo; k < hi; k++ {
				dst[k] += tau[k] * v[k]
			}
		})
	}, func(dst, r []float64) {
		t.solveTransTo(tmp, r)
		t.solveTo(dst, tmp)
	}, tol)
}
