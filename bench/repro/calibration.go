package main

import (
	"context"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/gpc-mc/gpc/bench"
	"github.com/gpc-mc/gpc/bench/figure"
	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/internal/oracle"
)

// The calibration study (issue 19): does the standard error each estimator
// reports describe its actual error? For every estimator and problem
// family, many independent seeds are run against an exact value (or a
// long-run reference), and the z scores (estimate - reference) / SE are
// summarised: coverage of the nominal 68/95/99 % intervals, rms z and the
// mean z (the bias in units of SE), each with its own sampling error.

// CalibPlan sizes a calibration study.
type CalibPlan struct {
	Name string
	Seed uint64
	// Seeds is the number of independent runs per estimator and family.
	Seeds int
	// Groups is the particle group count of every run; 0 selects the
	// tools' default for the estimator and the family's M
	// (core.DefaultGroups: ep 64 at M = 8000, 32 at M = 4000; met and smc
	// 32 and 16), and for the paper's methods, which the tools run as one group
	// without a standard error, met's.
	Groups int
	// RefFactor is the long-run reference's particle count, in multiples
	// of a family's M, for each of its two estimators.
	RefFactor int
	// Families are the families run, by name (newCalibFamily).
	Families []string
	// Methods, if not empty, restricts the estimators to these (by
	// calibName).
	Methods []string
}

var calibQuick = CalibPlan{Name: "quick", Seed: 1, Seeds: 8, Groups: 8, RefFactor: 8,
	Families: []string{"one-factor", "exp2-p1", "box3-corr", "rbf-b10"}}

var calibFull = CalibPlan{Name: "full", Seed: 1, Seeds: 200, Groups: 0, RefFactor: 64,
	Families: []string{"box3-corr", "box3-neg", "one-factor", "exp2-p1", "rbf-b100", "rbf-b1", "rbf-b10", "exp2-p3"}}

// groups returns the particle group count of method's runs of m
// particles: p.Groups, or the tools' default (the paper's methods get
// met's and smc's).
func (p CalibPlan) groups(method core.Method, m int) int {
	if p.Groups > 0 {
		return p.Groups
	}
	if method == core.MethodPaperHard || method == core.MethodPaperSoft {
		method = core.MethodMET
	}
	return core.DefaultGroups(method, m)
}

// calibMethods are the estimators studied, each in its best order (the
// paper's in its shuffled order, soft count for paper-soft, hard count for
// paper-hard's posteriors, as bench.Experiment2 predicts).
var calibMethods = []core.Candidate{
	{Method: core.MethodEP, Order: core.OrderGreedy},
	{Method: core.MethodMET, Order: core.OrderSharp},
	{Method: core.MethodSMC, Order: core.OrderSharp},
	{Method: core.MethodPaperHard, Order: core.OrderShuffle},
	{Method: core.MethodPaperSoft, Order: core.OrderShuffle},
}

// calibCandidates returns the estimators that names select: all of
// calibMethods when names is empty; else each by its name in the tables
// (calibName), or any other METHOD/ORDER that core parses (smc/greedy,
// met/greedy, ...: the tools' --method and --order), in the order given.
func calibCandidates(names []string) ([]core.Candidate, error) {
	if len(names) == 0 {
		return calibMethods, nil
	}
	var cands []core.Candidate
	for _, name := range names {
		i := slices.IndexFunc(calibMethods, func(c core.Candidate) bool { return calibName(c) == name })
		if i >= 0 {
			cands = append(cands, calibMethods[i])
			continue
		}
		m, o, _ := strings.Cut(name, "/")
		meth, okM := core.ParseMethod(m)
		kind, okO := core.ParseOrder(o)
		if !okM || !okO || meth == core.MethodPaperHard || meth == core.MethodPaperSoft {
			return nil, fmt.Errorf("calibration: unknown estimator %q (paper-hard, paper-soft, or METHOD/ORDER with METHOD ep, met or smc and ORDER an order of gpc's --order, e.g. ep/greedy, smc/sharp)", name)
		}
		cands = append(cands, core.Candidate{Method: meth, Order: kind})
	}
	return cands, nil
}

func calibName(c core.Candidate) string {
	if c.Method == core.MethodPaperHard || c.Method == core.MethodPaperSoft {
		return c.Method.String()
	}
	return c.String()
}

