package core

import (
	"math"
	"runtime"
	"sync"

	"github.com/gpc-mc/gpc/internal/gemm"
)

// Prediction's work is split into fixed units of particles, independent of
// the thread count: each unit's weighted sums are kept apart and added in
// unit order, so the posteriors are the same for any number of threads.
const (
	// predictUnit is the most particles of one group in a work unit.
	predictUnit = 4096
	// predictTile is the number of particles whose conditional means are
	// computed by one matrix product (predictTile x T values, reused from
	// the cache at once).
	predictTile = 256
)

// solveRowsTo overwrites each of the t rows of w (t x n, row-major) by the
// solution x of L x = row, L the lower-triangular n x n factor (row-major):
// w <- w L^-T. Blocks of trsmBlock columns are solved by substitution and
// the rest of each row updated by one matrix product per block, so the
// O(n^2 t) work runs at the product's speed.
func solveRowsTo(w []float64, t int, l []float64, n int, ws *gemm.Workspace, workers int) {
	solveRowsStrided(w, t, n, l, n, n, ws, workers)
}

// solveRowsStrided is solveRowsTo with w's row stride ldw and L's ldl.
func solveRowsStrided(w []float64, t, ldw int, l []float64, n, ldl int, ws *gemm.Workspace, workers int) {
	const trsmBlock = 64
	upd := make([]float64, t*trsmBlock)
	for j0 := 0; j0 < n; j0 += trsmBlock {
		j1 := min(n, j0+trsmBlock)
		nb := j1 - j0
		if j0 > 0 {
			// upd (t x nb) = w[:, :j0] L[j0:j1, :j0]'.
			ws.NT(t, nb, j0, w, ldw, l[j0*ldl:], ldl, upd, nb, false, workers)
			for r := range t {
				row := w[r*ldw+j0 : r*ldw+j1]
				for k := range row {
					row[k] -= upd[r*nb+k]
				}
			}
		}
		// Four rows at a time: four independent chains of FMAs instead
		// of one (each row's operations, and so its bits, as one alone).
		r := 0
		for ; r+4 <= t; r += 4 {
			w0 := w[r*ldw+j0 : r*ldw+j1]
			w1 := w[(r+1)*ldw+j0 : (r+1)*ldw+j1]
			w2 := w[(r+2)*ldw+j0 : (r+2)*ldw+j1]
			w3 := w[(r+3)*ldw+j0 : (r+3)*ldw+j1]
			for k := range nb {
				s0, s1, s2, s3 := w0[k], w1[k], w2[k], w3[k]
				lk := l[(j0+k)*ldl+j0 : (j0+k)*ldl+j0+k]
				a0, a1, a2, a3 := w0[:k], w1[:k], w2[:k], w3[:k]
				for q, v := range lk {
					s0 = math.FMA(-v, a0[q], s0)
					s1 = math.FMA(-v, a1[q], s1)
					s2 = math.FMA(-v, a2[q], s2)
					s3 = math.FMA(-v, a3[q], s3)
				}
				d := l[(j0+k)*ldl+j0+k]
				w0[k], w1[k], w2[k], w3[k] = s0/d, s1/d, s2/d, s3/d
			}
		}
		for ; r < t; r++ {
			row := w[r*ldw : r*ldw+j1]
			for k := j0; k < j1; k++ {
				s := row[k]
				lk := l[k*ldl+j0 : k*ldl+k]
				for q, v := range lk {
					s = math.FMA(-v, row[j0+q], s)
				}
				row[k] = s / l[k*ldl+k]
			}
		}
	}
}

// Predictor computes test posteriors (see Predict) from a particle cloud
// that arrives in pieces, in the cloud's order (group by group, particle by
// particle): a cloud read from a stream is predicted as it goes by, with
// only the pieces in flight in memory.
//
// The pieces are gathered into the fixed work units of Predict (predictUnit
// particles of one group; a whole group for the hard count), each unit's
// weighted sums are computed by one of the Predictor's goroutines and
// added to its group's sums in unit order: the posteriors are bit for bit
// those of Predict on the whole cloud, whatever the thread count and
// however the cloud was cut into pieces.
//
// A Predictor is used by one goroutine: NewPredictor, Add for every
// piece, then Finish, or Close to abandon it.
type Predictor struct {
	n, t       int
	sizes      []int
	w, offset  []float64
	sigma      []float64
	isig       []float64
	opt        PredictOptions
	unitOf     func(g int) int // particles per unit in group g
	g, next    int             // the next particle expected: group g, index next
	cur        *predictWork    // the unit being gathered
	seq        int             // units dispatched
	work       chan *predictWork
	wg         sync.WaitGroup
	started    bool
	mu         sync.Mutex
	pending    map[int]*predictWork // computed units waiting for their predecessors
	committed  int                  // units added to pg
	pg         []float64            // groups x t: each group's weighted means
	aborted    bool
	accFree    [][]float64
	unitsTotal int
}

// errNoPosterior is the error of a cloud whose every group estimated P = 0.
func errNoPosterior() error {
	return inputErrorf(-1, "every particle group estimated P = 0: there is no posterior to average over")
}

