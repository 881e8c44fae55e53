package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/cpu"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/internal/gemm"
)

// The markers around the part of docs/results.md that --doc rewrites;
// everything outside them is written by hand and kept.
const (
	docBegin = "<!-- BEGIN bench/repro output: generated, do not edit by hand -->"
	docEnd   = "<!-- END bench/repro output -->"
)

// regenerate is the command that rewrites docs/results.md, named by the
// staleness test's message.
const regenerate = "nice -n 10 go run ./bench/repro --full --out /tmp/repro --doc docs/results.md"

// coreHashPrefix introduces the hash of core/ in docs/results.md; the
// staleness test finds it there.
const coreHashPrefix = "- **core/ hash**: `"

// CoreHash is the SHA-256 of every non-test .go and .s file under
// root/core (testdata excluded), in the order of their slash paths: each
// file adds its path relative to root, its length and its bytes. It needs
// no git history, so a clean clone and a source tarball give the same
// hash; files is how many went into it.
func CoreHash(root string) (sum string, files int, err error) {
	var paths []string
	err = filepath.WalkDir(filepath.Join(root, "core"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		name := d.Name()
		if (strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go")) || strings.HasSuffix(name, ".s") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			paths = append(paths, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return "", 0, err
	}
	if len(paths) == 0 {
		return "", 0, fmt.Errorf("repro: no Go or assembly files under %s", filepath.Join(root, "core"))
	}
	slices.Sort(paths)
	h := sha256.New()
	for _, p := range paths {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
		if err != nil {
			return "", 0, err
		}
		fmt.Fprintf(h, "%s\n%d\n", p, len(b))
		h.Write(b)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), len(paths), nil
}

// repoRoot is the directory above dir (or dir itself) that holds the
// module's go.mod.
func repoRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.HasPrefix(b, []byte("module github.com/gpc-mc/gpc\n")) {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("repro: not inside the gpc module (no go.mod of module gpc above the working directory)")
		}
		dir = up
	}
}

// Provenance says what produced a run: code, machine, time.
type Provenance struct {
	Commit   string // short hash, "+ uncommitted changes" when the tree differs; "unknown" without git
	Date     time.Time
	CoreHash string
	Files    int
	CPUModel string // lscpu's model name
	CPUs     int
	AVX512   bool // AVX-512F
	Vec      string
	Gemm     string
	Go       string
	LoadAvg  string // /proc/loadavg's 1, 5 and 15 minute averages at the end of the run
}

// provenance collects the run's provenance in the module at root.
func provenance(root string) (*Provenance, error) {
	sum, files, err := CoreHash(root)
	if err != nil {
		return nil, err
	}
	p := &Provenance{Date: time.Now().UTC(), CoreHash: sum, Files: files, CPUModel: cpuModel(), CPUs: runtime.NumCPU(),
		AVX512: cpu.X86.HasAVX512F, Vec: core.VecPath(), Gemm: gemm.Path(), Go: runtime.Version(), Commit: "unknown (no git)"}
	if out, err := gitOut(root, "rev-parse", "--short=12", "HEAD"); err == nil {
		p.Commit = out
		// Only the code the run compiles counts as a change (the run
		// rewrites docs/ itself; tests and documents do not run).
		if st, err := gitOut(root, "status", "--porcelain", "--untracked-files=no", "--", "*.go", "*.s", ":!*_test.go", "go.mod", "go.sum"); err == nil && st != "" {
			p.Commit += " + uncommitted changes"
		}
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			p.LoadAvg = strings.Join(f[:3], " ")
		}
	}
	return p, nil
}

func gitOut(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}

// cpuModel is lscpu's "Model name" (/proc/cpuinfo's "model name" without
// lscpu; "unknown" without either).
func cpuModel() string {
	if out, err := exec.Command("lscpu").Output(); err == nil {
		for _, l := range strings.Split(string(out), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "Model name" {
				return strings.TrimSpace(v)
			}
		}
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				return strings.TrimSpace(v)
			}
		}
	}
	return "unknown"
}

