package core

import (
	"cmp"
	"fmt"
	"slices"

	"gpc/internal/gemm"
)

// The proposal's sites, widened. EP matches the first two moments of each
// tilted marginal, and for a confidently classified point (its bound a few
// standard deviations below the cavity's mean) that makes the site a
// nearly flat Gaussian whose small precision still thins the proposal's
// tail on the unconstrained side, where the truncated target keeps the
// cavity's Gaussian tail. Particles that wander there get large weights at
// that variable's step, late in the greedy order, and a few of them make
// the runaway groups of the standard error's tail. MethodEP's proposal
// (from EPLargeN variables on: widenEP) therefore multiplies by WidenFactor the precision of the sites of the
// WidenFraction of the variables with the smallest site precision, and
// moves their precision-means so that the Gaussian's mean stays EP's: the
// same mean, a wider Gaussian on those variables (halving the
// precision-means too, which moves the mean, did less well). Any Gaussian
// serves as the proposal (the weights correct for it), so what is
// estimated does not change; its spread does. Measured with
// TestSiteScaleStudy on the large-N issue's problem (2-D points, RBF,
// alpha 1, beta 10; docs/benchmarks.md, The standard error at N = 5000),
// M = 10^4, the same seeds side by side, the median standard error of log
// P against EP's own sites: N = 200 0.0058 against 0.0072 (seeds 1-20;
// below EPLargeN measured, not applied), N = 500 0.0071 against 0.0101
// (1-20), N = 1000 0.0088 against 0.0125,
// N = 2000 0.0113 against 0.0197 (1-10), N = 5000 0.0112 against 0.0239
// (1-10) and 0.0114 against 0.0197 (11-20), the largest of those 20 0.0147
// against 0.176. On Experiment 1's one-factor orthants (N = 100 to 1000,
// 20 seeds) the standard errors move by 15 % or less either way.
const (
	WidenFraction = 0.15
	WidenFactor   = 0.5
)

// widenEP reports whether MethodEP's proposal on n variables widens its
// sites: from EPLargeN variables on, with the proposal's other large-N
// settings (EPLargeTol, EPLargeESSThreshold, epLazy). Below, the one-factor
// orthants of Experiment 1 (N = 100 and 200) lost 10-15 % of their median
// standard error to it over 20 seeds (at N = 500 and 1000 nothing beyond
// noise), where RBF classification at N = 200 gained 20 %: the small
// problems keep EP's sites, their results and the goldens with them.
func widenEP(n int) bool { return n >= EPLargeN }

// widenSet returns the variables whose sites widenSites widens: the
// WidenFraction of the n sites with the smallest positive precision (ties
// by index), in increasing index order.
func widenSet(tau []float64) []int {
	n := len(tau)
	idx := make([]int, 0, n)
	for i, t := range tau {
		if t > 0 {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(x, y int) int { return cmp.Compare(tau[x], tau[y]) })
	k := min(len(idx), int(WidenFraction*float64(n)))
	set := slices.Clone(idx[:k])
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
	set := widenSet(e.Tau)
	k := len(set)
	if k == 0 {
		return nil
	}
	tr.printf("EP: widening the %d sites of smallest precision", k)
	m := symLowerMulVec(make([]float64, n), e.Sigma, n, e.Nu) // the mean, kept
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
