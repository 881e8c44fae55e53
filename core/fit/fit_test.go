package fit_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/fit"
	"github.com/gpc-mc/gpc/core/gp"

	"gonum.org/v1/gonum/stat/distuv"
)

// clusters is a two-class data set of n points in d dimensions: class +1
// around the origin, class -1 shifted by 1.5 in the first coordinate, the
// classes interleaved.
func clusters(n, d int, seed uint64) *gp.Classifier {
	r := rand.New(rand.NewPCG(seed, 5))
	x, y := make([]float64, n*d), make([]float64, n)
	for i := range n {
		y[i] = 1
		if i%2 == 1 {
			y[i] = -1
		}
		for j := range d {
			x[i*d+j] = r.NormFloat64() / float64(j+1)
		}
		if y[i] < 0 {
			x[i*d] += 1.5
		}
	}
	return &gp.Classifier{X: x, D: d, Y: y}
}

func fitSurface(t *testing.T, data *gp.Classifier, k gp.Kernel, method core.Method) (*fit.Surface, []float64) {
	t.Helper()
	params := k.Hypers()
	theta := make([]float64, len(params))
	for j, h := range params {
		theta[j] = math.Log(h.Get(&k))
	}
	s, err := fit.NewFitSurface(context.Background(), data, k, params, theta,
		core.Candidate{Method: method, Order: core.OrderGreedy}, 0, core.Config{Samples: 1000, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return s, theta
}

// fdLogStep is the central-difference step in log-hyperparameter units of
// TestGradFiniteDifference: small enough that the curvature's bias
// (h^2/6 f”' ~ 1e-5) is far below the standard errors, large enough that
// few resampling decisions change between the two points.
const fdLogStep = 0.01

// TestGradFiniteDifference checks the gradient of Fisher's identity
// against central differences of the estimate on common random numbers:
// (f(theta + h e_j) - f(theta - h e_j)) / 2h, whose standard error is
// DiffSE / 2h; the two must agree within kSE of their combined error.
func TestGradFiniteDifference(t *testing.T) {
	t.Parallel()
	type gcase struct {
		n    int
		k    gp.Kernel
		d    int
		meth core.Method
	}
	var cases []gcase
	for _, n := range []int{50, 200} {
		if n > 50 && testing.Short() {
			continue
		}
		for _, beta := range []float64{1, 30, 1e3} {
			cases = append(cases,
				gcase{n, gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{1.5}, Beta: beta}, 2, core.MethodEP},
				gcase{n, gp.Kernel{Kind: gp.KernelARD, Alpha: []float64{1, 0.5, 3}, Beta: beta}, 3, core.MethodEP},
				gcase{n, gp.Kernel{Kind: gp.KernelMatern52, Alpha: []float64{2}, Beta: beta, Bias: 0.5}, 2, core.MethodEP},
				gcase{n, gp.Kernel{Kind: gp.KernelMatern32, Alpha: []float64{1}, Beta: beta}, 2, core.MethodEP},
			)
		}
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("n=%d/%v/beta=%v/%v", c.n, c.k.Kind, c.k.Beta, c.meth), func(t *testing.T) {
			data := clusters(c.n, c.d, 11)
			s, theta := fitSurface(t, data, c.k, c.meth)
			const samples, seed = 4000, 3
			g, err := s.Grad(context.Background(), theta, samples, seed)
			if err != nil {
				t.Fatal(err)
			}
			checkGradFD(t, s, theta, g, samples, seed)
		})
	}
}

