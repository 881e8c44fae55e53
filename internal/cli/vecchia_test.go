package cli

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gpc-mc/gpc/format"
)

// twoClassCSV is n points of the large-N issue's problem (two 2-D
// Gaussian classes), as CSV with columns x1, x2, y.
func twoClassCSV(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 0x1a26e))
	var b strings.Builder
	b.WriteString("x1,x2,y\n")
	for i := range n {
		s := 1.0
		if i%2 == 1 {
			s = -1
		}
		fmt.Fprintf(&b, "%v,%v,%v\n", s*0.75+r.NormFloat64(), s*0.75+r.NormFloat64(), s)
	}
	return []byte(b.String())
}

// vecchiaFiles writes a training and a test set of the two-class problem
// and returns their paths.
func vecchiaFiles(t *testing.T, n, tests int) (train, test string) {
	t.Helper()
	dir := t.TempDir()
	train, test = filepath.Join(dir, "train.csv"), filepath.Join(dir, "test.csv")
	if err := os.WriteFile(train, twoClassCSV(n, 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(test, twoClassCSV(tests, 2), 0o644); err != nil {
		t.Fatal(err)
	}
	return train, test
}

// TestVecchiaPipeline runs gpc-kernel --vecchia | gpc-train | gpc-predict
// and gpc-orthant on a Vecchia stream: the outputs do not depend on the
// thread count, byte for byte; gpc-orthant's estimate is gpc-train's; the
// posteriors are probabilities with standard errors; and the log marginal
// likelihood is within a nat of the dense model's (m = 20 on 300 points).
func TestVecchiaPipeline(t *testing.T) {
	train, test := vecchiaFiles(t, 300, 40)
	model := runCLI(t, Kernel, cliCase{args: []string{"--alpha", "1", "--beta", "10", "--vecchia", "20", "--train", train, "--test", test}})
	if schema, _, _ := format.Sniff(bytes.NewReader(model), "model"); schema != format.SchemaVecchia {
		t.Fatalf("gpc-kernel --vecchia wrote %q", schema)
	}
	cloud := runCLI(t, Train, cliCase{args: []string{"--samples", "2000", "--threads", "1"}, stdin: model})
	if c2 := runCLI(t, Train, cliCase{args: []string{"--samples", "2000", "--threads", "2"}, stdin: model}); !bytes.Equal(cloud, c2) {
		t.Errorf("the cloud differs between --threads 1 and 2")
	}
	post := runCLI(t, Predict, cliCase{args: []string{"--format", "csv"}, stdin: cloud})
	lines := strings.Split(strings.TrimSpace(string(post)), "\n")
	if len(lines) != 41 || lines[0] != "id,p,se,label,y" {
		t.Fatalf("posteriors: %d lines, header %q", len(lines), lines[0])
	}
	for _, l := range lines[1:] {
		f := strings.Split(l, ",")
		p, _ := strconv.ParseFloat(f[1], 64)
		se, _ := strconv.ParseFloat(f[2], 64)
		if !(p >= 0 && p <= 1) || !(se >= 0 && se < 0.05) {
			t.Errorf("posterior row %q", l)
		}
	}
	orth := runCLI(t, Orthant, cliCase{args: []string{"--samples", "2000", "--format", "csv"}, stdin: model})
	summary := runCLI(t, Train, cliCase{args: []string{"--samples", "2000", "--format", "csv"}, stdin: model})
	logP, se := csvField(t, orth, "log_p"), csvField(t, orth, "se_log_p")
	if ml := csvField(t, summary, "log_ml"); ml != logP {
		t.Errorf("gpc-train's log_ml %v, gpc-orthant's log_p %v", ml, logP)
	}
	cov := runCLI(t, Kernel, cliCase{args: []string{"--alpha", "1", "--beta", "10", "--train", train}})
	dense := runCLI(t, Orthant, cliCase{args: []string{"--samples", "20000", "--format", "csv"}, stdin: cov})
	if d := logP - csvField(t, dense, "log_p"); math.Abs(d) > 1+4*se {
		t.Errorf("Vecchia log ML %v (se %v), dense %v: %v apart", logP, se, csvField(t, dense, "log_p"), d)
	}
}

// TestVecchiaGolden pins the three streams of a small Vecchia run as text
// dumps beside the dense ones (TestPipelineGolden): the model, the Vecchia
// cloud and the posteriors. Its 30 training points (two-class, 2-D, with
// ids) at a long length scale put 21 in the proposal's dense block and 9
// after it, in the sparse part.
func TestVecchiaGolden(t *testing.T) {
	t.Parallel()
	kernel := []string{"--train", "testdata/vecchia-train.csv", "--test", "testdata/vecchia-test.csv", "--label", "y", "--id", "id", "--alpha", "6", "--beta", "10", "--vecchia", "4"}
	model, cloud, post := pipeline(t, kernel, []string{"--samples", "32", "--groups", "4"}, nil)
	for _, g := range []struct {
		name string
		data []byte
	}{{"vecchia-model", model}, {"vecchia-cloud", cloud}, {"vecchia-posteriors", post}} {
		checkGolden(t, g.name, g.data)
	}
}

// csvField is the number in the named column of a one-row CSV table.
func csvField(t *testing.T, data []byte, name string) float64 {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	head, row := strings.Split(lines[0], ","), strings.Split(lines[1], ",")
	for i, h := range head {
		if h == name {
			v, err := strconv.ParseFloat(row[i], 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("no column %q in %q", name, lines[0])
	return 0
}

// TestVecchiaShards checks that gpc-train's and gpc-orthant's shards of a
// Vecchia run, merged, are the unsharded run's output byte for byte, and
// that gpc-predict's sharded posteriors merge into its whole output.
func TestVecchiaShards(t *testing.T) {
	train, test := vecchiaFiles(t, 200, 30)
	// --quiet: m = 10 is a poor approximation here, and the check before
	// the run says so (TestVecchiaCheckWarns); the shards are the test.
	model := runCLI(t, Kernel, cliCase{args: []string{"--quiet", "--alpha", "1", "--beta", "10", "--vecchia", "10", "--train", train, "--test", test}})
	dir := t.TempDir()
	for _, c := range []struct {
		tool func([]string, io.Reader, io.Writer, io.Writer) int
		name string
		args []string
	}{
		{Train, "train", []string{"--samples", "600", "--batch-size", "7"}},
		{Orthant, "orthant", []string{"--samples", "600", "--format", "arrow"}},
	} {
		whole := runCLI(t, c.tool, cliCase{args: c.args, stdin: model})
		var files []string
		for i := range 3 {
			shard := runCLI(t, c.tool, cliCase{args: append([]string{"--shard", fmt.Sprintf("%d/3", i)}, c.args...), stdin: model})
			name := filepath.Join(dir, fmt.Sprintf("%s-%d.arrows", c.name, i))
			if err := os.WriteFile(name, shard, 0o644); err != nil {
				t.Fatal(err)
			}
			files = append(files, name)
		}
		merged := runCLI(t, Merge, cliCase{args: append([]string{"--format", "arrow"}, files...)})
		if !bytes.Equal(merged, whole) {
			t.Errorf("gpc-%s: the merged shards differ from the unsharded output", c.name)
		}
		if c.name != "train" {
			continue
		}
		post := runCLI(t, Predict, cliCase{args: []string{"--batch-size", "4"}, stdin: whole})
		var pfiles []string
		for i := range 2 {
			p := runCLI(t, Predict, cliCase{args: []string{"--batch-size", "4", "--shard", fmt.Sprintf("%d/2", i)}, stdin: whole})
			name := filepath.Join(dir, fmt.Sprintf("post-%d.arrows", i))
			if err := os.WriteFile(name, p, 0o644); err != nil {
				t.Fatal(err)
			}
			pfiles = append(pfiles, name)
		}
		if got := runCLI(t, Merge, cliCase{args: append([]string{"--format", "arrow"}, pfiles...)}); !bytes.Equal(got, post) {
			t.Errorf("gpc-predict: the merged shards differ from the unsharded posteriors")
		}
	}
}

// TestVecchiaRepeats checks that repeated training points are taken (each
// shares its point's latent value), with a warning.
func TestVecchiaRepeats(t *testing.T) {
	data := string(twoClassCSV(100, 3))
	lines := strings.Split(strings.TrimSpace(data), "\n")
	// Rows 5 and 6 repeat row 1's features (with their own labels).
	f1 := strings.Split(lines[1], ",")
	lines[5] = f1[0] + "," + f1[1] + ",-1"
	lines[6] = f1[0] + "," + f1[1] + ",1"
	dir := t.TempDir()
	train := filepath.Join(dir, "train.csv")
	if err := os.WriteFile(train, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	model := runCLI(t, Kernel, cliCase{args: []string{"--alpha", "1", "--beta", "10", "--vecchia", "8", "--train", train}, stderr: "2 of 100 training points repeat an earlier point's features"})
	s, err := format.ReadVecchia(bytes.NewReader(model), "model", format.NewAllocator())
	if err != nil {
		t.Fatal(err)
	}
	if s.Meta[format.KeyVecchiaRepeat] != "2" {
		t.Errorf("metadata %s = %q", format.KeyVecchiaRepeat, s.Meta[format.KeyVecchiaRepeat])
	}
	runCLI(t, Orthant, cliCase{args: []string{"--samples", "400"}, stdin: model})
}

// modelMeta returns the value of a metadata key of a stream, from its
// dump ("  key = value").
func modelMeta(t *testing.T, stream []byte, key string) string {
	t.Helper()
	var dump bytes.Buffer
	if err := format.Dump(&dump, bytes.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(dump.String(), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), key+" = "); ok {
			return v
		}
	}
	t.Fatalf("no %s in the stream's metadata", key)
	return ""
}

// TestVecchiaCheckWarns checks gpc-kernel's check before the run through
// the tool: a poor approximation (m = 10 at N = 200, beta 10) warns in one
// line on stderr with what to try, and its check is in the metadata; an
// exact one (m = N - 1) does not warn, and its check is 0; --progress
// notes the check.
func TestVecchiaCheckWarns(t *testing.T) {
	train, test := vecchiaFiles(t, 200, 10)
	args := []string{"--alpha", "1", "--beta", "10", "--train", train, "--test", test}
	poor := runCLI(t, Kernel, cliCase{args: append([]string{"--vecchia", "10"}, args...), stderr: "gpc-kernel: warning: the Vecchia approximation with m = 10 is poor here"})
	var errb bytes.Buffer
	if code := Kernel(append([]string{"--vecchia", "10"}, args...), nil, io.Discard, &errb); code != 0 || strings.Count(errb.String(), "\n") != 1 ||
		!strings.Contains(errb.String(), "try --vecchia auto or more neighbours, or the dense path") {
		t.Errorf("exit %d, stderr %q: want one warning line with what to try", code, errb.String())
	}
	if v := modelMeta(t, poor, format.KeyVecchiaCheck); !strings.HasPrefix(v, "label_loss=") {
		t.Errorf("gpc:vecchia_check = %q", v)
	}
	exact := runCLI(t, Kernel, cliCase{args: append([]string{"--vecchia", "199"}, args...)})
	v := modelMeta(t, exact, format.KeyVecchiaCheck)
	if loss, err := strconv.ParseFloat(strings.TrimPrefix(strings.Fields(v)[0], "label_loss="), 64); err != nil || !(loss < 1e-9) {
		t.Errorf("m = N - 1: gpc:vecchia_check = %q, want a loss of 0 (rounding)", v)
	}
	errb.Reset()
	if code := Kernel(append([]string{"--progress", "--vecchia", "199"}, args...), nil, io.Discard, &errb); code != 0 || !strings.Contains(errb.String(), "gpc-kernel: Vecchia check, m = 199: the sets lose ") {
		t.Errorf("--progress: exit %d, stderr %q: want the check noted", code, errb.String())
	}
}

// TestVecchiaAutoTool checks --vecchia auto through the tool: on the 2-D
// two-class problem at N = 1500 it takes m = 30 and says so in the
// metadata, without a warning.
func TestVecchiaAutoTool(t *testing.T) {
	if raceEnabled && testing.Short() {
		t.Skip("--vecchia auto's checks take 28 s under the race detector; -race -short leaves this to the plain run (core/vecchia's TestAutoChoosesM runs Auto's threaded checks under -race)")
	}
	train, test := vecchiaFiles(t, 1500, 10)
	model := runCLI(t, Kernel, cliCase{args: []string{"--vecchia", "auto", "--alpha", "1", "--beta", "10", "--train", train, "--test", test}})
	if m := modelMeta(t, model, format.KeyVecchiaM); m != "30" {
		t.Errorf("gpc:vecchia_m = %s, want 30", m)
	}
	if v := modelMeta(t, model, format.KeyVecchiaSelect); !strings.HasPrefix(v, "auto: m=30 pool=1 block=1000") || !strings.Contains(v, "met=true") {
		t.Errorf("gpc:vecchia_select = %q", v)
	}
}

// TestVecchiaCorrectionWarns checks gpc-train's check of the proposal's
// deferred correction before the particles run, on 7000 points (above
// the complete proposal's limit, so that the incomplete factor drops
// fill) in groups of 2: with m = 10 its variance is below log 2, so
// there is no such warning and --progress notes the figure; with m = 2
// the incomplete factor's is above correctMin, so the block's marginal is
// corrected (and --progress says so), and what is left is still above
// log 2, and gpc-train warns.
func TestVecchiaCorrectionWarns(t *testing.T) {
	if raceEnabled && testing.Short() {
		t.Skip("two preparations at N = 7000 take 45 s under the race detector; the warning has no threads of its own, and core/vecchia's tests run the preparation under -race")
	}
	train, _ := vecchiaFiles(t, 7000, 0)
	const warn = "gpc-train: warning: the proposal's incomplete factor leaves the particles' final weights a correction of variance"
	for _, c := range []struct {
		m, kernelWarns string
		warn           bool
	}{{"10", "gpc-kernel: warning: the Vecchia approximation with m = 10 is poor here", false}, {"2", "gpc-kernel: warning: the Vecchia approximation with m = 2 is poor here", true}} {
		model := runCLI(t, Kernel, cliCase{args: []string{"--alpha", "1", "--beta", "10", "--vecchia", c.m, "--train", train}, stderr: c.kernelWarns})
		var errb bytes.Buffer
		code := Train([]string{"--samples", "16", "--groups", "8", "--progress"}, bytes.NewReader(model), io.Discard, &errb)
		// m = 2 leaves a variance of 5 to the incomplete factor, 1.23 once
		// the block's marginal is corrected; m = 10 0.32, uncorrected.
		corrected := strings.Contains(errb.String(), "the block's marginal corrected on")
		if code != 0 || strings.Contains(errb.String(), warn) != c.warn || corrected != c.warn ||
			!strings.Contains(errb.String(), "against log 2 = 0.693 for groups of 2 particles") {
			t.Errorf("m = %s: exit %d, stderr %q: want the variance noted, the block corrected and a warning %v", c.m, code, errb.String(), c.warn)
		}
	}
}

// TestVecchiaSplit: where no group of the Vecchia estimator's default
// (vecchia.DefaultGroups) fits --max-memory, gpc-train splits the
// particles into more, smaller groups and warns that it did; the user's
// --groups is refused instead.
func TestVecchiaSplit(t *testing.T) {
	train, _ := vecchiaFiles(t, 300, 0)
	model := runCLI(t, Kernel, cliCase{args: []string{"--alpha", "1", "--beta", "10", "--vecchia", "20", "--train", train}})
	// 16 groups of 125 (MethodEP's default at 2000 particles): a running
	// group takes 125 x (300 x 4 + 160) bytes = 170 kB.
	args := []string{"--samples", "2000", "--threads", "1", "--format", "csv"}
	whole := runCLI(t, Train, cliCase{args: args, stdin: model})
	split := runCLI(t, Train, cliCase{args: append(args, "--max-memory", "100kB"), stdin: model, stderr: "split into"})
	if g0, g1 := csvField(t, whole, "groups"), csvField(t, split, "groups"); g0 != 16 || g1 <= g0 {
		t.Errorf("groups: %v without a limit (want 16), %v within 100 kB (want more)", g0, g1)
	}
	runCLI(t, Train, cliCase{args: append(args, "--max-memory", "100kB", "--groups", "16"), stdin: model, code: ExitUsage, stderr: "memory"})
}
