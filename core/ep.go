package core

import (
	"fmt"
	"math"
	"runtime"
	"slices"

	"github.com/gpc-mc/gpc/internal/gemm"

	"gonum.org/v1/gonum/floats"
)

// EP is expectation propagation's Gaussian approximation of a box problem,
// the truncated normal N(0, R) 1[a <= u <= b] with u = v - Mean and the
// bounds a, b shifted likewise: each indicator 1[a_i <= u_i <= b_i] is
// replaced by a Gaussian site exp(-Tau_i u_i^2/2 + Nu_i u_i), so that
//
//	N(u; 0, R) prod_i exp(-Tau_i u_i^2/2 + Nu_i u_i) = Z N(u; M, Sigma),
//	Sigma = (R^-1 + T)^-1,   M = Sigma Nu,   T = diag(Tau),
//	log Z = M'Nu/2 - log det(I + T^1/2 R T^1/2)/2.
//
// Any sites with Tau >= 0 make this an identity, so MethodEP is exact
// whatever EP's convergence; the better the sites, the flatter the weights.
// Tau is never negative: a truncation only shrinks a variance.
//
// References: T. Minka (2001), "Expectation propagation for approximate
// Bayesian inference", UAI; J. P. Cunningham, P. Hennig and S. Lacoste-Julien
// (2011), "Gaussian probabilities and expectation propagation",
// arXiv 1111.6832; C. E. Rasmussen and C. K. I. Williams (2006), Gaussian
// Processes for Machine Learning, Algorithm 3.5.
type EP struct {
	N       int
	Tau, Nu []float64
	// Sigma (row-major) and M are the Gaussian approximation; LogZ is the
	// log of its normalising constant Z.
	Sigma, M []float64
	LogZ     float64
	Stats    EPStats

	a, b  []float64 // the bounds of u
	r     []float64 // R (jitter included), for Score
	rchol *Factor   // R's Cholesky factor in the input order

	tol       float64 // the sites' relative change at which the sweeps stop
	maxSweeps int     // the most sweeps
	moving    float64 // the fraction of the sites that may still change by tol or more when the sweeps stop
	trace     Trace   // told of each sweep and the recompute
	lazy      bool    // see epLazy
	widened   int     // the sites widenSites widened
}

// epLazy: the proposal's EP from EPLargeN variables on (lazyEP: Prepare,
// Choose, PrepareEP, PrepareOrdered) keeps the sweeps' own Sigma, current in its
// lower triangle only, and M = Sigma Nu from it, rather than rebuilding
// them from the sites (recompute: a factorisation, a triangular solve and
// a product, 7 n^3/6 multiply-adds, more than two sweeps). Any Gaussian
// consistent with its sites serves the proposal, and the sweeps' rounding
// (relative 1e-13 or so) moves the estimate by far less than its standard
// error. Z, which needs log det(I + T^1/2 R T^1/2) = log det R - log det
// Sigma, is formed by Factor from R's factor and Sigma's (both computed
// anyway); LogZ is NaN until then, and the EP itself never leaves the
// package (LogEvidence and Score need the recompute).

// EPStats describes an EP solve.
type EPStats struct {
	// Sweeps is the number of passes over the sites; Change is the largest
	// change of a site's natural parameters in the last one, relative to
	// its cavity precision (below EPTol: converged; from EPLargeN
	// variables on, the proposal's EP stops once no more than a fraction
	// EPLargeMoving of the sites changed by EPLargeTol or more).
	Sweeps int
	Change float64
	// Moving counts the sites whose change in the last sweep was above the
	// tolerance.
	Moving int
}

func (s EPStats) String() string {
	return fmt.Sprintf("sweeps=%d change=%.3g", s.Sweeps, s.Change)
}

// EPTol is the relative change of the sites at which EP stops. The proposal
// needs the sites to a few digits only: on the RBF classification
// covariance of N = 500 (beta = 10) the standard deviation of log P at
// M = 10^4 is the same (0.0039 nats, EP's own sites, before they were
// widened) whether EP stops at 1e-8 (12 sweeps), 1e-4 (7) or 1e-2 (5).
const EPTol = 1e-3

