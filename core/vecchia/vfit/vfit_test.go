package vfit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpc-mc/gpc/core/fit"
	"github.com/gpc-mc/gpc/core/gp"
	"github.com/gpc-mc/gpc/core/vecchia"
)

// twoClass returns n points of the large-N issue's two-class problem
// (bench/vecchia/twoclass's construction: half N((0.75, 0.75), I)
// labelled +1, half N((-0.75, -0.75), I) labelled -1), with extra features
// of noise of scale noise each (none for extra 0).
func twoClass(n, extra int, noise float64, seed uint64) (x, y []float64, d int) {
	r := rand.New(rand.NewPCG(seed, 0x7477))
	d = 2 + extra
	y = make([]float64, n)
	for i := range y {
		y[i] = float64(1 - 2*(i%2))
	}
	r.Shuffle(n, func(i, j int) { y[i], y[j] = y[j], y[i] })
	x = make([]float64, n*d)
	for i, s := range y {
		x[i*d], x[i*d+1] = 0.75*s+r.NormFloat64(), 0.75*s+r.NormFloat64()
		for j := 2; j < d; j++ {
			x[i*d+j] = noise * r.NormFloat64()
		}
	}
	return x, y, d
}

// start returns the data's start of kernel kind on p, its
// hyperparameters, theta0 and the box (fit.DataScale).
func start(t *testing.T, p *Problem, kind gp.KernelKind) (gp.Kernel, []gp.Hyper, []float64, []float64, []float64) {
	sc, err := fit.NewDataScale(p.X, p.D)
	if err != nil {
		t.Fatal(err)
	}
	k := sc.Start(kind, p.D)
	hs := k.Hypers()
	th := make([]float64, len(hs))
	for j, h := range hs {
		th[j] = math.Log(h.Get(&k))
	}
	lo, hi := sc.Bounds(&k, hs)
	return k, hs, th, lo, hi
}

// TestEvidenceGrad checks Evidence.At's gradient, after a values-only
// evaluation at the same point (the line search's order) and alone,
// against central differences, for rbf and ard at two points each.
func TestEvidenceGrad(t *testing.T) {
	ctx := context.Background()
	for _, kind := range []gp.KernelKind{gp.KernelRBF, gp.KernelARD, gp.KernelMatern52} {
		t.Run(kind.String(), func(t *testing.T) {
			x, y, d := twoClass(200, 1, 1, 3)
			p := &Problem{X: x, D: d, Y: y, M: 12, Threads: 2}
			k, hs, th0, _, _ := start(t, p, kind)
			ev, err := NewEvidence(ctx, p, k, hs, th0)
			if err != nil {
				t.Fatal(err)
			}
			for _, shift := range []float64{0, 0.8} {
				th := slices.Clone(th0)
				for j := range th {
					th[j] += shift * float64(1-2*(j%2))
				}
				f, _, err := ev.At(ctx, th, false)
				if err != nil {
					t.Fatal(err)
				}
				f2, g, err := ev.At(ctx, th, true)
				if err != nil {
					t.Fatal(err)
				}
				if f2 != f {
					t.Errorf("the gradient's evaluation %v differs from the value's %v", f2, f)
				}
				const h = 1e-4
				for j := range th {
					tp, tm := slices.Clone(th), slices.Clone(th)
					tp[j] += h
					tm[j] -= h
					fp, _, err := ev.At(ctx, tp, false)
					if err != nil {
						t.Fatal(err)
					}
					fm, _, err := ev.At(ctx, tm, false)
					if err != nil {
						t.Fatal(err)
					}
					fd := (fp - fm) / (2 * h)
					// Truncation h^2 = 1e-8 of the third derivative, the
					// modes' tolerance and rounding 1e-9 of |f| / h.
					if math.Abs(fd-g[j]) > 1e-6*math.Abs(fd)+1e-9*math.Abs(f)/h {
						t.Errorf("shift %v, hyperparameter %d: gradient %.10g, central differences %.10g", shift, j, g[j], fd)
					}
				}
			}
		})
	}
}