// totalCPU is the CPU time of this process and of its finished children
// (R's mvtnorm), user and system.
func totalCPU() (user, sys float64) {
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if syscall.Getrusage(who, &ru) == nil {
			user += time.Duration(ru.Utime.Nano()).Seconds()
			sys += time.Duration(ru.Stime.Nano()).Seconds()
		}
	}
	return user, sys
}

// runSection is the generated "The run" section of docs/results.md.
func runSection(rep *Report, p *Provenance, command string) string {
	b := &strings.Builder{}
	user, sys := totalCPU()
	yes := map[bool]string{true: "yes", false: "no"}
	b.WriteString("## The run\n\n")
	fmt.Fprintf(b, "- **Commit**: `%s`, run finished %s\n", p.Commit, p.Date.Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(b, "%s%s` (SHA-256 of the %d non-test .go and .s files under core/, by path; `TestResultsCurrent` in bench/repro fails when the tree's differs)\n", coreHashPrefix, p.CoreHash, p.Files)
	fmt.Fprintf(b, "- **Command**: `%s` (plan %q)\n", command, rep.Plan.Name)
	fmt.Fprintf(b, "- **Run time**: %.0f s wall, %.0f s user + %.0f s system CPU (this process and R's)", rep.Seconds, user, sys)
	if p.LoadAvg != "" {
		fmt.Fprintf(b, "; load average at the end %s (1, 5, 15 min) on %d CPUs", p.LoadAvg, p.CPUs)
	}
	b.WriteString("\n")
	fmt.Fprintf(b, "- **CPU**: `lscpu` model name %q, %d CPUs, AVX-512: %s; gpc's vector path %s, matrix products %s; %s\n", p.CPUModel, p.CPUs, yes[p.AVX512], p.Vec, p.Gemm, p.Go)
	if rep.MvtnormNote != "" {
		fmt.Fprintf(b, "- **R's mvtnorm**: %s\n", rep.MvtnormNote)
	} else if v, err := exec.Command("Rscript", "-e", `cat(R.version$major, ".", R.version$minor, " with mvtnorm ", format(packageVersion("mvtnorm")), sep = "")`).Output(); err == nil {
		fmt.Fprintf(b, "- **R's mvtnorm**: R %s\n", strings.TrimSpace(string(v)))
	}
	return b.String()
}

// writeDoc replaces the generated part of the markdown file doc (between
// docBegin and docEnd) with the run's section and tables, and copies the
// figures from dir into the folder named as doc without ".md".
func writeDoc(doc string, rep *Report, p *Provenance, command, dir string) error {
	old, err := os.ReadFile(doc)
	if err != nil {
		return err
	}
	i, j := bytes.Index(old, []byte(docBegin)), bytes.Index(old, []byte(docEnd))
	if i < 0 || j < i {
		return fmt.Errorf("repro: %s has no %q ... %q markers for the generated part", doc, docBegin, docEnd)
	}
	img := strings.TrimSuffix(doc, ".md")
	if err := os.MkdirAll(img, 0o755); err != nil {
		return err
	}
	for _, f := range append([]string{"figure1.png", "figure2.png"}, rep.Surfaces...) {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(img, f), b, 0o644); err != nil {
			return err
		}
	}
	var out bytes.Buffer
	out.Write(old[:i])
	out.WriteString(docBegin + "\n\n")
	out.WriteString(runSection(rep, p, command))
	out.WriteString("\n## Tables and figures\n" + rep.Markdown(filepath.Base(img)+"/") + "\n")
	out.Write(old[j:])
	return os.WriteFile(doc, out.Bytes(), 0o644)
}

// parseCoreHash finds the core/ hash that docs/results.md names.
func parseCoreHash(doc []byte) (string, bool) {
	for _, l := range strings.Split(string(doc), "\n") {
		if rest, ok := strings.CutPrefix(l, coreHashPrefix); ok {
			if h, _, ok := strings.Cut(rest, "`"); ok {
				return h, true
			}
		}
	}
	return "", false
}
