//go:build !purego

package gemm

import "golang.org/x/sys/cpu"

// useAVX512 selects the assembly kernels: the CPU and the operating system
// support AVX-512F (cpu.X86.HasAVX512F checks both). Tests turn it off to
// compare the kernels with kernGo.
var useAVX512 = cpu.X86.HasAVX512F

//go:noescape
func kern3AVX512(a *float64, lda int, bp *float64, kcPad, kc int, c *float64, ldc, strips, mask, add, aks int)

//go:noescape
func kern1AVX512(a *float64, bp *float64, kcPad, kc int, c *float64, groups, mask, add, aks, cgs int)

//go:noescape
func fmaPeakAVX512(n int)
