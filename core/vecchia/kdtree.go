package vecchia

import (
	"math"
	"math/bits"
	"slices"
)

// kdLeaf is the most points a leaf of a kdTree holds: a node of more is
// split. 16 was the fastest of 8, 16 and 32 on maxmin and on the
// neighbour searches of 10^5 and 10^6 two-dimensional points (m = 30).
const kdLeaf = 16

// kdTree is a static k-d tree of points with int32 ids, built once and
// searched by any number of goroutines. The points are copied into tree
// order, each node's points a contiguous run of it; a node's box (the
// minimum and maximum of each coordinate over its points) and the
// smallest id among them let a search skip it. A node of more than kdLeaf
// points is split at its median along the coordinate of its largest
// spread, ties broken by id, so the tree depends on the points and ids
// alone.
type kdTree struct {
	d     int
	pts   []float64 // the points in tree order, d coordinates each
	id    []int32   // id[j]: the id of the j-th point in tree order
	nodes []kdNode  // in preorder: node i's left child is node i+1
	box   []float64 // node i's box: box[2di:2di+d] its minima, then its maxima
}

// kdNode is a node of a kdTree.
type kdNode struct {
	lo, hi int32 // its points: [lo, hi) in tree order
	right  int32 // its right child, 0 for a leaf
	minID  int32 // the smallest id among its points
}

// newKDTree builds the k-d tree of the points rows of x (d coordinates
// each), the k-th of them with id k.
func newKDTree(x []float64, d int, rows []int) *kdTree {
	n := len(rows)
	t := &kdTree{d: d, pts: make([]float64, n*d), id: make([]int32, n)}
	for k, r := range rows {
		copy(t.pts[k*d:k*d+d], x[r*d:r*d+d])
		t.id[k] = int32(k)
	}
	if n == 0 {
		return t
	}
	nodes := kdNodes(n)
	t.nodes = make([]kdNode, 0, nodes)
	t.box = make([]float64, 0, nodes*2*d)
	b := kdBuilder{t: t, keys: make([]kdKey, n), pts: make([]float64, n*d), id: make([]int32, n)}
	b.build(0, n)
	return t
}

// kdNodes returns the number of nodes of a tree of n > 0 points.
func kdNodes(n int) int {
	if n <= kdLeaf {
		return 1
	}
	return 1 + kdNodes(n/2) + kdNodes(n-n/2)
}

// kdKey is a point's coordinate along the splitting dimension, its id and
// its place in the node being split.
type kdKey struct {
	v   float64
	id  int32
	src int32
}

func (a kdKey) less(b kdKey) bool { return a.v < b.v || a.v == b.v && a.id < b.id }

// kdBuilder holds a tree under construction and its scratch space.
type kdBuilder struct {
	t    *kdTree
	keys []kdKey
	pts  []float64
	id   []int32
}

