package fit_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/fit"
	"github.com/gpc-mc/gpc/core/gp"
)

// TestDataScale checks the data's scale on points whose distances are
// known: points on a line at 0, 1, 3, 7 and 7 again (the nonzero
// distances 1, 2, 3, 4, 4, 6, 6, 7, 7: median 4), with a constant second
// feature.
func TestDataScale(t *testing.T) {
	x := []float64{0, 5, 1, 5, 3, 5, 7, 5, 7, 5}
	sc, err := fit.NewDataScale(x, 2)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Median != 4 || sc.Min != 1 || sc.Max != 7 {
		t.Errorf("median %v min %v max %v, want 4 1 7", sc.Median, sc.Min, sc.Max)
	}
	if sc.FeatureMin[0] != 1 || sc.FeatureMax[0] != 7 || sc.FeatureMin[1] != 0 || sc.FeatureMax[1] != 0 {
		t.Errorf("features: min %v max %v", sc.FeatureMin, sc.FeatureMax)
	}
	if want := (0 + 1 + 9 + 49 + 49 + 5*25.0) / 5; math.Abs(sc.MeanSquare-want) > 1e-12 {
		t.Errorf("mean square %v, want %v", sc.MeanSquare, want)
	}
	// The start: alpha the median distance (every feature's for ard),
	// beta 1; linear 1 / the mean square.
	if k := sc.Start(gp.KernelARD, 2); k.Alpha[0] != 4 || k.Alpha[1] != 4 || k.Beta != 1 {
		t.Errorf("ard start %+v", k)
	}
	if k := sc.Start(gp.KernelLinear, 2); k.Alpha != nil || math.Abs(k.Beta*sc.MeanSquare-1) > 1e-15 {
		t.Errorf("linear start %+v", k)
	}
	// The box: alpha from a tenth of the smallest distance to 10^4 times
	// the largest (ard: per feature; the constant feature's fixed at its
	// value), beta from 1e-6 to 1e12.
	k := sc.Start(gp.KernelARD, 2)
	lo, hi := sc.Bounds(&k, k.Hypers())
	want := [][2]float64{{0.1, 7e4}, {4, 4}, {1e-6, 1e12}}
	for j, w := range want {
		if math.Abs(math.Exp(lo[j])-w[0]) > 1e-9*w[0] || math.Abs(math.Exp(hi[j])-w[1]) > 1e-9*w[1] {
			t.Errorf("bounds of %d: [%v, %v], want %v", j, math.Exp(lo[j]), math.Exp(hi[j]), w)
		}
	}
	if _, err := fit.NewDataScale([]float64{1, 2, 1, 2}, 2); !errors.Is(err, fit.ErrIdentical) {
		t.Errorf("identical points: %v", err)
	}
}

// TestKernelTrap checks the three flat regions on standard normal points
// in 10 dimensions (squared distances about 20): length scales far below
// the distances (diagonal; also where the closest pair still has a
// correlation of 0.01, as sonar at the old default start), far above them
// (constant), a negligible beta; and the data's start in none.
func TestKernelTrap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	const n, d = 60, 10
	x := make([]float64, n*d)
	for i := range x {
		x[i] = r.NormFloat64()
	}
	sc, err := fit.NewDataScale(x, d)
	if err != nil {
		t.Fatal(err)
	}
	start := sc.Start(gp.KernelRBF, d)
	// The length scale at which the closest pair's correlation is 0.01.
	near := sc.Min / math.Sqrt(-math.Log(0.01))
	for _, c := range []struct {
		k    gp.Kernel
		want fit.Trap
	}{
		{start, fit.TrapNone},
		{sc.Start(gp.KernelARD, d), fit.TrapNone},
		{gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{0.3}, Beta: 1}, fit.TrapDiagonal},
		{gp.Kernel{Kind: gp.KernelMatern32, Alpha: []float64{0.001}, Beta: 1}, fit.TrapDiagonal},
		{gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{near}, Beta: 1}, fit.TrapDiagonal},
		{gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{3 * near}, Beta: 1}, fit.TrapNone},
		{gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{1e4}, Beta: 1, Bias: 2}, fit.TrapConstant},
		// A constant kernel times a large beta still varies: not a trap.
		{gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{1e4}, Beta: 1e9}, fit.TrapNone},
		{gp.Kernel{Kind: gp.KernelRBF, Alpha: start.Alpha, Beta: 1e-7}, fit.TrapNegligible},
		{gp.Kernel{Kind: gp.KernelLinear, Beta: 1e-9}, fit.TrapNegligible},
		{gp.Kernel{Kind: gp.KernelLinear, Beta: 1}, fit.TrapNone},
	} {
		if got, v := fit.KernelTrap(&c.k, x, d); got != c.want {
			t.Errorf("%v alpha %v beta %v: %v (%.3g), want %v", c.k.Kind, c.k.Alpha, c.k.Beta, got, v, c.want)
		}
	}
}

