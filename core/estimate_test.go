package core_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/gp"
	"github.com/gpc-mc/gpc/internal/oracle"
)

// kSE is how many of its own standard errors an estimate may be from the
// exact value. The standard error comes from 16-32 independent groups (a t
// distribution with 15-31 degrees of freedom), so |t| > 4 has probability
// below 1e-3 per check; the seeds are fixed, so a passing test stays passing.
const kSE = 4

// roundTol absorbs float64 rounding when the standard error is 0 (every
// particle carries the same weight, as for independent variables).
const roundTol = 1e-12

// epRoundTol is roundTol for MethodEP, whose estimate is a sum of large
// terms that cancel: with strong sites (precision tau >> 1) EP's
// Sigma = R - V'V and the steps' 1/L_kk^2 - tau lose log10(tau) digits
// each. Measured: relative error 1.8e-10 for Phi(-30)^5.
const epRoundTol = 1e-9

type exactCase struct {
	name  string
	box   core.Box
	exact float64 // log P
}

func orthant(n int, cov []float64) core.Box { return core.Box{N: n, Cov: cov} }

func equicorrelated(n int, rho float64) []float64 {
	c := make([]float64, n*n)
	for i := range c {
		c[i] = rho
	}
	for i := range n {
		c[i*n+i] = 1
	}
	return c
}

func uniformLoadings(n int, seed uint64) []float64 {
	r := rand.New(rand.NewPCG(seed, 2013))
	d := make([]float64, n)
	for i := range d {
		d[i] = 2*r.Float64() - 1
	}
	return d
}

func exactCases(short bool) []exactCase {
	inf := math.Inf(1)
	cases := []exactCase{
		{"d=1", orthant(1, []float64{2}), math.Log(0.5)},
	}
	for _, rho := range []float64{0.3, -0.8, 0.95, -0.95} {
		cases = append(cases, exactCase{fmt.Sprintf("d=2/rho=%v", rho),
			orthant(2, []float64{1, rho, rho, 1}), math.Log(oracle.Orthant2(rho))})
	}
	for _, r := range [][3]float64{{0.5, -0.2, 0.3}, {0.9, 0.8, 0.85}, {-0.4, -0.4, 0.2}} {
		cases = append(cases, exactCase{fmt.Sprintf("d=3/r=%v", r),
			orthant(3, []float64{1, r[0], r[1], r[0], 1, r[2], r[1], r[2], 1}),
			math.Log(oracle.Orthant3(r[0], r[1], r[2]))})
	}
	// Independent variables with different variances: 2^-N.
	ind := make([]float64, 50*50)
	for i := range 50 {
		ind[i*50+i] = 1 + float64(i)
	}
	cases = append(cases, exactCase{"independent/n=50", orthant(50, ind), -50 * math.Ln2})
	// Far in the tail: P = Phi(-30)^5, about 1e-987.
	tail := core.Box{N: 5, Cov: equicorrelated(5, 0), Mean: []float64{-30, -30, -30, -30, -30}}
	cases = append(cases, exactCase{"tail/n=5/mean=-30", tail, 5 * core.LogPhi(-30)})
	ns := []int{10, 100, 1000}
	if short {
		ns = ns[:2]
	}
	for _, n := range ns {
		cases = append(cases, exactCase{fmt.Sprintf("equicorrelated/n=%d", n),
			orthant(n, equicorrelated(n, 0.5)), -math.Log(float64(n + 1))})
	}
	for _, n := range []int{50, 200} {
		d := uniformLoadings(n, uint64(n))
		cases = append(cases, exactCase{fmt.Sprintf("one-factor/n=%d", n),
			orthant(n, oracle.OneFactor(d)), oracle.OneFactorLogP(d)})
	}
	// Boxes with a mean, against quadrature.
	cases = append(cases, exactCase{"box2",
		core.Box{N: 2, Cov: []float64{2, 0.7, 0.7, 1}, Lower: []float64{-1, 0.5}, Upper: []float64{1.5, inf}, Mean: []float64{0.3, -0.2}},
		oracle.LogBox2([2]float64{0.3, -0.2}, 2, 0.7, 1, [2]float64{-1, 0.5}, [2]float64{1.5, inf})})
	s3 := [9]float64{1, 0.5, -0.3, 0.5, 2, 0.4, -0.3, 0.4, 1.5}
	cases = append(cases, exactCase{"box3",
		core.Box{N: 3, Cov: s3[:], Lower: []float64{-0.5, math.Inf(-1), 0}, Upper: []float64{2, 1, 3}, Mean: []float64{1, 0, -0.5}},
		oracle.LogBox3([3]float64{1, 0, -0.5}, s3, [3]float64{-0.5, math.Inf(-1), 0}, [3]float64{2, 1, 3})})
	return cases
}

