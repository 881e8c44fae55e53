package cli

import (
	"bytes"
	"flag"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gpc-mc/gpc/format"
	"github.com/gpc-mc/gpc/internal/oracle"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// interop is where the fixtures written by Arrow's JavaScript implementation live.
const interop = "../../format/testdata/interop/"

type cliCase struct {
	name   string
	args   []string
	stdin  []byte
	code   int
	stderr string // a substring of the one stderr line; "" means stderr must be empty
	golden string // testdata/<golden>.golden holds format.Dump of stdout
}

// runCLI runs tool in process and checks the exit code, that an error is one
// stderr line with nothing on stdout, and the golden dump.
func runCLI(t *testing.T, tool func([]string, io.Reader, io.Writer, io.Writer) int, c cliCase) []byte {
	t.Helper()
	var out, errb bytes.Buffer
	code := tool(c.args, bytes.NewReader(c.stdin), &out, &errb)
	if code != c.code {
		t.Fatalf("exit %d, want %d; stderr: %s", code, c.code, errb.String())
	}
	switch {
	case c.stderr == "" && errb.Len() > 0:
		t.Errorf("unexpected stderr: %q", errb.String())
	case c.stderr != "":
		if !strings.Contains(errb.String(), c.stderr) {
			t.Errorf("stderr %q does not contain %q", errb.String(), c.stderr)
		}
		if code != 0 && (strings.Count(errb.String(), "\n") != 1 || !strings.HasSuffix(errb.String(), "\n")) {
			t.Errorf("stderr is not exactly one line: %q", errb.String())
		}
	}
	if code != 0 && code != ExitOK && out.Len() > 0 && !strings.Contains(strings.Join(c.args, " "), "--help") {
		t.Errorf("stdout not empty on failure: %q", out.String())
	}
	if c.golden != "" {
		var dump bytes.Buffer
		if err := format.Dump(&dump, bytes.NewReader(out.Bytes())); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", c.golden+".golden")
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
			t.Errorf("output differs from %s (run go test -update and review the diff):\n%s", path, dump.String())
		}
	}
	return out.Bytes()
}

