package cli

import (
	"bytes"
	"errors"
	"fmt"
	"go/build"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/format"
)

// The tests of this file are a newcomer's stumbles (issue 21), each
// checked the way it was found.

// TestPosteriorsFileFormat: gpc-mcmc's --posteriors file is written in
// the encoding its name says, whatever --format says of standard output.
func TestPosteriorsFileFormat(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct {
		file, flag string
		csv        bool
	}{
		{"p.csv", "auto", true},
		{"p.csv", "arrow", true},
		{"p.arrows", "csv", false},
		{"p.out", "csv", true},
		{"q.out", "auto", false},
	} {
		path := filepath.Join(dir, c.file)
		runCLI(t, MCMC, cliCase{args: []string{"--train", "testdata/tiny-train.csv", "--test", "testdata/tiny-test.csv",
			"--label", "sex", "--positive", "M", "--id", "name", "--samples", "64", "--iterations", "4", "--burn", "0",
			"--format", c.flag, "--posteriors", path}})
		data := mustRead(t, path)
		if got := bytes.HasPrefix(data, []byte("id,p,se,label,y,sd_hyper\n")); got != c.csv {
			t.Errorf("--posteriors %s --format %s: CSV %v, want %v", c.file, c.flag, got, c.csv)
		}
		if !c.csv {
			if err := format.Dump(&bytes.Buffer{}, bytes.NewReader(data)); err != nil {
				t.Errorf("--posteriors %s --format %s: not an Arrow stream: %v", c.file, c.flag, err)
			}
		}
		os.Remove(path)
	}
}

// sampleMark introduces a sample output in the README: the indented
// block after it is what the README's last command before it prints on a
// terminal (the test runs it with --format table), line by line with the
// blanks between columns collapsed; a line "..." skips output lines until
// the sample's next line matches (or to the end, when it is the last).
const sampleMark = "<!-- sample output: checked by TestREADMEOutputs -->"

// readmeCommand reports whether an indented README line is a command, and
// returns it as the test runs it: the tools on PATH, not built first.
func readmeCommand(line string) (string, bool) {
	line = strings.TrimPrefix(line, "go build -o bin/ ./cmd/... && ")
	if !strings.HasPrefix(line, "gpc-") && !strings.HasPrefix(line, "bin/gpc-") {
		return "", false
	}
	return strings.ReplaceAll(line, "bin/gpc-", "gpc-"), true
}

// TestREADMEOutputs runs every README command that is followed by a sample
// of its output and checks the sample, so the README cannot go stale.
func TestREADMEOutputs(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(readme), "\n")
	dir := workDir(t)
	last, n := "", 0
	for i := 0; i < len(lines); i++ {
		if l, ok := strings.CutPrefix(lines[i], "    "); ok {
			if c, ok := readmeCommand(l); ok {
				last = c
			}
			continue
		}
		if lines[i] != sampleMark {
			continue
		}
		var sample []string
		for i++; i < len(lines) && (lines[i] == "" || strings.HasPrefix(lines[i], "    ")); i++ {
			if lines[i] != "" {
				sample = append(sample, strings.Join(strings.Fields(lines[i]), " "))
			} else if len(sample) > 0 {
				break
			}
		}
		if last == "" || len(sample) == 0 {
			t.Fatalf("README line %d: a sample output without a command before it, or empty", i)
		}
		n++
		var stdout, stderr bytes.Buffer
		cmd := shell(t, dir, last+" --format table")
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Errorf("README command %q: %v\n%s", last, err, stderr.String())
			continue
		}
		var got []string
		for _, l := range strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n") {
			got = append(got, strings.Join(strings.Fields(l), " "))
		}
		if msg := matchSample(sample, got); msg != "" {
			t.Errorf("README: the sample output of %q is stale: %s\nthe command prints:\n%s", last, msg, stdout.String())
		}
	}
	if n < 2 {
		t.Errorf("only %d sample outputs in the README", n)
	}
}

