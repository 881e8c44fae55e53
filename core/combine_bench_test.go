package core

import (
	"github.com/gpc-mc/gpc/internal/sysmem"
	"math/rand/v2"
	"testing"
)

func BenchmarkCombineRows(b *testing.B) {
	const rows, m, nj = 100000, 156, 31
	x := sysmem.Floats(rows * m)
	for i := range x {
		x[i] = float64(i % 7)
	}
	r := rand.New(rand.NewPCG(1, 1))
	off := make([]int64, nj)
	a, c := make([]float64, nj), make([]float64, nj)
	y, z := make([]float64, m), make([]float64, m)
	b.Run("impl=combine2", func(b *testing.B) {
		for b.Loop() {
			for j := range off {
				off[j] = int64(r.IntN(rows)) * m
			}
			Combine2(y, z, x, off, a, c)
		}
	})
	b.Run("impl=combine2-window", func(b *testing.B) {
		for b.Loop() {
			w := r.IntN(rows - 2000)
			for j := range off {
				off[j] = int64(w+r.IntN(2000)) * m
			}
			Combine2(y, z, x, off, a, c)
		}
	})
	b.Run("impl=axpy2", func(b *testing.B) {
		for b.Loop() {
			for j := range off {
				off[j] = int64(r.IntN(rows)) * m
			}
			for j, o := range off {
				Axpy2(y, z, a[j], c[j], x[o:o+m])
			}
		}
	})
}

// BenchmarkCombineRowsParallel is BenchmarkCombineRows on every thread at
// once, each on its own array (the estimator's groups).
func BenchmarkCombineRowsParallel(b *testing.B) {
	const rows, m, nj = 100000, 156, 31
	b.RunParallel(func(pb *testing.PB) {
		x := make([]float64, rows*m)
		for i := range x {
			x[i] = float64(i % 7)
		}
		r := rand.New(rand.NewPCG(1, 1))
		off := make([]int64, nj)
		a, c := make([]float64, nj), make([]float64, nj)
		y, z := make([]float64, m), make([]float64, m)
		for pb.Next() {
			for j := range off {
				off[j] = int64(r.IntN(rows)) * m
			}
			Combine2(y, z, x, off, a, c)
		}
	})
}
