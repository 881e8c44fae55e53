package cli

import (
	"bytes"
	csvpkg "encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gpc-mc/gpc/format"
)

// csvColumn returns a CSV table's column (by its header) as numbers.
func csvColumn(t *testing.T, data []byte, col string) []float64 {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	k := -1
	for i, h := range strings.Split(lines[0], ",") {
		if h == col {
			k = i
		}
	}
	if k < 0 {
		t.Fatalf("no column %s in %q", col, lines[0])
	}
	var v []float64
	for _, l := range lines[1:] {
		x, err := strconv.ParseFloat(strings.Split(l, ",")[k], 64)
		if err != nil {
			t.Fatal(err)
		}
		v = append(v, x)
	}
	return v
}

// laterModels returns gpc-kernel's models with the flags kernel, with
// the test rows of the file test and without test rows, after checking
// that their training parts' fingerprints agree, and a function that
// saves a stream in a temporary directory and returns its path.
func laterModels(t *testing.T, kernel []string, test string) (withTests, noTests []byte, save func(name string, data []byte) string) {
	t.Helper()
	withTests = runCLI(t, Kernel, cliCase{args: append(slices.Clone(kernel), "--test", test)})
	noTests = runCLI(t, Kernel, cliCase{args: kernel})
	if a, b := modelMeta(t, withTests, format.KeyFingerprint), modelMeta(t, noTests, format.KeyFingerprint); a != b {
		t.Fatalf("the model with test rows has fingerprint %s, without %s", a, b)
	}
	dir := t.TempDir()
	return withTests, noTests, func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
}

// TestVecchiaPredictLater trains a Vecchia cloud once and predicts new
// rows from its kept paths (gpc-predict --cloud): (a) keeping every
// particle, the later posteriors are the training pass's, byte for byte;
// (b) keeping the default 4000 resampled paths of 8000, they are within
// the resampling's error (a posterior from K equally weighted paths has
// a standard deviation of at most 0.5/sqrt(K)); (c) the cloud and the
// posteriors do not depend on the thread count; and the model without
// test rows has the training part of the one with them (their
// fingerprints agree, so either trains the cloud).
func TestVecchiaPredictLater(t *testing.T) {
	train, test := vecchiaFiles(t, 300, 40)
	kernel := []string{"--alpha", "1", "--beta", "10", "--vecchia", "20", "--train", train}
	withTests, noTests, save := laterModels(t, kernel, test)
	csv := []string{"--format", "csv"}

	// (a) every particle kept, with its weight.
	pass := runCLI(t, Predict, cliCase{args: csv, stdin: runCLI(t, Train, cliCase{args: []string{"--samples", "2000", "--keep", "0"}, stdin: withTests})})
	all := save("all.arrows", runCLI(t, Train, cliCase{args: []string{"--samples", "2000", "--keep", "2000"}, stdin: noTests}))
	later := runCLI(t, Predict, cliCase{args: append([]string{"--cloud", all}, csv...), stdin: withTests})
	if !bytes.Equal(pass, later) {
		t.Errorf("from every particle kept, the later posteriors differ from the training pass's:\n%s\n%s", pass, later)
	}
	// A cloud with test rows that keeps paths still predicts its own.
	own := runCLI(t, Train, cliCase{args: []string{"--samples", "2000", "--keep", "2000"}, stdin: withTests})
	if got := runCLI(t, Predict, cliCase{args: csv, stdin: own}); !bytes.Equal(pass, got) {
		t.Errorf("a cloud that keeps paths predicts its own test rows differently from one that keeps none")
	}

	// (b) the default: 4000 paths resampled from 8000 particles, and (c)
	// the thread count.
	pass, later = defaultKept(t, withTests, noTests, save, 300)
	p0, p1 := csvColumn(t, pass, "p"), csvColumn(t, later, "p")
	if len(p0) != 40 || len(p1) != 40 {
		t.Fatalf("%d and %d posteriors for 40 test rows", len(p0), len(p1))
	}
	sd := 0.5 / math.Sqrt(defaultKeep)
	mad := 0.0
	for j := range p0 {
		d := math.Abs(p0[j] - p1[j])
		mad += d / float64(len(p0))
		if d > 5*sd {
			t.Errorf("test row %d: %v from the kept paths, %v in the training pass: more than 5 x %.3g apart", j, p1[j], p0[j], sd)
		}
	}
	if mad > sd {
		t.Errorf("mean absolute difference %.3g from the training pass, more than %.3g", mad, sd)
	}
	t.Logf("mean absolute difference %.3g (bound %.3g)", mad, sd)
}