// matchSample matches sample (with "..." lines) against got and returns
// what differs, or "".
func matchSample(sample, got []string) string {
	g := 0
	for s := 0; s < len(sample); s++ {
		if sample[s] == "..." {
			if s == len(sample)-1 {
				return ""
			}
			for g < len(got) && got[g] != sample[s+1] {
				g++
			}
			continue
		}
		if g >= len(got) {
			return fmt.Sprintf("the sample's line %q is not in the output", sample[s])
		}
		if got[g] != sample[s] {
			return fmt.Sprintf("the sample shows %q where the output has %q", sample[s], got[g])
		}
		g++
	}
	if g < len(got) {
		return fmt.Sprintf("the output goes on with %q (end the sample with ...)", got[g])
	}
	return ""
}

// TestIDInEitherFile: --id names a column of whichever file has one; the
// rows of a file without it are numbered.
func TestIDInEitherFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, data string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	trainNoID := write("train.csv", "a,b,sex\n0.1,1.2,F\n1.5,0.3,M\n0.4,0.9,F\n2.0,-0.5,M\n")
	trainID := write("train-id.csv", "name,a,b,sex\nr1,0.1,1.2,F\nr2,1.5,0.3,M\nr3,0.4,0.9,F\nr4,2.0,-0.5,M\n")
	testID := write("test-id.csv", "name,b,a\nt1,1.0,0.2\nt2,0.1,1.8\n")
	testNoID := write("test.csv", "b,a\n1.0,0.2\n0.1,1.8\n")
	for _, c := range []struct {
		train, test string
		ids         string
	}{
		{trainNoID, testID, "t1,t2"},
		{trainID, testNoID, "0,1"},
		{trainID, testID, "t1,t2"},
	} {
		cov := runCLI(t, Kernel, cliCase{args: []string{"--train", c.train, "--test", c.test, "--label", "sex", "--positive", "M", "--id", "name"}})
		cloud := runCLI(t, Train, cliCase{args: []string{"--samples", "64", "--groups", "4"}, stdin: cov})
		post := runCLI(t, Predict, cliCase{args: []string{"--format", "csv"}, stdin: cloud})
		var ids []string
		for _, l := range strings.Split(strings.TrimSpace(string(post)), "\n")[1:] {
			ids = append(ids, strings.Split(l, ",")[0])
		}
		if got := strings.Join(ids, ","); got != c.ids {
			t.Errorf("--train %s --test %s: ids %s, want %s", filepath.Base(c.train), filepath.Base(c.test), got, c.ids)
		}
	}
	runCLI(t, Kernel, cliCase{args: []string{"--train", trainNoID, "--test", testNoID, "--label", "sex", "--positive", "M", "--id", "name"},
		code: ExitData, stderr: `no column "name" (--id) in the training file`})
}

// TestCSVByteOrderMark: a UTF-8 byte-order mark (Excel's "CSV UTF-8")
// is not part of the first column's name, nor of the first number.
func TestCSVByteOrderMark(t *testing.T) {
	t.Parallel()
	const bom = "\xef\xbb\xbf"
	train := "y,a,b\n1,0.1,1.2\n-1,1.5,0.3\n1,0.4,0.9\n-1,2.0,-0.5\n"
	plain := runCLI(t, Kernel, cliCase{args: []string{"--train", "-", "--format", "csv"}, stdin: []byte(train)})
	marked := runCLI(t, Kernel, cliCase{args: []string{"--train", "-", "--format", "csv"}, stdin: []byte(bom + train)})
	if !bytes.Equal(plain, marked) {
		t.Errorf("gpc-kernel: with a byte-order mark:\n%s\nwithout:\n%s", marked, plain)
	}
	for _, m := range []string{"1,0.5\n0.5,1\n", "lower,x1,x2\n0,1,0.5\n-1,0.5,1\n"} {
		plain := runCLI(t, Orthant, cliCase{args: []string{"--samples", "64", "--format", "csv"}, stdin: []byte(m)})
		marked := runCLI(t, Orthant, cliCase{args: []string{"--samples", "64", "--format", "csv"}, stdin: []byte(bom + m)})
		if !bytes.Equal(plain, marked) {
			t.Errorf("gpc-orthant %q: with a byte-order mark:\n%s\nwithout:\n%s", m, marked, plain)
		}
	}
}

