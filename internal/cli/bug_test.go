package cli

import (
	"bytes"
	"errors"
	"regexp"
	"strings"
	"testing"
)

// panicCmd is a tool that panics where --at says: in Validate (run's own
// recover catches it) or in its run (runInterruptible's goroutine's).
type panicCmd struct {
	At          string `enum:"validate,run" default:"run"`
	commonFlags `embed:""`
}

func (c *panicCmd) Validate() error {
	if c.At == "validate" {
		return errors.New(pastTheEnd(nil))
	}
	return nil
}

func (c *panicCmd) run(*env) error { return errors.New(pastTheEnd([]string{"a"})) }

// pastTheEnd indexes past the end of s: a bug.
func pastTheEnd(s []string) string { return s[len(s)] }

// TestInternalErrorSite: an internal error (a recovered panic, in either
// recover) names the file, line and function of gpc's code where it
// happened, asks for a report, and prints the stack with GPC_TRACEBACK=1,
// and only then.
func TestInternalErrorSite(t *testing.T) {
	line := regexp.MustCompile(`^gpc-bug: internal error at internal/cli/bug_test\.go:[0-9]+ \(cli\.pastTheEnd\): runtime error: index out of range \[[01]\] with length [01]: this is a bug in gpc: please report it with the command that failed \(https://github\.com/gpc-mc/gpc/issues\); GPC_TRACEBACK=1 in the environment prints the stack$`)
	for _, at := range []string{"validate", "run"} {
		for _, traceback := range []string{"", "1"} {
			t.Setenv(tracebackEnv, traceback)
			var out, errb bytes.Buffer
			code := run("gpc-bug", "a tool that panics", &panicCmd{}, []string{"--at", at}, bytes.NewReader(nil), &out, &errb)
			if code != ExitInternal || out.Len() > 0 {
				t.Errorf("--at %s: exit %d, stdout %q", at, code, out.String())
			}
			first, rest, _ := strings.Cut(errb.String(), "\n")
			if !line.MatchString(first) {
				t.Errorf("--at %s: the error line is %q", at, first)
			}
			if traceback == "" && rest != "" {
				t.Errorf("--at %s: more than one line without %s:\n%s", at, tracebackEnv, errb.String())
			}
			if traceback == "1" && (!strings.Contains(rest, "goroutine ") || !strings.Contains(rest, "cli.pastTheEnd(")) {
				t.Errorf("--at %s, %s=1: no stack after the line:\n%s", at, tracebackEnv, errb.String())
			}
		}
	}
}

// TestInternalErrorReturned: an error that no type classifies is an
// internal error too, asks for a report, and says that it has no stack.
func TestInternalErrorReturned(t *testing.T) {
	t.Setenv(tracebackEnv, "1")
	var errb bytes.Buffer
	r := newReporter("gpc-x", &errb)
	r.bug(errors.New("core: a broken invariant"))
	want := "gpc-x: internal error: core: a broken invariant: " + reportHelp + "\ngpc-x: no stack: the error was returned (*errors.errorString), not raised by a panic\n"
	if errb.String() != want {
		t.Errorf("got %q, want %q", errb.String(), want)
	}
}

// TestFrameSite: a frame's function and file name the package directory
// in the module, the file, the line and the function.
func TestFrameSite(t *testing.T) {
	for _, c := range []struct{ fn, file, want string }{
		{"github.com/gpc-mc/gpc/core.(*Factor).Prepare", "/src/gpc/core/factor.go", "core/factor.go:7 (core.(*Factor).Prepare)"},
		{"github.com/gpc-mc/gpc/core/vecchia.Prepare.func1", "/x/core/vecchia/prepare.go", "core/vecchia/prepare.go:7 (vecchia.Prepare.func1)"},
		{"github.com/gpc-mc/gpc/internal/cli.(*trainCmd).run", `C:\gpc\internal\cli\train.go`, "internal/cli/train.go:7 (cli.(*trainCmd).run)"},
	} {
		if got := frameSite(c.fn, c.file, 7); got != c.want {
			t.Errorf("frameSite(%q, %q) = %q, want %q", c.fn, c.file, got, c.want)
		}
	}
}
