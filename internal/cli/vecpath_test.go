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
)

// TestGoldenEveryVecPath runs the golden tests again on every other path
// of core's vector kernels that this CPU supports (GPC_VEC, in a child
// process of the test binary), so that the golden outputs are checked to
// be byte-identical on the AVX-512, AVX2 and generic paths of the batch
// normal kernels and the filter's loops: on an AVX-512 machine the AVX2
// and generic paths run too.
func TestGoldenEveryVecPath(t *testing.T) {
	if os.Getenv("GPC_VEC") != "" || os.Getenv("GPC_GEMM") != "" {
		t.Skip("GPC_VEC or GPC_GEMM set: a run on one path")
	}
	for _, p := range core.VecPaths() {
		if p == core.VecPath() {
			continue
		}
		t.Run("vec="+p, func(t *testing.T) {
			t.Parallel()
			args := []string{"-test.run", goldenTests, "-test.count=1"}
			if testing.Short() {
				args = append(args, "-test.short")
			}
			cmd := exec.Command(os.Args[0], args...)
			cmd.Env = append(os.Environ(), "GPC_VEC="+p)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("golden tests with GPC_VEC=%s: %v\n%s", p, err, out)
			}
		})
	}
}

// TestVecEnvError: a GPC_VEC that names no path of this CPU is a usage
// error, one line on standard error (the built tool: the variable is read
// when the process starts).
func TestVecEnvError(t *testing.T) {
	bin := tools(t)
	t.Parallel()
	for _, v := range []string{"sse9", "neon"} {
		cmd := exec.Command(filepath.Join(bin, "gpc-orthant"), "testdata/equicorr3.csv")
		cmd.Env = append(os.Environ(), "GPC_VEC="+v)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != ExitUsage {
			t.Fatalf("GPC_VEC=%s: %v, want exit %d", v, err, ExitUsage)
		}
		if msg := stderr.String(); stdout.Len() > 0 || strings.Count(msg, "\n") != 1 || !strings.HasPrefix(msg, "gpc-orthant: GPC_VEC="+v+": ") {
			t.Errorf("GPC_VEC=%s: stdout %q, stderr %q", v, stdout.String(), msg)
		}
	}
}
