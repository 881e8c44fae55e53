package core

import (
	"context"
	"math"
	"math/bits"
	"math/rand/v2"

	"github.com/gpc-mc/gpc/internal/gemm"
)

// filter propagates one group of particles through the variables of a
// Factor. It is reused from group to group by one worker; nothing in it
// allocates after init.
//
// Storage (DESIGN.md section 3). The particles' standardized draws z are an
// m x n row-major array; variables are processed in blocks of bs. At a
// block's start one matrix product gives every particle's partial
// conditional means over the earlier variables,
//
//	part[p][k] = sum_{j < i0} L[i0+k][j] z[p][j],
//
// and each step adds the few in-block terms: every subBlock steps a product
// brings the block's earlier draws into the next sub-block's partial means,
// and inside a sub-block the steps work on its partial means and draws
// transposed (pt, zt: one contiguous vector per step). Resampling inside a
// block moves only the block's own columns (zb, part, pt, zt) and an
// ancestor index anc; the stored rows of z are gathered once, in place, at
// the end of the block.
// Particle p stays in slot p throughout, so the random numbers each particle
// uses, and hence the result, do not depend on the block size (up to the
// rounding of the partial means).
type filter struct {
	f      *Factor
	method Method
	ess    float64 // resampling threshold, a fraction of m
	bs     int

	m    int
	z    []float64 // m x n, rows are the stored histories
	logw []float64 // normalized log weights: logsumexp(logw) = 0
	anc  []int     // anc[p]: the stored row that particle p's history is in
	orig []int     // orig[p]: the slot of particle p's ancestor at the first variable
	// part and zb are m x bs, stored by groups of 8 columns: column k of
	// particle p at [(k/8)*8m + 8p + k%8], so that a sub-block's values
	// are one contiguous m x 8 block (gemm.NTGrouped's layout).
	part []float64 // partial conditional means
	zb   []float64 // in-block draws
	pt   []float64 // subBlock x m: the sub-block's partial means, by step
	zt   []float64 // subBlock x m: the sub-block's draws, by step
	lo   []float64 // standardized lower bound of the current step, per particle
	hi   []float64 // standardized upper bound
	lg   []float64 // log incremental weight of the current step
	tp   []float64 // P(Z >= lo) of the current step (orthant variables)
	cp   []float64 // P(Z < lo)
	zk   []float64 // the current step's draws
	off  []float64 // MethodEP: the draw's offset, per particle

	// pending is set when logw carries a tilt correction not yet
	// normalized into logZ.
	pending bool

	// scratch
	idx   []int
	acc   []int
	tmpB  []float64 // m x bs
	tmpM  []float64
	tmpI  []int
	spare []float64 // one history row, for gather's cycles

	src  pcg        // the group's stream
	rng  *rand.Rand // src, for the draws outside drawUniforms
	gemm gemm.Workspace

	// results of the last run
	logZ      float64
	minESS    float64 // smallest ESS/m of the incremental weights met
	resamples int
	deadAt    int // the step at which every particle failed, or -1
}

// ancestors returns the number of distinct ancestors at the first variable
// of the particles of the last run: m without resampling, 1 when every
// history has coalesced onto one (path degeneracy).
func (fl *filter) ancestors() int {
	seen := fl.acc[:fl.m]
	clear(seen)
	d := 0
	for _, o := range fl.orig[:fl.m] {
		if seen[o] == 0 {
			seen[o] = 1
			d++
		}
	}
	return d
}

func newFilter(f *Factor, cfg *Config, maxM int) *filter {
	bs := min(cfg.BlockSize, f.N)
	var z []float64
	if !cfg.Keep { // else each group brings its own, to keep
		z = cfg.alloc(maxM * f.N)
	}
	fl := &filter{
		z: z,
		f: f, method: cfg.Method, ess: cfg.ESSThreshold, bs: bs,
		logw:  make([]float64, maxM),
		anc:   make([]int, maxM),
		orig:  make([]int, maxM),
		part:  make([]float64, maxM*((bs+7)&^7)),
		zb:    make([]float64, maxM*((bs+7)&^7)),
		pt:    make([]float64, maxM*subBlock),
		zt:    make([]float64, maxM*subBlock),
		lo:    make([]float64, maxM),
		hi:    make([]float64, maxM),
		lg:    make([]float64, maxM),
		tp:    make([]float64, maxM),
		cp:    make([]float64, maxM),
		zk:    make([]float64, maxM),
		off:   make([]float64, maxM),
		idx:   make([]int, maxM),
		acc:   make([]int, maxM),
		tmpB:  make([]float64, maxM*((bs+7)&^7)),
		tmpM:  make([]float64, maxM),
		tmpI:  make([]int, maxM),
		spare: make([]float64, f.N),
	}
	fl.rng = rand.New(&fl.src)
	return fl
}

