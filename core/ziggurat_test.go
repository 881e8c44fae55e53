package core

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestNormFloats: NormFloats gives rand.Rand's NormFloat64 numbers from the
// same stream, bit for bit, in batches of every length from 1 to 40 and of
// the particles' sizes, and leaves the stream where NormFloat64 does; 2 x
// 10^7 numbers reach the wedges (about 1 in 80) and the base strip's tail
// (about 1 in 1700) thousands of times, which the test counts.
func TestNormFloats(t *testing.T) {
	t.Parallel()
	n := 20_000_000
	if testing.Short() {
		n = 2_000_000
	}
	seeds := rand.New(rand.NewPCG(21, 22))
	hi, lo := seeds.Uint64(), seeds.Uint64()
	want := rand.New(rand.NewPCG(hi, lo))
	s := pcg{hi, lo}
	z := make([]float64, 31250)
	var outside, tail int
	for done, b := 0, 1; done < n; b++ {
		m := b
		if b > 40 {
			m = []int{156, 312, 31250}[b%3]
		}
		s.NormFloats(z[:m])
		for i, v := range z[:m] {
			w := want.NormFloat64()
			if math.Float64bits(v) != math.Float64bits(w) {
				t.Fatalf("number %d: NormFloats %v, NormFloat64 %v", done+i, v, w)
			}
			if math.Abs(v) > zigR {
				tail++
			}
		}
		done += m
	}
	if got, w := s.Uint64(), want.Uint64(); got != w {
		t.Fatalf("the streams part after the normal numbers: %#x against %#x", got, w)
	}
	// Count the numbers that left the rectangles, from a copy of the
	// stream: the test above covers the slow path only if it ran.
	g := pcg{hi, lo}
	for range n {
		var x uint64
		g, x = g.next()
		if _, _, in := zig.rect(x); !in {
			outside++
		}
	}
	if outside < n/200 || tail < n/10000 {
		t.Fatalf("%d numbers outside their rectangles and %d in the tail of %d: the slow paths went untested", outside, tail, n)
	}
}

// BenchmarkNormFloats: rand.Rand's NormFloat64, one call a number, against
// NormFloats on a batch of a group's size.
func BenchmarkNormFloats(b *testing.B) {
	for _, m := range []int{156, 31250} {
		z := make([]float64, m)
		b.Run(fmt.Sprintf("m=%d/impl=rand", m), func(b *testing.B) {
			s := newPCG(1, domainGroup, 0)
			r := rand.New(&s)
			for b.Loop() {
				for i := range z {
					z[i] = r.NormFloat64()
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(m), "ns/number")
		})
		b.Run(fmt.Sprintf("m=%d/impl=batch", m), func(b *testing.B) {
			s := newPCG(1, domainGroup, 0)
			for b.Loop() {
				s.NormFloats(z)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(m), "ns/number")
		})
	}
}
