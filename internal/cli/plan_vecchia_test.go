package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpc-mc/gpc/format"
)

// TestVecchiaPlan checks the Vecchia path's plans: gpc-train
// --prepare-only writes one (gpc.vecchia-plan/1), gpc-train and
// gpc-orthant with --plan give the output of the run without it byte for
// byte, whole and in shards merged, and a plan of another model is refused.
func TestVecchiaPlan(t *testing.T) {
	train, test := vecchiaFiles(t, 200, 30)
	dir := t.TempDir()
	// --quiet: m = 10 on 200 points is poor, and gpc-kernel's check says
	// so (TestVecchiaCheckWarns); the plan is the test.
	model := runCLI(t, Kernel, cliCase{args: []string{"--quiet", "--alpha", "1", "--beta", "10", "--vecchia", "10", "--train", train, "--test", test}})
	modelFile := filepath.Join(dir, "model.arrows")
	if err := os.WriteFile(modelFile, model, 0o644); err != nil {
		t.Fatal(err)
	}
	plan := runCLI(t, Train, cliCase{args: []string{"--prepare-only", modelFile}})
	if schema, _, _ := format.Sniff(bytes.NewReader(plan), "plan"); schema != format.SchemaVecchiaPlan {
		t.Fatalf("--prepare-only wrote %q", schema)
	}
	if o := runCLI(t, Orthant, cliCase{args: []string{"--prepare-only", "--threads", "1"}, stdin: model}); !bytes.Equal(o, plan) {
		t.Error("gpc-orthant's plan differs from gpc-train's, or --threads 1 from the default")
	}
	planFile := filepath.Join(dir, "plan.arrows")
	if err := os.WriteFile(planFile, plan, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tool func([]string, io.Reader, io.Writer, io.Writer) int
		name string
		args []string
	}{
		{Train, "train", []string{"--samples", "600"}},
		{Orthant, "orthant", []string{"--samples", "600", "--format", "arrow"}},
	} {
		whole := runCLI(t, c.tool, cliCase{args: c.args, stdin: model})
		if got := runCLI(t, c.tool, cliCase{args: append([]string{"--plan", planFile}, c.args...), stdin: model}); !bytes.Equal(got, whole) {
			t.Errorf("gpc-%s --plan: the output differs from the run without a plan", c.name)
		}
		var files []string
		for i := range 3 {
			args := append([]string{"--plan", "-", "--shard", fmt.Sprintf("%d/3", i)}, c.args...)
			shard := runCLI(t, c.tool, cliCase{args: append(args, modelFile), stdin: plan})
			name := filepath.Join(dir, fmt.Sprintf("%s-%d.arrows", c.name, i))
			if err := os.WriteFile(name, shard, 0o644); err != nil {
				t.Fatal(err)
			}
			files = append(files, name)
		}
		if merged := runCLI(t, Merge, cliCase{args: append([]string{"--format", "arrow"}, files...)}); !bytes.Equal(merged, whole) {
			t.Errorf("gpc-%s --plan --shard: the merged shards differ from the unsharded output", c.name)
		}
	}
	other := runCLI(t, Kernel, cliCase{args: []string{"--quiet", "--alpha", "1", "--beta", "10", "--vecchia", "9", "--train", train}})
	runCLI(t, Train, cliCase{args: []string{"--plan", planFile}, stdin: other, code: 65, stderr: "prepared for another Vecchia model"})
	cut := filepath.Join(dir, "cut.arrows")
	if err := os.WriteFile(cut, plan[:len(plan)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	runCLI(t, Train, cliCase{args: []string{"--plan", cut, "--shard", "0/2"}, stdin: model, code: 65, stderr: cut})
}
