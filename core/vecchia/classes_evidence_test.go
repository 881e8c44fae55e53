package vecchia

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/gpc-mc/gpc/core/gp"

	"gonum.org/v1/gonum/mat"
)

// denseClassLaplace is the multi-class reference: Laplace's evidence of
// model md's labels under the latent covariance sigma of one class's
// process (N x N, row-major: Model.Implied's less the noise; the C
// processes independent, one kernel), computed on the distinct points
// alone (a repeat's row adds its label's likelihood to its point's) in
// md's contrasts g (L = C - 1 per point), by dense Newton on Psi(g) =
// sum_k log P(y_k | E g) - g' S^-1 g / 2, S = I_L (x) sigma, and
//
//	log Z = Psi(g^) - log det S / 2 - log det(S^-1 + W) / 2.
func denseClassLaplace(t *testing.T, md *Multiclass, sigma []float64) float64 {
	l, e := md.latentDims()
	c := md.C
	var pts []int // the distinct points' rows
	idx := make([]int, md.N)
	for k := range md.N {
		if d := md.Dup(k); d >= 0 {
			idx[k] = idx[d]
			continue
		}
		idx[k] = len(pts)
		pts = append(pts, k)
	}
	np := len(pts)
	n := np * l
	sp := mat.NewSymDense(np, nil)
	for i, ki := range pts {
		for j, kj := range pts {
			sp.SetSym(i, j, sigma[ki*md.N+kj])
		}
	}
	var spChol mat.Cholesky
	if !spChol.Factorize(sp) {
		t.Fatal("denseClassLaplace: the points' covariance is not positive definite")
	}
	var spInv mat.SymDense
	if err := spChol.InverseTo(&spInv); err != nil {
		t.Fatal(err)
	}
	sd := math.Sqrt(md.Noise)
	// lik returns sum_k log P(y_k | E g) and, into grad and w (n, n x
	// n), its gradient and negative Hessian in g.
	lik := func(g []float64, grad []float64, w *mat.SymDense) float64 {
		var lw likWork
		xc, gx, hx := make([]float64, c), make([]float64, c), make([]float64, c*c)
		s := 0.0
		for k := range md.N {
			p := idx[k]
			for i := range c {
				xc[i] = 0
				for b := range l {
					xc[i] += e[i*l+b] * g[p*l+b]
				}
			}
			if grad == nil {
				s += classLogLik(xc, md.Y[k], sd, nil, nil, &lw)
				continue
			}
			s += classLogLik(xc, md.Y[k], sd, gx, hx, &lw)
			for a := range l {
				for i := range c {
					grad[p*l+a] += e[i*l+a] * gx[i]
				}
				for b := range a + 1 { // SetSym sets (a, b) and (b, a)
					v := 0.0
					for i := range c {
						for j := range c {
							v += e[i*l+a] * hx[i*c+j] * e[j*l+b]
						}
					}
					w.SetSym(p*l+a, p*l+b, w.At(p*l+a, p*l+b)+v)
				}
			}
		}
		return s
	}
	// prec is S^-1 (x) in g's order, point-major: (i l + a, j l + a).
	prec := mat.NewSymDense(n, nil)
	for i := range np {
		for j := range np {
			for a := range l {
				prec.SetSym(i*l+a, j*l+a, spInv.At(i, j))
			}
		}
	}
	psi := func(g []float64) float64 {
		v := mat.NewVecDense(n, g)
		var pv mat.VecDense
		pv.MulVec(prec, v)
		return lik(g, nil, nil) - mat.Dot(v, &pv)/2
	}
	g := make([]float64, n)
	cur := psi(g)
	var h mat.SymDense
	var hc mat.Cholesky
	for it := 0; ; it++ {
		if it == 100 {
			t.Fatal("denseClassLaplace: Newton did not converge")
		}
		grad := make([]float64, n)
		w := mat.NewSymDense(n, nil)
		lik(g, grad, w)
		var pg mat.VecDense
		pg.MulVec(prec, mat.NewVecDense(n, g))
		for i := range n {
			grad[i] -= pg.AtVec(i)
		}
		h.AddSym(prec, w)
		if !hc.Factorize(&h) {
			t.Fatal("denseClassLaplace: the Hessian is not positive definite")
		}
		var delta mat.VecDense
		if err := hc.SolveVecTo(&delta, mat.NewVecDense(n, grad)); err != nil {
			t.Fatal(err)
		}
		step, next := 1.0, 0.0
		gn := make([]float64, n)
		for range 40 {
			for i := range n {
				gn[i] = g[i] + step*delta.AtVec(i)
			}
			if next = psi(gn); next >= cur {
				break
			}
			step /= 2
		}
		change := 0.0
		for i := range n {
			change = max(change, math.Abs(gn[i]-g[i]))
		}
		if next < cur {
			break
		}
		g, cur = gn, next
		if change < 1e-12 {
			break
		}
	}
	w := mat.NewSymDense(n, nil)
	lik(g, make([]float64, n), w)
	h.AddSym(prec, w)
	if !hc.Factorize(&h) {
		t.Fatal("denseClassLaplace: the Hessian is not positive definite")
	}
	return cur - float64(l)*spChol.LogDet()/2 - hc.LogDet()/2
}

