package bench

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/gpc-mc/gpc/bench/figure"
	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/gp"
	"github.com/gpc-mc/gpc/core/vecchia"
)

// The Vecchia path's studies (docs/vecchia.md), each run when
// GPC_VECCHIA_STUDY names it:
//
//	tables       the approximation's error against the dense path, for m =
//	             5 to 100, on the large-N issue's problem at N = 1000, 5000
//	             and 10^4 (GPC_VECCHIA_SIZES; none for the real data alone) and on Landsat satellite data
//	             (bench/vecchia/satellite.sh; GPC_VECCHIA_DATA names its
//	             directory, skipped without it); GPC_VECCHIA_MS limits the
//	             neighbour counts
//	calibration  the coverage of the estimator's intervals over 200 seeds
//	             (GPC_VECCHIA_SEEDS) at N = 1000 against the Vecchia model's
//	             own probability
//	calibration3 the same for three classes (the multi-class estimator,
//	             bench/vecchia/threeclass's problem), its reference the
//	             dense path on the model's implied covariance of the
//	             label differences (GPC_VECCHIA_REF_SAMPLES particles, 10^6
//	             unless set, or GPC_VECCHIA_REF="logP,se" to reuse one;
//	             GPC_VECCHIA_SAMPLES, GPC_VECCHIA_GROUPS and GPC_VECCHIA_ESS
//	             set the estimator's particles, groups and resampling
//	             threshold)
//	real         the real data sets (bench/vecchia/satellite.sh, dna.sh,
//	             spam.sh write them to GPC_VECCHIA_DATA) with the kernels
//	             fitted in bench/vecchia/hyper, against the dense path, for
//	             nearest sets, the sets --vecchia auto tries, and its choice
//	             (vecchia_real_test.go; GPC_VECCHIA_SETS picks sets,
//	             GPC_VECCHIA_CACHE keeps the dense runs)
//	check        the check before the run (vecchia.Structure.Check)
//	             against the loss beside every earlier point and the
//	             tables' errors, on the two-class problem
//	posteriors   the test posteriors at N = 10^4 with 10^4 test points,
//	             --vecchia 30 and auto, against the dense path's
//
//	GPC_VECCHIA_STUDY=tables go test ./bench -run VecchiaStudy -v -timeout 3h
//	GPC_VECCHIA_STUDY=calibration go test ./bench -run VecchiaStudy -v -timeout 1h
//	GPC_VECCHIA_STUDY=calibration3 go test ./bench -run VecchiaStudy -v -timeout 3h

// vecchiaMs are the tables' neighbour counts.
var vecchiaMs = []int{5, 10, 20, 30, 50, 100}

// studyProblem is a classification problem with test points: features x
// (n x d) and labels y (+1/-1), test features and labels, and its kernel.
type studyProblem struct {
	name   string
	n, d   int
	x, y   []float64
	tx, ty []float64
	k      *gp.Kernel
}

// twoClassProblem is the large-N issue's problem: n training and t test
// points (the data of bench/vecchia/twoclass's construction, seeds 1 and 2).
func twoClassProblem(n, t int) *studyProblem {
	gen := func(n int, seed uint64) (x, y []float64) {
		r := rand.New(rand.NewPCG(seed, 0x7477))
		y = make([]float64, n)
		for i := range y {
			y[i] = float64(1 - 2*(i%2))
		}
		r.Shuffle(n, func(i, j int) { y[i], y[j] = y[j], y[i] })
		x = make([]float64, 2*n)
		for i, s := range y {
			x[2*i], x[2*i+1] = 0.75*s+r.NormFloat64(), 0.75*s+r.NormFloat64()
		}
		return x, y
	}
	p := &studyProblem{name: fmt.Sprintf("two classes, N = %d", n), n: n, d: 2,
		k: &gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{1}, Beta: 10}}
	p.x, p.y = gen(n, 1)
	p.tx, p.ty = gen(t, 2)
	return p
}