// EPLargeN is the number of variables from which EP stops at the looser
// EPLargeTol: a sweep costs n^3/2 multiply-adds, as much as the whole
// propagation of 10^4 particles at n = 5000, and the sites only shape the
// proposal of an exact estimator (see EP: any sites give the same P, the
// standard error alone depends on them), so from there the sweeps stop once
// another would no longer narrow the weights. Measured on the large-N
// issue's problem (RBF, alpha 1, beta 10, N = 2000, M = 10^4, seeds 1 and
// 2): standard errors of log P 0.037 and 0.27 nats after 1 sweep (change
// 27), 0.024 and 0.014 after 2 (change 8.9), 0.016 and 0.012 after 3
// (change 0.39), 0.016 and 0.015 converged to EPTol (8 sweeps).
const EPLargeN = 1000

// EPLargeTol is EP's stopping tolerance from EPLargeN variables on.
const EPLargeTol = 0.5

// EPLargeMoving is the fraction of the sites that may still change by
// EPLargeTol or more when the proposal's EP stops, from EPLargeN variables
// on. The largest change over n sites is an extreme of n values and grows
// with n: on the large-N issue's problem (RBF, alpha 1, beta 10) the third
// sweep leaves 369 of 2000 and 390 of 5000 sites moving by 0.5 or more
// after the second, and stops after the third, whose largest changes are
// 0.29 and 0.26; at N = 10^4 the third sweep leaves 2 of the 10^4 sites
// above 0.5 (the largest 0.60), and a fourth sweep, n^3/2 multiply-adds
// (11 s on two cores), did not lower the standard error of log P: at
// M = 10^4, seeds 1-10, the sites widened (TestSiteScaleStudy), median
// standard error 0.0123 after 3 sweeps and 0.0136 after 4, the largest
// 0.0153 and 0.0152, the seeds' standard deviation 0.0145 and 0.0123.
const EPLargeMoving = 1e-3

// MaxEPSweeps bounds EP's passes over the sites. EP on a truncated normal
// usually converges in 5-10; more only sharpen the proposal.
const MaxEPSweeps = 50

// NewEP checks box and runs sequential expectation propagation on it, with
// rank-one updates of Sigma within a sweep and a fresh factorisation at the
// end. jitter >= 0 is added to the diagonal first. It returns the errors of
// NewFactor for a box that is not valid, and an error if the updates break
// down numerically (a site's cavity precision is not positive).
func NewEP(box Box, jitter float64) (*EP, error) {
	return NewEPTol(box, jitter, EPTol)
}

// NewEPTol is NewEP stopping when the sites change by less than tol (EPTol
// for the proposal; the evidence and its gradient, EP.LogEvidence and
// EP.Score, want tighter).
func NewEPTol(box Box, jitter, tol float64) (*EP, error) {
	return newEP(box, jitter, tol, nil, false, widenNone)
}

// lazyEP reports whether the proposal's EP on n variables leaves out the
// recompute (see epLazy): from EPLargeN variables on.
func lazyEP(n int) bool { return n >= EPLargeN }