// TestMessagePolish: a negative flag value gets the flag's own one-line
// check, not the parser's; advice points the right way; a tool at the end
// of a pipe whose first tool failed says so in one short line.
func TestMessagePolish(t *testing.T) {
	t.Parallel()
	m := "testdata/equicorr3.csv"
	for _, c := range []struct {
		tool   func([]string, io.Reader, io.Writer, io.Writer) int
		args   []string
		code   int
		stderr string
	}{
		{Orthant, []string{"--samples", "-5", m}, ExitUsage, "gpc-orthant: --samples -5: at least 2 particles are needed (see --help)\n"},
		{Kernel, []string{"--train", "testdata/tiny-train.csv", "--label", "sex", "--positive", "M", "--id", "name", "--kernel", "ard", "--alpha", "-1,-2"}, ExitUsage,
			"gpc-kernel: length scale alpha -1 must be a finite number > 0 (see --help)\n"},
		{Orthant, []string{"--max-memory", "1KB", "--samples", "10000", m}, ExitUsage, "raise --max-memory or use fewer samples\n"},
		{Orthant, []string{"--samples", "2", "--format", "csv", m}, 0, "(use more samples: 32 or more make several groups)\n"},
	} {
		var out, errb bytes.Buffer
		code := c.tool(c.args, bytes.NewReader(nil), &out, &errb)
		if code != c.code || !strings.HasSuffix(errb.String(), c.stderr) || strings.Count(errb.String(), "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want exit %d, stderr ending %q", c.args, code, errb.String(), c.code, c.stderr)
		}
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	defer r.Close()
	var out, errb bytes.Buffer
	if code := Train(nil, r, &out, &errb); code != ExitData || errb.String() != "gpc-train: stdin: no input: the command before gpc-train in the pipeline failed or wrote nothing\n" {
		t.Errorf("an empty pipe: exit %d, stderr %q", code, errb.String())
	}
}

// TestPredictSummary: gpc-predict's table ends with the accuracy and the
// mean log predictive probability of the labelled test rows (computed here
// again from the CSV posteriors) and the cloud's log marginal likelihood;
// CSV and Arrow output carry no such line.
func TestPredictSummary(t *testing.T) {
	t.Parallel()
	cloud := runCLI(t, Train, cliCase{args: []string{"--samples", "256"}, stdin: runCLI(t, Kernel, cliCase{args: tiny})})
	table := strings.Split(strings.TrimSpace(string(runCLI(t, Predict, cliCase{args: []string{"--format", "table"}, stdin: cloud}))), "\n")
	csvOut := runCLI(t, Predict, cliCase{args: []string{"--format", "csv"}, stdin: cloud})
	right, n, logPred := 0, 0, 0.0
	for _, l := range strings.Split(strings.TrimSpace(string(csvOut)), "\n")[1:] {
		f := strings.Split(l, ",") // id,p,se,label,y
		if f[4] == "" {
			continue
		}
		p, _ := strconv.ParseFloat(f[1], 64)
		n++
		if f[3] == f[4] {
			right++
		}
		if f[4] != "M" {
			p = 1 - p
		}
		logPred += math.Log(p)
	}
	if n != 2 || strings.Contains(string(csvOut), "labelled") {
		t.Fatalf("%d labelled rows in the CSV output:\n%s", n, csvOut)
	}
	dump := &bytes.Buffer{}
	if err := format.Dump(dump, bytes.NewReader(runCLI(t, Predict, cliCase{stdin: cloud}))); err != nil {
		t.Fatal(err)
	}
	logML := regexp.MustCompile(`gpc:log_ml[^0-9-]*(-?[0-9.e+-]+)`).FindStringSubmatch(dump.String())
	if logML == nil {
		t.Fatalf("no gpc:log_ml in\n%s", dump)
	}
	ml, _ := strconv.ParseFloat(logML[1], 64)
	want := fmt.Sprintf("%d of 2 labelled test rows right (accuracy %.4g), mean log predictive probability %.4g; log marginal likelihood %.7g (se ",
		right, float64(right)/2, logPred/2, ml)
	if last := table[len(table)-1]; !strings.HasPrefix(last, want) {
		t.Errorf("the table ends with\n%q, want\n%q...", last, want)
	}
}