// checkEstimate is the Monte Carlo acceptance rule: within kSE standard
// errors of the exact value.
func checkEstimate(t *testing.T, res core.Result, exact float64) {
	t.Helper()
	checkEstimateTol(t, res, exact, roundTol)
}

func checkEstimateTol(t *testing.T, res core.Result, exact, roundTol float64) {
	t.Helper()
	checkEstimateK(t, res, exact, roundTol, kSE)
}

// kSEHeavy is kSE for MethodEP on the 3-D orthants, whose group estimates
// are heavy-tailed (TestCalibration, docs/calibration.md finding 2):
// measured at M = 4000 in EP's default 32 groups over 4000 seeds, |z| > 4
// in 41 runs (r = 0.9/0.8/0.85) and 6 (r = 0.5/-0.2/0.3), |z| > 6 in 1
// and 0.
const kSEHeavy = 6

func checkEstimateK(t *testing.T, res core.Result, exact, roundTol, k float64) {
	t.Helper()
	if math.IsNaN(res.SE) || math.IsInf(res.LogP, 0) {
		t.Fatalf("log P = %v, SE = %v (exact %v)", res.LogP, res.SE, exact)
	}
	if err := math.Abs(res.LogP - exact); err > k*res.SE+roundTol*math.Max(1, math.Abs(exact)) {
		t.Errorf("log P = %.10g, exact %.10g: error %.3g is %.1f standard errors (SE %.3g)",
			res.LogP, exact, res.LogP-exact, (res.LogP-exact)/res.SE, res.SE)
	}
}

func TestEstimateExact(t *testing.T) {
	t.Parallel()
	type variant struct {
		method  core.Method
		order   core.OrderKind
		samples int
		groups  int
	}
	variants := []variant{
		{core.MethodSMC, core.OrderVariance, 4000, 0},
		{core.MethodSMC, core.OrderGreedy, 4000, 0},
		{core.MethodSMC, core.OrderShuffle, 4000, 16},
		{core.MethodMET, core.OrderGreedy, 4000, 0},
		{core.MethodMET, core.OrderSharp, 4000, 0},
		{core.MethodEP, core.OrderGreedy, 4000, 0},
		{core.MethodEP, core.OrderVariance, 4000, 0},
		{core.MethodPaperHard, core.OrderShuffle, 8000, 16},
		{core.MethodPaperSoft, core.OrderGiven, 8000, 16},
	}
	for _, c := range exactCases(testing.Short()) {
		for _, v := range variants {
			if v.method != core.MethodSMC && v.method != core.MethodEP && (c.box.N > 100 || c.box.Mean != nil && c.box.Mean[0] < -10) {
				// The paper's methods are slow and need far more particles
				// at N = 1000, and their blind draws never reach a box 30
				// standard deviations out (every particle is rejected).
				continue
			}
			t.Run(fmt.Sprintf("%s/%v/%v", c.name, v.method, v.order), func(t *testing.T) {
				t.Parallel()
				f, err := core.Prepare(c.box, core.Candidate{Method: v.method, Order: v.order}, 3, 0)
				if err != nil {
					t.Fatal(err)
				}
				res, err := core.Estimate(context.Background(), f, core.Config{
					Method: v.method, Samples: v.samples, Groups: v.groups, Seed: 11, Threads: 1})
				if err != nil {
					t.Fatal(err)
				}
				tol, k := roundTol, float64(kSE)
				if v.method == core.MethodEP {
					tol = epRoundTol
					if c.box.N == 3 && c.box.Mean == nil {
						k = kSEHeavy
					}
				}
				checkEstimateK(t, res, c.exact, tol, k)
			})
		}
	}
}

