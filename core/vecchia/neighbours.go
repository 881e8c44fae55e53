package vecchia

import (
	"math"
	"runtime"
	"slices"
	"sync"
)

func sqDist(a, b []float64) float64 {
	s := 0.0
	for k, v := range a {
		t := v - b[k]
		s += t * t
	}
	return s
}

// MaxMin returns the maxmin ordering of the n points x (n x d, row-major):
// the first point is the one nearest the points' mean, and each next one
// is the point farthest from all points before it (ties: the smaller row).
// The ordering spreads the first points over the whole domain and fills it
// in at ever finer scales, so that a point's nearest earlier neighbours
// surround it rather than lie to one side (Guinness 2018): for a
// classifier, the early latent values are drawn under the information of
// the whole data set (the twisted proposal) and the later ones are pinned
// down by neighbours on every side.
//
// The farthest point is kept in an indexed max-heap of each point's
// distance to the points chosen so far; choosing a point with distance l
// updates only the points within l of it (a k-d tree query), about
// n log n updates in all for well-spread points.
//
// References: J. Guinness (2018), "Permutation and grouping methods for
// sharpening Gaussian process approximations", Technometrics 60:415-429;
// F. Schaefer, M. Katzfuss and H. Owhadi (2021), "Sparse Cholesky
// factorization by Kullback-Leibler minimization", SIAM J. Sci. Comput.
// 43:A2019-A2046 (the ordering's construction and its guarantees).
func MaxMin(x []float64, n, d int) []int {
	if n == 0 {
		return nil
	}
	order := make([]int, n)
	maxMinInto(x, n, d, order, nil)
	return order
}

// nearestMean returns the first of the n points x (n x d) nearest their
// mean: the maxmin order's first point.
func nearestMean(x []float64, n, d int) int {
	mean := make([]float64, d)
	for i := range n {
		for k := range d {
			mean[k] += x[i*d+k]
		}
	}
	for k := range mean {
		mean[k] /= float64(n)
	}
	first, best := 0, math.Inf(1)
	for i := range n {
		if s := sqDist(x[i*d:i*d+d], mean); s < best {
			first, best = i, s
		}
	}
	return first
}

// maxMinInto is MaxMin, its order written into order (n positions), and
// ready (if not nil) told of each count of positions written that
// EarlierNeighbours works on (prefixDone), so that its searches of the
// first positions run while the order goes on.
func maxMinInto(x []float64, n, d int, order []int, ready func(int)) {
	rows := make([]int, n)
	for i := range rows {
		rows[i] = i
	}
	tree := newKDTree(x, d, rows, 1)
	first := nearestMean(x, n, d)
	order[0] = first
	cnt := 1
	tell := func() {
		if ready != nil && prefixDone(cnt, n) {
			ready(cnt)
		}
	}
	tell()
	// The heap and the distances by place in the tree, whose points in a
	// box are few runs of places.
	slot := 0
	for p, i := range tree.id {
		if int(i) == first {
			slot = p
		}
	}
	pts := tree.pts
	h := newMaxHeap(n)
	for p, i := range tree.id {
		if p != slot {
			h.add(sqDist(pts[p*d:p*d+d], pts[slot*d:slot*d+d]), i, int32(p))
		}
	}
	h.init()
	lo, hi := make([]float64, d), make([]float64, d)
	var in []int32
	for cnt < n {
		i, p, r2 := h.pop()
		order[cnt] = int(i)
		cnt++
		tell()
		xi := pts[int(p)*d : int(p)*d+d]
		r := math.Sqrt(r2)
		for k, v := range xi {
			lo[k], hi[k] = v-r, v+r
		}
		in = tree.inBox(in[:0], lo, hi)
		for _, q := range in {
			if h.pos[q] < 0 {
				continue
			}
			if s := sqDist(pts[int(q)*d:int(q)*d+d], xi); s < h.key[q] {
				h.lower(q, s)
			}
		}
	}
}

