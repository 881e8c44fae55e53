package cli

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// reporter writes a tool's messages to standard error: errors (always),
// warnings (unless --quiet) and progress (with --progress). It is safe for
// concurrent use, since the estimator reports progress from its workers.
type reporter struct {
	name  string
	w     io.Writer
	quiet bool

	mu       sync.Mutex
	tty      bool
	total    int64
	done     int64
	unit     string
	start    time.Time
	last     time.Time
	drawn    bool // a progress line is on the terminal without its newline
	interval time.Duration
}

func newReporter(name string, w io.Writer) *reporter {
	return &reporter{name: name, w: w, tty: isTerminal(w)}
}

// errorf prints the tool's one error line.
func (r *reporter) errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clearLine()
	fmt.Fprintf(r.w, "%s: %s\n", r.name, oneLine(fmt.Sprintf(format, args...)))
}

// warnf prints a warning unless --quiet.
func (r *reporter) warnf(format string, args ...any) {
	if r.quiet {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clearLine()
	fmt.Fprintf(r.w, "%s: warning: %s\n", r.name, oneLine(fmt.Sprintf(format, args...)))
}

// startProgress begins a progress report over total units of work named
// unit (plural). It does nothing unless enabled.
func (r *reporter) startProgress(enabled bool, total int64, unit string) {
	if !enabled {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.total, r.done, r.unit = total, 0, unit
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
	if r.total == 0 {
		return
	}
	r.done += n
	now := time.Now()
	if now.Sub(r.last) < r.interval && r.done < r.total {
		return
	}
	r.last = now
	el := now.Sub(r.start).Seconds()
	rate := float64(r.done) / max(el, 1e-9)
	left := float64(r.total-r.done) / max(rate, 1e-9)
	msg := fmt.Sprintf("%s: %5.1f%% (%.3g of %.3g %s), %.3g %s/s, %s left", r.name,
		100*float64(r.done)/float64(r.total), float64(r.done), float64(r.total), r.unit, rate, r.unit, fmtDuration(left))
	if r.tty {
		fmt.Fprintf(r.w, "\r\033[K%s", msg)
		r.drawn = true
	} else {
		fmt.Fprintln(r.w, msg)
	}
}

// stopProgress ends the progress line.
func (r *reporter) stopProgress() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clearLine()
	r.total = 0
}

func (r *reporter) clearLine() {
	if r.drawn {
		fmt.Fprint(r.w, "\n")
		r.drawn = false
	}
}

func fmtDuration(s float64) string {
	d := time.Duration(s * float64(time.Second)).Round(time.Second)
	return d.String()
}
