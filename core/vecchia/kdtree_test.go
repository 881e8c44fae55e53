package vecchia

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// kdCase is a point set for the k-d tree's tests.
type kdCase struct {
	name string
	x    []float64
	n, d int
}

// kdCases returns point sets that stress the tree: random points in 2 and
// 5 dimensions, points on a small integer grid (many exact ties in every
// coordinate, and exact duplicates), a constant column, and sizes below,
// at and above a leaf's.
func kdCases() []kdCase {
	var cs []kdCase
	for _, n := range []int{1, 5, kdLeaf, kdLeaf + 1, 100, 1000} {
		for _, d := range []int{2, 5} {
			cs = append(cs, kdCase{fmt.Sprintf("random-n%d-d%d", n, d), randomPoints(n, d, uint64(7*n+d)), n, d})
			// A 4 x 4 x ... grid, its points repeated (n > 4^d: duplicates).
			r := rand.New(rand.NewPCG(uint64(n), uint64(d)))
			g := make([]float64, n*d)
			for i := range g {
				g[i] = float64(r.IntN(4))
			}
			cs = append(cs, kdCase{fmt.Sprintf("grid-n%d-d%d", n, d), g, n, d})
			// Rounded to one decimal, its second column constant.
			c := randomPoints(n, d, uint64(n+d))
			for i := range n {
				for k := range d {
					c[i*d+k] = math.Round(c[i*d+k]*10) / 10
				}
				c[i*d+1] = 0.3
			}
			cs = append(cs, kdCase{fmt.Sprintf("rounded-const-n%d-d%d", n, d), c, n, d})
		}
	}
	// Normal points rounded to one decimal: many points on a box's sides
	// in maxmin (gonum's k-d tree, which the tree replaced, missed some
	// of them at its splits' ties).
	for _, n := range []int{1000, 3000} {
		x := randomPoints(n, 2, uint64(n))
		for i := range x {
			x[i] = math.Round(x[i]*10) / 10
		}
		cs = append(cs, kdCase{fmt.Sprintf("rounded-n%d-d2", n), x, n, 2})
	}
	return cs
}

// checkKDTree checks the tree's invariants: every point of a node in its
// box, its smallest id, and the points a copy of the rows' with ids in
// place.
func checkKDTree(t *testing.T, tr *kdTree, x []float64, rows []int) {
	t.Helper()
	d := tr.d
	for j, i := range tr.id {
		if !slices.Equal(tr.pts[j*d:j*d+d], x[rows[i]*d:rows[i]*d+d]) {
			t.Fatalf("tree place %d: id %d's point %v, row %d is %v", j, i, tr.pts[j*d:j*d+d], rows[i], x[rows[i]*d:rows[i]*d+d])
		}
	}
	ids := slices.Clone(tr.id)
	slices.Sort(ids)
	for k, i := range ids {
		if int(i) != k {
			t.Fatalf("the ids are not 0..n-1")
		}
	}
	var walk func(i, lo, hi int)
	walk = func(i, lo, hi int) {
		b := tr.box[2*d*i : 2*d*i+2*d]
		minID := int32(math.MaxInt32)
		for j := lo; j < hi; j++ {
			minID = min(minID, tr.id[j])
			for k, v := range tr.pts[j*d : j*d+d] {
				if v < b[k] || v > b[d+k] {
					t.Fatalf("node %d: point %d outside the box", i, j)
				}
			}
		}
		if minID != tr.minID[i] {
			t.Fatalf("node %d: smallest id %d, stored %d", i, minID, tr.minID[i])
		}
		if hi-lo > kdLeaf {
			walk(2*i, lo, (lo+hi)/2)
			walk(2*i+1, (lo+hi)/2, hi)
		}
	}
	if len(tr.id) > 0 {
		walk(1, 0, len(tr.id))
	}
}

// bruteKNN returns the ids of the at most m points of rows (the k-th with
// id k) nearest q among ids below limit, by (squared distance, id), in
// increasing order.
func bruteKNN(x []float64, d int, rows []int, q []float64, m int, limit int32) []int32 {
	type cand struct {
		dist float64
		id   int32
	}
	var c []cand
	for k, r := range rows {
		if int32(k) < limit {
			c = append(c, cand{sqDist(q, x[r*d:r*d+d]), int32(k)})
		}
	}
	slices.SortFunc(c, func(a, b cand) int {
		if a.dist != b.dist {
			if a.dist < b.dist {
				return -1
			}
			return 1
		}
		return int(a.id - b.id)
	})
	out := []int32{}
	for _, v := range c[:min(len(c), m)] {
		out = append(out, v.id)
	}
	slices.Sort(out)
	return out
}

// TestKDNearest checks the k-d tree's nearest-neighbour search against a
// brute-force one, exactly: queries at the points themselves (distance 0
// to their duplicates), at random points and at points between grid
// values, with limits 0, 1, about half the ids, all of them and none.
func TestKDNearest(t *testing.T) {
	for _, c := range kdCases() {
		// The tree's rows in a scrambled order, so that ids are not rows.
		rows := rand.New(rand.NewPCG(uint64(c.n), 1)).Perm(c.n)
		tr := newKDTree(c.x, c.d, rows, 2)
		checkKDTree(t, tr, c.x, rows)
		var near kdNearest
		var got []int32
		queries := slices.Clone(c.x[:min(c.n, 60)*c.d])
		queries = append(queries, randomPoints(20, c.d, uint64(c.n)+99)...)
		for i := range 20 * c.d {
			queries = append(queries, float64(i%7)*0.5)
		}
		for qi := range len(queries) / c.d {
			q := queries[qi*c.d : qi*c.d+c.d]
			for _, limit := range []int32{0, 1, int32(c.n / 2), int32(qi % (c.n + 1)), int32(c.n), math.MaxInt32} {
				for _, m := range []int{1, 3, 30} {
					got = near.find(tr, q, m, limit, got)
					want := bruteKNN(c.x, c.d, rows, q, m, limit)
					if !slices.Equal(got, want) {
						t.Fatalf("%s: query %v, m = %d, limit %d: %v, brute force %v", c.name, q, m, limit, got, want)
					}
				}
			}
		}
	}
}

