package core

import (
	"cmp"
	"math"
	"slices"
	"testing"
)

// TestWidenLazyMatchesRecompute checks widenSites' update of a lazy EP's
// Sigma (Woodbury's identity on the sweeps' lower triangle) against Sigma
// rebuilt from the widened sites: the same sites, and factors whose order,
// L, bounds and log Z agree to rounding; that the widening changed the
// sites it should (widenSet's rule, checked against the cavities of the
// unwidened EP), and only those; and that it kept EP's mean and widened
// the variances. A third of the variables have their mean 3 sd above
// their lower bound (confident points: small sites, cavity z above 1), a
// third an upper bound as well (never widened), the rest a lower bound at
// their mean.
func TestWidenLazyMatchesRecompute(t *testing.T) {
	n := epRows + epDelay + 37
	box := Box{N: n, Cov: randSPD(n, 13), Lower: make([]float64, n), Upper: make([]float64, n), Mean: make([]float64, n)}
	for i := range n {
		box.Upper[i] = math.Inf(1)
		switch i % 3 {
		case 0:
			box.Mean[i] = 3 * math.Sqrt(box.Cov[i*n+i])
		case 1:
			box.Mean[i] = 3 * math.Sqrt(box.Cov[i*n+i])
			box.Upper[i] = 2 * box.Mean[i]
		}
	}
	plain, err := newEP(box, 0, EPTol, nil, false, widenNone)
	if err != nil {
		t.Fatal(err)
	}
	full, err := newEP(box, 0, EPTol, nil, false, widenAlways)
	if err != nil {
		t.Fatal(err)
	}
	lazy, err := newEP(box, 0, EPTol, nil, true, widenAlways)
	if err != nil {
		t.Fatal(err)
	}
	// The rule, from the unwidened EP's cavities.
	byTau := make([]int, n)
	for i := range byTau {
		byTau[i] = i
	}
	slices.SortStableFunc(byTau, func(x, y int) int { return cmp.Compare(plain.Tau[x], plain.Tau[y]) })
	searched := byTau[:int(WidenFraction*float64(n))]
	var set []int
	for _, i := range searched {
		s2 := plain.Sigma[i*n+i]
		vc := 1 / (1/s2 - plain.Tau[i])
		mc := vc * (plain.M[i]/s2 - plain.Nu[i])
		if z := (mc - plain.a[i]) / math.Sqrt(vc); z >= WidenMinZ && math.IsInf(plain.b[i], 1) {
			set = append(set, i)
		}
	}
	slices.Sort(set)
	if len(set) < n/10 {
		t.Fatalf("%d sites widened, want more: the test's confident points are not selected", len(set))
	}
	s := make([]float64, n)
	for i := range s {
		s[i] = plain.Sigma[i*n+i]
	}
	if got := widenSet(plain.Tau, plain.Nu, plain.M, s, plain.a, plain.b); !slices.Equal(got, set) {
		t.Fatalf("widenSet %v, want %v", got, set)
	}
	if k := WidenMinN - 1; widenSet(plain.Tau[:k], plain.Nu[:k], plain.M[:k], s[:k], plain.a[:k], plain.b[:k]) != nil {
		t.Fatalf("sites widened on %d variables, fewer than WidenMinN", k)
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
