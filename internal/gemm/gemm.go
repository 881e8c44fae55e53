// Package gemm multiplies row-major float64 matrices, C = A B', the product
// that propagates gpc's particles (core's blocked filter: partial means =
// particles' draws times rows of the Cholesky factor) and predicts from them.
//
// # Arithmetic
//
// Every element is computed in the same order whatever the implementation
// (AVX-512 assembly where the CPU has it, portable Go elsewhere), so the
// results are bit-for-bit identical on every machine:
//
//	C[i][j] = sum over chunks [k0, k0+KC) of the chunk's dot product
//	          (added to C in chunk order, the first chunk replacing C
//	          unless add is set),
//	chunk dot product: eight lane sums s_0..s_7, s_r = fma(A[i][l], B[j][l], s_r)
//	          over l = k0+r, k0+r+8, ... in increasing l (starting from +0,
//	          padded with fma(0, 0, s_r) to a multiple of 8), reduced as
//	          ((s_0+s_1) + (s_2+s_3)) + ((s_4+s_5) + (s_6+s_7)).
//
// This is the order an 8-wide SIMD dot product computes naturally; its
// rounding error is that of a pairwise-summed dot product, below the
// sequential sum's.
package gemm

import (
	"math"
	"sync"
)

// KC is the length of the chunks of the inner dimension: B's packed chunk,
// up to 8 x KC values per group of 8 rows, stays in the L2 cache while the
// rows of A stream past it.
const KC = 512

// MC is the number of rows of A (a multiple of 3) whose chunk the kernel
// keeps in the L2 cache (MC x KC x 8 bytes) while it runs through the
// groups of B.
const MC = 96

// NC is the most columns of C (rows of B) computed per pass over A: the
// packed chunk of B then takes at most NC x KC x 8 bytes (256 KiB).
const NC = 64

// Workspace holds the packed chunk of B. The zero value is ready to use;
// a Workspace may not be used by two calls at once.
type Workspace struct {
	bp []float64
}

// minParallel is the fewest multiply-adds per worker worth a goroutine.
const minParallel = 1 << 20

// NT computes C = A B' (or C += A B' if add is set): for i < m and j < n,
//
//	C[i][j] = sum_{l < k} A[i][l] B[j][l],
//
// with A m x k (row stride lda), B n x k (stride ldb) and C m x n (stride
// ldc), all row-major, in the package's fixed arithmetic. Up to workers
// goroutines share the rows of C (the result does not depend on how many).
// It panics if a slice is too short for its shape.
func (w *Workspace) NT(m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int, add bool, workers int) {
	w.NTGrouped(m, n, k, a, lda, 8, b, ldb, c, ldc, 8, add, workers)
}

// NTGrouped is NT for A and C stored by groups of 8 columns: element
// (i, l) of A is a[i*lda + (l/8)*ag + l%8] and element (i, j) of C is
// c[i*ldc + (j/8)*cg + j%8]. Row-major storage is ag = cg = 8; a matrix
// kept as a sequence of m x 8 row-major blocks, one per group of 8
// columns, is lda = ldc = 8 and ag = cg = 8m.
func (w *Workspace) NTGrouped(m, n, k int, a []float64, lda, ag int, b []float64, ldb int, c []float64, ldc, cg int, add bool, workers int) {
	if m == 0 || n == 0 {
		return
	}
	if m < 0 || n < 0 || k < 0 || ldb < k || ag < 8 || cg < 8 || (ag == 8 && lda < k) || (cg == 8 && ldc < n) {
		panic("gemm: bad shape")
	}
	end := func(rows, cols, ld, g int) int { return (rows-1)*ld + (cols-1)/8*g + (cols-1)%8 + 1 }
	if len(c) < end(m, n, ldc, cg) || k > 0 && (len(a) < end(m, k, lda, ag) || len(b) < (n-1)*ldb+k) {
		panic("gemm: slice too short")
	}
	if k == 0 {
		if !add {
			for i := range m {
				for j := range n {
					c[i*ldc+j/8*cg+j%8] = 0
				}
			}
		}
		return
	}
	workers = max(1, min(workers, m/(3*8), m*n*k/minParallel))
	for j0 := 0; j0 < n; j0 += NC {
		nc := min(NC, n-j0)
		cj := c[j0/8*cg:]
		for k0 := 0; k0 < k; k0 += KC {
			kc := min(KC, k-k0)
			kcPad := (kc + 7) &^ 7
			w.pack(b[j0*ldb:], ldb, nc, k0, kc, kcPad)
			addC := add || k0 > 0
			ak := a[k0/8*ag:]
			if workers == 1 {
				w.rows(0, m, nc, kc, kcPad, ak, lda, ag, cj, ldc, cg, addC)
				continue
			}
			var wg sync.WaitGroup
			per := (m/workers + 2) / 3 * 3
			for i0 := 0; i0 < m; i0 += per {
				i1 := min(m, i0+per)
				wg.Add(1)
				go func() {
					defer wg.Done()
					w.rows(i0, i1, nc, kc, kcPad, ak, lda, ag, cj, ldc, cg, addC)
				}()
			}
			wg.Wait()
		}
	}
}

