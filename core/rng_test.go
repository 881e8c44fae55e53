package core

import (
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// stdStream is NewStream as it was written first, on math/rand/v2's own
// PCG: the reference for pcg and for the filter's draws.
func stdStream(seed, domain, unit uint64) *rand.Rand {
	s := newPCG(seed, domain, unit)
	return rand.New(rand.NewPCG(s.hi, s.lo))
}

// TestPCGMatchesStdlib: pcg gives rand.PCG's numbers from the same state,
// through Uint64 and through next; next2 is next twice.
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
		s1, _ := pcg{hi, lo}.next()
		s2, x2 := s1.next()
		if h, y := (pcg{hi, lo}).next2(); h != s2 || y != x2 {
			t.Fatalf("seed (%#x, %#x): next2 gives %v, %#x; next twice %v, %#x", hi, lo, h, y, s2, x2)
		}
	}
}

// drawUniformsRef is drawUniforms written plainly, on a *rand.Rand and a
// closure same(p) (particle p's history equals particle p-1's): the
// specification that the faster drawUniforms must follow bit for bit. A
// Latin block's permutation comes from latinRef.
func drawUniformsRef(u []float64, same func(p int) bool, r *rand.Rand, perm []int) {
	m := len(u)
	for p := 0; p < m; {
		q := p + 1
		for q < m && same(q) {
			q++
		}
		if q-p > 1 {
			k := float64(q - p)
			for j := p; j < q; j++ {
				u[j] = (float64(j-p) + uniformOpen(r)) / k
			}
			p = q
			continue
		}
		for q < m && q-p < LatinBlock && !(q+1 < m && same(q+1)) {
			q++
		}
		k := q - p
		pi := latinRef(perm[:k], r)
		for j := p; j < q; j++ {
			u[j] = (float64(pi[j-p]) + uniformOpen(r)) / float64(k)
		}
		p = q
	}
}

// latinRef sets pi to a uniform random permutation of its indices from r,
// as drawUniforms' Latin blocks draw it, and returns it: a number F =
// floor(x k! / 2^64) from one 64-bit x, drawn again while x k! mod 2^64 <
// 2^64 mod k! (computed here with math/big), written in the factorial
// number system (F = sum_j i_j j!, 0 <= i_j <= j, by divisions), and
// Fisher and Yates' shuffle with the digits: pi[j] trades places with
// pi[i_j], j = k-1 down to 1.
func latinRef(pi []int, r *rand.Rand) []int {
	k := len(pi)
	for j := range pi {
		pi[j] = j
	}
	if k < 2 {
		return pi
	}
	f := uint64(1)
	for j := 2; j <= k; j++ {
		f *= uint64(j)
	}
	two64 := new(big.Int).Lsh(big.NewInt(1), 64)
	reject := new(big.Int).Mod(two64, new(big.Int).SetUint64(f)).Uint64()
	var hi, lo uint64
	for {
		if hi, lo = bits.Mul64(r.Uint64(), f); lo >= reject {
			break
		}
	}
	digit := make([]int, k)
	for j := 1; j < k; j++ {
		digit[j] = int(hi % uint64(j+1))
		hi /= uint64(j + 1)
	}
	for j := k - 1; j > 0; j-- {
		i := digit[j]
		pi[i], pi[j] = pi[j], pi[i]
	}
	return pi
}

// runsIdx returns ancestor indices for m particles whose runs of equal
// ancestors have lengths drawn by runLen.
func runsIdx(m int, runLen func() int) []int {
	idx := make([]int, 0, m)
	for a := 0; len(idx) < m; a++ {
		for range min(max(runLen(), 1), m-len(idx)) {
			idx = append(idx, a)
		}
	}
	return idx
}

