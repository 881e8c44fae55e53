package cli

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gpc-mc/gpc/core/gp"
	"github.com/gpc-mc/gpc/format"

	"gonum.org/v1/gonum/mat"
)

// vecchiaFitData writes n points of the two-class 2-D problem
// (bench/vecchia/twoclass's construction: the classes N((0.75, 0.75), I)
// and N((-0.75, -0.75), I)) with features rounded to 0.1 and the last
// sixth of the rows repeating earlier rows' features with labels of their
// own, so that there are ties, as real data have (at most 5n/6 distinct
// points); and as many test rows of the same problem.
func vecchiaFitData(t *testing.T, n int, seed uint64) (train, test string, x, y []float64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 37))
	dir := t.TempDir()
	write := func(name string, rows int, keep bool) string {
		var b strings.Builder
		b.WriteString("a,b,y\n")
		for i := range rows {
			s := float64(1 - 2*r.IntN(2))
			a, c := math.Round(10*(0.75*s+r.NormFloat64()))/10, math.Round(10*(0.75*s+r.NormFloat64()))/10
			if i >= rows-rows/6 {
				j := r.IntN(rows - rows/6)
				a, c = x[2*j], x[2*j+1]
			}
			if keep {
				x, y = append(x, a, c), append(y, s)
			}
			fmt.Fprintf(&b, "%g,%g,%g\n", a, c, s)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	train = write("train.csv", n, true)
	test = write("test.csv", n, false)
	return train, test, x, y
}

// probitDerivs returns log Phi(y f / s) and its first two derivatives in f.
func probitDerivs(f, y, s float64) (lp, g, w float64) {
	z := y * f / s
	p := 0.5 * math.Erfc(-z/math.Sqrt2)
	r := math.Exp(-z*z/2) / math.Sqrt(2*math.Pi) / p
	return math.Log(p), y * r / s, (r*r + z*r) / (s * s)
}

// denseLaplaceEvidence is the reference of the Vecchia fit with every
// earlier point a neighbour: Laplace's evidence of the dense model that
// the Vecchia model then is, the latent covariance k(x, x') + nugget where
// the features are equal (a repeated point shares its latent value, as on
// the Vecchia path) and the probit's noise 1 - nugget, by Rasmussen and
// Williams' Algorithm 3.1 (Newton in f with B = I + W^1/2 K W^1/2) and
// eq. 3.32.
func denseLaplaceEvidence(t *testing.T, k *gp.Kernel, x, y []float64, nugget float64) float64 {
	t.Helper()
	n, d := len(y), len(x)/len(y)
	sig := mat.NewSymDense(n, nil)
	for i := range n {
		for j := 0; j <= i; j++ {
			v := k.Eval(x[i*d:i*d+d], x[j*d:j*d+d])
			if x[i*d] == x[j*d] && x[i*d+1] == x[j*d+1] {
				v += nugget
			}
			sig.SetSym(i, j, v)
		}
	}
	s := math.Sqrt(1 - nugget)
	f := mat.NewVecDense(n, nil)
	a := mat.NewVecDense(n, nil)
	sw := make([]float64, n)
	var ch mat.Cholesky
	factor := func() float64 {
		ll := 0.0
		for i := range n {
			lp, _, w := probitDerivs(f.AtVec(i), y[i], s)
			ll += lp
			sw[i] = math.Sqrt(w)
		}
		b := mat.NewSymDense(n, nil)
		for i := range n {
			for j := 0; j <= i; j++ {
				v := sw[i] * sig.At(i, j) * sw[j]
				if i == j {
					v++
				}
				b.SetSym(i, j, v)
			}
		}
		if !ch.Factorize(b) {
			t.Fatal("dense Laplace: B is not positive definite")
		}
		return ll
	}
	obj := math.Inf(-1)
	for it := 0; ; it++ {
		if it == 100 {
			t.Fatal("dense Laplace: Newton did not converge")
		}
		factor()
		bv := mat.NewVecDense(n, nil)
		for i := range n {
			_, g, w := probitDerivs(f.AtVec(i), y[i], s)
			bv.SetVec(i, w*f.AtVec(i)+g)
		}
		var kb, c mat.VecDense
		kb.MulVec(sig, bv)
		for i := range n {
			kb.SetVec(i, sw[i]*kb.AtVec(i))
		}
		if err := ch.SolveVecTo(&c, &kb); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			a.SetVec(i, bv.AtVec(i)-sw[i]*c.AtVec(i))
		}
		f.MulVec(sig, a)
		ll := 0.0
		for i := range n {
			lp, _, _ := probitDerivs(f.AtVec(i), y[i], s)
			ll += lp
		}
		next := -mat.Dot(a, f)/2 + ll
		if math.Abs(next-obj) < 1e-14*math.Abs(next) {
			break
		}
		obj = next
	}
	ll := factor()
	return -mat.Dot(a, f)/2 + ll - ch.LogDet()/2
}

