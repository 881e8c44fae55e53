package vecchia

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/gp"
)

// classRadius is classProblem's distance of the classes' centres from
// the origin: three classes' centres are then 2.17 apart, about the
// two-class problem's 2.12 (bench/vecchia/twoclass), overlapping as much.
const classRadius = 1.25

// classProblem is a C-class problem of n training and t test points: 2-D
// features, class c's points around classRadius (cos(2 pi c / C),
// sin(2 pi c / C)) with unit spread, rounded to the grid step round (0: not rounded,
// so no point repeats), labels in 0..C-1 by row (class i mod C).
func classProblem(seed uint64, c, n, t int, round float64) (x []float64, y []int, tx []float64, ty []int) {
	r := rand.New(rand.NewPCG(seed, 0xc1a55))
	point := func(dst []float64, cl int) {
		a := 2 * math.Pi * float64(cl) / float64(c)
		dst[0], dst[1] = classRadius*math.Cos(a)+r.NormFloat64(), classRadius*math.Sin(a)+r.NormFloat64()
		if round > 0 {
			dst[0], dst[1] = math.Round(dst[0]/round)*round, math.Round(dst[1]/round)*round
		}
	}
	x, y = make([]float64, 2*n), make([]int, n)
	for i := range n {
		y[i] = i % c
		point(x[2*i:2*i+2], y[i])
	}
	tx, ty = make([]float64, 2*t), make([]int, t)
	for i := range t {
		ty[i] = r.IntN(c)
		point(tx[2*i:2*i+2], ty[i])
	}
	return x, y, tx, ty
}

// classModel is the Vecchia multi-class model of a classProblem with
// kernels ks (one shared, or one per class) and m neighbours (the test
// rows' at most every training point).
func classModel(t testing.TB, seed uint64, c, n, tests, m int, round float64, ks []*gp.Kernel) *Multiclass {
	t.Helper()
	x, y, tx, _ := classProblem(seed, c, n, tests, round)
	s, err := NewStructure(x, n, 2, Options{M: min(m, n-1)})
	if err != nil {
		t.Fatal(err)
	}
	var tnb [][]int32
	if tests > 0 {
		tnb = s.TestNeighbours(tx, tests, m, 0)
	}
	md, err := NewMulticlass(s, ks, c, x, y, DefaultNugget, tx, tnb, 0)
	if err != nil {
		t.Fatal(err)
	}
	return md
}

func rbf(alpha, beta float64) *gp.Kernel {
	return &gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{alpha}, Beta: beta}
}