// build makes the node of the points [lo, hi) (in tree order) and its
// subtree, and returns the node's index.
func (b *kdBuilder) build(lo, hi int) int32 {
	t, d := b.t, b.t.d
	i := int32(len(t.nodes))
	s := len(t.box)
	t.box = append(t.box, t.pts[lo*d:lo*d+d]...)
	t.box = append(t.box, t.pts[lo*d:lo*d+d]...)
	mn, mx := t.box[s:s+d], t.box[s+d:s+2*d]
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
	t.nodes = append(t.nodes, kdNode{lo: int32(lo), hi: int32(hi), minID: minID})
	if hi-lo <= kdLeaf {
		return i
	}
	dim, spread := 0, mx[0]-mn[0]
	for k := 1; k < d; k++ {
		if w := mx[k] - mn[k]; w > spread {
			dim, spread = k, w
		}
	}
	mid := (lo + hi) / 2
	keys := b.keys[:hi-lo]
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
	b.build(lo, mid)
	t.nodes[i].right = b.build(mid, hi)
	return i
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
// distances the smaller id is nearer. It keeps the m nearest found so far
// in a max-heap (with an infinite sentinel for each place not yet taken),
// and skips a node whose box is farther from the query than the m-th
// nearest (strictly: a point as far but of smaller id may lie in it) or
// whose ids are all at least the limit. Its heap is reused across
// queries; one kdNearest serves one goroutine.
type kdNearest struct {
	t     *kdTree
	q     []float64
	limit int32
	dist  []float64 // the heap: dist[0] the farthest kept
	id    []int32   // the kept points' ids, -1 for a sentinel
}

// find appends to dst[:0] the ids of the at most m nearest points to q
// with ids below limit, in increasing order, and returns it. Points at an
// infinite squared distance are never kept (as with gonum's k-d tree,
// which this search replaces).
func (s *kdNearest) find(t *kdTree, q []float64, m int, limit int32, dst []int32) []int32 {
	s.t, s.q, s.limit = t, q, limit
	s.dist, s.id = s.dist[:0], s.id[:0]
	for range m {
		s.dist = append(s.dist, math.Inf(1))
		s.id = append(s.id, -1)
	}
	if m > 0 && len(t.nodes) > 0 && t.nodes[0].minID < limit {
		s.search(0)
	}
	dst = dst[:0]
	for _, i := range s.id {
		if i >= 0 {
			dst = append(dst, i)
		}
	}
	slices.Sort(dst)
	return dst
}

func (s *kdNearest) search(ni int32) {
	t := s.t
	nd := t.nodes[ni]
	if nd.right == 0 {
		d := t.d
		for j := int(nd.lo); j < int(nd.hi); j++ {
			i := t.id[j]
			if i >= s.limit {
				continue
			}
			v := sqDist(s.q, t.pts[j*d:j*d+d])
			if v < s.dist[0] || v == s.dist[0] && i < s.id[0] {
				s.replaceTop(v, i)
			}
		}
		return
	}
	l, r := ni+1, nd.right
	dl, dr := s.boxDist(l), s.boxDist(r)
	if dr < dl {
		l, r, dl, dr = r, l, dr, dl
	}
	if t.nodes[l].minID < s.limit && dl <= s.dist[0] {
		s.search(l)
	}
	if t.nodes[r].minID < s.limit && dr <= s.dist[0] {
		s.search(r)
	}
}

// boxDist returns the squared distance from the query to node ni's box,
// summed as sqDist sums, so that it is at most sqDist's of any point in
// the box (rounding is monotone).
func (s *kdNearest) boxDist(ni int32) float64 {
	d := s.t.d
	b := s.t.box[2*d*int(ni) : 2*d*int(ni)+2*d]
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

// replaceTop replaces the farthest kept point with (v, i) and restores
// the heap.
func (s *kdNearest) replaceTop(v float64, i int32) {
	dist, id := s.dist, s.id
	n := len(dist)
	j := 0
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
	if len(t.nodes) == 0 {
		return dst
	}
	return t.inBoxNode(dst, 0, lo, hi)
}

func (t *kdTree) inBoxNode(dst []int32, ni int32, lo, hi []float64) []int32 {
	d := t.d
	b := t.box[2*d*int(ni) : 2*d*int(ni)+2*d]
	mn, mx := b[:d], b[d:]
	inside := true
	for k := range d {
		if mx[k] < lo[k] || mn[k] > hi[k] {
			return dst
		}
		if mn[k] < lo[k] || mx[k] > hi[k] {
			inside = false
		}
	}
	nd := t.nodes[ni]
	if inside {
		for j := nd.lo; j < nd.hi; j++ {
			dst = append(dst, j)
		}
		return dst
	}
	if nd.right == 0 {
	next:
		for j := int(nd.lo); j < int(nd.hi); j++ {
			for k, v := range t.pts[j*d : j*d+d] {
				if v < lo[k] || v > hi[k] {
					continue next
				}
			}
			dst = append(dst, int32(j))
		}
		return dst
	}
	dst = t.inBoxNode(dst, ni+1, lo, hi)
	return t.inBoxNode(dst, nd.right, lo, hi)
}