// TestClassLaplaceExact checks the multi-class Laplace evidence against
// the dense one where its factor T is exact: every row conditioning on all
// the earlier ones (the expanded pattern is then complete, and the model
// the dense multinomial probit model), or the dense block covering every
// row (the Vecchia prior's own dense Laplace evidence, from its implied
// covariance); three and four classes, a shared kernel, with repeated
// points (features rounded to 0.5); and a warm start at the mode gives the
// same evidence.
func TestClassLaplaceExact(t *testing.T) {
	for _, tc := range []struct {
		name      string
		c, n, m   int
		block     int
		round     float64
		k         *gp.Kernel
		wantDups  bool
		seed      uint64
		tolerance float64
	}{
		{"3 classes, complete", 3, 60, 59, 0, 0, rbf(1, 4), false, 1, lapTol},
		{"3 classes, m 8, block N", 3, 70, 8, 70, 0, rbf(0.8, 3), false, 2, lapTol},
		{"4 classes, m 6, block N, repeats", 4, 80, 6, 80, 0.5, rbf(1.2, 5), true, 3, lapTol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := classModel(t, tc.seed, tc.c, tc.n, 0, tc.m, tc.round, []*gp.Kernel{tc.k})
			dups := 0
			for k := range md.N {
				if md.Dup(k) >= 0 {
					dups++
				}
			}
			if tc.wantDups != (dups > 0) {
				t.Fatalf("%d repeated points", dups)
			}
			res, err := ClassLaplaceEvidence(context.Background(), md, LaplaceOptions{Block: tc.block}, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := denseClassLaplace(t, md, latentCov(md.ClassModel(0)))
			if math.Abs(res.LogZ-want) > tc.tolerance*math.Abs(want) {
				t.Errorf("Vecchia Laplace %.12g, dense %.12g (%d repeats)", res.LogZ, want, dups)
			}
			again, err := ClassLaplaceEvidence(context.Background(), md, LaplaceOptions{Block: tc.block}, res.Mode)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(again.LogZ-res.LogZ) > 1e-10*math.Abs(want) {
				t.Errorf("warm at the mode: %.12g, cold %.12g", again.LogZ, res.LogZ)
			}
			t.Logf("%d repeats: %.9f (dense %.9f), Newton %d, CG %d; warm: Newton %d", dups, res.LogZ, want, res.Newton, res.CG, again.Newton)
		})
	}
}

// TestClassLaplaceIncomplete measures the incomplete factor's error (the
// block of ClassLaplaceBlock, and none) against the exact T on one model
// with 8 neighbours, bounds it loosely, and checks that the evidence is
// smooth in the kernel's hyperparameters on one structure and block (what
// a fit's differences need): the central second difference at steps h
// and h / 2 agree to the differences' rounding.
func TestClassLaplaceIncomplete(t *testing.T) {
	n := 300
	at := func(alpha, block int) (*Multiclass, float64) {
		k := rbf(0.8*math.Exp(1e-3*float64(alpha)), 3)
		md := classModel(t, 4, 3, n, 0, 8, 0, []*gp.Kernel{k})
		res, err := ClassLaplaceEvidence(context.Background(), md, LaplaceOptions{Block: block}, nil)
		if errors.Is(err, ErrLaplaceBreakdown) {
			t.Logf("block %d: %v", block, err)
			return md, math.NaN()
		}
		if err != nil {
			t.Fatal(err)
		}
		return md, res.LogZ
	}
	md, exact := at(0, n)
	blk := ClassLaplaceBlock(md)
	if blk <= 0 || blk > n {
		t.Fatalf("ClassLaplaceBlock %d of %d rows", blk, n)
	}
	for _, b := range []int{0, blk} {
		_, v := at(0, b)
		if math.IsNaN(v) {
			continue
		}
		t.Logf("block %d: %.6f, exact T %.6f: %+.4f nats", b, v, exact, v-exact)
		if math.Abs(v-exact) > 0.05*float64(n) {
			t.Errorf("block %d: the incomplete factor's evidence %.6f is far from the exact %.6f", b, v, exact)
		}
	}
	// Smoothness: f(+2) - 2 f(0) + f(-2) is 4 times f(+1) - 2 f(0) + f(-1)
	// for a smooth f (steps of 1e-3 in log alpha).
	_, f0 := at(0, blk)
	_, f1, _, fm1 := pair(at, 1, blk)
	_, f2, _, fm2 := pair(at, 2, blk)
	d1, d2 := f1-2*f0+fm1, f2-2*f0+fm2
	if math.Abs(d2-4*d1) > 1e-3*math.Abs(d2)+1e-7 {
		t.Errorf("second differences %.3g (h) and %.3g (2h): not 1:4", d1, d2)
	}
	t.Logf("gradient in log alpha %.6f; second differences %.4g, %.4g", (f1-fm1)/2e-3, d1, d2)
}

// pair evaluates at(+i, block) and at(-i, block).
func pair(at func(int, int) (*Multiclass, float64), i, block int) (*Multiclass, float64, *Multiclass, float64) {
	a, fa := at(i, block)
	b, fb := at(-i, block)
	return a, fa, b, fb
}

// TestClassLaplaceReuse checks that one evaluator (ClassLaplace), its
// patterns and schedules kept, evaluates models of other
// hyperparameters on its structure as a fresh one does, warm or cold.
func TestClassLaplaceReuse(t *testing.T) {
	var ev *ClassLaplace
	var warm []float64
	block := 0
	for i, k := range []*gp.Kernel{rbf(0.8, 3), rbf(1.1, 2), rbf(0.6, 6), rbf(0.8, 3)} {
		md := classModel(t, 6, 3, 200, 0, 8, 0.2, []*gp.Kernel{k})
		if ev == nil {
			block = ClassLaplaceBlock(md)
			ev = NewClassLaplace(md, LaplaceOptions{Block: block})
		}
		got, err := ev.Eval(context.Background(), md, warm)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ClassLaplaceEvidence(context.Background(), md, LaplaceOptions{Block: block}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got.LogZ-want.LogZ) > 1e-10*math.Abs(want.LogZ) {
			t.Errorf("model %d: the reused evaluator %.12g, a fresh one %.12g", i, got.LogZ, want.LogZ)
		}
		warm = got.Mode
	}
}