// calibFamily is a problem with its reference values.
type calibFamily struct {
	Name, What string
	Box        core.Box
	M          int // particles per run
	// LogP is the exact log P, or the reference's, with RefSE its
	// standard error (0 when exact).
	LogP, RefSE float64
	// TestCov (T x N) and TestVar are the test rows whose posteriors are
	// studied; Post and PostSE their exact or reference values.
	TestCov, TestVar []float64
	Post, PostSE     []float64
	// RefNote describes the reference.
	RefNote string
}

// pickTests keeps t of the nt test rows of cov/vars/post (evenly spread).
func pickTests(t, n int, cov, vars, post []float64) (c, v, p []float64) {
	nt := len(vars)
	t = min(t, nt)
	for k := range t {
		j := k * nt / t
		c = append(c, cov[j*n:(j+1)*n]...)
		v = append(v, vars[j])
		if post != nil {
			p = append(p, post[j])
		}
	}
	return c, v, p
}

// calibTests is the number of test posteriors studied per family.
const calibTests = 10

// newCalibFamily builds family name; RBF families get their reference
// from two long runs (ep/greedy and met/sharp, RefFactor * M particles
// each, seeds apart from the study's), combined by inverse variance.
func newCalibFamily(ctx context.Context, name string, p CalibPlan, log io.Writer) (*calibFamily, error) {
	f := &calibFamily{Name: name}
	switch name {
	case "one-factor":
		d := bench.Loadings(100, p.Seed)
		f.What = "Experiment 1's one-factor orthant, N = 100 (exact by 1-D quadrature)"
		f.Box = core.Box{N: 100, Cov: oracle.OneFactor(d)}
		f.M = 8000
		f.LogP = oracle.OneFactorLogP(d)
		f.RefNote = "exact"
		return f, nil
	case "exp2-p1", "exp2-p3":
		prob := 0
		if name == "exp2-p3" {
			prob = 2
		}
		pr := bench.Exp2Problems[prob]
		d := pr.Generate(p.Seed)
		f.What = fmt.Sprintf("Experiment 2 problem %d, linear kernel, N = %d (exact 1-D answers)", prob+1, pr.N)
		f.Box = core.Box{N: pr.N, Cov: d.Cov}
		f.M = 8000
		if pr.N > 200 {
			f.M = 4000
		}
		f.LogP = d.ExactLogML
		f.TestCov, f.TestVar, f.Post = pickTests(calibTests, pr.N, d.TestCov, d.TestVar, d.ExactPosterior)
		f.PostSE = make([]float64, len(f.Post))
		f.RefNote = "exact"
		return f, nil
	case "box3-corr", "box3-neg":
		// Small boxes with strong correlation, shifted and two-sided:
		// exact by nested Gauss-Legendre quadrature.
		s := [9]float64{1, 0.95, 0.9, 0.95, 1, 0.95, 0.9, 0.95, 1}
		mu := [3]float64{0.3, -0.2, 0.1}
		a := [3]float64{-0.5, 0, math.Inf(-1)}
		b := [3]float64{0.5, math.Inf(1), 0.2}
		f.What = "3-D box, correlations 0.95/0.9/0.95, shifted mean, narrow two-sided bounds (exact by quadrature)"
		if name == "box3-neg" {
			s = [9]float64{1, -0.7, 0.6, -0.7, 1, -0.8, 0.6, -0.8, 1}
			mu = [3]float64{0, 0.5, -0.5}
			a = [3]float64{0.5, -1, 0}
			b = [3]float64{math.Inf(1), 1, 1.5}
			f.What = "3-D box, correlations -0.7/0.6/-0.8, shifted mean, mixed bounds (exact by quadrature)"
		}
		f.Box = core.Box{N: 3, Cov: s[:], Mean: mu[:], Lower: a[:], Upper: b[:]}
		f.M = 8000
		f.LogP = oracle.LogBox3(mu, s, a, b)
		f.RefNote = "exact"
		return f, nil
	}
	var beta float64
	var n int
	switch name {
	case "rbf-b1":
		beta, n = 1, 200
	case "rbf-b10":
		beta, n = 10, 200
	case "rbf-b100":
		beta, n = 100, 100
	case "rbf-b10-n1000", "rbf-b10-n2000", "rbf-b10-n5000":
		// Large N, where MethodEP's proposal widens its sites and its EP
		// stops by core.EPLargeMoving: not in the full plan (the paper's
		// methods there would take hours); run with --families and
		// --methods ep/greedy,met/sharp (ep/greedy alone at N = 5000).
		beta = 10
		n, _ = strconv.Atoi(strings.TrimPrefix(name, "rbf-b10-n"))
	default:
		return nil, fmt.Errorf("calibration: unknown family %q (one-factor, exp2-p1, exp2-p3, box3-corr, box3-neg, rbf-b1, rbf-b10, rbf-b100, rbf-b10-n1000, rbf-b10-n2000, rbf-b10-n5000)", name)
	}
	if p.Name == "quick" {
		n = 50
	}
	d := bench.RBFProblem{N: n, NTest: calibTests, Alpha: 1, Beta: beta, Seed: p.Seed}.Generate()
	f.What = fmt.Sprintf("RBF GP classification, alpha = 1, beta = %g, N = %d (long-run reference)", beta, n)
	f.Box = d.Box
	f.M = 8000
	f.TestCov, f.TestVar = d.TestCov, d.TestVar
	// The long-run reference: ep/greedy and met/sharp, combined; from
	// N = 5000 on ep/greedy alone, since met's weights degenerate there
	// (every run warned from N = 1000 on, its SE 50 to 100 times ep's) and
	// its long run would add an hour and nothing to the reference.
	// At N = 5000 the reference keeps 16 x M particles rather than 64 (its
	// cloud, kept for the test posteriors, would be 20 GB): its SE is a
	// quarter of a run's, which adds 3 % to the rms z.
	refCands := []core.Candidate{{Method: core.MethodEP, Order: core.OrderGreedy}, {Method: core.MethodMET, Order: core.OrderSharp}}
	refM := p.RefFactor * f.M
	if n >= 5000 {
		refCands = refCands[:1]
		refM = min(refM, 16*f.M)
	}
	var refs []calibRun
	for k, c := range refCands {
		fac, err := core.Prepare(f.Box, c, p.Seed, 0)
		if err != nil {
			return nil, fmt.Errorf("calibration: %s reference %s: %w", name, c, err)
		}
		r, err := calibOne(ctx, f, fac, c, refM, 32, 1<<40+uint64(k))
		if err != nil {
			return nil, fmt.Errorf("calibration: %s reference %s: %w", name, c, err)
		}
		fmt.Fprintf(log, "calibration: %s reference %s M=%d: log P %.6f ± %.6f\n", name, c, refM, r.LogP, r.SE)
		refs = append(refs, r)
	}
	f.Post, f.PostSE = make([]float64, len(f.TestVar)), make([]float64, len(f.TestVar))
	if len(refs) == 1 {
		f.LogP, f.RefSE = refs[0].LogP, refs[0].SE
		for j := range f.Post {
			f.Post[j], f.PostSE[j] = refs[0].Post[j].P, refs[0].Post[j].SE
		}
		f.RefNote = fmt.Sprintf("ep/greedy %.5f ± %.5f at M = %d", refs[0].LogP, refs[0].SE, refM)
		return f, nil
	}
	f.LogP, f.RefSE = ivCombine(refs[0].LogP, refs[0].SE, refs[1].LogP, refs[1].SE)
	for j := range f.Post {
		f.Post[j], f.PostSE[j] = ivCombine(refs[0].Post[j].P, refs[0].Post[j].SE, refs[1].Post[j].P, refs[1].Post[j].SE)
	}
	f.RefNote = fmt.Sprintf("ep/greedy %.5f ± %.5f and met/sharp %.5f ± %.5f at M = %d, combined (they differ by %.1f combined SE)",
		refs[0].LogP, refs[0].SE, refs[1].LogP, refs[1].SE, refM, (refs[0].LogP-refs[1].LogP)/math.Hypot(refs[0].SE, refs[1].SE))
	return f, nil
}

