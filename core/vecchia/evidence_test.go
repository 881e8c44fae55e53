package vecchia

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpc-mc/gpc/core"

	"gonum.org/v1/gonum/mat"
)

// denseLaplace is the reference: Laplace's evidence of the latent Gaussian
// N(0, sigma) (n x n, row-major; singular for repeated points) observed
// through the bounds of model m with its noise, by Rasmussen and Williams'
// Algorithm 3.1 (Newton in f with B = I + W^1/2 Sigma W^1/2) and eq. 3.32,
// log Z = -a'f/2 + sum_k log p_k(f) - sum_i log L_ii, L L' = B.
func denseLaplace(t *testing.T, m *Model, sigma []float64) float64 {
	n := m.N
	s := mat.NewSymDense(n, sigma)
	f := make([]float64, n)
	a := mat.NewVecDense(n, nil)
	obj := math.Inf(-1)
	var lchol mat.Cholesky
	for it := 0; ; it++ {
		if it == 200 {
			t.Fatal("denseLaplace: Newton did not converge")
		}
		w, g := make([]float64, n), make([]float64, n)
		for k := range n {
			_, g[k], w[k] = obsDerivs(f[k], m.Lower[k], m.Upper[k], m.Noise)
		}
		sw := make([]float64, n)
		for k := range n {
			sw[k] = math.Sqrt(w[k])
		}
		b := mat.NewSymDense(n, nil)
		for i := range n {
			for j := 0; j <= i; j++ {
				v := sw[i] * s.At(i, j) * sw[j]
				if i == j {
					v++
				}
				b.SetSym(i, j, v)
			}
		}
		if !lchol.Factorize(b) {
			t.Fatal("denseLaplace: B is not positive definite")
		}
		bv := mat.NewVecDense(n, nil)
		for k := range n {
			bv.SetVec(k, w[k]*f[k]+g[k])
		}
		var kb, c mat.VecDense
		kb.MulVec(s, bv)
		for k := range n {
			kb.SetVec(k, sw[k]*kb.AtVec(k))
		}
		if err := lchol.SolveVecTo(&c, &kb); err != nil {
			t.Fatal(err)
		}
		an := mat.NewVecDense(n, nil)
		for k := range n {
			an.SetVec(k, bv.AtVec(k)-sw[k]*c.AtVec(k))
		}
		var fn mat.VecDense
		fn.MulVec(s, an)
		ll := 0.0
		for k := range n {
			lp, _, _ := obsDerivs(fn.AtVec(k), m.Lower[k], m.Upper[k], m.Noise)
			ll += lp
		}
		next := -mat.Dot(an, &fn)/2 + ll
		for k := range n {
			f[k] = fn.AtVec(k)
		}
		a = an
		if math.Abs(next-obj) < 1e-13*math.Abs(next) {
			break
		}
		obj = next
	}
	// log Z at the converged f, with B at it.
	w := make([]float64, n)
	ll := 0.0
	for k := range n {
		var lp float64
		lp, _, w[k] = obsDerivs(f[k], m.Lower[k], m.Upper[k], m.Noise)
		ll += lp
	}
	b := mat.NewSymDense(n, nil)
	for i := range n {
		for j := 0; j <= i; j++ {
			v := math.Sqrt(w[i]) * s.At(i, j) * math.Sqrt(w[j])
			if i == j {
				v++
			}
			b.SetSym(i, j, v)
		}
	}
	if !lchol.Factorize(b) {
		t.Fatal("denseLaplace: B is not positive definite")
	}
	fv := mat.NewVecDense(n, f)
	return -mat.Dot(a, fv)/2 + ll - lchol.LogDet()/2
}

// latentCov returns the latent covariance (A'A)^-1 that model m implies
// (Model.Implied less the noise).
func latentCov(m *Model) []float64 {
	cov, _, _ := m.Implied()
	for k := range m.N {
		cov[k*m.N+k] -= m.Noise
	}
	return cov
}

// lapTol is the relative agreement of two computations of one Laplace
// evidence: both converge Newton to 1e-10 or better, but the dense one
// works with the latent covariance itself, whose condition number (beta /
// nugget, up to 3 10^5 here) limits its digits (measured: 1.1e-9 on
// rbf/long).
const lapTol = 1e-8