// TestFitVecchiaDense fits rbf on 300 points with ties, at most 250
// distinct, by gpc-fit --vecchia 254, the most neighbours the Vecchia path
// takes (a repeated point shares its latent value, so every point
// conditions on every earlier distinct point: the Vecchia model is the
// dense model, and its Laplace evidence the dense Laplace evidence,
// exactly) and
// checks that the fit reached the dense Laplace evidence's optimum: its
// log_ml is the dense evidence at the fitted hyperparameters, and
// Newton's step from there, by central differences of the dense evidence,
// gains no more than the search's own stopping rule leaves. The fitted
// kernel then runs through gpc-kernel --vecchia, gpc-train and
// gpc-predict.
func TestFitVecchiaDense(t *testing.T) {
	if raceEnabled && testing.Short() {
		t.Skip("the search at m = 254 takes three minutes under the race detector; -race -short leaves this accuracy check to the plain run (TestFitVecchiaThreads runs the same threaded evaluations under -race)")
	}
	t.Parallel()
	const n = 300
	train, test, x, y := vecchiaFitData(t, n, 1)
	const m = 254
	const ties = "training points repeat an earlier point's features"
	out := runCLI(t, Fit, cliCase{args: []string{"--train", train, "--vecchia", strconv.Itoa(m)}, stderr: ties})
	hf, rows, meta := readFit(t, out)
	if hf.Kernel != "rbf" || len(rows) != 2 || rows[0].Name != "alpha" || rows[1].Name != "beta" {
		t.Fatalf("fit %+v rows %+v", hf, rows)
	}
	for _, key := range []string{"gpc:evidence", format.KeyVecchiaM, format.KeyVecchiaOrder, "gpc:laplace_block"} {
		if meta[key] == "" {
			t.Errorf("no %s in the metadata", key)
		}
	}
	if !strings.HasPrefix(meta["gpc:evidence"], "vecchia-laplace") || meta[format.KeyVecchiaM] != strconv.Itoa(m) {
		t.Errorf("gpc:evidence %q, gpc:vecchia_m %q", meta["gpc:evidence"], meta[format.KeyVecchiaM])
	}
	if rep, _ := strconv.Atoi(meta[format.KeyVecchiaRepeat]); n-rep > m+1 {
		t.Fatalf("%s repeated points: %d distinct, more than m + 1 = %d", meta[format.KeyVecchiaRepeat], n-rep, m+1)
	}
	if !math.IsNaN(hf.SELogML) || !math.IsNaN(hf.EPLogZ) {
		t.Errorf("se_log_ml %v, ep_log_z %v: the Vecchia fit has neither", hf.SELogML, hf.EPLogZ)
	}
	const nugget = 1e-4
	lap := func(th []float64) float64 {
		return denseLaplaceEvidence(t, &gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{math.Exp(th[0])}, Beta: math.Exp(th[1])}, x, y, nugget)
	}
	th := []float64{math.Log(rows[0].Value), math.Log(rows[1].Value)}
	f0 := lap(th)
	// Both Newton iterations converge to 1e-10 or better; the latent
	// covariance's condition number (beta / nugget) limits the dense
	// computation's digits to about 1e-9 relative (core/vecchia's
	// lapTol).
	if math.Abs(f0-hf.LogML) > 1e-8*math.Abs(f0) {
		t.Errorf("log_ml %.12g, the dense Laplace evidence there %.12g", hf.LogML, f0)
	}
	// The gradient and the Hessian of the dense evidence at the fit in
	// the log-hyperparameters, by central differences of step h:
	// truncation h^2 |f'''| / 6 (about 1e-7 here) and rounding 1e-13 |f|
	// / h^2 in the Hessian.
	const h = 1e-3
	at := func(d0, d1 float64) float64 { return lap([]float64{th[0] + d0, th[1] + d1}) }
	fpp, fmm, fpm, fmp := at(h, h), at(-h, -h), at(h, -h), at(-h, h)
	f10, f01, fm0, f0m := at(h, 0), at(0, h), at(-h, 0), at(0, -h)
	g := []float64{(f10 - fm0) / (2 * h), (f01 - f0m) / (2 * h)}
	hs := mat.NewSymDense(2, []float64{
		-(f10 - 2*f0 + fm0) / (h * h), -(fpp - fpm - fmp + fmm) / (4 * h * h),
		-(fpp - fpm - fmp + fmm) / (4 * h * h), -(f01 - 2*f0 + f0m) / (h * h)})
	var ch mat.Cholesky
	if !ch.Factorize(hs) {
		t.Fatalf("the dense evidence is not concave at the fit: -Hessian %v", mat.Formatted(hs))
	}
	var step mat.VecDense
	if err := ch.SolveVecTo(&step, mat.NewVecDense(2, g)); err != nil {
		t.Fatal(err)
	}
	gain := mat.Dot(&step, mat.NewVecDense(2, g)) / 2
	// The search stops where an iteration gains less than 1e-8 relative
	// (fit's epFTol), or at a gradient norm of 1e-5 (epGTol): it may leave
	// that much, and its last iterations' gains shrink geometrically, so
	// the gain still to come is below a few times 1e-8 |f|.
	tol := 4e-8 * math.Abs(f0)
	t.Logf("alpha %.6g beta %.6g: log_ml %.10g, dense %.10g; dense gradient %.3g, Newton step %.3g gains %.3g (tolerance %.3g)",
		rows[0].Value, rows[1].Value, hf.LogML, f0, g, step.RawVector().Data, gain, tol)
	if gain > tol {
		t.Errorf("Newton's step %v on the dense evidence from the fit gains %.3g nats, more than %.3g", step.RawVector().Data, gain, tol)
	}

	// The fitted kernel through the Vecchia pipeline.
	model := runCLI(t, Kernel, cliCase{args: []string{"--hyper", "-", "--vecchia", "20", "--train", train, "--test", test}, stdin: out, stderr: ties})
	mm, err := format.StreamMeta(bytes.NewReader(model), "model", format.NewAllocator())
	if err != nil {
		t.Fatal(err)
	}
	if want := strconv.FormatFloat(rows[0].Value, 'g', -1, 64); mm["gpc:alpha"] != want {
		t.Errorf("gpc-kernel --hyper: gpc:alpha %q, want the fit's %q", mm["gpc:alpha"], want)
	}
	cloud := runCLI(t, Train, cliCase{args: []string{"--samples", "2000"}, stdin: model})
	post := runCLI(t, Predict, cliCase{args: []string{"--format", "csv"}, stdin: cloud})
	if lines := strings.Count(string(post), "\n"); lines != n+1 {
		t.Errorf("gpc-predict wrote %d lines, want %d test rows and a header", lines, n)
	}
}

