package vecchia

import (
	"math"
	"math/rand/v2"
	"runtime"
	"sync"

	"github.com/gpc-mc/gpc/core"
)

// Train once, predict later: a group keeps a set of its final particle
// paths (Prepared.KeepPaths), and a test row's posterior is computed from
// them later as the group computes it at its end (testPosteriors).
//
// A group of m particles that keeps K < m paths draws them from its final
// weights by systematic resampling (one uniform from the group's own
// stream after its last step, so the estimate does not move and the kept
// paths do not depend on the thread count); they are then equally
// weighted. A group asked to keep m or more keeps all its particles with
// their weights, and predicts later exactly what it predicted at its end.
// Resampling adds to a posterior's Monte Carlo error the variance of
// Phi(mu*_t/sigma*_t) over the group's weighted particles divided by K.

// KeptSizes returns the paths each of the groups (of the sizes given)
// keeps when keep paths are kept in all: keep split over the groups as
// core.GroupSizes splits particles, at most each group's size.
func KeptSizes(keep int, sizes []int) []int {
	kept := make([]int, len(sizes))
	if keep <= 0 {
		return kept
	}
	for g, k := range core.GroupSizes(keep, len(sizes)) {
		kept[g] = min(k, sizes[g])
	}
	return kept
}

// keepPaths sets the group's kept paths (r.paths, K x N by variable) and
// their weights from its final particles, whose normalized weights are w.
// A dead group (no weights) keeps K zero paths, equally weighted: its
// estimate is -Inf and it weighs nothing.
func (r *runner) keepPaths(g int, w []float64) {
	r.paths, r.pw = keptPaths(r.paths, r.pw, r.kept[g], r.m, r.p.m.N, r.x, w, r.idx, &r.src)
}

// keptPaths returns paths and pw, grown where needed, set to k of the m
// particles' paths (x: n variables of m values each, by variable) and
// their weights, for the final normalized weights w (nil for a dead
// group: k zero paths): every particle with its weight where k = m, else
// k drawn by systematic resampling with one uniform from src, equally
// weighted.
func keptPaths[T float32 | float64](paths []float32, pw []float64, k, m, n int, x []T, w []float64, idx []int, src *core.PCG) ([]float32, []float64) {
	if k == 0 {
		return paths[:0], pw[:0]
	}
	if cap(paths) < n*k {
		paths = make([]float32, n*k)
	}
	if cap(pw) < k {
		pw = make([]float64, k)
	}
	paths, pw = paths[:n*k], pw[:k]
	if w == nil {
		clear(paths)
		for q := range pw {
			pw[q] = 1 / float64(k)
		}
		return paths, pw
	}
	if k == m {
		for i, v := range x[:n*m] {
			paths[i] = float32(v)
		}
		copy(pw, w)
		return paths, pw
	}
	idx = idx[:k]
	systematicK(idx, w, src.Float64Open())
	for v := range n {
		row, dst := x[v*m:v*m+m], paths[v*k:v*k+k]
		for q, i := range idx {
			dst[q] = float32(row[i])
		}
	}
	for q := range pw {
		pw[q] = 1 / float64(k)
	}
	return paths, pw
}

// systematicK draws len(idx) indices from the normalized weights w by
// systematic resampling with the uniform u in (0, 1): index j is drawn
// floor or ceil of len(idx) w_j times, in increasing order.
func systematicK(idx []int, w []float64, u float64) {
	k, m := len(idx), len(w)
	j, c := 0, w[0]
	for q := range k {
		t := (float64(q) + u) / float64(k)
		for c < t && j < m-1 {
			j++
			c += w[j]
		}
		idx[q] = j
	}
}

