package vecchia

import (
	"context"
	"runtime"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/internal/gemm"
)

// The complete proposal. Where the conditionals are weak beside the
// labels' information everywhere (many features, length scales long
// beside the points' spacing), the block's rule asks for far more rows
// than MaxBlock, EP's sites after the block fill in far beyond A's
// pattern, and the incomplete factor drops most of what the sites say: the
// proposal then keeps a share of the sites (SiteScale) and the estimate's
// variance grows past what its standard error can describe (on the real
// data of docs/vecchia.md, 63 and 103 nats low with m = 200 neighbours,
// where the model itself is within a nat of the dense path's). Where the
// model is small enough that its dense covariance costs little beside the
// estimate (at most MaxComplete rows), the proposal is complete
// instead:
//
//   - its sites are the dense path's own: MethodEP's proposal sites
//     (core.ProposalSites: sequential EP, widened as the dense proposal
//     widens them) on the covariance of w = x + noise that the model
//     implies (Model.Implied), each site on w_k turned into the site on
//     x_k that it makes once the noise is integrated out (precision
//     tau/(1 + Noise tau), linear term nu/(1 + Noise tau));
//   - its factor T is the exact reverse Cholesky factor of A'A +
//     diag(Tau), every row dense (tri.eliminateDense, on core's blocked
//     factorisation), so that q is exactly the model's prior times the
//     sites and the correction r is constant but for the rounding.
//
// Block is then N: every row has EP's sites and a dense row of T. The
// cost is the dense path's: N^3 for the implied covariance and EP's sweeps,
// N^2/2 per particle for the steps, and about 40 N^2 bytes at the peak
// (gpc-train: 1.03 GB at N = 5000).

// completeProposal reports whether the proposal is complete: the block's
// rule asks for more than BlockLimit regular rows (with sites of
// precisions tau) and the model has at most MaxComplete rows, repeats
// included (the dense EP runs on the covariance of every row's w: rounded
// data at N = 10^5 have a few thousand distinct points but 10^5 rows).
func completeProposal(m *Model, tau []float64) bool {
	return m.N <= maxComplete && regularRows(m, blockRule(m, tau)) > BlockLimit(m)
}

// ValidBlock reports whether block is a dense block the preparation of m
// can have (PreparedParts.Block): rows holding at most BlockLimit regular
// rows (and repeats), or every row of a model of at most MaxComplete rows
// (a complete proposal).
func ValidBlock(m *Model, block int) bool {
	if block < 0 || block > m.N {
		return false
	}
	return regularRows(m, block) <= BlockLimit(m) || block == m.N && m.N <= maxComplete
}

// Complete reports whether the proposal is complete: the dense path's
// sites and the exact factor (see prepareComplete).
func (p *Prepared) Complete() bool {
	return p.Block == p.m.N && regularRows(p.m, p.m.N) > BlockLimit(p.m)
}

// maxComplete is MaxComplete, set to 0 by tests to compare the block and
// the incomplete factor on the same model.
var maxComplete = MaxComplete

// regularRows returns the number of m's first k rows that are not
// repeats.
func regularRows(m *Model, k int) int {
	r := 0
	for _, d := range m.CondVar[:k] {
		if d != 0 {
			r++
		}
	}
	return r
}

// prepareComplete makes p's proposal complete (see above), a the prior's
// factor. It reports false, with p as it was, if the dense EP or the
// factorisation fails (the caller then prepares the block and the
// incomplete factor), and ctx's error if ctx is cancelled.
func (p *Prepared) prepareComplete(ctx context.Context, a *tri, tr core.Trace, say func(string, ...any)) (bool, error) {
	m, n := p.m, p.m.N
	say("the proposal: complete (the block's rule asks for more than %d rows); the dense path's EP on the %d x %d covariance the model implies", BlockLimit(m), n, n)
	box := core.Box{N: n, Cov: m.impliedCov(m.latentFactor()), Lower: m.Lower, Upper: m.Upper}
	wtau, wnu, stats, widened, err := core.ProposalSites(box, 0, tr)
	if err != nil {
		say("the complete proposal's EP failed (%v): a dense block and the incomplete factor instead", err)
		return false, nil
	}
	box.Cov = nil
	if err := ctx.Err(); err != nil {
		return false, err
	}
	// The rows' sites on x, and their sums by latent variable.
	rtau, rnu := make([]float64, n), make([]float64, n)
	tau, nu := make([]float64, n), make([]float64, n)
	for k := range n {
		d := 1 + m.Noise*wtau[k]
		rtau[k], rnu[k] = wtau[k]/d, wnu[k]/d
		v := k
		if j := m.Dup(k); j >= 0 {
			v = j
		}
		tau[v] += rtau[k]
		nu[v] += rnu[k]
	}
	say("the proposal's factor: complete, %d rows", n)
	t := hybridPattern(m, a, n)
	t.complete = true
	pd, po := make([]float64, n), make([]float64, len(t.nbr))
	t.assemble(a, tau, pd, po)
	shift, err := t.factorShifted(pd, po, 0, n, maxProposalShift)
	if err != nil {
		say("the complete proposal's factorisation failed: a dense block and the incomplete factor instead")
		return false, nil
	}
	p.Block, p.tau, p.nu, p.EP, p.Widened, p.Shift, p.SiteScale = n, tau, nu, stats, widened, shift, 1
	return true, p.finish(a, t, pd, po, rtau, rnu, make([]float64, n), nil)
}

// impliedCov is Implied's covariance of w, from the model's latent factor
// l (latentFactor).
func (m *Model) impliedCov(l []float64) []float64 {
	n := m.N
	cov := make([]float64, n*n)
	var ws gemm.Workspace
	ws.NT(n, n, n, l, n, l, n, cov, n, false, runtime.GOMAXPROCS(0))
	for i := range n {
		cov[i*n+i] += m.Noise
	}
	return cov
}
