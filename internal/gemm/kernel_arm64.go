//go:build !purego

package gemm

import "math"

// The NEON path of arm64 (kernel_arm64.s). Every arm64 CPU has NEON
// (Advanced SIMD) with fused multiply-add.
var neon = &kernel{name: "neon", nc: nc1MiB, packSize: pairSize, pack: packPairs8, rows: rowsNEON}

// archKernels lists the assembly paths: NEON.
func archKernels() []*kernel { return []*kernel{neon} }

// packPairs8 copies B[0:n][k0:k0+kc] into bp, zero-padded to kcPad columns
// and to an even number of rows, by pairs of rows: with T = kcPad/8, the
// value B[2p+c][k0+8t+r] lies at ((p*T + t)*2 + c)*8 + r, so that the NEON
// kernel reads a pair's vectors of 8 front to back.
func packPairs8(bp []float64, b []float64, ldb, n, k0, kc, kcPad int) {
	nt := kcPad / 8
	for p := range (n + 1) / 2 {
		for c := range 2 {
			j := 2*p + c
			for t := range nt {
				dst := bp[((p*nt+t)*2+c)*8:][:8]
				if j >= n {
					clear(dst)
					continue
				}
				l0 := min(k0+8*t, k0+kc)
				l1 := min(l0+8, k0+kc)
				copy(dst, b[j*ldb+l0:j*ldb+l1])
				clear(dst[l1-l0:])
			}
		}
	}
}

// mcNEON is the number of rows of A (a multiple of 3) whose chunk stays in
// the L2 cache while it runs through the pairs of B.
const mcNEON = 96

// rowsNEON computes rows [i0, i1) of C for one chunk packed by packPairs8:
// strips of 3 rows against each pair of columns. The kernel runs the
// chunk's whole vectors of A; the last, partial vector (zeros past kc, as
// B's packing) and the reduction of the lane sums are done here.
func rowsNEON(bp []float64, _ *[]float64, i0, i1, n, kc, kcPad int, a []float64, lda, ag int, c []float64, ldc, cg int, add bool) {
	nt := kcPad / 8
	full := kc / 8
	pairs := (n + 1) / 2
	var s [3][2][8]float64
	var tail [3][8]float64 // the rows' last, partial vectors, zero-padded
	for ib := i0; ib < i1; ib += mcNEON {
		ie := min(i1, ib+mcNEON)
		for p := range pairs {
			bq := bp[p*nt*16 : (p+1)*nt*16]
			for i := ib; i < ie; i += 3 {
				rows := min(3, ie-i)
				// Rows past the strip's end repeat its first row; their
				// sums are not stored.
				var ar [3]int
				for r := range 3 {
					ar[r] = i * lda
					if r < rows {
						ar[r] = (i + r) * lda
					}
				}
				if full > 0 {
					kern3x2NEON(&a[ar[0]], &a[ar[1]], &a[ar[2]], &bq[0], full, ag*8, &s[0][0][0])
				} else {
					s = [3][2][8]float64{}
				}
				if full < nt {
					bv := bq[full*16 : full*16+16]
					for r := range rows {
						tail[r] = [8]float64{}
						copy(tail[r][:kc%8], a[ar[r]+full*ag:])
						for cc := range 2 {
							for l := range 8 {
								s[r][cc][l] = math.FMA(tail[r][l], bv[cc*8+l], s[r][cc][l])
							}
						}
					}
				}
				for r := range rows {
					storePair(c[(i+r)*ldc:], cg, 2*p, n, &s[r], add)
				}
			}
		}
	}
}

//go:noescape
func kern3x2NEON(a0, a1, a2 *float64, bp *float64, steps, aks int, out *float64)
