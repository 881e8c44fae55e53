package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpc-mc/gpc/core/fit"
	"github.com/gpc-mc/gpc/core/gp"
)

// theta returns a kernel's log-hyperparameters in Hypers' order.
func theta(k *gp.Kernel) []float64 {
	hs := k.Hypers()
	th := make([]float64, len(hs))
	for j, h := range hs {
		th[j] = math.Log(h.Get(k))
	}
	return th
}

// logPost writes a row's exact log posterior (its log ML plus the log
// density of the data set's default prior at its hyperparameters: judge,
// or judgeBias for a kernel with a bias, whose prior has one more
// log-hyperparameter), or "-" where the data set has no default prior.
func logPost(r FitStudyRow, judge, judgeBias fit.LogNormalPrior) string {
	if r.Kernel.Bias > 0 {
		judge = judgeBias
	}
	if judge.Mu == nil {
		return "-"
	}
	return fmt.Sprintf("%.3f", r.LogML+judge.LogPDF(theta(&r.Kernel)))
}

// fitStudySets are docs/fitting.md's data sets (in /work/shared/data's
// layout: DIR/NAME/train.csv and test.csv, the fixed 70/30 split), each
// with the kernel fitted and the starting point of gpc's fit (standardized
// features: a length scale of about sqrt(D), beta 10).
var fitStudySets = []struct {
	name   string
	kernel gp.KernelKind
	// heldOut: the acceptance asks that gpc's fit predicts the
	// held-out labels no worse than the EP optimum's and scikit-learn's.
	heldOut bool
}{
	{"crabs", gp.KernelRBF, false},
	{"sonar", gp.KernelARD, true},
	{"ionosphere", gp.KernelARD, true},
	{"pima", gp.KernelARD, true},
	{"usps_3v5", gp.KernelRBF, false},
}