// predictWork is a unit of work: the particles of group g up to p1, as the
// pieces that hold them.
type predictWork struct {
	seq    int
	g      int
	p1     int
	pieces []predictPiece
	acc    []float64
}

// predictPiece is a run of particles of one unit: z (rows of n draws) and
// their log weights; done, if not nil, is called once they are no longer
// needed.
type predictPiece struct {
	z, logW []float64
	done    func()
}

// NewPredictor prepares the prediction of T test variables (covariances r,
// T x N in the box's input order, variances vars, as Predict takes them)
// from a cloud of len(sizes) particle groups of sizes[g] particles. It
// returns an *InputError if a test variable's conditional variance is not
// positive. It panics if the shapes disagree.
func NewPredictor(f *Factor, sizes []int, r, vars []float64, opt PredictOptions) (*Predictor, error) {
	n, t := f.N, len(vars)
	if len(r) != t*n || len(sizes) == 0 {
		panic("core: NewPredictor shapes disagree")
	}
	if opt.Threads <= 0 {
		opt.Threads = runtime.GOMAXPROCS(0)
	}
	p := &Predictor{n: n, t: t, sizes: sizes, opt: opt, pending: map[int]*predictWork{}, pg: make([]float64, len(sizes)*t)}
	if t > 0 {
		var err error
		if p.w, p.offset, p.sigma, p.isig, err = f.testBasis(r, vars, t, opt.Threads); err != nil {
			return nil, err
		}
	}
	p.unitOf = func(g int) int {
		if opt.Hard {
			// One unit per group: the hard count's streams run through the
			// group's particles in order.
			return max(1, sizes[g])
		}
		return predictUnit
	}
	for g, m := range sizes {
		p.unitsTotal += (m + p.unitOf(g) - 1) / p.unitOf(g)
	}
	p.skipEmpty()
	return p, nil
}

// skipEmpty moves past empty groups.
func (p *Predictor) skipEmpty() {
	for p.g < len(p.sizes) && p.next == p.sizes[p.g] {
		p.g++
		p.next = 0
	}
}

// Add gives the Predictor the next particles of the cloud: particles
// first, first+1, ... of group g, with draws z (len(logW) rows of N, in the
// Factor's order, as Cloud holds them) and normalized log weights logW. The
// Predictor reads z and logW until it calls done (if not nil), possibly
// from another goroutine and after Add returns; the caller must not change
// them before. Add may wait for earlier pieces to be computed, so that a
// bounded number of them is in flight. It panics if the particles are not
// the next ones in the cloud's order or z has the wrong length.
func (p *Predictor) Add(g, first int, z, logW []float64, done func()) {
	k := len(logW)
	if g != p.g || first != p.next || len(z) != k*p.n || first+k > p.sizes[g] {
		panic("core: Predictor.Add: particles out of order or of the wrong shape")
	}
	if k == 0 {
		if done != nil {
			done()
		}
		return
	}
	unit := p.unitOf(g)
	for a := 0; a < k; {
		if p.cur == nil {
			p0 := p.next
			p.cur = &predictWork{seq: p.seq, g: g, p1: min(p.sizes[g], p0/unit*unit+unit)}
			p.seq++
		}
		b := min(k, a+p.cur.p1-p.next)
		piece := predictPiece{z: z[a*p.n : b*p.n], logW: logW[a:b]}
		if b == k {
			piece.done = done // the last piece of this call releases it
		}
		p.cur.pieces = append(p.cur.pieces, piece)
		p.next += b - a
		a = b
		if p.next == p.cur.p1 {
			p.dispatch(p.cur)
			p.cur = nil
			p.skipEmpty()
		}
	}
}

// dispatch hands a complete unit to the workers, starting them at the
// first unit.
func (p *Predictor) dispatch(u *predictWork) {
	if !p.started {
		p.started = true
		workers := max(1, min(p.opt.Threads, p.unitsTotal))
		// A unit in the queue per worker besides the ones being computed.
		p.work = make(chan *predictWork, workers)
		for range workers {
			p.wg.Add(1)
			go p.worker()
		}
	}
	p.work <- u
}

// worker computes units until the queue closes.
func (p *Predictor) worker() {
	defer p.wg.Done()
	var ws gemm.Workspace
	mu := make([]float64, predictTile*p.t)
	var rngs []interface{ NormFloat64() float64 }
	for u := range p.work {
		p.mu.Lock()
		aborted := p.aborted
		var acc []float64
		if n := len(p.accFree); n > 0 {
			acc, p.accFree = p.accFree[n-1], p.accFree[:n-1]
		}
		p.mu.Unlock()
		if aborted {
			u.release()
			continue
		}
		if acc == nil {
			acc = make([]float64, p.t)
		}
		clear(acc)
		u.acc = acc
		if p.opt.Hard {
			rngs = rngs[:0]
			for j := range p.t {
				rngs = append(rngs, NewStream(p.opt.Seed, domainPredict, uint64(p.opt.First+j)<<20|uint64(u.g)))
			}
		}
		for i := range u.pieces {
			p.accumulate(acc, &u.pieces[i], &ws, mu, rngs)
		}
		u.release()
		p.commit(u)
	}
}

