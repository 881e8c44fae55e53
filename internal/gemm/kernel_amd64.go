//go:build !purego

package gemm

import "golang.org/x/sys/cpu"

// The assembly paths of amd64 (kernel_amd64.s: AVX-512; kernel_avx2_amd64.s:
// AVX2 + FMA).
var (
	avx512 = &kernel{name: "avx512", nc: nc1MiB, packSize: groupSize, pack: packGroups, rows: rowsAVX512}
	avx2   = &kernel{name: "avx2", nc: nc1MiB, packSize: quadSize, pack: packQuads, rows: rowsAVX2}
)

// archKernels lists the assembly paths the CPU and the operating system
// support (cpu.X86 checks both), fastest first.
func archKernels() []*kernel {
	var ks []*kernel
	if cpu.X86.HasAVX512F {
		ks = append(ks, avx512)
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		ks = append(ks, avx2)
	}
	return ks
}

// mcAVX512 is the number of rows of A (a multiple of 3) whose chunk the
// AVX-512 kernel packs and keeps in the L2 cache (mcAVX512 x KC x 8 bytes)
// while it runs through the groups of B.
const mcAVX512 = 96

// rowsAVX512 computes rows [i0, i1) of C for one chunk packed by
// packGroups: blocks of mcAVX512 rows of A stay in the L2 cache while each
// group of 8 packed rows of B, in L1, meets all of the block's strips of 3
// rows. The first group reads the block in place and packs it into the
// worker's scratch, the others read the packed copy: with T = kcPad/8, the
// values A[ib+3s+r][8t : 8t+8] lie at ((s*T + t)*3 + r)*8, zero-padded
// beyond kc, so that the kernel reads each strip front to back.
func rowsAVX512(bp []float64, scratch *[]float64, i0, i1, n, kc, kcPad int, a []float64, lda, ag int, c []float64, ldc, cg int, add bool) {
	groups := (n + 7) / 8
	mask := 0xff
	if r := n % 8; r != 0 {
		mask = 1<<r - 1
	}
	addI := 0
	if add {
		addI = 1
	}
	full := i0 + (i1-i0)/3*3
	if full > i0 && cap(*scratch) < mcAVX512*kcPad {
		*scratch = make([]float64, mcAVX512*kcPad)
	}
	ap := (*scratch)[:cap(*scratch)]
	for ib := i0; ib < full; ib += mcAVX512 {
		rows := min(full, ib+mcAVX512) - ib
		for g := range groups {
			gm := 0xff
			if g == groups-1 {
				gm = mask
			}
			if g == 0 {
				var pack *float64 // a single group reads A in place only
				if groups > 1 {
					pack = &ap[0]
				}
				kern3PackAVX512(&a[ib*lda], lda, ag*8, kc, pack, &bp[0], &c[ib*ldc], ldc, rows/3, gm, addI)
				continue
			}
			kern3AVX512(&ap[0], &bp[g*kcPad*8], kcPad/8, &c[ib*ldc+g*cg], ldc, rows/3, gm, addI)
		}
	}
	for i := full; i < i1; i++ {
		kern1AVX512(&a[i*lda], &bp[0], kcPad, kc, &c[i*ldc], groups, mask, addI, ag*8, cg*8)
	}
}

// quadSize is the packed size of n rows of B by quads.
func quadSize(n, kcPad int) int { return (n + 3) / 4 * 4 * kcPad }

// packQuads copies B[0:n][k0:k0+kc] into bp, zero-padded to kcPad columns
// and to a multiple of 4 rows, by quads of rows and halves of vectors: with
// T = kcPad/8, the value B[4q+c][k0+8t+4h+r] (r < 4) lies at
// ((q*2 + h)*T + t)*16 + c*4 + r, so that the AVX2 kernel reads the lanes
// 0-3 of a quad front to back, then its lanes 4-7.
func packQuads(bp []float64, b []float64, ldb, n, k0, kc, kcPad int) {
	nt := kcPad / 8
	for q := range (n + 3) / 4 {
		for c := range 4 {
			j := 4*q + c
			for h := range 2 {
				dst := bp[(q*2+h)*nt*16:][:nt*16]
				if j >= n {
					for t := range nt {
						clear(dst[t*16+c*4:][:4])
					}
					continue
				}
				row := b[j*ldb+k0 : j*ldb+k0+kc]
				for t := range nt {
					d := dst[t*16+c*4:][:4]
					l0 := min(8*t+4*h, kc)
					l1 := min(l0+4, kc)
					copy(d, row[l0:l1])
					clear(d[l1-l0:])
				}
			}
		}
	}
}

// mcAVX2 is the number of rows of A (a multiple of 3) whose chunk the AVX2
// kernel keeps in the L2 cache while it runs through the quads of B.
const mcAVX2 = 96

// rowsAVX2 computes rows [i0, i1) of C for one chunk packed by packQuads:
// blocks of mcAVX2 rows of A stay in the L2 cache while each quad of packed
// rows of B, in L1, meets all of the block's strips of 3 rows.
func rowsAVX2(bp []float64, _ *[]float64, i0, i1, n, kc, kcPad int, a []float64, lda, ag int, c []float64, ldc, cg int, add bool) {
	quads := (n + 3) / 4
	addI := 0
	if add {
		addI = 1
	}
	full := i0 + (i1-i0)/3*3
	for ib := i0; ib < full; ib += mcAVX2 {
		strips := (min(full, ib+mcAVX2) - ib) / 3
		for q := range quads {
			j := 4 * q
			kern3x4AVX2(&a[ib*lda], lda, &bp[q*4*kcPad], kc, &c[ib*ldc+j/8*cg+j%8], ldc, strips, min(4, n-j), addI, ag*8)
		}
	}
	for i := full; i < i1; i++ {
		for q := range quads {
			j := 4 * q
			kern1x4AVX2(&a[i*lda], &bp[q*4*kcPad], kc, &c[i*ldc+j/8*cg+j%8], min(4, n-j), addI, ag*8)
		}
	}
}

//go:noescape
func kern3AVX512(ap *float64, bp *float64, steps int, c *float64, ldc, strips, mask, add int)

//go:noescape
func kern1AVX512(a *float64, bp *float64, kcPad, kc int, c *float64, groups, mask, add, aks, cgs int)

//go:noescape
func kern3x4AVX2(a *float64, lda int, bp *float64, kc int, c *float64, ldc, strips, cols, add, aks int)

//go:noescape
func kern1x4AVX2(a *float64, bp *float64, kc int, c *float64, cols, add, aks int)

//go:noescape
func fmaPeakAVX512(n int)

//go:noescape
func fmaPeakAVX2(n int)

//go:noescape
func kern3PackAVX512(a *float64, lda, aks, kc int, ap, bp *float64, c *float64, ldc, strips, mask, add int)
