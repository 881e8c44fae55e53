package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// TestBuildText: --version's second line names the commit, whether the
// checkout had changes, the module version and the Go version, from
// whatever the build info holds.
func TestBuildText(t *testing.T) {
	rev := "1ce60dd3ab12e0c1f7d2a9b8c7e6f5a4b3c2d1e0"
	for _, c := range []struct {
		name string
		info *debug.BuildInfo
		want []string
	}{
		{"go build in a checkout", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261128120000-1ce60dd3ab12+dirty"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: "2026-11-28T12:00:00Z"}, {Key: "vcs.modified", Value: "true"}}},
			[]string{"commit " + rev + " (2026-11-28T12:00:00Z) with uncommitted changes", "module github.com/gpc-mc/gpc v0.0.0-20261128120000-1ce60dd3ab12+dirty", "built with go1.26.8"}},
		{"go install ...@commit", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261128120000-1ce60dd3ab12"}},
			[]string{"commit 1ce60dd3ab12,", "module github.com/gpc-mc/gpc v0.0.0-20261128120000-1ce60dd3ab12,"}},
		{"go install ...@v0.2.0", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.2.0"}},
			[]string{"commit unknown", "module github.com/gpc-mc/gpc v0.2.0,"}},
		{"no version control", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}},
			[]string{"commit unknown", "built with go1.26.8"}},
	} {
		got := buildText(c.info, true)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", c.name, got, w)
			}
		}
		if strings.Contains(got, "(devel)") || strings.Contains(got, "\n") {
			t.Errorf("%s: %q", c.name, got)
		}
	}
	if got := buildText(nil, false); !strings.Contains(got, "no commit known") {
		t.Errorf("without build info: %q", got)
	}
}

// TestVersionCommit: a tool built in a git checkout (go build, as the
// README's first command) prints with --version the commit it was built
// from. go build records no commit in a git worktree (whose .git is a
// file) nor with -buildvcs=false: the test says so and skips there.
func TestVersionCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gpc-show: skipped under -short")
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "gpc-show")
	build := exec.Command("go", "build", "-o", bin, modulePath+"/cmd/gpc-show")
	build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=auto")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	info, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(info), "vcs.revision=") {
		t.Skip("go build recorded no commit in this checkout (a git worktree, whose .git is a file, is not stamped)")
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if rev := strings.TrimSpace(string(head)); !strings.Contains(string(out), "commit "+rev) {
		t.Errorf("gpc-show --version printed %q: no commit %s", out, rev)
	}
}
