package vecchia

import (
	"context"
	"math"
	"unsafe"

	"github.com/gpc-mc/gpc/core"
)

// runner propagates one worker's particle groups through a Prepared
// model (core.GroupRunner). Storage: the particles' latent values are
// variable-major, row k (m values, one per particle) at x[k*m:], so that
// a step's conditional means are sums of its neighbours' rows, each read
// contiguously; resampling gathers the rows before the current one.
//
// The latent values are stored in float32: a step's reading of its
// neighbours' rows is the estimator's memory traffic (m rows of a group's
// values per step), and float32 halves it. A particle's path is its
// stored values: each x_k is drawn in float64 and rounded to float32
// once, and everything after (the conditional means of later steps, the
// correction r, the test posteriors) is computed in float64 from the
// rounded value, so the weights are those of the path the particle has.
// Rounding moves a draw by at most 2^-24 of its size (6e-8; a latent
// value's conditional standard deviation is at least the nugget's, 1e-2
// for the default): the proposal's density at the rounded value differs
// from the draw's by a factor 1 + O(2^-24 x / sd) whose first-order term
// averages out over the rounding cell, so the estimate's bias is of order
// (2^-24 x / sd)^2 per step, 10^-10 and less, far below its standard
// error. What stays float64: the means, bounds, log weights, the
// correction log r and every sum, each accumulated in a fixed order, so
// the result's bits do not depend on the thread count.
type runner struct {
	p   *Prepared
	ess float64 // resampling threshold, a fraction of m
	m   int

	x     []float32 // N x m latent values, by variable
	logw  []float64 // normalized log weights of the twisted targets
	r     []float64 // log of each particle's correction to the model's target (see Prepared)
	mu    []float64 // the prior's conditional means
	mh    []float64 // the proposal's conditional means, before the site
	c     []float64 // the twisted conditional means, with the site divided out
	lo    []float64 // standardized lower bounds (one-sided steps: the only bound)
	hi    []float64 // standardized upper bounds (two-sided steps)
	t     []float64 // P(Z >= lo)
	cc    []float64 // P(Z < lo)
	lg    []float64 // log incremental weight's bound part
	z     []float64 // the truncated standardized draws
	u     []float64 // their uniforms
	nz    []float64 // the standard normal numbers of x given w
	tmp   []float64
	tmp32 []float32
	idx   []int
	tmpI  []int
	off   []int64 // the rows' offsets of a step (offsets)
	moff  []int64 // the model's, in the block (step)
	noff  []int64 // the next step's (nextOffsets)
	orig  []int   // each particle's ancestor at the first variable
	seen  []bool

	ts  core.TwistedStep // a one-sided step's constants and loops
	src core.PCG

	pg    []float64 // the last group's weighted test posteriors (T)
	wfin  []float64 // the last group's final normalized weights
	g     int       // the last group
	kept  []int     // the paths each group keeps (KeptSizes)
	paths []float32 // the last group's kept paths (keepPaths)
	pw    []float64 // their weights
	sc    []float64 // the last group's score (Prepared.Score), nil if none
	sw    *scoreWork
	logZ  float64
	minES float64
	res   int
	dead  int
}

func newRunner(p *Prepared, cfg *core.Config, maxM int) *runner {
	r := &runner{p: p, ess: cfg.ESSThreshold}
	vec := func() []float64 { return make([]float64, maxM) }
	r.x = float32s(cfg.Alloc, p.m.N*maxM)
	r.tmp32 = make([]float32, maxM)
	r.logw, r.r, r.mu, r.mh, r.c, r.lo, r.hi = vec(), vec(), vec(), vec(), vec(), vec(), vec()
	r.t, r.cc, r.lg, r.z, r.u, r.tmp, r.wfin, r.nz = vec(), vec(), vec(), vec(), vec(), vec(), vec(), vec()
	r.idx, r.tmpI, r.orig, r.seen = make([]int, maxM), make([]int, maxM), make([]int, maxM), make([]bool, maxM)
	r.pg = make([]float64, p.m.T)
	r.kept = KeptSizes(p.KeepPaths, core.GroupSizes(cfg.Samples, cfg.Groups))
	return r
}

// runnerBytes is the memory of one running group of m particles on a
// model of n rows: its latent values (float32) and 20 per-particle
// vectors.
func runnerBytes(m, n int) int64 { return int64(m) * (int64(n)*4 + 20*8) }

// float32s returns n float32 values in the memory of alloc (a
// core.Config.Alloc, which gives float64 values: huge pages, committed at
// once), or of make if alloc is nil.
func float32s(alloc func(int) []float64, n int) []float32 {
	if alloc == nil || n == 0 {
		return make([]float32, n)
	}
	f := alloc((n + 1) / 2)[:(n+1)/2]
	return unsafe.Slice((*float32)(unsafe.Pointer(&f[0])), n)
}