// TestLaplaceExact checks the Vecchia Laplace evidence against the dense
// one where its factor T is exact: every row conditioning on all earlier
// ones (the Vecchia model is then the dense GP, and A's pattern is
// complete), or Block covering every row (the Vecchia prior's own dense
// Laplace evidence, from Model.Implied); with a repeated point. It logs
// core's dense EP evidence of the same model beside it (Laplace's is its
// own approximation, not EP's).
func TestLaplaceExact(t *testing.T) {
	for _, c := range gradCases {
		t.Run(c.name, func(t *testing.T) {
			n := 120
			x, y := gradData(n, c.d, 5)
			k, _ := c.kernelAt(nil)
			for _, tc := range []struct {
				m, block int
			}{{n - 1, 0}, {10, n}} {
				s := c.structure(t, x, n, tc.m)
				model, err := NewClassifier(s, k, x, y, DefaultNugget, nil, nil, 1)
				if err != nil {
					t.Fatal(err)
				}
				le := NewLaplaceEvidence(model, LaplaceOptions{Block: tc.block})
				res, err := le.Eval(context.Background(), model, nil, false)
				if err != nil {
					t.Fatal(err)
				}
				want := denseLaplace(t, model, latentCov(model))
				if math.Abs(res.LogZ-want) > lapTol*math.Abs(want) {
					t.Errorf("m %d, block %d: Vecchia Laplace %.12g, dense %.12g", tc.m, tc.block, res.LogZ, want)
				}
				if tc.m == n-1 {
					cov, _, _ := model.Implied()
					ep, err := core.NewEPTol(core.Box{N: n, Cov: cov, Lower: model.Lower, Upper: model.Upper}, 0, 1e-10)
					if err != nil {
						t.Fatal(err)
					}
					t.Logf("Laplace %.6f, dense EP %.6f (Newton %d, CG %d)", res.LogZ, ep.LogEvidence(), res.Newton, res.CG)
				}
			}
		})
	}
}

