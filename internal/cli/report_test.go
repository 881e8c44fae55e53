package cli

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/gpc-mc/gpc/format"
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

// TestProgressPreparation: with --progress gpc-orthant reports the
// preparation's phases in order, each with the time since it began (EP's
// factorisation of R, its sweeps with their change, the recompute, each
// candidate's ordering and pilot, the end), before the particles' progress;
// without it, nothing; and the result is the same bits either way.
func TestProgressPreparation(t *testing.T) {
	n := 60
	cov := make([]float64, n*n)
	for i := range n {
		for j := range n {
			d := float64(i-j) / 8
			cov[i*n+j] = math.Exp(-d * d)
			if i == j {
				cov[i*n+j] += 0.1
			}
		}
	}
	in := covStream(t, &format.Covariance{N: n, Cov: cov}, nil)
	args := []string{"--samples", "4000", "--seed", "3"}
	var out, errb bytes.Buffer
	if code := Orthant(append(args, "--progress"), bytes.NewReader(in), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSuffix(errb.String(), "\n"), "\n")
	want := []string{
		"preparing, ", "EP: factorising R (60 variables)",
		"EP: sweep 1 (stops at change < 0.001, at most 50 sweeps)", "EP: sweep 2, after change ",
		"EP: converged after ", "sites, pilot standard error ",
		"ep/greedy: ordering and factorising Sigma", "pilot 1 of at most 2: ep/greedy, 1000 particles",
		"met/sharp: ordering and factorising", "met/sharp: tilting solve",
		"pilot 2 of at most 2: met/sharp, 1000 particles", "prepared in ", "100.0%: 60 of 60 variables",
		"estimate: log P ", "from 32 groups: effectively ",
	}
	at := 0
	for _, l := range lines {
		if !progressLine.MatchString(l) {
			t.Errorf("not a progress line: %q", l)
		}
		for at < len(want) && strings.Contains(l, want[at]) {
			at++
		}
	}
	if at < len(want) {
		t.Errorf("stderr lacks %q (in order):\n%s", want[at], errb.String())
	}
	var quiet, quietErr bytes.Buffer
	if code := Orthant(args, bytes.NewReader(in), &quiet, &quietErr); code != 0 || quietErr.Len() > 0 {
		t.Fatalf("without --progress: exit %d, stderr %q", code, quietErr.String())
	}
	if !bytes.Equal(out.Bytes(), quiet.Bytes()) {
		t.Error("--progress changed the output")
	}
}
