package vecchia

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"
)

// The preparation on every core. The sparse triangular solves, the
// products with T' and the incomplete factorisation are sequences of
// row operations in which a row depends on the rows of its pattern
// (forward) or on the rows whose patterns hold it (backward). A schedule
// groups the rows into levels, each row in the level after the latest of
// its dependencies, and the rows of one level are computed at once on
// every core. A maxmin order's patterns are shallow: 457 levels at N =
// 10^5 and 522 at 3 x 10^5 (m = 30) besides the dense block's rows, one
// level each.
//
// Each value is computed by operations in an order that does not depend
// on the thread count, so neither does the result: a forward row gathers
// its pattern's values (solveTo, mulTo); the products with T' gather a
// column's entries from a copy of T by columns (mulTransTo, solveTransTo,
// backSubstitute); and the factorisation, whose updates go from a row to
// the rows of its pattern, has each target row updated by one thread, its
// owner, which applies the updates of a level's rows from the last down,
// level after level (eliminate).
//
// References: E. Anderson and Y. Saad (1989), "Solving sparse triangular
// linear systems on parallel computers", International Journal of High
// Speed Computing 1:73-95 (level scheduling).
type schedule struct {
	// fwd holds the rows by forward level (every column of a row's pattern
	// in an earlier level), fwdStart[l] the first of level l.
	fwd      []int32
	fwdStart []int
	// bwd holds the rows by backward level (every row whose pattern holds
	// it in an earlier level).
	bwd      []int32
	bwdStart []int
	// The pattern's transpose: column p's entries are the rows colRow[q]
	// (increasing) and their indices colPos[q] in off, for colStart[p] <=
	// q < colStart[p+1]; a repeated point's row is left out (every
	// operation skips it).
	colStart []int
	colRow   []int32
	colPos   []int32
	// colOff holds the pattern's values by columns (colOff[q] =
	// off[colPos[q]]) for the factor colOf, set by columns.
	colOff []float64
	colOf  *tri
}

// columns returns t's values by columns (schedule.colOff), copied from
// off now unless they were since t's last factorisation or
// priorFactor (which reset colOf).
func (t *tri) columns() []float64 {
	sc := t.sched()
	if sc.colOf != t {
		if sc.colOff == nil {
			sc.colOff = make([]float64, len(sc.colPos))
		}
		parallelFor(0, len(sc.colPos), func(a, b int) {
			for q := a; q < b; q++ {
				sc.colOff[q] = t.off[sc.colPos[q]]
			}
		})
		sc.colOf = t
	}
	return sc.colOff
}

// stale marks t's values by columns out of date (t's values changed).
func (t *tri) stale() {
	if t.sc != nil {
		t.sc.colOf = nil
	}
}

// ownerShift sets the granule of the rows a thread owns in eliminate:
// rows p and p' with the same p >> ownerShift have one owner.
const ownerShift = 6

// owner returns the thread, of w, that owns row p.
func owner(p int32, w int) int { return int(p>>ownerShift) % w }

// team runs fn(i) for i < w on w goroutines at once (the caller's being
// one) and waits for them.
func team(w int, fn func(i int)) {
	if w == 1 {
		fn(0)
		return
	}
	var wg sync.WaitGroup
	for i := 1; i < w; i++ {
		wg.Go(func() { fn(i) })
	}
	fn(0)
	wg.Wait()
}

// minParallel is the fewest rows a level or range must have to be split
// among the threads: below it the goroutines cost more than they save (a
// variable for the tests).
var minParallel = 256

// threads returns the goroutines the preparation's parallel loops use.
func threads() int { return runtime.GOMAXPROCS(0) }

// parallelFor runs fn on [lo, hi) split into contiguous ranges, one per
// thread, or at once on the calling goroutine when the range is short.
// fn's work on a row must not depend on the other rows of the range.
func parallelFor(lo, hi int, fn func(a, b int)) {
	w := threads()
	n := hi - lo
	if n < minParallel || w == 1 {
		if n > 0 {
			fn(lo, hi)
		}
		return
	}
	w = min(w, n/(minParallel/2))
	var wg sync.WaitGroup
	for c := range w {
		a, b := lo+c*n/w, lo+(c+1)*n/w
		if c == w-1 {
			fn(a, b)
			continue
		}
		wg.Go(func() { fn(a, b) })
	}
	wg.Wait()
}

// sched returns t's schedule, built at the first call (the transposes
// take 8 bytes per entry of the pattern).
func (t *tri) sched() *schedule {
	if t.sc == nil {
		t.sc = newSchedule(t)
	}
	return t.sc
}

func newSchedule(t *tri) *schedule {
	n := t.n
	s := &schedule{}
	s.colStart, s.colRow, s.colPos = t.transpose()
	lvl := make([]int32, n)
	for k := range n {
		l := int32(0)
		if !t.dup[k] {
			for _, j := range t.nbr[t.start[k]:t.start[k+1]] {
				l = max(l, lvl[j]+1)
			}
		}
		lvl[k] = l
	}
	s.fwd, s.fwdStart = byLevel(lvl)
	for p := n - 1; p >= 0; p-- {
		l := int32(0)
		for _, k := range s.colRow[s.colStart[p]:s.colStart[p+1]] {
			l = max(l, lvl[k]+1)
		}
		lvl[p] = l
	}
	s.bwd, s.bwdStart = byLevel(lvl)
	return s
}

