package cli

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpc-mc/gpc/format"
)

// The command-line fuzz targets drive each tool's runner in process with
// fuzzed arguments and standard input. Whatever they are, the tool must
// not panic or report an internal error (exit 100); on failure it prints
// exactly one line on standard error and leaves no complete stream on
// standard output; on success its Arrow output reads back whole.

// fuzzStdinMax caps the fuzzed standard input: 8 KiB make a CSV matrix of
// up to about 45 variables, or a few hundred training rows, which run in
// milliseconds.
const fuzzStdinMax = 8 << 10

// fuzzNumberMax caps every number among the arguments, so that no input
// asks for a run of minutes (--samples 1e9): such runs are the catalogue's
// and the memory check's business, not the fuzzer's.
const fuzzNumberMax = 20000

// fuzzHang is how long one run may take before it counts as a hang.
const fuzzHang = 20 * time.Second

// fuzzArgs splits the fuzzed argument string, puts the fixtures in place of
// @cov and @cloud, and reports false for arguments the harness does not
// run: numbers above fuzzNumberMax, and paths outside testdata/ (a fuzzer
// must not read /dev/zero or the user's files).
func fuzzArgs(s string, files map[string]string) ([]string, bool) {
	args := strings.Fields(s)
	if len(args) > 32 {
		return nil, false
	}
	for i, a := range args {
		for name, path := range files {
			a = strings.ReplaceAll(a, name, path)
		}
		args[i] = a
		for _, part := range strings.FieldsFunc(a, func(r rune) bool { return r == '=' || r == ',' }) {
			if v, err := strconv.ParseFloat(part, 64); err == nil && !(v >= -fuzzNumberMax && v <= fuzzNumberMax) {
				return nil, false
			}
			if v, err := strconv.ParseFloat(strings.TrimLeft(part, "-"), 64); err == nil && !(v <= fuzzNumberMax) {
				return nil, false
			}
		}
		if strings.Contains(a, "..") || (strings.Contains(a, "/") && !strings.HasPrefix(a, "testdata/") && !isFixture(a, files)) {
			return nil, false
		}
	}
	return args, true
}

func isFixture(a string, files map[string]string) bool {
	for _, path := range files {
		if strings.Contains(a, path) {
			return true
		}
	}
	return false
}

// fuzzFixtures writes a covariance and a cloud from the tiny data set into
// a temporary directory, for @cov and @cloud.
func fuzzFixtures(f *testing.F) (cov, cloud []byte, files map[string]string) {
	cov = runCLIQuiet(f, Kernel, append(append([]string{}, tiny...), "--alpha", "1.5", "--batch-size", "3"), nil)
	cloud = runCLIQuiet(f, Train, []string{"--samples", "40", "--groups", "4", "--batch-size", "8"}, cov)
	dir := f.TempDir()
	files = map[string]string{"@cov": filepath.Join(dir, "cov.arrows"), "@cloud": filepath.Join(dir, "cloud.arrows")}
	for name, data := range map[string][]byte{"@cov": cov, "@cloud": cloud} {
		if err := os.WriteFile(files[name], data, 0o644); err != nil {
			f.Fatal(err)
		}
	}
	return cov, cloud, files
}

// runCLIQuiet runs a tool that must succeed and returns its output.
func runCLIQuiet(f *testing.F, tool func([]string, io.Reader, io.Writer, io.Writer) int, args []string, stdin []byte) []byte {
	var out, errb bytes.Buffer
	if code := tool(args, bytes.NewReader(stdin), &out, &errb); code != 0 {
		f.Fatalf("%v: exit %d: %s", args, code, errb.String())
	}
	return out.Bytes()
}