// run propagates m particles with the random stream s (newPCG's) and
// leaves the estimate of log P in fl.logZ. progress, if not nil, is called
// with the particle-steps done after every block.
func (fl *filter) run(ctx context.Context, m int, s pcg, progress func(int64)) error {
	n, bs := fl.f.N, fl.bs
	fl.m, fl.src = m, s
	fl.logZ, fl.minESS, fl.resamples, fl.deadAt = 0, 1, 0, -1
	fl.pending = false
	logw := fl.logw[:m]
	for p := range logw {
		logw[p] = -math.Log(float64(m))
		fl.orig[p] = p
	}
	for i0 := 0; i0 < n; i0 += bs {
		if err := ctx.Err(); err != nil {
			return err
		}
		i1 := min(i0+bs, n)
		for p := range m {
			fl.anc[p] = p
		}
		part := fl.part[:m*((bs+7)&^7)]
		if i0 == 0 {
			clear(part)
		} else {
			// part (m x nb) = z[:, :i0] (m x i0) * L[i0:i1, :i0]' (i0 x nb)
			fl.gemm.NTGrouped(m, i1-i0, i0, fl.z, n, 8, fl.f.L[i0*n:], n, part, 8, 8*m, false, 1)
		}
		for i := i0; i < i1; i++ {
			if k := i - i0; k%subBlock == 0 {
				nb := min(subBlock, i1-i)
				if k > 0 {
					fl.storeSub(k-subBlock, subBlock)
					// The sub-block's partial means gain the block's earlier
					// draws: part[:, k:k+nb] += zb[:, :k] L[i:i+nb, i0:i]'.
					fl.gemm.NTGrouped(m, nb, k, fl.zb, 8, 8*m, fl.f.L[i*n+i0:], n, fl.part[k*m:], 8, 8*m, true, 1)
				}
				fl.loadSub(k, nb)
			}
			fl.step(i, i0)
			if math.IsInf(fl.logZ, -1) {
				fl.deadAt = i
				return nil
			}
		}
		last := (i1 - i0 - 1) / subBlock * subBlock
		fl.storeSub(last, i1-i0-last)
		fl.gather(i0, i1)
		if progress != nil {
			progress(int64(m) * int64(i1-i0))
		}
	}
	if fl.pending {
		inc := LogSumExp(logw)
		fl.logZ += inc
		for p := range logw {
			logw[p] -= inc
		}
		fl.pending = false
	}
	return nil
}

// subBlock is the number of steps between the products that bring the
// block's own draws into the partial means: inside a sub-block each step
// adds at most subBlock-1 terms per particle.
const subBlock = 8

// loadSub starts the sub-block of block columns [k0, k0+nb): its partial
// means, part[:, k0:k0+nb], are copied into pt, one contiguous vector per
// step, so that the steps read and write contiguous memory (pt and zt)
// rather than a line of each particle's rows.
func (fl *filter) loadSub(k0, nb int) {
	m := fl.m
	part := fl.part[k0*m : k0*m+8*m] // the sub-block's group
	p0 := 0
	if nb == subBlock && vec() != vecGeneric && haveAVX2 {
		if p0 = m &^ 3; p0 > 0 {
			_ = fl.pt[subBlock*m-1]
			subLoadAVX2(&fl.pt[0], &part[0], m, p0)
		}
	}
	for p := p0; p < m; p++ {
		for j, v := range part[p*8 : p*8+nb] {
			fl.pt[j*m+p] = v
		}
	}
}

// storeSub ends the sub-block of columns [k0, k0+nb): its draws, zt, go
// into zb[:, k0:k0+nb].
func (fl *filter) storeSub(k0, nb int) {
	m := fl.m
	zb := fl.zb[k0*m : k0*m+8*m]
	p0 := 0
	if nb == subBlock && vec() != vecGeneric && haveAVX2 {
		if p0 = m &^ 3; p0 > 0 {
			_ = fl.zt[subBlock*m-1]
			subStoreAVX2(&zb[0], &fl.zt[0], m, p0)
		}
	}
	for p := p0; p < m; p++ {
		row := zb[p*8 : p*8+nb]
		for j := range row {
			row[j] = fl.zt[j*m+p]
		}
	}
}

