package vecchia

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func randomPoints(n, d int, seed uint64) []float64 {
	r := rand.New(rand.NewPCG(seed, 3))
	x := make([]float64, n*d)
	for i := range x {
		x[i] = r.NormFloat64()
	}
	return x
}

// TestMaxMin checks the maxmin ordering against its definition, by brute
// force: the first point is the one nearest the mean, and each next one
// the farthest from all points before it (ties: the smaller row).
func TestMaxMin(t *testing.T) {
	for _, d := range []int{1, 2, 5} {
		n := 400
		x := randomPoints(n, d, uint64(d))
		// Some ties: a few repeated coordinates on a grid.
		for i := 0; i < 40; i++ {
			x[i*d] = float64(i % 4)
		}
		order := MaxMin(x, n, d)
		if len(order) != n {
			t.Fatalf("d = %d: %d positions for %d points", d, len(order), n)
		}
		seen := make([]bool, n)
		dist := make([]float64, n)
		for i := range dist {
			dist[i] = math.Inf(1)
		}
		for k, r := range order {
			if seen[r] {
				t.Fatalf("d = %d: row %d twice", d, r)
			}
			if k > 0 {
				best, bestD := -1, -1.0
				for i := range n {
					if !seen[i] && dist[i] > bestD {
						best, bestD = i, dist[i]
					}
				}
				if r != best {
					t.Fatalf("d = %d, position %d: row %d (distance %v), the farthest is row %d (%v)", d, k, r, dist[r], best, bestD)
				}
			}
			seen[r] = true
			for i := range n {
				dist[i] = math.Min(dist[i], sqDist(x[i*d:i*d+d], x[r*d:r*d+d]))
			}
		}
	}
}

// TestEarlierNeighbours checks the conditioning sets against a brute-force
// search, across the k-d trees' scales and the one-by-one start.
func TestEarlierNeighbours(t *testing.T) {
	for _, d := range []int{2, 3} {
		n := 1500
		x := randomPoints(n, d, 10+uint64(d))
		order := MaxMin(x, n, d)
		for _, m := range []int{1, 7, 30} {
			nb := EarlierNeighbours(x, d, order, m, 2)
			for k := range n {
				want := bruteNearest(x, d, order, k, m)
				if !slices.Equal(nb[k], want) {
					t.Fatalf("d = %d, m = %d, position %d: %v, brute force %v", d, m, k, nb[k], want)
				}
			}
		}
	}
}

// TestStructureRepeats checks that repeated points are placed after the
// point they repeat and condition on it alone, and that no other point
// conditions on a repeat.
func TestStructureRepeats(t *testing.T) {
	n, d := 300, 2
	x := randomPoints(n, d, 5)
	copy(x[10*d:11*d], x[3*d:4*d])
	copy(x[20*d:21*d], x[3*d:4*d])
	copy(x[299*d:300*d], x[0:d])
	s, err := NewStructure(x, n, d, Options{M: 12})
	if err != nil {
		t.Fatal(err)
	}
	if s.Duplicates() != 3 {
		t.Fatalf("%d repeats, want 3", s.Duplicates())
	}
	for k, r := range s.Perm {
		if dp := s.Dup[k]; dp >= 0 {
			if !slices.Equal(x[r*d:r*d+d], x[s.Perm[dp]*d:s.Perm[dp]*d+d]) || !slices.Equal(s.Nbr[k], []int32{dp}) {
				t.Errorf("position %d (row %d) repeats position %d (row %d) with neighbours %v", k, r, dp, s.Perm[dp], s.Nbr[k])
			}
			continue
		}
		for _, j := range s.Nbr[k] {
			if s.Dup[j] >= 0 {
				t.Errorf("position %d conditions on the repeat %d", k, j)
			}
		}
	}
	perm := slices.Clone(s.Perm)
	slices.Sort(perm)
	for i, r := range perm {
		if i != r {
			t.Fatalf("the order is not a permutation of the rows")
		}
	}
}

// TestTestNeighbours checks the test points' conditioning sets against a
// brute-force search among the distinct training points.
func TestTestNeighbours(t *testing.T) {
	n, d, tn, m := 500, 2, 50, 9
	x := randomPoints(n, d, 6)
	copy(x[7*d:8*d], x[2*d:3*d])
	s, err := NewStructure(x, n, d, Options{M: m})
	if err != nil {
		t.Fatal(err)
	}
	q := randomPoints(tn, d, 7)
	nb := s.TestNeighbours(q, tn, m, 2)
	for j := range tn {
		type cand struct {
			dist float64
			pos  int32
		}
		var c []cand
		for k := range n {
			if s.Dup[k] < 0 {
				c = append(c, cand{sqDist(q[j*d:j*d+d], s.x[k*d:k*d+d]), int32(k)})
			}
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
		var want []int32
		for _, v := range c[:m] {
			want = append(want, v.pos)
		}
		slices.Sort(want)
		if !slices.Equal(nb[j], want) {
			t.Fatalf("test point %d: %v, brute force %v", j, nb[j], want)
		}
	}
}