// TestFitVecchiaThreads checks that gpc-fit --vecchia's output does not
// depend on the thread count, for rbf with restarts and for ard, whose
// ordering follows its length scales.
func TestFitVecchiaThreads(t *testing.T) {
	t.Parallel()
	train, _, _, _ := vecchiaFitData(t, 400, 2)
	for _, args := range [][]string{
		{"--train", train, "--vecchia", "10", "--restarts", "2", "--seed", "5"},
		{"--train", train, "--vecchia", "auto", "--kernel", "ard", "--standardize"},
	} {
		one := sameOnThreads(t, Fit, cliCase{args: append(args, "--quiet")})
		_, _, meta := readFit(t, one)
		if strings.Contains(strings.Join(args, " "), "--restarts") && strings.Count(meta["gpc:restarts"], "start ") != 3 {
			t.Errorf("gpc:restarts %q: want 3 starts", meta["gpc:restarts"])
		}
	}
}

// TestFitVecchiaClasses fits the shared kernel of iris's three species
// (75 training flowers, four features with ties) on the Vecchia path
// with every earlier point a neighbour: the table names the classes and
// the multinomial evidence, the search ended where the evidence's
// gradient (by central differences) vanishes, --threads 1 and 3 give the
// same bytes, and the fitted kernel runs through gpc-kernel --vecchia,
// gpc-train and gpc-predict's class table; --per-class is refused.
func TestFitVecchiaClasses(t *testing.T) {
	t.Parallel()
	train, test := "../../examples/iris/train.csv", "../../examples/iris/test.csv"
	args := []string{"--standardize", "--label", "species", "--id", "id", "--train", train, "--vecchia", "74", "--quiet"}
	out := sameOnThreads(t, Fit, cliCase{args: args})
	hf, rows, meta := readFit(t, out)
	if len(rows) != 2 || rows[0].Name != "alpha" || rows[1].Name != "beta" {
		t.Fatalf("rows %+v", rows)
	}
	if meta[format.KeyClasses] == "" || !strings.Contains(meta["gpc:evidence"], "multinomial probit classifier of 3 classes") {
		t.Errorf("gpc:classes %q, gpc:evidence %q", meta[format.KeyClasses], meta["gpc:evidence"])
	}
	for _, r := range rows {
		if r.Bound == "" && math.Abs(r.Grad) > 1e-3 {
			t.Errorf("%s %.6g: the gradient %.3g at the optimum is not small", r.Name, r.Value, r.Grad)
		}
	}
	if math.IsNaN(hf.LogML) || hf.LogML >= 0 || !math.IsNaN(hf.SELogML) {
		t.Errorf("log_ml %v, se_log_ml %v", hf.LogML, hf.SELogML)
	}
	model := runCLI(t, Kernel, cliCase{args: []string{"--hyper", "-", "--standardize", "--label", "species", "--id", "id", "--vecchia", "20", "--train", train, "--test", test}, stdin: out})
	cloud := runCLI(t, Train, cliCase{args: []string{"--samples", "2000", "--quiet"}, stdin: model})
	post := string(runCLI(t, Predict, cliCase{args: []string{"--format", "csv"}, stdin: cloud}))
	if !strings.HasPrefix(post, "id,p_setosa,p_versicolor,p_virginica,") || strings.Count(post, "\n") != 76 {
		t.Errorf("gpc-predict wrote %d lines: %.200q", strings.Count(post, "\n"), post)
	}
	runCLI(t, Fit, cliCase{args: append(args, "--per-class"), code: 80, stderr: "--per-class with --vecchia"})
}

