package cli

import (
	"bytes"
	"encoding/csv"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const crabsTrain = "../../examples/crabs/train.csv"
const crabsTest = "../../examples/crabs/test.csv"

// tuneFast are flags that keep gpc-tune's test runs short.
var tuneFast = []string{"--train", crabsTrain, "--standardize", "--alpha", "6,7", "--beta", "100:200:3", "--samples", "400", "--exploit", "2", "--exploit-samples", "800"}

func TestTuneCLI(t *testing.T) {
	t.Parallel()
	tiny := "testdata/tiny-train.csv"
	for _, c := range []cliCase{
		{name: "help", args: []string{"--help"}},
		{name: "missing file", args: []string{"--train", "testdata/no-such.csv", "--beta", "1,2"}, code: ExitIO, stderr: "no-such.csv"},
		{name: "no axis", args: []string{"--train", tiny, "--label", "sex", "--positive", "M", "--id", "name", "--alpha", "2", "--beta", "3"}, code: ExitUsage, stderr: "nothing to tune"},
		{name: "bad range", args: []string{"--train", tiny, "--beta", "1:10"}, code: ExitUsage, stderr: "LO:HI:K"},
		{name: "range count", args: []string{"--train", tiny, "--beta", "1:10:1"}, code: ExitUsage, stderr: "at least 2"},
		{name: "range order", args: []string{"--train", tiny, "--beta", "10:1:3"}, code: ExitUsage, stderr: "0 < LO < HI"},
		{name: "not a number", args: []string{"--train", tiny, "--beta", "1,x"}, code: ExitUsage, stderr: `"x" is not a finite number`},
		{name: "zero in grid", args: []string{"--train", tiny, "--beta", "0,1"}, code: ExitUsage, stderr: "must be > 0"},
		{name: "duplicate", args: []string{"--train", tiny, "--beta", "1,1"}, code: ExitUsage, stderr: "listed twice"},
		{name: "linear alpha", args: []string{"--train", tiny, "--kernel", "linear", "--alpha", "2", "--beta", "1,2"}, code: ExitUsage, stderr: "no length scale"},
		{name: "ard count", args: []string{"--train", tiny, "--label", "sex", "--positive", "M", "--id", "name", "--kernel", "ard", "--alpha", "1", "--beta", "1,2"}, code: ExitUsage, stderr: "one --alpha per feature: 1 given, the training file has 2"},
		{name: "zero samples", args: []string{"--train", tiny, "--beta", "1,2", "--samples", "0"}, code: ExitUsage, stderr: "--samples 0"},
		{name: "labels", args: []string{"--train", tiny, "--beta", "1,2"}, code: ExitData, stderr: `no label column "y"`},
		{name: "unknown label", args: []string{"--train", tiny, "--label", "sex", "--positive", "X", "--id", "name", "--beta", "1,2"}, code: ExitData, stderr: `--positive "X" is not a label value`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			runCLI(t, Tune, c)
		})
	}
}

// TestTuneOutput runs gpc-tune on crabs: the table has one grid row per
// point, the exploit rows, the optimum, and neighbouring differences whose
// standard errors are below the values'; the output does not depend on
// --threads.
func TestTuneOutput(t *testing.T) {
	t.Parallel()
	args := append(append([]string{}, tuneFast...), "--format", "csv", "--threads", "1")
	// Crabs' likelihood rises towards large alpha and beta (docs/tuning.md).
	edge := "the maximum is at the edge of the grid along alpha"
	out := runCLI(t, Tune, cliCase{args: args, stderr: edge})
	args2 := append(append([]string{}, tuneFast...), "--format", "csv", "--threads", "2")
	if out2 := runCLI(t, Tune, cliCase{args: args2, stderr: edge}); !bytes.Equal(out, out2) {
		t.Errorf("--threads 1 and 2 differ:\n%s\n%s", out, out2)
	}
	recs, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	head := strings.Join(recs[0], ",")
	if want := "stage,point,alpha,beta,log_ml,se_log_ml,se_diff_alpha,se_diff_beta,samples,mc_se_log_alpha,mc_se_log_beta,width_log_alpha,width_log_beta"; head != want {
		t.Fatalf("header %s, want %s", head, want)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	num := func(r []string, name string) float64 {
		v, err := strconv.ParseFloat(r[col[name]], 64)
		if err != nil {
			return math.NaN()
		}
		return v
	}
	stages := map[string]int{}
	for i, r := range recs[1:] {
		stages[r[col["stage"]]]++
		if r[col["stage"]] != "grid" {
			continue
		}
		// The grid's rows come in point order, beta fastest (3 values).
		for a, stride := range map[string]int{"se_diff_alpha": 3, "se_diff_beta": 1} {
			d := num(r, a)
			if math.IsNaN(d) {
				continue
			}
			indep := math.Hypot(num(r, "se_log_ml"), num(recs[1+i+stride], "se_log_ml"))
			if !(d < indep) {
				t.Errorf("point %s: %s %v not below the independent %v", r[col["point"]], a, d, indep)
			}
		}
	}
	if stages["grid"] != 6 || stages["exploit"] != 2 || stages["optimum"] != 1 {
		t.Errorf("stages %v, want 6 grid, 2 exploit, 1 optimum", stages)
	}
}

func TestMCMCCLI(t *testing.T) {
	t.Parallel()
	tiny := "testdata/tiny-train.csv"
	for _, c := range []cliCase{
		{name: "help", args: []string{"--help"}},
		{name: "posteriors without test", args: []string{"--train", tiny, "--posteriors", "x.csv"}, code: ExitUsage, stderr: "--posteriors needs --test"},
		{name: "test without posteriors", args: []string{"--train", tiny, "--test", tiny}, code: ExitUsage, stderr: "--test needs --posteriors"},
		{name: "bad prior", args: []string{"--train", tiny, "--prior-sd", "0"}, code: ExitUsage, stderr: "--prior-sd 0"},
		{name: "bad thin", args: []string{"--train", tiny, "--thin", "0"}, code: ExitUsage, stderr: "--thin 0"},
		{name: "labels", args: []string{"--train", tiny}, code: ExitData, stderr: `no label column "y"`},
		{name: "missing file", args: []string{"--train", "testdata/no-such.csv"}, code: ExitIO, stderr: "no-such.csv"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			runCLI(t, MCMC, c)
		})
	}
}