// condition computes, for every particle, the standardized bounds of
// variable i given its history, lo[p] = (A[i] - mu_p)/L[i][i] - shift and
// hi[p] likewise, with mu_p = part[p][k] + sum_{s <= j < i} L[i][j]
// zb[p][j-i0], where part already holds the terms before the sub-block
// start s (part and zb of the sub-block being in pt and zt).
func (fl *filter) condition(i, i0 int, shift float64) {
	n, m := fl.f.N, fl.m
	k := i - i0
	k0 := k - k%subBlock
	lrow := fl.f.L[i*n+i0+k0 : i*n+i]
	inv := 1 / fl.f.L[i*n+i]
	a, b := fl.f.A[i], fl.f.B[i]
	pt := fl.pt[(k-k0)*m : (k-k0)*m+m]
	lo, hi := fl.lo[:m], fl.hi[:m]
	p0 := 0
	if vec() != vecGeneric && haveAVX2 {
		if p0 = m &^ 3; p0 > 0 {
			var l0 *float64
			if len(lrow) > 0 {
				l0 = &lrow[0]
			}
			_ = fl.zt[subBlock*m-1]
			c := [4]float64{a, b, inv, shift}
			conditionAVX2(&c, &pt[0], &fl.zt[0], m, l0, len(lrow), &lo[0], &hi[0], p0)
		}
	}
	for p := p0; p < m; p++ {
		mu := pt[p]
		for j, l := range lrow {
			mu = math.FMA(l, fl.zt[j*m+p], mu)
		}
		lo[p] = float64((a-mu)*inv) - shift
		hi[p] = float64((b-mu)*inv) - shift
	}
}

// condMeans computes, for every particle, the conditional mean of variable
// i given its history in the filter's standardized form, mu[p] =
// sum_{j < i} L[i][j] z[p][j], as condition does.
func (fl *filter) condMeans(i, i0 int, mu []float64) {
	n, m := fl.f.N, fl.m
	k := i - i0
	k0 := k - k%subBlock
	lrow := fl.f.L[i*n+i0+k0 : i*n+i]
	pt := fl.pt[(k-k0)*m : (k-k0)*m+m]
	for p := range m {
		v := pt[p]
		for j, l := range lrow {
			v = math.FMA(l, fl.zt[j*m+p], v)
		}
		mu[p] = v
	}
}

// step advances every particle by variable i (block start i0).
func (fl *filter) step(i, i0 int) {
	if fl.method == MethodEP {
		fl.stepEP(i, i0)
		return
	}
	switch fl.method {
	case MethodSMC:
		fl.condition(i, i0, 0)
		fl.stepSMC(i-i0, i == 0, 0)
	case MethodMET:
		// The tilted proposal draws z - mu from the standard normal
		// truncated to the shifted interval.
		fl.condition(i, i0, fl.f.Mu[i])
		fl.stepSMC(i-i0, i == 0, fl.f.Mu[i])
	default:
		fl.condition(i, i0, 0)
		fl.stepPaper(i - i0)
	}
}

// stepSMC is one step of the fully adapted filter (Pitt and Shephard 1999):
// the incremental weight of a particle is the conditional probability of the
// variable's interval, g_p = Phi(hi_p) - Phi(lo_p), which does not depend on
// the new draw, so the filter reweights, resamples if the effective sample
// size fell below the threshold, and only then draws each particle's z from
// its conditional normal truncated to [lo_p, hi_p]: no draw is wasted.
// The normalizing-constant estimate grows by log sum_p W_p g_p.
//
// Orthant variables (hi = +Inf, the classifier's case) go through the batch
// kernels of fastnorm.go; boxes through LogPhiDiff and TruncNormQuantile.
func (fl *filter) stepSMC(k int, first bool, mu float64) {
	m := fl.m
	logw, lg, lo, hi := fl.logw[:m], fl.lg[:m], fl.lo[:m], fl.hi[:m]
	oneSided := math.IsInf(hi[0], 1) // the orthant case: every particle shares B[i] = +Inf
	var mx float64
	if oneSided {
		mx = tailWeights(lo, fl.tp, fl.cp, lg, logw)
	} else {
		mx = math.Inf(-1)
		for p := range m {
			lg[p] = LogPhiDiff(lo[p], hi[p])
			logw[p] += lg[p]
			mx = max(mx, logw[p])
		}
	}
	inc, resampled, dead := fl.reweight(mx, mu*mu/2)
	if dead {
		return
	}
	u := fl.tmpM[:m]
	idx := fl.idx[:m]
	drawUniforms(u, first, resampled, idx, &fl.src)
	zk := fl.zk[:m]
	if oneSided {
		tailDraws(zk, lo, fl.tp, fl.cp, lg, u)
	} else {
		for p := range m {
			zk[p] = TruncNormQuantile(lo[p], hi[p], u[p])
		}
	}
	// Store the draws and normalize the weights; with a tilt, the rest of
	// the tilted weight, phi(z)/phi(z - mu) = exp(mu^2/2 - mu z), depends on
	// the draw (its mu^2/2 went into logZ above), and its normalization is
	// left to the next step's sum (or the run's end).
	smcStore(fl.zt[k%subBlock*m:k%subBlock*m+m], zk, logw, mu, inc)
	fl.pending = mu != 0
}