// TestThreadsDeterminism: the result is bit-identical for any thread count,
// for every method (the EP solve and the tilt use every thread too).
// Not parallel: it sets GOMAXPROCS.
func TestThreadsDeterminism(t *testing.T) {
	d := uniformLoadings(80, 5)
	box := orthant(80, oracle.OneFactor(d))
	for _, cand := range []core.Candidate{{Method: core.MethodSMC, Order: core.OrderShuffle}, {Method: core.MethodEP, Order: core.OrderGreedy}, {Method: core.MethodMET, Order: core.OrderSharp}} {
		var first core.Result
		var firstF *core.Factor
		for i, threads := range []int{1, 2, 3, 8} {
			procs := runtime.GOMAXPROCS(threads)
			f, err := core.Prepare(box, cand, 1, 0)
			runtime.GOMAXPROCS(procs)
			if err != nil {
				t.Fatal(err)
			}
			res, err := core.Estimate(context.Background(), f, core.Config{Method: cand.Method, Samples: 3000, Groups: 12, Seed: 9, Threads: threads})
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				first, firstF = res, f
				continue
			}
			if !slices.Equal(f.L, firstF.L) {
				t.Errorf("%v, threads %d: the factor differs from threads 1's", cand, threads)
			}
			if math.Float64bits(res.LogP) != math.Float64bits(first.LogP) || math.Float64bits(res.SE) != math.Float64bits(first.SE) {
				t.Errorf("%v, threads %d: log P %v SE %v, threads 1: %v %v", cand, threads, res.LogP, res.SE, first.LogP, first.SE)
			}
		}
	}
}

