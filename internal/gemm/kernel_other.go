//go:build !(amd64 || arm64) || purego

package gemm

// archKernels lists no assembly path: the portable Go kernel runs.
func archKernels() []*kernel { return nil }