// smcStore ends a step of stepSMC: each particle's draw, shifted by mu, is
// stored in zt, and its log weight normalized by inc and, with a tilt (mu
// not 0), given the rest of the tilted weight, -mu z (the product rounded,
// then the difference).
func smcStore(zt, zk, logw []float64, mu, inc float64) {
	m := len(zk)
	zt, logw = zt[:m], logw[:m]
	p0 := 0
	if vec() != vecGeneric && haveAVX2 {
		if p0 = m &^ 3; p0 > 0 {
			smcStoreAVX2(&zt[0], &zk[0], &logw[0], mu, inc, p0)
		}
	}
	for p := p0; p < m; p++ {
		z := zk[p] + mu
		zt[p] = z
		logw[p] -= inc
		if mu != 0 {
			logw[p] -= float64(mu * z)
		}
	}
}

// reweight ends the weighting half of a step, after the step's log
// incremental weights were added to logw (mx: the largest logw): the
// estimate of log P grows by inc, the log of their sum (the weights came in
// normalized but for the previous step's tilt correction, so inc is this
// step's increment plus that correction's), plus extra; the effective
// sample size is recorded, and the particles are resampled if it fell below
// the threshold, which normalizes the weights and returns inc = 0; else
// the weights are left for the caller to normalize by inc (in its draws'
// loop). dead reports that every weight is zero.
func (fl *filter) reweight(mx, extra float64) (inc float64, resampled, dead bool) {
	m := fl.m
	logw := fl.logw[:m]
	inc = mx
	var s1, s2 float64
	if !math.IsInf(mx, -1) {
		s1, s2 = expSums(logw, mx)
		inc += math.Log(s1)
	}
	fl.logZ += inc + extra
	fl.pending = false
	if math.IsInf(inc, -1) {
		return inc, false, true
	}
	ess := s1 * s1 / s2 / float64(m)
	fl.minESS = math.Min(fl.minESS, ess)
	if ess < fl.ess {
		for p := range logw {
			logw[p] -= inc
		}
		fl.resample()
		return 0, true, false // the weights are now equal and normalized
	}
	return inc, false, false
}

// LatinBlock is the size of the blocks of consecutive particles whose
// uniforms drawUniforms makes Latin. Measured on the paper's Experiment 1
// (one-factor covariances, N = 200 and 500, M = 10^4, OrderSharp): standard
// errors 2.3x smaller than independent uniforms with blocks of 16, against
// 1.4x with 2, 1.8x with 4 and 1.5x with 64.
const LatinBlock = 16