// TestMCMCProgressEnds: gpc-mcmc --progress ends with a 100% line when
// standard error is not a terminal, as the other tools do.
func TestMCMCProgressEnds(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	args := tinyTrain("--samples", "64", "--iterations", "20", "--burn", "5", "--thin", "3", "--progress")
	if code := MCMC(args, bytes.NewReader(nil), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "gpc-mcmc: 100.0%: 25 of 25 iterations, ") {
		t.Errorf("stderr ends with %q", last)
	}
}

// TestShow: gpc-show prints a stream as the tool that wrote it would
// have, as a table or CSV, and its metadata sorted by key.
func TestShow(t *testing.T) {
	t.Parallel()
	post := runCLI(t, Predict, cliCase{stdin: runCLI(t, Train, cliCase{args: []string{"--samples", "64", "--groups", "4"}, stdin: runCLI(t, Kernel, cliCase{args: tiny})})})
	for _, f := range []string{"table", "csv"} {
		got := runCLI(t, Show, cliCase{args: []string{"--format", f}, stdin: post})
		var want bytes.Buffer
		tab, err := format.ReadAnyTable(bytes.NewReader(post), "posteriors")
		if err != nil {
			t.Fatal(err)
		}
		ff := map[string]format.Format{"table": format.Text, "csv": format.CSV}[f]
		if err := format.WriteTable(&want, &format.Table{Cols: tab.Cols}, ff, 0, nil); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) || !bytes.Contains(got, []byte("t1")) {
			t.Errorf("--format %s:\n%s\nwant\n%s", f, got, want.Bytes())
		}
	}
	csvOut := string(runCLI(t, Show, cliCase{args: []string{"--format", "csv"}, stdin: post}))
	if !strings.HasPrefix(csvOut, "id,p,se,label,y\nt1,") || strings.Count(csvOut, "\n") != 5 {
		t.Errorf("CSV:\n%s", csvOut)
	}
	meta := strings.Split(strings.TrimSpace(string(runCLI(t, Show, cliCase{args: []string{"--meta"}, stdin: post}))), "\n")
	if !slices.IsSorted(meta) || !slices.Contains(meta, "gpc:schema = gpc.posteriors/1") || !slices.Contains(meta, "gpc:tool = gpc-predict") {
		t.Errorf("--meta:\n%s", strings.Join(meta, "\n"))
	}
	// The stream again, byte for byte the same rows.
	again := runCLI(t, Show, cliCase{args: []string{"--format", "csv"}, stdin: runCLI(t, Show, cliCase{args: []string{"--format", "arrow"}, stdin: post})})
	if string(again) != csvOut {
		t.Errorf("--format arrow, shown again:\n%s", again)
	}
}

// TestPreparingProgress: with --progress, the preparation (seconds at
// N = 1000, before the first particle moves) is reported as it starts.
func TestPreparingProgress(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--samples", "640"}, "gpc-orthant:   0.0%: preparing 3 variables (the candidates' orders and factorisations, and their pilot runs)"},
		{[]string{"--samples", "640", "--method", "ep", "--order", "greedy"}, "gpc-orthant:   0.0%: preparing 3 variables (the variable order and the factorisation)"},
	} {
		var out, errb bytes.Buffer
		if code := Orthant(append(c.args, "--progress", "--format", "csv", "testdata/equicorr3.csv"), bytes.NewReader(nil), &out, &errb); code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		lines := strings.Split(errb.String(), "\n")
		if lines[0] != c.want || !progressLine.MatchString(lines[len(lines)-2]) {
			t.Errorf("%v: stderr\n%s\nwant its first line %q", c.args, errb.String(), c.want)
		}
	}
}