// TestDrawUniformsReference: drawUniforms gives drawUniformsRef's uniforms
// bit for bit, and leaves its stream where the reference leaves it, over
// sizes around LatinBlock and the group sizes, the first step, steps
// without resampling, and after a resampling runs of every length: none,
// one run, runs longer than LatinBlock, single particles between runs,
// random mixtures; several steps in a row on one stream.
func TestDrawUniformsReference(t *testing.T) {
	t.Parallel()
	sizes := []int{0, 1, 2, 3, 5, 15, 16, 17, 31, 32, 33, 47, 100, 300, 1000}
	pick := rand.New(rand.NewPCG(21, 22))
	patterns := []struct {
		name   string
		runLen func() int
	}{
		{"distinct", func() int { return 1 }},
		{"one-run", func() int { return math.MaxInt32 }},
		{"pairs", func() int { return 2 }},
		{"long", func() int { return LatinBlock + 1 + pick.IntN(3*LatinBlock) }},
		{"alternate", func() int { return []int{1, 2, 1, 1, 3}[pick.IntN(5)] }},
		{"geometric", func() int { return 1 + int(pick.ExpFloat64()*2) }},
		{"mixed", func() int {
			if pick.IntN(4) == 0 {
				return 2 + pick.IntN(2*LatinBlock)
			}
			return 1 + pick.IntN(2)
		}},
		{"sparse", func() int {
			if pick.IntN(30) == 0 {
				return 2 + pick.IntN(4)
			}
			return 1
		}},
	}
	steps := []struct {
		name             string
		first, resampled bool
	}{{"first", true, false}, {"first-resampled", true, true}, {"plain", false, false}, {"resampled", false, true}}
	perm := make([]int, LatinBlock)
	for _, m := range sizes {
		for _, pat := range patterns {
			t.Run(fmt.Sprintf("m=%d/runs=%s", m, pat.name), func(t *testing.T) {
				for seed := range uint64(20) {
					want := stdStream(seed, domainGroup, uint64(m))
					g := newPCG(seed, domainGroup, uint64(m))
					u, ref := make([]float64, m), make([]float64, m)
					// Several steps on one stream: every kind, then a random
					// sequence of kinds, each after a resampling with new runs.
					kinds := []int{0, 1, 2, 3}
					for range 8 {
						kinds = append(kinds, pick.IntN(len(steps)))
					}
					for k, kind := range kinds {
						st := steps[kind]
						idx := runsIdx(m, pat.runLen)
						drawUniformsRef(ref, func(p int) bool { return st.first || st.resampled && idx[p] == idx[p-1] }, want, perm)
						drawUniforms(u, st.first, st.resampled, idx, &g)
						for p := range u {
							if math.Float64bits(u[p]) != math.Float64bits(ref[p]) {
								t.Fatalf("seed %d, step %d (%s), idx %v: u[%d] = %v, reference %v", seed, k, st.name, idx, p, u[p], ref[p])
							}
						}
					}
					if g.Uint64() != want.Uint64() {
						t.Fatalf("seed %d: the stream is not where the reference left it", seed)
					}
				}
			})
		}
	}
}

// back returns the state n steps before s: (s - inc)/mul mod 2^128, n
// times.
func back(s pcg, n int) pcg {
	mod := new(big.Int).Lsh(big.NewInt(1), 128)
	word := func(hi, lo uint64) *big.Int {
		x := new(big.Int).SetUint64(hi)
		return x.Lsh(x, 64).Add(x, new(big.Int).SetUint64(lo))
	}
	inv := new(big.Int).ModInverse(word(mulHi, mulLo), mod)
	x := word(s.hi, s.lo)
	for range n {
		x.Sub(x, word(incHi, incLo)).Mul(x, inv).Mod(x, mod)
	}
	lo := new(big.Int).And(x, new(big.Int).SetUint64(math.MaxUint64)).Uint64()
	return pcg{x.Rsh(x, 64).Uint64(), lo}
}

// TestDrawUniformsRejection: when a Latin block's permutation rejects its
// number, drawUniforms draws another, as the reference does. A state whose
// high word is 0 has the output 0, which the permutation of k >= 3 rejects
// (0 k! mod 2^64 = 0 < 2^64 mod k!); back puts that state at the
// permutation's number of a full block, of a short block, of a block
// after a stratified run and of the second of two full blocks.
func TestDrawUniformsRejection(t *testing.T) {
	t.Parallel()
	pick := rand.New(rand.NewPCG(41, 42))
	for range 20 {
		s := pcg{pick.Uint64(), pick.Uint64()}
		if s1, _ := back(s, 1).next(); s1 != s {
			t.Fatalf("back(%v, 1) is not undone by next: %v", s, s1)
		}
	}
	rejected := 0
	for _, k := range []int{2, 3, 5, 7, 12, 15, LatinBlock} {
		for _, run := range []int{0, 4} { // a stratified run of 4 before the block
			m := run + k + LatinBlock + 3 // more blocks after it
			idx := make([]int, m)
			for p := range idx {
				idx[p] = p
				if p > 0 && p < run {
					idx[p] = 0
				}
			}
			if k < LatinBlock {
				// the block cut short by a run after it
				idx[run+k+1] = idx[run+k]
			}
			at := []int{run + 1}
			if k == LatinBlock && run == 0 {
				// The second of two blocks drawn together (latinTwo,
				// latinPair), and the third and fourth, past the first
				// pair of latinBlocks' vector path.
				m += 2 * LatinBlock
				at = append(at, 1+latinSpan, 1+2*latinSpan, 1+3*latinSpan)
			}
			for trial := range 4 * len(at) {
				target := pcg{0, pick.Uint64()}
				g := back(target, at[trial%len(at)])
				if _, lo := bits.Mul64(0, latinFactorial[k]); lo < latinReject[k] {
					rejected++
				}
				want := rand.New(rand.NewPCG(g.hi, g.lo))
				u, ref := make([]float64, m), make([]float64, m)
				resampled := run > 0 || k < LatinBlock
				drawUniformsRef(ref, func(p int) bool { return resampled && idx[p] == idx[p-1] }, want, make([]int, LatinBlock))
				drawUniforms(u, false, resampled, idx, &g)
				for p := range u {
					if math.Float64bits(u[p]) != math.Float64bits(ref[p]) {
						t.Fatalf("k = %d, run %d, the permutation's number rejected: u[%d] = %v, reference %v", k, run, p, u[p], ref[p])
					}
				}
				if g.Uint64() != want.Uint64() {
					t.Fatalf("k = %d, run %d, the permutation's number rejected: the stream is not where the reference left it", k, run)
				}
			}
		}
	}
	if want := 4*2*6 + 4 + 8; rejected != want { // every k but 2
		t.Fatalf("%d rejections set up, want %d", rejected, want)
	}
}

