package vecchia

import (
	"math"

	"github.com/gpc-mc/gpc/core"
	"gonum.org/v1/gonum/mat"
)

// The block's marginal, corrected (docs/vecchia.md, Calibration: "The
// block's marginal, corrected"). The incomplete factor T of P = A'A +
// diag(tau) drops the fill that the later rows' elimination leaves on the
// dense block, so q's marginal of the block's variables, precision
// T_B'T_B (T_B the block's rows), is not P's. Whitened by T (y = T(x -
// mu), N(0, I) under q), the model's Gaussian part has precision L =
// T^-T P T^-1, and the correction r = -y'(L - I)y/2 + const has variance
// ||L - I||_F^2 / 2 under q. Measured on the two-dimensional classifier
// (m = 30), that variance lies almost all in a few hundred directions on
// the block's rows: at N = 10^5 the 150 leading eigenvectors of L - I hold
// 97 % of it and 99.5 % of their mass is in the block's 1000 rows, and at
// 10^6 (variance 15.9) 200 Lanczos vectors hold 14.8 of it.
//
// correctBlock therefore runs block Lanczos on F = E'(L - I)E, E the
// block's regular rows (a product is a forward solve, a product with P and
// a backward solve on all N rows, batchSides of them at once; the Lanczos
// vectors have the block's nb values and are reorthogonalized in full),
// and gives y_B the precision I + Q H Q' (Q the Lanczos vectors, H =
// Q'FQ): the block's rows of L on the Krylov space and q's identity off
// it, so the block's new marginal precision is T_B'(I + Q H Q')T_B,
// factored in T's block rows. The later rows' conditionals given the block
// are q's, and q's mean stays mu, so the estimate is as unbiased as before
// (r is computed from the new factor); only its variance changes: 0.99 ->
// 0.013 at N = 10^5 and 15 -> 1.05 at 10^6. EP's last correctedRounds
// rounds see the same correction of the block's prior given the later
// sites (parallelEP.correctLambda), so that the block's sites are fitted
// to the marginals the proposal has.

// correctBlocks turns the correction on (Prepare and EP's last rounds);
// tests turn it off to compare.
var correctBlocks = true

// correctMin is the correction variance Var_q(r) of the incomplete factor
// above which EP's last rounds and the proposal correct the block
// (parallelEP.corrected): below it r's spread leaves a group of 156
// particles an effective size of 20 or more (e^-2), and the twisted
// weights, not r, set the groups' spread (docs/vecchia.md: at N = 10^5,
// variance 0.94, and 3 x 10^5, 1.84, 64 groups agree without it). Tests
// lower it.
var correctMin = 2.0

// batchCorrectionVariance is Prepared.CorrectionVariance's Hutchinson
// estimate of ||L - I||_F^2 / 2 and its standard error from probes
// Rademacher probes drawn from correctionSeed's streams, their products
// batchSides at a time on every core (batchApply), for t the factor of P
// = A'A + diag(tau), A the model m's prior factor.
func batchCorrectionVariance(t *tri, probes int, m *Model, tau []float64) (v, se float64) {
	var reg []int
	for k := range t.n {
		if !t.dup[k] {
			reg = append(reg, k)
		}
	}
	z, dst := make([][]float64, probes), make([][]float64, probes)
	for i := range z {
		g := core.GroupStream(correctionSeed, i)
		z[i], dst[i] = make([]float64, len(reg)), make([]float64, len(reg))
		for j := range z[i] {
			z[i][j] = 1
			if g.Float64Open() < 0.5 {
				z[i][j] = -1
			}
		}
	}
	batchApply(t, reg, m, tau, newBatchWorkers(), dst, z)
	vals := make([]float64, probes)
	for i, d := range dst {
		vals[i] = dot(d, d) / 2
		v += vals[i]
	}
	v /= float64(probes)
	if probes > 1 {
		ss := 0.0
		for _, x := range vals {
			ss += (x - v) * (x - v)
		}
		se = math.Sqrt(ss / float64(probes-1) / float64(probes))
	}
	return v, se
}

