package vfit

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/fit"
	"github.com/gpc-mc/gpc/core/gp"
)

// TestSamplerDense checks the Vecchia exact stage's estimate and its
// gradient by Fisher's identity against the dense path's (fit.Surface.Grad)
// where the Vecchia model is the dense one: every point conditioned on all
// the earlier ones (m = N - 1), so that x ~ N(0, K + nugget I) and the
// probit's noise 1 - nugget give the dense path's R = K + I. Both are
// Monte Carlo estimates with standard errors; they must agree within 4
// combined standard errors (fixed seeds), and the gradient must be far
// from 0 beside its error, so that the check can fail. rbf and ard, away
// from the optimum.
func TestSamplerDense(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		kind  gp.KernelKind
		extra int
		move  float64 // added to each log-hyperparameter of the data's start
	}{
		{"rbf", gp.KernelRBF, 0, -0.7},
		{"ard", gp.KernelARD, 1, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 40
			x, y, d := twoClass(n, tc.extra, 1, 11)
			p := &Problem{X: x, D: d, Y: y, M: n - 1, Threads: 2}
			k, hs, th, _, _ := start(t, p, tc.kind)
			for j := range th {
				th[j] += tc.move
			}
			ev, err := NewEvidence(ctx, p, k, hs, th)
			if err != nil {
				t.Fatal(err)
			}
			smp, err := NewSampler(ev)
			if err != nil {
				t.Fatal(err)
			}
			vg, fresh, err := smp.Estimate(ctx, th, 20000, 3, false)
			if err != nil || !fresh {
				t.Fatal(err, fresh)
			}
			again, fresh, err := smp.Estimate(ctx, th, 20000, 3, true)
			if err != nil || fresh || again.Result.LogP != vg.Result.LogP || again.Grad[0] != vg.Grad[0] {
				t.Fatalf("the gradient at the last estimate's point: err %v, fresh %v, %v %v %v %v", err, fresh, again.Result.LogP, vg.Result.LogP, again.Grad, vg.Grad)
			}
			surf, err := fit.NewFitSurface(ctx, &gp.Classifier{X: x, D: d, Y: y}, k, hs, th, fit.FitCandidate, 0, core.Config{Samples: 20000, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			dg, err := surf.Grad(ctx, th, 20000, 5)
			if err != nil {
				t.Fatal(err)
			}
			if z := (vg.Result.LogP - dg.Result.LogP) / math.Hypot(vg.Result.SE, dg.Result.SE); math.Abs(z) > 4 {
				t.Errorf("log P: Vecchia %.6f (se %.2g), dense %.6f (se %.2g), z %.2f", vg.Result.LogP, vg.Result.SE, dg.Result.LogP, dg.Result.SE, z)
			}
			large := 0
			for j := range hs {
				se := math.Hypot(vg.SE[j], dg.SE[j])
				t.Logf("d/d log h_%d: Vecchia %.5f (se %.2g), dense %.5f (se %.2g)", j, vg.Grad[j], vg.SE[j], dg.Grad[j], dg.SE[j])
				if !(math.Abs(vg.Grad[j]-dg.Grad[j]) <= 4*se) {
					t.Errorf("hyperparameter %d: Vecchia gradient %.5f (se %.2g), dense %.5f (se %.2g)", j, vg.Grad[j], vg.SE[j], dg.Grad[j], dg.SE[j])
				}
				if math.Abs(dg.Grad[j]) > 20*se {
					large++
				}
			}
			if large == 0 {
				t.Error("no gradient component far from 0 beside its error: the check cannot fail")
			}
		})
	}
}

// TestExactClasses checks that the exact stage refuses three classes.
func TestExactClasses(t *testing.T) {
	x, _, d := twoClass(30, 0, 1, 2)
	y := make([]float64, 30)
	for i := range y {
		y[i] = float64(i % 3)
	}
	p := &Problem{X: x, D: d, Y: y, Classes: 3, M: 5}
	k, hs, th, _, _ := start(t, p, gp.KernelRBF)
	ev, err := NewEvidence(context.Background(), p, k, hs, th)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewSampler(ev); !errors.Is(err, ErrExactClasses) {
		t.Errorf("three classes: %v", err)
	}
}

// TestExact runs the exact stage from the Laplace stage's optimum on a
// small problem: the result's first-stage point is that optimum, its final
// estimate has a standard error and a gradient with standard errors, the
// result does not depend on the thread count, and the Laplace evaluator
// is released (At fails after it).
func TestExact(t *testing.T) {
	ctx := context.Background()
	x, y, d := twoClass(300, 0, 1, 3)
	var prev *fit.FitResult
	for _, threads := range compared() {
		p := &Problem{X: x, D: d, Y: y, M: 10, Threads: threads}
		k, hs, th, lo, hi := start(t, p, gp.KernelRBF)
		cfg := fit.FitConfig{Samples: 2000, Seed: 4, Lower: lo, Upper: hi}
		res, err := Maximize(ctx, p, k, hs, th, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ev := res.Evidence
		ex, err := Exact(ctx, ev, res.Theta, res.LogZ, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ex.EPTheta, res.Theta) || ex.EPLogZ != res.LogZ || !(ex.Final.Result.SE > 0) || len(ex.Final.SE) != len(hs) || ex.Evals < 2 {
			t.Fatalf("first stage %v (%v), final se %v, gradient se %v, %d estimates", ex.EPTheta, ex.EPLogZ, ex.Final.Result.SE, ex.Final.SE, ex.Evals)
		}
		if _, _, err := ev.At(ctx, res.Theta, false); !errors.Is(err, errReleased) {
			t.Errorf("the evidence after Exact: %v", err)
		}
		if prev != nil && (!slices.Equal(prev.Theta, ex.Theta) || prev.Final.Result.LogP != ex.Final.Result.LogP || !slices.Equal(prev.Final.Grad, ex.Final.Grad)) {
			t.Errorf("threads 1 and 3 differ: %v %v, %v %v", prev.Theta, ex.Theta, prev.Final.Result.LogP, ex.Final.Result.LogP)
		}
		prev = ex
	}
}