// accumulate adds a piece's weighted soft counts (or hard counts) to acc.
// Each particle's conditional means come from a matrix product over at most
// predictTile particles; a row of the product does not depend on the others
// (internal/gemm's fixed arithmetic), so neither does the result on where
// the pieces were cut.
func (p *Predictor) accumulate(acc []float64, pc *predictPiece, ws *gemm.Workspace, mu []float64, rngs []interface{ NormFloat64() float64 }) {
	n, t := p.n, p.t
	k := len(pc.logW)
	for p0 := 0; p0 < k; p0 += predictTile {
		mt := min(predictTile, k-p0)
		// mu (mt x t) = Z[p0:p0+mt] (mt x n) W' (n x t).
		ws.NT(mt, t, n, pc.z[p0*n:], n, p.w, n, mu, t, false, 1)
		for q := range mt {
			wp := math.Exp(pc.logW[p0+q])
			row := mu[q*t : q*t+t]
			if p.offset != nil {
				for j, o := range p.offset {
					row[j] += o
				}
			}
			if !p.opt.Hard {
				phiAccumulate(acc, row, p.isig, wp)
				continue
			}
			for j := range t {
				if row[j]+p.sigma[j]*rngs[j].NormFloat64() > 0 {
					acc[j] += wp
				}
			}
		}
	}
}

// release lets go of a unit's pieces.
func (u *predictWork) release() {
	for _, pc := range u.pieces {
		if pc.done != nil {
			pc.done()
		}
	}
	u.pieces = nil
}

// commit adds a computed unit, and any that waited for it, to its group's
// sums, in unit order.
func (p *Predictor) commit(u *predictWork) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pending[u.seq] = u
	for {
		v, ok := p.pending[p.committed]
		if !ok {
			return
		}
		delete(p.pending, p.committed)
		row := p.pg[v.g*p.t : v.g*p.t+p.t]
		for j, a := range v.acc {
			row[j] += a
		}
		p.accFree = append(p.accFree, v.acc)
		p.committed++
	}
}

// stop closes the queue and waits for the workers.
func (p *Predictor) stop() {
	if p.work != nil {
		close(p.work)
		p.wg.Wait()
		p.work = nil
	}
}

// Close abandons the prediction: the units not yet computed are dropped
// and every piece is released. Close after Finish does nothing.
func (p *Predictor) Close() {
	p.mu.Lock()
	p.aborted = true
	p.mu.Unlock()
	p.stop()
	if p.cur != nil {
		p.cur.release()
		p.cur = nil
	}
}

// Finish waits for the last units and writes the posteriors to dst, which
// must have length T, given each group's estimate of log P, logZ[g] (known
// once the group was estimated: a streamed cloud brings it after the
// group's particles). Each group's weighted mean p_g is combined with
// weights a_g = n_g I_g as Predict describes. It returns an *InputError if
// there are test variables and every group estimated P = 0, and panics if
// dst or logZ has the wrong length or particles are missing.
func (p *Predictor) Finish(dst []Posterior, logZ []float64) error {
	if len(dst) != p.t || len(logZ) != len(p.sizes) {
		p.Close()
		panic("core: Predictor.Finish: dst or logZ has the wrong length")
	}
	if p.g != len(p.sizes) {
		p.Close()
		panic("core: Predictor.Finish: particles are missing")
	}
	p.stop()
	return CombinePosteriors(dst, p.sizes, logZ, p.pg)
}

// CombinePosteriors sets dst[j], for each of T = len(dst) test variables,
// to the posterior combined from G independent particle groups of sizes
// particles, group g's estimate of log P being logZ[g] and its weighted
// mean of test variable j's probability pg[g*T + j]: the ratio estimator
// with weights a_g = n_g I_g and its standard error (Predict gives the
// formulas), as Predict combines its groups. It returns an *InputError if
// there are test variables and every group estimated P = 0, and panics if
// the lengths disagree.
func CombinePosteriors(dst []Posterior, sizes []int, logZ, pg []float64) error {
	t, g := len(dst), len(sizes)
	if len(logZ) != g || len(pg) != g*t {
		panic("core: CombinePosteriors: the lengths disagree")
	}
	maxLogZ := math.Inf(-1)
	for _, v := range logZ {
		maxLogZ = math.Max(maxLogZ, v)
	}
	if math.IsInf(maxLogZ, -1) && t > 0 {
		return errNoPosterior()
	}
	for j := range t {
		var sa, sap, sa2d float64
		for gi, m := range sizes {
			a := float64(m) * math.Exp(logZ[gi]-maxLogZ)
			sa += a
			sap += a * pg[gi*t+j]
		}
		pj := sap / sa
		for gi, m := range sizes {
			a := float64(m) * math.Exp(logZ[gi]-maxLogZ)
			d := pg[gi*t+j] - pj
			sa2d += a * a * d * d
		}
		se := math.NaN()
		if g > 1 {
			se = StudentScale(g) * math.Sqrt(float64(g)/float64(g-1)*sa2d) / sa
		}
		dst[j] = Posterior{P: pj, SE: se}
	}
	return nil
}
