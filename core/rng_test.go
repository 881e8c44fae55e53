package core

import (
	"math/rand/v2"
	"testing"
)

// TestPCGMatchesStdlib: pcg gives rand.PCG's numbers from the same state,
// through Uint64 and through next.
func TestPCGMatchesStdlib(t *testing.T) {
	t.Parallel()
	seeds := rand.New(rand.NewPCG(11, 12))
	for range 200 {
		hi, lo := seeds.Uint64(), seeds.Uint64()
		want := rand.NewPCG(hi, lo)
		s := pcg{hi, lo}
		g := s
		for i := range 1000 {
			w := want.Uint64()
			var x uint64
			g, x = g.next()
			if got := s.Uint64(); got != w || x != w {
				t.Fatalf("seed (%#x, %#x), output %d: Uint64 %#x, next %#x, rand.PCG %#x", hi, lo, i, got, x, w)
			}
		}
	}
}