// pack copies B[0:n][k0:k0+kc] into w.bp, zero-padded to kcPad columns and
// to a multiple of 8 rows, as groups of 8 rows: in group g, the eight values
// B[8g+r][k0+8t : k0+8t+8] lie at ((g*kcPad/8 + t)*8 + r)*8, so that the
// kernel reads each group's chunk front to back.
func (w *Workspace) pack(b []float64, ldb, n, k0, kc, kcPad int) {
	groups := (n + 7) / 8
	size := groups * 8 * kcPad
	if cap(w.bp) < size {
		w.bp = make([]float64, size)
	}
	bp := w.bp[:size]
	for g := range groups {
		for r := range 8 {
			j := 8*g + r
			for t := range kcPad / 8 {
				dst := bp[((g*kcPad/8+t)*8+r)*8:][:8]
				if j >= n {
					clear(dst)
					continue
				}
				l0 := k0 + 8*t
				l1 := min(k0+kc, l0+8)
				copy(dst, b[j*ldb+l0:j*ldb+l1])
				clear(dst[l1-l0:])
			}
		}
	}
}

// rows computes rows [i0, i1) of C for one chunk: a holds the chunk's
// first group of 8 columns of A, c the column block's first of C.
func (w *Workspace) rows(i0, i1, n, kc, kcPad int, a []float64, lda, ag int, c []float64, ldc, cg int, add bool) {
	groups := (n + 7) / 8
	if useAVX512 {
		mask := 0xff
		if r := n % 8; r != 0 {
			mask = 1<<r - 1
		}
		addI := 0
		if add {
			addI = 1
		}
		// Blocks of MC rows of A stay in the L2 cache while each group of 8
		// packed rows of B, in L1, meets all of the block's strips.
		full := i0 + (i1-i0)/3*3
		for ib := i0; ib < full; ib += MC {
			strips := (min(full, ib+MC) - ib) / 3
			for g := range groups {
				gm := 0xff
				if g == groups-1 {
					gm = mask
				}
				kern3AVX512(&a[ib*lda], lda, &w.bp[g*kcPad*8], kcPad, kc, &c[ib*ldc+g*cg], ldc, strips, gm, addI, ag*8)
			}
		}
		for i := full; i < i1; i++ {
			kern1AVX512(&a[i*lda], &w.bp[0], kcPad, kc, &c[i*ldc], groups, mask, addI, ag*8, cg*8)
		}
		return
	}
	for i := i0; i < i1; i++ {
		kernGo(a[i*lda:], ag, kc, w.bp, kcPad, c[i*ldc:], cg, n, add)
	}
}

// kernGo computes one row of C for one chunk: c[j] (+)= a . B[j] in the
// package's arithmetic, from the packed chunk bp, for the kc values of the
// row of A whose vectors of 8 start ag apart and the n values of the row of
// C whose groups of 8 start cg apart. It is the specification the assembly
// kernels reproduce bit for bit.
func kernGo(a []float64, ag, kc int, bp []float64, kcPad int, c []float64, cg, n int, add bool) {
	full := kc / 8
	var tail [8]float64 // the last, partial vector of a, zero-padded
	if kc%8 != 0 {
		copy(tail[:], a[full*ag:full*ag+kc%8])
	}
	for j := range n {
		g, r := j/8, j%8
		b := bp[g*kcPad*8:]
		var s0, s1, s2, s3, s4, s5, s6, s7 float64
		for t := range kcPad / 8 {
			bv := b[(t*8+r)*8:][:8:8]
			var av []float64
			if t < full {
				av = a[t*ag:][:8:8]
			} else {
				av = tail[:]
			}
			s0 = math.FMA(av[0], bv[0], s0)
			s1 = math.FMA(av[1], bv[1], s1)
			s2 = math.FMA(av[2], bv[2], s2)
			s3 = math.FMA(av[3], bv[3], s3)
			s4 = math.FMA(av[4], bv[4], s4)
			s5 = math.FMA(av[5], bv[5], s5)
			s6 = math.FMA(av[6], bv[6], s6)
			s7 = math.FMA(av[7], bv[7], s7)
		}
		d := ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
		cj := &c[g*cg+r]
		if add {
			*cj += d
		} else {
			*cj = d
		}
	}
}
