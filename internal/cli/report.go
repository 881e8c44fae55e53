package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gpc-mc/gpc/core"
)

// reporter writes a tool's messages to standard error: errors (always),
// warnings (unless --quiet) and progress (with --progress). It is safe for
// concurrent use, since the estimator reports progress from its workers.
//
// Warnings are held until the run ends and printed only if it succeeds: a
// warning is about a result (its standard error, its labels), and a run
// that fails has none, so that a failure is always exactly one line.
type reporter struct {
	name  string
	w     io.Writer
	quiet bool
	// progress is --progress: preparing says what it prepares.
	progress bool
	pending  []string // warnings not yet printed

	mu       sync.Mutex
	tty      bool // redraw the progress line in place
	dumb     bool // a terminal without cursor control (TERM=dumb)
	p        progress
	done     int64
	start    time.Time
	last     time.Time
	drawn    int // the width of a progress line on the terminal without its newline
	interval time.Duration
}

// progress describes a long piece of work for the progress line.
type progress struct {
	total int64                   // units of work, at least 1
	what  func(done int64) string // what is done, in the user's terms
	unit  string                  // the unit of the rate
}

// estimateProgress is the estimator's: its callback counts particle-steps
// (one particle through one variable), Samples x N in all, reported as the
// variables done by the particles (on average: the groups run a few at a
// time, each through all N variables).
func estimateProgress(samples, n int) progress {
	total := int64(samples) * int64(n)
	return progress{total: total, unit: "particle-variables", what: func(done int64) string {
		return fmt.Sprintf("%d of %d variables, %d particles", done/int64(samples), n, samples)
	}}
}

// rowsProgress counts rows (test rows predicted, covariance rows written).
func rowsProgress(total int, what string) progress {
	return progress{total: int64(total), unit: "rows", what: func(done int64) string {
		return fmt.Sprintf("%d of %d %s", done, total, what)
	}}
}

// countProgress counts units of work that are their own unit (gpc-tune's
// estimates, gpc-mcmc's iterations).
func countProgress(total int, unit string) progress {
	return progress{total: int64(total), unit: unit, what: func(done int64) string {
		return fmt.Sprintf("%d of %d %s", done, total, unit)
	}}
}

func newReporter(name string, w io.Writer) *reporter {
	return &reporter{name: name, w: w, tty: isTerminal(w), dumb: os.Getenv("TERM") == "dumb"}
}

// errorf prints the tool's one error line, without the package prefixes
// of the errors in it (userMessage).
func (r *reporter) errorf(format string, args ...any) {
	r.line(userMessage(oneLine(fmt.Sprintf(format, args...))))
}

// line prints a line at once, clearing a progress line first.
func (r *reporter) line(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clearLine()
	fmt.Fprintf(r.w, "%s: %s\n", r.name, msg)
}

// internalf prints the tool's one error line for a bug (exit 100) as it
// is: the package prefixes say where to look, in a bug report.
func (r *reporter) internalf(format string, args ...any) {
	r.line(oneLine(fmt.Sprintf(format, args...)))
}