// ivCombine combines two estimates by inverse variance (one alone when the
// other has no standard error).
func ivCombine(a, sa, b, sb float64) (float64, float64) {
	switch {
	case !(sa > 0) && !(sb > 0):
		return (a + b) / 2, math.NaN()
	case !(sb > 0) || math.IsNaN(b):
		return a, sa
	case !(sa > 0) || math.IsNaN(a):
		return b, sb
	}
	wa, wb := 1/(sa*sa), 1/(sb*sb)
	return (wa*a + wb*b) / (wa + wb), 1 / math.Sqrt(wa+wb)
}

// calibRun is one run's log P and posteriors with their standard errors;
// Warned is set when Result.Trust says the standard error cannot be relied
// on (the tools then print a warning).
type calibRun struct {
	LogP, SE float64
	Post     []core.Posterior
	Warned   bool
}

// calibOne runs candidate c on the prepared factor fac: m particles in
// groups groups, seed seed, and predicts the family's test rows.
func calibOne(ctx context.Context, f *calibFamily, fac *core.Factor, c core.Candidate, m, groups int, seed uint64) (calibRun, error) {
	t := len(f.TestVar)
	cfg := core.Config{Method: c.Method, Samples: m, Groups: groups, Seed: seed, Keep: t > 0}
	est, err := core.Estimate(ctx, fac, cfg)
	if err != nil {
		return calibRun{}, err
	}
	ok, _ := est.Trust()
	r := calibRun{LogP: est.LogP, SE: est.SE, Warned: !ok}
	if t == 0 || math.IsInf(est.LogP, -1) {
		return r, nil
	}
	r.Post = make([]core.Posterior, t)
	hard := c.Method == core.MethodPaperHard
	if err := core.PredictWith(r.Post, fac, est.Cloud, f.TestCov, f.TestVar, core.PredictOptions{Hard: hard, Seed: seed}); err != nil {
		return calibRun{}, err
	}
	return r, nil
}