// newEP is NewEPTol telling tr of its phases; with lazy set it leaves out
// the recompute (see epLazy); widen says whether it widens the sites after
// the sweeps (widenSites: MethodEP's proposal, widenProposal).
func newEP(box Box, jitter, tol float64, tr Trace, lazy bool, widen widenMode) (*EP, error) {
	n := box.N
	tr.printf("EP: factorising R (%d variables)", n)
	rf, err := NewFactor(box, Ordering{Kind: OrderGiven}, jitter)
	if err != nil {
		return nil, err
	}
	cov, _ := symmetrize(box.Cov, n, jitter)
	a, b, _ := shiftedBounds(box)
	e := &EP{N: n, Tau: make([]float64, n), Nu: make([]float64, n), M: make([]float64, n),
		Sigma: cov, a: a, b: b, rchol: rf, tol: tol, maxSweeps: MaxEPSweeps, trace: tr}
	if n >= EPLargeN && tol == EPTol {
		// The proposal's EP at large N (see EPLargeTol); the evidence and
		// its gradient ask for their own, tighter tol.
		e.tol, e.moving = EPLargeTol, EPLargeMoving
	}
	if err := e.sweep(); err != nil {
		return nil, err
	}
	e.lazy = lazy
	var piloted *EP // the recomputed EP of the sites the pilot kept
	switch {
	case widen == widenAlways || (widen == widenProposal || widen == widenLarge) && (lazy || n >= EPLargeN):
		if err := e.widenSites(tr); err != nil {
			return nil, err
		}
	case widen == widenProposal && n >= WidenMinN:
		var err error
		if piloted, err = e.widenPiloted(box, jitter, tr); err != nil {
			return nil, err
		}
	}
	if e.lazy {
		e.M = symLowerMulVec(e.M, e.Sigma, n, e.Nu)
		e.LogZ = math.NaN()
		return e, nil
	}
	// The rank-one updates accumulate rounding: rebuild Sigma, M and Z from
	// the sites and R, in place of R's copy (the sweeps' Sigma is scratch).
	swept := e.Sigma
	cov, _ = symmetrize(box.Cov, n, jitter)
	e.r = slices.Clone(cov)
	if piloted != nil && piloted.Sigma != nil {
		e.Sigma, e.M, e.LogZ = piloted.Sigma, piloted.M, piloted.LogZ
		return e, nil
	}
	tr.printf("EP: recomputing Sigma from the sites")
	if err := e.recompute(cov, swept); err != nil {
		return nil, err
	}
	return e, nil
}

// symLowerMulVec returns dst = S x for the symmetric n x n matrix S whose
// lower triangle s holds (the upper triangle is not read).
func symLowerMulVec(dst, s []float64, n int, x []float64) []float64 {
	clear(dst)
	for r := range n {
		row := s[r*n : r*n+r]
		dst[r] += floats.Dot(row, x[:r]) + s[r*n+r]*x[r]
		floats.AddScaled(dst[:r], x[r], row)
	}
	return dst
}

// epDelay is the number of sites whose rank-one updates of Sigma a sweep
// delays and then applies at once, as one matrix product.
const epDelay = 256

// epRows is the height of the row blocks in which a sweep updates the
// lower triangle of Sigma (see sweep).
const epRows = 256

// epSites is the number of sites whose columns a sweep forms together (a
// divisor of epRows and epDelay): the pending updates are subtracted from
// the block's columns in one product, and each site then subtracts only
// the updates of the sites before it in the block.
const epSites = 16

