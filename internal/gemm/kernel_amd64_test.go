//go:build !purego

package gemm

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAVX512MatchesGo checks that the assembly kernels compute the
// package's arithmetic bit for bit: every element equals kernGo's.
func TestAVX512MatchesGo(t *testing.T) {
	if !useAVX512 {
		t.Skip("no AVX-512 on this machine")
	}
	r := rand.New(rand.NewPCG(5, 6))
	var w Workspace
	for _, s := range shapes {
		m, n, k := s[0], s[1], s[2]
		lda, ldb, ldc := k+1, k+2, n+1
		a, b := randSlice(r, m*lda), randSlice(r, n*ldb)
		// Signed zeros and exact cancellations exercise the padding.
		if len(a) > 2 {
			a[0], a[1] = math.Copysign(0, -1), 0
		}
		for _, add := range []bool{false, true} {
			c0 := randSlice(r, m*ldc)
			got := append([]float64(nil), c0...)
			w.NT(m, n, k, a, lda, b, ldb, got, ldc, add, 1)
			useAVX512 = false
			want := append([]float64(nil), c0...)
			w.NT(m, n, k, a, lda, b, ldb, want, ldc, add, 1)
			useAVX512 = true
			for i := range got {
				if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
					t.Fatalf("%v add=%v: element %d: assembly %v, Go %v", s, add, i, got[i], want[i])
				}
			}
		}
	}
}

// TestAVX512MatchesGoGrouped is TestAVX512MatchesGo for the grouped layout.
func TestAVX512MatchesGoGrouped(t *testing.T) {
	if !useAVX512 {
		t.Skip("no AVX-512 on this machine")
	}
	r := rand.New(rand.NewPCG(9, 10))
	var w Workspace
	for _, s := range shapes {
		m, n, k := s[0], s[1], s[2]
		if k == 0 {
			continue
		}
		ga, b := grouped(randSlice(r, m*k), m, k), randSlice(r, n*k)
		for _, add := range []bool{false, true} {
			c0 := grouped(randSlice(r, m*n), m, n)
			got := append([]float64(nil), c0...)
			w.NTGrouped(m, n, k, ga, 8, 8*m, b, k, got, 8, 8*m, add, 1)
			useAVX512 = false
			want := append([]float64(nil), c0...)
			w.NTGrouped(m, n, k, ga, 8, 8*m, b, k, want, 8, 8*m, add, 1)
			useAVX512 = true
			for i := range got {
				if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
					t.Fatalf("%v add=%v: element %d: assembly %v, Go %v", s, add, i, got[i], want[i])
				}
			}
		}
	}
}
