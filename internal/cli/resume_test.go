package cli

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpc-mc/gpc/format"
)

// The tools' side of resuming a failed sharded run (examples/slurm/run.sh):
// --fingerprint says which shards belong to a run before any is computed,
// gpc-merge --check says which files are complete shards, and a plan can
// come from standard input.

// shardMeta returns a shard stream's metadata.
func shardMeta(t *testing.T, data []byte) map[string]string {
	t.Helper()
	meta, err := format.StreamMeta(bytes.NewReader(data), "shard", format.NewAllocator())
	if err != nil {
		t.Fatal(err)
	}
	return meta
}

// fingerprintOf runs tool with --fingerprint and returns its line.
func fingerprintOf(t *testing.T, tool func([]string, io.Reader, io.Writer, io.Writer) int, args []string, stdin []byte) string {
	t.Helper()
	out := runCLI(t, tool, cliCase{args: append([]string{"--fingerprint"}, args...), stdin: stdin})
	line, ok := strings.CutSuffix(string(out), "\n")
	if !ok || strings.Contains(line, "\n") || len(line) != 32 {
		t.Fatalf("--fingerprint wrote %q, not one line of 32 hex digits", out)
	}
	return line
}

// crabsReversed writes the crabs' test rows in reverse order (the same rows,
// another test set) and returns its path.
func crabsReversed(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../../examples/crabs/test.csv")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	body := lines[1:]
	slices.Reverse(body)
	name := filepath.Join(t.TempDir(), "reversed.csv")
	if err := os.WriteFile(name, []byte(lines[0]+"\n"+strings.Join(body, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

// TestFingerprint: --fingerprint prints, without computing a shard, the
// gpc:shard_fingerprint that every shard of the run carries, for each
// sharded tool (gpc-orthant and gpc-train from a plan and without one,
// gpc-tune's grid, gpc-predict with the test rows first, after the
// particles, and from a saved cloud); another seed or K gives another.
func TestFingerprint(t *testing.T) {
	t.Parallel()
	fx := getFixtures(t)
	crabsCov := func(test string) []byte {
		return runCLI(t, Kernel, cliCase{args: []string{"--standardize", "--alpha", "4", "--beta", "10", "--train", "../../examples/crabs/train.csv", "--test", test}})
	}
	cov := crabsCov("../../examples/crabs/test.csv")
	streamed := runCLI(t, Train, cliCase{args: []string{"--samples", "2000"}, stdin: cov})
	dir := t.TempDir()
	manyCov := crabsCov(manyCrabsTests(t))
	held := runCLI(t, Train, cliCase{args: []string{"--samples", "400", "--groups", "4"}, stdin: manyCov})
	if bytes.Contains(held, []byte(format.KeyTestsFirst)) {
		t.Fatal("the small cloud has its test rows first")
	}
	heldFile := filepath.Join(dir, "held.arrows")
	if err := os.WriteFile(heldFile, held, 0o644); err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(dir, "plan.arrows")
	orthantArgs := []string{"--samples", "4000", "--format", "arrow", "../../examples/onefactor-100.csv"}
	if err := os.WriteFile(plan, runCLI(t, Orthant, cliCase{args: append([]string{"--prepare-only"}, orthantArgs...)}), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		tool  func([]string, io.Reader, io.Writer, io.Writer) int
		args  []string
		stdin []byte
		k     int
		other []string // another run's flags
	}{
		{"gpc-orthant with a plan", Orthant, append([]string{"--plan", plan}, orthantArgs...), nil, 3, []string{"--groups", "16"}},
		{"gpc-orthant preparing", Orthant, orthantArgs, nil, 3, []string{"--seed", "2"}},
		{"gpc-train", Train, []string{"--samples", "64", "--groups", "4", "--batch-size", "2"}, fx.cov, 2, []string{"--batch-size", "3"}},
		{"gpc-tune", Tune, []string{"--standardize", "--alpha", "2:64:4", "--beta", "1e2:1e6:3", "--samples", "200", "--exploit", "0", "--no-optimize", "--format", "arrow", "--train", "../../examples/crabs/train.csv"}, nil, 5, []string{"--samples", "201"}},
		{"gpc-predict, test rows first", Predict, []string{"--format", "arrow", "--batch-size", "7"}, streamed, 3, []string{"--count", "hard"}},
		{"gpc-predict, test rows after the particles", Predict, []string{"--format", "arrow", "--batch-size", "16"}, held, 3, []string{"--seed", "2", "--count", "hard"}},
		{"gpc-predict --cloud, the cloud held", Predict, []string{"--format", "arrow", "--cloud", heldFile, "--batch-size", "300"}, manyCov, 4, []string{"--batch-size", "17"}},
		{"gpc-predict --cloud, predicted in one pass", Predict, []string{"--format", "arrow", "--cloud", heldFile}, cov, 4, []string{"--count", "hard"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shardArgs := func(i, k int, extra ...string) []string {
				return append(append(append([]string{}, tc.args...), extra...), "--shard", fmt.Sprintf("%d/%d", i, k))
			}
			want := fingerprintOf(t, tc.tool, shardArgs(0, tc.k), tc.stdin)
			for i := range tc.k {
				shard := runCLI(t, tc.tool, cliCase{args: shardArgs(i, tc.k), stdin: tc.stdin})
				if got := shardMeta(t, shard)[format.KeyShardFingerprint]; got != want {
					t.Errorf("shard %d/%d carries %s, --fingerprint says %s", i, tc.k, got, want)
				}
			}
			if got := fingerprintOf(t, tc.tool, shardArgs(tc.k-1, tc.k), tc.stdin); got != want {
				t.Errorf("--fingerprint with --shard %d/%d: %s, with 0/%d: %s", tc.k-1, tc.k, got, tc.k, want)
			}
			if got := fingerprintOf(t, tc.tool, shardArgs(0, tc.k-1), tc.stdin); got == want {
				t.Errorf("K = %d and K = %d give the same fingerprint", tc.k-1, tc.k)
			}
			if got := fingerprintOf(t, tc.tool, shardArgs(0, tc.k, tc.other...), tc.stdin); got == want {
				t.Errorf("%v gives the same fingerprint", tc.other)
			}
		})
	}
	// gpc-predict's test rows are its input: the same cloud's posteriors
	// of other test rows (the same rows in another order) are another
	// run's, and gpc-merge refuses to mix them.
	t.Run("gpc-predict, other test rows", func(t *testing.T) {
		other := crabsCov(crabsReversed(t))
		args := func(i int) []string {
			return []string{"--format", "arrow", "--cloud", heldFile, "--shard", fmt.Sprintf("%d/2", i)}
		}
		a, b := fingerprintOf(t, Predict, args(0), cov), fingerprintOf(t, Predict, args(0), other)
		if a == b {
			t.Fatalf("the test rows reversed give the same fingerprint %s", a)
		}
		_, names := writeShards(t, [][]byte{runCLI(t, Predict, cliCase{args: args(0), stdin: cov}), runCLI(t, Predict, cliCase{args: args(1), stdin: other})})
		runCLI(t, Merge, cliCase{args: names, code: ExitData, stderr: "of another run"})
	})
}

// TestMergeCheck: gpc-merge --check reads each file on its own and says
// whether it is a complete shard, with its index and fingerprint (exit 0
// whatever it finds): complete orthant and cloud shards; a shard cut at a
// batch boundary, one with batches dropped, a cloud shard cut short; a
// result that is not a shard; a CSV file.
func TestMergeCheck(t *testing.T) {
	t.Parallel()
	sh := getShardFixtures(t)
	dir := t.TempDir()
	var names []string
	for _, f := range []string{"shard-0.arrows", "shard-1.arrows", "cut-shard-1.arrows", "short-shard-1.arrows", "cloud-shard-0.arrows", "cut-cloud-shard-1.arrows", "short-cloud-shard-1.arrows", "orthant.arrows"} {
		name := filepath.Join(dir, f)
		if err := os.WriteFile(name, sh.files[f], 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	names = append(names, "testdata/equicorr3.csv")
	out := runCLI(t, Merge, cliCase{args: append([]string{"--check", "--format", "csv"}, names...)})
	rows, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"shard", "fingerprint", "complete", "of", "problem", "file"}; !slices.Equal(rows[0], want) {
		t.Fatalf("columns %q, want %q", rows[0], want)
	}
	orthantFP := shardMeta(t, sh.files["shard-0.arrows"])[format.KeyShardFingerprint]
	cloudFP := shardMeta(t, sh.files["cloud-shard-0.arrows"])[format.KeyShardFingerprint]
	for j, want := range []struct{ shard, fp, complete, of, problem string }{
		{"0/2", orthantFP, "yes", format.SchemaOrthant, ""},
		{"1/2", orthantFP, "yes", format.SchemaOrthant, ""},
		{"1/2", orthantFP, "no", format.SchemaOrthant, "end-of-stream marker"},
		{"1/2", orthantFP, "no", format.SchemaOrthant, "cut short"},
		{"0/2", cloudFP, "yes", format.SchemaCloud, ""},
		{"1/2", cloudFP, "no", format.SchemaCloud, "end-of-stream marker"},
		{"1/2", cloudFP, "no", format.SchemaCloud, "cut short"},
		{"", "", "no", "", "not a shard stream"},
		{"", "", "no", "", "not an Arrow IPC stream"},
	} {
		r := rows[j+1]
		if r[0] != want.shard || r[1] != want.fp || r[2] != want.complete || r[3] != want.of || r[5] != names[j] ||
			(want.problem == "") != (r[4] == "") || !strings.Contains(r[4], want.problem) {
			t.Errorf("%s: %q, want %+v", names[j], r, want)
		}
	}
}

// TestPlanStdin: --plan - reads the plan from standard input, with the
// same output as --plan FILE.
func TestPlanStdin(t *testing.T) {
	t.Parallel()
	args := []string{"--samples", "4000", "--format", "arrow", "../../examples/onefactor-100.csv"}
	plan := runCLI(t, Orthant, cliCase{args: append([]string{"--prepare-only"}, args...)})
	want := runCLI(t, Orthant, cliCase{args: args})
	if got := runCLI(t, Orthant, cliCase{args: append([]string{"--plan", "-"}, args...), stdin: plan}); !bytes.Equal(got, want) {
		t.Errorf("--plan - differs from the run without a plan")
	}
	runCLI(t, Orthant, cliCase{args: append([]string{"--plan", "-", "--seed", "2"}, args...), stdin: plan, code: ExitData, stderr: "the plan on standard input was prepared for another input"})
}

// withValue returns the table stream data with column col's value in row
// set to v (what an edit by hand would leave).
func withValue(t *testing.T, data []byte, col string, row int, v float64) []byte {
	t.Helper()
	tab, err := format.ReadTable(bytes.NewReader(data), "table", format.NewAllocator())
	if err != nil {
		t.Fatal(err)
	}
	tab.Column(col).Float[row] = v
	var b bytes.Buffer
	if err := format.WriteTable(&b, tab, format.Arrow, 0, format.NewAllocator()); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestTuneFrom: gpc-tune --from GRID runs the exploit and optimum stages
// from a grid computed in K shards and merged, and writes the unsharded
// run's output byte for byte (from a whole run's output too); a grid of
// another run (another seed, grid, data or flags), an edited estimate, a
// shard instead of the merged grid are refused.
func TestTuneFrom(t *testing.T) {
	t.Parallel()
	args := []string{"--standardize", "--alpha", "4:256:4", "--beta", "1e3:1e7:3", "--samples", "300", "--exploit", "2", "--exploit-samples", "2000", "--format", "arrow", "--train", "../../examples/crabs/train.csv"}
	want := runCLI(t, Tune, cliCase{args: args})
	var shards [][]byte
	for i := range 3 {
		shards = append(shards, runCLI(t, Tune, cliCase{args: append(append([]string{}, args...), "--exploit", "0", "--no-optimize", "--shard", fmt.Sprintf("%d/3", i))}))
	}
	_, names := writeShards(t, shards)
	grid := runCLI(t, Merge, cliCase{args: append([]string{"--format", "arrow"}, names...)})
	dir := t.TempDir()
	file := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	from := func(path string, extra ...string) []string {
		return append(append(append([]string{}, args...), extra...), "--from", path)
	}
	if got := runCLI(t, Tune, cliCase{args: from(file("grid.arrows", grid))}); !bytes.Equal(got, want) {
		t.Errorf("--from the merged grid differs from the unsharded run:\n%s\nunsharded:\n%s", dump(t, got), dump(t, want))
	}
	if got := runCLI(t, Tune, cliCase{args: from("-"), stdin: want}); !bytes.Equal(got, want) {
		t.Errorf("--from - of the whole run's output differs from it")
	}
	// The best grid point: the one --from estimates again.
	tab, err := format.ReadTable(bytes.NewReader(grid), "grid", format.NewAllocator())
	if err != nil {
		t.Fatal(err)
	}
	best := 0
	for i, v := range tab.Column("log_ml").Float {
		if v > tab.Column("log_ml").Float[best] {
			best = i
		}
	}
	edited := withValue(t, grid, "log_ml", best, tab.Column("log_ml").Float[best]+1e-9)
	for _, c := range []struct {
		name  string
		args  []string
		code  int
		error string
	}{
		{"another seed", from(file("grid.arrows", grid), "--seed", "2"), ExitData, `metadata gpc:seed is "1", this run's "2"`},
		{"another grid", from(file("grid.arrows", grid), "--beta", "1e3:1e7:4"), ExitData, "not this run's grid"},
		{"other data", append(from(file("grid.arrows", grid)), "--train", "../../examples/exp4/train.csv"), ExitData, "not this run's grid"},
		{"an edited estimate", from(file("edited.arrows", edited)), ExitData, fmt.Sprintf("grid point %d, estimated again", best)},
		{"a shard", from(names[0]), ExitData, "not a gpc-tune grid"},
		{"with --shard", from(file("grid.arrows", grid), "--exploit", "0", "--no-optimize", "--shard", "0/2"), ExitUsage, "not both"},
	} {
		t.Run(c.name, func(t *testing.T) {
			runCLI(t, Tune, cliCase{args: c.args, code: c.code, stderr: c.error})
		})
	}
}

// TestPrepareOnlyMemory: --prepare-only refuses a run that cannot fit in
// memory as the run itself does (the same line, exit 80), for gpc-orthant
// and gpc-train, before preparing anything.
func TestPrepareOnlyMemory(t *testing.T) {
	t.Parallel()
	fx := getFixtures(t)
	for _, tc := range []struct {
		name  string
		tool  func([]string, io.Reader, io.Writer, io.Writer) int
		args  []string
		stdin []byte
	}{
		{"gpc-orthant", Orthant, []string{"--samples", "100000", "--groups", "2", "--max-memory", "1MB", "testdata/equicorr3.csv"}, nil},
		{"gpc-train", Train, []string{"--samples", "100000", "--groups", "2", "--max-memory", "1MB"}, fx.cov},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runErr, prepErr bytes.Buffer
			code := tc.tool(tc.args, bytes.NewReader(tc.stdin), io.Discard, &runErr)
			prepCode := tc.tool(append([]string{"--prepare-only"}, tc.args...), bytes.NewReader(tc.stdin), io.Discard, &prepErr)
			if code != ExitUsage || prepCode != code || prepErr.String() != runErr.String() {
				t.Errorf("the run: exit %d, %q; --prepare-only: exit %d, %q", code, runErr.String(), prepCode, prepErr.String())
			}
		})
	}
}
