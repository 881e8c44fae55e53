package vecchia

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/gp"
)

// manyFeatureModel is a classifier whose conditionals are weak beside its
// labels' information everywhere, as on real tables with many features:
// n points in eight dimensions with an RBF kernel of length scale alpha
// about their spacing and a large signal variance beta, few neighbours, and every tenth point a repeat
// of an earlier one (its label may differ); tests test rows, two of them
// repeating training points.
func manyFeatureModel(t testing.TB, n, m, tests int, alpha, beta float64) *Model {
	t.Helper()
	const d = 8
	r := rand.New(rand.NewPCG(uint64(n), 17))
	x := make([]float64, n*d)
	for i := range n {
		if i%10 == 9 {
			copy(x[i*d:i*d+d], x[(i/3)*d:(i/3)*d+d])
			continue
		}
		for j := range d {
			x[i*d+j] = r.Float64()
		}
	}
	y := make([]float64, n)
	for i := range n {
		f := math.Sin(3*x[i*d]) + x[i*d+1] - x[i*d+2]*x[i*d+3] + 0.3*r.NormFloat64()
		y[i] = 1
		if f < 0.3 {
			y[i] = -1
		}
	}
	tx := make([]float64, tests*d)
	for i := range tests {
		for j := range d {
			tx[i*d+j] = r.Float64()
		}
	}
	if tests >= 2 {
		copy(tx[:d], x[5*d:5*d+d])
		copy(tx[d:2*d], x[19*d:19*d+d]) // a repeated point
	}
	s, err := NewStructure(x, n, d, Options{M: m})
	if err != nil {
		t.Fatal(err)
	}
	k := &gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{alpha}, Beta: beta}
	md, err := NewClassifier(s, k, x, y, DefaultNugget, tx, s.TestNeighbours(tx, tests, m, 0), 0)
	if err != nil {
		t.Fatal(err)
	}
	return md
}