// CalibStats summarises the z scores of one estimator on one family for
// one quantity. The unit of independence is the seed: a run's test
// posteriors share its particles, so their coverage and mean z are
// averaged within the run first and the sampling errors come from the
// spread between runs.
type CalibStats struct {
	Runs, Failed int // runs with a finite z; runs without (P = 0, no SE)
	// Cover holds the fractions of |z| <= 1, 1.96, 2.576 (nominal 68.3,
	// 95, 99 %); CoverSE their standard errors (binomial at the nominal
	// level for one value per run, between runs otherwise).
	Cover, CoverSE [3]float64
	RMSZ, RMSZSE   float64
	Bias, BiasSE   float64 // mean z
	// SDRatio is the spread of the estimates over the mean reported SE
	// (log P only; NaN for posteriors).
	SDRatio float64
	// ok is the acceptance as a merged table gave it ("" when computed
	// here: a verdict recomputed from rounded values could differ).
	ok string
}

// calibLevels are the nominal coverages and their normal quantiles.
var calibLevels = [3]struct{ p, q float64 }{{0.6827, 1}, {0.95, 1.959964}, {0.99, 2.575829}}

// calibSummary computes CalibStats from each run's z scores (nil: failed).
func calibSummary(z [][]float64) CalibStats {
	var s CalibStats
	var cov [3][]float64
	var z2, zm []float64
	for _, zs := range z {
		if len(zs) == 0 {
			s.Failed++
			continue
		}
		var c [3]float64
		var q2, qm float64
		for _, v := range zs {
			for k, l := range calibLevels {
				if math.Abs(v) <= l.q {
					c[k]++
				}
			}
			q2 += v * v
			qm += v
		}
		n := float64(len(zs))
		for k := range c {
			cov[k] = append(cov[k], c[k]/n)
		}
		z2 = append(z2, q2/n)
		zm = append(zm, qm/n)
	}
	s.Runs = len(z2)
	nan := math.NaN()
	if s.Runs < 2 {
		s.Cover, s.CoverSE = [3]float64{nan, nan, nan}, [3]float64{nan, nan, nan}
		s.RMSZ, s.RMSZSE, s.Bias, s.BiasSE, s.SDRatio = nan, nan, nan, nan, nan
		return s
	}
	single := true
	for _, zs := range z {
		single = single && len(zs) <= 1
	}
	n := float64(s.Runs)
	for k := range cov {
		var se float64
		s.Cover[k], se = bench.MeanSE(cov[k])
		if single {
			p := calibLevels[k].p
			se = math.Sqrt(p * (1 - p) / n)
		}
		s.CoverSE[k] = se
	}
	m2, se2 := bench.MeanSE(z2)
	s.RMSZ = math.Sqrt(m2)
	s.RMSZSE = se2 / (2 * s.RMSZ)
	s.Bias, s.BiasSE = bench.MeanSE(zm)
	s.SDRatio = nan
	return s
}

// CalibRow is one estimator on one family.
type CalibRow struct {
	Family, Method string
	M, Groups      int
	LogP, Post     CalibStats
	// Warned counts the runs whose standard error the tools warn about
	// (Result.Trust); they are in the statistics all the same.
	Warned int
	CPU    float64 // CPU seconds per run (prediction included)
}

