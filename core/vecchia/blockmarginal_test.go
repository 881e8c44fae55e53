package vecchia

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestBlockLanczos checks blockLanczos on operators whose eigenvalues are
// known: one of rank 6 in 60 dimensions, whose Krylov space from 16
// vectors is exhausted at 22 (the Ritz values its 6 nonzero eigenvalues
// and 16 zeros), and one of full rank with a space of all 40 dimensions
// (the Ritz values every eigenvalue) or of 24; the basis orthonormal and H
// = Q'FQ.
func TestBlockLanczos(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		n, rank, k int
	}{{60, 6, 60}, {40, 40, 40}, {40, 40, 24}} {
		// F = U diag(d) U', U orthonormal (QR of a random matrix).
		g := mat.NewDense(c.n, c.rank, nil)
		for i := range c.n {
			for j := range c.rank {
				g.Set(i, j, r.NormFloat64())
			}
		}
		var qr mat.QR
		qr.Factorize(g)
		var u mat.Dense
		qr.QTo(&u)
		d := make([]float64, c.rank)
		for j := range d {
			d[j] = float64(j+1) * math.Pow(-1, float64(j)) / 4
		}
		f := mat.NewSymDense(c.n, nil)
		for i := range c.n {
			for j := i; j < c.n; j++ {
				s := 0.0
				for l, dl := range d {
					s += u.At(i, l) * dl * u.At(j, l)
				}
				f.SetSym(i, j, s)
			}
		}
		apply := func(dst, v [][]float64) {
			for i, x := range v {
				y := mat.NewVecDense(c.n, dst[i])
				y.MulVec(f, mat.NewVecDense(c.n, x))
			}
		}
		q, h := blockLanczos(apply, c.n, 16, c.k)
		kk := h.SymmetricDim()
		if want := min(c.k, c.rank+16); kk != want {
			t.Errorf("n %d rank %d: %d vectors, want %d", c.n, c.rank, kk, want)
		}
		var qtq, qfq mat.Dense
		qtq.Mul(q.T(), q)
		var fq mat.Dense
		fq.Mul(f, q)
		qfq.Mul(q.T(), &fq)
		for i := range kk {
			for j := range kk {
				want := 0.0
				if i == j {
					want = 1
				}
				if math.Abs(qtq.At(i, j)-want) > 1e-12 || math.Abs(qfq.At(i, j)-h.At(i, j)) > 1e-12 {
					t.Fatalf("n %d rank %d: Q'Q[%d,%d] %g, Q'FQ %g against H %g", c.n, c.rank, i, j, qtq.At(i, j), qfq.At(i, j), h.At(i, j))
				}
			}
		}
		if kk < c.rank {
			continue // a partial space: its Ritz values are not F's
		}
		var es mat.EigenSym
		es.Factorize(h, false)
		var got []float64
		for _, th := range es.Values(nil) {
			if math.Abs(th) > 1e-9 {
				got = append(got, th)
			}
		}
		slices.Sort(got)
		want := slices.Clone(d)
		slices.Sort(want)
		for i, w := range want {
			if len(got) != len(want) || math.Abs(got[i]-w) > 1e-10 {
				t.Errorf("n %d rank %d: Ritz values %v, want %v", c.n, c.rank, got, want)
				break
			}
		}
	}
}