// checkGradFD checks the gradient g at theta against central differences
// of the surface's estimate on common random numbers, (f(theta + h e_j) -
// f(theta - h e_j)) / 2h with h = fdLogStep, whose standard error is
// DiffSE / 2h: the two must agree within kSE of their combined error.
func checkGradFD(t *testing.T, s *fit.Surface, theta []float64, g *fit.Gradient, samples int, seed uint64) {
	t.Helper()
	for j := range theta {
		up := append([]float64(nil), theta...)
		dn := append([]float64(nil), theta...)
		up[j] += fdLogStep
		dn[j] -= fdLogStep
		ru, _, err := s.Eval(context.Background(), up, samples, seed, false)
		if err != nil {
			t.Fatal(err)
		}
		rd, _, err := s.Eval(context.Background(), dn, samples, seed, false)
		if err != nil {
			t.Fatal(err)
		}
		fd := (ru.LogP - rd.LogP) / (2 * fdLogStep)
		fdSE := fit.DiffSE(&ru, &rd) / (2 * fdLogStep)
		se := math.Hypot(g.SE[j], fdSE)
		t.Logf("theta_%d (%+v): Fisher %.5g (se %.2g), central difference %.5g (se %.2g): %.2f se apart", j, s.Params[j], g.Grad[j], g.SE[j], fd, fdSE, math.Abs(g.Grad[j]-fd)/se)
		if !(math.Abs(g.Grad[j]-fd) <= kSE*se) {
			t.Errorf("d f / d theta_%d: Fisher %.5g (se %.2g), central difference %.5g (se %.2g): %.1f se apart",
				j, g.Grad[j], g.SE[j], fd, fdSE, math.Abs(g.Grad[j]-fd)/se)
		}
	}
}

// TestGradLinearExact checks the gradient in log beta of the linear
// kernel on one feature against the exact one (central differences of the
// oracle's log marginal likelihood).
func TestGradLinearExact(t *testing.T) {
	t.Parallel()
	data, exact := linearData(60, 3)
	s, _ := fitSurface(t, data, gp.Kernel{Kind: gp.KernelLinear, Beta: 1}, core.MethodSMC)
	for _, lb := range []float64{-1, 0.5, 2} {
		g, err := s.Grad(context.Background(), []float64{lb}, 8000, 2)
		if err != nil {
			t.Fatal(err)
		}
		want := (exact(lb+1e-5) - exact(lb-1e-5)) / 2e-5
		if !(math.Abs(g.Grad[0]-want) <= kSE*g.SE[0]) {
			t.Errorf("log beta %v: gradient %.6g (se %.2g), exact %.6g", lb, g.Grad[0], g.SE[0], want)
		}
		if ev, eg, err := s.EPEvidence([]float64{lb}, fit.EPFitTol); err != nil || math.Abs(ev-exact(lb)) > 1 || math.Abs(eg[0]-want) > 1 {
			t.Errorf("log beta %v: EP evidence %v, gradient %v (%v): far from exact %v, %v", lb, ev, eg, err, exact(lb), want)
		}
	}
}

// TestFitLinearExact checks Fit's optimum on the linear kernel against the
// exact maximizer: within kSE of its Monte Carlo error (from the Hessian
// and the gradient's covariance), and converged.
func TestFitLinearExact(t *testing.T) {
	t.Parallel()
	data, exact := linearData(60, 3)
	s, _ := fitSurface(t, data, gp.Kernel{Kind: gp.KernelLinear, Beta: 1}, core.MethodSMC)
	res, err := s.Fit(context.Background(), []float64{0}, fit.FitConfig{Samples: 4000, Seed: 5, Hessian: true})
	if err != nil {
		t.Fatal(err)
	}
	want := goldenMax(exact, -5, 8)
	if got := res.Theta[0]; !(math.Abs(got-want) <= kSE*res.MCSE[0]) {
		t.Errorf("log beta at the optimum %.5g (mcse %.2g), exact %.5g", got, res.MCSE[0], want)
	}
	if !(math.Abs(res.Final.Result.LogP-exact(res.Theta[0])) <= kSE*res.Final.Result.SE) {
		t.Errorf("log ML at the optimum %v (se %.2g), exact %v", res.Final.Result.LogP, res.Final.Result.SE, exact(res.Theta[0]))
	}
	if math.IsNaN(res.EPLogZ) || len(res.EPTheta) != 1 {
		t.Errorf("no EP stage: %v %v", res.EPTheta, res.EPLogZ)
	}
	// The exact stage's point is returned only where it beats EP's
	// optimum by more than MinGain and by more than KeepMargin standard
	// errors of the difference (here the exact stage may not move at all:
	// EP's optimum's gradient is within its noise, gain 0, se 0).
	t.Logf("EP's optimum %.5g, the exact stage's gain %.3g (se %.2g): kept EP's %v", res.EPTheta[0], res.Gain, res.SEGain, res.KeptEP)
	if res.KeptEP != fit.KeepEP(res.Gain, res.SEGain) || res.KeptEP != (res.Theta[0] == res.EPTheta[0]) || !(res.SEGain >= 0) {
		t.Errorf("gain %v (se %v), kept EP's optimum %v, theta %v, EP's %v", res.Gain, res.SEGain, res.KeptEP, res.Theta, res.EPTheta)
	}
}