// TestFitTrap checks that Fit refuses a start in a flat region with a
// *TrapError saying where, and that FitStarts' restarts are deterministic
// in the seed, start from the given point first, and keep the best by
// the objective of their final estimates.
func TestFitTrap(t *testing.T) {
	t.Parallel()
	data := clusters(40, 3, 2)
	sc, err := fit.NewDataScale(data.X, data.D)
	if err != nil {
		t.Fatal(err)
	}
	k := sc.Start(gp.KernelRBF, data.D)
	s, theta := fitSurface(t, data, k, core.MethodEP)
	lo, hi := sc.Bounds(&k, s.Params)
	cfg := fit.FitConfig{Samples: 1000, Seed: 3, Lower: lo, Upper: hi}
	_, err = s.Fit(context.Background(), []float64{math.Log(sc.Min / 20), 0}, cfg)
	var te *fit.TrapError
	if !errors.As(err, &te) || te.End || te.Trap != fit.TrapDiagonal {
		t.Errorf("a diagonal start: %v", err)
	}
	best, starts, err := s.FitStarts(context.Background(), theta, 2, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(starts) != 3 || !slices.Equal(starts[0].Theta, theta) {
		t.Fatalf("%d starts, the first at %v (want %v)", len(starts), starts[0].Theta, theta)
	}
	for i, st := range starts {
		if st.Result == nil {
			t.Fatalf("start %d: %v", i, st.Err)
		}
		if st.Objective > starts[best].Objective {
			t.Errorf("start %d: objective %v above the best's (%d) %v", i, st.Objective, best, starts[best].Objective)
		}
		t.Logf("start %d at %v: optimum %v, log ML %.4f (se %.2g)", i, st.Theta, st.Result.Theta, st.Result.Final.Result.LogP, st.Result.Final.Result.SE)
	}
	if slices.Equal(starts[1].Theta, starts[2].Theta) {
		t.Errorf("two restarts from the same point %v", starts[1].Theta)
	}
	_, again, err := s.FitStarts(context.Background(), theta, 2, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range again {
		if !slices.Equal(again[i].Theta, starts[i].Theta) || !slices.Equal(again[i].Result.Theta, starts[i].Result.Theta) {
			t.Errorf("start %d again: from %v to %v, first from %v to %v", i, again[i].Theta, again[i].Result.Theta, starts[i].Theta, starts[i].Result.Theta)
		}
	}
}

// TestFitRunOff checks the box's rule on data whose classes a
// one-dimensional threshold separates: the latent scale's likelihood
// rises without end, so beta stops on the box's upper edge, reported in
// FitResult.Bound; a feature that is pure noise gets its length scale
// snapped to its upper bound (snapOff), reported likewise.
func TestFitRunOff(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 7))
	const n, d = 40, 2
	x, y := make([]float64, n*d), make([]float64, n)
	for i := range n {
		x[i*d] = float64(i)/n*4 - 2
		x[i*d+1] = r.NormFloat64()
		y[i] = 1
		if x[i*d] < 0 {
			y[i] = -1
		}
	}
	data := &gp.Classifier{X: x, D: d, Y: y}
	sc, err := fit.NewDataScale(x, d)
	if err != nil {
		t.Fatal(err)
	}
	k := sc.Start(gp.KernelARD, d)
	s, theta := fitSurface(t, data, k, core.MethodEP)
	lo, hi := sc.Bounds(&k, s.Params)
	res, err := s.Fit(context.Background(), theta, fit.FitConfig{Samples: 1000, Seed: 3, Lower: lo, Upper: hi})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("optimum %v, box %v to %v, bound %v; log ML %.4f", res.Theta, lo, hi, res.Bound, res.Final.Result.LogP)
	if res.Bound[2] != 1 || res.Theta[2] != hi[2] {
		t.Errorf("beta at %v (bound %d), want its upper bound %v", math.Exp(res.Theta[2]), res.Bound[2], math.Exp(hi[2]))
	}
	if res.Bound[1] != 1 || res.Theta[1] != hi[1] {
		t.Errorf("the noise feature's length scale at %v (bound %d), want its upper bound %v", math.Exp(res.Theta[1]), res.Bound[1], math.Exp(hi[1]))
	}
	if res.Bound[0] != 0 {
		t.Errorf("the separating feature's length scale at %v ran off (%d)", math.Exp(res.Theta[0]), res.Bound[0])
	}
}

