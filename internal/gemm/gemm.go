// Package gemm multiplies row-major float64 matrices, C = A B', the product
// that propagates gpc's particles (core's blocked filter: partial means =
// particles' draws times rows of the Cholesky factor) and predicts from them.
//
// # Arithmetic
//
// Every element is computed in the same order whatever the implementation
// (the kernel path: see Path), so the results are bit-for-bit identical on
// every machine:
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
// sequential sum's. The eight lane sums are independent chains, so a
// narrower vector computes the same bits: the AVX2 kernel runs lanes 0-3
// and then lanes 4-7, the NEON kernel two lanes per register, the portable
// Go kernel one lane at a time.
//
// # Kernel paths
//
// The product runs on the fastest path the CPU supports, chosen at start:
//
//	avx512   AVX-512F assembly (amd64)
//	avx2     AVX2 + FMA assembly (amd64: x86-64-v3, most x86 CPUs since 2015)
//	neon     NEON assembly (arm64: every 64-bit ARM CPU)
//	generic  portable Go (every architecture; the only path under -tags purego)
//	openblas OpenBLAS's cblas_dgemm, only in a build with -tags openblas (cgo)
//
// All but openblas compute the same bits. The environment variable
// GPC_GEMM (one of the names above) forces a path, SetPath does the same
// from a program, and Path names the one in use. The openblas path is
// opt-in: it is the default only in a build with the tag, its products
// differ from the others' in the last bits (OpenBLAS sums in its own order)
// and so are statistically, not bitwise, equal; a run's output then
// depends on OpenBLAS's version and on the CPU.
package gemm

import (
	"sync"
)

// KC is the length of the chunks of the inner dimension: B's packed chunk,
// up to 8 x KC values per group of 8 rows, stays in the L2 cache while the
// rows of A stream past it. It is part of the arithmetic.
const KC = 512

// Workspace holds the packed chunk of B and, for the kernels that pack
// them, each worker's packed block of rows of A (the AVX-512 kernel's: 96
// rows of a chunk, 384 KiB). The zero value is ready to use; a Workspace
// may not be used by two calls at once.
type Workspace struct {
	bp []float64
	ab []float64 // scratch of the openblas path
	// ap are the workers' own buffers (the packed rows of A of the
	// kernels that pack them), one per worker.
	ap [][]float64
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
	w.ntGrouped(current.Load(), m, n, k, a, lda, ag, b, ldb, c, ldc, cg, add, workers)
}

// ntGrouped is NTGrouped on the path kern.
func (w *Workspace) ntGrouped(kern *kernel, m, n, k int, a []float64, lda, ag int, b []float64, ldb int, c []float64, ldc, cg int, add bool, workers int) {
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
	if kern.product != nil {
		kern.product(w, m, n, k, a, lda, ag, b, ldb, c, ldc, cg, add, workers)
		return
	}
	workers = max(1, min(workers, m/(3*8), m*n*k/minParallel))
	per := (m/workers + 2) / 3 * 3 // rows per worker
	for len(w.ap) < (m+per-1)/per {
		w.ap = append(w.ap, nil)
	}
	ncMax := kern.nc((min(k, KC) + 7) &^ 7)
	for j0 := 0; j0 < n; j0 += ncMax {
		nc := min(ncMax, n-j0)
		cj := c[j0/8*cg:]
		for k0 := 0; k0 < k; k0 += KC {
			kc := min(KC, k-k0)
			kcPad := (kc + 7) &^ 7
			bp := w.packed(kern.packSize(nc, kcPad))
			kern.pack(bp, b[j0*ldb:], ldb, nc, k0, kc, kcPad)
			addC := add || k0 > 0
			ak := a[k0/8*ag:]
			if workers == 1 {
				kern.rows(bp, &w.ap[0], 0, m, nc, kc, kcPad, ak, lda, ag, cj, ldc, cg, addC)
				continue
			}
			var wg sync.WaitGroup
			for i0, wk := 0, 0; i0 < m; i0, wk = i0+per, wk+1 {
				i1 := min(m, i0+per)
				wg.Add(1)
				go func() {
					defer wg.Done()
					kern.rows(bp, &w.ap[wk], i0, i1, nc, kc, kcPad, ak, lda, ag, cj, ldc, cg, addC)
				}()
			}
			wg.Wait()
		}
	}
}

// packed returns w's packing buffer, grown to size.
func (w *Workspace) packed(size int) []float64 {
	if cap(w.bp) < size {
		w.bp = make([]float64, size)
	}
	return w.bp[:size]
}

// groupSize is the packed size of n rows of B by groups of 8.
func groupSize(n, kcPad int) int { return (n + 7) / 8 * 8 * kcPad }

// packGroups copies B[0:n][k0:k0+kc] into bp, zero-padded to kcPad columns
// and to a multiple of 8 rows, as groups of 8 rows: in group g, the eight
// values B[8g+r][k0+8t : k0+8t+8] lie at ((g*kcPad/8 + t)*8 + r)*8, so that
// a kernel reads each group's chunk front to back.
func packGroups(bp []float64, b []float64, ldb, n, k0, kc, kcPad int) {
	for g := range (n + 7) / 8 {
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
