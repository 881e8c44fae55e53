// Package cli holds the command-line front ends of the gpc tools. Each
// tool has a room of its own: its kong flag struct, its Validate and its
// run in the file named after it (kernel.go, train.go, predict.go,
// orthant.go, merge.go, tune.go, fit.go, mcmc.go, show.go), and what only
// it does in files of its name beside it (kernel_vecchia.go,
// kernel_classes.go, predict_vecchia.go, predict_classes.go,
// merge_vecchia.go, fit_vecchia.go, tune_shard.go, tune_start.go,
// tune_from.go); a run reads as a few named steps. What several tools share has its own file:
// cli.go (exit codes, standard streams, run), flags.go (the flag groups),
// data.go (reading features and labels, standardization, label maps),
// estimator.go (the estimator's flags and preparation), problem.go (the
// estimate paths of gpc-orthant and gpc-train over core.Estimator: the
// plan, the groups run, the summary, the shard's range and metadata, for
// the dense and the Vecchia estimator alike), plan.go (--prepare-only,
// --plan), shard.go (--shard's range, fingerprint and metadata),
// memory.go (--max-memory and the memory checks), report.go (the
// progress and warning reporter), version.go (--version, from the build
// info), bug.go (internal errors: where they happened, a report,
// GPC_TRACEBACK) and largen.go (where the dense path ends, which tools
// have a Vecchia path, what to try). Each tool's entry point takes its
// arguments and standard streams and returns the exit status, so the
// tools can be driven from tests in process.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/alecthomas/kong"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/format"
	"github.com/gpc-mc/gpc/internal/gemm"
)

// Exit statuses (STYLE.md section 3).
const (
	ExitOK        = 0
	ExitData      = format.ExitData // 65: bad input data
	ExitIO        = format.ExitIO   // 74: I/O failure
	ExitUsage     = 80              // bad flag or argument
	ExitInternal  = 100             // a bug
	ExitInterrupt = 130             // SIGINT or SIGTERM
	exitPipe      = 141             // stdout closed early: 128 + SIGPIPE, silently
)

// pipelineHelp shows, in every tool's --help, where the tools stand in the
// pipeline and how to get the examples running.
const pipelineHelp = `The gpc pipeline (Arrow IPC streams on the pipes; a table on a terminal):

  features --gpc-kernel--> covariance --gpc-train--> cloud --gpc-predict--> posteriors
                           covariance --gpc-orthant--> log P (of gpc-kernel's covariance: the log marginal likelihood)`

// examplesHelp introduces the examples of every tool's --help, which run as
// they are in the gpc source tree (a test runs them).
const examplesHelp = `Examples, to run in the gpc source tree once the tools are built and on PATH:
  go build -o bin/ ./cmd/... && export PATH=$PWD/bin:$PATH`

// exitHelp ends every tool's --help.
const exitHelp = `Exit status: 0 success, 65 bad input data, 74 I/O error, 80 bad usage, 100 internal error, 130 interrupted. Errors are one line on standard error; docs/bad-input.md lists them.`

// usageError is a flag or argument that cannot work.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }
func (e *usageError) ExitCode() int { return ExitUsage }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// dataError is input data that does not fit what the flags ask of it.
type dataError struct{ msg string }

func (e *dataError) Error() string { return e.msg }
func (e *dataError) ExitCode() int { return ExitData }

// exitRequest is how kong's Exit (after --help or --version) unwinds to the
// runner.
type exitRequest struct{ code int }

// env is what a tool's Run method gets besides its flags.
type env struct {
	ctx    context.Context
	stdin  io.Reader
	stdout io.Writer
	rep    *reporter
}

// runner is a tool's flag struct.
type runner interface {
	run(e *env) error
	common() *commonFlags
}

// commonFlags are the flags every tool has (DESIGN.md section 7).
type commonFlags struct {
	Format   string           `enum:"auto,arrow,csv,table" default:"auto" help:"Output encoding: arrow (an Arrow IPC stream), csv, table (aligned text), or auto: table when standard output is a terminal, else arrow."`
	Threads  int              `default:"0" env:"GPC_THREADS" help:"Worker threads (0: all cores). The output does not depend on it."`
	Quiet    bool             `short:"q" env:"GPC_QUIET" help:"Do not print warnings (errors are always printed)."`
	Progress bool             `env:"GPC_PROGRESS" help:"Report progress (work done, rate, time left, and each phase of a preparation: EP sweeps, ordering, pilots) on standard error."`
	Version  kong.VersionFlag `help:"Print the version and exit."`
}

func (c *commonFlags) common() *commonFlags { return c }

// validateCommon checks the shared flags.
func (c *commonFlags) validateCommon() error {
	if c.Threads < 0 {
		return usagef("--threads %d: must be 0 (all cores) or more", c.Threads)
	}
	return nil
}

