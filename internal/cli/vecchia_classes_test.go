package cli

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/gpc-mc/gpc/format"
)

// The multi-class Vecchia pipeline on iris (75 training flowers of three
// species): gpc-kernel --vecchia 74 conditions each point on every
// earlier one, so the model is the dense multinomial probit model, and
// gpc-train's log marginal likelihood and gpc-predict's class
// probabilities must match the dense multi-class pipeline's within kSE of
// their combined standard errors (fixed seeds), in the dense path's table;
// the cloud and the posteriors do not depend on --threads, and gpc-train's
// shards merge into the unsharded cloud byte for byte.
func TestVecchiaClassesPipeline(t *testing.T) {
	t.Parallel()
	kernel := []string{"--standardize", "--alpha", "2", "--beta", "4", "--label", "species", "--id", "id",
		"--train", "../../examples/iris/train.csv", "--test", "../../examples/iris/test.csv"}
	model := runCLI(t, Kernel, cliCase{args: append(kernel, "--vecchia", "74")})
	if schema, _, _ := format.Sniff(bytes.NewReader(model), "model"); schema != format.SchemaVecchia {
		t.Fatalf("gpc-kernel --vecchia wrote %q", schema)
	}
	if tab := runCLI(t, Kernel, cliCase{args: append(kernel, "--vecchia", "74", "--format", "table")}); !bytes.Contains(tab, []byte("setosa,versicolor,virginica")) {
		t.Errorf("gpc-kernel --vecchia --format table does not name the classes:\n%s", tab)
	}
	cov := runCLI(t, Kernel, cliCase{args: kernel})
	train := []string{"--samples", "4000"}
	cloud := runCLI(t, Train, cliCase{args: append(train, "--threads", "1"), stdin: model})
	if again := runCLI(t, Train, cliCase{args: append(train, "--threads", "3"), stdin: model}); !bytes.Equal(cloud, again) {
		t.Fatal("the multi-class Vecchia cloud differs between 1 and 3 threads")
	}
	dir := t.TempDir()
	var shards []string
	for i := range 2 {
		name := filepath.Join(dir, fmt.Sprintf("shard-%d.arrows", i))
		if err := os.WriteFile(name, runCLI(t, Train, cliCase{args: append(train, "--shard", fmt.Sprintf("%d/2", i)), stdin: model}), 0o644); err != nil {
			t.Fatal(err)
		}
		shards = append(shards, name)
	}
	if merged := runCLI(t, Merge, cliCase{args: append([]string{"--format", "arrow"}, shards...)}); !bytes.Equal(merged, cloud) {
		t.Error("gpc-train's two shards, merged, differ from the unsharded cloud")
	}
	post := runCLI(t, Predict, cliCase{args: []string{"--format", "csv", "--threads", "1", "--batch-size", "20"}, stdin: cloud})
	if again := runCLI(t, Predict, cliCase{args: []string{"--format", "csv", "--threads", "3"}, stdin: cloud}); !bytes.Equal(post, again) {
		t.Fatal("the multi-class Vecchia posteriors differ between 1 and 3 threads (and batch sizes)")
	}
	dense := runCLI(t, Predict, cliCase{args: []string{"--format", "csv"}, stdin: runCLI(t, Train, cliCase{args: train, stdin: cov})})

	ml, se := trainSummary(t, model, train...)
	dml, dse := trainSummary(t, cov, train...)
	if d := ml - dml; math.Abs(d) > kSE*math.Hypot(se, dse) {
		t.Errorf("log ML %v (se %v), dense %v (se %v): %v apart", ml, se, dml, dse, d)
	}
	vr, err := csv.NewReader(bytes.NewReader(post)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	dr, err := csv.NewReader(bytes.NewReader(dense)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(vr) != 76 || len(vr) != len(dr) {
		t.Fatalf("%d and %d posterior rows, want 76", len(vr), len(dr))
	}
	num := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if !slices.Equal(vr[0], dr[0]) {
		t.Fatalf("header %v, the dense pipeline's %v", vr[0], dr[0])
	}
	for i := 1; i < len(vr); i++ {
		v, d := vr[i], dr[i]
		if v[0] != d[0] || v[8] != d[8] {
			t.Fatalf("row %d: %v where the dense pipeline has %v", i, v, d)
		}
		sum := 0.0
		for c := 1; c <= 3; c++ {
			p, pse, q, qse := num(v[c]), num(v[c+3]), num(d[c]), num(d[c+3])
			sum += p
			if math.Abs(p-q) > kSE*math.Hypot(pse, qse) {
				t.Errorf("id %s, %s: %v (se %v), dense %v (se %v)", v[0], vr[0][c], p, pse, q, qse)
			}
		}
		if math.Abs(sum-1) > 1e-12 {
			t.Errorf("id %s: the probabilities sum to %v", v[0], sum)
		}
	}
}
