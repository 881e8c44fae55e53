package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestPlanShardIdentical: a plan written once by --prepare-only and read
// by --plan gives the unsharded run's bytes, alone and in K = 4 shards
// merged by gpc-merge, for gpc-orthant (the automatic choice, whose
// pilots the plan carries, and met) and for gpc-train's cloud.
func TestPlanShardIdentical(t *testing.T) {
	t.Parallel()
	fx := getFixtures(t)
	for _, tc := range []struct {
		name  string
		tool  func([]string, io.Reader, io.Writer, io.Writer) int
		args  []string
		stdin []byte
	}{
		{"orthant auto", Orthant, []string{"--samples", "4000", "../../examples/onefactor-100.csv"}, nil},
		{"orthant met", Orthant, []string{"--method", "met", "--samples", "2000", "--seed", "5", "../../examples/onefactor-100.csv"}, nil},
		{"orthant ep, covariance stream", Orthant, []string{"--method", "ep", "--samples", "800", "--groups", "8"}, fx.cov},
		{"train auto", Train, []string{"--samples", "64", "--groups", "4", "--batch-size", "2"}, fx.cov},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--format", "arrow"}, tc.args...)
			want := runCLI(t, tc.tool, cliCase{args: args, stdin: tc.stdin})
			plan := filepath.Join(t.TempDir(), "plan.arrows")
			if err := os.WriteFile(plan, runCLI(t, tc.tool, cliCase{args: append([]string{"--prepare-only"}, args...), stdin: tc.stdin}), 0o644); err != nil {
				t.Fatal(err)
			}
			withPlan := append([]string{"--plan", plan}, args...)
			if got := runCLI(t, tc.tool, cliCase{args: withPlan, stdin: tc.stdin}); !bytes.Equal(got, want) {
				t.Errorf("--plan differs from the run without:\n%s\nwithout:\n%s", dump(t, got), dump(t, want))
			}
			var shards [][]byte
			for i := range 4 {
				a := append(append([]string{}, withPlan...), "--shard", fmt.Sprintf("%d/4", i), "--threads", fmt.Sprint(1+i%2))
				shards = append(shards, runCLI(t, tc.tool, cliCase{args: a, stdin: tc.stdin}))
			}
			_, names := writeShards(t, shards)
			if got := runCLI(t, Merge, cliCase{args: append([]string{"--format", "arrow"}, names...)}); !bytes.Equal(got, want) {
				t.Errorf("4 shards with --plan, merged, differ from the unsharded run")
			}
		})
	}
}