// CalibReport is a calibration study's outcome.
type CalibReport struct {
	Plan     CalibPlan
	Families []*calibFamily
	Rows     []CalibRow
	Seconds  float64
}

// RunCalibration runs the study of plan p, writing calibration.md and the
// figure into dir as it goes and every number to log.
func RunCalibration(ctx context.Context, p CalibPlan, dir string, log io.Writer) (*CalibReport, error) {
	start := time.Now()
	rep := &CalibReport{Plan: p}
	cands, err := calibCandidates(p.Methods)
	if err != nil {
		return nil, err
	}
	for _, name := range p.Families {
		f, err := newCalibFamily(ctx, name, p, log)
		if err != nil {
			return nil, err
		}
		rep.Families = append(rep.Families, f)
		for _, c := range cands {
			row, err := calibFamilyRun(ctx, f, c, p, log)
			if err != nil {
				return nil, fmt.Errorf("calibration: %s, %s: %w", name, calibName(c), err)
			}
			rep.Rows = append(rep.Rows, row)
		}
		rep.Seconds = time.Since(start).Seconds()
		if err := os.WriteFile(filepath.Join(dir, "calibration.md"), []byte(rep.Markdown()), 0o644); err != nil {
			return nil, err
		}
	}
	if err := calibFigure(rep, dir); err != nil {
		return nil, fmt.Errorf("calibration figure: %w", err)
	}
	rep.Seconds = time.Since(start).Seconds()
	return rep, os.WriteFile(filepath.Join(dir, "calibration.md"), []byte(rep.Markdown()), 0o644)
}

// calibFamilyRun runs candidate c on family f for p.Seeds seeds, preparing
// the factor once (the study is about the Monte Carlo error given the
// preparation).
func calibFamilyRun(ctx context.Context, f *calibFamily, c core.Candidate, p CalibPlan, log io.Writer) (CalibRow, error) {
	row := CalibRow{Family: f.Name, Method: calibName(c), M: f.M, Groups: p.groups(c.Method, f.M)}
	c0 := cpuSeconds()
	fac, err := core.Prepare(f.Box, c, p.Seed, 0)
	if err != nil {
		return row, err
	}
	zl := make([][]float64, p.Seeds)
	zp := make([][]float64, p.Seeds)
	est := make([]float64, 0, p.Seeds)
	var meanSE float64
	for s := range p.Seeds {
		r, err := calibOne(ctx, f, fac, c, f.M, row.Groups, p.Seed*1_000_000+uint64(s))
		if err != nil {
			return row, err
		}
		if r.Warned {
			row.Warned++
		}
		if z := (r.LogP - f.LogP) / r.SE; !math.IsNaN(z) && !math.IsInf(z, 0) {
			zl[s] = []float64{z}
			est = append(est, r.LogP)
			meanSE += r.SE
		}
		for j, q := range r.Post {
			if z := (q.P - f.Post[j]) / q.SE; !math.IsNaN(z) && !math.IsInf(z, 0) {
				zp[s] = append(zp[s], z)
			}
		}
	}
	row.CPU = (cpuSeconds() - c0) / float64(p.Seeds)
	row.LogP = calibSummary(zl)
	if len(est) > 1 {
		_, sd := bench.MeanSE(est)
		row.LogP.SDRatio = sd * math.Sqrt(float64(len(est))) / (meanSE / float64(len(est)))
	}
	if len(f.TestVar) > 0 {
		row.Post = calibSummary(zp)
	} else {
		row.Post = calibSummary(nil)
	}
	fmt.Fprintf(log, "calibration: %-10s %-10s M=%d log P: 95%% %.3f rms z %.3f ± %.3f bias %+.3f ± %.3f sd/SE %.2f failed %d warned %d | post: 95%% %.3f rms z %.3f ± %.3f bias %+.3f | %.3f cpu-s/run\n",
		f.Name, row.Method, f.M, row.LogP.Cover[1], row.LogP.RMSZ, row.LogP.RMSZSE, row.LogP.Bias, row.LogP.BiasSE, row.LogP.SDRatio, row.LogP.Failed, row.Warned,
		row.Post.Cover[1], row.Post.RMSZ, row.Post.RMSZSE, row.Post.Bias, row.CPU)
	return row, nil
}

