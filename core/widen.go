package core

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/gpc-mc/gpc/internal/gemm"
)

// The proposal's sites, widened. EP matches the first two moments of each
// tilted marginal, and for a confidently classified point (its bound a few
// standard deviations below the cavity's mean) that makes the site a
// nearly flat Gaussian whose small precision still thins the proposal's
// tail on the unconstrained side, where the truncated target keeps the
// cavity's Gaussian tail. Particles that wander there get large weights at
// that variable's step, late in the greedy order, and a few of them make
// the runaway groups of the standard error's tail. MethodEP's proposal
// therefore multiplies by WidenFactor the precision of those sites
// (widenSet): of the fraction widenFraction(n) of the variables with the
// smallest site precision, the ones whose cavity mean lies at least
// WidenMinZ of its standard deviations inside a one-sided bound; and it
// moves their precision-means so that the Gaussian's mean stays EP's: the
// same mean, a wider Gaussian on those variables (halving the
// precision-means too, which moves the mean, did less well); below EPLargeN
// variables only where a pilot finds the widened sites better
// (widenPiloted: not on a linear kernel, nor at beta = 1). Any Gaussian
// serves as the proposal (the weights correct for it), so what is
// estimated does not change; its spread does.
//
// Measured with TestSiteScaleStudy on the large-N issue's problem (2-D
// points, RBF, alpha 1, beta 10; docs/benchmarks.md, Widened sites),
// M = 10^4, the same seeds side by side, median standard error of log P
// and the sd of the seeds' estimates, EP's own sites against the rule:
// N = 200 0.0072 and 0.0113 against 0.0038 and 0.0035 (seeds 1-20), N = 500
// 0.0101 and 0.0089 against 0.0052 and 0.0054 (1-20); from EPLargeN on the
// fraction is 0.15: N = 1000 0.0125 against 0.0088, N = 2000 0.0197 against
// 0.0113, N = 5000 0.0239 against 0.0112 and the largest of 20 seeds 0.176
// against 0.0147. The half of the sites is better at N = 1000 too (0.0072)
// but not at N = 5000 (0.0127 against 0.0112, seeds 1-10), where it would
// also triple the rank-k update's cost. The cavity z keeps the rule off
// what EP represents well: on Experiment 1's one-factor orthants the
// smallest-precision sites are the variables with loadings near 0, cavity
// z about 0 (their truncation is a half-normal), and widening them cost
// 10-15 % of the standard error at N = 100 and 200; the rule widens none of
// them. A two-sided bound has no free side and is never widened. Nor is a
// problem of fewer than WidenMinN variables: on a 3-D box with two
// one-sided bounds (internal/cli's box3.csv, 20 seeds of 8000 particles)
// widening the one site the rule picks doubles the standard error (7e-6
// to 1.5e-5 nats), where on RBF classification 12 and 16 points gain (the
// median standard error 0.00068 to 0.00043 and 0.00081 to 0.00067 over 20
// seeds, one site each; 25 points 0.00127 to 0.00099): EP's Gaussian is
// close to exact on a few variables, and its tails matter when many
// sites' weights multiply.
const (
	WidenFraction      = 0.5  // the smallest-precision fraction searched below EPLargeN variables
	WidenFractionLarge = 0.15 // from EPLargeN on
	WidenMinZ          = 1    // the cavity's mean inside its bound, in its sd, that a widened site needs
	WidenFactor        = 0.5  // the widened sites' precision is multiplied by this
	WidenMinN          = 10   // the fewest variables whose sites are widened
)

// widenMode says whether newEP widens the sites after its sweeps.
type widenMode int

const (
	widenNone     widenMode = iota // EP's own sites (NewEP: the evidence; cloud/2's factor)
	widenAlways                    // widenSites' rule
	widenProposal                  // MethodEP's proposal: from EPLargeN on widenSites, below it widenPiloted
	widenLarge                     // from EPLargeN on widenSites, below none (PrepareOrdered: see there)
)

// The widening's pilot (widenPiloted): the particles, groups and seed of
// each of its two estimates. The seed is fixed, so that the choice, and the
// factor, are a function of the box alone (a shard or a re-preparation
// makes the same).
const (
	WidenPilotSamples = 1000
	WidenPilotGroups  = 16
	widenPilotSeed    = 0x77696465
	widenPilotClose   = 0.75 // standard errors closer than this ratio run a second pilot each
)