// drawUniforms fills u with the uniforms of one step's draws. Each u[p] is
// uniform on (0, 1) given the past, so that every particle draws from its
// own conditional distribution and the estimate of P stays unbiased; but
// they are not independent:
//
//   - a run of particles whose histories are identical (all of them at the
//     first variable, first; and the copies of one ancestor right after a
//     resampling, which systematic resampling puts side by side: resampled,
//     with idx[p] == idx[p-1]) gets stratified uniforms,
//     u_j = (j + V_j)/k for its k members, with V_j independent uniforms;
//   - the other particles, in blocks of up to LatinBlock consecutive ones,
//     get Latin uniforms u_j = (pi(j) + V_j)/k with pi a random permutation
//     (which makes each u_j uniform). Particles in neighbouring slots
//     descend from neighbouring strata and tend to be alike, so a block's
//     draws cover the distribution instead of clumping.
//
// The numbers come from s in a fixed order, run by run and block by block:
// a block's permutation before its V_j, each V_j uniformOpen's. The
// permutation of a block of k >= 2 takes one number (and another in the
// rare case that it is rejected): Fisher and Yates' shuffle whose k - 1
// indices, i_j uniform on [0, j] for j = k-1 down to 1, are the
// mixed-radix digits of a number uniform on [0, k!), drawn from one
// 64-bit number x by Lemire's multiply-and-reject (x k! / 2^64, x
// rejected when x k! mod 2^64 < 2^64 mod k!), the digits taken by
// successive products with k, k-1, ..., 2 (latinPerm). A shuffle by
// IntN's algorithm, one number an index, took k - 1 numbers (a step of
// 31250 particles without resampling: 4.5 ns a uniform, against 2.5
// with this shuffle and 2.0 for the stratified uniforms,
// BenchmarkDrawUniforms); each index is as uniform and independent
// either way. Where AVX-512 runs, a step's full blocks take their numbers
// eight at a time from the generator's vector path (latinBlocks): 1.9 ns
// a uniform against 2.5 (m = 31250), 2.1 against 2.8 (m = 300).
//
// References: D. Lemire (2019), "Fast random integer generation in an
// interval", ACM Transactions on Modeling and Computer Simulation 29:1-12;
// N. Brackett-Rozinsky and D. Lemire (2025), "Batched ranged random
// integer generation", Software: Practice and Experience 55:155-169.
func drawUniforms(u []float64, first, resampled bool, idx []int, s *pcg) {
	m := len(u)
	g := *s
	switch {
	case first:
		g = stratified(u, g)
	case !resampled:
		p := 0
		for p+2*LatinBlock <= m {
			n, h := latinBlocks(u[p:], g)
			if n == 0 {
				break
			}
			p, g = p+n, h
		}
		for ; p+2*LatinBlock <= m; p += 2 * LatinBlock {
			g = latinTwo(u[p:p+2*LatinBlock], g)
		}
		for ; p < m; p += LatinBlock {
			g = latin(u[p:min(p+LatinBlock, m)], g)
		}
	default:
		idx = idx[:m]
		for p := 0; p < m; {
			q := p + 1
			for q < m && idx[q] == idx[q-1] {
				q++
			}
			if q-p > 1 {
				g = stratified(u[p:q], g)
				p = q
				continue
			}
			for q < m && q-p < LatinBlock && !(q+1 < m && idx[q+1] == idx[q]) {
				q++
			}
			g = latin(u[p:q], g)
			p = q
		}
	}
	*s = g
}

// stratified fills u with the stratified uniforms (j + V_j)/k, k = len(u),
// from g, and returns the state after them. It takes the V_j from two
// streams a step apart (pcg.next2).
func stratified(u []float64, g pcg) pcg {
	m := len(u)
	if m == 0 {
		return g
	}
	k := float64(m)
	a, x := g.next()
	u[0] = openUnit(x) / k
	if m == 1 {
		return a
	}
	b, y := a.next()
	u[1] = (1 + openUnit(y)) / k
	j := 2
	for ; j+1 < m; j += 2 {
		a, x = a.next2()
		b, y = b.next2()
		u[j] = (float64(j) + openUnit(x)) / k
		u[j+1] = (float64(j+1) + openUnit(y)) / k
	}
	if j < m {
		a, x = a.next2()
		u[j] = (float64(j) + openUnit(x)) / k
		return a
	}
	return b
}

// latin fills u, 0 < len(u) <= LatinBlock, with the Latin uniforms
// (pi(j) + V_j)/k, k = len(u), from g, and returns the state after them:
// pi from the first number (latinPerm; a block of one has none), the V_j
// from the next k. When latinPerm rejects the number (with a probability
// below k!/2^64, 1.2e-6 for a full block), latinInOrder draws the block
// again, taking another.
func latin(u []float64, g pcg) pcg {
	k := len(u)
	if k == LatinBlock {
		return latinFull(u, g)
	}
	pi := latinIdentity // float64(pi(j)), as the sums need it
	s, x := g, uint64(0)
	if k > 1 {
		s, x = g.next()
		if !latinPerm(&pi, k, x) {
			return latinInOrder(u, g)
		}
	}
	d := float64(k)
	for j := range u {
		s, x = s.next()
		u[j] = (pi[j] + openUnit(x)) / d
	}
	return s
}

// latinFull is latin for a full block, the usual one: the V_j by pairs
// from two streams a step apart (pcg.next2), the even ones from g's and
// the odd ones from that of the state after the permutation's number. The
// division by the constant LatinBlock, a power of two, is exact and
// compiles to a product.
func latinFull(u []float64, g pcg) pcg {
	pi := latinIdentity
	odd, x := g.next()
	if !latinPerm(&pi, LatinBlock, x) {
		return latinInOrder(u, g)
	}
	even := g
	u = u[:LatinBlock]
	for j := 0; j < LatinBlock; j += 2 {
		var y uint64
		even, x = even.next2()
		odd, y = odd.next2()
		u[j] = (pi[j] + openUnit(x)) / LatinBlock
		u[j+1] = (pi[j+1] + openUnit(y)) / LatinBlock
	}
	return odd
}

