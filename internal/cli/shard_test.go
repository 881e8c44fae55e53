package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpc-mc/gpc/format"
)

// shardRun runs gpc-orthant's K shards with args (each with its own
// thread count) and returns their streams.
func shardRun(t *testing.T, args []string, stdin []byte, k int) [][]byte {
	t.Helper()
	var shards [][]byte
	for i := range k {
		a := append(append([]string{}, args...), "--shard", fmt.Sprintf("%d/%d", i, k), "--threads", fmt.Sprint(1+i%2))
		shards = append(shards, runCLI(t, Orthant, cliCase{args: a, stdin: stdin}))
	}
	return shards
}

// writeShards writes the shards as files in a new directory, named in
// reverse order of their index (the merge must not rely on the names).
func writeShards(t *testing.T, shards [][]byte) (dir string, names []string) {
	t.Helper()
	dir = t.TempDir()
	for i, s := range shards {
		name := filepath.Join(dir, fmt.Sprintf("part-%c.arrows", 'z'-i))
		if err := os.WriteFile(name, s, 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	return dir, names
}

// manyCrabsTests writes the crabs' test rows 20 times over (2000 rows, more than
// a small cloud's quarter: gpc-train writes them after its particles) and
// returns the file's path.
func manyCrabsTests(t *testing.T) string {
	t.Helper()
	test, err := os.ReadFile("../../examples/crabs/test.csv")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(test), "\n")
	many := filepath.Join(t.TempDir(), "many.csv")
	if err := os.WriteFile(many, []byte(lines[0]+strings.Repeat(strings.Join(lines[1:], ""), 20)), 0o644); err != nil {
		t.Fatal(err)
	}
	return many
}

// TestShardMergeIdentical: gpc-orthant's run in K shards (as processes on
// several machines run it: each its own thread count), merged by gpc-merge,
// is the unsharded run's output byte for byte, in Arrow and in CSV, for
// the automatic choice (pilot runs), each method, a covariance stream
// with test rows and kernel metadata, and particles split to fit
// --max-memory; the shards given as files in any order or as their
// directory.
func TestShardMergeIdentical(t *testing.T) {
	t.Parallel()
	fx := getFixtures(t)
	for _, tc := range []struct {
		name  string
		args  []string
		stdin []byte
		k     int
	}{
		{"auto, one-factor CSV", []string{"--samples", "4000", "../../examples/onefactor-100.csv"}, nil, 3},
		{"smc, a shard per group", []string{"--method", "smc", "--samples", "3001", "--groups", "7", "../../examples/onefactor-100.csv"}, nil, 7},
		{"met", []string{"--method", "met", "--samples", "2000", "--seed", "5", "../../examples/onefactor-100.csv"}, nil, 2},
		{"paper-hard, covariance stream", []string{"--method", "paper-hard", "--groups", "4", "--samples", "400"}, fx.cov, 4},
		{"split to fit --max-memory", []string{"--method", "smc", "--samples", "20000", "--max-memory", "1MB", "--quiet", "../../examples/onefactor-100.csv"}, nil, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := runCLI(t, Orthant, cliCase{args: append([]string{"--format", "arrow"}, tc.args...), stdin: tc.stdin})
			if strings.Contains(tc.name, "max-memory") && !bytes.Contains(want, []byte("groups of 384")) && !strings.Contains(dump(t, want), "| 52 |") {
				t.Fatalf("the memory limit did not split the particles:\n%s", dump(t, want))
			}
			wantCSV := runCLI(t, Orthant, cliCase{args: append([]string{"--format", "csv"}, tc.args...), stdin: tc.stdin})
			shards := shardRun(t, append([]string{"--format", "arrow"}, tc.args...), tc.stdin, tc.k)
			dir, names := writeShards(t, shards)
			if got := runCLI(t, Merge, cliCase{args: append([]string{"--format", "arrow"}, names...)}); !bytes.Equal(got, want) {
				t.Errorf("merged Arrow differs from the unsharded run's:\n%s\nunsharded:\n%s", dump(t, got), dump(t, want))
			}
			if got := runCLI(t, Merge, cliCase{args: []string{"--format", "csv", dir}}); !bytes.Equal(got, wantCSV) {
				t.Errorf("merged CSV %q, unsharded %q", got, wantCSV)
			}
		})
	}
}

// dump is format.Dump's text of an Arrow stream, for messages.
func dump(t *testing.T, data []byte) string {
	t.Helper()
	var b strings.Builder
	if err := format.Dump(&b, bytes.NewReader(data)); err != nil {
		return err.Error()
	}
	return b.String()
}

// TestShardRerun: a shard run again (a requeued Slurm task) writes the
// same bytes.
func TestShardRerun(t *testing.T) {
	t.Parallel()
	args := []string{"--samples", "2000", "--format", "arrow", "../../examples/onefactor-100.csv"}
	a := shardRun(t, args, nil, 2)
	b := shardRun(t, args, nil, 2)
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			t.Errorf("shard %d/2 differs when rerun", i)
		}
	}
}