// fuzzTool is the body of every command-line fuzz target.
func fuzzTool(t *testing.T, name string, tool func([]string, io.Reader, io.Writer, io.Writer) int, files map[string]string, argStr string, stdin []byte) {
	if len(stdin) > fuzzStdinMax {
		return
	}
	args, ok := fuzzArgs(argStr, files)
	if !ok {
		return
	}
	procs := runtime.GOMAXPROCS(0) // --threads changes it for the run; put it back
	defer runtime.GOMAXPROCS(procs)
	done := make(chan int, 1)
	var out, errb bytes.Buffer
	go func() { done <- tool(args, bytes.NewReader(stdin), &out, &errb) }()
	var code int
	select {
	case code = <-done:
	case <-time.After(fuzzHang):
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		panic("hang: " + name + " " + strings.Join(args, " ") + "\n" + string(buf[:n]))
	}
	msg := errb.String()
	switch code {
	case ExitOK:
		for _, l := range strings.Split(strings.TrimSuffix(msg, "\n"), "\n") {
			if l != "" && !strings.HasPrefix(l, name+": warning: ") && !strings.HasPrefix(l, name+": ") {
				t.Fatalf("%v: stderr line %q", args, l)
			}
		}
		if isArrowOut(args) && out.Len() > 0 && !isUsage(name, out.Bytes()) {
			if err := format.Dump(io.Discard, bytes.NewReader(out.Bytes())); err != nil {
				t.Fatalf("%v: exit 0 but the output does not read back: %v", args, err)
			}
		}
	case ExitData, ExitIO, ExitUsage:
		if strings.Count(msg, "\n") != 1 || !strings.HasSuffix(msg, "\n") || !strings.HasPrefix(msg, name+": ") {
			t.Fatalf("%v: exit %d, stderr not one line: %q", args, code, msg)
		}
		if out.Len() > 0 {
			if err := format.Dump(io.Discard, bytes.NewReader(out.Bytes())); err == nil {
				t.Fatalf("%v: exit %d, but a complete stream on stdout", args, code)
			}
		}
	default:
		t.Fatalf("%v: exit %d: %s", args, code, msg)
	}
}

// isUsage reports whether out is what --help (or -h, alone or among short
// flags) and --version print.
func isUsage(name string, out []byte) bool {
	return bytes.HasPrefix(out, []byte("Usage: ")) || bytes.HasPrefix(out, []byte(name+" (gpc) "))
}

// isArrowOut reports whether args leave the output in Arrow (the default
// off a terminal) and ask for a run, not --help or --version.
func isArrowOut(args []string) bool {
	for i, a := range args {
		switch {
		case a == "--help" || a == "-h" || a == "--version":
			return false
		case strings.HasPrefix(a, "--format=") && a != "--format=arrow":
			return false
		case a == "--format" && i+1 < len(args) && args[i+1] != "arrow":
			return false
		}
	}
	return true
}

func FuzzOrthantCLI(f *testing.F) {
	cov, cloud, files := fuzzFixtures(f)
	equi := mustReadF(f, "testdata/equicorr3.csv")
	for _, s := range []struct {
		args  string
		stdin []byte
	}{
		{"--samples 500", equi},
		{"--samples 300 --method paper-hard --groups 4", equi},
		{"--samples 300 --method smc --order greedy --format csv", cov},
		{"--samples 200 --order interleave --ess 0.3", cov},
		{"testdata/box3.csv --samples 200 --order given --jitter 0.01", nil},
		{"--samples 100 --method paper-soft --format table --seed 9", []byte("a,b,lower\n1,0.2,-1\n0.2,1,0\n")},
		{"@cov --samples 100 --threads 3 --progress", nil},
		{"--samples 100", cloud},
		{"--samples 100 -q", []byte("1,0.5\n0.4,1\n")},
		{"--help", nil},
	} {
		f.Add(s.args, s.stdin)
	}
	f.Fuzz(func(t *testing.T, args string, stdin []byte) {
		fuzzTool(t, "gpc-orthant", Orthant, files, args, stdin)
	})
}