// TestPCGOutputs: the generator's vector path gives the outputs of next,
// in turn, bit for bit, for every count from 1 to 100 (the vector's tail
// too), and leaves the state after the count's last.
func TestPCGOutputs(t *testing.T) {
	t.Parallel()
	for n := 1; n <= 100; n++ {
		s := newPCG(5, 6, uint64(n))
		ref := s
		buf := make([]uint64, (n+7)&^7)
		if !pcgOutputs(&s, buf, n) {
			t.Skipf("the vector path does not run here (%s)", VecPath())
		}
		for i, v := range buf {
			var x uint64
			ref, x = ref.next()
			if x != v {
				t.Fatalf("n = %d: output %d is %#x, next gives %#x", n, i, v, x)
			}
			if i == n-1 && ref != s {
				t.Fatalf("n = %d: the state after is %v, next leaves %v", n, s, ref)
			}
		}
	}
}

// BenchmarkDrawUniforms: the reference and drawUniforms on one step of a
// group of the tools' default size (300) and of gpc-train's at M = 10^6
// and 32 groups, without resampling (Latin blocks), at the first step (one
// stratified run) and after a resampling (runs and blocks mixed).
func BenchmarkDrawUniforms(b *testing.B) {
	pick := rand.New(rand.NewPCG(31, 32))
	for _, m := range []int{300, 31250} {
		idx := runsIdx(m, func() int {
			if pick.IntN(3) == 0 {
				return 2 + pick.IntN(4)
			}
			return 1
		})
		for _, st := range []struct {
			name             string
			first, resampled bool
		}{{"plain", false, false}, {"first", true, false}, {"resampled", false, true}} {
			u := make([]float64, m)
			b.Run(fmt.Sprintf("m=%d/step=%s/impl=ref", m, st.name), func(b *testing.B) {
				r := stdStream(1, domainGroup, 0)
				perm := make([]int, LatinBlock)
				for b.Loop() {
					drawUniformsRef(u, func(p int) bool { return st.first || st.resampled && idx[p] == idx[p-1] }, r, perm)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(m), "ns/uniform")
			})
			b.Run(fmt.Sprintf("m=%d/step=%s/impl=new", m, st.name), func(b *testing.B) {
				g := newPCG(1, domainGroup, 0)
				for b.Loop() {
					drawUniforms(u, st.first, st.resampled, idx, &g)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(m), "ns/uniform")
			})
		}
	}
}

// TestJump: jumpOf(n) is n steps of the generator, and jumpOf(2) is the
// constants next2 is written with.
func TestJump(t *testing.T) {
	t.Parallel()
	if j := jumpOf(2); j != (jumper{mul2Hi, mul2Lo, inc2Hi, inc2Lo}) {
		t.Fatalf("jumpOf(2) = %+v, next2's constants %x %x %x %x", j, uint64(mul2Hi), uint64(mul2Lo), uint64(inc2Hi), uint64(inc2Lo))
	}
	pick := rand.New(rand.NewPCG(51, 52))
	for _, n := range []int{0, 1, 2, 3, latinSpan, 100} {
		j := jumpOf(n)
		for range 5 {
			s := pcg{pick.Uint64(), pick.Uint64()}
			want := s
			for range n {
				want, _ = want.next()
			}
			if got := s.jump(j); got != want {
				t.Fatalf("n = %d: jump %v, %d steps %v", n, got, n, want)
			}
		}
	}
}