// latinTwo is latinFull on two blocks at once, u[:LatinBlock] from g and
// u[LatinBlock:] from the state after the first block's numbers (g after
// latinSpan steps), their shuffles and draws interleaved so that the
// core overlaps them (each shuffle is a chain of dependent products and
// swaps). If either permutation's number is rejected, the blocks are
// drawn one after the other by latinFull, as the stream's order has it.
func latinTwo(u []float64, g pcg) pcg {
	h := g.jump(latinJump)
	oddA, x := g.next()
	oddB, y := h.next()
	_, lx := bits.Mul64(x, latinFactorial[LatinBlock])
	_, ly := bits.Mul64(y, latinFactorial[LatinBlock])
	if lx < latinReject[LatinBlock] || ly < latinReject[LatinBlock] {
		return latinFull(u[LatinBlock:], latinFull(u[:LatinBlock], g))
	}
	pa, pb := latinIdentity, latinIdentity
	latinShuffles(&pa, &pb, x, y)
	a, b := u[:LatinBlock], u[LatinBlock:2*LatinBlock]
	evenA, evenB := g, h
	for j := 0; j < LatinBlock; j += 2 {
		var xa, ya, xb, yb uint64
		evenA, xa = evenA.next2()
		oddA, ya = oddA.next2()
		evenB, xb = evenB.next2()
		oddB, yb = oddB.next2()
		a[j] = (pa[j] + openUnit(xa)) / LatinBlock
		a[j+1] = (pa[j+1] + openUnit(ya)) / LatinBlock
		b[j] = (pb[j] + openUnit(xb)) / LatinBlock
		b[j+1] = (pb[j+1] + openUnit(yb)) / LatinBlock
	}
	return oddB
}

// latinVecBlocks is the most blocks latinBlocks draws at once.
const latinVecBlocks = 40

// latinBlocks draws u's full blocks, at least two and at most
// latinVecBlocks, as latinFull and latinTwo do, their numbers taken at
// once from the generator's vector path (pcgOutputs: eight outputs a
// step, where the scalar generator's dependent steps set the pace of
// latinTwo), and returns the uniforms drawn and the state after them:
// every block's, or those before the first block whose permutation's
// number is rejected (with a probability of 1.2e-6 a block), which the
// caller then draws from the state returned. It draws none where the
// vector path does not run.
func latinBlocks(u []float64, g pcg) (int, pcg) {
	nb := min(len(u)/LatinBlock, latinVecBlocks)
	var buf [latinVecBlocks*latinSpan + 7]uint64
	s := g
	if nb < 2 || !pcgOutputs(&s, buf[:], nb*latinSpan) {
		return 0, g
	}
	at := func(b int) []uint64 { return buf[b*latinSpan : (b+1)*latinSpan] }
	for b := 0; b < nb; b += 2 {
		ok := false
		if b+1 < nb {
			ok = latinPair(u[b*LatinBlock:(b+2)*LatinBlock], at(b), at(b+1))
		} else {
			pi := latinIdentity
			if ok = latinPerm(&pi, LatinBlock, at(b)[0]); ok {
				v, w := at(b)[1:], u[b*LatinBlock:(b+1)*LatinBlock]
				for j := range LatinBlock {
					w[j] = (pi[j] + openUnit(v[j])) / LatinBlock
				}
			}
		}
		if !ok {
			return b * LatinBlock, g.jump(jumpOf(b * latinSpan))
		}
	}
	return nb * LatinBlock, s
}

// latinPair is latinTwo's two blocks from their numbers xa and xb
// (latinSpan each: the permutation's, then the V_j), reporting false,
// with u untouched, if either permutation's number is rejected.
func latinPair(u []float64, xa, xb []uint64) bool {
	x, y := xa[0], xb[0]
	_, lx := bits.Mul64(x, latinFactorial[LatinBlock])
	_, ly := bits.Mul64(y, latinFactorial[LatinBlock])
	if lx < latinReject[LatinBlock] || ly < latinReject[LatinBlock] {
		return false
	}
	pa, pb := latinIdentity, latinIdentity
	latinShuffles(&pa, &pb, x, y)
	a, b := u[:LatinBlock], u[LatinBlock:2*LatinBlock]
	va, vb := xa[1:latinSpan], xb[1:latinSpan]
	for j := range LatinBlock {
		a[j] = (pa[j] + openUnit(va[j])) / LatinBlock
		b[j] = (pb[j] + openUnit(vb[j])) / LatinBlock
	}
	return true
}