// outputFormat resolves --format against the standard output.
func (c *commonFlags) outputFormat(stdout io.Writer) format.Format {
	switch c.Format {
	case "arrow":
		return format.Arrow
	case "csv":
		return format.CSV
	case "table":
		return format.Text
	}
	if isTerminal(stdout) {
		return format.Text
	}
	return format.Arrow
}

// fileFormat is the encoding of a named output file (gpc-mcmc's
// --posteriors): its extension's (.csv: CSV; .arrows, .arrow, .ipc: Arrow;
// .txt: a table), or else --format's (auto: Arrow; table: CSV).
func (c *commonFlags) fileFormat(path string) format.Format {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".csv":
		return format.CSV
	case ".arrows", ".arrow", ".ipc":
		return format.Arrow
	case ".txt":
		return format.Text
	}
	if c.Format == "csv" || c.Format == "table" {
		return format.CSV
	}
	return format.Arrow
}

// isPipe reports whether r is a pipe.
func isPipe(r any) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeNamedPipe != 0
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// newParser returns the kong parser of a tool's flag struct cmd.
func newParser(name, description string, cmd runner, stdout, stderr io.Writer) (*kong.Kong, error) {
	return kong.New(cmd,
		kong.Name(name),
		kong.Description(description),
		kong.Writers(stdout, stderr),
		kong.Exit(func(c int) { panic(exitRequest{c}) }),
		kong.Vars{"version": versionText(name)},
		kong.ConfigureHelp(kong.HelpOptions{Compact: true, NoExpandSubcommands: true}),
	)
}

// run parses args into cmd and runs it: the shared body of every tool.
func run(name, description string, cmd runner, args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	rep := newReporter(name, stderr)
	defer func() {
		if p := recover(); p != nil {
			if r, ok := p.(exitRequest); ok {
				code = r.code
				return
			}
			rep.bug(panicError(p))
			code = ExitInternal
		}
	}()
	parser, err := newParser(name, description, cmd, stdout, stderr)
	if err != nil {
		rep.bug(&internalError{msg: err.Error(), site: "internal/cli/cli.go (newParser)"})
		return ExitInternal
	}
	if _, err := parser.Parse(joinNegative(args)); err != nil {
		rep.errorf("%v (see --help)", err)
		return ExitUsage
	}
	if err := gemm.EnvError(); err != nil {
		rep.errorf("%v", err)
		return ExitUsage
	}
	if err := vecEnvErr; err != nil {
		rep.errorf("%v", err)
		return ExitUsage
	}
	cf := cmd.common()
	rep.quiet = cf.Quiet
	rep.progress = cf.Progress
	if cf.Threads > 0 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(cf.Threads))
	}
	if what := stdinWhat[name]; what != "" && !cf.Quiet && isTTY(stdin) {
		stdin = &ttyNotice{r: stdin, note: func() {
			rep.noticef("waiting for %s on standard input, a terminal: pipe it in or name a file (see --help); ^D ends the input, ^C stops", what)
		}}
	}
	ctx, stop := interruptContext()
	defer stop()
	err = runInterruptible(ctx, func() { signal.Reset(os.Interrupt) }, func() error {
		return cmd.run(&env{ctx: ctx, stdin: stdin, stdout: stdout, rep: rep})
	})
	rep.stopProgress()
	if err == nil {
		rep.flushWarnings()
		return ExitOK
	}
	code = classify(err, ctx)
	if big := (*denseTooLarge)(nil); errors.As(err, &big) {
		big.tool = name // its message says what this tool can do instead
	}
	if de := (*format.DataError)(nil); errors.As(err, &de) && de.Where == "stdin" && errors.Is(err, format.ErrEmptyInput) && isPipe(stdin) {
		// Nothing came down the pipe: the tool before this one failed,
		// and its own error, above, is the one that matters.
		err = &dataError{"stdin: no input: the command before " + name + " in the pipeline failed or wrote nothing"}
	}
	switch code {
	case exitPipe:
	case ExitInterrupt:
		rep.errorf("interrupted")
	case ExitInternal:
		rep.bug(err)
	default:
		rep.errorf("%v", err)
	}
	return code
}

// stdinWhat is what each tool reads from standard input, for the notice
// it prints when that is a terminal.
var stdinWhat = map[string]string{
	"gpc-orthant": "a covariance (Arrow or CSV)",
	"gpc-train":   "a covariance stream (gpc-kernel's output)",
	"gpc-predict": "a cloud (gpc-train's output) or, with --cloud, a covariance stream",
	"gpc-kernel":  "features (--train - or --test -)",
	"gpc-tune":    "features (--train -)",
	"gpc-mcmc":    "features (--train - or --test -)",
	"gpc-show":    "an Arrow stream (a gpc tool's output)",
	"gpc-fit":     "features (--train -)",
}

// ttyNotice is a standard input that is a terminal: before its first read
// it says on standard error what the tool waits for, as other filters do
// (a tool that reads a terminal silently looks hung).
type ttyNotice struct {
	r    io.Reader
	note func()
	once sync.Once
}