// TestFitVecchiaExact runs gpc-fit --vecchia --vecchia-exact on tied
// data: the exact stage's final estimate is gpc-train's on the fitted
// kernel (the same particles and seed: the same bits), the Laplace stage's
// optimum and evidence are kept beside it, --threads 1 and 3 give the same
// bytes, and the flags that make no sense are refused.
func TestFitVecchiaExact(t *testing.T) {
	t.Parallel()
	train, test, _, _ := vecchiaFitData(t, 300, 4)
	args := []string{"--train", train, "--vecchia", "20", "--vecchia-exact", "--samples", "2000", "--seed", "3", "--quiet"}
	out := sameOnThreads(t, Fit, cliCase{args: args})
	hf, rows, meta := readFit(t, out)
	if !(hf.SELogML > 0) || math.IsNaN(hf.EPLogZ) || !strings.HasPrefix(meta["gpc:evidence"], "vecchia-exact") || meta["gpc:exact_gain"] == "" {
		t.Fatalf("se_log_ml %v, ep_log_z %v, gpc:evidence %q, gpc:exact_gain %q", hf.SELogML, hf.EPLogZ, meta["gpc:evidence"], meta["gpc:exact_gain"])
	}
	// Each hyperparameter's Monte Carlo gradient, its standard error and
	// the Laplace optimum's value, in the table's columns.
	csv := strings.Split(strings.TrimSpace(string(runCLI(t, Fit, cliCase{args: append(args, "--format", "csv")}))), "\n")
	if len(csv) != len(rows)+1 {
		t.Fatalf("csv: %q", csv)
	}
	head := strings.Split(csv[0], ",")
	for _, line := range csv[1:] {
		cell := map[string]float64{}
		for i, v := range strings.Split(line, ",") {
			cell[head[i]], _ = strconv.ParseFloat(v, 64)
		}
		if !(cell["se_grad"] > 0) || !(cell["ep_value"] > 0) || cell["grad"] == 0 || math.IsNaN(cell["grad"]) {
			t.Errorf("%s: grad %v se_grad %v ep_value %v", line, cell["grad"], cell["se_grad"], cell["ep_value"])
		}
	}
	// The final estimate: 4 x 2000 particles on seed 3 + 2 rounds.
	model := runCLI(t, Kernel, cliCase{args: []string{"--hyper", "-", "--vecchia", "20", "--train", train, "--test", test}, stdin: out, stderr: "repeat"})
	cloud := runCLI(t, Train, cliCase{args: []string{"--samples", "8000", "--seed", "5", "--quiet"}, stdin: model})
	post := runCLI(t, Predict, cliCase{stdin: cloud})
	cm, err := format.StreamMeta(bytes.NewReader(post), "posteriors", format.NewAllocator())
	if err != nil {
		t.Fatal(err)
	}
	if want := strconv.FormatFloat(hf.LogML, 'g', -1, 64); cm[format.KeyLogML] != want {
		t.Errorf("gpc-train's log ML on the fitted kernel %s, the fit's final estimate %s", cm[format.KeyLogML], want)
	}
	base := []string{"--train", train, "--vecchia", "20", "--quiet"}
	runCLI(t, Fit, cliCase{args: append(base, "--samples", "500"), code: 80, stderr: "--vecchia-exact"})
	runCLI(t, Fit, cliCase{args: append(base, "--vecchia-exact", "--no-ep"), code: 80, stderr: "--no-ep with --vecchia"})
	runCLI(t, Fit, cliCase{args: []string{"--train", train, "--vecchia-exact"}, code: 80, stderr: "--vecchia-exact without --vecchia"})
	iris := []string{"--standardize", "--label", "species", "--id", "id", "--train", "../../examples/iris/train.csv", "--vecchia", "20", "--vecchia-exact", "--quiet"}
	runCLI(t, Fit, cliCase{args: iris, code: 80, stderr: "built for two"})
}
