package core

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkCombine2F32 is a Vecchia step's read of its neighbours' rows
// at N = 10^5 with 10^4 particles in 64 groups (156 particles a group, 30
// neighbours, float32 rows): the rows at random among the last 2000 (the
// maxmin order's recent neighbours) or among all.
func BenchmarkCombine2F32(b *testing.B) {
	const rows, m, nj = 100000, 156, 30
	x := make([]float32, rows*m)
	for i := range x {
		x[i] = float32(i % 7)
	}
	r := rand.New(rand.NewPCG(1, 1))
	off := make([]int64, nj)
	a, c := make([]float64, nj), make([]float64, nj)
	y, z := make([]float64, m), make([]float64, m)
	for _, window := range []int{2000, rows} {
		name := "rows=all"
		if window < rows {
			name = "rows=recent"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				w := r.IntN(rows - window + 1)
				for j := range off {
					off[j] = int64(w+r.IntN(window)) * m
				}
				Combine2F32(y, z, x, off, a, c)
			}
		})
	}
}