// blockIters is the number of Lanczos vectors blockDelta builds from
// nothing (fewer when the block has fewer regular rows).
const blockIters = 384

// epIters is the number of Lanczos vectors of EP's correction
// (parallelEP.correctLambda), which the proposal's refines on
// refineIters more (correctBlock). Split 192 and 192 they leave r the
// variance that 384 and 128 leave, on a third fewer products: at N =
// 10^6 (benchClassifier's model, m = 30, a block of 1616) 1.368 (se
// 0.028) against 1.354 (se 0.028), and 192 and 128 left 1.436. More
// vectors do not lower it: 384 and 128 and then 384 more left 1.351.
// The variance left is not in the block's own rows but in their
// products with the rows after it (docs/vecchia.md, Calibration: "Where
// the variance left lives").
const epIters = 192

// refineIters is the number of Lanczos vectors that refine EP's
// correction on the proposal's factor (correctBlock, epIters above). At
// N = 10^6 on the docs' two-class problem (m = 30) 64 of them after EP's
// 384 left r a variance of 1.13 (se 0.029) and 128 left 1.05 (se 0.031), a
// correction from nothing's. Tests change it.
var refineIters = 192

// blockSeed is the random stream of blockDelta's starting vectors.
const blockSeed = 0x626c6f636b

// correctBlock corrects the marginal of the dense block's variables in
// t, the proposal's factor of A'A + diag(p.tau) (see above). ep is the
// correction that EP's corrected rounds computed (nil if none): it is the
// precision that the incomplete elimination of the later rows drops from
// the block's marginal, so it depends on the later rows' sites, not the
// block's, and EP's last rounds reuse it (parallelEP.correctLambda). The
// proposal's later sites differ from that round's by two rounds' updates
// and by widenSites, which moves r's variance with ep alone from 1.05 to
// 2.36 at N = 10^6 (docs/vecchia.md, Calibration), so correctBlock
// applies ep and then corrects what it leaves with refineIters more
// Lanczos vectors on the corrected factor, half a correction from
// nothing. Without ep it corrects from nothing (blockIters vectors).
// Any block precision leaves the estimate unbiased (r is computed from
// the new factor); only r's variance depends on it. It leaves t as it
// was and reports false where the corrected block's factorisation would
// need a shift or leave a row's site beyond maxSiteShare of its
// precision (after ep is applied, a refinement that would is skipped).
func (p *Prepared) correctBlock(t *tri, ep *blockCorrection) bool {
	if ep == nil {
		c, ok := blockDelta(t, p.Block, p.m, p.tau, blockIters)
		if !ok || !p.applyCorrection(t, c) {
			return false
		}
		p.blockVectors = c.vectors
		return true
	}
	if !p.applyCorrection(t, ep) {
		return false
	}
	p.blockVectors = ep.vectors
	if c, ok := blockDelta(t, p.Block, p.m, p.tau, refineIters); ok && p.applyCorrection(t, c) {
		p.refineVectors = c.vectors
	}
	return true
}

// applyCorrection gives the block's marginal precision T_B'T_B in t the
// correction c, refactoring t's block rows. It leaves t as it was and
// reports false where the new block's factorisation would need a shift
// beyond maxCorrectionShift or leave a row's site beyond maxSiteShare of
// its precision.
func (p *Prepared) applyCorrection(t *tri, c *blockCorrection) bool {
	reg := c.reg
	nb := len(reg)
	prec := mat.NewSymDense(nb, nil)
	prec.SymOuterK(1, blockFactor(t, reg)) // T_B'T_B
	prec.AddSym(prec, c.delta)
	// The new block, in t's block rows (each row every earlier regular
	// column, in order), factored; the old kept to restore.
	b := p.Block
	oldD, oldO := append([]float64(nil), t.diag[:b]...), append([]float64(nil), t.off[:t.start[b]]...)
	pd, po := make([]float64, b), make([]float64, t.start[b])
	for i, k := range reg {
		pd[k] = prec.At(i, i)
		for j := range i {
			po[t.start[k]+j] = prec.At(i, j)
		}
	}
	_, err := t.factorShifted(pd, po, 0, b, maxCorrectionShift)
	ok := err == nil
	for _, k := range reg {
		if !ok {
			break
		}
		ok = p.tau[k] <= maxSiteShare*t.diag[k]*t.diag[k]
	}
	if !ok {
		t.stale()
		copy(t.diag, oldD)
		copy(t.off, oldO)
	}
	return ok
}

