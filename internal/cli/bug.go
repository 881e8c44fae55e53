package cli

// Internal errors (exit 100): a bug, a broken invariant or a recovered
// panic. The line names where it happened, asks for a report, and says how
// to get the stack (GPC_TRACEBACK=1).

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
)

// tracebackEnv is the environment variable that makes an internal error
// print the stack of the panic after its line.
const tracebackEnv = "GPC_TRACEBACK"

// reportHelp ends an internal error's line: what to do about it.
const reportHelp = "this is a bug in gpc: please report it with the command that failed (https://" + modulePath + "/issues); " + tracebackEnv + "=1 in the environment prints the stack"

// internalError is a bug: a broken invariant or a recovered panic, with
// where it happened (site) and the panic's stack, when known.
type internalError struct {
	msg   string
	site  string
	stack []byte
}

func (e *internalError) Error() string {
	if e.site != "" {
		return "internal error at " + e.site + ": " + e.msg
	}
	return "internal error: " + e.msg
}

func (e *internalError) ExitCode() int { return ExitInternal }

// panicError is the internal error of a recovered panic p. Call it in the
// deferred function that recovered p: the panicking frames are still on
// the stack then, and the site is the innermost of gpc's own.
func panicError(p any) *internalError {
	return &internalError{msg: fmt.Sprint(p), site: panicSite(), stack: debug.Stack()}
}

// panicSite is where the panic being recovered was raised, in gpc's own
// code: the first frame below runtime.gopanic whose function is in gpc's
// module (a panic inside a library, gonum's or Arrow's, names the gpc
// function that called it), as "core/factor.go:123 (core.(*Factor).Prepare)";
// "" when there is none.
func panicSite() string {
	pcs := make([]uintptr, 128)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(1, pcs)])
	panicking := false
	for {
		f, more := frames.Next()
		switch {
		case f.Function == "runtime.gopanic":
			panicking = true
		case panicking && strings.HasPrefix(f.Function, modulePath+"/"):
			return frameSite(f.Function, f.File, f.Line)
		}
		if !more {
			return ""
		}
	}
}

// frameSite is a frame's place in gpc's source: its package's directory
// in the module and its file's name, the line, and the function.
func frameSite(function, file string, line int) string {
	fn := strings.TrimPrefix(function, modulePath+"/")
	pkg := fn
	if i := strings.LastIndex(fn, "/"); i >= 0 {
		pkg = fn[:i+1] + strings.SplitN(fn[i+1:], ".", 2)[0]
		fn = fn[i+1:]
	} else {
		pkg = strings.SplitN(fn, ".", 2)[0]
	}
	base := file[strings.LastIndexAny(file, `/\`)+1:]
	return pkg + "/" + base + ":" + strconv.Itoa(line) + " (" + fn + ")"
}

// bug prints the line of an internal error err, which asks for a report,
// and with GPC_TRACEBACK=1 the stack of its panic after it. An error that
// is not an internalError (one that no type classified) is an internal
// error too.
func (r *reporter) bug(err error) {
	var ie *internalError
	if errors.As(err, &ie) {
		r.internalf("%v: %s", err, reportHelp)
	} else {
		r.internalf("internal error: %v: %s", err, reportHelp)
	}
	if v := os.Getenv(tracebackEnv); v == "" || v == "0" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if ie == nil || ie.stack == nil {
		fmt.Fprintf(r.w, "%s: no stack: the error was returned (%T), not raised by a panic\n", r.name, err)
		return
	}
	r.w.Write(ie.stack)
}
