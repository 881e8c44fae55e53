//go:build !openblas || !cgo

package gemm

// blasKernel is the system BLAS's path, in a build with -tags openblas.
var blasKernel *kernel