// maxCorrectionShift is the largest relative raise of the corrected
// block's diagonal that applyCorrection takes. Its Lanczos directions
// can leave the corrected precision short of positive definite by a
// rounding's share: at N = 10^6 (the docs' two-class problem, m = 30)
// a proposal from EP's sites after five rounds (a scratch build) needed
// 1e-5 for EP's correction, and without it the block went uncorrected,
// r's variance 15.2 instead of 1.25 and the error bar not reliable. Any
// factor gives an exact estimate (r is computed from the factor as it
// is); a raise of 1e-5 moves the block's marginal by that share.
const maxCorrectionShift = 1e-4

// blockCorrection is blockDelta's correction of the block's marginal
// precision: delta (nb x nb) on the block's regular rows reg, from
// vectors Lanczos vectors.
type blockCorrection struct {
	reg     []int
	delta   *mat.SymDense
	vectors int
}

// blockDelta returns the correction delta = T_B'Q H Q'T_B (nb x nb, by
// the block's regular rows) that at most k Lanczos vectors Q of F = E'(L
// - I)E give the block's marginal precision T_B'T_B, for t the factor of
// P = A'A + diag(tau) (A the model m's prior factor) and a dense block of
// the first block rows. ok is false where the block is too small to
// correct or the iteration failed.
func blockDelta(t *tri, block int, m *Model, tau []float64, k int) (c *blockCorrection, ok bool) {
	var reg []int
	for k := range block {
		if !t.dup[k] {
			reg = append(reg, k)
		}
	}
	nb, n := len(reg), t.n
	kmax := min(k, nb)
	if kmax < 2 || block >= n {
		return nil, false
	}
	ws := newBatchWorkers()
	qm, h := blockLanczos(func(dst, v [][]float64) { batchApply(t, reg, m, tau, ws, dst, v) }, nb, blockWidth, kmax)
	kk := h.SymmetricDim()
	// H = U diag(theta) U', and W = T_B' Q U: delta = W diag(theta) W'.
	var es mat.EigenSym
	if !es.Factorize(h, true) {
		return nil, false
	}
	theta := es.Values(nil)
	var uv, qu, wm mat.Dense
	es.VectorsTo(&uv)
	qu.Mul(qm, &uv)
	wm.Mul(blockFactor(t, reg), &qu)
	plus, minus := mat.NewDense(nb, kk, nil), mat.NewDense(nb, kk, nil)
	for j, th := range theta {
		s, dst := math.Sqrt(math.Abs(th)), plus
		if th < 0 {
			dst = minus
		}
		for i := range nb {
			dst.Set(i, j, wm.At(i, j)*s)
		}
	}
	delta := mat.NewSymDense(nb, nil)
	delta.SymOuterK(1, plus)
	delta.SymRankK(delta, -1, minus)
	return &blockCorrection{reg: reg, delta: delta, vectors: kk}, true
}

// blockFactor returns T_B', the transpose of t's block rows reg (dense
// lower-triangular over the regular rows), as a dense upper-triangular
// matrix.
func blockFactor(t *tri, reg []int) *mat.Dense {
	nb := len(reg)
	d := make([]float64, nb*nb)
	for i, k := range reg {
		d[i*nb+i] = t.diag[k]
		for j := range i {
			d[j*nb+i] = t.off[t.start[k]+j]
		}
	}
	return mat.NewDense(nb, nb, d)
}

