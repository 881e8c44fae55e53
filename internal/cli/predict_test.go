package cli

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpc-mc/gpc/format"
)

// firstWrite is a standard output that keeps its first Write's bytes apart.
type firstWrite struct {
	first []byte
	all   bytes.Buffer
}

func (w *firstWrite) Write(p []byte) (int, error) {
	if w.first == nil {
		w.first = bytes.Clone(p)
	}
	return w.all.Write(p)
}

// TestCloudHeadFirst: gpc-train's clouds (dense and Vecchia, with and
// without test rows) reach standard output head first: the first write is
// the schema message alone (Vecchia) or the head without particles
// (dense), before the estimate's groups, so that gpc-predict can refuse a
// cloud without test rows while gpc-train still estimates. The bytes are
// those of the golden runs.
func TestCloudHeadFirst(t *testing.T) {
	vecchiaModel := runCLI(t, Kernel, cliCase{args: tinyTrain("--alpha", "1.5", "--vecchia", "3")})
	denseCov := runCLI(t, Kernel, cliCase{args: tinyTrain("--alpha", "1.5")})
	for _, c := range []struct {
		name   string
		in     []byte
		vecchi bool
	}{
		{"vecchia, no test rows", vecchiaModel, true},
		{"vecchia, test rows", getFixtures(t).vecchia, true},
		{"dense, no test rows", denseCov, false},
		{"dense, test rows", getFixtures(t).cov, false},
	} {
		var out firstWrite
		var errb bytes.Buffer
		if code := Train([]string{"--samples", "256", "--groups", "4", "--batch-size", "2"}, bytes.NewReader(c.in), &out, &errb); code != 0 {
			t.Fatalf("%s: exit %d: %s", c.name, code, errb.String())
		}
		ends := messageEnds(t, out.all.Bytes())
		if c.vecchi && len(out.first) != ends[0] {
			t.Errorf("%s: the first write has %d bytes, the schema message %d", c.name, len(out.first), ends[0])
		}
		if !c.vecchi && (len(out.first) < ends[0] || bytes.Contains(out.first, []byte("particle"))) {
			t.Errorf("%s: the first write (%d bytes) is not the cloud's head", c.name, len(out.first))
		}
	}
}

// TestNoTestRowsAtHead: gpc-predict refuses a cloud without test rows from
// its head: a Vecchia cloud cut after its schema (gpc-train still
// estimating) and a dense cloud cut after its head are refused for their
// missing test rows, not for being cut short, with what to try.
func TestNoTestRowsAtHead(t *testing.T) {
	model := runCLI(t, Kernel, cliCase{args: tinyTrain("--alpha", "1.5", "--vecchia", "3")})
	vcloud := runCLI(t, Train, cliCase{args: []string{"--samples", "64", "--groups", "4"}, stdin: model})
	runCLI(t, Predict, cliCase{stdin: cut(t, vcloud, 1, false), code: ExitData, stderr: "stdin: the Vecchia cloud has no test rows (gpc-kernel had no --test), so there is nothing to predict here: save it (gpc-train > cloud.arrows: without test rows it keeps particle paths) and predict new rows from it"})
	cov := runCLI(t, Kernel, cliCase{args: tinyTrain("--alpha", "1.5")})
	dcloud := runCLI(t, Train, cliCase{args: []string{"--samples", "64", "--groups", "4"}, stdin: cov})
	var head int
	for k, end := range messageEnds(t, dcloud) {
		if bytes.Contains(dcloud[:end], []byte("particle")) {
			head = k
			break
		}
	}
	runCLI(t, Predict, cliCase{stdin: cut(t, dcloud, head, false), code: ExitData, stderr: "stdin: the cloud has no test rows (gpc-kernel had no --test), so there is nothing to predict: give gpc-kernel --test FILE, or save the cloud (gpc-train > cloud.arrows) and predict from it"})
}

// TestNoTestRowsPipeline: in the pipeline without gpc-kernel's --test,
// gpc-predict refuses the cloud while gpc-train estimates, and gpc-train
// stops on the broken pipe (SIGPIPE, exit 141) without a message, instead
// of running its whole estimate first (exit 0).
func TestNoTestRowsPipeline(t *testing.T) {
	dir := workDir(t)
	cmd := shell(t, dir, `gpc-kernel --standardize --alpha 4 --beta 10 --vecchia 10 --train examples/crabs/train.csv | gpc-train --samples 1000000 | gpc-predict; echo "statuses ${PIPESTATUS[*]}" >&2`)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Run()
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "gpc-predict: stdin: the Vecchia cloud has no test rows") || lines[1] != "statuses 0 141 65" {
		t.Errorf("stderr:\n%s\nwant gpc-predict's one line, and gpc-train killed by SIGPIPE (statuses 0 141 65)", stderr.String())
	}
}

// TestCloudFromStdin: gpc-predict --cloud - reads the cloud from standard
// input and the covariance from its file argument, as --cloud FILE does.
func TestCloudFromStdin(t *testing.T) {
	fx := getFixtures(t)
	dir := t.TempDir()
	cloud, cov := filepath.Join(dir, "cloud.arrows"), filepath.Join(dir, "cov.arrows")
	for name, data := range map[string][]byte{cloud: fx.cloud, cov: fx.cov} {
		if err := os.WriteFile(name, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := runCLI(t, Predict, cliCase{args: []string{"--cloud", cloud, cov}})
	got := runCLI(t, Predict, cliCase{args: []string{"--cloud", "-", cov}, stdin: fx.cloud})
	if !bytes.Equal(got, want) {
		t.Errorf("--cloud - gave other posteriors than --cloud FILE")
	}
	if err := format.Dump(io.Discard, bytes.NewReader(got)); err != nil {
		t.Error(err)
	}
}