// TestSlurmShard: --shard slurm's I and K from a job array's environment.
func TestSlurmShard(t *testing.T) {
	t.Parallel()
	env := func(vars ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(vars); i += 2 {
			m[vars[i]] = vars[i+1]
		}
		return func(k string) string { return m[k] }
	}
	for _, c := range []struct {
		env  func(string) string
		i, k int
		err  string
	}{
		{env("SLURM_ARRAY_TASK_ID", "2", "SLURM_ARRAY_TASK_MIN", "0", "SLURM_ARRAY_TASK_MAX", "3", "SLURM_ARRAY_TASK_COUNT", "4"), 2, 4, ""},
		{env("SLURM_ARRAY_TASK_ID", "6", "SLURM_ARRAY_TASK_MIN", "5", "SLURM_ARRAY_TASK_MAX", "8", "SLURM_ARRAY_TASK_COUNT", "4"), 1, 4, ""},
		{env(), 0, 0, "SLURM_ARRAY_TASK_ID is not set"},
		{env("SLURM_ARRAY_TASK_ID", "x"), 0, 0, `SLURM_ARRAY_TASK_ID="x" is not a number`},
		{env("SLURM_ARRAY_TASK_ID", "2", "SLURM_ARRAY_TASK_MIN", "0", "SLURM_ARRAY_TASK_MAX", "6", "SLURM_ARRAY_TASK_COUNT", "4"), 0, 0, "not 4 consecutive tasks"},
	} {
		i, k, err := slurmShard(c.env)
		switch {
		case c.err == "" && (err != nil || i != c.i || k != c.k):
			t.Errorf("%d/%d, %v; want %d/%d", i, k, err, c.i, c.k)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("error %v, want %q", err, c.err)
		}
	}
}

// TestShardTrainMergeIdentical: gpc-train's cloud in K shards (each with
// its own thread count), merged by gpc-merge, is the unsharded cloud byte
// for byte, with the test rows ahead of the particles and after them
// (many test rows), in small record batches; gpc-predict then writes the
// same posteriors.
func TestShardTrainMergeIdentical(t *testing.T) {
	t.Parallel()
	kernel := func(test string) []byte {
		return runCLI(t, Kernel, cliCase{args: []string{"--standardize", "--alpha", "4", "--beta", "10", "--train", "../../examples/crabs/train.csv", "--test", test}})
	}
	many := manyCrabsTests(t) // 2000 test rows: more than a sixteenth of the cloud
	for _, tc := range []struct {
		name string
		cov  []byte
		args []string
		k    int
	}{
		{"test rows first", kernel("../../examples/crabs/test.csv"), []string{"--samples", "3000", "--batch-size", "300"}, 4},
		{"test rows after the particles, smc, a shard per group", kernel(many), []string{"--samples", "400", "--method", "smc", "--groups", "5", "--batch-size", "64"}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := runCLI(t, Train, cliCase{args: tc.args, stdin: tc.cov})
			if after := strings.Contains(tc.name, "after"); after == bytes.Contains(want, []byte(format.KeyTestsFirst)) {
				t.Fatalf("test rows after the particles: %v, but the cloud's metadata says otherwise", after)
			}
			var shards [][]byte
			for i := range tc.k {
				a := append(append([]string{}, tc.args...), "--shard", fmt.Sprintf("%d/%d", i, tc.k), "--threads", fmt.Sprint(1+i%2))
				shards = append(shards, runCLI(t, Train, cliCase{args: a, stdin: tc.cov}))
			}
			_, names := writeShards(t, shards)
			got := runCLI(t, Merge, cliCase{args: names})
			if !bytes.Equal(got, want) {
				t.Fatalf("the merged cloud (%d bytes) differs from the unsharded one (%d bytes)", len(got), len(want))
			}
			if p, q := runCLI(t, Predict, cliCase{stdin: got}), runCLI(t, Predict, cliCase{stdin: want}); !bytes.Equal(p, q) || len(p) == 0 {
				t.Error("the posteriors differ")
			}
		})
	}
}

// TestShardTuneMergeIdentical: gpc-tune's grid in K shards (ranges of
// grid points that cut the axes anywhere), merged, is the unsharded grid
// byte for byte, se_diff_<axis> across the shards included.
func TestShardTuneMergeIdentical(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		k    int
	}{
		{[]string{"--alpha", "2:64:4", "--beta", "1e2:1e6:3"}, 5},
		{[]string{"--kernel", "linear", "--beta", "0.01:10:4"}, 4},
	} {
		args := append([]string{"--standardize", "--samples", "200", "--exploit", "0", "--no-optimize", "--train", "../../examples/crabs/train.csv", "--format", "arrow"}, tc.args...)
		want := runCLI(t, Tune, cliCase{args: args})
		var shards [][]byte
		for i := range tc.k {
			shards = append(shards, runCLI(t, Tune, cliCase{args: append(append([]string{}, args...), "--shard", fmt.Sprintf("%d/%d", i, tc.k))}))
		}
		_, names := writeShards(t, shards)
		if got := runCLI(t, Merge, cliCase{args: append([]string{"--format", "arrow"}, names...)}); !bytes.Equal(got, want) {
			t.Errorf("%v: merged grid differs from the unsharded one:\n%s\nunsharded:\n%s", tc.args, dump(t, got), dump(t, want))
		}
	}
}

