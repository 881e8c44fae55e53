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

// subLoadAVX2 is loadSub for a whole sub-block and n particles (a multiple
// of 4): the m x 8 group part, by particles, is transposed into the 8 x m
// rows of pt.
//
//go:noescape
func subLoadAVX2(pt, part *float64, m, n int)

// subStoreAVX2 is storeSub for a whole sub-block and n particles (a
// multiple of 4): the 8 x m rows of zt are transposed into the m x 8 group
// zb.
//
//go:noescape
func subStoreAVX2(zb, zt *float64, m, n int)

// conditionAVX2 is filter.condition for n particles (a multiple of 4), c
// holding A, B, 1/L[i][i] and the shift.
//
//go:noescape
func conditionAVX2(c *[4]float64, pt, zt *float64, m int, lrow *float64, kk int, lo, hi *float64, n int)

//go:noescape
func smcStoreAVX2(zt, zk, logw *float64, mu, inc float64, n int)
