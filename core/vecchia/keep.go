package vecchia

import (
	"math"
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
	m, n := r.m, r.p.m.N
	k := r.kept[g]
	if k == 0 {
		r.paths, r.pw = r.paths[:0], r.pw[:0]
		return
	}
	if cap(r.paths) < n*k {
		r.paths = make([]float32, n*k)
	}
	if cap(r.pw) < k {
		r.pw = make([]float64, k)
	}
	r.paths, r.pw = r.paths[:n*k], r.pw[:k]
	if w == nil {
		clear(r.paths)
		for q := range r.pw {
			r.pw[q] = 1 / float64(k)
		}
		return
	}
	if k == m {
		copy(r.paths, r.x[:n*m])
		copy(r.pw, w)
		return
	}
	idx := r.idx[:k]
	systematicK(idx, w, r.src.Float64Open())
	for v := range n {
		row, dst := r.x[v*m:v*m+m], r.paths[v*k:v*k+k]
		for q, i := range idx {
			dst[q] = row[i]
		}
	}
	for q := range r.pw {
		r.pw[q] = 1 / float64(k)
	}
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
	const chunk = 256
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	threads = max(1, min(threads, (md.T+chunk-1)/chunk))
	var wg sync.WaitGroup
	var next int64
	var mu sync.Mutex
	for range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			scratch := make([]float64, k)
			var off []int64
			for {
				mu.Lock()
				lo := int(next)
				next += chunk
				mu.Unlock()
				if lo >= md.T {
					return
				}
				off = testPosteriors(pg, md, lo, min(md.T, lo+chunk), paths, w, scratch, off)
			}
		}()
	}
	wg.Wait()
}