// TestMaximize fits rbf's hyperparameters on 400 points from the data's
// start: the end is a maximum of the evidence (its gradient within the
// search's tolerance, no better point a step of 0.05 away in any
// direction), the same bits on 1 and 3 threads.
func TestMaximize(t *testing.T) {
	ctx := context.Background()
	x, y, d := twoClass(400, 0, 0, 5)
	var first []float64
	for _, threads := range []int{1, 3} {
		p := &Problem{X: x, D: d, Y: y, M: 20, Threads: threads}
		k, hs, th0, lo, hi := start(t, p, gp.KernelRBF)
		res, err := Maximize(ctx, p, k, hs, th0, fit.FitConfig{Lower: lo, Upper: hi})
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = res.Theta
			checkOptimum(t, res)
			continue
		}
		if !slices.Equal(res.Theta, first) {
			t.Errorf("%d threads: %v, 1 thread: %v", threads, res.Theta, first)
		}
	}
}

// TestMaximizeARD fits ard's length scales on data with an irrelevant
// third feature of a larger scale: its length scale grows beyond the
// others, the ordering and the neighbours are recomputed, and the
// structure at the end is within RestructureFactor of the optimum's
// metric.
func TestMaximizeARD(t *testing.T) {
	if raceEnabled && testing.Short() {
		t.Skip("ard's search takes two minutes under the race detector; -race -short leaves it to the plain run (TestMaximize and TestMaximizeStarts run the same threaded evaluations under -race)")
	}
	ctx := context.Background()
	x, y, d := twoClass(300, 1, 3, 7)
	p := &Problem{X: x, D: d, Y: y, M: 15}
	k, hs, th0, lo, hi := start(t, p, gp.KernelARD)
	cfg := fit.FitConfig{Lower: lo, Upper: hi, Prior: fit.NewLogNormalPrior(th0, fit.ARDPriorSD)}
	res, err := Maximize(ctx, p, k, hs, th0, cfg)
	if err != nil {
		t.Fatal(err)
	}
	a := res.Evidence.KernelAt(res.Theta).Alpha
	t.Logf("alpha %.4g, beta %.4g, log Z %.4f, %d restructures, %d reblocks, %d evaluations", a, math.Exp(res.Theta[3]), res.LogZ, res.Restructures, res.Reblocks, res.Evals)
	if !(a[2] > 3*max(a[0], a[1])) {
		t.Errorf("the noise feature's length scale %.4g is not far above the others' %.4g", a[2], a[:2])
	}
	if res.Restructures == 0 {
		t.Error("the structure was not recomputed")
	}
	if dr := res.Evidence.MetricDrift(res.Theta); dr > math.Log(RestructureFactor) && res.Restructures < MaxRestructures {
		t.Errorf("the structure's metric is a factor %.3g from the optimum's", math.Exp(dr))
	}
}

// TestMaximizeKept makes the structure recomputed at ard's optimum break
// the evidence's factor down (as the neighbours in a fitted metric can on
// many features): the search's own structure and its optimum stay, with
// Result.Kept, instead of an error that loses the search.
func TestMaximizeKept(t *testing.T) {
	if raceEnabled && testing.Short() {
		t.Skip("ard's search takes minutes under the race detector; the plain run covers it")
	}
	calls := 0
	newStructure = func(x []float64, n, d int, o vecchia.Options) (*vecchia.Structure, error) {
		if calls++; calls > 1 {
			return nil, fmt.Errorf("a test's structure: %w", vecchia.ErrLaplaceBreakdown)
		}
		return vecchia.NewStructure(x, n, d, o)
	}
	defer func() { newStructure = vecchia.NewStructure }()
	ctx := context.Background()
	x, y, d := twoClass(300, 1, 3, 7)
	p := &Problem{X: x, D: d, Y: y, M: 15}
	k, hs, th0, lo, hi := start(t, p, gp.KernelARD)
	cfg := fit.FitConfig{Lower: lo, Upper: hi, Prior: fit.NewLogNormalPrior(th0, fit.ARDPriorSD)}
	res, err := Maximize(ctx, p, k, hs, th0, cfg)
	if err != nil {
		t.Fatalf("a structure that breaks down at the optimum lost the search: %v", err)
	}
	ev := res.Evidence
	if calls != 2 || !res.Kept || res.Restructures != 0 {
		t.Fatalf("%d structures, kept %v, %d restructures: want 2, true, 0", calls, res.Kept, res.Restructures)
	}
	if !slices.EqualFunc(ev.Scales, k.Alpha, func(a, b float64) bool { return math.Abs(a-b) <= 1e-12*b }) {
		t.Errorf("the kept structure's scales %v are not the start's %v", ev.Scales, k.Alpha)
	}
	if dr := ev.MetricDrift(res.Theta); dr <= math.Log(RestructureFactor) {
		t.Errorf("the optimum's metric moved by a factor %.3g only: no restructure was tried", math.Exp(dr))
	}
	lz, _, err := ev.At(ctx, res.Theta, false)
	if err != nil || math.Abs(lz-res.LogZ) > 1e-9*math.Abs(lz) {
		t.Errorf("the kept evaluator gives %v (%v) at the optimum, the search %v", lz, err, res.LogZ)
	}
}