// TestKDInBox checks the k-d tree's box query against a scan of all
// points, on boxes whose sides fall on the points' own coordinates (the
// inclusive bounds' ties) and between them.
func TestKDInBox(t *testing.T) {
	for _, c := range kdCases() {
		rows := make([]int, c.n)
		for i := range rows {
			rows[i] = i
		}
		tr := newKDTree(c.x, c.d, rows, 2)
		r := rand.New(rand.NewPCG(uint64(c.n), 2))
		lo, hi := make([]float64, c.d), make([]float64, c.d)
		var got []int32
		for b := range 200 {
			for k := range c.d {
				u, v := c.x[r.IntN(c.n)*c.d+k], c.x[r.IntN(c.n)*c.d+k]
				if b%3 == 1 {
					u += r.NormFloat64() * 0.3
				}
				if b%3 == 2 {
					v = u
				}
				lo[k], hi[k] = min(u, v), max(u, v)
			}
			got = got[:0]
			for _, p := range tr.inBox(nil, lo, hi) {
				got = append(got, tr.id[p])
			}
			slices.Sort(got)
			var want []int32
			for i := range c.n {
				in := true
				for k, v := range c.x[i*c.d : i*c.d+c.d] {
					in = in && lo[k] <= v && v <= hi[k]
				}
				if in {
					want = append(want, int32(i))
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s: box %v to %v: %v, brute force %v", c.name, lo, hi, got, want)
			}
		}
	}
}

// bruteMaxMin is maxMinInto without the tree and the heap: each step
// scans all points for the farthest (ties: the smaller row), and updates
// the distances of the points in the same box of the chosen point that
// maxMinInto's tree query visits.
func bruteMaxMin(x []float64, n, d int) []int {
	first := nearestMean(x, n, d)
	key := make([]float64, n)
	chosen := make([]bool, n)
	chosen[first] = true
	for i := range n {
		key[i] = sqDist(x[i*d:i*d+d], x[first*d:first*d+d])
	}
	order := []int{first}
	for len(order) < n {
		i := -1
		for j := range n {
			if !chosen[j] && (i < 0 || key[j] > key[i]) {
				i = j
			}
		}
		chosen[i] = true
		order = append(order, i)
		xi := x[i*d : i*d+d]
		r := math.Sqrt(key[i])
		for j := range n {
			if chosen[j] {
				continue
			}
			in := true
			for k, v := range x[j*d : j*d+d] {
				in = in && xi[k]-r <= v && v <= xi[k]+r
			}
			if s := sqDist(x[j*d:j*d+d], xi); in && s < key[j] {
				key[j] = s
			}
		}
	}
	return order
}

// TestKDMaxMin checks MaxMin and EarlierNeighbours against brute force on
// the tree's point sets (ties and duplicates included).
func TestKDMaxMin(t *testing.T) {
	for _, c := range kdCases() {
		order := MaxMin(c.x, c.n, c.d)
		if want := bruteMaxMin(c.x, c.n, c.d); !slices.Equal(order, want) {
			t.Fatalf("%s: maxmin %v, brute force %v", c.name, order, want)
		}
		for _, m := range []int{1, 30} {
			nb := EarlierNeighbours(c.x, c.d, order, m, 2)
			for k := range c.n {
				if want := bruteNearest(c.x, c.d, order, k, m); !slices.Equal(nb[k], want) {
					t.Fatalf("%s, m = %d, position %d: %v, brute force %v", c.name, m, k, nb[k], want)
				}
			}
		}
	}
}

// TestNthElement checks the selection against sorting, on runs that
// trouble quickselects: sorted, reversed, organ pipe, sawtooth and one
// value throughout (the ids decide), and random.
func TestNthElement(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 13, 100, 129, 1000, 5000} {
		patterns := map[string]func(i int) float64{
			"sorted":   func(i int) float64 { return float64(i) },
			"reversed": func(i int) float64 { return float64(n - i) },
			"organ":    func(i int) float64 { return float64(min(i, n-i)) },
			"sawtooth": func(i int) float64 { return float64(i % 7) },
			"constant": func(int) float64 { return 1 },
			"random":   func(int) float64 { return r.NormFloat64() },
		}
		for name, f := range patterns {
			a := make([]kdKey, n)
			ids := r.Perm(n)
			for i := range a {
				a[i] = kdKey{f(i), int32(ids[i]), int32(i)}
			}
			want := slices.Clone(a)
			slices.SortFunc(want, func(x, y kdKey) int {
				if x.less(y) {
					return -1
				}
				return 1
			})
			for _, k := range []int{0, n / 3, n / 2, n - 1} {
				b := slices.Clone(a)
				nthElement(b, k)
				if b[k] != want[k] {
					t.Fatalf("%s, n = %d, k = %d: %v, sorted %v", name, n, k, b[k], want[k])
				}
				for i := range b {
					if i < k && !b[i].less(b[k]) || i > k && !b[k].less(b[i]) {
						t.Fatalf("%s, n = %d, k = %d: %v at %d", name, n, k, b[i], i)
					}
				}
			}
		}
	}
}