// prefixDone reports whether the first k of n ordered positions are a
// prefix that EarlierNeighbours waits for: the first bruteLimit, each
// power of two after them, and all n.
func prefixDone(k, n int) bool {
	return k == n || k >= bruteLimit && k&(k-1) == 0
}

// maxHeap is an indexed 4-ary max-heap of the points' squared distances
// to the chosen ones, ties broken by the smaller row, each point known by
// its place in a tree (its slot). Each entry holds its key and row, so
// that a comparison reads the heap alone; the root is entry 3 and entry
// j's children are entries 4j-8 to 4j-5, so that the four children of an
// entry share a 64-byte cache line.
type maxHeap struct {
	heap []heapEntry
	key  []float64 // key[p]: slot p's squared distance
	pos  []int32   // pos[p]: slot p's place in heap, -1 if not in it
}

type heapEntry struct {
	key       float64
	row, slot int32
}

// heapRoot is the root's place in maxHeap.heap.
const heapRoot = 3

// above reports whether a comes before b: the larger key, of equal keys
// the smaller row.
func (a heapEntry) above(b heapEntry) bool {
	return a.key > b.key || a.key == b.key && a.row < b.row
}

func newMaxHeap(n int) *maxHeap {
	h := &maxHeap{heap: make([]heapEntry, heapRoot, heapRoot+n), key: make([]float64, n), pos: make([]int32, n)}
	for p := range h.pos {
		h.pos[p] = -1
		h.key[p] = math.Inf(1)
	}
	return h
}

// add appends the point of row and slot with key k; init makes the
// entries added a heap.
func (h *maxHeap) add(k float64, row, slot int32) {
	h.key[slot] = k
	h.heap = append(h.heap, heapEntry{k, row, slot})
}

func (h *maxHeap) init() {
	for j := heapRoot; j < len(h.heap); j++ {
		h.pos[h.heap[j].slot] = int32(j)
	}
	if len(h.heap) > heapRoot+1 {
		for j := (len(h.heap)-1)/4 + 2; j >= heapRoot; j-- {
			h.down(j)
		}
	}
}

// lower lowers slot p's key, in the heap, to k.
func (h *maxHeap) lower(p int32, k float64) {
	h.key[p] = k
	j := h.pos[p]
	h.heap[j].key = k
	h.down(int(j))
}

// pop removes the point of the largest key and returns its row, its slot
// and its key.
func (h *maxHeap) pop() (row, slot int32, key float64) {
	e := h.heap[heapRoot]
	last := h.heap[len(h.heap)-1]
	h.heap = h.heap[:len(h.heap)-1]
	h.pos[e.slot] = -1
	if len(h.heap) > heapRoot {
		h.heap[heapRoot] = last
		h.pos[last.slot] = heapRoot
		h.down(heapRoot)
	}
	return e.row, e.slot, e.key
}

func (h *maxHeap) down(j int) {
	hp := h.heap
	n := len(hp)
	e := hp[j]
	for {
		c := 4*j - 8
		if c >= n {
			break
		}
		best := c
		for q := c + 1; q < min(c+4, n); q++ {
			if hp[q].above(hp[best]) {
				best = q
			}
		}
		if !hp[best].above(e) {
			break
		}
		hp[j] = hp[best]
		h.pos[hp[j].slot] = int32(j)
		j = best
	}
	hp[j] = e
	h.pos[e.slot] = int32(j)
}

// bruteLimit is the number of earlier points up to which EarlierNeighbours
// searches them one by one rather than in a k-d tree.
const bruteLimit = 256

// EarlierNeighbours returns, for each position k of the ordered points
// (row order[k] of x, n x d), the positions of its at most m nearest
// points among positions [0, k), in increasing order (ties: the earlier
// position): a conditioning set of the Vecchia approximation. The points
// of positions [0, 2^s) form one k-d tree for the positions in
// [2^(s-1), 2^s), so that at least half of each tree's points are
// eligible; the queries run on threads goroutines, each position's on its
// own, so the result does not depend on threads.
func EarlierNeighbours(x []float64, d int, order []int, m, threads int) [][]int32 {
	return earlierNeighbours(x, d, order, m, threads, nil)
}