func FuzzKernelCLI(f *testing.F) {
	_, _, files := fuzzFixtures(f)
	train := mustReadF(f, "testdata/tiny-train.csv")
	test := mustReadF(f, "testdata/tiny-test.csv")
	for _, s := range []struct {
		args  string
		stdin []byte
	}{
		{"--train - --label sex --positive M --id name --alpha 2", train},
		{"--train testdata/tiny-train.csv --test - --label sex --positive M --id name --standardize", test},
		{"--train - --kernel ard --alpha 1,2 --label sex --positive M --id name --batch-size 2", train},
		{"--train - --kernel linear --beta 0.5 --bias 1 --format csv", []byte("a,y\n1,1\n2,-1\n3,1\n")},
		{"--train - --kernel matern32 --alpha 3 --format table", []byte("a\tb\ty\n1\t2\t0\n2\t1\t1\n")},
		{"--train - --kernel matern52 --test testdata/tiny-test.csv --label sex --positive M --id name", train},
		{"--train - --label c --positive x", []byte("a;c\n1;x\n2;y\n")},
		{"--train -", []byte("1,1\n2,-1\n")},
	} {
		f.Add(s.args, s.stdin)
	}
	f.Fuzz(func(t *testing.T, args string, stdin []byte) {
		fuzzTool(t, "gpc-kernel", Kernel, files, args, stdin)
	})
}

func FuzzTrainCLI(f *testing.F) {
	cov, cloud, files := fuzzFixtures(f)
	for _, s := range []struct {
		args  string
		stdin []byte
	}{
		{"--samples 200", cov},
		{"--samples 100 --batch-size 3 --groups 5", cov},
		{"--samples 100 --format csv --method met --order sharp", cov},
		{"--samples 100 --method paper-hard", cov},
		{"--samples 100", []byte("1,0.5\n0.5,1\n")},
		{"@cov --samples 60 --format table", nil},
		{"--samples 100", cloud},
	} {
		f.Add(s.args, s.stdin)
	}
	f.Fuzz(func(t *testing.T, args string, stdin []byte) {
		fuzzTool(t, "gpc-train", Train, files, args, stdin)
	})
}

func FuzzPredictCLI(f *testing.F) {
	cov, cloud, files := fuzzFixtures(f)
	for _, s := range []struct {
		args  string
		stdin []byte
	}{
		{"", cloud},
		{"--count hard --seed 3 --batch-size 1", cloud},
		{"--format csv", cloud},
		{"--cloud @cloud", cov},
		{"--cloud @cloud --format table", cov},
		{"--cloud - @cov", cloud},
		{"@cloud --progress", nil},
		{"", cov},
	} {
		f.Add(s.args, s.stdin)
	}
	f.Fuzz(func(t *testing.T, args string, stdin []byte) {
		fuzzTool(t, "gpc-predict", Predict, files, args, stdin)
	})
}