func (t *ttyNotice) Read(p []byte) (int, error) {
	t.once.Do(t.note)
	return t.r.Read(p)
}

// noticef prints a line that is neither an error nor a warning at once.
func (r *reporter) noticef(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clearLine()
	fmt.Fprintf(r.w, "%s: %s\n", r.name, fmt.Sprintf(format, args...))
}

// joinNegative joins a long flag and a negative number (or list) after it
// ("--samples -5" to "--samples=-5"), which the parser would otherwise
// take for a short flag: the flag's own check then says what is wrong
// with the value, in one line.
func joinNegative(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if next := ""; strings.HasPrefix(a, "--") && !strings.Contains(a, "=") && i+1 < len(args) {
			// A value, never a flag: a minus and a digit or a point
			// (-5, -0.5, -1,-2 for a list; no flag is a digit).
			if next = args[i+1]; len(next) > 1 && next[0] == '-' && (next[1] >= '0' && next[1] <= '9' || next[1] == '.') {
				a += "=" + next
				i++
			}
		}
		out = append(out, a)
	}
	return out
}

// interruptGrace is how long an interrupted tool waits for its work to
// reach the next batch. The work checks for an interrupt after every batch
// of rows and every block of variables (core checks once per block of 64
// variables in each particle group: milliseconds, but seconds for groups of
// a hundred thousand particles); a read or a write that blocks (a terminal,
// a stalled pipe) may never return. Past the grace the tool leaves the work
// behind and exits; its output has no end-of-stream marker either way.
const interruptGrace = 2 * time.Second

// interruptContext returns a context cancelled by the first SIGINT or
// SIGTERM, and what stops catching them.
func interruptContext() (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-ch:
			cancel()
		case <-done:
		}
	}()
	return ctx, func() {
		if ctx.Err() != nil {
			// Interrupted, the tool is about to exit with status 130: a
			// SIGTERM that arrives now (a job script passing on the one
			// its batch system sent to every process of the job) must
			// not kill it with the default action.
			signal.Ignore(syscall.SIGTERM)
		}
		signal.Stop(ch)
		close(done)
		cancel()
	}
}

// runInterruptible runs work in a goroutine. When ctx is cancelled (SIGINT
// or SIGTERM) it calls interrupted, which restores SIGINT's default
// action, so that a second ^C kills the process at once, and waits for
// work to stop at its next batch, or interruptGrace at most. A second
// SIGTERM changes nothing: a batch system sends SIGTERM to every process
// of a job, and the script that runs the tool often passes its own on as
// well (examples/slurm/task.sbatch), so a tool may get it twice and
// still stops at its next batch with exit status 130. A panic in work is
// returned as an error (exit 100), since it happens in another goroutine
// than the runner's recover.
func runInterruptible(ctx context.Context, interrupted func(), work func() error) error {
	done := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- panicError(p)
			}
		}()
		done <- work()
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	interrupted()
	select {
	case err := <-done:
		return err // nil if it had finished its output
	case <-time.After(interruptGrace):
		return ctx.Err()
	}
}

// classify maps an error to its exit status, by type, once, at the boundary.
func classify(err error, ctx context.Context) int {
	var ec interface{ ExitCode() int }
	var ie *core.InputError
	var me *core.MemoryError
	switch {
	case errors.Is(err, syscall.EPIPE):
		return exitPipe
	case ctx.Err() != nil:
		// Interrupted: a failure now (an upstream tool of the pipeline
		// that died of the same ^C cut our input short) is the interrupt's.
		return ExitInterrupt
	case errors.As(err, &ec):
		return ec.ExitCode()
	case errors.As(err, &ie):
		return ExitData
	case errors.As(err, &me):
		return ExitUsage
	}
	return ExitInternal
}

// openInput opens the positional input: "-" or "" is stdin.
func openInput(path string, stdin io.Reader) (r io.Reader, name string, closer func(), err error) {
	if path == "" || path == "-" {
		return stdin, "stdin", func() {}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, path, nil, &format.IOError{Op: "open input", Err: err}
	}
	return f, path, func() { f.Close() }, nil
}

// oneLine keeps a message on one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

// passMeta copies into dst the gpc: keys of an input's metadata that
// describe its content (kernel, hyperparameters, labels, fingerprint), not
// those that describe the stream itself, and none that dst already has.
func passMeta(dst, src map[string]string) {
	for k, v := range src {
		switch k {
		case format.KeySchema, format.KeyTool, format.KeyVersion, format.KeyRows, format.KeyN, format.KeyTestsFirst,
			format.KeyFactor, format.KeyFactorA, format.KeyFactorB, format.KeyFactorMu, format.KeyFactorTau, format.KeyFactorKappa, format.KeyFactorM:
			continue // the stream's own; a cloud's factor (N values each) stays with it
		}
		if _, set := dst[k]; !set && strings.HasPrefix(k, "gpc:") {
			dst[k] = v
		}
	}
}

func fmtFloat(v float64) string {
	if math.IsNaN(v) {
		return ""
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