// blockWidth is the number of vectors blockLanczos applies the operator
// to at once: a batch for each of two threads. A wider block takes fewer
// Lanczos steps to the same vectors; at 32 (batchSides 16, float32
// batches) the proposal's deferred correction at N = 10^6 (the docs'
// two-class problem, m = 30, 192 and 192 vectors) kept a variance of 1.11
// (se 0.031), against 1.07 (se 0.03) at 16 with float64 batches.
const blockWidth = 2 * batchSides

// blockLanczos runs the block Lanczos iteration on the symmetric operator
// apply (dst[i] = F v[i] for each vector, n values each) from s fixed
// random vectors, each new block reorthogonalized in full (twice) against
// the earlier vectors, until the space holds k vectors or is exhausted. It
// returns the space's orthonormal basis Q (n x kk) and the Rayleigh
// quotient H = Q'FQ, symmetrized, from the operator's products with the
// basis (so exact for that basis, whatever the rounding of the
// orthogonalisation).
func blockLanczos(apply func(dst, v [][]float64), n, s, k int) (*mat.Dense, *mat.SymDense) {
	var basis, fv [][]float64
	v := make([][]float64, 0, s)
	for j := range s {
		g := core.GroupStream(blockSeed, j)
		x := make([]float64, n)
		for i := range x {
			x[i] = g.Float64Open() - 0.5
		}
		v = append(v, x)
	}
	v = orthonormalize(v, nil, k)
	for len(v) > 0 {
		basis = append(basis, v...)
		w := make([][]float64, len(v))
		for i := range w {
			w[i] = make([]float64, n)
		}
		apply(w, v)
		fv = append(fv, w...)
		next := make([][]float64, len(w))
		for i, x := range w {
			next[i] = append([]float64(nil), x...)
		}
		v = orthonormalize(next, basis, k-len(basis))
	}
	kk := len(basis)
	qm := mat.NewDense(n, kk, nil)
	for j, x := range basis {
		for i, xi := range x {
			qm.Set(i, j, xi)
		}
	}
	h := mat.NewSymDense(kk, nil)
	for i := range kk {
		for j := i; j < kk; j++ {
			h.SetSym(i, j, (dot(basis[i], fv[j])+dot(basis[j], fv[i]))/2)
		}
	}
	return qm, h
}

// orthonormalize orthonormalizes the vectors v against the orthonormal
// vectors of against and each other (modified Gram-Schmidt, twice),
// dropping those whose norm falls below 1e-8 of theirs, and returns at
// most limit of them.
func orthonormalize(v, against [][]float64, limit int) [][]float64 {
	var out [][]float64
	for _, x := range v {
		if len(out) >= limit {
			break
		}
		n0 := math.Sqrt(dot(x, x))
		for range 2 {
			for _, bs := range [][][]float64{against, out} {
				for _, y := range bs {
					c := dot(x, y)
					for i := range x {
						x[i] -= c * y[i]
					}
				}
			}
		}
		nr := math.Sqrt(dot(x, x))
		if !(nr > 1e-8*n0) {
			continue
		}
		scale(x, 1/nr)
		out = append(out, x)
	}
	return out
}

// batchSides is the number of products of F that a batchWork computes at
// once: a row's values of the sides are a cache line and those of the
// products the next (in float32: batchWork), fetched together where the
// products are bound by the latency of reading scattered rows.
const batchSides = 16

// newBatchWorkers returns batchApply's workers, one a thread, each
// allocated at its first use.
func newBatchWorkers() []*batchWork { return make([]*batchWork, threads()) }