// TestErrorLinePrefixes: the tool's line leaves out the package prefixes
// of the Go errors in it (format:, core:, gp:, fit:, gemm:), at its start
// and inside, but keeps the input's name that format's errors give, even
// when it is named like a package; a bug's line keeps them (they say
// where to look).
func TestErrorLinePrefixes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		want string
	}{
		{&format.DataError{Where: "stdin, batch 2", Err: errors.New("the matrix is not square")}, "gpc-x: stdin, batch 2: the matrix is not square\n"},
		{&core.InputError{Msg: "covariance is not positive definite"}, "gpc-x: covariance is not positive definite\n"},
		{fmt.Errorf("fit: EP stage: %w", errors.New("fit: the gradient is not finite")), "gpc-x: EP stage: the gradient is not finite\n"},
		{fmt.Errorf("gp: class 2: %w", &core.InputError{Msg: "lower bound 1 exceeds 0"}), "gpc-x: class 2: lower bound 1 exceeds 0\n"},
		{&format.IOError{Op: "open input", Err: errors.New("open core: no such file or directory")}, "gpc-x: open input: open core: no such file or directory\n"},
		// Inputs named like a package, where format names them.
		{&format.DataError{Where: "core", Err: errors.New("empty input")}, "gpc-x: core: empty input\n"},
		{&format.DataError{Where: "fit", Err: errors.New("core: a message")}, "gpc-x: fit: a message\n"},
		{&dataError{"train.csv: core: covariance is not symmetric"}, "gpc-x: train.csv: covariance is not symmetric\n"},
		{&usageError{"core: a message (the training file has 2 features)"}, "gpc-x: a message (the training file has 2 features)\n"},
		// Not a package: kept.
		{errors.New("arrow/ipc: could not read message schema"), "gpc-x: arrow/ipc: could not read message schema\n"},
		{errors.New("core"), "gpc-x: core\n"},
	} {
		var buf bytes.Buffer
		newReporter("gpc-x", &buf).errorf("%v", c.err)
		if buf.String() != c.want {
			t.Errorf("%q: %q, want %q", c.err, buf.String(), c.want)
		}
	}
	var buf bytes.Buffer
	r := newReporter("gpc-x", &buf)
	r.warnf("no estimate at alpha=1: %v", &core.InputError{Msg: "not positive definite"})
	r.flushWarnings()
	if want := "gpc-x: warning: no estimate at alpha=1: not positive definite\n"; buf.String() != want {
		t.Errorf("warning %q, want %q", buf.String(), want)
	}
	buf.Reset()
	r.internalf("internal error: %v", "gemm: bad shape")
	if want := "gpc-x: internal error: gemm: bad shape\n"; buf.String() != want {
		t.Errorf("internal error %q, want %q", buf.String(), want)
	}
}

// TestErrorPrefixes: errorPrefixes names exactly the gpc packages under the
// tools whose error strings start with the package's name ("core: ...").
func TestErrorPrefixes(t *testing.T) {
	t.Parallel()
	found := map[string]bool{}
	seen := map[string]bool{}
	var walk func(path string)
	walk = func(path string) {
		if seen[path] {
			return
		}
		seen[path] = true
		p, err := build.Default.Import(path, ".", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range p.GoFiles {
			src, err := os.ReadFile(filepath.Join(p.Dir, f))
			if err != nil {
				t.Fatal(err)
			}
			if p.Name != "cli" && bytes.Contains(src, []byte(`"`+p.Name+`: `)) {
				found[p.Name] = true
			}
		}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, "github.com/gpc-mc/gpc/") {
				walk(imp)
			}
		}
	}
	walk("github.com/gpc-mc/gpc/internal/cli")
	if !maps.Equal(found, errorPrefixes) {
		t.Errorf("packages whose errors start with their name: %v; errorPrefixes: %v", slices.Sorted(maps.Keys(found)), slices.Sorted(maps.Keys(errorPrefixes)))
	}
}