// multiclassData is n points of d features in c classes, class k around
// (k, 0, ...), the classes interleaved.
func multiclassData(n, d, c int, seed uint64) *gp.Multiclass {
	r := rand.New(rand.NewPCG(seed, 9))
	m := &gp.Multiclass{X: make([]float64, n*d), D: d, Y: make([]int, n), C: c}
	for i := range n {
		m.Y[i] = i % c
		for j := range d {
			m.X[i*d+j] = r.NormFloat64()
		}
		m.X[i*d] += 1.5 * float64(m.Y[i])
	}
	return m
}

// TestGradMulticlass checks the multinomial probit model's gradient
// (Fisher's identity through Multiclass.KernelGradTo) against central
// differences of the estimate on common random numbers, as
// TestGradFiniteDifference does for two classes: one RBF kernel shared by
// 3 classes, an ard kernel, and a kernel per class; and EP's evidence's
// gradient against its own central differences.
func TestGradMulticlass(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		k        gp.Kernel
		perClass bool
	}{
		{"shared rbf", gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{1.5}, Beta: 4}, false},
		{"shared ard", gp.Kernel{Kind: gp.KernelARD, Alpha: []float64{1, 3}, Beta: 2}, false},
		{"per class", gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{2}, Beta: 3}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := multiclassData(24, 2, 3, 4)
			params := c.k.Hypers()
			m.Kernels = []*gp.Kernel{&c.k}
			if c.perClass {
				m.Kernels = []*gp.Kernel{&c.k, &c.k, &c.k}
				var all []gp.Hyper
				for cl := range 3 {
					for _, h := range params {
						h.Class = cl
						all = append(all, h)
					}
				}
				params = all
			}
			theta := make([]float64, len(params))
			for j, h := range params {
				// The classes' kernels apart: each class's log values
				// moved by 0.2 per class.
				theta[j] = math.Log(h.Get(&c.k)) + 0.2*float64(h.Class)
			}
			s, err := fit.NewFitSurface(context.Background(), m, c.k, params, theta, fit.FitCandidate, 0, core.Config{Samples: 1000, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			const samples, seed = 4000, 3
			g, err := s.Grad(context.Background(), theta, samples, seed)
			if err != nil {
				t.Fatal(err)
			}
			_, eg, err := s.EPEvidence(theta, 1e-10)
			if err != nil {
				t.Fatal(err)
			}
			checkGradFD(t, s, theta, g, samples, seed)
			for j := range theta {
				up := append([]float64(nil), theta...)
				dn := append([]float64(nil), theta...)
				up[j] += fdLogStep
				dn[j] -= fdLogStep
				eu, _, err1 := s.EPEvidence(up, 1e-10)
				ed, _, err2 := s.EPEvidence(dn, 1e-10)
				if err1 != nil || err2 != nil {
					t.Fatal(err1, err2)
				}
				if efd := (eu - ed) / (2 * fdLogStep); math.Abs(eg[j]-efd) > 1e-3*(1+math.Abs(efd)) {
					t.Errorf("theta_%d: EP's evidence's gradient %.6g, its central difference %.6g", j, eg[j], efd)
				}
			}
		})
	}
}