// sweep runs EP's passes over the sites (recompute rebuilds Sigma, M and Z
// from the sites afterwards). The rank-one updates Sigma -= c col col' of
// each site are delayed: with the last q <= epDelay updates held as the
// columns of U (n x q) and their coefficients, the current Sigma is
// S - U diag(c) U', so a block of epSites sites' columns costs S's
// columns less one product of U with the sites' rows of U (on
// internal/gemm's kernel), each site then subtracting the updates of the
// block's earlier sites, and once epDelay updates are pending S takes them
// in one product: the sweep's
// multiply-adds at the product's speed rather than at memory's. Only the
// lower part of S is updated, by block columns of epRows columns, each from
// its first row down: entry (r, c) of S is current where c < the end of
// r's block, and the column of site i is read along row i up to the end
// of its block and down column i below it: n^3/2 multiply-adds per sweep
// rather than n^3.
func (e *EP) sweep() error {
	n, sg := e.N, e.Sigma
	u := make([]float64, n*epDelay)  // row r: the q delayed columns' entries r
	cu := make([]float64, n*epDelay) // the same scaled by -c
	q := 0
	var ws gemm.Workspace
	workers := runtime.GOMAXPROCS(0)
	flush := func() {
		if q == 0 {
			return
		}
		// S (n x n) += (-U diag(c)) U', block column by block column, the
		// rows from the block's first down (each block's U rows packed
		// once).
		for c0 := 0; c0 < n; c0 += epRows {
			c1 := min(n, c0+epRows)
			ws.NT(n-c0, c1-c0, q, cu[c0*epDelay:], epDelay, u[c0*epDelay:], epDelay, sg[c0*n+c0:], n, true, workers)
		}
		q = 0
	}
	// The columns of a block of epSites sites with the pending updates as
	// of the block's start (row r: the sites' entries r, n x epSites), one
	// site's column with the block's earlier updates (col), and the
	// updates made within the block (row k: the block's k-th update's
	// column, and the same scaled by -c), copied into U's rows at the
	// block's end, epSites entries of a row at a time.
	panel := make([]float64, n*epSites)
	col := make([]float64, n)
	ub := make([]float64, epSites*n)
	blk := make([]float64, epSites*n)
	for e.Stats.Sweeps = 1; e.Stats.Sweeps <= e.maxSweeps; e.Stats.Sweeps++ {
		if k := e.Stats.Sweeps; k == 1 {
			e.trace.printf("EP: sweep 1 (stops at change < %.3g, at most %d sweeps)", e.tol, e.maxSweeps)
		} else {
			e.trace.printf("EP: sweep %d, after change %.3g (%d sites above %.3g)", k, e.Stats.Change, e.Stats.Moving, e.tol)
		}
		e.Stats.Change, e.Stats.Moving = 0, 0
		for i0 := 0; i0 < n; i0 += epSites {
			i1 := min(n, i0+epSites)
			nb := i1 - i0
			if q+nb > epDelay {
				flush()
			}
			// The block's columns of S: along their rows up to the end of
			// their row block (epRows is a multiple of epSites), then down
			// the columns, a row's epSites entries at a time.
			r1 := min(n, (i0/epRows+1)*epRows)
			for i := i0; i < i1; i++ {
				for r, v := range sg[i*n : i*n+r1] {
					panel[r*epSites+i-i0] = v
				}
			}
			for r := r1; r < n; r++ {
				copy(panel[r*epSites:r*epSites+nb], sg[r*n+i0:r*n+i1])
			}
			// Less the pending updates, in one product whose n x q block
			// of U is streamed, not packed.
			q0 := q
			if q0 > 0 {
				ws.NT(n, nb, q0, cu, epDelay, u[i0*epDelay:], epDelay, panel, epSites, true, workers)
			}
			for i := i0; i < i1; i++ {
				// col = Sigma_i: the panel's column less the block's own updates.
				for r := range col {
					col[r] = panel[r*epSites+i-i0]
				}
				for k := q0; k < q; k++ {
					floats.AddScaled(col, ub[(k-q0)*n+i], blk[(k-q0)*n:(k-q0+1)*n])
				}
				sii := col[i]
				tc := 1/sii - e.Tau[i]
				nc := e.M[i]/sii - e.Nu[i]
				if !(tc > 0) || math.IsInf(tc, 1) {
					return fmt.Errorf("core: EP broke down: the cavity precision of variable %d is %v", i, tc)
				}
				// The cavity N(mc, sc^2) times the indicator: its moments give
				// the new site, (1/vh - tc, mh/vh - nc).
				mc, sc := nc/tc, 1/math.Sqrt(tc)
				tm, tv := truncMoments((e.a[i]-mc)/sc, (e.b[i]-mc)/sc)
				if !(tv > 1e-12) {
					// The interval is far in the cavity's tail or very narrow
					// relative to it: a site this sharp would make the updates
					// ill-conditioned, and any site is valid. Cap its precision.
					tv = 1e-12
				}
				mh, vh := mc+sc*tm, sc*sc*tv
				tau := math.Max(1/vh-tc, 0)
				nu := mh/vh - nc
				if tau == 0 {
					nu = 0
				}
				ch := math.Max(math.Abs(tau-e.Tau[i]), math.Abs(nu-e.Nu[i])*sc) / tc
				e.Stats.Change = math.Max(e.Stats.Change, ch)
				if ch >= e.tol {
					e.Stats.Moving++
				}
				dt, dn := tau-e.Tau[i], nu-e.Nu[i]
				e.Tau[i], e.Nu[i] = tau, nu
				if dt == 0 && dn == 0 {
					continue
				}
				// Sigma -= c col col' with c = dt/(1 + dt Sigma_ii) (delayed);
				// M = Sigma Nu moves along col (col'Nu is the old M_i).
				c := dt / (1 + dt*sii)
				floats.AddScaled(e.M, dn*(1-c*sii)-c*e.M[i], col)
				if c == 0 {
					continue
				}
				copy(ub[(q-q0)*n:(q-q0+1)*n], col)
				b := blk[(q-q0)*n : (q-q0+1)*n]
				for r, v := range col {
					b[r] = -c * v
				}
				q++
			}
			if q > q0 {
				for r := range n {
					ur, cr := u[r*epDelay+q0:r*epDelay+q], cu[r*epDelay+q0:r*epDelay+q]
					for k := range ur {
						ur[k], cr[k] = ub[k*n+r], blk[k*n+r]
					}
				}
			}
		}
		flush()
		if e.Stats.Change < e.tol || e.Stats.Moving <= int(e.moving*float64(n)) {
			e.trace.printf("EP: converged after %d sweeps, change %.3g (%d sites above %.3g)", e.Stats.Sweeps, e.Stats.Change, e.Stats.Moving, e.tol)
			return nil
		}
	}
	e.Stats.Sweeps = e.maxSweeps
	return nil
}