// progressEvery is the number of steps between a group's progress reports
// and checks of its context.
const progressEvery = 256

// RunGroup propagates group g of m particles (core.GroupRunner).
func (r *runner) RunGroup(ctx context.Context, g, m int, s core.PCG, progress func(int64)) (core.GroupResult, error) {
	r.m, r.src, r.g = m, s, g
	r.logZ, r.minES, r.res = 0, 1, 0
	var err error
	if r.dead, err = runRows(ctx, r.p.m.N, m, r.p.m.Dup, r, r.logw[:m], r.r[:m], r.orig[:m], &r.logZ, progress); err != nil {
		return core.GroupResult{}, err
	}
	if r.dead < 0 {
		r.finish()
	}
	out := core.GroupResult{LogZ: r.logZ, MinESS: r.minES, Resamples: r.res, Ancestors: r.ancestors(), DeadAt: r.dead}
	return out, nil
}

// stepChunk is the particles a step takes through its loops at a time:
// each chunk's neighbour sums, weights, draws and moves follow one another
// while its values are in the core's first caches, and after each chunk
// the step asks for a share of the next row's neighbours' rows, so that
// their reads overlap the step's arithmetic instead of waiting in a few
// bursts. (From the 10^6 plan, groups of 625: chunks of 128 ran at 5.6-6.5
// x 10^7 particle-variables a second where the whole group at once, the
// hints in five bursts, ran at 4.6-5.4; chunks of 64 and 208 were slower
// than 128, docs/vecchia.md.) The chunks change no value: every loop is
// per particle, and the normal numbers are drawn in the particles' order.
const stepChunk = 128

// step advances the particles by regular row k: the fully adapted step of
// the twisted model (Prepared), by chunks of stepChunk particles.
func (r *runner) step(k int) {
	p, md, m := r.p, r.p.m, r.m
	mu, mh := r.mu[:m], r.mh[:m]
	clear(mu)
	clear(mh)
	pr := p.prop
	s, e := pr.start[k], pr.start[k+1]
	off := r.offsets(pr.nbr[s:e])
	// Before the block's end the proposal's pattern is the block's dense
	// rows, the model's its own; after it the proposal's row is the
	// model's (hybridPattern), its neighbours in the same order: one pass
	// over them, with the model's own coefficients.
	var moff []int64
	if k < p.Block {
		moff = rowOffsets(r.moff, md.Nbr[md.Start[k]:md.Start[k+1]], m)
		r.moff = moff
	}
	pcoef, mcoef := pr.off[s:e], md.Coef[md.Start[k]:md.Start[k+1]]
	var next []int64
	if k+2 < len(pr.start) {
		next = r.nextOffsets(pr.nbr[pr.start[k+1]:pr.start[k+2]])
	}
	chunks := max(1, (m+stepChunk/2)/stepChunk)
	size := ((m+chunks-1)/chunks + 7) &^ 7 // the chunks even, in vectors of 8
	// The hints: the next row's rows' values in 2 x chunks equal spans,
	// one after each chunk of each of the step's two passes.
	hint := func(q int) {
		core.PrefetchRowSpansF32(r.x, next, q*m/(2*chunks), (q+1)*m/(2*chunks))
	}
	ad := p.prop.diag[k]
	a2 := ad * ad
	// The step divides out row k's own site (rtau, rnu), and the
	// correction holds its latent variable's (tau, nu: its repeats' rows
	// too, which divide out theirs at their own steps).
	tau, nu, eta := p.tau[k], p.nu[k], p.eta[k]
	rtau, rnu := p.rtau[k], p.rnu[k]
	lam := a2 - rtau
	ilam := 1 / lam
	noise := md.Noise
	sw := math.Sqrt(ilam + noise)
	isw := 1 / sw
	// The step's constants: the Gaussian part of the incremental weight,
	// -log(lambda s^)/2 (s^ = 1/a2), and of the correction,
	// -log D/2 + log s^/2.
	r.logZ += -0.5*math.Log(lam/a2) - 0.5*math.Log(md.CondVar[k]) - math.Log(ad)
	a, b := md.Lower[k], md.Upper[k]
	c, lo, hi, logw := r.c[:m], r.lo[:m], r.hi[:m], r.logw[:m]
	tp, cc, lg := r.t[:m], r.cc[:m], r.lg[:m]
	// One bound (the classifier's rows): the batch kernels, on the
	// draw's distance beyond it, sign (w - bound) >= 0.
	oneSided := math.IsInf(a, -1) != math.IsInf(b, 1)
	sign := 1.0
	if math.IsInf(a, -1) && oneSided {
		sign = -1
	}
	bound := a
	if sign < 0 {
		bound = b
	}
	r.ts = core.TwistedStep{
		Eta: eta, Ad: ad, A2: a2, Rnu: rnu, ILam: ilam, HalfLam: 0.5 * lam, Bound: bound, ISw: isw,
		Upper: sign < 0,
	}
	mx := math.Inf(-1)
	for q := range chunks {
		i0, i1 := min(m, q*size), min(m, (q+1)*size)
		if moff == nil {
			core.Combine2F32(mh[i0:i1], mu[i0:i1], r.x[i0:], off, pcoef, mcoef)
		} else {
			core.CombineF32(mh[i0:i1], r.x[i0:], off, pcoef)
			core.CombineF32(mu[i0:i1], r.x[i0:], moff, mcoef)
		}
		var v float64
		if oneSided {
			r.ts.Weights(mh[i0:i1], c[i0:i1], lo[i0:i1], logw[i0:i1])
			v = core.OrthantWeights(lo[i0:i1], tp[i0:i1], cc[i0:i1], lg[i0:i1], logw[i0:i1])
		} else {
			v = r.boxWeights(i0, i1, a, b)
		}
		if v > mx || v != v {
			mx = v
		}
		hint(q)
	}
	resampled, dead := r.reweight(mx, k)
	if dead {
		return
	}
	u := r.u[:m]
	core.DrawUniforms(u, k == 0, resampled, r.idx[:m], &r.src)
	// x | w: the twisted Gaussian N(c, 1/lambda) given w = x + noise.
	gain := ilam / (sw * sw)
	rsd := math.Sqrt(ilam * noise / (sw * sw))
	dk := md.CondVar[k]
	xk := r.x[k*m : k*m+m]
	corr := r.r[:m]
	z, nz := r.z[:m], r.nz[:m]
	ts := &r.ts
	ts.SSw, ts.Gain, ts.Rsd, ts.TwoD, ts.HalfTau, ts.Nu = sign*sw, gain, rsd, 2*dk, 0.5*tau, nu
	for q := range chunks {
		i0, i1 := min(m, q*size), min(m, (q+1)*size)
		if oneSided {
			core.OrthantDraws(z[i0:i1], lo[i0:i1], tp[i0:i1], cc[i0:i1], lg[i0:i1], u[i0:i1])
		} else {
			for i := i0; i < i1; i++ {
				z[i] = core.TruncNormQuantile(lo[i], hi[i], u[i])
			}
		}
		// The normal numbers first, in the particles' order, so that the
		// loop below makes no call and its iterations overlap.
		var nzq []float64
		if rsd > 0 {
			nzq = nz[i0:i1]
			r.src.NormFloats(nzq)
		}
		if oneSided {
			ts.Moves(c[i0:i1], z[i0:i1], nzq, mu[i0:i1], mh[i0:i1], xk[i0:i1], corr[i0:i1])
		} else {
			r.boxMoves(i0, i1, xk)
		}
		hint(chunks + q)
	}
}