// pm formats v ± se as percentages (coverage) or plain numbers.
func pm(v, se float64, pct bool) string {
	if math.IsNaN(v) {
		return "-"
	}
	if pct {
		return fmt.Sprintf("%.1f ± %.1f", 100*v, 100*se)
	}
	if math.Abs(v) >= 100 { // a degenerate estimator's z scores
		return fmt.Sprintf("%.2g ± %.2g", v, se)
	}
	return fmt.Sprintf("%.2f ± %.2f", v, se)
}

// calibOK reports whether s meets the acceptance: 95 % coverage within
// 93-97 % or within two of its standard errors of 95 %, and rms z within
// 0.9-1.1 or within two of its standard errors of 1.
func calibOK(s CalibStats) bool {
	c, cse := s.Cover[1], s.CoverSE[1]
	covOK := c >= 0.93 && c <= 0.97 || math.Abs(c-0.95) <= 2*cse
	rmsOK := s.RMSZ >= 0.9 && s.RMSZ <= 1.1 || math.Abs(s.RMSZ-1) <= 2*s.RMSZSE
	return covOK && rmsOK && s.Failed == 0
}

// Markdown renders the study's tables.
func (r *CalibReport) Markdown() string {
	b := &strings.Builder{}
	fmt.Fprintf(b, "<!-- generated by go run ./bench/repro --calibration --%s; %.0f s wall time -->\n", r.Plan.Name, r.Seconds)
	groups := fmt.Sprintf("%d particle groups per run", r.Plan.Groups)
	if r.Plan.Groups == 0 {
		groups = "in the tools' default number of particle groups (core.DefaultGroups: ep/greedy 64 at M = 8000 and 32 at M = 4000, the others 32 and 16; the paper's methods, one group in the tools, get met's here)"
	}
	fmt.Fprintf(b, "\n%d seeds per estimator and family, %s.\n", r.Plan.Seeds, groups)
	t := newTable(b, "family", "M", "reference", "what")
	for _, f := range r.Families {
		ref := f.RefNote
		if f.RefSE > 0 {
			ref = fmt.Sprintf("%.5f ± %.5f: %s", f.LogP, f.RefSE, f.RefNote)
		}
		t.row(f.Name, fmt.Sprint(f.M), ref, f.What)
	}
	for _, q := range []struct {
		title string
		get   func(CalibRow) CalibStats
		logP  bool
	}{{"log P", func(r CalibRow) CalibStats { return r.LogP }, true}, {"test posteriors", func(r CalibRow) CalibStats { return r.Post }, false}} {
		fmt.Fprintf(b, "\n### %s\n", q.title)
		head := []string{"family", "estimator", "runs", "failed", "warned", "68 % (%)", "95 % (%)", "99 % (%)", "rms z", "mean z"}
		if q.logP {
			head = append(head, "sd / mean SE")
		}
		head = append(head, "ok", "cpu-s/run")
		t := newTable(b, head...)
		for _, row := range r.Rows {
			s := q.get(row)
			if s.Runs == 0 && s.Failed == 0 {
				continue
			}
			ok := "no"
			if calibOK(s) {
				ok = "yes"
			}
			if s.ok != "" {
				ok = s.ok
			}
			cells := []string{row.Family, row.Method, fmt.Sprint(s.Runs), fmt.Sprint(s.Failed), fmt.Sprint(row.Warned),
				pm(s.Cover[0], s.CoverSE[0], true), pm(s.Cover[1], s.CoverSE[1], true), pm(s.Cover[2], s.CoverSE[2], true),
				pm(s.RMSZ, s.RMSZSE, false), pm(s.Bias, s.BiasSE, false)}
			if q.logP {
				cells = append(cells, g(s.SDRatio, 3))
			}
			cells = append(cells, ok, fmt.Sprintf("%.3f", row.CPU))
			t.row(cells...)
		}
	}
	fmt.Fprintf(b, "\n![log P](calibration-logp.png)\n![test posteriors](calibration-post.png)\n")
	return b.String()
}

// familyNames returns the family names of the report's rows, in order.
func (r *CalibReport) familyNames() []string {
	return r.distinct(func(row CalibRow) string { return row.Family })
}

// methodNames returns the estimators of the rows, in order of first
// appearance.
func (r *CalibReport) methodNames() []string {
	return r.distinct(func(row CalibRow) string { return row.Method })
}

