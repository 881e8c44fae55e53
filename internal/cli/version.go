package cli

// --version: gpc's version, and what the build info says of the build
// (the commit, the module version go install was given, the Go version).

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/internal/gemm"
)

// Version is the version of the gpc tools, the gpc:version of every
// stream they write. The streams carry it and never the commit, so that
// the same input, flags and seed give the same bytes from any build.
const Version = "0.1.0"

// modulePath is gpc's module path: go install takes it
// (go install github.com/gpc-mc/gpc/cmd/...@latest), and a frame of a
// panic is gpc's own when its function is in it.
const modulePath = "github.com/gpc-mc/gpc"

// versionText is --version's text: the tool, gpc's version and the kernels
// in use on its first line, and on its second what the build info says of
// the build.
func versionText(name string) string {
	info, ok := debug.ReadBuildInfo()
	return name + " (gpc) " + Version + ", GEMM kernel " + gemm.Path() + ", vector kernels " + core.VecPath() + "\n" + buildText(info, ok)
}

// buildText describes a build from its build info: the commit it was
// built from (vcs.revision and vcs.time, which go build records in a git
// checkout; else the commit of the main module's pseudo-version, which go
// install ...@commit records), whether the checkout had uncommitted
// changes (vcs.modified, or a +dirty version), the main module's version
// when it is a release or a pseudo-version, and the Go version and
// platform.
func buildText(info *debug.BuildInfo, ok bool) string {
	goVersion := runtime.Version()
	if !ok || info == nil {
		return "built with " + goVersion + " " + runtime.GOOS + "/" + runtime.GOARCH + ", without build information (no commit known)"
	}
	if info.GoVersion != "" {
		goVersion = info.GoVersion
	}
	var rev, when, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	mod := info.Main.Version
	if mod == "(devel)" {
		mod = ""
	}
	if rev == "" {
		rev = pseudoCommit(mod)
	}
	if modified == "" && strings.HasSuffix(mod, "+dirty") {
		modified = "true"
	}
	var b strings.Builder
	switch {
	case rev != "" && when != "":
		fmt.Fprintf(&b, "commit %s (%s)", rev, when)
	case rev != "":
		fmt.Fprintf(&b, "commit %s", rev)
	default:
		b.WriteString("commit unknown (no version control stamp: built outside a git checkout or with -buildvcs=false, from a module without a version)")
	}
	if modified == "true" {
		b.WriteString(" with uncommitted changes")
	}
	if mod != "" {
		fmt.Fprintf(&b, ", module %s %s", modulePath, mod)
	}
	fmt.Fprintf(&b, ", built with %s %s/%s", goVersion, runtime.GOOS, runtime.GOARCH)
	return b.String()
}

// pseudoCommit is the commit prefix of a Go pseudo-version
// (v0.0.0-20261128123456-1ce60dd3ab12, perhaps +dirty), or "".
func pseudoCommit(v string) string {
	v, _, _ = strings.Cut(v, "+")
	i := strings.LastIndex(v, "-")
	if i < 0 || len(v)-i-1 != 12 || strings.Count(v, "-") < 2 {
		return ""
	}
	h := v[i+1:]
	for _, c := range h {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return ""
		}
	}
	return h
}