// TestLaplaceIncomplete measures the incomplete factor's error in the
// evidence (Block 0, and 30 dense rows) against the exact T (Block N) on
// the same model with 10 neighbours, and bounds it loosely: the dropped
// fill-in is small where W is small beside the prior's conditional
// precisions.
func TestLaplaceIncomplete(t *testing.T) {
	for _, c := range gradCases {
		t.Run(c.name, func(t *testing.T) {
			n := 300
			x, y := gradData(n, c.d, 6)
			k, _ := c.kernelAt(nil)
			s := c.structure(t, x, n, 10)
			model, err := NewClassifier(s, k, x, y, DefaultNugget, nil, nil, 1)
			if err != nil {
				t.Fatal(err)
			}
			exact, err := NewLaplaceEvidence(model, LaplaceOptions{Block: n}).Eval(context.Background(), model, nil, false)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range []int{0, 30} {
				res, err := NewLaplaceEvidence(model, LaplaceOptions{Block: b}).Eval(context.Background(), model, nil, false)
				if errors.Is(err, ErrLaplaceBreakdown) {
					t.Logf("block %d: %v", b, err)
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("block %d: %.6f, exact T %.6f: %+.4f nats", b, res.LogZ, exact.LogZ, res.LogZ-exact.LogZ)
				if math.Abs(res.LogZ-exact.LogZ) > 0.05*float64(n) {
					t.Errorf("block %d: the incomplete factor's evidence %.6f is far from the exact %.6f", b, res.LogZ, exact.LogZ)
				}
			}
		})
	}
}

// TestLogDetAdjoint checks tri.logDetAdjoint: with a complete pattern
// against H^-1 (dense), and on A's incomplete pattern against central
// differences of sum_k log T_kk in H's entries.
func TestLogDetAdjoint(t *testing.T) {
	c := gradCases[0]
	n := 60
	x, y := gradData(n, c.d, 7)
	k, _ := c.kernelAt(nil)
	r := rand.New(rand.NewPCG(8, 8))
	for _, m := range []int{n - 1, 6} {
		s, err := NewStructure(x, n, c.d, Options{M: m})
		if err != nil {
			t.Fatal(err)
		}
		model, err := NewClassifier(s, k, x, y, DefaultNugget, nil, nil, 1)
		if err != nil {
			t.Fatal(err)
		}
		a := newTri(model)
		a.priorFactor(model)
		w := make([]float64, n)
		for i := range w {
			w[i] = r.Float64()
		}
		for _, bc := range []struct {
			block  int
			cached bool
		}{{0, false}, {20, false}, {0, true}, {20, true}} {
			block := bc.block
			ft := hybridPattern(model, a, block)
			if bc.cached {
				ft.pc = newPairCache(a) // eliminate's and logDetAdjoint's cached pairs
			}
			pd, po := make([]float64, n), make([]float64, len(ft.nbr))
			ft.assemble(a, w, pd, po)
			logdet := func(pd, po []float64) float64 {
				copy(ft.diag, pd)
				copy(ft.off, po)
				if !ft.eliminate(0, n) {
					t.Fatal("the factorisation broke down")
				}
				g := 0.0
				for i := range n {
					if !ft.dup[i] {
						g += math.Log(ft.diag[i])
					}
				}
				return g
			}
			logdet(pd, po)
			dbar, obar := make([]float64, n), make([]float64, len(ft.off))
			ft.logDetAdjoint(dbar, obar)
			if m == n-1 {
				// H = A'A + W densely (a repeat's row and column: 1, out of
				// the way), and its inverse.
				h := mat.NewSymDense(n, nil)
				for i := range n {
					if ft.dup[i] {
						h.SetSym(i, i, 1)
						continue
					}
					h.SetSym(i, i, pd[i])
					for q := ft.start[i]; q < ft.start[i+1]; q++ {
						h.SetSym(i, int(ft.nbr[q]), po[q])
					}
				}
				var ch mat.Cholesky
				if !ch.Factorize(h) {
					t.Fatal("H is not positive definite")
				}
				var hi mat.SymDense
				if err := ch.InverseTo(&hi); err != nil {
					t.Fatal(err)
				}
				for i := range n {
					if ft.dup[i] {
						continue
					}
					if d := math.Abs(dbar[i] - hi.At(i, i)/2); d > 1e-9*hi.At(i, i) {
						t.Errorf("block %d: dbar[%d] %.12g, H^-1/2 %.12g", block, i, dbar[i], hi.At(i, i)/2)
					}
					for q := ft.start[i]; q < ft.start[i+1]; q++ {
						want := hi.At(i, int(ft.nbr[q]))
						if d := math.Abs(obar[q] - want); d > 1e-9*math.Sqrt(hi.At(i, i)*hi.At(int(ft.nbr[q]), int(ft.nbr[q]))) {
							t.Errorf("block %d: obar (%d, %d) %.12g, H^-1 %.12g", block, i, ft.nbr[q], obar[q], want)
						}
					}
				}
				continue
			}
			// Central differences in a sample of H's entries.
			const h = 1e-6
			for range 40 {
				i := r.IntN(n)
				if ft.dup[i] {
					continue
				}
				pp, pm := append([]float64(nil), pd...), append([]float64(nil), pd...)
				qp, qm := append([]float64(nil), po...), append([]float64(nil), po...)
				var an float64
				if e := ft.start[i+1] - ft.start[i]; e > 0 && r.IntN(2) == 0 {
					q := ft.start[i] + r.IntN(e)
					qp[q] += h * pd[i]
					qm[q] -= h * pd[i]
					an = obar[q]
				} else {
					pp[i] += h * pd[i]
					pm[i] -= h * pd[i]
					an = dbar[i]
				}
				fd := (logdet(pp, qp) - logdet(pm, qm)) / (2 * h * pd[i])
				if math.Abs(fd-an) > 1e-6*(math.Abs(fd)+1/pd[i]) {
					t.Errorf("m %d, block %d, row %d: adjoint %.10g, central differences %.10g", m, block, i, an, fd)
				}
			}
		}
	}
}

// TestLaplaceGrad checks the Laplace evidence's gradient in the kernel's
// log-hyperparameters (LaplaceEvidence.Eval's adjoint through
// Structure.AdjointGradTo) against central differences of the evidence,
// for every kernel of gradCases at its own point and at a second, with A's
// pattern and with a dense block, and a repeated point.
func TestLaplaceGrad(t *testing.T) {
	for _, c := range gradCases {
		t.Run(c.name, func(t *testing.T) {
			n := 100
			x, y := gradData(n, c.d, 9)
			s := c.structure(t, x, n, 10)
			th0 := c.theta0()
			for _, shift := range []float64{0, 0.7} {
				th := append([]float64(nil), th0...)
				for j := range th {
					th[j] += shift * float64(1-2*(j%2))
				}
				for _, block := range []int{0, 25} {
					broke := false
					eval := func(th []float64, grad bool) (float64, []float64) {
						k, hs := c.kernelAt(th)
						model, err := NewClassifier(s, k, x, y, DefaultNugget, nil, nil, 1)
						if err != nil {
							t.Fatal(err)
						}
						res, err := NewLaplaceEvidence(model, LaplaceOptions{Block: block}).Eval(context.Background(), model, nil, grad)
						if errors.Is(err, ErrLaplaceBreakdown) {
							broke = true
							return 0, nil
						}
						if err != nil {
							t.Fatal(err)
						}
						if !grad {
							return res.LogZ, nil
						}
						g := make([]float64, len(hs))
						if err := s.AdjointGradTo(g, k, hs, x, DefaultNugget, res.Adjoint, 2); err != nil {
							t.Fatal(err)
						}
						return res.LogZ, g
					}
					f, g := eval(th, true)
					if broke {
						t.Logf("shift %v, block %d: %v", shift, block, ErrLaplaceBreakdown)
						continue
					}
					for j := range th {
						tp, tm := append([]float64(nil), th...), append([]float64(nil), th...)
						tp[j] += fdStep
						tm[j] -= fdStep
						fp, _ := eval(tp, false)
						fm, _ := eval(tm, false)
						if broke {
							t.Fatalf("the factorisation broke down %g from a point where it did not", fdStep)
						}
						fd := (fp - fm) / (2 * fdStep)
						// The differences' rounding: eps |f| / fdStep.
						if math.Abs(fd-g[j]) > lapGradTol*(math.Abs(fd)+1e-3*math.Abs(f)) {
							t.Errorf("shift %v, block %d, hyperparameter %d: gradient %.10g, central differences %.10g (log Z %.6g)", shift, block, j, g[j], fd, f)
						}
					}
				}
			}
		})
	}
}

// lapGradTol is the relative agreement of the evidence's gradient and its
// central differences: their truncation error is about fdStep^2 = 1e-8
// of the third derivative, the mode's tolerance moves the evidence by
// less than 1e-10 relative.
const lapGradTol = 1e-6

// TestObsThird checks obsThird against central differences of obsDerivs'
// w, for one-sided bounds of either side and two-sided boxes, over x
// within 7 noise standard deviations of the lower bound (of the upper one
// where there is no lower; further out, log Phi's
// tail branch and the moments' cancellation leave w and its derivative
// with fewer digits than the differences need: at 14 standard deviations
// they agree to 1e-4).
func TestObsThird(t *testing.T) {
	inf := math.Inf(1)
	for _, b := range [][2]float64{{0, inf}, {-inf, 0}, {-0.5, 1.5}, {2, 2.1}} {
		for _, s := range []float64{1, 0.3} {
			for z := -7.0; z <= 7; z += 0.25 {
				x := b[0] + z*math.Sqrt(s)
				if math.IsInf(b[0], -1) {
					x = b[1] + z*math.Sqrt(s)
				}
				// Five-point differences: truncation h^4, rounding (w
				// comes from g^2 less a term of the same size, up to 40
				// times w in the narrow box) 1e-14 40 / h.
				const h = 1e-3
				wt := func(x float64) float64 { _, _, w := obsDerivs(x, b[0], b[1], s); return w }
				fd := (wt(x-2*h) - 8*wt(x-h) + 8*wt(x+h) - wt(x+2*h)) / (12 * h)
				an := obsThird(x, b[0], b[1], s)
				if math.Abs(fd-an) > 1e-6*math.Abs(fd)+1e-9/s {
					t.Errorf("bounds %v, s %v, x %v: %.10g, central differences %.10g", b, s, x, an, fd)
				}
			}
		}
	}
}
