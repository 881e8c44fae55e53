package fit_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/fit"
	"github.com/gpc-mc/gpc/core/gp"
	"github.com/gpc-mc/gpc/internal/oracle"
)

// kSE is how many of its own standard errors an estimate may be from the
// exact value (as in core's tests): the standard error comes from 16-32
// independent groups, so |t| > 4 has probability below 1e-3 per check; the
// seeds are fixed, so a passing test stays passing.
const kSE = 4

// epRoundTol absorbs the rounding of MethodEP's estimate, a sum of large
// terms that cancel (as in core's tests: relative error 1.8e-10 measured
// for Phi(-30)^5).
const epRoundTol = 1e-9

// linearData is the linear-kernel classifier on one feature of
// linearClassifierBox, whose log marginal likelihood is exact
// (oracle.LinearClassifier) for every beta.
func linearData(n int, seed uint64) (*gp.Classifier, func(logBeta float64) float64) {
	r := rand.New(rand.NewPCG(seed, 2))
	x, y := make([]float64, n), make([]float64, n)
	for i := range n {
		x[i], y[i] = r.NormFloat64(), 1
		if i%2 == 1 {
			x[i], y[i] = 1.5+r.NormFloat64(), -1
		}
	}
	exact := func(logBeta float64) float64 {
		l, _ := oracle.LinearClassifier(x, y, math.Exp(logBeta), nil)
		return l
	}
	return &gp.Classifier{X: x, D: 1, Y: y}, exact
}

// goldenMax returns the maximizer of a unimodal f on [a, b] to 1e-9.
func goldenMax(f func(float64) float64, a, b float64) float64 {
	g := (math.Sqrt(5) - 1) / 2
	c, d := b-g*(b-a), a+g*(b-a)
	for b-a > 1e-9 {
		if f(c) > f(d) {
			b, d = d, c
			c = b - g*(b-a)
		} else {
			a, c = c, d
			d = a + g*(b-a)
		}
	}
	return (a + b) / 2
}