// TestFitStudy regenerates docs/fitting.md's table: on each data set,
// the hyperparameters found by (a) the maximum of gpc's EP evidence (the
// approximation GPML's infEP optimizes), (b) scikit-learn's
// GaussianProcessClassifier (Laplace, logit link; Debian's
// python3-sklearn, run by GPC_PYTHON, default /usr/bin/python3) and (c)
// gpc's exact fit (gpc-fit's defaults), each judged by gpc: the exact log
// marginal likelihood (standard error <= 0.1), the held-out accuracy and
// mean log predictive probability (scikit-learn's own predictions for (b),
// gpc's for the others), and the wall time of the search; and (a) and (c)
// again with a constant bias fitted with the rest (started at 1), to say
// whether the data want one. Set
// GPC_FIT_STUDY to a data set's name (or all) and GPC_DATA to the data's
// directory (default /work/shared/data), GPC_FIT_SEED the fits' seed
// (default 1). It checks the acceptance:
// gpc's exact log ML (plus the log prior, for a MAP fit) at its optimum is
// at least that at the EP optimum under the same prior, within their
// standard errors, and gpc's default fit predicts the held-out labels no
// worse than the EP optima and scikit-learn (within 2 paired standard
// errors).
func TestFitStudy(t *testing.T) {
	if testing.Short() {
		t.Skip("fit study: skipped under -short")
	}
	which := os.Getenv("GPC_FIT_STUDY")
	if which == "" {
		t.Skip("fit study: set GPC_FIT_STUDY to a data set's name or all to run it")
	}
	dir := os.Getenv("GPC_DATA")
	if dir == "" {
		dir = "/work/shared/data"
	}
	// GPC_FIT_SEED (default 1) is the fits' seed: another one measures
	// how much the Monte Carlo error moves the exact fits and the Laplace
	// evidence (docs/fitting.md's table is seed 1).
	fitSeed := uint64(1)
	if v := os.Getenv("GPC_FIT_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("GPC_FIT_SEED %q: %v", v, err)
		}
		fitSeed = n
	}
	python := os.Getenv("GPC_PYTHON")
	if python == "" {
		python = "/usr/bin/python3"
	}
	ctx := context.Background()
	var lines []string
	for _, ds := range fitStudySets {
		if which != "all" && !strings.Contains(","+which+",", ","+ds.name+",") {
			continue
		}
		train, test, _, err := LoadSplit(dir + "/" + ds.name)
		if err != nil {
			t.Fatal(err)
		}
		d := train.D
		start := gp.Kernel{Kind: ds.kernel, Beta: 10, Alpha: []float64{math.Sqrt(float64(d))}}
		if ds.kernel == gp.KernelARD {
			start.Alpha = make([]float64, d)
			for j := range start.Alpha {
				start.Alpha[j] = math.Sqrt(float64(d))
			}
		}
		// gpc-fit's default prior for the kernel (fit.DefaultPriorSD), and
		// the fits without it (type-II maximum likelihood) for comparison;
		// the EP stage gets the same prior as the exact one.
		theta0 := make([]float64, 0, len(start.Alpha)+1)
		for _, h := range start.Hypers() {
			theta0 = append(theta0, math.Log(h.Get(&start)))
		}
		priors := []fit.LogNormalPrior{{}}
		if sd := fit.DefaultPriorSD(ds.kernel); sd > 0 {
			priors = append(priors, fit.NewLogNormalPrior(theta0, sd))
		}
		// The same fit with a constant bias (a kernel plus a constant, the
		// GPML model covSum(covConst, ...)), started at 1 and fitted with
		// the rest, under the default prior (which then also centres log
		// bias on 0): nested in the model without it (bias -> 0), so the
		// training evidence says whether the data want it.
		startBias := start
		startBias.Bias = 1
		judge, judgeBias := priors[len(priors)-1], fit.NewLogNormalPrior(append(append([]float64(nil), theta0...), 0), fit.DefaultPriorSD(ds.kernel))
		type variant struct {
			start gp.Kernel
			prior fit.LogNormalPrior
		}
		var variants []variant
		for _, prior := range priors {
			variants = append(variants, variant{start, prior})
		}
		variants = append(variants, variant{startBias, judgeBias})
		var rows []FitStudyRow
		for _, v := range variants {
			exact, ep, epSecs, fitSecs, epCPU, fitCPU, res, err := FitGPC(ctx, train, v.start, v.prior, 2000, fitSeed, false, processCPU)
			if err != nil {
				t.Fatalf("%s: %v", ds.name, err)
			}
			tag := ""
			if v.prior.Mu != nil {
				tag = fmt.Sprintf(", prior sd %g", v.prior.SD[0])
			}
			if v.start.Bias > 0 {
				tag += ", bias"
			}
			t.Logf("%s%s: fit gradient norm %.3g against noise %.3g, %d estimates; the exact stage's gain over EP's optimum %.3g (se %.2g), EP's optimum kept: %v", ds.name, tag, res.GradNorm, res.NoiseNorm, res.Evals, res.Gain, res.SEGain, res.KeptEP)
			rows = append(rows,
				FitStudyRow{Data: ds.name, Method: "EP evidence" + tag, Kernel: ep, Seconds: epSecs, CPUSeconds: epCPU, Prior: v.prior},
				FitStudyRow{Data: ds.name, Method: "gpc exact" + tag, Kernel: exact, Seconds: fitSecs, CPUSeconds: fitCPU, Prior: v.prior})
			if v.prior.Mu != nil {
				// The same fit again (the same seeds: the same optimum),
				// untimed, with the curvature for the Laplace evidence.
				again, _, _, _, _, _, res, err := FitGPC(ctx, train, v.start, v.prior, 2000, fitSeed, true, nil)
				if err != nil || !floatsEq(theta(&again), theta(&exact)) {
					t.Fatalf("%s%s: the fit again with its Hessian: %v (optimum %v, first %v)", ds.name, tag, err, theta(&again), theta(&exact))
				}
				rows[len(rows)-1].Hessian = res.Hessian
			}
		}
		sk, skP, err := runSklearn(python, dir+"/"+ds.name, ds.kernel)
		if err != nil {
			t.Logf("%s: scikit-learn: %v", ds.name, err)
		} else {
			rows = append(rows, sk)
		}
		for i := range rows {
			r := &rows[i]
			r.LogML, r.SE, r.Samples, err = ExactLogML(ctx, train, &r.Kernel, 7)
			if err != nil {
				t.Fatalf("%s %s: %v", ds.name, r.Method, err)
			}
			// gpc's posteriors at the row's hyperparameters; for
			// scikit-learn's row (fitted for a logit link) they are logged,
			// to tell the hyperparameters from the model, and its own
			// predictions are the row's.
			ps, err := HeldOut(ctx, train, test, &r.Kernel, 20000, 7)
			if err != nil {
				t.Fatalf("%s %s: %v", ds.name, r.Method, err)
			}
			r.Accuracy, r.MLPP = Score(ps, test.Y)
			r.LogPred = LogPredictive(ps, test.Y)
			if r.Method == "scikit-learn" {
				t.Logf("%s: gpc's posteriors at scikit-learn's hyperparameters: accuracy %.3f, mean log predictive probability %.3f", ds.name, r.Accuracy, r.MLPP)
				r.Accuracy, r.MLPP = Score(skP, test.Y)
				r.LogPred = LogPredictive(skP, test.Y)
			}
		}
		for _, r := range rows {
			line := fmt.Sprintf("| %s | %v | %s | %s | %.3f (%.3f) | %s | %.3f | %.3f | %.1f (%.1f) |", r.Data, r.Kernel.Kind, r.Method, describeKernel(&r.Kernel), r.LogML, r.SE, logPost(r, judge, judgeBias), r.Accuracy, r.MLPP, r.CPUSeconds, r.Seconds)
			t.Log(line)
			lines = append(lines, line)
		}
		// Each exact fit's objective (the log ML, plus the log prior for
		// a MAP fit) is at least the EP optimum's under the same prior, and
		// gpc's default fit (the last exact row) predicts the held-out
		// labels no worse than the EP optimum and scikit-learn.
		for i := 0; i+1 < len(rows) && rows[i+1].Method != "scikit-learn"; i += 2 {
			e, g := rows[i], rows[i+1]
			fe, fg := e.LogML+e.Prior.LogPDF(theta(&e.Kernel)), g.LogML+g.Prior.LogPDF(theta(&g.Kernel))
			if fg < fe-2*math.Hypot(e.SE, g.SE) {
				t.Errorf("%s %s: exact log ML (+ log prior) at gpc's optimum %.3f (se %.2g) below that at the EP optimum %.3f (se %.2g)", ds.name, g.Method, fg, g.SE, fe, e.SE)
			}
		}
		// "No worse" is judged on the paired test points: gpc's mean log
		// predictive probability may fall below another's by no more than
		// 2 standard errors of the paired difference (PairedSE), the test
		// set's own resolution; every comparison is logged as measured.
		// gpc's default fit (the last exact row without a bias) is judged
		// against the EP optimum under the same prior, the EP-evidence
		// optimum without a prior (the model GPML's infEP fits), and
		// scikit-learn. The Monte Carlo error of gpc's posteriors is not in
		// the paired standard error, so each difference is measured again
		// with the posteriors of another seed.
		def := rows[2*len(priors)-1]
		for _, r := range rows {
			if !ds.heldOut || r.Kernel.Bias > 0 || r.Method == def.Method || !(r.Method == "scikit-learn" || strings.HasPrefix(r.Method, "EP evidence")) {
				continue
			}
			se := PairedSE(def.LogPred, r.LogPred)
			again := ""
			if r.Method != "scikit-learn" {
				a, b := heldOutMLPP(ctx, t, train, test, &def.Kernel, 8), heldOutMLPP(ctx, t, train, test, &r.Kernel, 8)
				again = fmt.Sprintf("; with another seed's posteriors %.5f", a-b)
			}
			t.Logf("%s: mean log predictive probability of %s minus %s: %.5f (paired se %.4f)%s", ds.name, def.Method, r.Method, def.MLPP-r.MLPP, se, again)
			if def.MLPP < r.MLPP-2*se {
				t.Errorf("%s: held-out mean log predictive probability of gpc's fit (%s) %.4f below %s's %.4f by more than 2 paired standard errors (%.4f)", ds.name, def.Method, def.MLPP, r.Method, r.MLPP, se)
			}
		}
		// The bias, judged by the training evidence (the exact log ML at
		// the fits with and without it, under the same prior) and, for
		// the record, held out.
		for i, r := range rows {
			if r.Kernel.Bias == 0 || !strings.HasPrefix(r.Method, "gpc exact") {
				continue
			}
			nb := rows[2*len(priors)-1]
			if r.Hessian != nil && nb.Hessian != nil {
				// Models of different dimension compare by their evidence:
				// its Laplace approximation at each MAP fit.
				zb := LaplaceLogEvidence(r.LogML+judgeBias.LogPDF(theta(&r.Kernel)), r.Hessian)
				z := LaplaceLogEvidence(nb.LogML+judge.LogPDF(theta(&nb.Kernel)), nb.Hessian)
				t.Logf("%s: Laplace log evidence with the bias %.3f, without %.3f: difference %.3f", ds.name, zb, z, zb-z)
			}
			t.Logf("%s: bias %.3g: exact log ML with it minus without (%s): %.3f (se %.3f); held out, mean log predictive probability %.5f (paired se %.4f), accuracy %.3f against %.3f; EP's optimum with it: bias %.3g", ds.name, r.Kernel.Bias, nb.Method,
				r.LogML-nb.LogML, math.Hypot(r.SE, nb.SE), r.MLPP-nb.MLPP, PairedSE(r.LogPred, nb.LogPred), r.Accuracy, nb.Accuracy, rows[i-1].Kernel.Bias)
		}
	}
	t.Log("table:\n" + strings.Join(lines, "\n"))
}

