package cli

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gpc-mc/gpc/bench"
	"github.com/gpc-mc/gpc/format"
)

// tiny is the small labelled data set of testdata: string labels, an id
// column, test columns in another order, test labels partly missing.
var tiny = []string{"--train", "testdata/tiny-train.csv", "--test", "testdata/tiny-test.csv", "--label", "sex", "--positive", "M", "--id", "name"}

// pipeline runs gpc-kernel | gpc-train | gpc-predict in process and returns
// the three streams.
func pipeline(t *testing.T, kernel, train, predict []string) (cov, cloud, post []byte) {
	t.Helper()
	cov = runCLI(t, Kernel, cliCase{args: kernel})
	cloud = runCLI(t, Train, cliCase{args: train, stdin: cov})
	post = runCLI(t, Predict, cliCase{args: predict, stdin: cloud})
	return cov, cloud, post
}

// readPosteriors parses gpc-predict's CSV output.
func readPosteriors(t *testing.T, out []byte) (p, se []float64, ids, labels, ys []string) {
	t.Helper()
	recs, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(recs[0], ",") != "id,p,se,label,y" {
		t.Fatalf("header %v", recs[0])
	}
	for _, r := range recs[1:] {
		pv, _ := strconv.ParseFloat(r[1], 64)
		sv, _ := strconv.ParseFloat(r[2], 64)
		p, se = append(p, pv), append(se, sv)
		ids, labels, ys = append(ids, r[0]), append(labels, r[3]), append(ys, r[4])
	}
	return p, se, ids, labels, ys
}

// trainSummary returns gpc-train's log_ml and se_log_ml for a covariance.
func trainSummary(t *testing.T, cov []byte, args ...string) (logML, se float64) {
	t.Helper()
	out := runCLI(t, Train, cliCase{args: append([]string{"--format", "csv"}, args...), stdin: cov})
	rec := strings.Split(strings.Split(string(out), "\n")[1], ",")
	logML, _ = strconv.ParseFloat(rec[0], 64)
	se, _ = strconv.ParseFloat(rec[1], 64)
	return logML, se
}