// transpose returns the pattern by columns (schedule's colStart, colRow
// and colPos), the rows of a column in increasing order. Each thread
// counts and then places the entries of a contiguous range of rows; a
// column's entries from thread i's rows go after those of the threads
// before it, so the result does not depend on the thread count.
func (t *tri) transpose() (colStart []int, colRow, colPos []int32) {
	n := t.n
	w := threads()
	if n < minParallel*w {
		w = 1
	}
	bounds := func(i int) (int, int) { return i * n / w, (i + 1) * n / w }
	// next[i][p]: thread i's count of column p, then where its next entry
	// of column p goes.
	next := make([][]int32, w)
	team(w, func(i int) {
		c := make([]int32, n)
		lo, hi := bounds(i)
		for k := lo; k < hi; k++ {
			if t.dup[k] {
				continue
			}
			for _, p := range t.nbr[t.start[k]:t.start[k+1]] {
				c[p]++
			}
		}
		next[i] = c
	})
	colStart = make([]int, n+1)
	for p := range n {
		at := colStart[p]
		for i := range w {
			c := next[i][p]
			next[i][p] = int32(at)
			at += int(c)
		}
		colStart[p+1] = at
	}
	colRow = make([]int32, colStart[n])
	colPos = make([]int32, colStart[n])
	team(w, func(i int) {
		nx := next[i]
		lo, hi := bounds(i)
		for k := lo; k < hi; k++ {
			if t.dup[k] {
				continue
			}
			for q := t.start[k]; q < t.start[k+1]; q++ {
				p := t.nbr[q]
				colRow[nx[p]] = int32(k)
				colPos[nx[p]] = int32(q)
				nx[p]++
			}
		}
	})
	return colStart, colRow, colPos
}

// byLevel returns the rows sorted by level (stable: increasing within a
// level) and the levels' offsets.
func byLevel(lvl []int32) ([]int32, []int) {
	top := int32(0)
	for _, l := range lvl {
		top = max(top, l)
	}
	start := make([]int, top+2)
	for _, l := range lvl {
		start[l+1]++
	}
	for l := range top + 1 {
		start[l+1] += start[l]
	}
	rows := make([]int32, len(lvl))
	next := make([]int, top+1)
	copy(next, start[:top+1])
	for k, l := range lvl {
		rows[next[l]] = int32(k)
		next[l]++
	}
	return rows, start
}

// levels runs fn on the rows of each level in turn (rows[start[l]:
// start[l+1]]), the rows of a level at once on every core.
func levels(rows []int32, start []int, fn func(rows []int32)) {
	for l := range len(start) - 1 {
		lv := rows[start[l]:start[l+1]]
		parallelFor(0, len(lv), func(a, b int) { fn(lv[a:b]) })
	}
}

// failed is a flag that parallel work sets once.
type failed struct{ v atomic.Bool }

// sumChunk is the terms per chunk of chunkSum.
const sumChunk = 4096

// chunkSum returns the sum over [0, n) that part(lo, hi) gives for chunks
// of sumChunk terms, computed at once on every core and added in order:
// the same bits for any thread count.
func chunkSum(n int, part func(lo, hi int) float64) float64 {
	chunks := (n + sumChunk - 1) / sumChunk
	if chunks <= 1 {
		if n == 0 {
			return 0
		}
		return part(0, n)
	}
	sums := make([]float64, chunks)
	parallelChunks(chunks, func(c int) {
		sums[c] = part(c*sumChunk, min(n, (c+1)*sumChunk))
	})
	s := 0.0
	for _, v := range sums {
		s += v
	}
	return s
}

// parallelChunks runs fn(c) for every c < chunks on every core.
func parallelChunks(chunks int, fn func(c int)) {
	w := min(threads(), chunks)
	if w == 1 {
		for c := range chunks {
			fn(c)
		}
		return
	}
	var next atomic.Int64
	team(w, func(int) {
		for {
			c := int(next.Add(1) - 1)
			if c >= chunks {
				return
			}
			fn(c)
		}
	})
}

// parallelMax returns the largest of part's values over the ranges of
// [lo, hi) that parallelFor gives it (the largest of any split: the same
// for any thread count).
func parallelMax(lo, hi int, part func(a, b int) float64) float64 {
	var mu sync.Mutex
	mx := 0.0
	first := true
	parallelFor(lo, hi, func(a, b int) {
		v := part(a, b)
		mu.Lock()
		if first || v > mx || math.IsNaN(v) {
			mx = v
		}
		first = false
		mu.Unlock()
	})
	return mx
}

// levelSolveThreads is the fewest threads at which the triangular
// substitutions (solveTo, solveTransTo, backSubstitute) run level by
// level on every core rather than row by row on one. A level's rows lie
// all over the factor, so each is a fresh read of its pattern, where the
// rows in order stream through it: at N = 10^6 (m = 30, the 2-core AMD
// EPYC) the forward substitution took 190 ms by levels on two threads
// and 54 ms row by row, the backward 166 ms and 73 ms
// (BenchmarkSubstitutions with GPC_BENCH_N; the same bits either
// way). By those figures the levels could only win from 4-7 threads on,
// if they scaled perfectly; 8 is a guess that no machine measured here
// had the cores to check. (A variable for the tests, which run both.)
var levelSolveThreads = 8

// serialSolves reports whether the substitutions run row by row.
func serialSolves() bool { return threads() < levelSolveThreads }