// TestCorrectBlock checks that correcting the dense block's marginal
// (correctBlock) takes the deferred correction's variance Var_q(r) on the
// two-dimensional classifier with many rows after the block (its cap
// lowered to 200, as TestCorrectionVariance) to under a third of the
// incomplete factor's, each estimated with 64 probes, the ratio by more
// than four combined standard errors; that EP's rounds do not undo it;
// that refining EP's correction on the proposal's factor (refineIters)
// leaves less than EP's correction alone; that it is not made where the incomplete factor's variance is below
// correctMin; and that the corrected block's batched products are the
// one-vector products' (the solves, and A'A from the prior's factor)
// to the float32 rounding of its stored values.
func TestCorrectBlock(t *testing.T) {
	defer func(c int) { blockCap = c }(blockCap)
	defer func(c float64) { correctMin = c }(correctMin)
	blockCap, correctMin = 200, 0
	m := classifier2D(t, 6500, 10)
	p, err := Prepare(context.Background(), m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !p.BlockCorrected {
		t.Fatal("the block's marginal was not corrected")
	}
	v1, se1 := p.CorrectionVariance(64)
	// EP's correction alone, not refined on the proposal's factor: the
	// later sites' last changes (widenSites) leave more variance.
	k := refineIters
	refineIters = 0
	ps, err := Prepare(context.Background(), m, nil)
	refineIters = k
	if err != nil {
		t.Fatal(err)
	}
	vs, ses := ps.CorrectionVariance(64)
	t.Logf("Var_q(r): %.4g (se %.2g) refined on %d vectors, %.4g (se %.2g) EP's correction alone", v1, se1, p.refineVectors, vs, ses)
	if !ps.BlockCorrected || ps.refineVectors != 0 || p.refineVectors == 0 || vs-v1 < 4*math.Hypot(se1, ses) {
		t.Errorf("Var_q(r) %.4g (se %.2g) refined on %d vectors against %.4g (se %.2g) on EP's correction alone (%d, corrected %v): want the refinement to lower it",
			v1, se1, p.refineVectors, vs, ses, ps.refineVectors, ps.BlockCorrected)
	}
	defer func(c bool) { correctBlocks = c }(correctBlocks)
	correctBlocks = false
	p0, err := Prepare(context.Background(), m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p0.BlockCorrected {
		t.Fatal("correctBlocks = false corrected")
	}
	v0, se0 := p0.CorrectionVariance(64)
	correctBlocks, correctMin = true, 2*v0
	if p2, err := Prepare(context.Background(), m, nil); err != nil || p2.BlockCorrected {
		t.Errorf("a correction variance of %.3g below correctMin %.3g: corrected %v (%v)", v0, correctMin, p2 != nil && p2.BlockCorrected, err)
	}
	t.Logf("Var_q(r): %.4g (se %.2g) corrected, %.4g (se %.2g) not", v1, se1, v0, se0)
	if !(v1 < v0/3) || v0/3-v1 < 4*math.Hypot(se0/3, se1) {
		t.Errorf("Var_q(r) %.4g (se %.2g) corrected, %.4g (se %.2g) not: want under a third", v1, se1, v0, se0)
	}

	// The batched product against the one-vector one.
	tr := p.prop
	n := m.N
	var reg []int
	for k := range p.Block {
		if !tr.dup[k] {
			reg = append(reg, k)
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	v := make([][]float64, 5)
	for j := range v {
		v[j] = make([]float64, len(reg))
		for i := range v[j] {
			v[j][i] = r.NormFloat64()
		}
	}
	dst := make([][]float64, len(v))
	for j := range dst {
		dst[j] = make([]float64, len(reg))
	}
	ws := newBatchWork(n)
	ws.apply(tr, reg, m, p.tau, dst, v)
	a := newTri(m)
	a.priorFactor(m)
	z, u, au, pu, w := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for j, x := range v {
		clear(z)
		for i, k := range reg {
			z[k] = x[i]
		}
		tr.solveTo(u, z)
		a.mulTo(au, u)
		a.mulTransTo(pu, au)
		for k := range pu {
			pu[k] += p.tau[k] * u[k]
		}
		tr.solveTransTo(w, pu)
		// The batch stores its values in float32 (batchWork): each
		// rounding is 2^-24 of its value, and the substitutions carry
		// them on, so a product differs from the float64 one by up to
		// 1.1e-5 of |w| + |x| here (190 float32 roundings); the bound
		// leaves a factor of 9.
		for i, k := range reg {
			want := w[k] - x[i]
			if math.Abs(dst[j][i]-want) > 1e-4*(math.Abs(w[k])+math.Abs(x[i])) {
				t.Fatalf("side %d, row %d: batched %g, one at a time %g", j, k, dst[j][i], want)
			}
		}
	}
}

// TestApplyCorrectionRaise checks that applyCorrection takes a correction
// that leaves the block's precision short of positive definite by a
// rounding's share (its least eigenvalue's direction lowered to -1e-9 of
// it; the block's sites set aside, whose share of so small a pivot the
// other check refuses), raising the diagonal by at most
// maxCorrectionShift, and refuses one
// that leaves it far from positive definite (an eigenvalue of minus half
// the largest diagonal), leaving the factor as it was.
func TestApplyCorrectionRaise(t *testing.T) {
	defer func(c int) { blockCap = c }(blockCap)
	defer func(c int) { maxComplete = c }(maxComplete)
	blockCap, maxComplete = 100, 0
	p, err := Prepare(context.Background(), classifier2D(t, 1500, 10), nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := p.prop
	var reg []int
	for k := range p.Block {
		if !tr.dup[k] {
			reg = append(reg, k)
		}
	}
	nb := len(reg)
	if nb < 10 || p.Block >= tr.n {
		t.Fatalf("a block of %d regular rows of %d: want a block with rows after it", nb, tr.n)
	}
	prec := mat.NewSymDense(nb, nil)
	prec.SymOuterK(1, blockFactor(tr, reg))
	var es mat.EigenSym
	if !es.Factorize(prec, true) {
		t.Fatal("the block's precision has no eigendecomposition")
	}
	var vecs mat.Dense
	es.VectorsTo(&vecs)
	least := es.Values(nil)[0]
	v := mat.NewDense(nb, 1, mat.Col(nil, 0, &vecs))
	big := 0.0
	for i := range nb {
		big = max(big, prec.At(i, i))
	}
	lowered := func(by float64) *blockCorrection {
		d := mat.NewSymDense(nb, nil)
		d.SymOuterK(-by, v)
		return &blockCorrection{reg: reg, delta: d, vectors: 1}
	}
	diag, off := slices.Clone(tr.diag), slices.Clone(tr.off)
	near := lowered(least * (1 + 1e-9))
	var sum mat.SymDense
	sum.AddSym(prec, near.delta)
	var ch mat.Cholesky
	if ch.Factorize(&sum) {
		t.Fatalf("the lowered precision (least eigenvalue %.3g) factors: the test needs one short of positive definite", least)
	}
	// The raised pivot in that direction is small beside the block's
	// sites, which the share check would refuse: the sites set aside.
	tau := slices.Clone(p.tau)
	defer copy(p.tau, tau)
	for _, k := range reg {
		p.tau[k] = 0
	}
	if !p.applyCorrection(tr, near) {
		t.Errorf("a correction short of positive definite by 1e-9 of its least eigenvalue %.3g was refused", least)
	}
	copy(tr.diag, diag)
	copy(tr.off, off)
	tr.stale()
	if p.applyCorrection(tr, lowered(least+big/2)) {
		t.Errorf("a correction leaving an eigenvalue of %.3g was taken", -big/2)
	}
	if !slices.Equal(tr.diag, diag) || !slices.Equal(tr.off, off) {
		t.Error("a refused correction changed the factor")
	}
}