// TestCompleteProposal checks the complete proposal on a model whose
// block's rule asks for more than MaxBlock rows (lowered to 150 of 540
// regular rows, so that the test is small): it is chosen, its factor
// is the exact one (T'T = A'A + diag(Tau) to rounding), its estimate and
// test posteriors agree with core's dense estimator on the covariance the
// model implies within 4 combined standard errors, its standard error is
// trusted and at most half that of the block with the incomplete factor, its bits do not depend on the thread count, and a plan of it
// (Parts) gives the same estimate.
func TestCompleteProposal(t *testing.T) {
	defer func(c int) { blockCap = c }(blockCap)
	blockCap = 150 // MaxBlock for a model of 600 rows
	m := manyFeatureModel(t, 600, 10, 12, 1, 1000)
	p, err := Prepare(context.Background(), m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Complete() || p.Block != m.N || p.SiteScale != 1 {
		t.Fatalf("block %d of %d, site scale %v: want the complete proposal (the rule asks for %d rows)", p.Block, m.N, p.SiteScale, blockRule(m, p.Laplace.Tau))
	}
	// T'T against A'A + diag(Tau), entry by entry on the dense square.
	n := m.N
	a := newTri(m)
	a.priorFactor(m)
	want := denseOf(a, true)
	for k := range n {
		want[k*n+k] += p.tau[k]
	}
	got := denseOf(p.prop, true)
	for i := range n * n {
		if math.Abs(got[i]-want[i]) > 1e-8*(1+math.Abs(want[i])) {
			t.Fatalf("T'T differs from A'A + diag(Tau) at (%d, %d): %v, want %v", i/n, i%n, got[i], want[i])
		}
	}
	cfg := core.Config{Samples: 4000, Seed: 3}
	res, post := vecchiaPosteriors(t, p, cfg)
	if ok, why := res.Trust(); !ok {
		t.Errorf("the standard error is not trusted: %s", why)
	}
	cov, cross, vars := m.Implied()
	ref, refPost := densePosteriors(t, n, cov, m.Lower, m.Upper, cross, vars, core.Config{Samples: 20000, Seed: 4})
	checkAgainst(t, res, ref, post, refPost)

	// The block and the incomplete factor on the same model: unbiased too,
	// but the dropped fill-in costs variance (measured: se 0.086 against
	// the complete proposal's 0.021).
	defer func(c int) { maxComplete = c }(maxComplete)
	maxComplete = 0
	pb, err := Prepare(context.Background(), m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if pb.Complete() {
		t.Fatal("a complete proposal where none may be")
	}
	// The bound counts every row, repeats included: the dense EP is on
	// every row's w.
	maxComplete = regularRows(m, m.N)
	if m.N <= maxComplete {
		t.Fatal("the model has no repeats")
	}
	if completeProposal(m, p.tau) {
		t.Error("a complete proposal for a model of more rows than MaxComplete, its regular rows within it")
	}
	maxComplete = MaxComplete
	resB, _ := vecchiaPosteriors(t, pb, cfg)
	t.Logf("standard errors: complete %.3g, block and incomplete factor %.3g", res.SE, resB.SE)
	if !(res.SE <= resB.SE/2) {
		t.Errorf("the complete proposal's standard error %.3g, the block's and incomplete factor's %.3g: want at most half", res.SE, resB.SE)
	}

	// The plan's parts give the same proposal, and so the same bits.
	q, err := NewPreparedFromParts(m, p.Parts())
	if err != nil {
		t.Fatal(err)
	}
	if !q.Complete() {
		t.Error("the plan's proposal is not complete")
	}
	res2, _ := vecchiaPosteriors(t, q, cfg)
	if res2.LogP != res.LogP || res2.SE != res.SE {
		t.Errorf("from the plan: log P %v (se %v), prepared %v (se %v)", res2.LogP, res2.SE, res.LogP, res.SE)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	p1, err := Prepare(context.Background(), m, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, w := p1.Parts(), p.Parts()
	if !sameBits(g.Diag, w.Diag) || !sameBits(g.Off, w.Off) || !sameBits(g.Eta, w.Eta) || !sameBits(g.Tau, w.Tau) || !sameBits(g.Nu, w.Nu) || g.EP != w.EP {
		t.Error("the complete proposal at one thread differs from the default threads'")
	}
}

// denseOf returns t's T'T (gram) or T itself as a dense n x n matrix.
func denseOf(t *tri, gram bool) []float64 {
	n := t.n
	l := make([]float64, n*n)
	for k := range n {
		if t.dup[k] {
			continue
		}
		l[k*n+k] = t.diag[k]
		for q := t.start[k]; q < t.start[k+1]; q++ {
			l[k*n+int(t.nbr[q])] = t.off[q]
		}
	}
	if !gram {
		return l
	}
	g := make([]float64, n*n)
	for k := range n {
		for i := range n {
			if l[k*n+i] == 0 {
				continue
			}
			core.Axpy(g[i*n:i*n+n], l[k*n+i], l[k*n:k*n+n])
		}
	}
	return g
}

// TestEliminateDense checks the complete pattern's factorisation on core's
// dense kernel against the row-by-row one on the same pattern (both exact
// there), whole and partial (rows from lo on, the rows below lo left
// holding the rest's Schur complement), with repeated points.
func TestEliminateDense(t *testing.T) {
	m := manyFeatureModel(t, 400, 6, 0, 0.6, 30)
	a := newTri(m)
	a.priorFactor(m)
	w := make([]float64, m.N)
	r := rand.New(rand.NewPCG(2, 2))
	for k := range w {
		w[k] = 3 * r.Float64()
	}
	for _, lo := range []int{0, 1, 137, m.N - 1, m.N} {
		ref := hybridPattern(m, a, m.N)
		dense := hybridPattern(m, a, m.N)
		dense.complete = true
		pd, po := make([]float64, m.N), make([]float64, len(ref.nbr))
		ref.assemble(a, w, pd, po)
		if _, err := ref.factorShifted(pd, po, lo, m.N, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := dense.factorShifted(pd, po, lo, m.N, 0); err != nil {
			t.Fatal(err)
		}
		for k := range m.N {
			if d := math.Abs(dense.diag[k] - ref.diag[k]); d > 1e-10*(1+math.Abs(ref.diag[k])) {
				t.Fatalf("lo %d: diagonal of row %d: %v, want %v", lo, k, dense.diag[k], ref.diag[k])
			}
		}
		for q := range ref.off {
			if d := math.Abs(dense.off[q] - ref.off[q]); d > 1e-10*(1+math.Abs(ref.off[q])) {
				t.Fatalf("lo %d: entry %d: %v, want %v", lo, q, dense.off[q], ref.off[q])
			}
		}
	}
	// A pivot that is not positive is reported.
	bad := hybridPattern(m, a, m.N)
	bad.complete = true
	pd, po := make([]float64, m.N), make([]float64, len(bad.nbr))
	bad.assemble(a, w, pd, po)
	pd[3] = -1
	if bad.eliminateDense(0, m.N) || slices.Equal(bad.diag, pd) {
		t.Error("an indefinite matrix was factored")
	}
}