// recompute sets Sigma, M and LogZ from the sites: with B = I + T^1/2 R
// T^1/2 = L_B L_B' and V = L_B^-1 T^1/2 R, Sigma = R - V'V (Rasmussen and
// Williams, Algorithm 3.5). cov is R and is overwritten by Sigma; scratch
// (n x n) is overwritten. The factorisation (chol.go), the triangular
// solve and V'V (its lower triangle, mirrored) run on internal/gemm's
// kernel.
func (e *EP) recompute(cov, scratch []float64) error {
	n := e.N
	sq := make([]float64, n)
	for i, t := range e.Tau {
		sq[i] = math.Sqrt(t)
	}
	l := scratch[:n*n]
	for i := range n {
		for j := 0; j <= i; j++ {
			l[i*n+j] = sq[i] * cov[i*n+j] * sq[j]
		}
		l[i*n+i]++
	}
	workers := cholWorkers()
	if cholesky(l, n, nil, workers) >= 0 {
		return fmt.Errorf("core: EP broke down: I + T^1/2 R T^1/2 is not positive definite")
	}
	logDet := 0.0
	for i := range n {
		logDet += 2 * math.Log(l[i*n+i])
	}
	// W = V' (n x n): row r is L_B^-1 (T^1/2 R)[:, r] = L_B^-1 (R[r, :] T^1/2)'.
	w := make([]float64, n*n)
	for r := range n {
		for j := range n {
			w[r*n+j] = cov[r*n+j] * sq[j]
		}
	}
	var ws gemm.Workspace
	solveRowsTo(w, n, l, n, &ws, workers)
	// Sigma = R - W W': the lower triangle block column by block column
	// (the negated W as A), then mirrored.
	vtv := l // L_B is no longer needed
	for i, v := range w {
		vtv[i] = -v
	}
	for c0 := 0; c0 < n; c0 += epRows {
		c1 := min(n, c0+epRows)
		ws.NT(n-c0, c1-c0, n, vtv[c0*n:], n, w[c0*n:], n, cov[c0*n+c0:], n, true, workers)
	}
	for i := range n {
		for j := 0; j < i; j++ {
			cov[j*n+i] = cov[i*n+j]
		}
	}
	e.Sigma = cov
	for r := range n {
		e.M[r] = floats.Dot(cov[r*n:r*n+n], e.Nu)
	}
	e.LogZ = 0.5*floats.Dot(e.M, e.Nu) - 0.5*logDet
	return nil
}

// Factor orders and factorises EP's Gaussian for MethodEP: Sigma[Perm][Perm]
// = L L', the bounds shifted by M, and the sites in the same order. It
// returns an error if the twisted steps would be numerically degenerate
// (see epSteps).
func (e *EP) Factor(ord Ordering) (*Factor, error) {
	return e.factor(ord, false)
}