// csvProblem reads a training and a test CSV file (numeric features, a
// column y of +1/-1), standardizes the features by the training set's mean
// and sample standard deviation, as gpc-kernel --standardize does.
func csvProblem(t testing.TB, name, train, test string, k *gp.Kernel) *studyProblem {
	read := func(path string) (x, y []float64, d int) {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		sc.Scan()
		head := strings.Split(strings.ReplaceAll(sc.Text(), `"`, ""), ",")
		yc := slices.Index(head, "y")
		for sc.Scan() {
			for c, v := range strings.Split(sc.Text(), ",") {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					t.Fatal(err)
				}
				if c == yc {
					y = append(y, f)
				} else {
					x = append(x, f)
				}
			}
		}
		return x, y, len(head) - 1
	}
	p := &studyProblem{name: name, k: k}
	p.x, p.y, p.d = read(train)
	p.tx, p.ty, _ = read(test)
	p.n = len(p.y)
	for j := range p.d {
		var s, s2 float64
		for i := range p.n {
			s += p.x[i*p.d+j]
		}
		mean := s / float64(p.n)
		for i := range p.n {
			v := p.x[i*p.d+j] - mean
			s2 += v * v
		}
		sd := math.Sqrt(s2 / float64(p.n-1))
		if sd == 0 {
			sd = 1
		}
		for _, xs := range [][]float64{p.x, p.tx} {
			for i := 0; i < len(xs)/p.d; i++ {
				xs[i*p.d+j] = (xs[i*p.d+j] - mean) / sd
			}
		}
	}
	return p
}

// metric returns the features x (rows of p.d) in the neighbour search's
// metric, as gpc-kernel --vecchia takes them: the ard kernel's divided by
// their length scales, the others as they are.
func (p *studyProblem) metric(x []float64) []float64 {
	if p.k.Kind != gp.KernelARD {
		return x
	}
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = v / p.k.Alpha[i%p.d]
	}
	return out
}

// studyRun is one estimate of a problem: its log marginal likelihood and
// standard error, its test posteriors, and the CPU seconds it took.
type studyRun struct {
	logML, se float64
	post      []float64
	postSE    []float64
	cpu       time.Duration
	// warn names the warnings gpc-train would give: the proposal's
	// share of EP's sites (the fallback), an unreliable standard error.
	warn []string
}

const studySamples = 10000

