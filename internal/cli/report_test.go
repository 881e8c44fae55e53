package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestProgress: the progress line says the variables done, the particles,
// the rate and the time left; on a terminal it is redrawn in place (with
// blanks instead of escape sequences where TERM=dumb), elsewhere it is a
// line each time; warnings come when the run has succeeded, and they and
// errors start on a line of their own.
func TestProgress(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		tty, dumb bool
		redraw    string // what starts every redrawn progress line
	}{
		{"log", false, false, ""},
		{"terminal", true, false, "\r\033[K"},
		{"dumb terminal", true, true, "\r"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			r := newReporter("gpc-x", &buf)
			r.tty, r.dumb = c.tty, c.dumb
			r.startProgress(true, estimateProgress(1000, 40))
			r.interval = 0 // report every call
			r.add(10 * 1000)
			r.warnf("a warning")
			r.add(30 * 1000)
			r.stopProgress()
			r.flushWarnings()
			r.errorf("an error")
			out := buf.String()
			for _, want := range []string{"25.0%: 10 of 40 variables, 1000 particles, ", "particle-variables/s, ", " left", "100.0%: 40 of 40 variables"} {
				if !strings.Contains(out, want) {
					t.Errorf("%q lacks %q", out, want)
				}
			}
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if c.redraw != "" { // the two progress lines share one line of the terminal
				lines = append(strings.Split(lines[0], c.redraw)[1:], lines[1:]...)
				for i := range 2 {
					lines[i] = c.redraw + strings.TrimRight(lines[i], " ")
				}
			}
			if len(lines) != 4 || lines[2] != "gpc-x: warning: a warning" || lines[3] != "gpc-x: an error" {
				t.Fatalf("lines %q", lines)
			}
			if c.redraw != "" && (!strings.HasPrefix(lines[0], c.redraw+"gpc-x:  25.0%") || !strings.HasPrefix(lines[1], c.redraw+"gpc-x: 100.0%")) {
				t.Errorf("progress lines not redrawn with %q: %q", c.redraw, lines)
			}
			if strings.Contains(out, "\033") != (c.tty && !c.dumb) {
				t.Errorf("escape sequences in %q", out)
			}
		})
	}
}

// TestProgressRows: gpc-predict's and gpc-kernel's progress counts rows.
func TestProgressRows(t *testing.T) {
	var buf bytes.Buffer
	r := newReporter("gpc-predict", &buf)
	r.startProgress(true, rowsProgress(200, "test rows"))
	r.add(200)
	r.stopProgress()
	if !strings.Contains(buf.String(), "100.0%: 200 of 200 test rows, ") || !strings.Contains(buf.String(), "rows/s") {
		t.Errorf("%q", buf.String())
	}
}