// distinct returns the values of key over the rows, each once, in order of
// first appearance.
func (r *CalibReport) distinct(key func(CalibRow) string) []string {
	var out []string
	for _, row := range r.Rows {
		if k := key(row); !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// coverPoints are the 95 % coverages of one estimator, with error bars.
type coverPoints struct {
	plotter.XYs
	plotter.YErrors
}

// calibFigure draws the 95 % coverage of every estimator by family, with
// two standard errors as bars and the 93-97 % acceptance band, for log P
// (calibration-logp.png) and the test posteriors (calibration-post.png),
// each coverage where it is (calibPlot), the legend beside the axes.
func calibFigure(rep *CalibReport, dir string) error {
	for _, q := range calibQuantities {
		p, err := calibPlot(rep, q.what, q.get)
		if err != nil {
			return err
		}
		if err := figure.SaveLegendOutside(p, 24*vg.Centimeter, 11*vg.Centimeter, filepath.Join(dir, q.file)); err != nil {
			return err
		}
	}
	return nil
}

// calibQuantities are the figures' quantities: their files, names and
// statistics.
var calibQuantities = []struct {
	file, what string
	get        func(CalibRow) CalibStats
}{{"calibration-logp.png", "log P", func(r CalibRow) CalibStats { return r.LogP }},
	{"calibration-post.png", "test posteriors", func(r CalibRow) CalibStats { return r.Post }}}

// coverBreak is where the coverage axis changes scale: from 0 to it the
// axis's lower coverLow of the height, above it the rest, so that the
// acceptance band (93-97 %) is wide enough to read and every coverage, an
// estimator's that fails at 7 % too, is drawn where it is, none clipped.
const coverBreak, coverLow = 80.0, 0.3

// coverScale is the coverage axis's plot.Normalizer: linear on [0, 80] and
// on [80, 100 and beyond], 9.3 times finer above.
type coverScale struct{}

func (coverScale) Normalize(min, max, x float64) float64 {
	f := func(v float64) float64 {
		if v <= coverBreak {
			return coverLow * v / coverBreak
		}
		return coverLow + (1-coverLow)*(v-coverBreak)/(100-coverBreak)
	}
	return (f(x) - f(min)) / (f(max) - f(min))
}

// calibPlot is the figure of one quantity's 95 % coverages (what, get),
// with the acceptance band, on coverScale's axis from 0 to 100 %.
func calibPlot(rep *CalibReport, what string, get func(CalibRow) CalibStats) (*plot.Plot, error) {
	// The families with a coverage of the quantity (the box and one-factor
	// families have no test posteriors).
	fams := slices.DeleteFunc(rep.familyNames(), func(f string) bool {
		return !slices.ContainsFunc(rep.Rows, func(r CalibRow) bool { return r.Family == f && !math.IsNaN(get(r).Cover[1]) })
	})
	names := rep.methodNames()
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Coverage of nominal 95 %% intervals, %s (%d seeds, ±2 SE)", what, rep.Plan.Seeds)
	p.Y.Label.Text = fmt.Sprintf("coverage (%%; the scale is %.2g times finer above %g)", (1-coverLow)/(100-coverBreak)/(coverLow/coverBreak), coverBreak)
	p.NominalX(fams...)
	for _, lim := range []float64{93, 95, 97} {
		l, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: lim}, {X: float64(len(fams)) - 0.5, Y: lim}})
		if err != nil {
			return nil, err
		}
		l.Color = color.Gray{Y: 160}
		if lim != 95 {
			l.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
		}
		p.Add(l)
	}
	for i, name := range names {
		var pts coverPoints
		for _, row := range rep.Rows {
			s := get(row)
			if row.Method != name || math.IsNaN(s.Cover[1]) {
				continue
			}
			x := float64(slices.Index(fams, row.Family)) + 0.12*(float64(i)-float64(len(names)-1)/2)
			c, e := 100*s.Cover[1], 200*s.CoverSE[1]
			pts.XYs = append(pts.XYs, plotter.XY{X: x, Y: c})
			// The bar within [0, 100]: a coverage is a fraction.
			pts.YErrors = append(pts.YErrors, struct{ Low, High float64 }{min(e, c), max(0, min(e, 100-c))})
		}
		if len(pts.XYs) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, err
		}
		sc.Color, sc.Shape = plotutil.Color(i), plotutil.Shape(i)
		eb, err := plotter.NewYErrorBars(pts)
		if err != nil {
			return nil, err
		}
		eb.Color = plotutil.Color(i)
		p.Add(sc, eb)
		p.Legend.Add(name, sc)
	}
	p.Add(plotter.NewGrid())
	// The axis as drawn, set after the plotters (p.Add widens it to their
	// error bars, below 0 too).
	p.Y.Min, p.Y.Max = 0, 100
	p.Y.Scale = coverScale{}
	var ticks []plot.Tick
	for _, v := range []float64{0, 20, 40, 60, 80, 85, 90, 95, 100} {
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', -1, 64)})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	return p, nil
}