// factor is Factor; with last set (the EP's last factor) a lazy EP whose
// order starts from the input order (greedy, variance, given without a
// permutation) factorises Sigma in its own storage, which it leaves
// overwritten (and e.Sigma nil): one N x N matrix fewer at the peak.
func (e *EP) factor(ord Ordering, last bool) (*Factor, error) {
	n := e.N
	if e.Sigma == nil {
		panic("core: EP.Factor after the EP's last factor")
	}
	box := Box{N: n, Cov: e.Sigma, Lower: e.a, Upper: e.b, Mean: e.M}
	var f *Factor
	var err error
	if e.lazy {
		// Sigma's lower triangle, as the sweeps left it.
		var a, b []float64
		var w []float64
		if last && (ord.Kind == OrderGreedy || ord.Kind == OrderVariance || ord.Kind == OrderGiven && ord.Perm == nil) {
			w = e.Sigma
			e.Sigma = nil
		}
		if a, b, err = shiftedBounds(box); err == nil {
			f, err = newFactor(symSource{cov: box.Cov, n: n, lower: true}, a, b, ord, w)
		}
	} else {
		f, err = NewFactor(box, ord, 0)
	}
	if err != nil {
		// Not an InputError: R itself was fine.
		return nil, fmt.Errorf("core: EP's covariance: %v", err)
	}
	f.Jitter = e.rchol.Jitter
	f.EPStats = e.Stats
	logZ := e.LogZ
	if e.lazy {
		// log Z = M'Nu/2 - log det(I + T^1/2 R T^1/2)/2, the determinant
		// det R / det Sigma from the two factors' diagonals.
		logZ = 0.5 * floats.Dot(e.M, e.Nu)
		for i := range n {
			logZ += math.Log(f.L[i*n+i]) - math.Log(e.rchol.L[i*n+i])
		}
	}
	st := &epSteps{tau: make([]float64, n), kappa: make([]float64, n), m: make([]float64, n),
		logZ: logZ, rchol: e.rchol.L}
	for k, v := range f.Perm {
		t, nu, m := e.Tau[v], e.Nu[v], e.M[v]
		st.tau[k], st.kappa[k], st.m[k] = t, nu-t*m, m
		st.logZ -= -t*m*m/2 + nu*m
		l := f.L[k*n+k]
		if lambda := 1/(l*l) - t; !(lambda*l*l > PivotTol) {
			return nil, fmt.Errorf("core: EP's twisting is degenerate at variable %d (site precision %v against conditional precision %v)", v, t, 1/(l*l))
		}
	}
	f.ep = st
	return f, nil
}

// factorTrace is Factor (with labels for OrderInterleave when ord has
// none) telling tr of it.
func (e *EP) factorTrace(ord Ordering, labels []float64, tr Trace, last bool) (*Factor, error) {
	if ord.Labels == nil {
		ord.Labels = labels
	}
	tr.printf("ep/%s: ordering and factorising Sigma", ord.Kind)
	return e.factor(ord, last)
}

// ProposalSites returns the sites of MethodEP's proposal on box, as
// Prepare computes them: sequential EP's, stopped as the proposal's EP
// stops, and widened as the proposal widens them from EPLargeN variables
// on (widenSites; below it, EP's own), with EP's statistics and the number
// of sites widened. A sparse estimator whose model is small enough to form
// its dense covariance takes the dense path's sites from it
// (core/vecchia's complete proposal).
func ProposalSites(box Box, jitter float64, tr Trace) (tau, nu []float64, stats EPStats, widened int, err error) {
	e, err := newEP(box, jitter, EPTol, tr, lazyEP(box.N), widenLarge)
	if err != nil {
		return nil, nil, EPStats{}, 0, err
	}
	return e.Tau, e.Nu, e.Stats, e.widened, nil
}

// PrepareEP is NewEP followed by EP.Factor, as Prepare does it (the sites
// widened as MethodEP's proposal widens them: widenSites from EPLargeN
// variables on, without NewEP's recompute, see epLazy; widenPiloted
// below), so that it rebuilds a prepared factor from its order.
func PrepareEP(box Box, ord Ordering, jitter float64) (*Factor, error) {
	return prepareEP(box, ord, jitter, widenProposal)
}