// TestPipelineExperiment2 runs the pipeline on the paper's Experiment 2
// (problem 1: linear kernel, one feature) and checks the log marginal
// likelihood and every posterior against the exact one-dimensional
// integrals, within kSE of their standard errors.
func TestPipelineExperiment2(t *testing.T) {
	t.Parallel()
	prob := bench.Exp2Problems[0]
	d := prob.Generate(3)
	dir := t.TempDir()
	write := func(name string, x, y []float64) string {
		var b strings.Builder
		b.WriteString("x,y\n")
		for i := range x {
			fmt.Fprintf(&b, "%s,%g\n", strconv.FormatFloat(x[i], 'g', -1, 64), y[i])
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	testY := make([]float64, prob.NTest)
	for i := range testY {
		testY[i] = 1
	}
	trainCSV := write("train.csv", d.X, d.Y)
	testCSV := write("test.csv", d.XTest, testY)
	kernel := []string{"--kernel", "linear", "--beta", "1", "--train", trainCSV, "--test", testCSV}
	cov, _, post := pipeline(t, kernel, []string{"--samples", "10000", "--seed", "5"}, []string{"--format", "csv"})
	logML, se := trainSummary(t, cov, "--samples", "10000", "--seed", "5")
	if math.Abs(logML-d.ExactLogML) > kSE*se {
		t.Errorf("log ML %v, exact %v, SE %v", logML, d.ExactLogML, se)
	}
	p, pse, _, _, _ := readPosteriors(t, post)
	if len(p) != prob.NTest {
		t.Fatalf("%d posteriors for %d test rows", len(p), prob.NTest)
	}
	for j := range p {
		if math.Abs(p[j]-d.ExactPosterior[j]) > kSE*pse[j]+1e-12 {
			t.Errorf("test row %d: p %v, exact %v, SE %v", j, p[j], d.ExactPosterior[j], pse[j])
		}
	}
}

// kSE is how many standard errors an estimate may be from the exact value
// (the seeds are fixed, so the test cannot flake).
const kSE = 4

// TestPipelineLimits: as alpha -> 0 (or beta -> 0) the latent values are
// independent of each other and of the test patterns, so L = 2^-N and
// every posterior is 1/2 (paper, section 3.3), exactly.
func TestPipelineLimits(t *testing.T) {
	t.Parallel()
	for _, k := range [][]string{{"--alpha", "1e-9"}, {"--beta", "0"}} {
		kernel := append(append([]string{}, tiny...), k...)
		cov, _, post := pipeline(t, kernel, []string{"--samples", "400"}, []string{"--format", "csv"})
		logML, _ := trainSummary(t, cov, "--samples", "400")
		if want := -8 * math.Ln2; math.Abs(logML-want) > 1e-12 {
			t.Errorf("%v: log ML %v, want %v", k, logML, want)
		}
		p, _, _, _, _ := readPosteriors(t, post)
		for j, v := range p {
			if math.Abs(v-0.5) > 1e-12 {
				t.Errorf("%v: test row %d: p %v, want 1/2", k, j, v)
			}
		}
	}
}

// TestPipelineGolden pins the three streams of a small run as text dumps,
// and checks the labels, ids and metadata they carry.
func TestPipelineGolden(t *testing.T) {
	t.Parallel()
	kernel := append(append([]string{}, tiny...), "--alpha", "1.5", "--beta", "2", "--standardize")
	cov, cloud, post := pipeline(t, kernel, []string{"--samples", "32", "--groups", "4"}, nil)
	for _, g := range []struct {
		name string
		data []byte
	}{{"pipeline-covariance", cov}, {"pipeline-cloud", cloud}, {"pipeline-posteriors", post}} {
		checkGolden(t, g.name, g.data)
	}
	csvPost := runCLI(t, Predict, cliCase{args: []string{"--format", "csv"}, stdin: cloud})
	p, _, ids, labels, ys := readPosteriors(t, csvPost)
	if strings.Join(ids, ",") != "t1,t2,t3,t4" || strings.Join(ys, ",") != "F,M,," {
		t.Errorf("ids %v, true labels %v", ids, ys)
	}
	for j := range p {
		if want := map[bool]string{true: "M", false: "F"}[p[j] >= 0.5]; labels[j] != want {
			t.Errorf("row %d: p %v labelled %q", j, p[j], labels[j])
		}
	}
}

func checkGolden(t *testing.T, name string, data []byte) {
	t.Helper()
	var dump bytes.Buffer
	if err := format.Dump(&dump, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, dump.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dump.Bytes(), want) {
		t.Errorf("%s differs from %s (go test -update, then review the diff)", name, path)
	}
}

// TestSavedCloud: a cloud saved and used later with --cloud gives the same
// posteriors, byte for byte, as the one-pass pipeline; a covariance whose
// train block differs is refused.
func TestSavedCloud(t *testing.T) {
	t.Parallel()
	kernel := append(append([]string{}, tiny...), "--alpha", "1.5")
	cov, cloud, onePass := pipeline(t, kernel, []string{"--samples", "2000"}, nil)
	dir := t.TempDir()
	saved := filepath.Join(dir, "cloud.arrows")
	if err := os.WriteFile(saved, cloud, 0o644); err != nil {
		t.Fatal(err)
	}
	later := runCLI(t, Predict, cliCase{args: []string{"--cloud", saved}, stdin: cov})
	if !bytes.Equal(later, onePass) {
		t.Error("posteriors from the saved cloud differ from the one-pass pipeline's")
	}
	other := runCLI(t, Kernel, cliCase{args: append(append([]string{}, tiny...), "--alpha", "2")})
	runCLI(t, Predict, cliCase{args: []string{"--cloud", saved}, stdin: other, code: ExitData, stderr: "is not the one"})
}

// TestPipelineThreads: byte-identical streams for any --threads.
func TestPipelineThreads(t *testing.T) {
	kernel := append(append([]string{}, tiny...), "--alpha", "1.5")
	var first []byte
	for _, th := range []string{"1", "2", "8"} {
		_, cloud, post := pipeline(t, append(kernel, "--threads", th), []string{"--samples", "3000", "--threads", th}, []string{"--threads", th})
		out := append(cloud, post...)
		if first == nil {
			first = out
		} else if !bytes.Equal(first, out) {
			t.Errorf("--threads %s: output differs from --threads 1", th)
		}
	}
}

// TestPipelinePipes runs the built binaries through real pipes and checks
// that they produce what the in-process runners produce.
func TestPipelinePipes(t *testing.T) {
	bin := tools(t)
	t.Parallel()
	kernel := append(append([]string{}, tiny...), "--alpha", "1.5")
	_, _, want := pipeline(t, kernel, []string{"--samples", "2000"}, nil)
	k := exec.Command(filepath.Join(bin, "gpc-kernel"), kernel...)
	tr := exec.Command(filepath.Join(bin, "gpc-train"), "--samples", "2000")
	pr := exec.Command(filepath.Join(bin, "gpc-predict"))
	var err error
	if tr.Stdin, err = k.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	if pr.Stdin, err = tr.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	var got, stderr bytes.Buffer
	pr.Stdout = &got
	for _, c := range []*exec.Cmd{k, tr, pr} {
		c.Stderr = &stderr
		c.Dir = "."
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []*exec.Cmd{k, tr, pr} {
		if err := c.Wait(); err != nil {
			t.Fatalf("%s: %v\n%s", c.Path, err, stderr.String())
		}
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Error("the piped binaries' output differs from the in-process pipeline's")
	}
}

// TestPredictStreamAndHeld: gpc-predict gives the same posteriors, bit for
// bit, whether it predicts the test rows as the particles stream past (a
// cloud with its test rows first; --cloud with test rows that fit ahead)
// or holds the cloud (a gpc.cloud/1 stream, written by gpc-train 0.1.0
// before the test rows moved ahead of the particles; --cloud with more
// test rows than fit ahead), soft and hard. The gpc.cloud/1 stream carries
// no factor: gpc-predict prepares it again, with EP's own sites as its
// writer did (core.PrepareEPUnwidened), and its posteriors are those that
// gpc-predict gave before the proposal's sites were widened
// (testdata/cloud-v1-*.golden, written by ee6dcb8's gpc-predict, which
// gave the same bits from gpc-train's cloud of the same problem).
func TestPredictStreamAndHeld(t *testing.T) {
	t.Parallel()
	v1, err := os.ReadFile("testdata/cloud-v1.arrows") // --samples 320 --groups 4
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	v1File := filepath.Join(dir, "cloud-v1.arrows")
	if err := os.WriteFile(v1File, v1, 0o644); err != nil {
		t.Fatal(err)
	}
	cov := runCLI(t, Kernel, cliCase{args: append(append([]string{}, tiny...), "--alpha", "1.5")})
	v3 := runCLI(t, Train, cliCase{args: []string{"--samples", "320", "--groups", "4"}, stdin: cov})
	cr, err := format.OpenCloud(bytes.NewReader(v3), "v3", format.NewAllocator())
	if err != nil || !cr.TestsFirst() {
		t.Fatalf("gpc-train's cloud of 4 test rows: tests first %v, %v", cr != nil && cr.TestsFirst(), err)
	}
	cr.Close()
	v3File := filepath.Join(dir, "cloud-v3.arrows")
	if err := os.WriteFile(v3File, v3, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, count := range []string{"soft", "hard"} {
		args := []string{"--format", "csv", "--count", count, "--threads", "3"}
		golden, err := os.ReadFile("testdata/cloud-v1-" + count + ".golden")
		if err != nil {
			t.Fatal(err)
		}
		want := runCLI(t, Predict, cliCase{args: args, stdin: v1}) // held
		if !bytes.Equal(want, golden) {
			t.Errorf("v1 cloud, held, %s count:\n%s\nwant (testdata/cloud-v1-%s.golden):\n%s", count, want, count, golden)
		}
		want3 := runCLI(t, Predict, cliCase{args: args, stdin: v3})
		for _, c := range []struct {
			name  string
			args  []string
			stdin []byte
			want  []byte
		}{
			{"--cloud v1, streamed", []string{"--cloud", v1File}, cov, want},
			{"v1 cloud, one thread", []string{"--threads", "1"}, v1, want},
			{"v3 cloud, batches of 1", []string{"--batch-size", "1"}, v3, want3},
			{"v3 cloud, one thread", []string{"--threads", "1"}, v3, want3},
			{"--cloud v3, streamed", []string{"--cloud", v3File}, cov, want3},
		} {
			if got := runCLI(t, Predict, cliCase{args: append(append([]string{}, args...), c.args...), stdin: c.stdin}); !bytes.Equal(got, c.want) {
				t.Errorf("%s, %s count:\n%s\nwant:\n%s", c.name, count, got, c.want)
			}
		}
		// 200 test rows take 200 x 192 bytes (testRowBytes) ahead: under
		// a 30 kB limit they do not fit, the cloud (320 x 8 x 8 bytes)
		// does, and is held.
		cov200 := runCLI(t, Kernel, cliCase{args: []string{"--train", "testdata/tiny-train.csv", "--test", manyTests(t, dir, 200), "--label", "sex", "--positive", "M", "--id", "name", "--alpha", "1.5"}})
		streamed := runCLI(t, Predict, cliCase{args: append(args, "--cloud", v1File), stdin: cov200})
		held := runCLI(t, Predict, cliCase{args: append(args, "--cloud", v1File, "--max-memory", "30kB"), stdin: cov200})
		if !bytes.Equal(held, streamed) || bytes.Count(held, []byte("\n")) != 201 {
			t.Errorf("%s count, 200 test rows: %d lines held, %d streamed, or they differ", count, bytes.Count(held, []byte("\n")), bytes.Count(streamed, []byte("\n")))
		}
		runCLI(t, Predict, cliCase{args: append(args, "--cloud", v1File, "--max-memory", "10kB"), stdin: cov200, code: ExitUsage, stderr: "--max-memory"})
	}
}

// manyTests writes a test file of k rows (features b and a, as tiny's) in
// dir and returns its name.
func manyTests(t *testing.T, dir string, k int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("name,b,a\n")
	for i := range k {
		fmt.Fprintf(&b, "t%d,%g,%g\n", i, float64(i%97)/40-1, float64(i%89)/30-1)
	}
	name := filepath.Join(dir, fmt.Sprintf("test-%d.csv", k))
	if err := os.WriteFile(name, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

// TestTrainTestsAfter: test rows beyond what fits ahead of the particles
// (aheadBytes: 1 MiB for a small cloud) follow them, and gpc-predict
// holds that cloud: its posteriors are those of the same cloud's test rows
// predicted with --cloud, streamed.
func TestTrainTestsAfter(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("6000 test rows")
	}
	testFile := manyTests(t, t.TempDir(), 6000) // 6000 x 192 bytes: more than 1 MiB
	cov := runCLI(t, Kernel, cliCase{args: []string{"--train", "testdata/tiny-train.csv", "--test", testFile, "--label", "sex", "--positive", "M", "--id", "name", "--alpha", "1.5"}})
	cloud := runCLI(t, Train, cliCase{args: []string{"--samples", "320", "--groups", "4"}, stdin: cov})
	cr, err := format.OpenCloud(bytes.NewReader(cloud), "cloud", format.NewAllocator())
	if err != nil || cr.TestsFirst() {
		t.Fatalf("a cloud with 6000 test rows: tests first %v, %v", cr != nil && cr.TestsFirst(), err)
	}
	cr.Close()
	cloudFile := filepath.Join(filepath.Dir(testFile), "cloud.arrows")
	if err := os.WriteFile(cloudFile, cloud, 0o644); err != nil {
		t.Fatal(err)
	}
	held := runCLI(t, Predict, cliCase{args: []string{"--format", "csv"}, stdin: cloud})
	streamed := runCLI(t, Predict, cliCase{args: []string{"--format", "csv", "--cloud", cloudFile}, stdin: cov})
	if !bytes.Equal(held, streamed) || bytes.Count(held, []byte("\n")) != 6001 {
		t.Errorf("6000 test rows after the particles: %d lines held, %d streamed, or they differ", bytes.Count(held, []byte("\n")), bytes.Count(streamed, []byte("\n")))
	}
}