// MergeCalibration rebuilds a study from the calibration.md files of runs
// over disjoint families (a study split across processes or machines with
// --families), in the order of plan p's families: it writes calibration.md
// and the figures into dir. The tables carry every statistic to the digits
// shown, so the merged tables are those of one run.
func MergeCalibration(p CalibPlan, files []string, dir string) (*CalibReport, error) {
	rep := &CalibReport{Plan: p}
	rep.Plan.Name = fmt.Sprintf("%s --merge (%d runs, wall times summed)", p.Name, len(files))
	fams := map[string]*calibFamily{}
	rows := map[string][]CalibRow{}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		var sec string
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "<!-- generated") {
				var secs float64
				if i := strings.Index(line, "; "); i >= 0 {
					fmt.Sscanf(line[i+2:], "%g s wall time", &secs)
				}
				rep.Seconds += secs
			}
			if strings.HasPrefix(line, "### ") {
				sec = line[4:]
				continue
			}
			if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| family") {
				continue
			}
			c := strings.Split(strings.Trim(line, "| "), " | ")
			switch {
			case sec == "" && len(c) == 4:
				m, _ := strconv.Atoi(c[1])
				fams[c[0]] = &calibFamily{Name: c[0], M: m, RefNote: c[2], What: c[3]}
			case sec == "log P" && len(c) == 13 || sec == "test posteriors" && len(c) == 12:
				s, warned, cpu, err := parseCalibRow(c[2:])
				if err != nil {
					return nil, fmt.Errorf("%s: %q: %w", file, line, err)
				}
				rs := rows[c[0]]
				k := slices.IndexFunc(rs, func(r CalibRow) bool { return r.Method == c[1] })
				if k < 0 {
					rs = append(rs, CalibRow{Family: c[0], Method: c[1], Warned: warned, CPU: cpu})
					k = len(rs) - 1
					rs[k].Post = calibSummary(nil)
				}
				if sec == "log P" {
					rs[k].LogP = s
				} else {
					rs[k].Post = s
				}
				rows[c[0]] = rs
			}
		}
	}
	for _, name := range p.Families {
		f, ok := fams[name]
		if !ok {
			return nil, fmt.Errorf("calibration: no run has family %s", name)
		}
		if len(rows[name]) == 0 {
			return nil, fmt.Errorf("calibration: family %s has no rows", name)
		}
		rep.Families = append(rep.Families, f)
		for _, r := range rows[name] {
			r.M = f.M
			rep.Rows = append(rep.Rows, r)
		}
	}
	if err := calibFigure(rep, dir); err != nil {
		return nil, err
	}
	return rep, os.WriteFile(filepath.Join(dir, "calibration.md"), []byte(rep.Markdown()), 0o644)
}

// parseCalibRow reads a table row's cells from "runs" on.
func parseCalibRow(c []string) (s CalibStats, warned int, cpu float64, err error) {
	num := func(x string) float64 {
		v, e := strconv.ParseFloat(x, 64)
		if x == "-" {
			return math.NaN()
		}
		if e != nil && err == nil {
			err = e
		}
		return v
	}
	pmv := func(x string, scale float64) (float64, float64) {
		if x == "-" {
			return math.NaN(), math.NaN()
		}
		a, b, _ := strings.Cut(x, " ± ")
		return num(a) / scale, num(b) / scale
	}
	s.Runs, s.Failed, warned = int(num(c[0])), int(num(c[1])), int(num(c[2]))
	for k := range 3 {
		s.Cover[k], s.CoverSE[k] = pmv(c[3+k], 100)
	}
	s.RMSZ, s.RMSZSE = pmv(c[6], 1)
	s.Bias, s.BiasSE = pmv(c[7], 1)
	s.SDRatio = math.NaN()
	if len(c) == 11 { // log P's table has the sd / mean SE column
		s.SDRatio = num(c[8])
	}
	s.ok = c[len(c)-2]
	cpu = num(c[len(c)-1])
	return s, warned, cpu, err
}
