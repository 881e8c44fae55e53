package core

import "math/rand/v2"

// Stream domains: every random stream in gpc is derived from (seed, domain,
// unit), so that, for example, the ordering shuffle and particle group 0 never
// share random numbers, and a group's numbers do not depend on which
// goroutine runs it.
const (
	domainGroup   uint64 = 1 // one stream per particle group
	domainShuffle uint64 = 2 // the shuffle and interleave orderings
	domainPilot   uint64 = 3 // the pilot runs that choose an order
	domainPredict uint64 = 4 // the hard count's draws, per test row and group
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
	h := splitmix64(seed ^ splitmix64(domain^splitmix64(unit)))
	return rand.New(rand.NewPCG(h, splitmix64(h^0x6a09e667f3bcc909)))
}

// uniformOpen returns a uniform number in the open interval (0, 1): the
// midpoint of one of 2^53 equal cells, so that neither 0 nor 1, whose
// quantiles are infinite, can occur.
func uniformOpen(r *rand.Rand) float64 {
	return (float64(r.Uint64()>>11) + 0.5) * 0x1p-53
}
