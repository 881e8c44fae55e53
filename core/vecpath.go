package core

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
)

// The batch normal kernels of fastnorm.go and the filter's per-particle
// loops (ep.go: epBounds, epStore; twisted.go: the sparse model's step)
// run on one of several paths: the Go code (generic), or assembly for a
// vector instruction set the CPU has (avx512: the normal kernels 8
// particles per vector, the loops in AVX2; avx2: AVX2 and FMA, 4
// particles per vector). Every path performs the same IEEE
// operations on each particle in the same order, so the path changes the
// speed, never a bit of the results.
//
// The fastest path the CPU supports is used unless SetVecPath names another
// (the tools take it from the environment variable GPC_VEC; tests run every
// path this way).

// vecPath is one path of the batch kernels.
type vecPath int32

const (
	vecGeneric vecPath = iota
	vecAVX2
	vecAVX512
)

// vecNames are the paths' names, by vecPath.
var vecNames = [...]string{vecGeneric: "generic", vecAVX2: "avx2", vecAVX512: "avx512"}

// allVecPaths are the names of every path of any build, fastest first.
var allVecPaths = []string{"avx512", "avx2", "generic"}

var (
	// vecAvailable lists the paths of this build and CPU, fastest first
	// (vecSupported is in fastnorm_amd64.go and fastnorm_other.go).
	vecAvailable = vecSupported()
	// vecCurrent is the path in use.
	vecCurrent atomic.Int32
)

func init() {
	vecCurrent.Store(int32(vecAvailable[0]))
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
	if !slices.Contains(allVecPaths, name) {
		return fmt.Errorf("no vector kernel path %q (the paths: %s)", name, strings.Join(allVecPaths, ", "))
	}
	return fmt.Errorf("the vector kernel path %s is not available on this CPU or in this build (available: %s)", name, strings.Join(VecPaths(), ", "))
}
