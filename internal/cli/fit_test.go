package cli

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/gpc-mc/gpc/format"
)

// fitArgs fits crabs' RBF kernel with few particles.
var fitArgs = []string{"--train", "../../examples/crabs/train.csv", "--standardize", "--samples", "500", "--final-samples", "1000"}

// TestFitHyperRoundTrip checks that gpc-kernel --hyper takes gpc-fit's
// hyperparameters as they are, from Arrow and from CSV, into the
// covariance's metadata; and that gpc-fit's output does not depend on the
// thread count.
func TestFitHyperRoundTrip(t *testing.T) {
	arrow := runCLI(t, Fit, cliCase{args: append(append([]string{}, fitArgs...), "--threads", "1")})
	if again := runCLI(t, Fit, cliCase{args: append(append([]string{}, fitArgs...), "--threads", "2")}); !bytes.Equal(arrow, again) {
		t.Errorf("gpc-fit: --threads 1 and 2 differ")
	}
	csv := runCLI(t, Fit, cliCase{args: append(append([]string{}, fitArgs...), "--format", "csv")})
	f, err := format.ReadFrame(bytes.NewReader(csv), "fit.csv", format.NewAllocator())
	if err != nil {
		t.Fatal(err)
	}
	fit, rows, err := format.ReadHyper(f)
	if err != nil {
		t.Fatal(err)
	}
	if fit.Kernel != "rbf" || !fit.Standardize || len(rows) != 2 {
		t.Fatalf("fit %+v rows %+v", fit, rows)
	}
	// The log ML at crabs' optimum is about -22.8 (docs/fitting.md).
	if !(fit.LogML > -23.5 && fit.LogML < -22) {
		t.Errorf("log ML %v: not near crabs' optimum", fit.LogML)
	}
	for _, in := range [][]byte{arrow, csv} {
		cov := runCLI(t, Kernel, cliCase{args: []string{"--train", "../../examples/crabs/train.csv", "--standardize", "--hyper", "-"}, stdin: in})
		c, err := format.ReadCovariance(bytes.NewReader(cov), "cov", format.NewAllocator())
		if err != nil {
			t.Fatal(err)
		}
		if got, want := c.Meta["gpc:alpha"], strconv.FormatFloat(rows[0].Value, 'g', -1, 64); got != want {
			t.Errorf("gpc:alpha %q, want %q", got, want)
		}
		if got, want := c.Meta["gpc:beta"], strconv.FormatFloat(rows[1].Value, 'g', -1, 64); got != want {
			t.Errorf("gpc:beta %q, want %q", got, want)
		}
	}
}

// TestFitARDFeatures checks that the ard kernel's length scales are
// matched to the training file's features by name, whatever the table's
// row order.
func TestFitARDFeatures(t *testing.T) {
	hyper := "kernel,name,feature,value\nard,beta,,3\nard,alpha,b,5\nard,alpha,a,2\n"
	cov := runCLI(t, Kernel, cliCase{args: []string{"--train", "testdata/tiny-train.csv", "--label", "sex", "--positive", "M", "--id", "name", "--hyper", "-"}, stdin: []byte(hyper)})
	c, err := format.ReadCovariance(bytes.NewReader(cov), "cov", format.NewAllocator())
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Meta["gpc:alpha"]; got != "2,5" || c.Meta["gpc:kernel"] != "ard" || c.Meta["gpc:beta"] != "3" {
		t.Errorf("kernel %q alpha %q beta %q, want ard 2,5 3", c.Meta["gpc:kernel"], got, c.Meta["gpc:beta"])
	}
	if !strings.Contains(c.Meta["gpc:features"], "a") {
		t.Errorf("features %q", c.Meta["gpc:features"])
	}
}