// earlierNeighbours is EarlierNeighbours on an order still being written:
// wait (if not nil) returns once its first k positions are (k a prefix of
// prefixDone).
func earlierNeighbours(x []float64, d int, order []int, m, threads int, wait func(k int)) [][]int32 {
	n := len(order)
	nbr := make([][]int32, n)
	flat := make([]int32, 0, min(n, m+1)*m)
	if wait == nil {
		wait = func(int) {}
	}
	// The first positions, one by one.
	first := min(n, bruteLimit)
	wait(first)
	for k := range first {
		s := len(flat)
		flat = append(flat, bruteNearest(x, d, order, k, m)...)
		nbr[k] = flat[s:len(flat):len(flat)]
	}
	for lo := first; lo < n; {
		hi := min(n, 2*lo)
		wait(hi)
		tree := newKDTree(x, d, order[:hi], threads)
		// The queries in the tree's order, each next one near the last,
		// so that their searches share the nodes in the caches.
		parallelRange(0, hi, threads, func(a, b int) {
			q := 0
			for _, k := range tree.id[a:b] {
				if int(k) >= lo {
					q++
				}
			}
			var near kdNearest
			var buf []int32
			out := make([]int32, 0, q*min(m, hi))
			for j := a; j < b; j++ {
				k := tree.id[j]
				if int(k) < lo {
					continue
				}
				buf = near.find(tree, tree.pts[j*d:j*d+d], m, k, buf)
				s := len(out)
				out = append(out, buf...)
				nbr[k] = out[s:len(out):len(out)]
			}
		})
		lo = hi
	}
	return nbr
}

// bruteNearest returns the positions of the at most m points nearest to
// position k among positions [0, k), in increasing order.
func bruteNearest(x []float64, d int, order []int, k, m int) []int32 {
	type cand struct {
		dist float64
		pos  int32
	}
	r := order[k]
	c := make([]cand, k)
	for j := range k {
		q := order[j]
		c[j] = cand{sqDist(x[r*d:r*d+d], x[q*d:q*d+d]), int32(j)}
	}
	slices.SortFunc(c, func(a, b cand) int {
		if a.dist != b.dist {
			if a.dist < b.dist {
				return -1
			}
			return 1
		}
		return int(a.pos - b.pos)
	})
	out := make([]int32, 0, min(k, m))
	for _, v := range c[:min(k, m)] {
		out = append(out, v.pos)
	}
	slices.Sort(out)
	return out
}

// NearestPoints returns, for each of the t query points q (t x d), its at
// most m nearest among the points rows of x (d coordinates each), as
// indices into rows, in increasing order, on threads goroutines.
func NearestPoints(x []float64, d int, rows []int, q []float64, t, m, threads int) [][]int32 {
	tree := newKDTree(x, d, rows, threads)
	nbr := make([][]int32, t)
	parallelRange(0, t, threads, func(a, b int) {
		var near kdNearest
		var buf []int32
		out := make([]int32, 0, (b-a)*m)
		for j := a; j < b; j++ {
			buf = near.find(tree, q[j*d:j*d+d], m, math.MaxInt32, buf)
			s := len(out)
			out = append(out, buf...)
			nbr[j] = out[s:len(out):len(out)]
		}
	})
	return nbr
}

// parallelRange runs fn on [lo, hi) split into contiguous chunks over
// threads goroutines (0: GOMAXPROCS).
func parallelRange(lo, hi, threads int, fn func(a, b int)) {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	n := hi - lo
	if n <= 0 {
		return
	}
	chunks := min(n, 8*threads)
	var wg sync.WaitGroup
	next := make(chan int, chunks)
	for c := range chunks {
		next <- c
	}
	close(next)
	for range min(threads, chunks) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range next {
				fn(lo+c*n/chunks, lo+(c+1)*n/chunks)
			}
		}()
	}
	wg.Wait()
}