func covStream(t *testing.T, c *format.Covariance, meta map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := format.WriteCovariance(&buf, c, meta, 2, format.NewAllocator()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestOrthantCLI runs gpc-orthant on good input (bad input is in the
// catalogue, catalogue_test.go).
func TestOrthantCLI(t *testing.T) {
	t.Parallel()
	good := covStream(t, &format.Covariance{N: 3, Cov: []float64{1, 0.5, 0.5, 0.5, 1, 0.5, 0.5, 0.5, 1}, Y: []float64{1, -1, 1}}, map[string]string{"gpc:kernel": "test"})
	for _, c := range []cliCase{
		{name: "csv file", args: []string{"testdata/equicorr3.csv", "--samples", "2000"}, golden: "orthant-equicorr3"},
		{name: "csv stdin", args: []string{"--samples", "2000"}, stdin: mustRead(t, "testdata/equicorr3.csv"), golden: "orthant-equicorr3"},
		{name: "box with header", args: []string{"testdata/box3.csv", "--samples", "2000", "--order", "given"}, golden: "orthant-box3"},
		{name: "arrow stream", args: []string{"--samples", "2000", "--seed", "7"}, stdin: good, golden: "orthant-stream"},
		{name: "interleave", args: []string{"--samples", "2000", "--order", "interleave"}, stdin: good, golden: "orthant-interleave"},
		{name: "paper-hard", args: []string{"--samples", "2000", "--method", "paper-hard", "--groups", "4"}, stdin: good, golden: "orthant-paper-hard"},
		{name: "paper-soft without groups", args: []string{"--samples", "2000", "--method", "paper-soft"}, stdin: good, stderr: "warning: the standard error is not reliable: one particle group"},
		{name: "quiet", args: []string{"--samples", "2000", "--method", "paper-soft", "-q"}, stdin: good},
		{name: "js fixed-size list", args: []string{interop + "js-fixedlist.arrows", "--samples", "2000"}},
		{name: "js columns file", args: []string{interop + "js-columns.arrow", "--samples", "2000"}},
		{name: "help", args: []string{"--help"}, stderr: ""},
		{name: "progress", args: []string{"testdata/equicorr3.csv", "--progress", "--samples", "2000"}, stderr: "100.0%: 3 of 3 variables, 2000 particles"},
		{name: "version", args: []string{"--version"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			runCLI(t, Orthant, c)
		})
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestOrthantThreads: byte-identical output for any --threads.
func TestOrthantThreads(t *testing.T) {
	n := 40
	cov := make([]float64, n*n)
	for i := range n {
		for j := range n {
			cov[i*n+j] = math.Exp(-math.Abs(float64(i-j)) / 5)
		}
	}
	in := covStream(t, &format.Covariance{N: n, Cov: cov}, nil)
	var first []byte
	for _, threads := range []string{"1", "4", "2", "8"} {
		out := runCLI(t, Orthant, cliCase{args: []string{"--threads", threads, "--samples", "4000"}, stdin: in})
		if first == nil {
			first = out
		} else if !bytes.Equal(out, first) {
			t.Errorf("--threads %s output differs from --threads 1", threads)
		}
	}
}

// TestOrthantFormats: csv and table output carry the same numbers.
func TestOrthantFormats(t *testing.T) {
	t.Parallel()
	csvOut := runCLI(t, Orthant, cliCase{args: []string{"testdata/equicorr3.csv", "--format", "csv", "--samples", "2000"}})
	lines := strings.Split(strings.TrimSpace(string(csvOut)), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "log_p,se_log_p,p,n,samples,groups,method,order,seed,min_ess,resamples") {
		t.Fatalf("csv output:\n%s", csvOut)
	}
	table := runCLI(t, Orthant, cliCase{args: []string{"testdata/equicorr3.csv", "--format", "table", "--samples", "2000"}})
	if !strings.Contains(string(table), "method     ") || !strings.Contains(string(table), "log_p") {
		t.Errorf("table output:\n%s", table)
	}
}

// TestOrthantCLIExact: the tool's answers on the fixtures agree with the
// exact values within 4 of their standard errors.
func TestOrthantCLIExact(t *testing.T) {
	t.Parallel()
	inf := math.Inf(1)
	for _, c := range []struct {
		args  []string
		exact float64
	}{
		{[]string{"testdata/equicorr3.csv"}, math.Log(0.25)},
		{[]string{"testdata/box3.csv"}, oracle.LogBox3([3]float64{0.2, 0, -0.5},
			[9]float64{2, 0.5, 0.3, 0.5, 1, -0.2, 0.3, -0.2, 1.5}, [3]float64{-1, 0, -inf}, [3]float64{inf, 2, 1})},
		{[]string{interop + "js-fixedlist.arrows"}, -math.Log(6)},
		{[]string{interop + "js-columns.arrow"}, math.Log(oracle.Orthant3(0.5, -0.2, 0.3))},
	} {
		out := runCLI(t, Orthant, cliCase{args: append(c.args, "--format", "csv", "--samples", "20000")})
		rec := strings.Split(strings.Split(string(out), "\n")[1], ",")
		logP, _ := strconv.ParseFloat(rec[0], 64)
		se, _ := strconv.ParseFloat(rec[1], 64)
		if math.Abs(logP-c.exact) > 4*se {
			t.Errorf("%s: log_p %v, exact %v, SE %v", c.args[0], logP, c.exact, se)
		}
	}
}

// sameOnThreads runs tool on c with --threads 1 and --threads 3, fails the
// test if their outputs differ, and returns the output. Under -race -short
// it runs the threaded side alone: the race detector watches the threads,
// and the plain run compares the two.
func sameOnThreads(t *testing.T, tool func([]string, io.Reader, io.Writer, io.Writer) int, c cliCase) []byte {
	t.Helper()
	args := c.args
	c.args = append(slices.Clip(args), "--threads", "3")
	three := runCLI(t, tool, c)
	if raceEnabled && testing.Short() {
		return three
	}
	c.args = append(slices.Clip(args), "--threads", "1")
	one := runCLI(t, tool, c)
	if !bytes.Equal(one, three) {
		t.Errorf("%v: --threads 1 and 3 differ", args)
	}
	return one
}
