package core

import (
	"math"
	"slices"
	"testing"
)

// TestWidenLazyMatchesRecompute checks widenSites' update of a lazy EP's
// Sigma (Woodbury's identity on the sweeps' lower triangle) against Sigma
// rebuilt from the widened sites: the same sites, and factors whose order,
// L, bounds and log Z agree to rounding; that the widening changed the
// sites it should, and only those; and that it kept EP's mean and widened
// the variances.
func TestWidenLazyMatchesRecompute(t *testing.T) {
	n := epRows + epDelay + 37
	box := Box{N: n, Cov: randSPD(n, 13)}
	plain, err := newEP(box, 0, EPTol, nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	full, err := newEP(box, 0, EPTol, nil, false, true)
	if err != nil {
		t.Fatal(err)
	}
	lazy, err := newEP(box, 0, EPTol, nil, true, true)
	if err != nil {
		t.Fatal(err)
	}
	set := widenSet(plain.Tau)
	if len(set) != int(WidenFraction*float64(n)) {
		t.Fatalf("%d sites widened, want %d", len(set), int(WidenFraction*float64(n)))
	}
	in := make([]bool, n)
	for _, i := range set {
		in[i] = true
	}
	const tol = 1e-9 // rounding, on entries of order 1
	for i := range n {
		want, wnu := plain.Tau[i], plain.Nu[i]
		if in[i] {
			want, wnu = want*WidenFactor, wnu-(1-WidenFactor)*want*plain.M[i]
		}
		if full.Tau[i] != lazy.Tau[i] || full.Nu[i] != lazy.Nu[i] {
			t.Fatalf("site %d: tau %v, %v, nu %v, %v: the lazy EP's differ", i, full.Tau[i], lazy.Tau[i], full.Nu[i], lazy.Nu[i])
		}
		if full.Tau[i] != want || math.Abs(full.Nu[i]-wnu) > tol*(1+math.Abs(wnu)) {
			t.Fatalf("site %d: tau %v, nu %v; want %v, %v", i, full.Tau[i], full.Nu[i], want, wnu)
		}
		if math.Abs(full.M[i]-plain.M[i]) > tol || math.Abs(lazy.M[i]-plain.M[i]) > tol {
			t.Fatalf("mean %d: %v, %v widened, %v before", i, full.M[i], lazy.M[i], plain.M[i])
		}
		if in[i] && plain.Tau[i] > slices.Max(plain.Tau)/2 {
			t.Fatalf("site %d (tau %v) widened", i, plain.Tau[i])
		}
	}
	ord := Ordering{Kind: OrderGreedy}
	f, err := full.Factor(ord)
	if err != nil {
		t.Fatal(err)
	}
	g, err := lazy.Factor(ord)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.Perm, g.Perm) {
		t.Fatal("the widened factors' orders differ")
	}
	for i := range f.L {
		if math.Abs(f.L[i]-g.L[i]) > tol {
			t.Fatalf("L[%d]: %v by the recompute, %v by the update", i, f.L[i], g.L[i])
		}
	}
	for i := range n {
		if math.Abs(f.A[i]-g.A[i]) > tol*(1+math.Abs(f.A[i])) {
			t.Fatalf("A[%d]: %v against %v", i, f.A[i], g.A[i])
		}
	}
	if math.Abs(f.ep.logZ-g.ep.logZ) > tol*(1+math.Abs(f.ep.logZ)) {
		t.Fatalf("log Z: %v by the recompute, %v by the update", f.ep.logZ, g.ep.logZ)
	}
	// The widened Gaussian is wider on the widened variables.
	for _, i := range set {
		if !(full.Sigma[i*n+i] > plain.Sigma[i*n+i]) {
			t.Fatalf("variable %d: variance %v after widening, %v before", i, full.Sigma[i*n+i], plain.Sigma[i*n+i])
		}
	}
}
