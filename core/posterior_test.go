package core

import (
	"context"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"gonum.org/v1/gonum/floats/scalar"

	"github.com/gpc-mc/gpc/internal/gemm"
)

// predictProblem is a box of n variables from testBox and t test rows:
// the covariance of n+t variables of the same form, split into the box's
// block and the test rows.
func predictProblem(n, t int) (Box, []float64, []float64) {
	all := testBox(n+t, false)
	nt := n + t
	cov := make([]float64, n*n)
	for i := range n {
		copy(cov[i*n:i*n+n], all.Cov[i*nt:i*nt+n])
	}
	r, vars := make([]float64, t*n), make([]float64, t)
	for j := range t {
		copy(r[j*n:j*n+n], all.Cov[(n+j)*nt:(n+j)*nt+n])
		vars[j] = all.Cov[(n+j)*nt+n+j]
	}
	return Box{N: n, Cov: cov, Lower: all.Lower[:n], Upper: all.Upper[:n], Mean: all.Mean[:n]}, r, vars
}

// TestPredictMatchesNaive checks the blocked, parallel prediction against
// the formula of PredictWith's doc comment evaluated directly: w by forward
// substitution, each particle's Phi(w.z/sigma) with Phi, group means
// summed particle by particle.
func TestPredictMatchesNaive(t *testing.T) {
	t.Parallel()
	const n, nt = 150, 13 // more than two blocks of the triangular solve
	box, r, vars := predictProblem(n, nt)
	f, err := NewFactor(box, Ordering{Kind: OrderGiven}, 0)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Estimate(context.Background(), f, Config{Samples: 9000, Groups: 3, Seed: 3, Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Cloud
	got := make([]Posterior, nt)
	if err := PredictWith(got, f, c, r, vars, PredictOptions{Threads: 3}); err != nil {
		t.Fatal(err)
	}
	maxLogZ := math.Inf(-1)
	for _, g := range c.Groups {
		maxLogZ = math.Max(maxLogZ, g.LogZ)
	}
	for j := range nt {
		w := make([]float64, n)
		for k := range n {
			s := r[j*n+f.Perm[k]]
			for q := range k {
				s -= f.L[k*n+q] * w[q]
			}
			w[k] = s / f.L[k*n+k]
		}
		s2 := vars[j]
		for _, v := range w {
			s2 -= v * v
		}
		sigma := math.Sqrt(s2)
		var sa, sap float64
		for _, g := range c.Groups {
			pg := 0.0
			for p := range g.Len() {
				mu := 0.0
				for k := range n {
					mu += w[k] * g.Z[p*n+k]
				}
				pg += math.Exp(g.LogW[p]) * Phi(mu/sigma)
			}
			a := float64(g.Len()) * math.Exp(g.LogZ-maxLogZ)
			sa += a
			sap += a * pg
		}
		// Rounding only: sums of 3000 terms, a triangular solve of 150.
		if want := sap / sa; !scalar.EqualWithinAbsOrRel(got[j].P, want, 1e-12, 1e-12) {
			t.Errorf("test row %d: p = %.17g, direct %.17g", j, got[j].P, want)
		}
	}
}

// TestPredictThreads checks that the posteriors, soft and hard, do not
// depend on the number of threads, bit for bit.
func TestPredictThreads(t *testing.T) {
	t.Parallel()
	const n, nt = 40, 9
	box, r, vars := predictProblem(n, nt)
	f, err := NewFactor(box, Ordering{Kind: OrderGiven}, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Groups larger than predictUnit, so a group spans several units.
	res, err := Estimate(context.Background(), f, Config{Samples: 2*predictUnit + 777, Groups: 2, Seed: 5, Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, hard := range []bool{false, true} {
		var first []Posterior
		for _, threads := range []int{1, 2, 5} {
			got := make([]Posterior, nt)
			if err := PredictWith(got, f, res.Cloud, r, vars, PredictOptions{Hard: hard, Seed: 9, Threads: threads}); err != nil {
				t.Fatal(err)
			}
			if first == nil {
				first = got
				continue
			}
			for j := range got {
				if !same(got[j].P, first[j].P) || !same(got[j].SE, first[j].SE) {
					t.Fatalf("hard=%v threads=%d: row %d: %v, one thread %v", hard, threads, j, got[j], first[j])
				}
			}
		}
	}
}

// TestSolveRows checks the blocked triangular solve against forward
// substitution, and that each of 7 rows (a group of 4 solved together and
// 3 alone) has the bits of the row solved by itself.
func TestSolveRows(t *testing.T) {
	t.Parallel()
	const n, nt = 200, 7
	box := testBox(n, false)
	f, err := NewFactor(box, Ordering{Kind: OrderGiven}, 0)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	w := make([]float64, nt*n)
	for i := range w {
		w[i] = rng.NormFloat64()
	}
	want := append([]float64(nil), w...)
	var ws gemm.Workspace
	alone := make([][]float64, nt)
	for j := range nt {
		alone[j] = append([]float64(nil), w[j*n:j*n+n]...)
		solveRowsTo(alone[j], 1, f.L, n, &ws, 2)
	}
	for j := range nt {
		x := want[j*n : j*n+n]
		for k := range n {
			s := x[k]
			for q := range k {
				s -= f.L[k*n+q] * x[q]
			}
			x[k] = s / f.L[k*n+k]
		}
	}
	solveRowsTo(w, nt, f.L, n, &ws, 2)
	for i := range w {
		if !scalar.EqualWithinAbsOrRel(w[i], want[i], 1e-12, 1e-11) {
			t.Fatalf("element %d: %v, substitution %v", i, w[i], want[i])
		}
		if w[i] != alone[i/n][i%n] {
			t.Fatalf("element %d: %v, the row solved alone %v", i, w[i], alone[i/n][i%n])
		}
	}
}

// TestPredictorPieces: a cloud given to a Predictor in pieces cut at
// random places (inside work units and tiles, across unit boundaries, one
// particle at a time) gives Predict's posteriors bit for bit, soft and
// hard; every piece is released once, and Close releases the pieces of an
// abandoned prediction.
func TestPredictorPieces(t *testing.T) {
	t.Parallel()
	const n, nt = 30, 7
	box, r, vars := predictProblem(n, nt)
	f, err := NewFactor(box, Ordering{Kind: OrderGiven}, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Groups of 3 x 4096 + 481 particles: each spans four work units, so
	// that the order in which their sums are added matters.
	res, err := Estimate(context.Background(), f, Config{Samples: 6*predictUnit + 962, Groups: 2, Seed: 8, Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Cloud
	sizes, logZ := make([]int, len(c.Groups)), make([]float64, len(c.Groups))
	for g := range c.Groups {
		sizes[g], logZ[g] = c.Groups[g].Len(), c.Groups[g].LogZ
	}
	rng := rand.New(rand.NewPCG(4, 4))
	for _, hard := range []bool{false, true} {
		opt := PredictOptions{Hard: hard, Seed: 2, Threads: 3}
		want := make([]Posterior, nt)
		if err := PredictWith(want, f, c, r, vars, opt); err != nil {
			t.Fatal(err)
		}
		for trial, maxPiece := range []int{1, 7, 300, 5000} {
			p, err := NewPredictor(f, sizes, r, vars, opt)
			if err != nil {
				t.Fatal(err)
			}
			var released, pieces int
			var mu sync.Mutex
			for g, grp := range c.Groups {
				for a := 0; a < grp.Len(); {
					b := min(grp.Len(), a+1+rng.IntN(maxPiece))
					pieces++
					p.Add(g, a, grp.Z[a*n:b*n], grp.LogW[a:b], func() { mu.Lock(); released++; mu.Unlock() })
					a = b
				}
			}
			got := make([]Posterior, nt)
			if err := p.Finish(got, logZ); err != nil {
				t.Fatal(err)
			}
			if released != pieces {
				t.Errorf("hard=%v trial %d: %d of %d pieces released", hard, trial, released, pieces)
			}
			for j := range got {
				if !same(got[j].P, want[j].P) || !same(got[j].SE, want[j].SE) {
					t.Fatalf("hard=%v, pieces of at most %d: row %d: %v, Predict %v", hard, maxPiece, j, got[j], want[j])
				}
			}
		}
		// Abandoned inside the first group's second unit (soft) or its
		// only one (hard).
		p, err := NewPredictor(f, sizes, r, vars, opt)
		if err != nil {
			t.Fatal(err)
		}
		released := 0
		var mu sync.Mutex
		for a := 0; a < predictUnit+400; a += 100 {
			p.Add(0, a, c.Groups[0].Z[a*n:(a+100)*n], c.Groups[0].LogW[a:a+100], func() { mu.Lock(); released++; mu.Unlock() })
		}
		p.Close()
		if pieces := (predictUnit + 400 + 99) / 100; released != pieces {
			t.Errorf("hard=%v: Close released %d of %d pieces", hard, released, pieces)
		}
	}
	// Every group at P = 0: an error with test rows, none without.
	dead := []float64{math.Inf(-1), math.Inf(-1)}
	for _, nt := range []int{nt, 0} {
		p, err := NewPredictor(f, sizes, r[:nt*n], vars[:nt], PredictOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for g, grp := range c.Groups {
			p.Add(g, 0, grp.Z, grp.LogW, nil)
		}
		if err := p.Finish(make([]Posterior, nt), dead); (err != nil) != (nt > 0) {
			t.Errorf("%d test rows, every group at P = 0: %v", nt, err)
		}
	}
}

// TestVecPathsAgree runs the filter (ep, met and smc on an orthant, whose
// steps go through the batch normal kernels) and the soft prediction on
// every path of the batch kernels of this build and CPU (VecPaths): the
// estimates, the clouds and the posteriors must be bit for bit the same.
// Not parallel: it sets the path for the whole package.
func TestVecPathsAgree(t *testing.T) {
	const n, nt = 37, 11 // odd sizes: the vector kernels' remainders too
	box, r, vars := predictProblem(n, nt)
	was := VecPath()
	defer SetVecPath(was)
	for _, cand := range []Candidate{{Method: MethodEP, Order: OrderGreedy}, {Method: MethodMET, Order: OrderSharp}, {Method: MethodSMC, Order: OrderShuffle}} {
		f, err := Prepare(box, cand, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		var first Result
		var firstPost []Posterior
		for i, name := range VecPaths() {
			if err := SetVecPath(name); err != nil {
				t.Fatal(err)
			}
			res, err := Estimate(context.Background(), f, Config{Method: cand.Method, Samples: 3001, Groups: 3, Seed: 4, Keep: true})
			if err != nil {
				t.Fatal(err)
			}
			post := make([]Posterior, nt)
			if err := Predict(post, f, res.Cloud, r, vars); err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				first, firstPost = res, post
				continue
			}
			if !same(res.LogP, first.LogP) || !same(res.SE, first.SE) {
				t.Errorf("%v, vec=%s: log P %v SE %v, vec=%s: %v %v", cand, name, res.LogP, res.SE, VecPaths()[0], first.LogP, first.SE)
			}
			for g := range res.Cloud.Groups {
				a, b := &res.Cloud.Groups[g], &first.Cloud.Groups[g]
				for p := range a.Z {
					if !same(a.Z[p], b.Z[p]) {
						t.Fatalf("%v, vec=%s: group %d: z[%d] = %v, vec=%s: %v", cand, name, g, p, a.Z[p], VecPaths()[0], b.Z[p])
					}
				}
				for p := range a.LogW {
					if !same(a.LogW[p], b.LogW[p]) {
						t.Fatalf("%v, vec=%s: group %d: log w[%d] = %v, vec=%s: %v", cand, name, g, p, a.LogW[p], VecPaths()[0], b.LogW[p])
					}
				}
			}
			for j := range post {
				if !same(post[j].P, firstPost[j].P) || !same(post[j].SE, firstPost[j].SE) {
					t.Errorf("%v, vec=%s: posterior %d = %v, vec=%s: %v", cand, name, j, post[j], VecPaths()[0], firstPost[j])
				}
			}
		}
	}
}
