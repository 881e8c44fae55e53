package core

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
)

// The batch normal kernels of fastnorm.go run on one of several paths: the
// Go code (generic), or assembly for a vector instruction set the CPU has
// (avx512: 8 particles per vector; avx2: AVX2 and FMA, 4 per vector). Every
// path performs the same IEEE operations on each particle in the same
// order, so the path changes the speed, never a bit of the results.
//
// The fastest path the CPU supports is used unless the environment variable
// GPC_VEC names another (avx512, avx2 or generic), read once at start-up;
// SetVecPath changes it at run time (tests run every path this way).

// vecPath is one path of the batch kernels.
type vecPath int32

const (
	vecGeneric vecPath = iota
	vecAVX2
	vecAVX512
)

// vecNames are the paths' names, by vecPath.
var vecNames = [...]string{vecGeneric: "generic", vecAVX2: "avx2", vecAVX512: "avx512"}

var (
	// vecAvailable lists the paths of this build and CPU, fastest first
	// (vecSupported is in fastnorm_amd64.go and fastnorm_other.go).
	vecAvailable = vecSupported()
	// vecCurrent is the path in use.
	vecCurrent atomic.Int32
	// vecEnvErr is GPC_VEC's error, if its value cannot be used.
	vecEnvErr error
)

func init() {
	vecCurrent.Store(int32(vecAvailable[0]))
	if v, ok := os.LookupEnv("GPC_VEC"); ok && v != "" {
		if err := SetVecPath(v); err != nil {
			vecEnvErr = fmt.Errorf("GPC_VEC=%s: %w", v, err)
		}
	}
}

// vec returns the path in use.
func vec() vecPath { return vecPath(vecCurrent.Load()) }

// VecPath returns the name of the path the batch normal kernels (the
// filter's weights and draws, prediction's Phi) run on: avx512, avx2 or
// generic.
func VecPath() string { return vecNames[vec()] }

// VecPaths lists the paths of this build and CPU, fastest (the default)
// first.
func VecPaths() []string {
	names := make([]string, len(vecAvailable))
	for i, p := range vecAvailable {
		names[i] = vecNames[p]
	}
	return names
}

// SetVecPath makes the batch normal kernels run on the named path. It
// returns an error, and changes nothing, if this build or CPU has no such
// path. Results do not depend on the path.
func SetVecPath(name string) error {
	for _, p := range vecAvailable {
		if vecNames[p] == name {
			vecCurrent.Store(int32(p))
			return nil
		}
	}
	if !slices.Contains(vecNames[:], name) {
		return fmt.Errorf("core: no vector path %q (one of %s)", name, strings.Join(vecNames[:], ", "))
	}
	return fmt.Errorf("core: vector path %s is not available on this CPU or build (available: %s)", name, strings.Join(VecPaths(), ", "))
}

// VecEnvError returns the error of the environment variable GPC_VEC when
// its value names no path of this build and CPU (the default path is then
// in use), and nil otherwise.
func VecEnvError() error { return vecEnvErr }