// PrepareEPUnwidened is PrepareEP with EP's own sites, as gpc prepared
// MethodEP before the sites were widened: what rebuilds the factor of a
// cloud that does not carry it (gpc.cloud/2).
func PrepareEPUnwidened(box Box, ord Ordering, jitter float64) (*Factor, error) {
	return prepareEP(box, ord, jitter, widenNone)
}

func prepareEP(box Box, ord Ordering, jitter float64, widen widenMode) (*Factor, error) {
	e, err := newEP(box, jitter, EPTol, nil, lazyEP(box.N), widen)
	if err != nil {
		return nil, err
	}
	if ord.Labels == nil {
		ord.Labels = box.Labels
	}
	return e.factor(ord, true)
}

// epSteps holds what MethodEP's steps need, in the Factor's order: the
// sites' precisions tau and linear coefficients kappa in terms of the
// filter's variable u - M (whose prior is N(0, Sigma)), the log of the
// constant the site corrections multiply the estimate by, and, for
// prediction, M and R's Cholesky factor (input order, lower, row-major).
//
// Each step's conditional precision without its own site, 1/L[k][k]^2 -
// tau[k], is positive in exact arithmetic (it is at least R's conditional
// precision); EP.Factor refuses a factor where rounding has eaten it.
type epSteps struct {
	tau, kappa, m []float64
	logZ          float64
	rchol         []float64
}

// stepEP is one step of the fully adapted filter on the EP-twisted model.
// The filter's variable u_k - M_k has, under the proposal N(0, Sigma), the
// conditional N(mu, l^2) given the earlier ones, l = L[k][k]; the target
// divides by the site exp(-tau u^2/2 + kappa u + const). Their product is
// the Gaussian N(c, 1/lambda) times a weight:
//
//	lambda = 1/l^2 - tau,   c = (mu/l^2 - kappa)/lambda,
//	log g = -log(lambda l^2)/2 + lambda c^2/2 - mu^2/(2 l^2) + log P(A <= N(c, 1/lambda) <= B),
//
// so, as in MethodSMC, each particle is weighted by g before its draw,
// resampled if the effective sample size fell, and draws its variable from
// N(c, 1/lambda) truncated to [A_k, B_k]; z_k = (u_k - mu)/l is stored.
func (fl *filter) stepEP(i, i0 int) {
	n, m := fl.f.N, fl.m
	k := i - i0
	st := fl.f.ep
	l := fl.f.L[i*n+i]
	l2 := l * l
	lambda := 1/l2 - st.tau[i]
	s := 1 / math.Sqrt(lambda)
	kappa := st.kappa[i]
	a, b := fl.f.A[i], fl.f.B[i]
	logw, lg, lo, hi, off := fl.logw[:m], fl.lg[:m], fl.lo[:m], fl.hi[:m], fl.off[:m]
	base := -0.5 * math.Log(lambda*l2)
	// The orthant case (B = +Inf, the classifier's) goes through the batch
	// kernels (epBounds, then fastnorm.go's), which add log P(lo <= Z) to
	// logw after the Gaussian part of log g; boxes through LogPhiDiff.
	oneSided := math.IsInf(b, 1)
	mx := math.Inf(-1)
	ec := epConsts{il2: 1 / l2, kappa: kappa, ilam: 1 / lambda, a: a, b: b, is: 1 / s, il: 1 / l, base: base, hl: 0.5 * lambda} // no division per particle
	kk := k % subBlock
	pt := fl.pt[kk*m : kk*m+m]
	lrow := fl.f.L[i*n+i-kk : i*n+i]
	if oneSided {
		epBounds(&ec, pt, fl.zt, m, lrow, lo, hi, off, logw)
		mx = tailWeights(lo, fl.tp, fl.cp, lg, logw)
	} else {
		mus := fl.zk[:m] // the conditional means, until the draws
		fl.condMeans(i, i0, mus)
		for p, mu := range mus {
			g := ec.bounds(mu, &lo[p], &hi[p], &off[p])
			lg[p] = g + LogPhiDiff(lo[p], hi[p])
			logw[p] += lg[p]
			mx = max(mx, logw[p])
		}
	}
	extra := 0.0
	if i == 0 {
		extra = st.logZ
	}
	inc, resampled, dead := fl.reweight(mx, extra)
	if dead {
		return
	}
	u := fl.tmpM[:m]
	idx := fl.idx[:m]
	drawUniforms(u, i == 0, resampled, idx, &fl.src)
	zk := fl.zk[:m]
	if oneSided {
		tailDraws(zk, lo, fl.tp, fl.cp, lg, u)
	} else {
		for p := range m {
			zk[p] = TruncNormQuantile(lo[p], hi[p], u[p])
		}
	}
	epStore(fl.zt[kk*m:kk*m+m], off, zk, logw, s/l, inc)
}

