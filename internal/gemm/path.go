package gemm

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
)

// kernel is one kernel path: the product's implementation for one
// instruction set. A path either packs chunks of B in its own layout and
// computes rows of C from them (pack, rows: NTGrouped does the blocking) or
// computes the whole product itself (product).
type kernel struct {
	name string
	// nc is the most columns of C computed per pass over A, for chunks of
	// kcPad columns (a multiple of 8).
	nc func(kcPad int) int
	// packSize is the packed size of n rows of B for chunks of kcPad.
	packSize func(n, kcPad int) int
	// pack copies B[0:n][k0:k0+kc] into bp, zero-padded to kcPad columns.
	pack func(bp, b []float64, ldb, n, k0, kc, kcPad int)
	// rows computes rows [i0, i1) of C for one chunk of kc columns of A
	// (a holds the chunk's first group of 8, c the first column of C);
	// scratch is the calling worker's own buffer, for a kernel that packs
	// A.
	rows func(bp []float64, scratch *[]float64, i0, i1, n, kc, kcPad int, a []float64, lda, ag int, c []float64, ldc, cg int, add bool)
	// product, if set, replaces the blocking.
	product func(w *Workspace, m, n, k int, a []float64, lda, ag int, b []float64, ldb int, c []float64, ldc, cg int, add bool, workers int)
}

// nc64 is 64 columns of C per pass over A: a packed chunk of B of up to
// 64 x KC x 8 bytes (256 KiB).
func nc64(int) int { return 64 }

// nc1MiB is the columns of C per pass over A of a packed chunk of B of
// 1 MiB: 256 columns for full chunks of KC, more for short ones. The chunk
// streams through the caches by groups of columns while blocks of A stay
// in L2; on a Zen 1 EPYC, short products (k = 64..128: the large-N
// preparation's block updates) then run 10-30 % faster than with 64
// columns (A is read again for fewer passes), long ones 2-8 %. The AVX-512
// kernel, which packs each block of A once per pass, runs as fast with
// passes of 1 MiB as of 4 MiB or of all of B (Sapphire Rapids class Xeon).
func nc1MiB(kcPad int) int { return max(64, (1<<17)/kcPad/8*8) }

// allPaths are the names of every path of any build.
var allPaths = []string{"avx512", "avx2", "neon", "generic", "openblas"}

// generic is the portable Go path.
var generic = &kernel{name: "generic", nc: nc1MiB, packSize: pairSize, pack: packPairs, rows: rowsGo}

var (
	// kernels are the paths of this build and CPU, fastest first.
	kernels = available()
	// current is the path in use.
	current atomic.Pointer[kernel]
	// envErr is GPC_GEMM's error, if its value cannot be used.
	envErr error
)

// available lists the paths of this build and CPU, fastest first: the
// system BLAS if linked in (the build tag openblas), the assembly kernels
// the CPU supports, the portable Go kernel.
func available() []*kernel {
	var ks []*kernel
	if blasKernel != nil {
		ks = append(ks, blasKernel)
	}
	return append(append(ks, archKernels()...), generic)
}

func init() {
	current.Store(kernels[0])
	if v, ok := os.LookupEnv("GPC_GEMM"); ok && v != "" {
		if msg := setPath(v); msg != "" {
			envErr = fmt.Errorf("GPC_GEMM=%s: %s", v, msg)
		}
	}
}

// Path returns the name of the kernel path the products run on: avx512,
// avx2, neon, generic or openblas (see the package documentation).
func Path() string { return current.Load().name }

// Paths lists the kernel paths of this build and CPU, fastest (the
// default) first.
func Paths() []string {
	names := make([]string, len(kernels))
	for i, k := range kernels {
		names[i] = k.name
	}
	return names
}

// SetPath makes the products run on the named kernel path. It returns an
// error, and changes nothing, if this build or CPU has no such path. It
// may be called while products run: each product runs wholly on the path
// in use when it starts.
func SetPath(name string) error {
	if msg := setPath(name); msg != "" {
		return errors.New("gemm: " + msg)
	}
	return nil
}

// setPath is SetPath, with the error's message ("" for none).
func setPath(name string) string {
	for _, k := range kernels {
		if k.name == name {
			current.Store(k)
			return ""
		}
	}
	if !slices.Contains(allPaths, name) {
		return fmt.Sprintf("no GEMM kernel path %q (the paths: %s)", name, strings.Join(allPaths, ", "))
	}
	return fmt.Sprintf("the GEMM kernel path %s is not available on this CPU or in this build (available: %s)", name, strings.Join(Paths(), ", "))
}

// EnvError returns the error of the environment variable GPC_GEMM when its
// value names no path of this build and CPU (the default path is then in
// use), and nil otherwise.
func EnvError() error { return envErr }
