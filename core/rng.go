package core

import (
	"math/bits"
	"math/rand/v2"
)

// Stream domains: every random stream in gpc is derived from (seed, domain,
// unit), so that, for example, the ordering shuffle and particle group 0 never
// share random numbers, and a group's numbers do not depend on which
// goroutine runs it.
const (
	domainGroup   uint64 = 1 // one stream per particle group
	domainShuffle uint64 = 2 // the shuffle and interleave orderings
	domainPilot   uint64 = 3 // the pilot runs that choose an order
	domainPredict uint64 = 4 // the hard count's draws, per test row and group
	domainClasses uint64 = 5 // PredictClasses' draws, per test point and group
)

// splitmix64 is the finalizer of Steele, Lea and Flood's SplitMix64
// ("Fast splittable pseudorandom number generators", OOPSLA 2014): a
// bijective avalanche mix of a 64-bit word.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// NewStream returns the random generator of work unit `unit` in domain
// `domain` under the user's seed: a PCG-DXSM generator whose two state words
// are hashes of (seed, domain, unit). Streams are independent for practical
// purposes and reproducible whatever the thread count.
func NewStream(seed, domain, unit uint64) *rand.Rand {
	s := newPCG(seed, domain, unit)
	return rand.New(&s)
}

// newPCG returns the generator that NewStream wraps, for the hot loops that
// call it directly.
func newPCG(seed, domain, unit uint64) pcg {
	h := splitmix64(seed ^ splitmix64(domain^splitmix64(unit)))
	return pcg{h, splitmix64(h ^ 0x6a09e667f3bcc909)}
}

// pcg is math/rand/v2's PCG: O'Neill's 128-bit linear congruential
// generator with the DXSM output mix, the same state update, constants and
// output, so that pcg{hi, lo} gives the numbers of rand.NewPCG(hi, lo). It
// is a concrete value type so that the hot loops inline its steps and keep
// the state in registers (next), which an interface call through rand.Rand
// cannot.
//
// References:
//
//	M. E. O'Neill, PCG: a family of simple fast space-efficient statistically
//	good algorithms for random number generation, HMC-CS-2014-0905 (2014).
//	The DXSM mix: pcg-cpp's dxsm_mixin; Go issue 21835.
type pcg struct{ hi, lo uint64 }

// The generator's multiplier and increment (math/rand/v2's, those of
// pcg-cpp's 128-bit generators), and those of two steps at once:
// mul2 = mul^2 and inc2 = mul*inc + inc mod 2^128.
const (
	mulHi  = 2549297995355413924
	mulLo  = 4865540595714422341
	incHi  = 6364136223846793005
	incLo  = 1442695040888963407
	mul2Hi = 0x17bce35bdf69743c
	mul2Lo = 0x529ed9eb20e0ae99
	inc2Hi = 0x4871bec9994273f8
	inc2Lo = 0xac1f8a1c3883459a

	dxsmMul = 0xda942042e4dd58b5 // the output mix's multiplier
)

// next returns the state after one step, s*mul + inc mod 2^128, and the
// step's output, the DXSM ("double xorshift multiply") mix of the new
// state.
func (s pcg) next() (pcg, uint64) {
	hi, lo := bits.Mul64(s.lo, mulLo)
	hi += s.hi*mulLo + s.lo*mulHi
	lo, c := bits.Add64(lo, incLo, 0)
	hi, _ = bits.Add64(hi, incHi, c)
	x := hi
	x ^= x >> 32
	x *= dxsmMul
	x ^= x >> 48
	return pcg{hi, lo}, x * (lo | 1)
}

// next2 is next two steps at once: the state after two steps,
// s*mul2 + inc2, and the second step's output. Two streams a step apart
// that each take next2 make the numbers of one stream with next, in turn;
// the steps of one do not wait for the other's. (next2 is next with mul2
// and inc2, written out: a shared helper would keep both from being
// inlined.)
func (s pcg) next2() (pcg, uint64) {
	hi, lo := bits.Mul64(s.lo, mul2Lo)
	hi += s.hi*mul2Lo + s.lo*mul2Hi
	lo, c := bits.Add64(lo, inc2Lo, 0)
	hi, _ = bits.Add64(hi, inc2Hi, c)
	x := hi
	x ^= x >> 32
	x *= dxsmMul
	x ^= x >> 48
	return pcg{hi, lo}, x * (lo | 1)
}

// jumper is the affine map of n steps of pcg's update, s*mul^n + inc_n
// mod 2^128 (jumpOf).
type jumper struct{ mulHi, mulLo, incHi, incLo uint64 }

// jumpOf returns the map of n steps, by composing one step's n times.
func jumpOf(n int) jumper {
	j := jumper{mulLo: 1} // the identity
	for range n {
		// (mul, inc) after one more step: mul*m1, inc*m1 + inc1.
		hi, lo := bits.Mul64(j.mulLo, mulLo)
		j.mulHi, j.mulLo = hi+j.mulHi*mulLo+j.mulLo*mulHi, lo
		hi, lo = bits.Mul64(j.incLo, mulLo)
		hi += j.incHi*mulLo + j.incLo*mulHi
		lo, c := bits.Add64(lo, incLo, 0)
		j.incHi, j.incLo = hi+incHi+c, lo
	}
	return j
}

// jump returns the state after j's steps from s.
func (s pcg) jump(j jumper) pcg {
	hi, lo := bits.Mul64(s.lo, j.mulLo)
	hi += s.hi*j.mulLo + s.lo*j.mulHi
	lo, c := bits.Add64(lo, j.incLo, 0)
	hi, _ = bits.Add64(hi, j.incHi, c)
	return pcg{hi, lo}
}

// Uint64 steps the generator and returns its output (rand.Source).
func (s *pcg) Uint64() uint64 {
	var x uint64
	*s, x = s.next()
	return x
}

// uniformOpen returns a uniform number in the open interval (0, 1): the
// midpoint of one of 2^53 equal cells, so that neither 0 nor 1, whose
// quantiles are infinite, can occur.
func uniformOpen(r *rand.Rand) float64 {
	return openUnit(r.Uint64())
}

// openUnit is uniformOpen's map from the generator's output x to (0, 1).
func openUnit(x uint64) float64 {
	return (float64(x>>11) + 0.5) * 0x1p-53
}