// widenPiloted widens the sites by widenSites' rule only where that makes
// the better proposal, as measured: below EPLargeN variables (where EP's
// Gaussian is recomputed from its sites anyway, and a factorisation costs
// little beside the estimate) it estimates log P with the sites as they
// are and as widened, WidenPilotSamples particles each on the same fixed
// seed in the greedy order, and keeps the widened sites only if their
// standard error is the smaller; where the two standard errors are within
// a ratio widenPilotClose of each other, each runs a second pilot on
// another seed and the two pilots' variances are summed. It returns the
// EP it recomputed for the sites kept (Sigma, M and log Z from them, as
// NewEP's recompute would make them), or nil where the rule widens
// nothing.
//
// The widening is not good everywhere: on RBF classification at beta = 10
// and 100 it halves the standard error, but at beta = 1
// (bench.RBFProblem, N = 200) it raises it by about 40 %, and on the
// paper's Experiment 2 (a linear kernel, whose confident points pin one
// direction of the latent function) by 1.4 to 8 times. The pilot tells
// them apart (bench's problems, the pilot run on 12 seeds each, how often
// it chose the widened sites): Experiment 2's problems 2-4 with data seeds
// 1 and 2 never, problem 1 in 7 of 24; RBF at beta 1, N = 200, data seeds
// 1-3, in 3 of 36; at beta 10, N = 50, 200 and 500, and beta 100,
// N = 100, data seeds 1-3, in 139 of 144. A second pilot ran in 32 % of
// these choices. The widening's gain grows with M (it removes rare large
// weights that a small run seldom draws), so a close call at the pilot's
// size can go to EP's own sites where the widened ones would do better at
// M = 10^4 (ionosphere in docs/results.md: docs/benchmarks.md, Widened
// sites).
func (e *EP) widenPiloted(box Box, jitter float64, tr Trace) (kept *EP, err error) {
	n := e.N
	tau0, nu0 := slices.Clone(e.Tau), slices.Clone(e.Nu)
	if err := e.widenSites(nil); err != nil {
		return nil, err
	}
	if slices.Equal(tau0, e.Tau) {
		return nil, nil
	}
	var ps [2]*EP
	var fs [2]*Factor
	scratch := make([]float64, n*n)
	for k, tn := range [2][2][]float64{{tau0, nu0}, {slices.Clone(e.Tau), slices.Clone(e.Nu)}} {
		p := &EP{N: n, Tau: tn[0], Nu: tn[1], M: make([]float64, n), a: e.a, b: e.b, rchol: e.rchol, Stats: e.Stats}
		cov, _ := symmetrize(box.Cov, n, jitter)
		if p.recompute(cov, scratch) != nil {
			continue
		}
		ps[k] = p
		fs[k], _ = p.factor(Ordering{Kind: OrderGreedy}, false)
	}
	// variance is the squared standard error of the pilot of sites k on
	// seed s, +Inf where it failed.
	variance := func(k int, s uint64) float64 {
		if fs[k] == nil {
			return math.Inf(1)
		}
		res, err := Estimate(context.Background(), fs[k], Config{Method: MethodEP, Samples: WidenPilotSamples, Groups: WidenPilotGroups, Seed: s})
		if err != nil || !(res.SE >= 0) {
			return math.Inf(1)
		}
		return res.SE * res.SE
	}
	v := [2]float64{variance(0, widenPilotSeed), variance(1, widenPilotSeed)}
	if r := v[1] / v[0]; r > widenPilotClose*widenPilotClose && r < 1/(widenPilotClose*widenPilotClose) {
		v[0] += variance(0, widenPilotSeed+1)
		v[1] += variance(1, widenPilotSeed+1)
	}
	se := [2]float64{math.Sqrt(v[0]), math.Sqrt(v[1])}
	k := 0
	if se[1] < se[0] {
		k = 1
		tr.printf("EP: widened sites, pilot standard error %.3g against %.3g with EP's own", se[1], se[0])
	} else {
		tr.printf("EP: EP's own sites, pilot standard error %.3g against %.3g widened", se[0], se[1])
	}
	if ps[k] == nil { // neither recomputed: NewEP's own recompute reports why
		copy(e.Tau, tau0)
		copy(e.Nu, nu0)
		return nil, nil
	}
	copy(e.Tau, ps[k].Tau)
	copy(e.Nu, ps[k].Nu)
	return ps[k], nil
}

