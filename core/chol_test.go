package core

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// randSPD returns a random n x n symmetric positive definite matrix, row-major:
// G G'/n + I/10 with G standard normal.
func randSPD(n int, seed uint64) []float64 {
	r := rand.New(rand.NewPCG(seed, 3))
	g := make([]float64, n*n)
	for i := range g {
		g[i] = r.NormFloat64()
	}
	s := make([]float64, n*n)
	for i := range n {
		for j := range i + 1 {
			var v float64
			for k := range n {
				v += g[i*n+k] * g[j*n+k]
			}
			v /= float64(n)
			if i == j {
				v += 0.1
			}
			s[i*n+j], s[j*n+i] = v, v
		}
	}
	return s
}

// TestCholeskyAgreesWithGonum checks the blocked factorisation against
// gonum's mat.Cholesky on sizes around the panel and row-block widths, to
// a relative 1e-11 of the matrix's scale (both are backward stable: the
// factors agree to about cond(A) eps), and that the upper triangle is zero.
func TestCholeskyAgreesWithGonum(t *testing.T) {
	for _, n := range []int{1, 2, 7, cholBlock - 1, cholBlock, cholBlock + 1, 2*cholBlock + 5, cholRows + cholBlock + 3} {
		a := randSPD(n, uint64(n))
		var ch mat.Cholesky
		if !ch.Factorize(mat.NewSymDense(n, slices.Clone(a))) {
			t.Fatalf("n=%d: gonum refused", n)
		}
		var l mat.TriDense
		ch.LTo(&l)
		w := slices.Clone(a)
		if at := cholesky(w, n, nil, 2); at >= 0 {
			t.Fatalf("n=%d: refused at %d", n, at)
		}
		for i := range n {
			for j := range n {
				want := 0.0
				if j <= i {
					want = l.At(i, j)
				}
				if d := math.Abs(w[i*n+j] - want); d > 1e-11 || j > i && w[i*n+j] != 0 {
					t.Fatalf("n=%d: L[%d][%d] = %v, gonum %v", n, i, j, w[i*n+j], want)
				}
			}
		}
	}
}

// TestCholeskyWorkersIdentical checks that the factor, with and without
// pivoting, has the same bits whatever the goroutine count.
func TestCholeskyWorkersIdentical(t *testing.T) {
	n := cholRows + 2*cholBlock + 17
	a := randSPD(n, 5)
	box := Box{N: n, Cov: a}
	for _, kind := range []OrderKind{OrderGiven, OrderGreedy, OrderVariance} {
		factorThreadsIdentical(t, box, kind, 1, 2, 3)
	}
}

// factorThreadsIdentical fails t unless NewFactor gives box's order and
// factor bit for bit alike with each of the GOMAXPROCS values procs.
func factorThreadsIdentical(t *testing.T, box Box, kind OrderKind, procs ...int) {
	t.Helper()
	var ref *Factor
	for _, p := range procs {
		old := runtime.GOMAXPROCS(p)
		f, err := NewFactor(box, Ordering{Kind: kind}, 0)
		runtime.GOMAXPROCS(old)
		if err != nil {
			t.Fatal(err)
		}
		if ref == nil {
			ref = f
			continue
		}
		if !slices.Equal(f.Perm, ref.Perm) || !slices.Equal(f.L, ref.L) {
			t.Fatalf("%v: the factor with %d threads differs from %d thread's", kind, p, procs[0])
		}
	}
}

// TestPivotedCholeskyReconstructs checks that the pivoted factor of each
// order reproduces the permuted matrix, L L' = A[Perm][Perm], and that the
// variance order puts the largest remaining variance first (the diagonal
// of L is then nonincreasing for a unit-diagonal matrix).
func TestPivotedCholeskyReconstructs(t *testing.T) {
	n := 2*cholBlock + 11
	a := randSPD(n, 9)
	// Unit diagonal: the variance order's pivots are then L's diagonal.
	d := make([]float64, n)
	for i := range n {
		d[i] = 1 / math.Sqrt(a[i*n+i])
	}
	for i := range n {
		for j := range n {
			a[i*n+j] *= d[i] * d[j]
		}
	}
	for _, kind := range []OrderKind{OrderGreedy, OrderVariance, OrderShuffle} {
		f, err := NewFactor(Box{N: n, Cov: a}, Ordering{Kind: kind, Seed: 3}, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			for j := range i + 1 {
				var s float64
				for k := range j + 1 {
					s += f.L[i*n+k] * f.L[j*n+k]
				}
				if want := a[f.Perm[i]*n+f.Perm[j]]; math.Abs(s-want) > 1e-12 {
					t.Fatalf("%v: (L L')[%d][%d] = %v, A[Perm][Perm] %v", kind, i, j, s, want)
				}
			}
		}
		if kind == OrderVariance {
			for i := 1; i < n; i++ {
				if f.L[i*n+i] > f.L[(i-1)*n+i-1]*(1+1e-12) {
					t.Fatalf("variance order: pivot %d (%v) exceeds pivot %d (%v)", i, f.L[i*n+i], i-1, f.L[(i-1)*n+i-1])
				}
			}
		}
	}
}