// boxWeights is step's weighting of particles i0 to i1 on a row with two
// bounds a and b (or none), from the step's constants in r.ts (Weights'
// arithmetic, and both bounds), returning their largest log weight.
func (r *runner) boxWeights(i0, i1 int, a, b float64) float64 {
	ts := &r.ts
	mh, c, lo, hi, logw, lg := r.mh, r.c, r.lo, r.hi, r.logw, r.lg
	mx := math.Inf(-1)
	for i := i0; i < i1; i++ {
		mhat := (ts.Eta - mh[i]) / ts.Ad
		ci := (mhat*ts.A2 - ts.Rnu) * ts.ILam
		c[i] = ci
		logw[i] += ts.HalfLam*ci*ci - 0.5*mhat*mhat*ts.A2
		mh[i] = mhat
		lo[i], hi[i] = (a-ci)*ts.ISw, (b-ci)*ts.ISw
		lg[i] = core.LogPhiDiff(lo[i], hi[i])
		logw[i] += lg[i]
		mx = max(mx, logw[i])
	}
	return mx
}

// boxMoves is step's moves of particles i0 to i1 on a row with two bounds
// (or none): TwistedStep.Moves' arithmetic (its constants in r.ts) on the
// draws z of w, x stored in xk.
func (r *runner) boxMoves(i0, i1 int, xk []float32) {
	ts := &r.ts
	c, z, nz, mu, mh, corr := r.c, r.z, r.nz, r.mu, r.mh, r.r
	for i := i0; i < i1; i++ {
		w := c[i] + ts.SSw*z[i]
		xi := c[i] + ts.Gain*(w-c[i])
		if ts.Rsd > 0 {
			xi += ts.Rsd * nz[i]
		}
		xk[i] = float32(xi)
		xi = float64(xk[i]) // the path's value
		dm, dh := xi-mu[i], xi-mh[i]
		corr[i] += -dm*dm/ts.TwoD + 0.5*dh*dh*ts.A2 - ts.HalfTau*xi*xi + ts.Nu*xi
	}
}