// testPosteriors sets pg[t], for the test rows t in [lo, hi) of md, to
// the weighted mean over the paths x (md.N x len(w) float32 values by
// variable) of P(w*_t >= 0 | path): Phi of the test latent value's
// conditional mean over sqrt(its conditional variance plus the noise).
// mu holds len(w) values of scratch; off is scratch for the neighbours'
// offsets, returned grown. The sum runs in a fixed order, so that the
// posteriors' bits do not depend on how the rows are split.
func testPosteriors(pg []float64, md *Model, lo, hi int, x []float32, w, mu []float64, off []int64) []int64 {
	m := len(w)
	mu = mu[:m]
	rows := func(t int, off []int64) []int64 {
		off = off[:0]
		for _, j := range md.TNbr[md.TStart[t]:md.TStart[t+1]] {
			off = append(off, int64(j)*int64(m))
		}
		return off
	}
	// Each row's neighbours' rows, scattered in memory, are fetched while
	// the row before it is computed.
	var next []int64
	if lo < hi {
		off = rows(lo, off)
	}
	for t := lo; t < hi; t++ {
		if t+1 < hi {
			next = rows(t+1, next)
			core.PrefetchRowsF32(x, next, m)
		}
		clear(mu)
		core.CombineF32(mu, x, off, md.TCoef[md.TStart[t]:md.TStart[t+1]])
		is := 1 / math.Sqrt(md.TCondVar[t]+md.Noise)
		acc := 0.0
		for i, v := range mu {
			acc = math.FMA(w[i], core.Phi(v*is), acc)
		}
		pg[t] = min(acc, 1) // the weights sum to 1 up to rounding
		off, next = next, off
	}
	return off
}

// PredictPaths sets pg[t] for every test row t of md to the posterior a
// group's kept paths give (N x K float32 values by variable, as
// core.CloudGroup.Paths holds them, with their K normalized weights w):
// what the group computed at its end for the test rows it had, computed
// for md's. md's training part must be the one the paths were drawn on
// (its N rows, in its order: the caller checks its fingerprint). threads
// workers (0: GOMAXPROCS) split the test rows; the result does not depend
// on them.
func PredictPaths(pg []float64, md *Model, paths []float32, w []float64, threads int) {
	k := len(w)
	if len(pg) != md.T || len(paths) != md.N*k {
		panic("vecchia: PredictPaths: the lengths disagree")
	}
	if k == 0 || md.T == 0 {
		return
	}
	overTestRows(md.T, threads, func() func(lo, hi int) {
		scratch := make([]float64, k)
		var off []int64
		return func(lo, hi int) { off = testPosteriors(pg, md, lo, hi, paths, w, scratch, off) }
	})
}

// PredictPaths sets pg (T C values: test row t's class c at t C + c) to
// the class probabilities a group's kept paths give (its L N latent
// coordinates, L = C - 1 for a kernel shared by the classes, K float32
// values each by variable, as core.CloudGroup.Paths holds them, with
// their K normalized weights w): what the group computed at its end for
// its own test rows (classRow), computed for md's. md's training part
// must be the one the paths were drawn on (the caller checks its
// fingerprint). For more than three classes, test row t's class
// probabilities draw from the random stream core.GroupStream(seed, t).
// threads workers (0: GOMAXPROCS) split the test rows; the result does
// not depend on them.
func (md *Multiclass) PredictPaths(pg []float64, paths []float32, w []float64, seed uint64, threads int) {
	k, c := len(w), md.C
	l, e := md.latentDims()
	if len(pg) != md.T*c || len(paths) != md.N*l*k {
		panic("vecchia: Multiclass.PredictPaths: the lengths disagree")
	}
	if k == 0 || md.T == 0 {
		return
	}
	overTestRows(md.T, threads, func() func(lo, hi int) {
		means := make([]float64, l*k)
		rs := newClassRowScratch(c)
		var src core.PCG
		rng := rand.New(&src)
		var off []int64
		combine := func(mu []float64, off []int64, coef []float64) { core.CombineF32(mu, paths, off, coef) }
		return func(lo, hi int) {
			for t := lo; t < hi; t++ {
				off = md.testMeans(means, t, l, k, off, combine)
				src = core.GroupStream(seed, t)
				md.classRow(pg[t*c:(t+1)*c], t, means, w, e, rs, rng)
			}
		}
	})
}

// overTestRows runs the functions that work returns, one per worker
// (threads of them; 0: GOMAXPROCS), over chunks [lo, hi) of t test rows
// until every row is done.
func overTestRows(t, threads int, work func() func(lo, hi int)) {
	const chunk = 256
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	threads = max(1, min(threads, (t+chunk-1)/chunk))
	var wg sync.WaitGroup
	var next int64
	var mu sync.Mutex
	for range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := work()
			for {
				mu.Lock()
				lo := int(next)
				next += chunk
				mu.Unlock()
				if lo >= t {
					return
				}
				f(lo, min(t, lo+chunk))
			}
		}()
	}
	wg.Wait()
}
