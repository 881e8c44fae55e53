package cli

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal and returns its two sides.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("ptsname: %v", err)
	}
	slave, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open the pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { slave.Close() })
	return master, slave
}

// TestStdinTerminal: a tool that reads a terminal says on standard error
// what it waits for (then reads what is typed, to ^D), and says nothing
// when standard input is /dev/null or when its input is a file.
func TestStdinTerminal(t *testing.T) {
	master, slave := openPTY(t)
	// Typed at the terminal: a 2 x 2 covariance, then ^D.
	if _, err := master.WriteString("1,0.5\n0.5,1\n\x04"); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := Orthant([]string{"--samples", "64", "--format", "csv"}, slave, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	want := "gpc-orthant: waiting for a covariance (Arrow or CSV) on standard input, a terminal: pipe it in or name a file (see --help); ^D ends the input, ^C stops\n"
	if errb.String() != want {
		t.Errorf("stderr %q, want %q", errb.String(), want)
	}
	if !strings.HasPrefix(out.String(), "log_p,") {
		t.Errorf("stdout %q", out.String())
	}
	// A file argument: standard input (the terminal) is not read.
	errb.Reset()
	if code := Orthant([]string{"--samples", "64", "--format", "csv", "testdata/equicorr3.csv"}, slave, &out, &errb); code != 0 || errb.Len() > 0 {
		t.Errorf("with a file: exit %d, stderr %q", code, errb.String())
	}
	// /dev/null is a character device but not a terminal.
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	errb.Reset()
	Orthant(nil, null, &out, &errb)
	if errb.String() != "gpc-orthant: stdin: empty input\n" {
		t.Errorf("< /dev/null: stderr %q", errb.String())
	}
}

// TestTuneTerminalWidth: on a terminal 80 columns wide, gpc-tune's table
// keeps the columns that fit and names the others; off a terminal, --format
// table keeps them all.
func TestTuneTerminalWidth(t *testing.T) {
	master, slave := openPTY(t)
	if err := unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 80}); err != nil {
		t.Skipf("set the terminal's size: %v", err)
	}
	args := tinyTrain("--beta", "1,2", "--samples", "64", "--exploit-samples", "64", "--no-optimize")
	var errb bytes.Buffer
	if code := Tune(args, bytes.NewReader(nil), slave, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if err := master.SetReadDeadline(time.Now().Add(2 * time.Second)); err != nil {
		t.Skipf("read deadline on the pseudo-terminal: %v", err)
	}
	var screen bytes.Buffer
	buf := make([]byte, 4096)
	for !strings.Contains(screen.String(), "--format csv shows them all") {
		n, err := master.Read(buf)
		screen.Write(buf[:n])
		if err != nil {
			break
		}
	}
	lines := strings.Split(strings.TrimSpace(strings.ReplaceAll(screen.String(), "\r", "")), "\n")
	for _, l := range lines[:len(lines)-1] {
		if len(l) > 80 {
			t.Errorf("a line of %d characters on an 80-column terminal: %q", len(l), l)
		}
	}
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "(") || !strings.Contains(last, "more columns, wider than the terminal: ") {
		t.Errorf("the table ends with %q\n%s", last, screen.String())
	}
	full := runCLI(t, Tune, cliCase{args: append(args, "--format", "table")})
	if !strings.Contains(strings.SplitN(string(full), "\n", 2)[0], "width_log_beta") {
		t.Errorf("--format table off a terminal lost columns:\n%s", full)
	}
}