// TestUnevenGroups: group sizes that differ by one are weighted correctly.
func TestUnevenGroups(t *testing.T) {
	t.Parallel()
	f, err := core.NewFactor(orthant(20, equicorrelated(20, 0.5)), core.Ordering{Kind: core.OrderVariance}, 0)
	if err != nil {
		t.Fatal(err)
	}
	res, err := core.Estimate(context.Background(), f, core.Config{Samples: 5003, Groups: 7, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Samples != 5003 || res.Groups != 7 {
		t.Errorf("samples %d groups %d", res.Samples, res.Groups)
	}
	checkEstimate(t, res, -math.Log(21))
}

// TestDefaultGroups pins the default group counts: EP's groups of 125, 64
// from M = 8000 on (docs/calibration.md, finding 2), the other methods' 32
// of 250, 8 small groups for small runs, one for the paper's methods; and
// that Estimate uses them.
func TestDefaultGroups(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		method  core.Method
		samples int
		want    int
	}{
		{core.MethodEP, 8000, 64}, {core.MethodEP, 10000, 64}, {core.MethodEP, 1 << 20, 64},
		{core.MethodEP, 7999, 63}, {core.MethodEP, 4000, 32}, {core.MethodEP, 2000, 16}, {core.MethodEP, 1000, 8}, {core.MethodEP, 40, 2},
		{core.MethodMET, 8000, 32}, {core.MethodMET, 10000, 32}, {core.MethodSMC, 1 << 20, 32}, {core.MethodSMC, 2000, 8},
		{core.MethodPaperHard, 10000, 1}, {core.MethodPaperSoft, 10000, 1},
	} {
		if got := core.DefaultGroups(c.method, c.samples); got != c.want {
			t.Errorf("DefaultGroups(%v, %d) = %d, want %d", c.method, c.samples, got, c.want)
		}
	}
	f, err := core.Prepare(orthant(3, []float64{1, 0.9, 0.8, 0.9, 1, 0.85, 0.8, 0.85, 1}), core.Candidate{Method: core.MethodEP, Order: core.OrderGreedy}, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	res, err := core.Estimate(context.Background(), f, core.Config{Method: core.MethodEP, Samples: 8000, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Groups != 64 || len(res.GroupLogP) != 64 {
		t.Errorf("EP at M = 8000: %d groups, want 64", res.Groups)
	}
}

func TestNewFactorErrors(t *testing.T) {
	t.Parallel()
	inf := math.Inf(1)
	for _, c := range []struct {
		name string
		box  core.Box
		ord  core.Ordering
		want string
	}{
		{"not PD", orthant(2, []float64{1, 2, 2, 1}), core.Ordering{}, "not positive definite"},
		{"rank deficient", orthant(3, []float64{1, 1, 0, 1, 1, 0, 0, 0, 1}), core.Ordering{}, "not positive definite"},
		{"singular", orthant(2, []float64{1, 1 - 1e-14, 1 - 1e-14, 1}), core.Ordering{}, "singular to working precision"},
		{"asymmetric", orthant(2, []float64{1, 0.5, 0.4, 1}), core.Ordering{}, "not symmetric"},
		{"zero variance", orthant(2, []float64{0, 0, 0, 1}), core.Ordering{}, "not positive"},
		{"NaN", orthant(2, []float64{1, math.NaN(), math.NaN(), 1}), core.Ordering{}, "NaN"},
		{"Inf", orthant(2, []float64{inf, 0, 0, 1}), core.Ordering{}, "+Inf"},
		{"lower > upper", core.Box{N: 1, Cov: []float64{1}, Lower: []float64{2}, Upper: []float64{1}}, core.Ordering{}, "exceeds"},
		{"NaN bound", core.Box{N: 1, Cov: []float64{1}, Lower: []float64{math.NaN()}}, core.Ordering{}, "NaN"},
		{"interleave without labels", orthant(1, []float64{1}), core.Ordering{Kind: core.OrderInterleave}, "label"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := core.NewFactor(c.box, c.ord, 0)
			var ie *core.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("error %v, want an *InputError", err)
			}
			if !contains(err.Error(), c.want) {
				t.Errorf("error %q does not mention %q", err, c.want)
			}
		})
	}
	// Jitter repairs a singular matrix, and is recorded.
	f, err := core.NewFactor(orthant(2, []float64{1, 1, 1, 1}), core.Ordering{}, 1e-6)
	if err != nil || f.Jitter != 1e-6 {
		t.Errorf("with jitter: %v, jitter %v", err, f)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// TestOrdersArePermutations: every order visits each variable once, and the
// factor reproduces the reordered covariance.
func TestOrdersArePermutations(t *testing.T) {
	t.Parallel()
	n := 30
	d := uniformLoadings(n, 1)
	cov := oracle.OneFactor(d)
	labels := make([]float64, n)
	for i := range labels {
		labels[i] = float64(1 - 2*(i%3%2))
	}
	for _, kind := range []core.OrderKind{core.OrderGiven, core.OrderShuffle, core.OrderInterleave, core.OrderGreedy, core.OrderVariance} {
		f, err := core.NewFactor(orthant(n, cov), core.Ordering{Kind: kind, Seed: 4, Labels: labels}, 0)
		if err != nil {
			t.Fatal(err)
		}
		seen := make([]bool, n)
		for _, p := range f.Perm {
			if seen[p] {
				t.Fatalf("%v: %d twice in %v", kind, p, f.Perm)
			}
			seen[p] = true
		}
		for i := range n {
			for j := range n {
				s := 0.0
				for k := range n {
					s += f.L[i*n+k] * f.L[j*n+k]
				}
				if want := cov[f.Perm[i]*n+f.Perm[j]]; math.Abs(s-want) > 1e-12 {
					t.Fatalf("%v: (L L')[%d][%d] = %v, want %v", kind, i, j, s, want)
				}
			}
		}
	}
}

// TestChooseLargeNStops: from EPLargeN variables on, a trusted first pilot
// ends the comparison (met/sharp is only the fallback).
func TestChooseLargeNStops(t *testing.T) {
	if testing.Short() {
		t.Skip("EP and a pilot on 1000 variables")
	}
	t.Parallel()
	n := core.EPLargeN
	box := orthant(n, oracle.OneFactor(uniformLoadings(n, 8)))
	_, c, pilots, err := core.Choose(context.Background(), box, core.AutoCandidates, 0, core.Config{Samples: 2000, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := pilots[0].Result.Trust(); !ok {
		t.Fatalf("the first pilot is not trusted: %s", why)
	}
	if len(pilots) != 1 || c != core.AutoCandidates[0] {
		t.Fatalf("%d pilots, chose %v: want the first candidate's pilot only", len(pilots), c)
	}
}

// TestChoose: the choice is one of the pilots, follows the documented rule,
// and is reproducible.
func TestChoose(t *testing.T) {
	t.Parallel()
	box := orthant(60, oracle.OneFactor(uniformLoadings(60, 8)))
	cfg := core.Config{Samples: 10000, Seed: 5}
	f, c, pilots, err := core.Choose(context.Background(), box, core.AutoCandidates, 0, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(pilots) != len(core.AutoCandidates) {
		t.Fatalf("%d pilots", len(pilots))
	}
	best := 0
	for k, p := range pilots {
		if p.Candidate != core.AutoCandidates[k] || p.Result.Samples != core.PilotSamples(cfg.Samples) {
			t.Errorf("pilot %d: %v with %d samples", k, p.Candidate, p.Result.Samples)
		}
		b := pilots[best].Result
		if d := p.Result.LogP - b.LogP; math.Abs(d) > core.PilotZ*math.Hypot(p.Result.SE, b.SE) && d > 0 ||
			math.Abs(d) <= core.PilotZ*math.Hypot(p.Result.SE, b.SE) && p.Result.SE < core.PilotMargin*b.SE {
			best = k
		}
	}
	if c != pilots[best].Candidate || f != pilots[best].Factor {
		t.Errorf("chose %v, the rule picks %v", c, pilots[best].Candidate)
	}
	if (c.Method == core.MethodMET) != (f.Mu != nil) {
		t.Errorf("%v: tilt %v", c, f.Mu != nil)
	}
	_, c2, _, _ := core.Choose(context.Background(), box, core.AutoCandidates, 0, cfg)
	if c2 != c {
		t.Errorf("second choice %v, first %v", c2, c)
	}
}

func TestEstimateCancel(t *testing.T) {
	t.Parallel()
	f, err := core.NewFactor(orthant(300, equicorrelated(300, 0.5)), core.Ordering{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := core.Estimate(ctx, f, core.Config{Samples: 10000}); !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, c := range []core.Config{
		{Samples: 1},
		{Samples: 10, Groups: 6},
		{Samples: 100, ESSThreshold: 1.5},
		{Samples: 100, Groups: -1},
		{Samples: 100, Method: core.Method(9)},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}

// TestCalibration checks that the standard errors are honest: over many
// seeds, the exact value lies within 2 standard errors in about 95 % of the
// runs (94.6 % for a t distribution with 31 degrees of freedom: 32 groups),
// for each method and for the default choice among them.
//
// EP's standard errors are optimistic where its Gaussian is a poor fit to
// the truncated normal: its weights then have a heavy right tail that small
// groups rarely sample. Measured at M = 10^4 (32 groups, 200 seeds): 85.5 %
// within 2 SE on the strongly correlated d = 3 case, 91.5 % on the
// equicorrelated one; so those two pairs are not held to the band, and the
// default must be (its pilots prefer met/sharp on d = 3, where met is also 20
// times more accurate).
//
// The runs use M = 9600 particles in 32 groups of 300, about the tools'
// default for met (EP's is 64 groups of 150 there; in 64 groups EP on d = 3
// measured 92.3 % within 1.96 SE and rms z 1.15 over 300 seeds, 91.3 % and
// 1.17 in 32: docs/calibration.md, finding 2). With groups of 100 (M = 3200) EP's standard errors are about 20 %
// too small on the one-factor case (87 % within 2 SE, rms z 1.21 over 100
// seeds): a group must be large enough to sample the weights' tail.
//
// The default run uses 200 seeds, enough to catch a standard error off by a
// third, and the default candidates; -long runs the full study, 300 seeds
// and smc too (go test ./core -run Calibration -v -long).
var long = flag.Bool("long", false, "run the long studies in full")

func TestCalibration(t *testing.T) {
	if testing.Short() {
		t.Skip("calibration study: skipped under -short")
	}
	t.Parallel()
	runs, calSamples := 200, 9600
	if *long {
		runs = 300
	}
	// The band is 3 binomial standard deviations either side of 94.6 %:
	// [0.907, 0.985] at 300 runs, [0.898, 0.994] at 200. (At 100 runs the
	// rms z below varies by about 0.08 from one draw of the streams to
	// another: the Latin blocks' present permutation put one case at
	// 0.833, which 300 runs put at 0.952, the former one at 0.963.)
	sd := math.Sqrt(0.946 * 0.054 / float64(runs))
	lo, hi := 0.946-3*sd, math.Min(1, 0.946+3*sd)
	lin := linearClassifierBox(60, 4)
	for _, c := range []exactCase{
		{"one-factor/n=100", orthant(100, oracle.OneFactor(uniformLoadings(100, 77))), oracle.OneFactorLogP(uniformLoadings(100, 77))},
		{"equicorrelated/n=30", orthant(30, equicorrelated(30, 0.5)), -math.Log(31)},
		{"d=3", orthant(3, []float64{1, 0.9, 0.8, 0.9, 1, 0.85, 0.8, 0.85, 1}), math.Log(oracle.Orthant3(0.9, 0.8, 0.85))},
		{"linear-classifier/n=60", lin.box, lin.exact},
	} {
		for _, cand := range []*core.Candidate{{Method: core.MethodSMC, Order: core.OrderVariance}, {Method: core.MethodMET, Order: core.OrderSharp}, {Method: core.MethodEP, Order: core.OrderGreedy}, nil} {
			name := "auto"
			if cand != nil && cand.Method == core.MethodSMC && !*long {
				continue // not a default candidate: -long only
			}
			if cand != nil {
				name = cand.String()
				if cand.Method == core.MethodEP && (c.name == "d=3" || c.name == "equicorrelated/n=30") {
					continue // see above
				}
			}
			t.Run(c.name+"/"+name, func(t *testing.T) {
				t.Parallel()
				var f *core.Factor
				var err error
				if cand != nil {
					f, err = core.Prepare(c.box, *cand, 0, 0)
					if err != nil {
						t.Fatal(err)
					}
				}
				inside := 0
				var z2 float64
				chosen := map[string]int{}
				for s := range runs {
					cfg := core.Config{Samples: calSamples, Groups: 32, Seed: uint64(1000 + s), Threads: 1}
					if cand == nil {
						var ch core.Candidate
						if f, ch, _, err = core.Choose(context.Background(), c.box, core.AutoCandidates, 0, cfg); err != nil {
							t.Fatal(err)
						}
						cfg.Method = ch.Method
						chosen[ch.String()]++
					} else {
						cfg.Method = cand.Method
					}
					res, err := core.Estimate(context.Background(), f, cfg)
					if err != nil {
						t.Fatal(err)
					}
					z := (res.LogP - c.exact) / res.SE
					z2 += z * z
					if math.Abs(z) <= 2 {
						inside++
					}
				}
				cover := float64(inside) / float64(runs)
				rmsZ := math.Sqrt(z2 / float64(runs))
				t.Logf("%s %s: %.1f %% within 2 SE, rms z %.3f %v", c.name, name, 100*cover, rmsZ, chosen)
				if cover < lo || cover > hi {
					t.Errorf("coverage %.3f outside [%.3f, %.3f]", cover, lo, hi)
				}
				// Standard errors a quarter too large show as an rms z near
				// 0.8, which the coverage band alone cannot see (measured at
				// 200 runs: 0.90 to 0.99).
				if rmsZ < 0.85 {
					t.Errorf("rms z %.3f: the standard errors are too large", rmsZ)
				}
			})
		}
	}
}

type exactBox struct {
	box   core.Box
	exact float64
}

// linearClassifierBox is the orthant problem of a GP classifier with the
// linear kernel on one feature (the paper's Experiment 2 family): n/2
// patterns from N(0, 1) labelled +1 and n/2 from N(1.5, 1) labelled -1,
// whose log marginal likelihood is a one-dimensional integral.
func linearClassifierBox(n int, seed uint64) exactBox {
	r := rand.New(rand.NewPCG(seed, 2))
	x, y := make([]float64, n), make([]float64, n)
	for i := range n {
		x[i], y[i] = r.NormFloat64(), 1
		if i%2 == 1 {
			x[i], y[i] = 1.5+r.NormFloat64(), -1
		}
	}
	k := &gp.Kernel{Kind: gp.KernelLinear, Beta: 1}
	logML, _ := oracle.LinearClassifier(x, y, 1, nil)
	return exactBox{core.Box{N: n, Cov: gp.ClassifierCov(k, x, 1, y)}, logML}
}

// TestStudentScale checks the standard errors' Student t scaling against
// quantiles t_{G-1}(0.975) (R's qt, to the digits written) over
// z(0.975) = 1.959964, and that it tends to 1.
func TestStudentScale(t *testing.T) {
	const tol = 1e-5 // the quantiles are given to six digits or more
	for _, c := range []struct {
		g int
		t float64
	}{{2, 12.7062}, {3, 4.30265}, {8, 2.36462}, {32, 2.03951}, {257, 1.969274}, {1001, 1.962339}} {
		if got, want := core.StudentScale(c.g), c.t/1.959964; math.Abs(got-want) > tol*want {
			t.Errorf("StudentScale(%d) = %.7f, want %.7f", c.g, got, want)
		}
	}
	if !math.IsNaN(core.StudentScale(1)) || !math.IsNaN(core.StudentScale(0)) {
		t.Error("StudentScale of fewer than 2 groups is not NaN")
	}
}

// TestESSThresholdDefaults checks the resampling thresholds that Plan
// resolves: MethodEP's is 0.5 below core.EPLargeN variables and
// core.EPLargeESSThreshold from there on, the other methods' do not depend
// on the dimension, and a threshold the caller sets is kept.
func TestESSThresholdDefaults(t *testing.T) {
	for _, c := range []struct {
		method core.Method
		n      int
		ess    float64
		want   float64
	}{
		{core.MethodEP, core.EPLargeN - 1, 0, core.DefaultESSThreshold},
		{core.MethodEP, core.EPLargeN, 0, core.EPLargeESSThreshold},
		{core.MethodEP, 5000, 0.3, 0.3},
		{core.MethodSMC, 5000, 0, core.DefaultESSThreshold},
		{core.MethodMET, 5000, 0, core.METESSThreshold},
	} {
		got, err := core.Plan(core.Config{Method: c.method, Samples: 1000, ESSThreshold: c.ess}, c.n)
		if err != nil {
			t.Fatal(err)
		}
		if got.ESSThreshold != c.want {
			t.Errorf("%s, n = %d, ESSThreshold %v: planned %v, want %v", c.method, c.n, c.ess, got.ESSThreshold, c.want)
		}
	}
}

// TestTrustESS checks Trust's weight-degeneracy rule: an ESS below 2
// particles warns unless the estimator's own resampling threshold is below
// 2 particles (ResampleESS), and the groups' agreement is judged either way.
func TestTrustESS(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name          string
		minESS, floor float64
		effGroups     float64
		ok            bool
		why           string
	}{
		{"smc, ESS collapsed", 1.0, 125, 30, false, "weight degeneracy"},
		{"met, ESS at one particle by design", 1.0, 0.25, 30, true, ""},
		{"met, groups disagree", 1.0, 0.25, 5, false, "heavy-tailed (effectively 5.0 of 32 groups carry the mean); larger groups spread less"},
		{"threshold unknown (Summarize)", 1.0, math.Inf(1), 30, false, "weight degeneracy"},
		{"healthy", 50, 125, 31, true, ""},
	} {
		r := core.Result{Samples: 8000, Groups: 32, LogP: -10, SE: 0.01, MinESSParticles: c.minESS,
			ResampleESS: c.floor, EffectiveGroups: c.effGroups, DeadAt: -1}
		ok, why := r.Trust()
		if ok != c.ok || !strings.Contains(why, c.why) {
			t.Errorf("%s: Trust() = %v, %q; want %v, %q", c.name, ok, why, c.ok, c.why)
		}
	}
	r := core.Result{Samples: 8000, Groups: 32}
	r.SetESSThreshold(core.METESSThreshold)
	if want := core.METESSThreshold * 250; r.ResampleESS != want {
		t.Errorf("SetESSThreshold(%v) on groups of 250: %v, want %v", core.METESSThreshold, r.ResampleESS, want)
	}
}