// TestMCMCOutput runs a short chain on crabs with test posteriors: the
// samples do not depend on --threads, and the averaged posteriors classify
// the test crabs.
func TestMCMCOutput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := []string{"--train", crabsTrain, "--test", crabsTest, "--standardize", "--alpha", "4", "--beta", "10",
		"--iterations", "60", "--burn", "20", "--samples", "200", "--format", "csv"}
	a := runCLI(t, MCMC, cliCase{args: append(append([]string{}, base...), "--threads", "1", "--posteriors", dir+"/p1.csv")})
	b := runCLI(t, MCMC, cliCase{args: append(append([]string{}, base...), "--threads", "2", "--posteriors", dir+"/p2.csv")})
	if !bytes.Equal(a, b) {
		t.Errorf("--threads 1 and 2 differ")
	}
	p1, p2 := mustRead(t, dir+"/p1.csv"), mustRead(t, dir+"/p2.csv")
	if !bytes.Equal(p1, p2) {
		t.Errorf("posteriors differ between --threads 1 and 2")
	}
	recs, err := csv.NewReader(bytes.NewReader(p1)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if h := strings.Join(recs[0], ","); h != "id,p,se,label,y,sd_hyper" {
		t.Fatalf("header %s", h)
	}
	right := 0
	for _, r := range recs[1:] {
		if r[3] == r[4] {
			right++
		}
	}
	// gpc-train at alpha 4, beta 10 gets 99 of 100 right (README).
	if right < 95 {
		t.Errorf("%d of %d test crabs classified right", right, len(recs)-1)
	}
	samples, err := csv.NewReader(bytes.NewReader(a)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 61 || strings.Join(samples[0], ",") != "iteration,alpha,beta,log_ml,se_log_ml,accepted" {
		t.Errorf("%d sample rows, header %v", len(samples)-1, samples[0])
	}
}

// TestTuneMatchesTrain: gpc-tune estimates each point as gpc-train does
// (the same method chosen by the same pilots, the same preparation, EP's
// included, and the same random numbers): at the grid's middle point, where
// the method and the order are chosen, its log_ml is gpc-train's to the
// last digit, for the default (ep) and for met.
func TestTuneMatchesTrain(t *testing.T) {
	t.Parallel()
	for _, method := range []string{"auto", "met"} {
		tune := runCLI(t, Tune, cliCase{args: []string{"--train", crabsTrain, "--standardize", "--alpha", "4,8,16", "--beta", "10",
			"--samples", "400", "--exploit", "0", "--no-optimize", "--method", method, "--format", "csv"}})
		cov := runCLI(t, Kernel, cliCase{args: []string{"--train", crabsTrain, "--standardize", "--alpha", "8", "--beta", "10"}})
		train := runCLI(t, Train, cliCase{args: []string{"--samples", "400", "--method", method, "--format", "csv"}, stdin: cov})
		tr, err := csv.NewReader(bytes.NewReader(tune)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		rr, err := csv.NewReader(bytes.NewReader(train)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		// tune: stage,point,alpha,beta,log_ml,...; train: log_ml,se_log_ml,...,method
		if tr[2][2] != "8" || tr[2][4] != rr[1][0] || tr[2][5] != rr[1][1] {
			t.Errorf("--method %s: gpc-tune at alpha %s: log_ml %s ± %s, gpc-train %s ± %s", method, tr[2][2], tr[2][4], tr[2][5], rr[1][0], rr[1][1])
		}
	}
}

// TestTuneMulticlass runs gpc-tune on iris's three classes with the
// default grid, centred on the data's start: 5 x 5 points, its middle the
// start (gpc:reference), every estimate finite.
func TestTuneMulticlass(t *testing.T) {
	t.Parallel()
	out := runCLI(t, Tune, cliCase{args: []string{"--train", "../../examples/iris/train.csv", "--label", "species", "--id", "id", "--standardize",
		"--samples", "200", "--exploit", "0", "--no-optimize", "--format", "csv"}})
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 26 {
		t.Fatalf("%d lines, want a header and 25 grid points:\n%s", len(lines), out)
	}
	col := slices.Index(strings.Split(lines[0], ","), "log_ml")
	for _, l := range lines[1:] {
		if v, err := strconv.ParseFloat(strings.Split(l, ",")[col], 64); err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			t.Errorf("no estimate: %s", l)
		}
	}
}
