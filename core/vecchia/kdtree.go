package vecchia

import (
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"
)

// kdLeaf is the most points a leaf of a kdTree holds: a node of more is
// split. 16 was the fastest of 8, 16, 32 and 64 on MaxMin and on
// EarlierNeighbours (m = 30) of 10^6 random two-dimensional points, on
// one thread (BenchmarkMaxMin, BenchmarkEarlierNeighbours), if within a
// few percent of 32.
const kdLeaf = 16

// kdTree is a static k-d tree of points with int32 ids, built once and
// searched by any number of goroutines. The points are copied into tree
// order, each node's points a contiguous run of it; a node's box (the
// minimum and maximum of each coordinate over its points) and the
// smallest id among them let a search skip it. A node of more than kdLeaf
// points is split in halves (the left one the smaller by one if the node
// has an odd number) at the median along the coordinate of its largest
// spread, ties broken by id, so the tree depends on the points and ids
// alone. The nodes are laid out as a binary heap's: the root is node 1 and
// node i's children are nodes 2i and 2i+1, side by side in memory (for
// two coordinates, in one 64-byte cache line); a node's points follow
// from its parent's by the halving, and a search carries them down.
type kdTree struct {
	d     int
	pts   []float64 // the points in tree order, d coordinates each
	id    []int32   // id[j]: the id of the j-th point in tree order
	box   []float64 // node i's box: box[2di:2di+d] its minima, then its maxima
	minID []int32   // minID[i]: the smallest id among node i's points
}

// newKDTree builds the k-d tree of the points rows of x (d coordinates
// each), the k-th of them with id k, on threads goroutines (0:
// GOMAXPROCS); the tree does not depend on threads.
func newKDTree(x []float64, d int, rows []int, threads int) *kdTree {
	n := len(rows)
	t := &kdTree{d: d, pts: make([]float64, n*d), id: make([]int32, n)}
	for k, r := range rows {
		copy(t.pts[k*d:k*d+d], x[r*d:r*d+d])
		t.id[k] = int32(k)
	}
	if n == 0 {
		return t
	}
	// The leaves lie at the depth where the larger halves first hold
	// kdLeaf points or fewer, or one above it.
	depth := 0
	for s := n; s > kdLeaf; s -= s / 2 {
		depth++
	}
	nodes := 1 << (depth + 1)
	t.box = make([]float64, nodes*2*d)
	t.minID = make([]int32, nodes)
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	b := kdBuilder{t: t, keys: make([]kdKey, n), pts: make([]float64, n*d), id: make([]int32, n)}
	b.build(1, 0, n, threads)
	return t
}

// kdKey is a point's coordinate along the splitting dimension, its id and
// its place in the node being split.
type kdKey struct {
	v   float64
	id  int32
	src int32
}

func (a kdKey) less(b kdKey) bool { return a.v < b.v || a.v == b.v && a.id < b.id }

// kdBuilder holds a tree under construction and its scratch space, by
// place in tree order.
type kdBuilder struct {
	t    *kdTree
	keys []kdKey
	pts  []float64
	id   []int32
}

// build makes node i, of the points [lo, hi) in tree order, and its
// subtree, the two halves of a split on goroutines of their own while
// threads > 1.
func (b *kdBuilder) build(i, lo, hi, threads int) {
	t, d := b.t, b.t.d
	bx := t.box[2*d*i : 2*d*i+2*d]
	mn, mx := bx[:d], bx[d:]
	copy(mn, t.pts[lo*d:lo*d+d])
	copy(mx, t.pts[lo*d:lo*d+d])
	minID := t.id[lo]
	for j := lo + 1; j < hi; j++ {
		for k, v := range t.pts[j*d : j*d+d] {
			if v < mn[k] {
				mn[k] = v
			}
			if v > mx[k] {
				mx[k] = v
			}
		}
		minID = min(minID, t.id[j])
	}
	t.minID[i] = minID
	if hi-lo <= kdLeaf {
		return
	}
	dim, spread := 0, mx[0]-mn[0]
	for k := 1; k < d; k++ {
		if w := mx[k] - mn[k]; w > spread {
			dim, spread = k, w
		}
	}
	mid := (lo + hi) / 2
	keys := b.keys[lo:hi]
	for j := range keys {
		keys[j] = kdKey{t.pts[(lo+j)*d+dim], t.id[lo+j], int32(j)}
	}
	nthElement(keys, mid-lo)
	pts, id := b.pts[lo*d:hi*d], b.id[lo:hi]
	for j, c := range keys {
		src := lo + int(c.src)
		copy(pts[j*d:j*d+d], t.pts[src*d:src*d+d])
		id[j] = c.id
	}
	copy(t.pts[lo*d:hi*d], pts)
	copy(t.id[lo:hi], id)
	if threads > 1 && hi-lo >= 1<<14 {
		var wg sync.WaitGroup
		wg.Go(func() { b.build(2*i, lo, mid, threads/2) })
		b.build(2*i+1, mid, hi, threads-threads/2)
		wg.Wait()
		return
	}
	b.build(2*i, lo, mid, 1)
	b.build(2*i+1, mid, hi, 1)
}