func linearSurface(t *testing.T, data *gp.Classifier, samples int) *fit.Surface {
	t.Helper()
	s, _, _, err := fit.NewSurface(context.Background(), data, gp.Kernel{Kind: gp.KernelLinear, Beta: 1},
		[]gp.Hyper{{Kind: gp.HyperBeta}}, []float64{0}, core.AutoCandidates, 0, core.Config{Samples: samples, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSurfaceLinearExact checks a tuned grid against the exact log
// marginal likelihood of the linear kernel on one feature: every value
// within kSE of its standard errors, every difference between neighbours
// within kSE of its common-random-numbers standard error (DiffSE, which
// must also be below the independent hypot(SE_a, SE_b)), and the optimum
// within kSE Monte Carlo errors of the exact maximizer, with a width
// within 10 % of the exact curvature's.
func TestSurfaceLinearExact(t *testing.T) {
	t.Parallel()
	data, exact := linearData(60, 3)
	s := linearSurface(t, data, 2000)
	ctx := context.Background()
	var prev *core.Result
	var prevTheta float64
	step := 0.5
	for th := math.Log(0.05); th < math.Log(50); th += step {
		res, _, err := s.Eval(ctx, []float64{th}, 2000, 7, false)
		if err != nil {
			t.Fatal(err)
		}
		if d := math.Abs(res.LogP - exact(th)); d > kSE*res.SE+epRoundTol {
			t.Errorf("log beta %.2f: log ML %v, exact %v: off by %.3g = %.1f SE", th, res.LogP, exact(th), d, d/res.SE)
		}
		if prev != nil {
			dse := fit.DiffSE(prev, &res)
			want := exact(th) - exact(prevTheta)
			got := res.LogP - prev.LogP
			if math.Abs(got-want) > kSE*dse+epRoundTol {
				t.Errorf("log beta %.2f-%.2f: difference %v, exact %v, DiffSE %.3g: off by %.1f", prevTheta, th, got, want, dse, math.Abs(got-want)/dse)
			}
			if !(dse < math.Hypot(prev.SE, res.SE)) {
				t.Errorf("log beta %.2f: DiffSE %.3g is not below the independent %.3g", th, dse, math.Hypot(prev.SE, res.SE))
			}
		}
		prev, prevTheta = &res, th
	}

	opt, err := s.Maximize(ctx, []float64{0}, fit.OptimizeConfig{Samples: 4000, Seed: 2, Step: []float64{step}})
	if err != nil {
		t.Fatal(err)
	}
	best := goldenMax(exact, math.Log(1e-3), math.Log(1e3))
	const h = 1e-2
	f2 := (exact(best+h) - 2*exact(best) + exact(best-h)) / (h * h)
	f3 := (exact(best+2*h) - 2*exact(best+h) + 2*exact(best-h) - exact(best-2*h)) / (2 * h * h * h)
	width := 1 / math.Sqrt(-f2)
	// The fit's cubic bias (FitFraction), from the exact derivatives.
	fh := step * fit.FitFraction
	bias := math.Abs(fh * fh * f3 / (6 * f2))
	t.Logf("optimum log beta %.5f ± %.2g (exact %.5f, fit bias %.2g), width %.4f (exact %.4f), %d estimates", opt.Theta[0], opt.MCSE[0], best, bias, opt.Width[0], width, opt.Evals)
	if d := math.Abs(opt.Theta[0] - best); !(d <= kSE*opt.MCSE[0]+2*bias) {
		t.Errorf("optimum log beta %v, exact %v: off by %.3g = %.1f Monte Carlo SE (fit bias %.2g)", opt.Theta[0], best, d, d/opt.MCSE[0], bias)
	}
	if math.Abs(opt.Width[0]/width-1) > 0.1 {
		t.Errorf("width %v, exact %v", opt.Width[0], width)
	}
}

// TestNelderMead checks the simplex search (gonum's, with NelderMead's
// stopping rule) on Rosenbrock's function, whose minimum (1, 1) lies at
// the end of a curved valley, on a badly scaled quadratic in 6 dimensions,
// where gonum's coefficients differ from Nelder and Mead's, and with
// infeasible points.
func TestNelderMead(t *testing.T) {
	t.Parallel()
	rosen := func(x []float64) float64 {
		a, b := 1-x[0], x[1]-x[0]*x[0]
		return a*a + 100*b*b
	}
	evals := 0
	x, f := fit.NelderMead(func(x []float64) float64 { evals++; return rosen(x) }, []float64{-1.2, 1}, []float64{0.5, 0.5}, 1e-7, 5000)
	if math.Abs(x[0]-1) > 1e-5 || math.Abs(x[1]-1) > 1e-5 || f > 1e-9 {
		t.Errorf("minimum at %v (f = %v), want (1, 1)", x, f)
	}
	if evals >= 5000 {
		t.Errorf("Rosenbrock: stopped by the evaluation limit (%d), not by the step rule", evals)
	}
	// The evaluation limit is obeyed (gonum counts x0 among them).
	evals = 0
	fit.NelderMead(func(x []float64) float64 { evals++; return rosen(x) }, []float64{-1.2, 1}, []float64{0.5, 0.5}, 1e-7, 40)
	if evals > 40 {
		t.Errorf("%d evaluations, limit 40", evals)
	}
	// A quadratic with scales 1 to 100 (the steps are per coordinate).
	scale := []float64{1, 3, 10, 30, 100, 1}
	quad := func(x []float64) float64 {
		s := 0.0
		for j, v := range x {
			z := (v - float64(j)) / scale[j]
			s += z * z
		}
		return s
	}
	x0, step := make([]float64, 6), make([]float64, 6)
	for j := range step {
		step[j] = scale[j]
	}
	x, _ = fit.NelderMead(quad, x0, step, 1e-6, 20000)
	for j, v := range x {
		// The minimum is at x_j = j; xtol is relative to no scale, so
		// allow 1e-3 of each coordinate's scale.
		if math.Abs(v-float64(j)) > 1e-3*scale[j] {
			t.Errorf("quadratic: x[%d] = %v, want %d", j, v, j)
		}
	}
	// An infeasible region (+Inf) is avoided.
	x, _ = fit.NelderMead(func(x []float64) float64 {
		if x[0] > 0.5 {
			return math.Inf(1)
		}
		return rosen(x)
	}, []float64{-1.2, 1}, []float64{0.5, 0.5}, 1e-7, 5000)
	if x[0] > 0.5 {
		t.Errorf("the search left the feasible region: %v", x)
	}
	// An infeasible start gives the start back.
	x, f = fit.NelderMead(func([]float64) float64 { return math.Inf(1) }, []float64{-1.2, 1}, []float64{0.5, 0.5}, 1e-7, 5000)
	if x[0] != -1.2 || x[1] != 1 || !math.IsInf(f, 1) {
		t.Errorf("infeasible start: %v, %v", x, f)
	}
}

// TestEvalSeedsThreads checks that per-group seeds give the same estimate
// whatever the thread count, that a group's estimate depends only on its
// own seed, and that EvalSeeds with the seeds Estimate would not use still
// agrees with the exact value.
func TestEvalSeedsThreads(t *testing.T) {
	t.Parallel()
	data, exact := linearData(40, 5)
	s := linearSurface(t, data, 800)
	ctx := context.Background()
	seeds := []uint64{11, 12, 13, 14, 15, 16, 17, 18}
	s.Config.Threads = 1
	a, _, err := s.EvalSeeds(ctx, []float64{0.3}, 800, seeds, false)
	if err != nil {
		t.Fatal(err)
	}
	s.Config.Threads = 4
	b, _, err := s.EvalSeeds(ctx, []float64{0.3}, 800, seeds, true)
	if err != nil {
		t.Fatal(err)
	}
	if a.LogP != b.LogP || a.SE != b.SE {
		t.Errorf("threads 1: %v ± %v, threads 4: %v ± %v", a.LogP, a.SE, b.LogP, b.SE)
	}
	if len(b.Cloud.Groups) != 8 {
		t.Errorf("the cloud has %d groups, want 8", len(b.Cloud.Groups))
	}
	seeds[3] = 99
	c, _, err := s.EvalSeeds(ctx, []float64{0.3}, 800, seeds, false)
	if err != nil {
		t.Fatal(err)
	}
	for g := range seeds {
		if (g == 3) == (c.GroupLogP[g] == a.GroupLogP[g]) {
			t.Errorf("group %d: %v before, %v after renewing group 3's seed", g, a.GroupLogP[g], c.GroupLogP[g])
		}
	}
	if d := math.Abs(a.LogP - exact(0.3)); d > kSE*a.SE+epRoundTol {
		t.Errorf("log ML %v, exact %v (%.1f SE)", a.LogP, exact(0.3), d/a.SE)
	}
}

// TestPseudoMarginalLinearExact runs the block pseudo-marginal chain on the
// linear kernel's log beta, whose posterior under the prior N(0, 2^2) is
// exact (the exact log marginal likelihood on a fine grid): the chain's
// mean must be within kSE batch-means standard errors of the exact
// posterior mean, and its standard deviation within 20 % of the exact one.
func TestPseudoMarginalLinearExact(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("MCMC: skipped under -short")
	}
	data, exact := linearData(40, 7)
	s := linearSurface(t, data, 200)
	prior := fit.LogNormalPrior{Mu: []float64{0}, SD: []float64{2}}
	// The exact posterior of log beta, by the trapezoid rule.
	var z, m1, m2 float64
	const lo, hi, steps = -8.0, 8.0, 1600
	lp := make([]float64, steps+1)
	mx := math.Inf(-1)
	for i := range lp {
		th := lo + (hi-lo)*float64(i)/steps
		lp[i] = exact(th) + prior.LogDensity([]float64{th})
		mx = math.Max(mx, lp[i])
	}
	for i, l := range lp {
		th := lo + (hi-lo)*float64(i)/steps
		w := math.Exp(l - mx)
		z += w
		m1 += w * th
		m2 += w * th * th
	}
	mean := m1 / z
	sd := math.Sqrt(m2/z - mean*mean)

	var xs []float64
	st, err := s.PseudoMarginal(context.Background(), []float64{0}, prior, fit.MCMCConfig{
		Iterations: 1500, Burn: 200, Samples: 200, Groups: 8, Refresh: 1, Seed: 3,
		Visit: func(st *fit.MCMCState) error { xs = append(xs, st.Theta[0]); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	// Batch means over 20 batches.
	const nb = 20
	bs := len(xs) / nb
	var bm []float64
	for b := range nb {
		m := 0.0
		for _, x := range xs[b*bs : (b+1)*bs] {
			m += x / float64(bs)
		}
		bm = append(bm, m)
	}
	var gm, gv, bv float64
	for _, x := range xs {
		gm += x / float64(len(xs))
	}
	for _, x := range xs {
		gv += (x - gm) * (x - gm) / float64(len(xs)-1)
	}
	for _, m := range bm {
		bv += (m - gm) * (m - gm) / (nb - 1)
	}
	mcse := math.Sqrt(bv / nb)
	t.Logf("posterior of log beta: chain %.4f ± %.4f (sd %.4f), exact %.4f (sd %.4f); acceptance %.3f, var log ML %.2g, var log ratio %.2g",
		gm, mcse, math.Sqrt(gv), mean, sd, st.AcceptanceRate(), st.VarLogML, st.VarLogRatio)
	if d := math.Abs(gm - mean); d > kSE*mcse {
		t.Errorf("posterior mean %v, exact %v: %.1f batch-means SE", gm, mean, d/mcse)
	}
	if r := math.Sqrt(gv) / sd; math.Abs(r-1) > 0.2 {
		t.Errorf("posterior sd %v, exact %v", math.Sqrt(gv), sd)
	}
	if st.AcceptanceRate() < 0.1 || st.AcceptanceRate() > 0.9 {
		t.Errorf("acceptance rate %v", st.AcceptanceRate())
	}
}