// TestFitDefaultPrior checks gpc-fit's default prior: none for rbf (the
// log_prior column 0, gpc:prior_sd 0), a normal of sd 3 on each
// log-hyperparameter around the start for ard, whose log density at the
// fitted values is the log_prior column, and none for ard with
// --prior-sd 0 (type-II maximum likelihood, a higher log ML).
func TestFitDefaultPrior(t *testing.T) {
	t.Parallel()
	read := func(args ...string) (format.HyperFit, []format.HyperRow, map[string]string) {
		return readFit(t, runCLI(t, Fit, cliCase{args: append(append([]string{}, fitArgs...), args...)}))
	}
	if hf, _, meta := read(); hf.LogPrior != 0 || meta["gpc:prior_sd"] != "0" {
		t.Errorf("rbf: log_prior %v, gpc:prior_sd %q, want no prior", hf.LogPrior, meta["gpc:prior_sd"])
	}
	const alpha, beta, sd = 3.0, 10.0, 3.0
	ard := []string{"--kernel", "ard", "--alpha", "3", "--beta", "10"}
	hf, rows, meta := read(ard...)
	if meta["gpc:prior_sd"] != "3" {
		t.Errorf("ard: gpc:prior_sd %q, want 3", meta["gpc:prior_sd"])
	}
	want := 0.0
	for _, r := range rows {
		mu := math.Log(alpha)
		if r.Name == "beta" {
			mu = math.Log(beta)
		}
		z := (math.Log(r.Value) - mu) / sd
		want -= 0.5*z*z + math.Log(sd) + 0.5*math.Log(2*math.Pi)
	}
	// The column is written in full precision: only rounding differs.
	if math.Abs(hf.LogPrior-want) > 1e-9*math.Abs(want) {
		t.Errorf("ard: log_prior %v, want %v from the fitted values", hf.LogPrior, want)
	}
	// By the likelihood alone some of crabs' length scales run off (a
	// warning on standard error, which --quiet drops).
	ml, mlRows, meta0 := read(append(ard, "--prior-sd", "0", "--quiet")...)
	if ml.LogPrior != 0 || meta0["gpc:prior_sd"] != "0" {
		t.Errorf("ard --prior-sd 0: log_prior %v, gpc:prior_sd %q, want no prior", ml.LogPrior, meta0["gpc:prior_sd"])
	}
	// The maximum likelihood fit has the higher log ML, the MAP fit the
	// higher log posterior (within 3 combined standard errors).
	tol := 3 * math.Hypot(hf.SELogML, ml.SELogML)
	if !(ml.LogML > hf.LogML-tol) {
		t.Errorf("ard: log ML %v without the prior, %v with it", ml.LogML, hf.LogML)
	}
	// The prior's log density at the ML fit.
	var mlPrior float64
	for _, r := range mlRows {
		mu := math.Log(alpha)
		if r.Name == "beta" {
			mu = math.Log(beta)
		}
		z := (math.Log(r.Value) - mu) / sd
		mlPrior -= 0.5*z*z + math.Log(sd) + 0.5*math.Log(2*math.Pi)
	}
	if !(hf.LogML+hf.LogPrior > ml.LogML+mlPrior-tol) {
		t.Errorf("ard: log posterior %v with the prior, %v at the ML fit", hf.LogML+hf.LogPrior, ml.LogML+mlPrior)
	}
}

// irisArgs are iris's training features for gpc-fit and gpc-kernel.
var irisArgs = []string{"--train", "../../examples/iris/train.csv", "--label", "species", "--id", "id", "--standardize"}

// readFit reads gpc-fit's output: the fit, its rows and its metadata.
func readFit(t *testing.T, out []byte) (format.HyperFit, []format.HyperRow, map[string]string) {
	t.Helper()
	f, err := format.ReadFrame(bytes.NewReader(out), "fit.arrows", format.NewAllocator())
	if err != nil {
		t.Fatal(err)
	}
	hf, rows, err := format.ReadHyper(f)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := format.StreamMeta(bytes.NewReader(out), "fit.arrows", format.NewAllocator())
	if err != nil {
		t.Fatal(err)
	}
	return hf, rows, meta
}