// nthElement reorders a (of distinct keys) so that a[k] is the key that
// sorting would put there, the keys before it smaller and those after it
// larger: a quickselect with the median of three (of three medians of
// three for long runs) as pivot, which falls back to sorting the run if
// it takes more than about 2 log2 len(a) rounds.
func nthElement(a []kdKey, k int) {
	lo, hi := 0, len(a)
	budget := 2*bits.Len(uint(len(a))) + 4
	for hi-lo > 12 {
		if budget == 0 {
			slices.SortFunc(a[lo:hi], func(x, y kdKey) int {
				if x.less(y) {
					return -1
				}
				return 1
			})
			return
		}
		budget--
		n := hi - lo
		m := lo + n/2
		var p int
		if n >= 128 {
			e := n / 8
			p = median3(a, median3(a, lo, lo+e, lo+2*e), median3(a, m-e, m, m+e), median3(a, hi-1-2*e, hi-1-e, hi-1))
		} else {
			p = median3(a, lo, m, hi-1)
		}
		a[p], a[hi-1] = a[hi-1], a[p]
		pv := a[hi-1]
		s := lo
		for j := lo; j < hi-1; j++ {
			if a[j].less(pv) {
				a[s], a[j] = a[j], a[s]
				s++
			}
		}
		a[s], a[hi-1] = a[hi-1], a[s]
		switch {
		case k == s:
			return
		case k < s:
			hi = s
		default:
			lo = s + 1
		}
	}
	for i := lo + 1; i < hi; i++ {
		for j := i; j > lo && a[j].less(a[j-1]); j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

// median3 returns which of i, j and l holds the median of their keys.
func median3(a []kdKey, i, j, l int) int {
	if a[j].less(a[i]) {
		i, j = j, i
	}
	// a[i] < a[j]
	if a[l].less(a[j]) {
		if a[l].less(a[i]) {
			return i
		}
		return l
	}
	return j
}

// kdNearest searches a kdTree for the m nearest points to a query among
// those of id below a limit, by the key (squared distance, id): of equal
// distances the smaller id is nearer. It keeps the m nearest found so far,
// in a max-heap once there are m of them, and skips a node whose box is
// farther from the query than the m-th nearest (strictly: a point as far
// but of smaller id may lie in it) or whose ids are all at least the
// limit. Its heap is reused across queries; one kdNearest serves one
// goroutine.
type kdNearest struct {
	t     *kdTree
	q     []float64
	limit int32
	m     int
	dist  []float64 // the kept points' squared distances: a heap, dist[0] the farthest, once there are m
	id    []int32   // their ids
	top   float64   // the m-th nearest's squared distance, +Inf while fewer are kept
	topID int32     // its id, -1 while fewer are kept
}

// find appends to dst[:0] the ids of the at most m nearest points to q
// with ids below limit, in increasing order, and returns it. Points at an
// infinite squared distance are never kept (as with gonum's k-d tree,
// which this search replaced).
func (s *kdNearest) find(t *kdTree, q []float64, m int, limit int32, dst []int32) []int32 {
	s.t, s.q, s.limit, s.m = t, q, limit, m
	s.dist, s.id = s.dist[:0], s.id[:0]
	s.top, s.topID = math.Inf(1), -1
	if n := len(t.id); m > 0 && n > 0 && t.minID[1] < limit {
		s.search(1, 0, n)
	}
	dst = append(dst[:0], s.id...)
	slices.Sort(dst)
	return dst
}

// search searches node i, of the points [lo, hi).
func (s *kdNearest) search(i, lo, hi int) {
	t := s.t
	if hi-lo <= kdLeaf {
		d := t.d
		for j := lo; j < hi; j++ {
			id := t.id[j]
			if id >= s.limit {
				continue
			}
			v := sqDist(s.q, t.pts[j*d:j*d+d])
			if v < s.top || v == s.top && id < s.topID {
				s.keep(v, id)
			}
		}
		return
	}
	mid := (lo + hi) / 2
	l, r := 2*i, 2*i+1
	dl, dr := s.boxDist(l), s.boxDist(r)
	if dr < dl {
		if t.minID[r] < s.limit && dr <= s.top {
			s.search(r, mid, hi)
		}
		if t.minID[l] < s.limit && dl <= s.top {
			s.search(l, lo, mid)
		}
		return
	}
	if t.minID[l] < s.limit && dl <= s.top {
		s.search(l, lo, mid)
	}
	if t.minID[r] < s.limit && dr <= s.top {
		s.search(r, mid, hi)
	}
}

// boxDist returns the squared distance from the query to node i's box,
// summed as sqDist sums, so that it is at most sqDist's of any point in
// the box (rounding is monotone).
func (s *kdNearest) boxDist(i int) float64 {
	d := s.t.d
	b := s.t.box[2*d*i : 2*d*i+2*d]
	mn, mx := b[:d], b[d:]
	acc := 0.0
	for k, v := range s.q {
		g := 0.0
		if v < mn[k] {
			g = mn[k] - v
		} else if v > mx[k] {
			g = v - mx[k]
		}
		acc += g * g
	}
	return acc
}

// keep adds the point (v, i), nearer than the m-th nearest kept: the m
// first found are appended, then made a heap; each later one replaces
// the heap's top.
func (s *kdNearest) keep(v float64, i int32) {
	if n := len(s.dist); n < s.m {
		s.dist, s.id = append(s.dist, v), append(s.id, i)
		if n+1 < s.m {
			return
		}
		for j := (s.m - 2) / 2; j >= 0; j-- {
			s.down(j, s.dist[j], s.id[j])
		}
	} else {
		s.down(0, v, i)
	}
	s.top, s.topID = s.dist[0], s.id[0]
}

// down places (v, i) at heap place j or below it, moving the farther of
// its children up while they are farther than it.
func (s *kdNearest) down(j int, v float64, i int32) {
	dist, id := s.dist, s.id
	n := len(dist)
	for {
		l := 2*j + 1
		if l >= n {
			break
		}
		c := l
		if r := l + 1; r < n && (dist[r] > dist[l] || dist[r] == dist[l] && id[r] > id[l]) {
			c = r
		}
		if !(dist[c] > v || dist[c] == v && id[c] > i) {
			break
		}
		dist[j], id[j] = dist[c], id[c]
		j = c
	}
	dist[j], id[j] = v, i
}

// inBox appends to dst the places in tree order of the points p with
// lo[k] <= p[k] <= hi[k] for every k, in no particular order, and returns
// it.
func (t *kdTree) inBox(dst []int32, lo, hi []float64) []int32 {
	if len(t.id) == 0 {
		return dst
	}
	return t.inBoxNode(dst, 1, 0, len(t.id), lo, hi)
}

// inBoxNode is inBox on node i, of the points [a, b).
func (t *kdTree) inBoxNode(dst []int32, i, a, b int, lo, hi []float64) []int32 {
	d := t.d
	bx := t.box[2*d*i : 2*d*i+2*d]
	mn, mx := bx[:d], bx[d:]
	inside := true
	for k := range d {
		if mx[k] < lo[k] || mn[k] > hi[k] {
			return dst
		}
		if mn[k] < lo[k] || mx[k] > hi[k] {
			inside = false
		}
	}
	if inside {
		for j := a; j < b; j++ {
			dst = append(dst, int32(j))
		}
		return dst
	}
	if b-a <= kdLeaf {
	next:
		for j := a; j < b; j++ {
			for k, v := range t.pts[j*d : j*d+d] {
				if v < lo[k] || v > hi[k] {
					continue next
				}
			}
			dst = append(dst, int32(j))
		}
		return dst
	}
	mid := (a + b) / 2
	dst = t.inBoxNode(dst, 2*i, a, mid, lo, hi)
	return t.inBoxNode(dst, 2*i+1, mid, b, lo, hi)
}