// latinShuffles shuffles pa and pb (the identity) by the permutations
// of two full blocks whose numbers x and y were both accepted
// (latinPerm's digits), the two chains of products and swaps interleaved
// so that the core overlaps them.
func latinShuffles(pa, pb *[LatinBlock]float64, x, y uint64) {
	const mask = LatinBlock - 1
	for j := uint64(mask); j > 0; j-- {
		var i, k uint64
		i, x = bits.Mul64(x, j+1)
		k, y = bits.Mul64(y, j+1)
		i &= mask
		pa[i], pa[j] = pa[j], pa[i]
		k &= mask
		pb[k], pb[j] = pb[j], pb[k]
	}
}

// latinSpan is the numbers of a full block whose permutation's number is
// not rejected, and latinJump the map of that many steps.
const latinSpan = LatinBlock + 1

var latinJump = jumpOf(latinSpan)

// latinIdentity is the identity permutation of a block, in float64.
var latinIdentity = func() (pi [LatinBlock]float64) {
	for j := range pi {
		pi[j] = float64(j)
	}
	return pi
}()

// latinFactorial[k] is k!, and latinReject[k] 2^64 mod k!, the numbers
// below which latinPerm rejects x k! mod 2^64.
var latinFactorial, latinReject = func() (f, r [LatinBlock + 1]uint64) {
	f[0] = 1
	for k := 1; k <= LatinBlock; k++ {
		f[k] = f[k-1] * uint64(k)
		r[k] = -f[k] % f[k]
	}
	return f, r
}()

// latinPerm shuffles pi[:k] (2 <= k <= LatinBlock, pi the identity) by
// Fisher and Yates with the indices i_j in [0, j], j = k-1 down to 1, that
// the number x gives: the high words of x k, then of the low word times
// k-1, and so on, which are the mixed-radix digits of floor(x k! / 2^64),
// uniform on [0, k!) unless x k! mod 2^64 < 2^64 mod k!, when it returns
// false and leaves pi alone (Lemire's rejection; Brackett-Rozinsky and
// Lemire's batched digits).
func latinPerm(pi *[LatinBlock]float64, k int, x uint64) bool {
	if _, lo := bits.Mul64(x, latinFactorial[k]); lo < latinReject[k] {
		return false
	}
	for j := k - 1; j > 0; j-- {
		var i uint64
		i, x = bits.Mul64(x, uint64(j+1))
		pi[i&(LatinBlock-1)], pi[j] = pi[j], pi[i&(LatinBlock-1)]
	}
	return true
}

// latinInOrder is latin with the numbers taken one at a time: the
// permutation's until one is not rejected, then the V_j.
func latinInOrder(u []float64, g pcg) pcg {
	k := len(u)
	pi := latinIdentity
	var x uint64
	for k > 1 {
		g, x = g.next()
		if latinPerm(&pi, k, x) {
			break
		}
	}
	for j := range u {
		g, x = g.next()
		u[j] = (pi[j] + openUnit(x)) / float64(k)
	}
	return g
}

// resample draws m ancestors by systematic resampling (Carpenter, Clifford
// and Fearnhead 1999) from the normalized weights and moves the per-particle
// state of the current block to them: ancestor index, partial means, in-block
// draws, this step's bounds.
func (fl *filter) resample() {
	m := fl.m
	logw := fl.logw[:m]
	idx := fl.idx[:m]
	Systematic(idx, logw, uniformOpen(fl.rng))
	fl.reorder(idx)
	for p := range logw {
		logw[p] = -math.Log(float64(m))
	}
	fl.resamples++
}

