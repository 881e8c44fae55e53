package cli

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/internal/gemm"
)

// In a build with -tags openblas the tests run on the fastest exact GEMM
// path (the golden outputs pin the package's arithmetic, which OpenBLAS
// does not compute), unless GPC_GEMM names one.
func init() {
	if gemm.Path() == "openblas" && os.Getenv("GPC_GEMM") == "" {
		if err := gemm.SetPath(gemm.Paths()[1]); err != nil {
			panic(err)
		}
	}
}

// goldenTests are the tests that compare the tools' output with the
// golden files in testdata.
const goldenTests = "^(TestPipelineGolden|TestOrthantCLI|TestOrthantGolden100)$"

// TestOrthantGolden100 pins gpc-orthant on 100 variables, whose estimate
// runs the filter's block products (64 variables, then 36: a partial group
// of 8) and sub-block products (k = 8..56) through internal/gemm, besides
// EP's products.
func TestOrthantGolden100(t *testing.T) {
	t.Parallel()
	runCLI(t, Orthant, cliCase{args: []string{"../../examples/onefactor-100.csv", "--samples", "2000"}, golden: "orthant-onefactor100"})
}

// TestGoldenEveryPath runs the golden tests again on every other kernel
// path of internal/gemm that this CPU supports (GPC_GEMM, in a child
// process of the test binary), so that the golden outputs are checked to
// be byte-identical on the AVX-512, AVX2 and generic paths: on an AVX-512
// machine the AVX2 and generic paths run too. The openblas path is left
// out (not bitwise equal by design).
func TestGoldenEveryPath(t *testing.T) {
	if os.Getenv("GPC_GEMM") != "" {
		t.Skip("GPC_GEMM set: a run on one path")
	}
	for _, p := range gemm.Paths() {
		if p == gemm.Path() || p == "openblas" {
			continue
		}
		t.Run("path="+p, func(t *testing.T) {
			t.Parallel()
			args := []string{"-test.run", goldenTests, "-test.count=1"}
			if testing.Short() {
				args = append(args, "-test.short")
			}
			cmd := exec.Command(os.Args[0], args...)
			cmd.Env = append(os.Environ(), "GPC_GEMM="+p)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("golden tests with GPC_GEMM=%s: %v\n%s", p, err, out)
			}
		})
	}
}

// TestVersionNamesGEMMPath: --version names the kernel paths in use (GEMM
// and vector kernels).
func TestVersionNamesGEMMPath(t *testing.T) {
	t.Parallel()
	out := runCLI(t, Orthant, cliCase{args: []string{"--version"}})
	first, second, _ := strings.Cut(string(out), "\n")
	if want := "gpc-orthant (gpc) " + Version + ", GEMM kernel " + gemm.Path() + ", vector kernels " + core.VecPath(); first != want {
		t.Errorf("--version printed %q, want %q first", out, want)
	}
	if !strings.Contains(second, "built with go") {
		t.Errorf("--version's second line %q does not describe the build", second)
	}
}

// TestGEMMEnvError: a GPC_GEMM that names no path of this CPU is a usage
// error, one line on standard error (the built tool: the variable is read
// when the process starts).
func TestGEMMEnvError(t *testing.T) {
	bin := tools(t)
	t.Parallel()
	for _, v := range []string{"sse9", "neon"} {
		cmd := exec.Command(filepath.Join(bin, "gpc-orthant"), "testdata/equicorr3.csv")
		cmd.Env = append(os.Environ(), "GPC_GEMM="+v)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != ExitUsage {
			t.Fatalf("GPC_GEMM=%s: %v, want exit %d", v, err, ExitUsage)
		}
		if msg := stderr.String(); stdout.Len() > 0 || strings.Count(msg, "\n") != 1 || !strings.HasPrefix(msg, "gpc-orthant: GPC_GEMM="+v+": ") {
			t.Errorf("GPC_GEMM=%s: stdout %q, stderr %q", v, stdout.String(), msg)
		}
	}
}