// batchApply sets dst[j] = E'(L - I)E v[j] for each vector (batchWork's
// apply), batchSides at a time, the batches shared among the workers ws
// in turn, for t the factor of P = A'A + diag(tau), A the model m's
// prior factor: each batch's arithmetic is its own, so the same bits
// whatever the thread count.
func batchApply(t *tri, reg []int, m *Model, tau []float64, ws []*batchWork, dst, v [][]float64) {
	batches := (len(v) + batchSides - 1) / batchSides
	nw := min(len(ws), batches)
	team(nw, func(w int) {
		if ws[w] == nil {
			ws[w] = newBatchWork(t.n)
		}
		for b := w; b < batches; b += nw {
			lo, hi := batchSides*b, min(batchSides*(b+1), len(v))
			ws[w].apply(t, reg, m, tau, dst[lo:hi], v[lo:hi])
		}
	})
}

// batchWork is the scratch of batchSides products of F at once: for each
// row k, its value u of the sides (T^-1 z) and then its value y of the
// product (P u, and then T'^-1 P u), batchSides each: w[2 batchSides k +
// j] and w[2 batchSides k + batchSides + j] for side j. They are stored
// in float32, so that a row's sides are one cache line and its products
// the next with 16 sides, as 8 sides took in float64: the passes are
// bound by their scattered reads of the neighbours' rows, so twice the
// sides a pass costs little more than half the passes save (at N = 10^6,
// m = 30, BenchmarkBlockProducts on the 2-core AMD EPYC, alternating:
// 0.051-0.053 s a vector against 0.071-0.078 in float64 with 8 sides;
// 16 sides in float64 alone 0.067 against 0.082). The arithmetic is
// float64 (each value widened exactly: CombineF32, SpreadF32); only the
// stored values are rounded, 2^-24 of each, which the substitutions carry
// to about 10^-5 of a product's size (TestCorrectBlock), far below what
// the correction needs: its Lanczos vectors only choose the directions
// and size of the block's correction, which r then measures exactly (the
// estimate stays unbiased whatever they are), and the products are the
// same bits for any thread count.
type batchWork struct{ w []float32 }

func newBatchWork(n int) *batchWork { return &batchWork{w: make([]float32, 2*batchSides*n)} }

// apply sets dst[j] = E'(T^-T P T^-1 - I)E v[j] for up to batchSides
// vectors v (on the rows reg), P = A'A + diag(tau), for all of them at
// once on the calling goroutine, in two passes over the rows: a forward
// solve from the first (forward), and from the last the product with P
// and the backward solve together (productBack).
func (ws *batchWork) apply(t *tri, reg []int, m *Model, tau []float64, dst, v [][]float64) {
	clear(ws.w)
	for j, x := range v {
		for i, k := range reg {
			ws.w[2*batchSides*k+j] = float32(x[i])
		}
	}
	var sc batchScratch
	t.forward(ws.w, &sc)
	t.productBack(ws.w, m, tau, &sc)
	for j, d := range dst {
		for i, k := range reg {
			d[i] = float64(ws.w[2*batchSides*k+batchSides+j]) - v[j][i]
		}
	}
}

// forward sets each row's u (batchWork's layout) to T^-1 u, in place,
// row by row on the calling goroutine: a row's sides less the
// combination of its pattern's rows (core.CombineF32, whose vector path
// reads the rows side by side), over its diagonal.
func (t *tri) forward(w []float32, sc *batchScratch) {
	const s = 2 * batchSides
	acc := sc.acc[:]
	for k := range t.n {
		d := w[s*k : s*k+batchSides]
		if t.dup[k] {
			clear(d)
			continue
		}
		a, b := t.start[k], t.start[k+1]
		if k+1 < t.n {
			prefetchRows(w, t.nbr[b:t.start[k+2]], s, 0, batchSides)
		}
		if k+ownAhead < t.n {
			// The pass's own rows come in order, but among the scattered
			// reads the hardware does not fetch them ahead.
			core.Prefetch(w[s*(k+ownAhead) : s*(k+ownAhead)+batchSides])
		}
		clear(acc)
		sc.off = rowOffsets(sc.off, t.nbr[a:b], s)
		core.CombineF32(acc, w, sc.off, t.off[a:b])
		dk := t.diag[k]
		for j := range d {
			d[j] = float32((float64(d[j]) - acc[j]) / dk)
		}
	}
}