// denseRun is the dense path on the problem (core.Choose and Estimate,
// keeping the cloud for the posteriors).
func denseRun(t testing.TB, cov []float64, n int, lower, upper, labels, cross, vars []float64) studyRun {
	c0 := processCPU()
	box := core.Box{N: n, Cov: cov, Lower: lower, Upper: upper, Labels: labels}
	cfg := core.Config{Samples: studySamples, Seed: 1}
	f, cand, _, err := core.Choose(context.Background(), box, core.AutoCandidates, 0, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Method, cfg.Keep = cand.Method, true
	res, err := core.Estimate(context.Background(), f, cfg)
	if err != nil {
		t.Fatal(err)
	}
	post := make([]core.Posterior, len(vars))
	if err := core.Predict(post, f, res.Cloud, cross, vars); err != nil {
		t.Fatal(err)
	}
	r := studyRun{logML: res.LogP, se: res.SE, post: make([]float64, len(post)), postSE: make([]float64, len(post)), cpu: processCPU() - c0}
	for i, p := range post {
		r.post[i], r.postSE[i] = p.P, p.SE
	}
	return r
}

// denseClassifier is the dense path on the classifier itself.
func denseClassifier(t testing.TB, p *studyProblem) studyRun {
	c0 := processCPU()
	cov := gp.ClassifierCov(p.k, p.x, p.d, p.y)
	tests := len(p.ty)
	cross, vars := make([]float64, tests*p.n), make([]float64, tests)
	for j := range tests {
		vars[j] = gp.ClassifierTestRow(cross[j*p.n:(j+1)*p.n], p.k, p.x, p.d, p.y, p.tx[j*p.d:(j+1)*p.d])
	}
	r := denseRun(t, cov, p.n, nil, nil, p.y, cross, vars)
	r.cpu = processCPU() - c0
	return r
}

// vecchiaModel is the problem's Vecchia classifier with m neighbours and
// the nugget, and the CPU seconds of its making.
func vecchiaModel(t testing.TB, p *studyProblem, m int, nugget float64) (*vecchia.Model, time.Duration) {
	c0 := processCPU()
	s, err := vecchia.NewStructure(p.metric(p.x), p.n, p.d, vecchia.Options{M: m})
	if err != nil {
		t.Fatal(err)
	}
	tn := len(p.ty)
	model, err := vecchia.NewClassifier(s, p.k, p.x, p.y, nugget, p.tx, s.TestNeighbours(p.metric(p.tx), tn, m, 0), 0)
	if err != nil {
		t.Fatal(err)
	}
	// The model's rows are in its order: its posteriors are by test row
	// already, its training rows need not be unpermuted.
	return model, processCPU() - c0
}

// vecchiaRun is the Vecchia estimator on the model.
func vecchiaRun(t testing.TB, model *vecchia.Model, seed uint64) studyRun {
	c0 := processCPU()
	p, err := vecchia.Prepare(context.Background(), model, nil)
	if err != nil {
		t.Fatal(err)
	}
	var logZ, pg []float64
	res, err := vecchia.Estimate(context.Background(), p, core.Config{Samples: studySamples, Seed: seed}, func(g int, out core.GroupResult, q []float64) error {
		logZ, pg = append(logZ, out.LogZ), append(pg, q...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	post := make([]core.Posterior, model.T)
	// Every group's estimate 0 leaves no posterior: the row says so (its
	// posteriors NaN) rather than ending the study.
	failed := core.CombinePosteriors(post, core.GroupSizes(res.Samples, res.Groups), logZ, pg)
	r := studyRun{logML: res.LogP, se: res.SE, post: make([]float64, model.T), postSE: make([]float64, model.T), cpu: processCPU() - c0}
	for i, q := range post {
		r.post[i], r.postSE[i] = q.P, q.SE
		if failed != nil {
			r.post[i], r.postSE[i] = math.NaN(), math.NaN()
		}
	}
	if failed != nil {
		r.warn = append(r.warn, "every group P = 0")
	}
	if p.SiteScale < 1 {
		r.warn = append(r.warn, fmt.Sprintf("sites %.3g", p.SiteScale))
	}
	if ok, _ := res.Trust(); !ok {
		r.warn = append(r.warn, "se")
	}
	return r
}

// impliedRun is the dense path on the covariance a Vecchia model implies:
// the model's own probability and posteriors, up to the dense estimate's
// error.
func impliedRun(t testing.TB, model *vecchia.Model, labels []float64) studyRun {
	cov, cross, vars := model.Implied()
	return denseRun(t, cov, model.N, model.Lower, model.Upper, labels, cross, vars)
}

func meanAbsDiff(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += math.Abs(a[i] - b[i])
	}
	return s / float64(len(a))
}

// responseNugget moves all but a millionth of the probit's noise into the
// latent process: the Vecchia model of the noisy variables w themselves
// (response conditioning), whose implied covariance the dense path then
// integrates.
const responseNugget = 1 - 1e-6

func TestVecchiaStudy(t *testing.T) {
	switch os.Getenv("GPC_VECCHIA_STUDY") {
	case "tables":
		vecchiaTables(t)
	case "calibration":
		vecchiaCalibration(t)
	case "calibration3":
		vecchiaCalibration3(t)
	case "real":
		vecchiaReal(t)
	case "check":
		vecchiaCheckStudy(t)
	case "posteriors":
		vecchiaPosteriors(t)
	default:
		t.Skip("GPC_VECCHIA_STUDY names the study: tables, calibration, calibration3, real, check or posteriors")
	}
}

func vecchiaTables(t *testing.T) {
	sizes := []int{1000, 5000, 10000}
	if s := os.Getenv("GPC_VECCHIA_SIZES"); s != "" {
		sizes = sizes[:0]
		for _, f := range strings.Split(s, ",") {
			if f == "none" {
				continue // the real data only
			}
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, n)
		}
	}
	ms := vecchiaMs
	if s := os.Getenv("GPC_VECCHIA_MS"); s != "" {
		ms = nil
		for _, f := range strings.Split(s, ",") {
			m, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			ms = append(ms, m)
		}
	}
	var problems []*studyProblem
	for _, n := range sizes {
		problems = append(problems, twoClassProblem(n, 1000))
	}
	if dir := os.Getenv("GPC_VECCHIA_DATA"); dir != "" {
		problems = append(problems, csvProblem(t, "Landsat satellite, N = 5000, 36 features",
			filepath.Join(dir, "satellite-train.csv"), filepath.Join(dir, "satellite-test.csv"),
			&gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{10}, Beta: 100}))
	}
	for _, p := range problems {
		dense := denseClassifier(t, p)
		fmt.Printf("\n%s, %d test points; dense path: log ML %.3f (se %.3f), %.1f CPU s\n\n", p.name, len(p.ty), dense.logML, dense.se, dense.cpu.Seconds())
		fmt.Println("| m | latent: log ML - dense | se | posteriors' mean abs diff | CPU s | latent model: log ML - dense | response model: log ML - dense | its posteriors' mean abs diff |")
		fmt.Println("|---|---|---|---|---|---|---|---|")
		for _, m := range ms {
			if m >= p.n {
				continue
			}
			model, build := vecchiaModel(t, p, m, vecchia.DefaultNugget)
			v := vecchiaRun(t, model, 1)
			v.cpu += build
			// The models' own probabilities (dense, on their implied
			// covariances), where N^3 is affordable.
			latent, resp := "", ""
			respPost := ""
			if p.n <= 10000 {
				li := impliedRun(t, model, nil)
				latent = fmt.Sprintf("%+.3f", li.logML-dense.logML)
				rmodel, _ := vecchiaModel(t, p, m, responseNugget)
				ri := impliedRun(t, rmodel, nil)
				resp = fmt.Sprintf("%+.3f", ri.logML-dense.logML)
				respPost = fmt.Sprintf("%.4f", meanAbsDiff(ri.post, dense.post))
			}
			fmt.Printf("| %d | %+.3f | %.3f | %.4f | %.1f | %s | %s | %s |\n", m, v.logML-dense.logML, v.se, meanAbsDiff(v.post, dense.post), v.cpu.Seconds(), latent, resp, respPost)
		}
	}
}

func vecchiaCalibration(t *testing.T) {
	seeds := 200
	if s := os.Getenv("GPC_VECCHIA_SEEDS"); s != "" {
		seeds, _ = strconv.Atoi(s)
	}
	m := 30
	p := twoClassProblem(1000, 100)
	model, _ := vecchiaModel(t, p, m, vecchia.DefaultNugget)
	// The reference: the dense path on the implied covariance, 10^6
	// particles.
	cov, _, _ := model.Implied()
	box := core.Box{N: model.N, Cov: cov, Lower: model.Lower, Upper: model.Upper}
	cfg := core.Config{Samples: 1000000, Seed: 12345}
	f, cand, _, err := core.Choose(context.Background(), box, core.AutoCandidates, 0, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Method = cand.Method
	ref, err := core.Estimate(context.Background(), f, cfg)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("reference: log P %.5f (se %.5f, %v, M = %d)\n", ref.LogP, ref.SE, cand, cfg.Samples)
	prep, err := vecchia.Prepare(context.Background(), model, nil)
	if err != nil {
		t.Fatal(err)
	}
	var within, warned int
	var z2 float64
	for s := 1; s <= seeds; s++ {
		res, err := vecchia.Estimate(context.Background(), prep, core.Config{Samples: studySamples, Seed: uint64(s)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		se := math.Hypot(res.SE, ref.SE)
		z := (res.LogP - ref.LogP) / se
		z2 += z * z
		if math.Abs(z) <= 1.959963984540054 {
			within++
		}
		if ok, _ := res.Trust(); !ok {
			warned++
		}
	}
	fmt.Printf("N = %d, m = %d, M = %d, %d seeds: %.1f %% within 1.96 SE, rms z %.3f, %d warned\n",
		model.N, m, studySamples, seeds, 100*float64(within)/float64(seeds), math.Sqrt(z2/float64(seeds)), warned)
}

// threeClassProblem is bench/vecchia/threeclass's problem for three
// classes: n points from the seed, point i of class c = i mod 3 around
// 1.25 (cos(2 pi c / 3), sin(2 pi c / 3)) with unit spread, as the
// command writes them.
func threeClassProblem(n int, seed uint64) (x []float64, y []int) {
	r := rand.New(rand.NewPCG(seed, 0x3c1a55))
	x, y = make([]float64, 2*n), make([]int, n)
	for i := range n {
		c := i % 3
		a := 2 * math.Pi * float64(c) / 3
		x[2*i] = 1.25*math.Cos(a) + r.NormFloat64()
		x[2*i+1] = 1.25*math.Sin(a) + r.NormFloat64()
		y[i] = c
	}
	return x, y
}

// envInt is the environment variable's whole number, or def where it is
// not set.
func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 {
		t.Fatalf("%s=%q: want a positive whole number", name, s)
	}
	return v
}

// vecchiaCalibration3 is vecchiaCalibration for three classes: the
// multi-class estimator (vecchia.EstimateMulticlass, gpc-train's default
// of 10^4 particles) on threeclass's problem at N = 1000 (RBF alpha 1,
// beta 10, m = 30), over GPC_VECCHIA_SEEDS seeds, against the same
// model's probability computed by the dense path (ep/greedy) on the
// covariance it implies for the N (C - 1) = 2000 label differences, with
// GPC_VECCHIA_REF_SAMPLES particles (10^6 unless set). Each seed's z is
// (estimate - reference) / sqrt(se^2 + se_ref^2). GPC_VECCHIA_SAMPLES and
// GPC_VECCHIA_GROUPS, if set, are the estimator's particles and groups
// (gpc-train's --samples and --groups).
func vecchiaCalibration3(t *testing.T) {
	seeds := envInt(t, "GPC_VECCHIA_SEEDS", 200)
	refSamples := envInt(t, "GPC_VECCHIA_REF_SAMPLES", 1000000)
	samples := envInt(t, "GPC_VECCHIA_SAMPLES", studySamples)
	groups := 0
	if os.Getenv("GPC_VECCHIA_GROUPS") != "" {
		groups = envInt(t, "GPC_VECCHIA_GROUPS", 0)
	}
	const n, classes, m = 1000, 3, 30
	ctx := context.Background()
	x, y := threeClassProblem(n, 1)
	k := &gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{1}, Beta: 10}
	s, err := vecchia.NewStructure(x, n, 2, vecchia.Options{M: m})
	if err != nil {
		t.Fatal(err)
	}
	md, err := vecchia.NewMulticlass(s, []*gp.Kernel{k}, classes, x, y, vecchia.DefaultNugget, nil, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	c0, w0 := processCPU(), time.Now()
	prep, err := vecchia.PrepareMulticlass(ctx, md, nil)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("three classes, N = %d, m = %d, RBF alpha 1, beta 10: the proposal's dense block %d rows (its rule %d), EP %v, site scale %.3g, %d clipped, %d widened; %.1f CPU s, %.1f s wall\n",
		n, m, prep.Block, prep.BlockRule, prep.EP, prep.SiteScale, prep.Clipped, prep.Widened, (processCPU() - c0).Seconds(), time.Since(w0).Seconds())

	// The reference: core's dense estimator on the implied covariance.
	var ref core.Result
	if v := os.Getenv("GPC_VECCHIA_REF"); v != "" {
		if _, err := fmt.Sscanf(v, "%g,%g", &ref.LogP, &ref.SE); err != nil {
			t.Fatalf("GPC_VECCHIA_REF=%q: want log P and its standard error, comma-separated: %v", v, err)
		}
		fmt.Printf("reference (GPC_VECCHIA_REF): log P %.5f (se %.5f)\n", ref.LogP, ref.SE)
	} else {
		c0, w0 = processCPU(), time.Now()
		cov, _, _ := md.Implied()
		box := core.Box{N: n * (classes - 1), Cov: cov}
		cand := core.Candidate{Method: core.MethodEP, Order: core.OrderGreedy}
		f, err := core.PrepareTrace(box, cand, 12345, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ref, err = core.Estimate(ctx, f, core.Config{Method: core.MethodEP, Samples: refSamples, Seed: 12345}); err != nil {
			t.Fatal(err)
		}
		refOK, why := ref.Trust()
		fmt.Printf("reference: log P %.5f (se %.5f, %v, M = %d in %d groups, %.1f effective; trusted %v %s), %.1f CPU s, %.1f s wall\n",
			ref.LogP, ref.SE, cand, ref.Samples, ref.Groups, ref.EffectiveGroups, refOK, why, (processCPU() - c0).Seconds(), time.Since(w0).Seconds())
	}
	ess := 0.0
	if v := os.Getenv("GPC_VECCHIA_ESS"); v != "" {
		if _, err := fmt.Sscanf(v, "%g", &ess); err != nil || !(ess > 0 && ess <= 1) {
			t.Fatalf("GPC_VECCHIA_ESS=%q: want a resampling threshold in (0, 1]", v)
		}
	}

	c0, w0 = processCPU(), time.Now()
	var within, warned, warnedWithin int
	var z2, sum, sum2, se2 float64
	for sd := 1; sd <= seeds; sd++ {
		res, err := vecchia.EstimateMulticlass(ctx, prep, core.Config{Samples: samples, Groups: groups, ESSThreshold: ess, Seed: uint64(sd)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		z := (res.LogP - ref.LogP) / math.Hypot(res.SE, ref.SE)
		z2 += z * z
		sum, sum2, se2 = sum+res.LogP, sum2+res.LogP*res.LogP, se2+res.SE*res.SE
		in := math.Abs(z) <= 1.959963984540054
		ok, _ := res.Trust()
		if in {
			within++
		}
		if !ok {
			warned++
			if in {
				warnedWithin++
			}
		}
		fmt.Printf("seed %d: log P %.5f (se %.5f, %d groups, %.1f effective, min ESS %.3f) z %+.2f trusted %v\n",
			sd, res.LogP, res.SE, res.Groups, res.EffectiveGroups, res.MinESS, z, ok)
	}
	ns := float64(seeds)
	mean := sum / ns
	sdev := math.Sqrt(max(0, (sum2-ns*mean*mean)/(ns-1)))
	fmt.Printf("N = %d, %d classes, m = %d, M = %d, %d seeds: %.1f %% within 1.96 se, rms z %.3f, %d warned (%d of them within); the estimates' mean - reference %+.5f (its se %.5f), their standard deviation %.5f beside the rms se %.5f; %.1f CPU s, %.1f s wall\n",
		n, classes, m, samples, seeds, 100*float64(within)/ns, math.Sqrt(z2/ns), warned, warnedWithin,
		mean-ref.LogP, math.Hypot(sdev/math.Sqrt(ns), ref.SE), sdev, math.Sqrt(se2/ns), (processCPU() - c0).Seconds(), time.Since(w0).Seconds())
}

// TestVecchiaScalingPlot draws docs/vecchia.md's scaling plot from the
// timings bench/vecchia/run.sh wrote (GPC_VECCHIA_TIMES, its CSV lines):
// the wall seconds of the whole pipeline (kernel | train | predict, with
// the run's test rows) against the training points N, on log-log axes, for
// the dense path, the Vecchia path and scikit-learn, each up to the
// largest N it reached, every N measured labelled on the axis.
//
//	GPC_VECCHIA_TIMES=times.csv GPC_VECCHIA_PLOT=docs/vecchia-scaling.png go test ./bench -run VecchiaScalingPlot -v
func TestVecchiaScalingPlot(t *testing.T) {
	in, out := os.Getenv("GPC_VECCHIA_TIMES"), os.Getenv("GPC_VECCHIA_PLOT")
	if in == "" || out == "" {
		t.Skip("GPC_VECCHIA_TIMES names run.sh's timings, GPC_VECCHIA_PLOT the plot to write")
	}
	data, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	series := map[string]plotter.XYs{}
	var ns []float64
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Split(line, ",")
		if len(f) < 5 || f[0] == "orthant" {
			continue
		}
		n, err1 := strconv.ParseFloat(f[1], 64)
		wall, err2 := strconv.ParseFloat(f[4], 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: %q is not a run.sh line", in, line)
		}
		name := map[string]string{"dense": "gpc, dense", "vecchia": "gpc, Vecchia m = " + f[3], "sklearn": "scikit-learn (Laplace)"}[f[0]]
		series[name] = append(series[name], plotter.XY{X: n, Y: wall})
		if !slices.Contains(ns, n) {
			ns = append(ns, n)
		}
	}
	slices.Sort(ns)
	p := plot.New()
	p.Title.Text = "Train and predict, two 2-D classes (RBF, alpha 1, beta 10), M = 10^4 particles"
	p.X.Label.Text = "training points N (log scale)"
	p.Y.Label.Text = "wall seconds, 2 cores (log scale)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	var xt []plot.Tick
	for _, n := range ns {
		xt = append(xt, plot.Tick{Value: n, Label: countLabel(n)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(xt)
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	names := slices.Sorted(maps.Keys(series))
	for i, name := range names {
		xy := series[name]
		slices.SortFunc(xy, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
		l, sc, err := plotter.NewLinePoints(xy)
		if err != nil {
			t.Fatal(err)
		}
		l.Color, sc.Color, sc.Shape = plotutil.Color(i), plotutil.Color(i), plotutil.Shape(i)
		p.Add(l, sc)
		p.Legend.Add(name, l, sc)
	}
	p.Add(plotter.NewGrid())
	if err := figure.SaveLegendOutside(p, 22*vg.Centimeter, 12*vg.Centimeter, out); err != nil {
		t.Fatal(err)
	}
}

// countLabel writes a point count briefly: 1000 "1k", 20000 "20k", 10^6 "1M".
func countLabel(n float64) string {
	switch {
	case n >= 1e6:
		return strconv.FormatFloat(n/1e6, 'g', -1, 64) + "M"
	case n >= 1e3:
		return strconv.FormatFloat(n/1e3, 'g', -1, 64) + "k"
	}
	return strconv.FormatFloat(n, 'g', -1, 64)
}