// estimateClasses runs the multi-class estimator on md and returns its
// result and its combined test posteriors (T C).
func estimateClasses(t testing.TB, md *Multiclass, cfg core.Config) (*PreparedMulticlass, core.Result, []core.Posterior) {
	t.Helper()
	p, err := PrepareMulticlass(context.Background(), md, nil)
	if err != nil {
		t.Fatal(err)
	}
	var logZ, pg []float64
	res, err := EstimateMulticlass(context.Background(), p, cfg, func(g int, out core.GroupResult, q []float64) error {
		logZ = append(logZ, out.LogZ)
		pg = append(pg, q...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	post := make([]core.Posterior, md.T*md.C)
	if md.T > 0 {
		if err := core.CombinePosteriors(post, core.GroupSizes(res.Samples, res.Groups), logZ, pg); err != nil {
			t.Fatal(err)
		}
	}
	return p, res, post
}

// denseClasses is core's dense estimator (EP, greedy order) on the
// covariance of class differences cov (with the test rows cross, vars in
// core.PredictClasses' layout) and its class posteriors.
func denseClasses(t testing.TB, cov, cross, vars []float64, c int, cfg core.Config) (core.Result, []core.Posterior) {
	t.Helper()
	nv := int(math.Round(math.Sqrt(float64(len(cov)))))
	box := core.Box{N: nv, Cov: cov}
	cfg.Method, cfg.Keep = core.MethodEP, true
	f, err := core.PrepareTrace(box, core.Candidate{Method: core.MethodEP, Order: core.OrderGreedy}, cfg.Seed, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := core.Estimate(context.Background(), f, cfg)
	if err != nil {
		t.Fatal(err)
	}
	post := make([]core.Posterior, len(vars))
	if len(vars) > 0 {
		if err := core.PredictClasses(post, f, res.Cloud, c, cross, vars, core.PredictOptions{Seed: cfg.Seed}); err != nil {
			t.Fatal(err)
		}
	}
	return res, post
}

// checkClasses checks an estimate and its posteriors against a reference
// (a dense estimate, or exact values with SE 0) within kSE combined
// standard errors.
func checkClasses(t *testing.T, res core.Result, post []core.Posterior, ref core.Result, refPost []core.Posterior) {
	t.Helper()
	se := math.Hypot(res.SE, ref.SE)
	if e := res.LogP - ref.LogP; !(math.Abs(e) <= kSE*se) {
		t.Errorf("log P %.6g (SE %.2g), reference %.6g (SE %.2g): %.1f combined standard errors apart", res.LogP, res.SE, ref.LogP, ref.SE, e/se)
	}
	bad := 0
	for i := range post {
		se := math.Hypot(post[i].SE, refPost[i].SE)
		if e := post[i].P - refPost[i].P; !(math.Abs(e) <= kSE*se+1e-9) {
			bad++
			if bad <= 5 {
				t.Errorf("posterior %d (test row %d): %.5f (SE %.2g), reference %.5f (SE %.2g): %.1f combined standard errors apart", i, i/3, post[i].P, post[i].SE, refPost[i].P, refPost[i].SE, e/se)
			}
		}
	}
}

// TestClassesOnePoint checks the one-point model against its exact
// probability: 1/C for one kernel (the classes are exchangeable), and the
// one-dimensional integral for a kernel per class.
func TestClassesOnePoint(t *testing.T) {
	for _, c := range []int{3, 5} {
		md := &Multiclass{N: 1, C: c, Start: []int{0, 0}, Coef: [][]float64{{}}, CondVar: [][]float64{{2.5}}, Noise: 0.7, Y: []int{1}}
		_, res, _ := estimateClasses(t, md, core.Config{Samples: 2000, Seed: 1})
		checkClasses(t, res, nil, core.Result{LogP: -math.Log(float64(c))}, nil)
	}
	// A kernel per class: P(u_1 largest), u_c ~ N(0, D_c + Noise).
	vars := []float64{0.5, 3, 1.2}
	md := &Multiclass{N: 1, C: 3, Start: []int{0, 0}, Coef: [][]float64{{}, {}, {}}, CondVar: [][]float64{{vars[0]}, {vars[1]}, {vars[2]}}, Noise: 0.7, Y: []int{2}}
	sd := make([]float64, 3)
	for i, v := range vars {
		sd[i] = math.Sqrt(v + 0.7)
	}
	// int phi(t) Phi(sd_2 t / sd_0) Phi(sd_2 t / sd_1) dt by the
	// trapezoidal rule.
	exact := 0.0
	const h = 1e-3
	for x := -12.0; x <= 12; x += h {
		exact += h * math.Exp(core.LogPhiDensity(x)) * core.Phi(sd[2]*x/sd[0]) * core.Phi(sd[2]*x/sd[1])
	}
	_, res, _ := estimateClasses(t, md, core.Config{Samples: 2000, Seed: 2})
	checkClasses(t, res, nil, core.Result{LogP: math.Log(exact)}, nil)
}

// TestClassesExact checks that with every earlier point in each
// conditioning set the model is the dense multinomial probit model (its
// implied covariance of class differences is core/gp's, with the nugget
// moved back), and that the estimator agrees with core's dense estimator
// there, for one kernel and for a kernel per class.
func TestClassesExact(t *testing.T) {
	const n, c, tests = 14, 3, 4
	for _, ks := range [][]*gp.Kernel{{rbf(1.5, 4)}, {rbf(1.5, 4), rbf(0.7, 1), rbf(3, 9)}} {
		x, y, tx, _ := classProblem(11, c, n, tests, 0)
		md := classModel(t, 11, c, n, tests, n, 0, ks)
		cov, cross, vars := md.Implied()
		dm := &gp.Multiclass{X: x, D: 2, Y: y, C: c, Kernels: ks}
		// The model's order is its structure's: the dense covariance of
		// the points in that order.
		s, _ := NewStructure(x, n, 2, Options{M: n - 1})
		px, py := make([]float64, 2*n), make([]int, n)
		for pos, r := range s.Perm {
			copy(px[2*pos:2*pos+2], x[2*r:2*r+2])
			py[pos] = y[r]
		}
		dm.X, dm.Y = px, py
		want := dm.Cov()
		for i := range want {
			if math.Abs(want[i]-cov[i]) > 1e-8*(1+math.Abs(want[i])) {
				t.Fatalf("%d kernels: the implied covariance's entry %d is %.12g, the dense model's %.12g", len(ks), i, cov[i], want[i])
			}
		}
		wantR, wantV := make([]float64, tests*c*n*(c-1)), make([]float64, tests*c)
		for j := range tests {
			dm.TestRows(wantR[j*c*n*(c-1):(j+1)*c*n*(c-1)], wantV[j*c:(j+1)*c], tx[2*j:2*j+2])
		}
		for i := range wantR {
			if math.Abs(wantR[i]-cross[i]) > 1e-8 {
				t.Fatalf("%d kernels: the implied test covariance's entry %d is %.12g, the dense model's %.12g", len(ks), i, cross[i], wantR[i])
			}
		}
		for i := range wantV {
			if math.Abs(wantV[i]-vars[i]) > 1e-8 {
				t.Fatalf("%d kernels: test variance %d is %.12g, the dense model's %.12g", len(ks), i, vars[i], wantV[i])
			}
		}
		_, res, post := estimateClasses(t, md, core.Config{Samples: 8000, Seed: 3})
		dres, dpost := denseClasses(t, want, wantR, wantV, c, core.Config{Samples: 40000, Seed: 4})
		checkClasses(t, res, post, dres, dpost)
	}
}

// TestClassesAgainstImplied checks the estimator on approximate models
// (few neighbours) against core's dense estimator on the covariance each
// implies: one kernel, a kernel per class, repeated points (features
// rounded to a grid), four classes, and rows after the dense block.
func TestClassesAgainstImplied(t *testing.T) {
	for _, tc := range []struct {
		name        string
		c, n, m     int
		round       float64
		ks          []*gp.Kernel
		late        int // 1: rows after the dense block, -1: none, 0: either
		samples     int
		denseSample int
	}{
		{"shared", 3, 60, 5, 0, []*gp.Kernel{rbf(1.5, 4)}, 0, 8000, 40000},
		{"per class", 3, 60, 5, 0, []*gp.Kernel{rbf(1.5, 4), rbf(0.7, 1), rbf(3, 9)}, 0, 8000, 40000},
		{"repeats", 3, 60, 4, 0.5, []*gp.Kernel{rbf(1.5, 4)}, 0, 8000, 40000},
		{"four classes", 4, 40, 5, 0, []*gp.Kernel{rbf(1.5, 4)}, 0, 8000, 40000},
		{"late rows", 3, 400, 8, 0, []*gp.Kernel{rbf(2, 3)}, 1, 4000, 20000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.n > 100 && testing.Short() {
				t.Skip("a dense estimate of 800 variables")
			}
			md := classModel(t, 21, tc.c, tc.n, 6, tc.m, tc.round, tc.ks)
			if tc.round > 0 {
				dups := 0
				for k := range md.N {
					if md.Dup(k) >= 0 {
						dups++
					}
				}
				if dups < md.N/10 {
					t.Fatalf("only %d of %d rows repeat", dups, md.N)
				}
			}
			p, res, post := estimateClasses(t, md, core.Config{Samples: tc.samples, Seed: 5})
			if late := p.Block < md.N; tc.late != 0 && late != (tc.late > 0) {
				t.Fatalf("the dense block holds %d of %d rows", p.Block, md.N)
			}
			if p.BlockRule != p.Block { // far below the cap of MaxBlock variables
				t.Errorf("the block's rule asks for %d rows, the block holds %d", p.BlockRule, p.Block)
			}
			cov, cross, vars := md.Implied()
			dres, dpost := denseClasses(t, cov, cross, vars, tc.c, core.Config{Samples: tc.denseSample, Seed: 6})
			checkClasses(t, res, post, dres, dpost)
			t.Logf("log P %.4f (SE %.3f, min ESS %.2f), dense %.4f (SE %.3f); block %d of %d rows", res.LogP, res.SE, res.MinESS, dres.LogP, dres.SE, p.Block, md.N)
		})
	}
}

// TestClassesTwo checks that two classes on the multi-class path are the
// binary classifier: the difference of two latent processes with one
// kernel is a Vecchia process of twice the kernel, observed with twice
// the noise, whose orthant probability is the binary model's.
func TestClassesTwo(t *testing.T) {
	const n, m = 80, 6
	x, y, tx, _ := classProblem(31, 2, n, 5, 0)
	s, err := NewStructure(x, n, 2, Options{M: m})
	if err != nil {
		t.Fatal(err)
	}
	tnb := s.TestNeighbours(tx, 5, m, 0)
	md, err := NewMulticlass(s, []*gp.Kernel{rbf(1.2, 3)}, 2, x, y, DefaultNugget, tx, tnb, 0)
	if err != nil {
		t.Fatal(err)
	}
	yb := make([]float64, n)
	for i, v := range y {
		yb[i] = float64(2*v - 1)
	}
	bm, err := NewClassifier(s, rbf(1.2, 3), x, yb, DefaultNugget, tx, tnb, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, res, post := estimateClasses(t, md, core.Config{Samples: 8000, Seed: 7})
	bp, err := Prepare(context.Background(), bm, nil)
	if err != nil {
		t.Fatal(err)
	}
	var logZ, pg []float64
	bres, err := Estimate(context.Background(), bp, core.Config{Samples: 8000, Seed: 8}, func(g int, out core.GroupResult, q []float64) error {
		logZ = append(logZ, out.LogZ)
		pg = append(pg, q...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	bpost := make([]core.Posterior, 5)
	if err := core.CombinePosteriors(bpost, core.GroupSizes(bres.Samples, bres.Groups), logZ, pg); err != nil {
		t.Fatal(err)
	}
	// Class 1 is the binary model's +1.
	both := make([]core.Posterior, 10)
	for j := range 5 {
		both[2*j] = core.Posterior{P: 1 - bpost[j].P, SE: bpost[j].SE}
		both[2*j+1] = bpost[j]
	}
	checkClasses(t, res, post, bres, both)
}

// TestClassesThreads checks that the estimate and the posteriors do not
// depend on the thread count, and that groups run in ranges give the
// whole run's bits.
func TestClassesThreads(t *testing.T) {
	md := classModel(t, 41, 3, 120, 4, 6, 0.5, []*gp.Kernel{rbf(1.5, 4), rbf(1, 2), rbf(2, 4)})
	p, err := PrepareMulticlass(context.Background(), md, nil)
	if err != nil {
		t.Fatal(err)
	}
	run := func(threads int) (core.Result, []float64) {
		var pg []float64
		res, err := EstimateMulticlass(context.Background(), p, core.Config{Samples: 600, Seed: 9, Threads: threads}, func(g int, out core.GroupResult, q []float64) error {
			pg = append(pg, q...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return res, pg
	}
	one, pg1 := run(1)
	three, pg3 := run(3)
	if math.Float64bits(one.LogP) != math.Float64bits(three.LogP) || math.Float64bits(one.SE) != math.Float64bits(three.SE) || !slices.Equal(pg1, pg3) {
		t.Errorf("threads 1: %v (%v), threads 3: %v (%v)", one.LogP, one.SE, three.LogP, three.SE)
	}
	var outs []core.GroupResult
	cfg := core.Config{Samples: 600, Seed: 9, Threads: 2}
	for _, r := range [][2]int{{0, 2}, {2, 3}, {3, -1}} {
		_, o, err := core.EstimateGroups(context.Background(), p, cfg, r[0], r[1])
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, o...)
	}
	if merged := core.Summarize(one.Samples, outs); math.Float64bits(merged.LogP) != math.Float64bits(one.LogP) {
		t.Errorf("groups in three ranges: %v, in one run: %v", merged.LogP, one.LogP)
	}
}