// widenFraction is the fraction of the n sites, the smallest-precision
// ones, that widenSet searches: none below WidenMinN.
func widenFraction(n int) float64 {
	switch {
	case n < WidenMinN:
		return 0
	case n >= EPLargeN:
		return WidenFractionLarge
	}
	return WidenFraction
}

// widenSet returns the variables whose sites widenSites widens, in
// increasing index order: of the widenFraction(n) of the n sites with the
// smallest positive precision (ties by index), those whose bound is
// one-sided and whose cavity N(mc, vc) (EP's marginal N(m_i, s_i) less the
// site) has its mean at least WidenMinZ sd inside the bound: (mc - a_i) /
// sqrt(vc) >= WidenMinZ for a lower bound, (b_i - mc) / sqrt(vc) for an
// upper one. m is EP's mean, s the diagonal of its Sigma.
func widenSet(tau, nu, m, s, a, b []float64) []int {
	n := len(tau)
	idx := make([]int, 0, n)
	for i, t := range tau {
		if t > 0 {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(x, y int) int { return cmp.Compare(tau[x], tau[y]) })
	k := min(len(idx), int(widenFraction(n)*float64(n)))
	var set []int
	for _, i := range idx[:k] {
		vc := 1 / (1/s[i] - tau[i])
		if !(vc > 0) || math.IsInf(vc, 0) {
			continue
		}
		mc := vc * (m[i]/s[i] - nu[i])
		var z float64
		switch lo, hi := !math.IsInf(a[i], -1), !math.IsInf(b[i], 1); {
		case lo && !hi:
			z = (mc - a[i]) / math.Sqrt(vc)
		case hi && !lo:
			z = (b[i] - mc) / math.Sqrt(vc)
		default:
			continue
		}
		if z >= WidenMinZ {
			set = append(set, i)
		}
	}
	slices.Sort(set)
	return set
}

// widenSites scales the sites of widenSet by WidenFactor. A lazy EP's
// Sigma (its lower triangle, as the sweeps left it) follows by
// Woodbury's identity: with S the k widened variables and D = diag of
// their precisions' decrease, (Sigma^-1 - P'DP)^-1 = Sigma + U C^-1 U',
// U = Sigma[:, S] and C = D^-1 - Sigma[S, S] (positive definite: the new
// precision R^-1 + T is), which costs n^2 k / 2 multiply-adds in the
// product with C's factor applied to U, against 7 n^3 / 6 for the
// recompute from the sites; the caller forms M = Sigma Nu. Otherwise the
// caller's recompute rebuilds Sigma and M from the new sites.
func (e *EP) widenSites(tr Trace) error {
	n := e.N
	m := symLowerMulVec(make([]float64, n), e.Sigma, n, e.Nu) // the mean, kept
	s := make([]float64, n)
	for i := range n {
		s[i] = e.Sigma[i*n+i]
	}
	set := widenSet(e.Tau, e.Nu, m, s, e.a, e.b)
	k := len(set)
	if k == 0 {
		return nil
	}
	tr.printf("EP: widening %d sites of small precision", k)
	e.widened = k
	d := make([]float64, k)
	for c, i := range set {
		d[c] = (1 - WidenFactor) * e.Tau[i]
		e.Tau[i] *= WidenFactor
		e.Nu[i] -= d[c] * m[i]
	}
	if !e.lazy {
		return nil
	}
	sig := e.Sigma
	low := func(r, c int) float64 {
		if r < c {
			r, c = c, r
		}
		return sig[r*n+c]
	}
	cm := make([]float64, k*k)
	for r := range k {
		for c := 0; c <= r; c++ {
			cm[r*k+c] = -low(set[r], set[c])
		}
		cm[r*k+r] += 1 / d[r]
	}
	workers := cholWorkers()
	if cholesky(cm, k, nil, workers) >= 0 {
		return fmt.Errorf("core: EP's widened sites: D^-1 - Sigma[S, S] is not positive definite")
	}
	u := make([]float64, n*k)
	for r := range n {
		row := u[r*k : r*k+k]
		for c, j := range set {
			row[c] = low(r, j)
		}
	}
	var ws gemm.Workspace
	solveRowsTo(u, n, cm, k, &ws, workers) // u <- U L_C^-T
	for c0 := 0; c0 < n; c0 += epRows {
		c1 := min(n, c0+epRows)
		ws.NT(n-c0, c1-c0, k, u[c0*k:], k, u[c0*k:], k, sig[c0*n+c0:], n, true, workers)
	}
	return nil
}