// TestInvDiag checks the diagonal of the inverse against gonum's
// Cholesky.InverseTo, on a size with several row blocks.
func TestInvDiag(t *testing.T) {
	n := 2*cholRows + 29
	a := randSPD(n, 4)
	d, ok := invDiag(symSource{cov: a, n: n, lower: true})
	if !ok {
		t.Fatal("refused")
	}
	var ch mat.Cholesky
	if !ch.Factorize(mat.NewSymDense(n, slices.Clone(a))) {
		t.Fatal("gonum refused")
	}
	var inv mat.SymDense
	if err := ch.InverseTo(&inv); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if want := inv.At(i, i); math.Abs(d[i]-want) > 1e-10*want {
			t.Fatalf("(A^-1)[%d][%d] = %v, gonum %v", i, i, d[i], want)
		}
	}
	a[0] = -1
	if _, ok := invDiag(symSource{cov: a, n: n, lower: true}); ok {
		t.Fatal("accepted a matrix with a negative variance")
	}
}

// TestGreedyPickThreads checks that the greedy order's pivots, picked in
// chunks over the workers from 2*pickChunk remaining variables on, are the
// serial scan's: the same order and factor, bit for bit, with 1 and 3
// threads.
func TestGreedyPickThreads(t *testing.T) {
	if testing.Short() {
		t.Skip("a factorisation of 2200 variables")
	}
	n := 2*pickChunk + 152
	r := rand.New(rand.NewPCG(5, 6))
	x := make([]float64, 2*n)
	for i := range x {
		x[i] = r.NormFloat64()
	}
	cov := make([]float64, n*n)
	for i := range n {
		for j := range n {
			d0, d1 := x[2*i]-x[2*j], x[2*i+1]-x[2*j+1]
			cov[i*n+j] = 4 * math.Exp(-(d0*d0 + d1*d1))
		}
		cov[i*n+i]++
	}
	factorThreadsIdentical(t, Box{N: n, Cov: cov}, OrderGreedy, 1, 3)
}

// TestPartialCholesky checks PartialCholesky against its definition: the
// leading columns' factor L11 (gonum's factor of W11), L21 = W21 L11^-T
// by substitution, and the trailing lower triangle W22 - L21 L21', on cuts
// inside and at the edges of panels; and that it reports a leading block
// that is not positive definite at its failing position.
func TestPartialCholesky(t *testing.T) {
	const n = 2*cholBlock + 37
	a := randSPD(n, 11)
	for _, cols := range []int{0, 1, 40, cholBlock, cholBlock + 1, 2*cholBlock + 3, n - 1, n} {
		w := slices.Clone(a)
		if at := PartialCholesky(w, n, cols, 3); at >= 0 {
			t.Fatalf("cols=%d: refused at %d", cols, at)
		}
		// The reference, in plain loops: column by column (right-looking).
		r := slices.Clone(a)
		for j := range cols {
			r[j*n+j] = math.Sqrt(r[j*n+j])
			for p := j + 1; p < n; p++ {
				r[p*n+j] /= r[j*n+j]
			}
			for p := j + 1; p < n; p++ {
				for q := j + 1; q <= p; q++ {
					r[p*n+q] -= r[p*n+j] * r[q*n+j]
				}
			}
		}
		for i := range n {
			for j := range n {
				want := 0.0
				if j <= i {
					want = r[i*n+j]
				}
				if d := math.Abs(w[i*n+j] - want); d > 1e-11 || j > i && w[i*n+j] != 0 {
					t.Fatalf("cols=%d: w[%d][%d] = %v, want %v", cols, i, j, w[i*n+j], want)
				}
			}
		}
		w2 := slices.Clone(a)
		PartialCholesky(w2, n, cols, 1)
		if !slices.Equal(w, w2) {
			t.Fatalf("cols=%d: the bits depend on the workers", cols)
		}
	}
	b := slices.Clone(a)
	b[50*n+50] = -1
	if at := PartialCholesky(b, n, 100, 2); at != 50 {
		t.Fatalf("an indefinite leading block refused at %d, want 50", at)
	}
	b = slices.Clone(a)
	b[150*n+150] = -1
	if at := PartialCholesky(b, n, 100, 2); at != -1 {
		t.Fatalf("a trailing entry refused the leading block at %d", at)
	}
}
