//go:build !purego

package core

import "golang.org/x/sys/cpu"

// haveAVX2 reports whether the CPU and the operating system support AVX2
// and FMA: the per-particle loops of the filter (filter_amd64.s) then run
// in AVX2 on the avx2 and avx512 paths.
var haveAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

//go:noescape
func epBoundsAVX2(ec *epConsts, pt, zt *float64, m int, lrow *float64, kk int, lo, hi, off, logw *float64, n int)

//go:noescape
func epStoreAVX2(zt, off, z, logw *float64, sl, inc float64, n int)