// TestFitPrior checks that a tight prior on the log-hyperparameters holds
// the fit at its centre, and that without one the fit moves away.
func TestFitPrior(t *testing.T) {
	t.Parallel()
	data, _ := linearData(60, 3)
	s, _ := fitSurface(t, data, gp.Kernel{Kind: gp.KernelLinear, Beta: 1}, core.MethodSMC)
	const sd = 0.01
	res, err := s.Fit(context.Background(), []float64{3}, fit.FitConfig{Samples: 2000, Seed: 5,
		Prior: fit.LogNormalPrior{Mu: []float64{3}, SD: []float64{sd}}})
	if err != nil {
		t.Fatal(err)
	}
	// The likelihood's slope near log beta = 3 is about 12 nats, so the
	// prior (curvature 1/sd^2 = 10^4) holds the optimum about 0.0012 from
	// its centre: within one sd.
	if d := math.Abs(res.Theta[0] - 3); d > sd {
		t.Errorf("with the prior: log beta %v, %v from the prior's centre", res.Theta[0], d)
	}
	free, err := s.Fit(context.Background(), []float64{3}, fit.FitConfig{Samples: 2000, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(free.Theta[0]-3) < 0.5 {
		t.Errorf("without the prior: log beta %v, still at the start", free.Theta[0])
	}
}

// TestDefaultPrior checks gpc-fit's default priors (sd 3 for ard, none for
// the others) and that LogPDF is the normal's log density, summed over
// the log-hyperparameters.
func TestDefaultPrior(t *testing.T) {
	t.Parallel()
	for kind, want := range map[gp.KernelKind]float64{gp.KernelARD: 3, gp.KernelRBF: 0, gp.KernelLinear: 0} {
		if got := fit.DefaultPriorSD(kind); got != want {
			t.Errorf("%v: default prior sd %v, want %v", kind, got, want)
		}
	}
	mu, theta := []float64{1, -2, 0.5}, []float64{1.5, 3, -4}
	p := fit.NewLogNormalPrior(mu, 3)
	want := 0.0
	for j := range mu {
		want += distuv.Normal{Mu: mu[j], Sigma: 3}.LogProb(theta[j])
	}
	// Both are sums of three terms of order 1: equal to rounding.
	if got := p.LogPDF(theta); math.Abs(got-want) > 1e-12 {
		t.Errorf("LogPDF %v, want %v", got, want)
	}
	if none := fit.NewLogNormalPrior(mu, 0); none.Mu != nil || none.LogPDF(theta) != 0 {
		t.Errorf("sd 0: %+v, log density %v, want no prior", none, none.LogPDF(theta))
	}
}

// TestKeepEP checks Fit's rule for returning the exact stage's point: a
// gain above both MinGain and KeepMargin standard errors.
func TestKeepEP(t *testing.T) {
	t.Parallel()
	nan := math.NaN()
	for _, c := range []struct {
		gain, se float64
		keep     bool
	}{
		{0.85, 0.013, false},   // ionosphere by the likelihood alone
		{0.015, 0.005, false},  // above both
		{0.0009, 0.0001, true}, // resolved, but below MinGain (pima under the prior)
		{0.004, 0.0001, true},  // below MinGain
		{0.006, 0.004, true},   // above MinGain, within 2 SE
		{0.02, nan, false},     // no SE: MinGain decides
		{0.001, nan, true},     // no SE, below MinGain
		{-0.01, 0.001, true},   // EP's is better
		{nan, 0.001, true},     // no gain
		{fit.MinGain, 0, true}, // at the margin: EP's
	} {
		if got := fit.KeepEP(c.gain, c.se); got != c.keep {
			t.Errorf("KeepEP(%v, %v) = %v, want %v", c.gain, c.se, got, c.keep)
		}
	}
}
