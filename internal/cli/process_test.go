package cli

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpc-mc/gpc/format"
)

// The tests in this file run the built tools as processes, as a shell
// runs them: signals, pipes and exit statuses are the operating system's.

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// tools builds the four tools once per test binary and returns the
// directory that holds them. Skipped under -short.
func tools(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the tools: skipped under -short")
	}
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "gpc-bin-"); buildErr != nil {
			return
		}
		out, err := exec.Command("go", "build", "-o", binDir+string(os.PathSeparator), "github.com/gpc-mc/gpc/cmd/...").CombinedOutput()
		if err != nil {
			buildErr = errors.New("go build: " + err.Error() + "\n" + string(out))
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

// examplesDir is the repository's examples directory.
func examplesDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// shell returns a bash command running script with -o pipefail, the tools
// first on PATH, in dir.
func shell(t *testing.T, dir, script string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("bash", "-o", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+tools(t)+string(os.PathListSeparator)+os.Getenv("PATH"))
	return cmd
}

// workDir is a temporary directory with a link to examples/, where the
// examples of the README and of --help run as they would in the source
// tree.
func workDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Symlink(examplesDir(t), filepath.Join(dir, "examples")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestHelpExamples runs every example of every tool's --help, in order, and
// checks that it succeeds with nothing but warnings on standard error.
func TestHelpExamples(t *testing.T) {
	dir := workDir(t)
	n := 0
	for _, tool := range []string{"gpc-kernel", "gpc-orthant", "gpc-train", "gpc-predict", "gpc-tune", "gpc-mcmc", "gpc-merge", "gpc-fit", "gpc-show"} {
		help, err := exec.Command(filepath.Join(tools(t), tool), "--help").Output()
		if err != nil {
			t.Fatalf("%s --help: %v", tool, err)
		}
		sc := bufio.NewScanner(bytes.NewReader(help))
		for sc.Scan() {
			// kong indents the examples' lines, as it does every line
			// that was indented in the description.
			line, ok := strings.CutPrefix(sc.Text(), "    gpc-")
			if !ok {
				continue
			}
			line = "gpc-" + line
			if i := strings.Index(line, " #"); i >= 0 {
				line = line[:i]
			}
			n++
			var stdout, stderr bytes.Buffer
			cmd := shell(t, dir, line)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil || !onlyWarnings(stderr.String()) {
				t.Errorf("%s --help example %q: %v\n%s", tool, line, err, stderr.String())
				continue
			}
			if stderr.Len() > 0 {
				t.Logf("%s --help example %q warns:\n%s", tool, line, stderr.String())
			}
			if stdout.Len() == 0 && !strings.Contains(line, ">") {
				t.Errorf("%s --help example %q wrote nothing", tool, line)
			}
		}
	}
	if n < 8 {
		t.Errorf("only %d examples in the tools' --help", n)
	}
}

// progressLine matches a --progress line (the work done, or a phase of the
// preparation).
var progressLine = regexp.MustCompile(`^gpc-[a-z]+: +([0-9.]+%: |preparing, [0-9.]+s: |prepared in [0-9.]+s$|estimate: log P )`)

// onlyWarnings reports whether every line of stderr is a warning or a
// progress report.
func onlyWarnings(stderr string) bool {
	for _, l := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
		if l != "" && !strings.Contains(l, ": warning: ") && !progressLine.MatchString(l) {
			return false
		}
	}
	return true
}

// TestClosedStdout: a tool whose reader goes away (| head) ends quietly, as
// a C filter does: killed by SIGPIPE, nothing on standard error.
func TestClosedStdout(t *testing.T) {
	dir := workDir(t)
	kernel := "gpc-kernel --standardize --alpha 4 --beta 10 --train examples/crabs/train.csv --test examples/crabs/test.csv"
	for _, c := range []struct {
		script string
		status int // of the pipeline, with pipefail: 128 + SIGPIPE
	}{
		{kernel + " --format csv | head -1", 128 + int(syscall.SIGPIPE)},
		{kernel + " | head -c 100", 128 + int(syscall.SIGPIPE)},
		{kernel + " --batch-size 1 | gpc-train --samples 20000 --batch-size 1 | head -c 1000", 128 + int(syscall.SIGPIPE)},
	} {
		var stdout, stderr bytes.Buffer
		cmd := shell(t, dir, c.script)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != c.status {
			t.Errorf("%s: %v, want exit status %d", c.script, err, c.status)
		}
		if stderr.Len() > 0 {
			t.Errorf("%s: stderr %q", c.script, stderr.String())
		}
	}
	// The tool itself, its standard output a pipe already closed.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	var stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(tools(t), "gpc-orthant"), "--format", "csv", filepath.Join(examplesDir(t), "onefactor-100.csv"))
	cmd.Stdout, cmd.Stderr = w, &stderr
	err = cmd.Run()
	w.Close()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGPIPE || stderr.Len() > 0 {
		t.Errorf("gpc-orthant to a closed pipe: %v, stderr %q; want killed by SIGPIPE, quietly", err, stderr.String())
	}
}

// interruptCase is a tool run that SIGINT stops.
type interruptCase struct {
	name  string
	args  []string
	stdin func(t *testing.T) io.Reader // nil: no input
	after time.Duration                // when to send SIGINT
	// term sends SIGTERM twice, 50 ms apart, instead: what a Slurm task
	// gets at its time limit, from Slurm and from its script
	// (examples/slurm/task.sbatch).
	term bool
	// storm, with term, sends SIGTERM every millisecond after the first
	// until the tool has ended: a late one, after the tool has stopped its
	// work, must not kill it either (exit 143 instead of 130).
	storm bool
}

// TestInterrupt: SIGINT (or SIGTERM, even twice) stops a tool at its next
// batch with exit status 130 and one line on standard error, and what it
// had written is not a complete stream: no gpc reader takes it for one.
func TestInterrupt(t *testing.T) {
	bin := tools(t)
	ex := examplesDir(t)
	train := filepath.Join(ex, "crabs", "train.csv")
	test := filepath.Join(ex, "crabs", "test.csv")
	dir := t.TempDir()
	// A big test set (the test crabs 600 times) and its cloud, for
	// gpc-predict to be interrupted while it writes: about 4.5 s of
	// writing on an idle 2-core AMD EPYC (200 times took 1.6 s there, and
	// once ended before the interrupt at 1.5 s).
	big := filepath.Join(dir, "big.csv")
	data, err := os.ReadFile(test)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfterN(string(data), "\n", 2)
	bigText := lines[0] + strings.Repeat(lines[1], 600)
	if err := os.WriteFile(big, []byte(bigText), 0o644); err != nil {
		t.Fatal(err)
	}
	cloud := filepath.Join(dir, "cloud.arrows")
	run := exec.Command("bash", "-o", "pipefail", "-c", `"$1"/gpc-kernel --standardize --alpha 4 --beta 10 --train "$2" --test "$3" | "$1"/gpc-train --samples 20000 > "$4"`, "sh", bin, train, big, cloud)
	if out, err := run.CombinedOutput(); err != nil {
		t.Fatalf("making the cloud: %v\n%s", err, out)
	}
	cov := func(t *testing.T) io.Reader {
		out, err := exec.Command(filepath.Join(bin, "gpc-kernel"), "--standardize", "--alpha", "4", "--beta", "10", "--train", train).Output()
		if err != nil {
			t.Fatal(err)
		}
		return bytes.NewReader(out)
	}
	stalled := func(t *testing.T) io.Reader {
		// The first half of the cloud, then a writer that never ends.
		b, err := os.ReadFile(cloud)
		if err != nil {
			t.Fatal(err)
		}
		pr, pw, err := os.Pipe() // a file, so that exec does not copy it and Wait does not wait for it
		if err != nil {
			t.Fatal(err)
		}
		go pw.Write(b[:len(b)/2])
		t.Cleanup(func() { pr.Close(); pw.Close() })
		return pr
	}
	for _, c := range []interruptCase{
		{"gpc-orthant estimating", []string{"gpc-orthant", "--samples", "4000000", filepath.Join(ex, "onefactor-100.csv")}, nil, time.Second, false, false},
		{"gpc-orthant shard, SIGTERM twice", []string{"gpc-orthant", "--shard", "1/2", "--samples", "4000000", filepath.Join(ex, "onefactor-100.csv")}, nil, time.Second, true, false},
		{"gpc-orthant, SIGTERM until it ends", []string{"gpc-orthant", "--samples", "4000000", filepath.Join(ex, "onefactor-100.csv")}, nil, time.Second, true, true},
		{"gpc-train estimating", []string{"gpc-train", "--samples", "400000"}, cov, time.Second, false, false},
		{"gpc-predict writing", []string{"gpc-predict", "--batch-size", "64", cloud}, nil, 1500 * time.Millisecond, false, false},
		{"gpc-predict reading a stalled pipe", []string{"gpc-predict"}, stalled, 500 * time.Millisecond, false, false},
		{"gpc-tune on its grid", []string{"gpc-tune", "--standardize", "--alpha", "1:128:13", "--beta", "1:1e7:13", "--train", train}, nil, time.Second, false, false},
		{"gpc-mcmc sampling", []string{"gpc-mcmc", "--standardize", "--alpha", "16", "--beta", "1e5", "--iterations", "1000000", "--train", train, "--test", test, "--posteriors", filepath.Join(dir, "post.arrows")}, nil, time.Second, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(filepath.Join(bin, c.args[0]), c.args[1:]...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if c.stdin != nil {
				cmd.Stdin = c.stdin(t)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(c.after)
			sent := time.Now()
			sig := os.Signal(os.Interrupt)
			if c.term {
				sig = syscall.SIGTERM
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatalf("the tool had ended before the interrupt: %v", err)
			}
			ended := make(chan struct{})
			switch {
			case c.storm:
				go func() {
					for {
						select {
						case <-ended:
							return
						case <-time.After(time.Millisecond):
							cmd.Process.Signal(sig) // fails once the tool has ended
						}
					}
				}()
			case c.term:
				time.Sleep(50 * time.Millisecond)
				if err := cmd.Process.Signal(sig); err != nil {
					t.Fatalf("the tool had ended 50 ms after the first SIGTERM: %v", err)
				}
			}
			err := cmd.Wait()
			close(ended)
			took := time.Since(sent)
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != ExitInterrupt {
				t.Fatalf("%v, want exit status %d; stderr %q", err, ExitInterrupt, stderr.String())
			}
			if want := c.args[0] + ": interrupted\n"; stderr.String() != want {
				t.Errorf("stderr %q, want %q", stderr.String(), want)
			}
			if took > interruptGrace+time.Second {
				t.Errorf("it took %v to stop", took)
			}
			if stdout.Len() > 0 {
				if err := format.Dump(io.Discard, bytes.NewReader(stdout.Bytes())); err == nil {
					t.Errorf("the %d bytes written before the interrupt read as a complete stream", stdout.Len())
				}
			}
			t.Logf("stopped %v after %v; %d bytes on stdout", took.Round(time.Millisecond), sig, stdout.Len())
		})
	}
}

// TestREADMECookbook runs the commands of the README's cookbook (its
// indented lines that start with a tool's name or a shell loop), in order,
// as a new user would paste them after the README's first command.
func TestREADMECookbook(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	start := strings.Index(text, "\n## Cookbook\n")
	if start < 0 {
		t.Fatal("README.md has no Cookbook section")
	}
	section := text[start+1:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	dir := workDir(t)
	n := 0
	for _, l := range strings.Split(section, "\n") {
		line, ok := strings.CutPrefix(l, "    ")
		if !ok || !(strings.HasPrefix(line, "gpc-") || strings.HasPrefix(line, "for ")) {
			continue
		}
		n++
		var stdout, stderr bytes.Buffer
		cmd := shell(t, dir, line)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil || !onlyWarnings(stderr.String()) {
			t.Errorf("README command %q: %v\n%s", line, err, stderr.String())
		}
	}
	if n < 6 {
		t.Errorf("only %d commands in the README's cookbook", n)
	}
	// What the cookbook wrote, in a checkout, leaves it clean: git
	// ignores it.
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == "examples" {
			continue
		}
		check := exec.Command("git", "check-ignore", "-q", "--no-index", e.Name())
		check.Dir = root
		if err := check.Run(); err != nil {
			t.Errorf("the cookbook writes %s, which git does not ignore in a checkout: it would show as untracked (%v)", e.Name(), err)
		}
	}
	// What the cookbook wrote is whole.
	for _, name := range []string{"cloud.arrows", "posteriors.arrows", "logp.arrows"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := format.Dump(io.Discard, bytes.NewReader(data)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestFullDisk: a tool whose output cannot be written (/dev/full, a full
// disk) fails with exit status 74 and one line, never 0.
func TestFullDisk(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	defer full.Close()
	var stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(tools(t), "gpc-orthant"), "--samples", "1000", filepath.Join(examplesDir(t), "onefactor-100.csv"))
	cmd.Stdout, cmd.Stderr = full, &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != ExitIO || stderr.String() != "gpc-orthant: write output: write /dev/stdout: no space left on device\n" {
		t.Errorf("gpc-orthant > /dev/full: %v, stderr %q", err, stderr.String())
	}
}
