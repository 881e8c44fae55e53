package gemm

import "math"

// The portable Go kernel (the generic path) and the specification of the
// arithmetic (kernGo).

// pairSize is the packed size of n rows of B by pairs.
func pairSize(n, kcPad int) int { return (n + 1) / 2 * 2 * kcPad }

// packPairs copies B[0:n][k0:k0+kc] into bp, zero-padded to kcPad columns
// and to an even number of rows, by pairs of rows and lanes: with T =
// kcPad/8, the value B[2p+c][k0+8t+r] lies at ((p*8 + r)*T + t)*2 + c, so
// that the kernel reads one lane of a pair front to back.
func packPairs(bp []float64, b []float64, ldb, n, k0, kc, kcPad int) {
	nt := kcPad / 8
	for p := range (n + 1) / 2 {
		for c := range 2 {
			j := 2*p + c
			for r := range 8 {
				dst := bp[(p*8+r)*nt*2:][:nt*2]
				if j >= n {
					for t := range nt {
						dst[2*t+c] = 0
					}
					continue
				}
				row := b[j*ldb+k0 : j*ldb+k0+kc]
				for t := range nt {
					v := 0.0
					if l := 8*t + r; l < kc {
						v = row[l]
					}
					dst[2*t+c] = v
				}
			}
		}
	}
}

// rowsGo computes rows [i0, i1) of C for one chunk from B packed by
// packPairs: strips of 4 rows of A, copied lane by lane (packStrip), meet
// each pair of columns one lane at a time, 8 independent multiply-add
// chains in registers; then each element's eight lane sums are reduced in
// the package's order.
func rowsGo(bp []float64, _ *[]float64, i0, i1, n, kc, kcPad int, a []float64, lda, ag int, c []float64, ldc, cg int, add bool) {
	nt := kcPad / 8
	pairs := (n + 1) / 2
	var strip [4 * KC]float64
	ap := strip[:4*kcPad]
	var s [4][2][8]float64 // the lane sums of a strip and a pair
	for i := i0; i < i1; i += 4 {
		rows := min(4, i1-i)
		packStrip(ap, a[i*lda:], lda, ag, rows, kc, nt)
		for p := range pairs {
			bq := bp[p*16*nt : (p+1)*16*nt]
			for r := range 8 {
				lane4x2(ap[r*4*nt:(r+1)*4*nt], bq[r*2*nt:(r+1)*2*nt], &s, r)
			}
			for di := range rows {
				storePair(c[(i+di)*ldc:], cg, 2*p, n, &s[di], add)
			}
		}
	}
}

// packStrip copies rows of A (up to 4; the others zero) into ap lane by
// lane: value l = 8t + r of row i at (r*nt + t)*4 + i, zeros past kc.
func packStrip(ap, a []float64, lda, ag, rows, kc, nt int) {
	if rows < 4 || kc%8 != 0 {
		clear(ap)
	}
	for i := range rows {
		row := a[i*lda:]
		for t := range kc / 8 {
			v := (*[8]float64)(row[t*ag:])
			for r, x := range v {
				ap[(r*nt+t)*4+i] = x
			}
		}
		if rem := kc % 8; rem != 0 {
			t := kc / 8
			for r, x := range row[t*ag : t*ag+rem] {
				ap[(r*nt+t)*4+i] = x
			}
		}
	}
}

// lane4x2 runs lane r of a strip of 4 rows (ap, by packStrip) against a
// pair of columns (bq, by packPairs) and leaves the 8 lane sums in s.
func lane4x2(ap, bq []float64, s *[4][2][8]float64, r int) {
	var s00, s01, s10, s11, s20, s21, s30, s31 float64
	// Four steps per iteration (each chain's order unchanged): at one step
	// the loop's bookkeeping is a quarter of the work.
	for len(ap) >= 16 && len(bq) >= 8 {
		av := (*[16]float64)(ap)
		bv := (*[8]float64)(bq)
		s00 = math.FMA(av[0], bv[0], s00)
		s01 = math.FMA(av[0], bv[1], s01)
		s10 = math.FMA(av[1], bv[0], s10)
		s11 = math.FMA(av[1], bv[1], s11)
		s20 = math.FMA(av[2], bv[0], s20)
		s21 = math.FMA(av[2], bv[1], s21)
		s30 = math.FMA(av[3], bv[0], s30)
		s31 = math.FMA(av[3], bv[1], s31)
		s00 = math.FMA(av[4], bv[2], s00)
		s01 = math.FMA(av[4], bv[3], s01)
		s10 = math.FMA(av[5], bv[2], s10)
		s11 = math.FMA(av[5], bv[3], s11)
		s20 = math.FMA(av[6], bv[2], s20)
		s21 = math.FMA(av[6], bv[3], s21)
		s30 = math.FMA(av[7], bv[2], s30)
		s31 = math.FMA(av[7], bv[3], s31)
		s00 = math.FMA(av[8], bv[4], s00)
		s01 = math.FMA(av[8], bv[5], s01)
		s10 = math.FMA(av[9], bv[4], s10)
		s11 = math.FMA(av[9], bv[5], s11)
		s20 = math.FMA(av[10], bv[4], s20)
		s21 = math.FMA(av[10], bv[5], s21)
		s30 = math.FMA(av[11], bv[4], s30)
		s31 = math.FMA(av[11], bv[5], s31)
		s00 = math.FMA(av[12], bv[6], s00)
		s01 = math.FMA(av[12], bv[7], s01)
		s10 = math.FMA(av[13], bv[6], s10)
		s11 = math.FMA(av[13], bv[7], s11)
		s20 = math.FMA(av[14], bv[6], s20)
		s21 = math.FMA(av[14], bv[7], s21)
		s30 = math.FMA(av[15], bv[6], s30)
		s31 = math.FMA(av[15], bv[7], s31)
		ap, bq = ap[16:], bq[8:]
	}
	for len(ap) >= 4 && len(bq) >= 2 {
		av := (*[4]float64)(ap)
		bv := (*[2]float64)(bq)
		s00 = math.FMA(av[0], bv[0], s00)
		s01 = math.FMA(av[0], bv[1], s01)
		s10 = math.FMA(av[1], bv[0], s10)
		s11 = math.FMA(av[1], bv[1], s11)
		s20 = math.FMA(av[2], bv[0], s20)
		s21 = math.FMA(av[2], bv[1], s21)
		s30 = math.FMA(av[3], bv[0], s30)
		s31 = math.FMA(av[3], bv[1], s31)
		ap, bq = ap[4:], bq[2:]
	}
	s[0][0][r], s[0][1][r] = s00, s01
	s[1][0][r], s[1][1][r] = s10, s11
	s[2][0][r], s[2][1][r] = s20, s21
	s[3][0][r], s[3][1][r] = s30, s31
}

// storePair reduces the lane sums of columns j and j+1 (if j+1 < n) of a
// row of C and stores (or adds) them.
func storePair(c []float64, cg, j, n int, s *[2][8]float64, add bool) {
	for dj := range min(2, n-j) {
		v := &s[dj]
		d := ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]))
		cj := &c[(j+dj)/8*cg+(j+dj)%8]
		if add {
			*cj += d
		} else {
			*cj = d
		}
	}
}

// kernGo computes one row of C for one chunk: c[j] (+)= a . B[j] in the
// package's arithmetic, from the chunk bp packed by packGroups, for the kc
// values of the row of A whose vectors of 8 start ag apart and the n values
// of the row of C whose groups of 8 start cg apart. It is the
// specification the other kernels reproduce bit for bit (the tests compare
// them with it).
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