// TestShardPredictMergeIdentical: gpc-predict's test rows in K shards,
// merged, are the unsharded posteriors byte for byte: predicted as the
// particles stream past (test rows first, the hard count's streams too)
// and with the cloud held (test rows after the particles, shards that cut
// the record batches anywhere).
func TestShardPredictMergeIdentical(t *testing.T) {
	t.Parallel()
	many := manyCrabsTests(t)
	for _, tc := range []struct {
		name        string
		test        string
		train, pred []string
		k           int
	}{
		{"streamed, hard count", "../../examples/crabs/test.csv", []string{"--samples", "2000"}, []string{"--count", "hard", "--batch-size", "7"}, 3},
		{"cloud held", many, []string{"--samples", "400", "--groups", "4"}, []string{"--batch-size", "300"}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cov := runCLI(t, Kernel, cliCase{args: []string{"--standardize", "--alpha", "4", "--beta", "10", "--train", "../../examples/crabs/train.csv", "--test", tc.test}})
			cloud := runCLI(t, Train, cliCase{args: tc.train, stdin: cov})
			if streamed := bytes.Contains(cloud, []byte(format.KeyTestsFirst)); streamed != strings.HasPrefix(tc.name, "streamed") {
				t.Fatalf("test rows first: %v", streamed)
			}
			want := runCLI(t, Predict, cliCase{args: append([]string{"--format", "arrow"}, tc.pred...), stdin: cloud})
			if err := format.Dump(io.Discard, bytes.NewReader(want)); err != nil {
				t.Fatalf("the unsharded posteriors: %v", err)
			}
			var shards [][]byte
			for i := range tc.k {
				a := append(append([]string{"--format", "arrow"}, tc.pred...), "--shard", fmt.Sprintf("%d/%d", i, tc.k))
				shards = append(shards, runCLI(t, Predict, cliCase{args: a, stdin: cloud}))
			}
			_, names := writeShards(t, shards)
			if got := runCLI(t, Merge, cliCase{args: append([]string{"--format", "arrow"}, names...)}); !bytes.Equal(got, want) {
				t.Errorf("merged posteriors differ from the unsharded ones:\n%.2000s\nunsharded:\n%.2000s", dump(t, got), dump(t, want))
			}
		})
	}
}

// TestShardMergeTrust: gpc-merge warns that the standard error is not
// reliable exactly when the unsharded run does. met lets the effective
// sample size fall below 2 particles by design (core.METESSThreshold), which
// core.Result.Trust excuses only knowing the run's resampling threshold: the
// shards carry it (format.KeyShardESS). On crabs at alpha 1, beta 10, met's
// ESS falls to about 1.5 particles and its groups agree (no warning); smc
// in the sharp order at beta 1000 has heavy-tailed groups (a warning).
func TestShardMergeTrust(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		beta   string
		args   []string
		stderr string
	}{
		{"met, ESS below 2 by design", "10", []string{"--method", "met", "--samples", "8000"}, ""},
		{"smc, heavy-tailed groups", "1000", []string{"--method", "smc", "--order", "sharp", "--samples", "8000"}, "heavy-tailed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cov := runCLI(t, Kernel, cliCase{args: []string{"--standardize", "--alpha", "1", "--beta", tc.beta, "--format", "arrow",
				"--train", "../../examples/crabs/train.csv"}})
			args := append([]string{"--format", "arrow"}, tc.args...)
			want := runCLI(t, Orthant, cliCase{args: args, stdin: cov, stderr: tc.stderr})
			var shards [][]byte
			for i := range 2 {
				shards = append(shards, runCLI(t, Orthant, cliCase{args: append(append([]string{}, args...), "--shard", fmt.Sprintf("%d/2", i)), stdin: cov}))
			}
			_, names := writeShards(t, shards)
			if got := runCLI(t, Merge, cliCase{args: append([]string{"--format", "arrow"}, names...), stderr: tc.stderr}); !bytes.Equal(got, want) {
				t.Errorf("merged Arrow differs from the unsharded run's:\n%s\nunsharded:\n%s", dump(t, got), dump(t, want))
			}
			// A shard whose threshold is not one: one line, exit 65.
			_, names = writeShards(t, [][]byte{withMeta(t, shards[0], format.KeyShardESS, "2"), shards[1]})
			runCLI(t, Merge, cliCase{args: names, code: ExitData, stderr: "gpc:shard_ess_threshold = \"2\" is not a resampling threshold"})
		})
	}
}