// stepRepeat weights the particles by row k's bound on the latent value
// of row dp, which it repeats (its conditional variance is 0), over row
// k's own site, which the proposal holds and no step has divided out.
func (r *runner) stepRepeat(k, dp int) {
	p, md, m := r.p, r.p.m, r.m
	sd := math.Sqrt(md.Noise)
	a, b := md.Lower[k], md.Upper[k]
	rtau, rnu := p.rtau[k], p.rnu[k]
	logw := r.logw[:m]
	mx := math.Inf(-1)
	for i, v32 := range r.x[dp*m : dp*m+m] {
		v := float64(v32)
		logw[i] += core.LogPhiDiff((a-v)/sd, (b-v)/sd) + (0.5*rtau*v-rnu)*v
		mx = max(mx, logw[i])
	}
	r.reweight(mx, k)
	// The row's latent values are its point's, as resampled.
	copy(r.x[k*m:k*m+m], r.x[dp*m:dp*m+m])
}

// reweight ends a step's weighting (mx: the largest log weight): the
// estimate grows by the log sum of the weights, the effective sample size
// is recorded, and the weights are normalized, or the particles resampled
// if it fell below the threshold. dead reports that every weight is 0.
func (r *runner) reweight(mx float64, k int) (resampled, dead bool) {
	m := r.m
	logw := r.logw[:m]
	if math.IsInf(mx, -1) || math.IsNaN(mx) {
		r.logZ = math.Inf(-1)
		return false, true
	}
	s1, s2 := core.ExpSums(logw, mx)
	inc := mx + math.Log(s1)
	r.logZ += inc
	for i := range logw {
		logw[i] -= inc
	}
	ess := s1 * s1 / s2 / float64(m)
	r.minES = math.Min(r.minES, ess)
	if ess >= r.ess {
		return false, false
	}
	idx := r.idx[:m]
	core.Systematic(idx, logw, r.src.Float64Open())
	r.reorder(idx, k)
	for i := range logw {
		logw[i] = -math.Log(float64(m))
	}
	r.res++
	return true, false
}

// reorder moves particle idx[i]'s state to slot i: its latent values
// before row k, its correction, the current step's per-particle values
// and its first ancestor.
func (r *runner) reorder(idx []int, k int) {
	m := r.m
	tmp := r.tmp[:m]
	perm := func(v []float64) {
		for i, j := range idx {
			tmp[i] = v[j]
		}
		copy(v, tmp)
	}
	tmp32 := r.tmp32[:m]
	for j := range k {
		x := r.x[j*m : j*m+m]
		for i, q := range idx {
			tmp32[i] = x[q]
		}
		copy(x, tmp32)
	}
	for _, v := range [][]float64{r.r, r.mu, r.mh, r.c, r.lo, r.hi, r.t, r.cc, r.lg} {
		perm(v[:m])
	}
	o := r.tmpI[:m]
	for i, j := range idx {
		o[i] = r.orig[j]
	}
	copy(r.orig[:m], o)
}

// finish applies each particle's correction to the model's target (the
// last step's weights times exp(r)), adds its log mean to the estimate,
// and sets the group's final normalized weights, test posteriors and
// kept paths.
func (r *runner) finish() {
	m, md := r.m, r.p.m
	logw, corr, w := r.logw[:m], r.r[:m], r.wfin[:m]
	mx := math.Inf(-1)
	for i := range m {
		w[i] = logw[i] + corr[i]
		mx = max(mx, w[i])
	}
	s1, s2 := core.ExpSums(w, mx)
	r.logZ += mx + math.Log(s1)
	r.minES = math.Min(r.minES, s1*s1/s2/float64(m))
	for i := range w {
		w[i] = math.Exp(w[i]-mx) / s1
	}
	r.off = testPosteriors(r.pg, md, 0, md.T, r.x, w, r.mu[:m], r.off)
	if d := r.p.Score; d != nil {
		r.sc = r.score(d, w)
	}
	r.keepPaths(r.g, w)
}

// ancestors counts the distinct first ancestors of the particles.
func (r *runner) ancestors() int {
	seen := r.seen[:r.m]
	clear(seen)
	d := 0
	for _, o := range r.orig[:r.m] {
		if !seen[o] {
			seen[o] = true
			d++
		}
	}
	return d
}

// nextOffsets is offsets in a second scratch slice, for the next step's
// rows.
func (r *runner) nextOffsets(nbr []int32) []int64 {
	r.noff = rowOffsets(r.noff, nbr, r.m)
	return r.noff
}

// offsets returns the offsets in x of the rows of positions nbr (the
// current group's rows, m values each), in a scratch slice reused by the
// next call.
func (r *runner) offsets(nbr []int32) []int64 {
	r.off = rowOffsets(r.off, nbr, r.m)
	return r.off
}