// epConsts are a step's constants of stepEP's per-particle arithmetic.
type epConsts struct {
	il2, kappa, ilam, a, b, is, il, base, hl float64 // 1/l^2, kappa, 1/lambda, A, B, 1/s, 1/l, log g's constant, lambda/2
}

// bounds computes, from a particle's conditional mean mu, its standardized
// bounds lo and hi, its draw's offset off, and returns the Gaussian part of
// its log weight. No product is fused with a sum (float64() forbids it
// where a compiler could), as in the AVX2 kernel.
func (ec *epConsts) bounds(mu float64, lo, hi, off *float64) (g float64) {
	c := (float64(mu*ec.il2) - ec.kappa) * ec.ilam
	*lo, *hi = (ec.a-c)*ec.is, (ec.b-c)*ec.is
	*off = (c - mu) * ec.il
	return ec.base + float64(ec.hl*c*c) - float64(0.5*mu*mu*ec.il2)
}

// epBounds is the per-particle work of stepEP before an orthant variable's
// weights: each particle's conditional mean mu[p] = pt[p] + sum_j
// lrow[j] zt[j*m+p] (fused multiply-adds in increasing j, as condMeans),
// then its bounds and offset (epConsts.bounds), and logw[p] gains the
// Gaussian part of its log weight. The AVX2 kernel (filter_amd64.s) does
// the same operations four particles at a time.
func epBounds(ec *epConsts, pt, zt []float64, m int, lrow, lo, hi, off, logw []float64) {
	pt, lo, hi, off, logw = pt[:m], lo[:m], hi[:m], off[:m], logw[:m]
	if len(zt) < max(1, len(lrow)*m) {
		panic("core: epBounds: zt too short")
	}
	p0 := 0
	if vec() != vecGeneric && haveAVX2 {
		if p0 = m &^ 3; p0 > 0 {
			var l0 *float64
			if len(lrow) > 0 {
				l0 = &lrow[0]
			}
			epBoundsAVX2(ec, &pt[0], &zt[0], m, l0, len(lrow), &lo[0], &hi[0], &off[0], &logw[0], p0)
		}
	}
	for p := p0; p < m; p++ {
		mu := pt[p]
		for j, l := range lrow {
			mu = math.FMA(l, zt[j*m+p], mu)
		}
		logw[p] += ec.bounds(mu, &lo[p], &hi[p], &off[p])
	}
}

// epStore is the end of stepEP: each particle's standardized draw zt[p] =
// off[p] + sl z[p] (the product rounded, then the sum) is stored and its
// log weight normalized by inc.
func epStore(zt, off, z, logw []float64, sl, inc float64) {
	m := len(z)
	zt, off, logw = zt[:m], off[:m], logw[:m]
	p0 := 0
	if vec() != vecGeneric && haveAVX2 {
		if p0 = m &^ 3; p0 > 0 {
			epStoreAVX2(&zt[0], &off[0], &z[0], &logw[0], sl, inc, p0)
		}
	}
	for p := p0; p < m; p++ {
		zt[p] = off[p] + float64(sl*z[p])
		logw[p] -= inc
	}
}