// TestFitMulticlass fits iris's three classes: one kernel shared by the
// classes (two rows, no class), and one per class (--per-class: six rows,
// each naming its class), each read by gpc-kernel --hyper into the
// multi-class covariance's metadata; the start is the data's, said in
// gpc:start; and the output does not depend on the thread count.
func TestFitMulticlass(t *testing.T) {
	t.Parallel()
	fast := []string{"--samples", "400", "--final-samples", "800"}
	shared := runCLI(t, Fit, cliCase{args: append(append(append([]string{}, irisArgs...), fast...), "--threads", "1")})
	if again := runCLI(t, Fit, cliCase{args: append(append(append([]string{}, irisArgs...), fast...), "--threads", "2")}); !bytes.Equal(shared, again) {
		t.Errorf("gpc-fit on iris: --threads 1 and 2 differ")
	}
	hf, rows, meta := readFit(t, shared)
	if len(rows) != 2 || rows[0].Class != "" || meta[format.KeyClasses] == "" || !strings.Contains(meta["gpc:start"], "the data's start") {
		t.Fatalf("shared: rows %+v, classes %q, start %q", rows, meta[format.KeyClasses], meta["gpc:start"])
	}
	// The grid's best point in docs/multiclass.md had -17.9 (alpha 4,
	// beta 1024); the fit is at least as high, within its noise.
	if !(hf.LogML > -18.2) {
		t.Errorf("shared: log ML %v (se %v)", hf.LogML, hf.SELogML)
	}
	cov := runCLI(t, Kernel, cliCase{args: append(append([]string{}, irisArgs...), "--hyper", "-"), stdin: shared})
	c, err := format.ReadCovariance(bytes.NewReader(cov), "cov", format.NewAllocator())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Meta["gpc:alpha"], strconv.FormatFloat(rows[0].Value, 'g', -1, 64); got != want || c.N != 150 {
		t.Errorf("gpc-kernel --hyper: gpc:alpha %q (want %q), %d variables", got, want, c.N)
	}

	// Per class, versicolor's latent function vanishes (its beta runs
	// off to the box's lower edge): the other two carry the differences.
	per := runCLI(t, Fit, cliCase{args: append(append(append([]string{}, irisArgs...), fast...), "--per-class"), stderr: "ran off to the edge of their box"})
	_, rows, _ = readFit(t, per)
	if len(rows) != 6 {
		t.Fatalf("--per-class: %d rows", len(rows))
	}
	var alphas, betas []string
	for _, r := range rows {
		if r.Class == "" {
			t.Errorf("--per-class: a row without its class: %+v", r)
		}
		v := strconv.FormatFloat(r.Value, 'g', -1, 64)
		if r.Name == "alpha" {
			alphas = append(alphas, v)
		} else {
			betas = append(betas, v)
		}
	}
	cov = runCLI(t, Kernel, cliCase{args: append(append([]string{}, irisArgs...), "--hyper", "-"), stdin: per})
	if c, err = format.ReadCovariance(bytes.NewReader(cov), "cov", format.NewAllocator()); err != nil {
		t.Fatal(err)
	}
	if got, want := c.Meta["gpc:class_alpha"], strings.Join(alphas, ";"); got != want {
		t.Errorf("--per-class: gpc:class_alpha %q, want %q", got, want)
	}
	if got, want := c.Meta["gpc:class_beta"], strings.Join(betas, ","); got != want {
		t.Errorf("--per-class: gpc:class_beta %q, want %q", got, want)
	}
}

// TestFitRestarts checks --restarts: each start and its optimum in
// gpc:restarts, the first being the start, one marked best; the same
// bytes for 1 and 2 threads.
func TestFitRestarts(t *testing.T) {
	t.Parallel()
	args := append(append([]string{}, fitArgs...), "--restarts", "2")
	out := runCLI(t, Fit, cliCase{args: append(append([]string{}, args...), "--threads", "1")})
	if again := runCLI(t, Fit, cliCase{args: append(append([]string{}, args...), "--threads", "2")}); !bytes.Equal(out, again) {
		t.Errorf("--restarts: --threads 1 and 2 differ")
	}
	_, _, meta := readFit(t, out)
	r := meta["gpc:restarts"]
	if strings.Count(r, "start ") != 3 || strings.Count(r, "(best)") != 1 || !strings.HasPrefix(r, "start 0") {
		t.Errorf("gpc:restarts %q", r)
	}
	if !strings.Contains(meta["gpc:start"], "the data's start") {
		t.Errorf("gpc:start %q", meta["gpc:start"])
	}
}