// TestVecchiaClassesPredictLater is TestVecchiaPredictLater for a
// multi-class Vecchia cloud (iris, three species, with ids): its kept
// paths are each point's two class contrasts, in float32, so that from
// every particle kept the later class probabilities and their standard
// errors are the training pass's to 1e-6 (the ids and labels exactly),
// and from the default 4000 resampled paths within the resampling's
// error; the cloud and the later posteriors do not depend on --threads.
func TestVecchiaClassesPredictLater(t *testing.T) {
	t.Parallel()
	kernel := []string{"--standardize", "--alpha", "2", "--beta", "4", "--label", "species", "--id", "id",
		"--vecchia", "20", "--train", "../../examples/iris/train.csv"}
	withTests, noTests, save := laterModels(t, kernel, "../../examples/iris/test.csv")
	csv := []string{"--format", "csv"}
	// compare checks later against pass column by column: the numbers
	// within tol (or, with mad, their mean absolute difference within mad
	// and each within 5 mad), the other columns equal.
	compare := func(what string, pass, later []byte, tol, mad float64) {
		t.Helper()
		a, b := csvRecords(t, pass), csvRecords(t, later)
		if len(a) != len(b) || len(a) < 2 || !slices.Equal(a[0], b[0]) {
			t.Fatalf("%s: tables of %d and %d rows, headers %v and %v", what, len(a), len(b), a[0], b[0])
		}
		sum, k := 0.0, 0
		for i := 1; i < len(a); i++ {
			for j, h := range a[0] {
				if !strings.HasPrefix(h, "p_") && !strings.HasPrefix(h, "se_") {
					if a[i][j] != b[i][j] {
						t.Errorf("%s: row %d, %s: %q in the training pass, %q later", what, i, h, a[i][j], b[i][j])
					}
					continue
				}
				x, _ := strconv.ParseFloat(a[i][j], 64)
				y, _ := strconv.ParseFloat(b[i][j], 64)
				d := math.Abs(x - y)
				if strings.HasPrefix(h, "p_") {
					sum, k = sum+d, k+1
				}
				if mad == 0 && d > tol || mad > 0 && strings.HasPrefix(h, "p_") && d > 5*mad {
					t.Errorf("%s: row %d, %s: %v in the training pass, %v later", what, i, h, x, y)
				}
			}
		}
		if mad > 0 && sum/float64(k) > mad {
			t.Errorf("%s: mean absolute difference %.3g, more than %.3g", what, sum/float64(k), mad)
		}
		t.Logf("%s: mean absolute difference %.3g over %d probabilities", what, sum/float64(k), k)
	}

	// Every particle kept, with its weight.
	pass := runCLI(t, Predict, cliCase{args: csv, stdin: runCLI(t, Train, cliCase{args: []string{"--samples", "2000", "--keep", "0"}, stdin: withTests})})
	all := save("all.arrows", runCLI(t, Train, cliCase{args: []string{"--samples", "2000", "--keep", "2000"}, stdin: noTests}))
	later := runCLI(t, Predict, cliCase{args: append([]string{"--cloud", all}, csv...), stdin: withTests})
	compare("every particle kept", pass, later, 1e-6, 0)

	// The default: 4000 paths resampled from 8000 particles.
	pass, later = defaultKept(t, withTests, noTests, save, 2*75)
	compare("4000 paths kept", pass, later, 0, 0.5/math.Sqrt(defaultKeep))
}

// defaultKept trains the model without test rows by default (--samples
// 8000, keeping defaultKeep paths of vars values each: checked), with
// --threads 1 and 2 and in three shards merged (the same cloud), predicts the model with test rows
// from it with --threads 1 and 2 (the same posteriors), and returns the
// training pass's posteriors and the later ones, as CSV.
func defaultKept(t *testing.T, withTests, noTests []byte, save func(string, []byte) string, vars int) (pass, later []byte) {
	t.Helper()
	csv := []string{"--format", "csv"}
	pass = runCLI(t, Predict, cliCase{args: csv, stdin: runCLI(t, Train, cliCase{args: []string{"--samples", "8000"}, stdin: withTests})})
	cloud := runCLI(t, Train, cliCase{args: []string{"--samples", "8000", "--threads", "1"}, stdin: noTests})
	cl, err := format.ReadVecchiaCloudHead(bytes.NewReader(cloud), "cloud", false, format.NewAllocator(), nil)
	if err != nil {
		t.Fatal(err)
	}
	kept := 0
	for _, k := range cl.Kept {
		kept += k
	}
	if kept != defaultKeep || cl.N != vars {
		t.Fatalf("the cloud of a model without test rows keeps %d paths (%v) of %d values, not the default %d of %d", kept, cl.Kept, cl.N, defaultKeep, vars)
	}
	if c2 := runCLI(t, Train, cliCase{args: []string{"--samples", "8000", "--threads", "2"}, stdin: noTests}); !bytes.Equal(cloud, c2) {
		t.Errorf("the cloud with kept paths differs between --threads 1 and 2")
	}
	// Its shards keep their groups' paths and merge into it.
	var shards []string
	for i := range 3 {
		shards = append(shards, save(fmt.Sprintf("shard-%d.arrows", i), runCLI(t, Train, cliCase{args: []string{"--samples", "8000", "--shard", fmt.Sprintf("%d/3", i)}, stdin: noTests})))
	}
	if merged := runCLI(t, Merge, cliCase{args: append([]string{"--format", "arrow"}, shards...)}); !bytes.Equal(merged, cloud) {
		t.Errorf("the cloud's three shards, keeping their paths, merge into another cloud")
	}
	path := save("cloud.arrows", cloud)
	later = runCLI(t, Predict, cliCase{args: append([]string{"--cloud", path, "--threads", "1"}, csv...), stdin: withTests})
	if l2 := runCLI(t, Predict, cliCase{args: append([]string{"--cloud", path, "--threads", "2"}, csv...), stdin: withTests}); !bytes.Equal(later, l2) {
		t.Errorf("the later posteriors differ between --threads 1 and 2")
	}
	return pass, later
}

// csvRecords parses a CSV table.
func csvRecords(t *testing.T, data []byte) [][]string {
	t.Helper()
	recs, err := csvpkg.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return recs
}