// reorder replaces particle p's block state by that of particle idx[p].
func (fl *filter) reorder(idx []int) {
	m, bs := fl.m, fl.bs
	tmpI := fl.tmpI[:m]
	for _, a := range [][]int{fl.anc, fl.orig} {
		for p, j := range idx {
			tmpI[p] = a[j]
		}
		copy(a, tmpI)
	}
	vecs := [][]float64{fl.lo, fl.hi, fl.lg, fl.tp, fl.cp, fl.off}
	for j := range subBlock {
		vecs = append(vecs, fl.pt[j*m:j*m+m], fl.zt[j*m:j*m+m])
	}
	for _, s := range vecs {
		t := fl.tmpM[:m]
		for p, j := range idx {
			t[p] = s[j]
		}
		copy(s, t)
	}
	for _, s := range [][]float64{fl.part, fl.zb} {
		size := m * ((bs + 7) &^ 7) // whole groups of 8 columns
		t := fl.tmpB[:size]
		for g := 0; g < size; g += 8 * m {
			for p, j := range idx {
				copy(t[g+p*8:g+p*8+8], s[g+j*8:g+j*8+8])
			}
		}
		copy(s[:size], t)
	}
}

// stepPaper is one step of the paper's Algorithm GPC-MC (section 5.7): every
// particle draws its variable from the unconstrained conditional normal; the
// draws outside [A[i], B[i]] are rejected and their slots refilled by
// sampling with replacement from the accepted ones. The estimate grows by
// the log acceptance fraction (paper-hard, eq. FRAC-VI) or by the log mean
// conditional probability of the interval before the draw (paper-soft, the
// soft count of eq. RATIO-MS-2).
func (fl *filter) stepPaper(k int) {
	m := fl.m
	lo, hi, lg := fl.lo[:m], fl.hi[:m], fl.lg[:m]
	if fl.method == MethodPaperSoft {
		for p := range m {
			lg[p] = LogPhiDiff(lo[p], hi[p])
		}
	}
	acc := fl.acc[:0] // accepted particles
	for p := range m {
		x := fl.rng.NormFloat64()
		fl.zt[k%subBlock*m+p] = x
		if lo[p] <= x && x <= hi[p] {
			acc = append(acc, p)
		}
	}
	frac := float64(len(acc)) / float64(m)
	fl.minESS = math.Min(fl.minESS, frac)
	if len(acc) == 0 {
		fl.logZ = math.Inf(-1)
		return
	}
	if fl.method == MethodPaperSoft {
		fl.logZ += LogSumExp(lg) - math.Log(float64(m))
	} else {
		fl.logZ += math.Log(frac)
	}
	if len(acc) == m {
		return
	}
	// Refill the rejected slots from the accepted ones, keeping the accepted
	// particles in place (the paper's step 2(c)).
	idx := fl.idx[:m]
	for p := range idx {
		idx[p] = -1
	}
	for _, p := range acc {
		idx[p] = p
	}
	for p := range idx {
		if idx[p] < 0 {
			idx[p] = acc[fl.rng.IntN(len(acc))]
		}
	}
	fl.reorder(idx)
	fl.resamples++
}

// gather ends block [i0, i1): in place, row p of z receives the history of
// particle p (row anc[p] as it was at the block's start) and the block's
// draws, so that particles keep their slots and the result is the same as
// copying rows at every resampling step.
//
// Row r may be overwritten once no pending copy still reads it: reads[r]
// counts the pending copies from r. A worklist holds the pending rows that
// nobody reads any more; each copy may free its source. What is left when
// the worklist empties is a permutation of pending rows (each read exactly
// once), whose cycles are rotated through one spare row.
func (fl *filter) gather(i0, i1 int) {
	n, m := fl.f.N, fl.m
	anc := fl.anc[:m]
	if i0 > 0 {
		reads := fl.tmpI[:m]
		clear(reads)
		moved := false
		for p, a := range anc {
			if a != p {
				reads[a]++
				moved = true
			}
		}
		if moved {
			row := func(r int) []float64 { return fl.z[r*n : r*n+i0] }
			work := fl.idx[:0]
			for p, a := range anc {
				if a != p && reads[p] == 0 {
					work = append(work, p)
				}
			}
			for len(work) > 0 {
				p := work[len(work)-1]
				work = work[:len(work)-1]
				a := anc[p]
				copy(row(p), row(a))
				anc[p] = p
				if reads[a]--; reads[a] == 0 && anc[a] != a {
					work = append(work, a)
				}
			}
			spare := fl.spare[:i0]
			for p := range anc {
				if anc[p] == p {
					continue
				}
				copy(spare, row(p))
				q := p
				for anc[q] != p {
					a := anc[q]
					copy(row(q), row(a))
					anc[q] = q
					q = a
				}
				copy(row(q), spare)
				anc[q] = q
			}
		}
	}
	nb := i1 - i0
	for p := range m {
		for k := 0; k < nb; k += 8 {
			copy(fl.z[p*n+i0+k:p*n+min(i1, i0+k+8)], fl.zb[k*m+p*8:k*m+p*8+8])
		}
	}
}