// TestMaximizeTrap checks that a start where the kernel is diagonal is
// refused with a *fit.TrapError.
func TestMaximizeTrap(t *testing.T) {
	x, y, d := twoClass(200, 0, 0, 9)
	p := &Problem{X: x, D: d, Y: y, M: 10}
	k, hs, th0, lo, hi := start(t, p, gp.KernelRBF)
	th0[0] = lo[0] // a tenth of the smallest distance
	_, err := Maximize(context.Background(), p, k, hs, th0, fit.FitConfig{Lower: lo, Upper: hi})
	var te *fit.TrapError
	if !errors.As(err, &te) || te.End || te.Trap != fit.TrapDiagonal {
		t.Errorf("%v, want a diagonal trap at the start", err)
	}
}

// TestMaximizeStarts checks that restarts are drawn deterministically,
// the best is the highest objective, and the first start's search is
// Maximize's.
func TestMaximizeStarts(t *testing.T) {
	ctx := context.Background()
	x, y, d := twoClass(250, 0, 0, 11)
	p := &Problem{X: x, D: d, Y: y, M: 12}
	k, hs, th0, lo, hi := start(t, p, gp.KernelMatern32)
	cfg := fit.FitConfig{Lower: lo, Upper: hi, Seed: 3}
	best, starts, err := MaximizeStarts(ctx, p, k, hs, th0, 2, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(starts) != 3 {
		t.Fatalf("%d starts, want 3", len(starts))
	}
	for r, st := range starts {
		t.Logf("start %d at %.4g: %v, objective %.4f, end %.4g, bound %v", r, st.Theta, st.Err, st.Objective, st.Result.Theta, st.Result.Bound)
		if st.Objective > starts[best].Objective {
			t.Errorf("start %d's objective %v is above the best's (%d) %v", r, st.Objective, best, starts[best].Objective)
		}
	}
	one, err := Maximize(ctx, p, k, hs, th0, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(one.Theta, starts[0].Result.Theta) {
		t.Errorf("the first start ended at %v, Maximize at %v", starts[0].Result.Theta, one.Theta)
	}
	th, err := fit.DrawRestart(th0, 1, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(th, starts[1].Theta) {
		t.Errorf("restart 1 started at %v, fit.DrawRestart draws %v", starts[1].Theta, th)
	}
}

// threeClass returns n points of c classes (class i mod c, shuffled): 2-D
// features, class j's points around 1.25 (cos(2 pi j / c), sin(2 pi j /
// c)) with unit spread (bench/vecchia/threeclass's construction), rounded
// to the grid step round (0: not rounded), labels 0..c-1.
func threeClass(n, c int, round float64, seed uint64) (x, y []float64) {
	r := rand.New(rand.NewPCG(seed, 0x3c1a))
	y = make([]float64, n)
	for i := range y {
		y[i] = float64(i % c)
	}
	r.Shuffle(n, func(i, j int) { y[i], y[j] = y[j], y[i] })
	x = make([]float64, 2*n)
	for i, cl := range y {
		a := 2 * math.Pi * cl / float64(c)
		x[2*i], x[2*i+1] = 1.25*math.Cos(a)+r.NormFloat64(), 1.25*math.Sin(a)+r.NormFloat64()
		if round > 0 {
			x[2*i], x[2*i+1] = math.Round(x[2*i]/round)*round, math.Round(x[2*i+1]/round)*round
		}
	}
	return x, y
}

// TestClassGrad checks the multi-class evidence's gradient (central
// differences of step FDStep) against Richardson's extrapolation of
// differences at steps 1e-3 and 2e-3 (fourth order): where both agree,
// the evidence is smooth and the gradient is its own; on rounded
// features (repeated points), three and four classes.
func TestClassGrad(t *testing.T) {
	ctx := context.Background()
	for _, c := range []int{3, 4} {
		t.Run(fmt.Sprint(c, " classes"), func(t *testing.T) {
			x, y := threeClass(240, c, 0.2, uint64(c))
			p := &Problem{X: x, D: 2, Y: y, Classes: c, M: 10, Threads: 2}
			k, hs, th, _, _ := start(t, p, gp.KernelRBF)
			ev, err := NewEvidence(ctx, p, k, hs, th)
			if err != nil {
				t.Fatal(err)
			}
			if ev.S.Duplicates() == 0 {
				t.Fatal("no repeated points")
			}
			f, g, err := ev.At(ctx, th, true)
			if err != nil {
				t.Fatal(err)
			}
			at := func(j int, h float64) float64 {
				q := slices.Clone(th)
				q[j] += h
				v, _, err := ev.At(ctx, q, false)
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
			for j := range th {
				const h = 1e-3
				d1, d2 := at(j, h)-at(j, -h), at(j, 2*h)-at(j, -2*h)
				rich := (8*d1 - d2) / (12 * h)
				if math.Abs(rich-g[j]) > 1e-5*math.Abs(rich)+1e-8*math.Abs(f)/FDStep {
					t.Errorf("hyperparameter %d: gradient %.10g, Richardson %.10g", j, g[j], rich)
				}
				t.Logf("hyperparameter %d: gradient %.8g, Richardson %.8g", j, g[j], rich)
			}
		})
	}
}

// TestMaximizeClasses fits rbf's hyperparameters on 300 points of three
// classes from the data's start: the end is a maximum of the multi-class
// evidence (its gradient small, no better point a step of 0.05 away in
// any direction), the same bits on 1 and 3 threads.
func TestMaximizeClasses(t *testing.T) {
	ctx := context.Background()
	x, y := threeClass(300, 3, 0, 7)
	var first []float64
	for _, threads := range compared() {
		p := &Problem{X: x, D: 2, Y: y, Classes: 3, M: 15, Threads: threads}
		k, hs, th0, lo, hi := start(t, p, gp.KernelRBF)
		res, err := Maximize(ctx, p, k, hs, th0, fit.FitConfig{Lower: lo, Upper: hi})
		if err != nil {
			t.Fatal(err)
		}
		if first != nil {
			if !slices.Equal(res.Theta, first) {
				t.Errorf("%d threads: %v, 1 thread: %v", threads, res.Theta, first)
			}
			continue
		}
		first = res.Theta
		checkOptimum(t, res)
	}
}

// checkOptimum checks that a search's end is a maximum of its evidence:
// the evidence there is the result's, its gradient (where not on the
// box's edge) below 1e-3, and no point a step of 0.05 away in any one
// hyperparameter is higher.
func checkOptimum(t *testing.T, res *Result) {
	t.Helper()
	ctx := context.Background()
	ev := res.Evidence
	f, g, err := ev.At(ctx, res.Theta, true)
	if err != nil {
		t.Fatal(err)
	}
	if f != res.LogZ {
		t.Errorf("the evidence at the optimum %v, the result's %v", f, res.LogZ)
	}
	t.Logf("optimum alpha %.4g beta %.4g, log Z %.4f, gradient %.3g, %d evaluations, %d gradients, block %d", math.Exp(res.Theta[0]), math.Exp(res.Theta[1]), res.LogZ, g, res.Evals, res.Grads, ev.Block)
	for j := range g {
		if res.Bound[j] == 0 && math.Abs(g[j]) > 1e-3 {
			t.Errorf("the gradient at the optimum %v is not small", g)
		}
		for _, s := range []float64{-0.05, 0.05} {
			th := slices.Clone(res.Theta)
			th[j] += s
			if v, _, err := ev.At(ctx, th, false); err == nil && v > f {
				t.Errorf("theta %v has %v, above the optimum's %v", th, v, f)
			}
		}
	}
}

// compared returns the thread counts whose results a test compares: 1 and
// 3, or under -race -short 3 alone: the race detector watches the
// threads, and the plain run compares the two.
func compared() []int {
	if raceEnabled && testing.Short() {
		return []int{3}
	}
	return []int{1, 3}
}