func mustReadF(f *testing.F, path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// fuzzSmall caps gpc-tune's and gpc-mcmc's fuzzed runs, whose cost
// multiplies: every number at most fuzzSmallNumber (particles,
// iterations), a grid axis of at most fuzzSmallAxis values, standard input
// of at most fuzzSmallStdin bytes (a few dozen training rows). Larger runs
// are the catalogue's and the memory check's business.
const (
	fuzzSmallNumber = 300
	fuzzSmallAxis   = 4
	fuzzSmallStdin  = 2 << 10
)

func fuzzSmall(args string, stdin []byte) bool {
	if len(stdin) > fuzzSmallStdin {
		return false
	}
	for _, a := range strings.Fields(args) {
		if strings.Count(a, ",") >= fuzzSmallAxis {
			return false
		}
		parts := strings.Split(a, ":")
		if len(parts) == 3 {
			if k, err := strconv.ParseFloat(parts[2], 64); err == nil && k > fuzzSmallAxis {
				return false
			}
		}
		for _, part := range strings.FieldsFunc(a, func(r rune) bool { return r == '=' || r == ',' || r == ':' }) {
			if v, err := strconv.ParseFloat(strings.TrimLeft(part, "-"), 64); err == nil && !(v <= fuzzSmallNumber) {
				return false
			}
		}
	}
	return true
}

func FuzzTuneCLI(f *testing.F) {
	cov, _, files := fuzzFixtures(f)
	train := mustReadF(f, "testdata/tiny-train.csv")
	for _, s := range []struct {
		args  string
		stdin []byte
	}{
		{"--train - --label sex --positive M --id name --beta 1:100:3 --samples 100 --exploit-samples 200", train},
		{"--train - --label sex --positive M --id name --alpha 0.5,1,2 --beta 1,10 --samples 64 --exploit 1 --exploit-samples 128 --format csv", train},
		{"--train - --label sex --positive M --id name --kernel linear --beta 0.1:10:4 --no-optimize --samples 50 --format table", train},
		{"--train - --label sex --positive M --id name --kernel ard --alpha 1,2 --alpha 1 --beta 3 --samples 50 --exploit 0 --no-optimize", train},
		{"--train - --beta 1,2 --bias 0.5,1 --samples 40 --exploit-samples 40 --method met --order sharp --threads 2", []byte("a,y\n1,1\n2,-1\n3,1\n4,-1\n")},
		{"--train testdata/tiny-train.csv --label sex --positive M --id name --beta 1:10:2 --samples 40 --exploit-samples 40 --progress", nil},
		{"--train - --beta 1,2", cov},
		{"--train - --beta 1:10", []byte("a,y\n1,1\n")},
	} {
		f.Add(s.args, s.stdin)
	}
	f.Fuzz(func(t *testing.T, args string, stdin []byte) {
		if fuzzSmall(args, stdin) {
			fuzzTool(t, "gpc-tune", Tune, files, args, stdin)
		}
	})
}

func FuzzMCMCCLI(f *testing.F) {
	_, cloud, files := fuzzFixtures(f)
	files["@post"] = filepath.Join(f.TempDir(), "post.csv")
	train := mustReadF(f, "testdata/tiny-train.csv")
	for _, s := range []struct {
		args  string
		stdin []byte
	}{
		{"--train - --label sex --positive M --id name --samples 64 --iterations 30 --burn 10", train},
		{"--train - --label sex --positive M --id name --test testdata/tiny-test.csv --posteriors @post --samples 64 --iterations 20 --burn 5 --format csv", train},
		{"--train testdata/tiny-train.csv --label sex --positive M --id name --test - --posteriors @post --samples 40 --iterations 10 --burn 0 --thin 2", mustReadF(f, "testdata/tiny-test.csv")},
		{"--train - --label sex --positive M --id name --kernel ard --alpha 1,2 --bias 1 --refresh 0 --samples 40 --iterations 10 --burn 10 --format table", train},
		{"--train - --kernel linear --beta 2 --samples 40 --iterations 10 --burn 10 --method met --step 1 --prior-sd 1", []byte("a,y\n1,1\n2,-1\n3,1\n")},
		{"--train - --samples 10 --iterations 5 --burn 0", cloud},
	} {
		f.Add(s.args, s.stdin)
	}
	f.Fuzz(func(t *testing.T, args string, stdin []byte) {
		// --posteriors writes a file: only the fixture's path.
		if fuzzSmall(args, stdin) && (!strings.Contains(args, "--posteriors") || strings.Contains(args, "--posteriors @post")) {
			fuzzTool(t, "gpc-mcmc", MCMC, files, args, stdin)
		}
	})
}

func FuzzFitCLI(f *testing.F) {
	cov, _, files := fuzzFixtures(f)
	train := mustReadF(f, "testdata/tiny-train.csv")
	for _, s := range []struct {
		args  string
		stdin []byte
	}{
		{"--train - --label sex --positive M --id name --samples 100 --final-samples 200", train},
		{"--train - --label sex --positive M --id name --kernel ard --alpha 1 --beta 3 --samples 64 --rounds 1 --format csv", train},
		{"--train - --label sex --positive M --id name --kernel matern52 --bias 0.5 --no-ep --samples 64 --hessian --format table", train},
		{"--train - --kernel linear --beta 2 --samples 40 --method smc --prior-sd 1 --progress", []byte("a,y\n1,1\n2,-1\n3,1\n")},
		{"--train - --beta 1", cov},
		{"--train - --method paper-soft", train},
	} {
		f.Add(s.args, s.stdin)
	}
	f.Fuzz(func(t *testing.T, args string, stdin []byte) {
		if fuzzSmall(args, stdin) {
			fuzzTool(t, "gpc-fit", Fit, files, args, stdin)
		}
	})
}