// warnf records a warning, printed by flushWarnings unless --quiet.
func (r *reporter) warnf(format string, args ...any) {
	if r.quiet {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending = append(r.pending, fmt.Sprintf("%s: warning: %s\n", r.name, userMessage(oneLine(fmt.Sprintf(format, args...)))))
}

// errorPrefixes are the gpc packages whose error strings start with the
// package's name ("format: stdin: batch 2: ...", "core: covariance is not
// positive definite"), the Go convention inside the code (STYLE.md). A
// tool's line names the tool instead, so userMessage leaves them out.
// TestErrorPrefixes checks that every package with such strings is here.
var errorPrefixes = map[string]bool{"format": true, "core": true, "gp": true, "fit": true, "gemm": true, "vecchia": true, "vfit": true}

// userMessage removes from msg the package prefixes of errorPrefixes: at
// its start and where a wrapping error's text gives way to the wrapped
// error's (after ": "), as in "fit: EP stage: fit: the log marginal
// likelihood ...". The part right after "format: " is the input's name
// (a file, or stdin), kept even for a file named like a package ("core").
// A message of the tools' own that starts with such a file's name loses
// it: their messages may start with another error's text.
func userMessage(msg string) string {
	var b strings.Builder
	place := false // this part is format's input name, not a prefix
	for {
		part, rest, more := strings.Cut(msg, ": ")
		if !more {
			b.WriteString(msg)
			return b.String()
		}
		if !place && errorPrefixes[part] {
			place = part == "format"
		} else {
			b.WriteString(part)
			b.WriteString(": ")
			place = false
		}
		msg = rest
	}
}

// note prints a line of progress at once (gpc-fit's evaluations with
// --progress), clearing a progress line first.
func (r *reporter) note(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clearLine()
	fmt.Fprintf(r.w, "%s: %s\n", r.name, oneLine(fmt.Sprintf(format, args...)))
}

// trace returns, when enabled, a core.Trace that notes each phase of a
// preparation (EP's sweeps, the ordering and factorisation, the pilots)
// with the time since the preparation began, and a done func that notes
// its end; disabled, a nil Trace and a done that does nothing. The
// preparation is O(N^3) and takes most of a large run: a user at N = 5000
// sees where the time goes instead of a blank wait.
func (r *reporter) trace(enabled bool) (core.Trace, func()) {
	if !enabled {
		return nil, func() {}
	}
	start := time.Now()
	tr := func(phase string) {
		r.note("preparing, %s: %s", fmtElapsed(time.Since(start)), phase)
	}
	return tr, func() { r.note("prepared in %s", fmtElapsed(time.Since(start))) }
}

// fmtElapsed writes a duration to a tenth of a second.
func fmtElapsed(d time.Duration) string {
	return fmt.Sprintf("%.1fs", d.Seconds())
}

// flushWarnings prints the warnings recorded, once the run has succeeded.
func (r *reporter) flushWarnings() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clearLine()
	for _, w := range r.pending {
		io.WriteString(r.w, w)
	}
	r.pending = nil
}

// startProgress begins a progress report of p. It does nothing unless
// enabled. On a terminal the line is redrawn in place five times a second;
// elsewhere (a log file) a plain line is written every two seconds.
func (r *reporter) startProgress(enabled bool, p progress) {
	if !enabled || p.total <= 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.p, r.done = p, 0
	r.start = time.Now()
	r.last = r.start
	r.interval = 2 * time.Second
	if r.tty {
		r.interval = 200 * time.Millisecond
	}
}

// add records n more units done; it is the estimator's Progress callback.
func (r *reporter) add(n int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.p.total == 0 {
		return
	}
	r.done = min(r.done+n, r.p.total)
	now := time.Now()
	if now.Sub(r.last) < r.interval && r.done < r.p.total {
		return
	}
	r.last = now
	el := now.Sub(r.start).Seconds()
	rate := float64(r.done) / max(el, 1e-9)
	left := float64(r.p.total-r.done) / max(rate, 1e-9)
	r.drawLine(fmt.Sprintf("%s: %5.1f%%: %s, %.3g %s/s, %s left", r.name,
		100*float64(r.done)/float64(r.p.total), r.p.what(r.done), rate, r.p.unit, fmtDuration(left)))
}

// drawLine writes a progress line: redrawn in place on a terminal, a line
// of its own elsewhere. r.mu is held.
func (r *reporter) drawLine(msg string) {
	switch {
	case !r.tty:
		fmt.Fprintln(r.w, msg)
	case r.dumb: // no escape sequences: overwrite the old line with blanks
		width := utf8.RuneCountInString(msg)
		fmt.Fprintf(r.w, "\r%s%s", msg, strings.Repeat(" ", max(0, r.drawn-width)))
		r.drawn = max(width, 1)
	default:
		fmt.Fprintf(r.w, "\r\033[K%s", msg)
		r.drawn = max(utf8.RuneCountInString(msg), 1)
	}
}

// stopProgress ends the progress line.
func (r *reporter) stopProgress() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clearLine()
	r.p = progress{}
}

func (r *reporter) clearLine() {
	if r.drawn > 0 {
		fmt.Fprint(r.w, "\n")
		r.drawn = 0
	}
}

func fmtDuration(s float64) string {
	if s > 100*24*3600 {
		return "more than 100 days"
	}
	d := time.Duration(s * float64(time.Second)).Round(time.Second)
	return d.String()
}