// productBack sets each row's y (batchWork's layout, zero on entry) to
// T'^-1 P u, P = A'A + diag(tau) (A the model's prior factor: its row k
// is (e_k - B_k) / sqrt(D_k), a repeated point's empty; A is not built,
// at N = 10^6 it and its transpose would take about 0.7 GB beside the
// particles), in one pass from the last row on the calling goroutine.
// When row k is reached every later row has added its share A_ik (A u)_i
// and subtracted its share T_ik y_i, so k's own share (A u)_k / sqrt(D_k)
// + tau_k u_k completes (P u)_k less the backward solve's later terms,
// and y_k is that over T's diagonal; then k adds its shares to its
// neighbours' rows (core.Spread). A row's neighbours in A are among its
// neighbours in T, so the pass reads and writes each neighbour's cache
// line once: half the scattered reads of a product pass and a backward
// pass apart.
func (t *tri) productBack(w []float32, m *Model, tau []float64, sc *batchScratch) {
	const s = 2 * batchSides
	acc := sc.acc[:]
	for k := t.n - 1; k >= 0; k-- {
		y := w[s*k+batchSides : s*k+s]
		if t.dup[k] {
			clear(y)
			continue
		}
		u := w[s*k : s*k+batchSides]
		ms, me := m.Start[k], m.Start[k+1]
		if k >= ownAhead {
			core.Prefetch(w[s*(k-ownAhead) : s*(k-ownAhead)+s])
		}
		if k > 0 {
			// The next row's neighbours: their u in the model's
			// pattern, their y in T's, which holds the model's: where
			// the two are the same rows (after the block), both halves
			// at once.
			tn, mn := t.nbr[t.start[k-1]:t.start[k]], m.Nbr[m.Start[k-1]:ms]
			if len(tn) == len(mn) {
				prefetchRows(w, tn, s, 0, s)
			} else {
				prefetchRows(w, mn, s, 0, batchSides)
				prefetchRows(w, tn, s, batchSides, s)
			}
		}
		clear(acc)
		sc.off = rowOffsets(sc.off, m.Nbr[ms:me], s)
		core.CombineF32(acc, w, sc.off, m.Coef[ms:me])
		ic, dk := 1/m.CondVar[k], t.diag[k] // a: (A u)_k / sqrt(D_k)
		a, yk := sc.a[:], sc.y[:]
		for j := range a {
			uj := float64(u[j])
			a[j] = (uj - acc[j]) * ic
			yk[j] = (float64(y[j]) + tau[k]*uj + a[j]) / dk
			y[j] = float32(yk[j])
		}
		// The neighbours' y (at their u's offsets in w[batchSides:]) less
		// k's shares (of y before its rounding), a row of each pattern in
		// one call (core.SpreadF32).
		yw := w[batchSides:]
		core.SpreadF32(yw, sc.off, m.Coef[ms:me], a)
		sc.off = rowOffsets(sc.off, t.nbr[t.start[k]:t.start[k+1]], s)
		core.SpreadF32(yw, sc.off, t.off[t.start[k]:t.start[k+1]], yk)
	}
}

// ownAhead is how many rows ahead forward and productBack ask for their
// own row's values.
const ownAhead = 8

// batchScratch is a batch pass's per-row scratch: the rows' offsets in
// batchWork's layout (rowOffsets: their u) and the sides' sums.
type batchScratch struct {
	off []int64
	acc [batchSides]float64
	a   [batchSides]float64
	y   [batchSides]float64
}

func scale(v []float64, s float64) {
	for i := range v {
		v[i] *= s
	}
}