// describeKernel writes a kernel's hyperparameters briefly: alpha (for
// ard the range and the number of length scales above 100, the features
// the fit switched off), beta, and the bias if there is one.
func describeKernel(k *gp.Kernel) string {
	bias := ""
	if k.Bias > 0 {
		bias = fmt.Sprintf(", bias %.3g", k.Bias)
	}
	switch {
	case k.Kind == gp.KernelARD:
		lo, hi, off := math.Inf(1), 0.0, 0
		for _, a := range k.Alpha {
			if a > 100 {
				off++
				continue
			}
			lo, hi = math.Min(lo, a), math.Max(hi, a)
		}
		return fmt.Sprintf("alpha %.3g-%.3g (%d of %d above 100), beta %.3g%s", lo, hi, off, len(k.Alpha), k.Beta, bias)
	case len(k.Alpha) == 1:
		return fmt.Sprintf("alpha %.3g, beta %.3g%s", k.Alpha[0], k.Beta, bias)
	}
	return fmt.Sprintf("beta %.3g%s", k.Beta, bias)
}

func floatsEq(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// heldOutMLPP is the held-out mean log predictive probability of gpc's
// posteriors under k with the particles of seed.
func heldOutMLPP(ctx context.Context, t *testing.T, train, test *gp.Classifier, k *gp.Kernel, seed uint64) float64 {
	t.Helper()
	ps, err := HeldOut(ctx, train, test, k, 20000, seed)
	if err != nil {
		t.Fatal(err)
	}
	_, mlpp := Score(ps, test.Y)
	return mlpp
}

// runSklearn runs bench/fit_sklearn.py on a data set and returns its
// hyperparameters as a row and its test probabilities.
func runSklearn(python, dir string, kind gp.KernelKind) (FitStudyRow, []float64, error) {
	name := "rbf"
	if kind == gp.KernelARD {
		name = "ard"
	}
	t0 := time.Now()
	out, err := exec.Command(python, "fit_sklearn.py", dir+"/train.csv", dir+"/test.csv", name).Output()
	if err != nil {
		return FitStudyRow{}, nil, fmt.Errorf("%v (%s)", err, time.Since(t0))
	}
	var v struct {
		Alpha   []float64 `json:"alpha"`
		Beta    float64   `json:"beta"`
		Seconds float64   `json:"seconds"`
		CPU     float64   `json:"cpu_seconds"`
		P       []float64 `json:"test_p"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		return FitStudyRow{}, nil, err
	}
	k := gp.Kernel{Kind: kind, Alpha: v.Alpha, Beta: v.Beta}
	parts := strings.Split(dir, "/")
	return FitStudyRow{Data: parts[len(parts)-1], Method: "scikit-learn", Kernel: k, Seconds: v.Seconds, CPUSeconds: v.CPU}, v.P, nil
}

// TestLaplaceLogEvidence checks the Laplace approximation where it is
// exact: a Gaussian log joint c - 1/2 theta' A theta integrates to
// c + k/2 log(2 pi) - 1/2 log det A.
func TestLaplaceLogEvidence(t *testing.T) {
	h := []float64{-2, -0.5, -0.5, -1}
	want := 0.3 + math.Log(2*math.Pi) - 0.5*math.Log(1.75)
	if got := LaplaceLogEvidence(0.3, h); math.Abs(got-want) > 1e-12 {
		t.Errorf("LaplaceLogEvidence = %v, want %v", got, want)
	}
	if got := LaplaceLogEvidence(0.3, []float64{1, 0, 0, -1}); !math.IsNaN(got) {
		t.Errorf("LaplaceLogEvidence at a saddle = %v, want NaN", got)
	}
}
