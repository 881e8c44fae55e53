package core

import "math"

// The batch normal kernels of the filter's hot loop: for every particle of
// a step, the weight of an orthant variable's interval [lo, +Inf), log
// P(Z >= lo), and the draw from the normal truncated to it; for prediction,
// Phi at every particle. They compute what LogPhi and upperTailQuantile
// compute, with the same accuracy where the estimator uses it, at a small
// fraction of the cost: no math.Erfc (two exponentials and a division), one
// exponential and one logarithm per weight, and only polynomials for most
// draws.
//
// # Arithmetic
//
// Each kernel is written three times: here, in Go, as the specification,
// and in assembly for AVX-512 (fastnorm_amd64.s, 8 particles per vector)
// and for AVX2 with FMA (fastnorm_avx2_amd64.s, 4 per vector), used where
// the CPU has them (vecpath.go chooses). All perform the same IEEE
// operations on each particle in the same order (every multiply-add that
// is fused is an explicit math.FMA, every product that must not be fused
// is converted with float64()), so they agree bit for bit, and gpc's
// results do not depend on the machine. Sums over particles are kept in
// eight lanes (particle p in lane p mod 8) added in a fixed tree, the order
// an 8-wide vector computes (two 4-wide vectors on AVX2).
//
// # Accuracy
//
// expK and logK are within 1 ulp of exp and log (largest errors measured
// over 10^7 arguments in the tests); the normal tail T = Phi(-t) =
// exp(-t^2/2) R(t) is within 6e-16 relative for 0 <= t <= 37 (R is a
// piecewise polynomial in v = 4/(4+t), fitted to 1.2e-17 by
// core/testdata/fastnorm-coefficients.py); log P and the draws agree with
// LogPhi and upperTailQuantile to 2e-15 relative (or 1e-15 absolute for
// values near 0), far below anything the estimator can resolve: a step's
// log weights are summed over particles whose Monte Carlo error is
// 1e-3 or more. Beyond lo = tailMax, where P(Z >= lo) leaves the float64
// range, the kernels fall back to LogPhi and upperTailQuantile.

// tailMax is the largest lower bound the fast kernels handle: above it,
// P(Z >= lo) < 1e-300 and the quantile needs the log-space path.
const tailMax = 37.0

// log2e is log2(e) rounded to float64.
const log2e = 1.4426950408889634

// expK returns exp(x) for x <= 0 (0 below -746), within 1 ulp. It reduces
// x = k ln 2 + r, |r| <= ln(2)/2, evaluates a degree-11 polynomial for
// exp(r) and scales it by 2^k with one rounding, as VSCALEFPD does.
func expK(x float64) float64 {
	x = max(x, -746)
	k := math.RoundToEven(float64(x * log2e))
	r := math.FMA(-k, ln2Hi, x)
	r = math.FMA(-k, ln2Lo, r)
	p := expPoly[0]
	for _, c := range expPoly[1:] {
		p = math.FMA(p, r, c)
	}
	return scale2(p, k)
}

// scale2 returns p * 2^k rounded once, for 0.5 <= p < 2 and integral
// -1080 <= k <= 0.
func scale2(p, k float64) float64 {
	ki := int(k)
	if ki >= -1022 {
		return p * math.Float64frombits(uint64(ki+1023)<<52)
	}
	// Scale exactly into the normal range, then once more into the
	// subnormals: only the last product rounds.
	return float64(p*math.Float64frombits(uint64(ki+64+1023)<<52)) * 0x1p-64
}

// sqrt2 is sqrt(2) rounded to float64.
const sqrt2 = 1.4142135623730951

// expMant splits a positive finite x into x = m 2^e with 1 <= m < 2, as
// VGETEXPPD and VGETMANTPD do (subnormals included).
func expMant(x float64) (e, m float64) {
	b := math.Float64bits(x)
	ex := int(b>>52) & 0x7ff
	if ex == 0 { // subnormal
		b = math.Float64bits(x * 0x1p64)
		ex = int(b>>52)&0x7ff - 64
	}
	return float64(ex - 1023), math.Float64frombits(b&(1<<52-1) | 1023<<52)
}

// logK returns log(x) for positive finite x, within 1 ulp: with
// x = m 2^e, sqrt(1/2) <= m < sqrt(2), f = m - 1, s = f/(2+f),
//
//	log(x) = e ln 2 + f - (f^2/2 - s (f^2/2 + s^2 Q(s^2))),
//
// Q a degree-8 polynomial for (2 atanh(s) - 2s)/s^3.
func logK(x float64) float64 {
	e, m := expMant(x)
	if m > sqrt2 {
		m *= 0.5
		e++
	}
	f := m - 1
	s := f / (2 + f)
	z := float64(s * s)
	q := logPoly[0]
	for _, c := range logPoly[1:] {
		q = math.FMA(q, z, c)
	}
	r := float64(z * q)
	hfsq := float64(float64(0.5*f) * f)
	a := float64(s * (hfsq + r))
	b := math.FMA(e, ln2Lo, a)
	return math.FMA(e, ln2Hi, -((hfsq - b) - f))
}

// tailR returns R(t) = Phi(-t) exp(t^2/2) for 0 <= t <= tailMax (and a
// smooth extrapolation up to t = 40): the piecewise polynomial of
// fastnorm_tables.go.
func tailR(t float64) float64 {
	v := 4 / (4 + t)
	w := float64(v-tailV0) * tailScale
	kf := min(max(math.Floor(w), 0), 7)
	s := 2*(w-kf) - 1
	k := int(kf)
	p := tailPoly[0][k]
	for j := 1; j < len(tailPoly); j++ {
		p = math.FMA(p, s, tailPoly[j][k])
	}
	return p
}

// tailSmall returns Phi(-t) for t = min(|x|, 40): exp(-t^2/2) R(t), with
// t^2 split exactly into h + l so that the exponential loses nothing.
func tailSmall(x float64) float64 {
	t := min(math.Abs(x), 40)
	h := float64(t * t)
	l := math.FMA(t, t, -h)
	e := expK(-0.5 * h)
	e = math.FMA(-0.5*l, e, e)
	return e * tailR(t)
}

// tailWeight returns, for lo <= tailMax, T = P(Z >= lo), C = P(Z < lo) =
// 1 - T, both with full relative accuracy, and lg = log T.
func tailWeight(lo float64) (t, c, lg float64) {
	small := tailSmall(lo)
	big := 1 - small
	if lo >= 0 {
		return small, big, logK(small)
	}
	// log T = log1p(-small): the log of the rounded 1 - small, corrected
	// by the rounding error of the subtraction.
	return big, small, logK(big) + ((1-big)-small)/big
}

// tailDraw returns the u-quantile of the standard normal truncated to
// [lo, +Inf), given T = P(Z >= lo) and C = P(Z < lo): the z with
// P(Z >= z) = (1-u) T, from whichever of that and P(Z < z) = C + u T is
// at most 1/2 (neither suffers cancellation). u = 1 (which a uniform
// (j + V)/k can round to) gives the largest finite draw, not +Inf.
func tailDraw(lo, t, c, u float64) float64 {
	tau := float64(1-u) * t
	if tau < 0x1p-1074 {
		tau = 0x1p-1074
	}
	var z float64
	if tau <= 0.5 {
		z = -lowerQuantileK(tau)
	} else {
		z = lowerQuantileK(math.FMA(u, t, c))
	}
	if z < lo {
		return lo
	}
	return z
}

// lowerQuantileK is AS 241 for 0 < p <= 1/2 with logK and fused Horner
// steps: lowerQuantile, for the kernels.
func lowerQuantileK(p float64) float64 {
	q := p - 0.5
	if q >= -0.425 {
		r := math.FMA(-q, q, 0.180625)
		return float64(q*hornerK(&as241CentralNum, r)) / hornerK(&as241CentralDen, r)
	}
	r := math.Sqrt(-logK(p))
	if r <= 5 {
		r -= 1.6
		return -hornerK(&as241NearNum, r) / hornerK(&as241NearDen, r)
	}
	r -= 5
	return -hornerK(&as241FarNum, r) / hornerK(&as241FarDen, r)
}

func hornerK(c *[8]float64, x float64) float64 {
	p := c[0]
	for _, ci := range c[1:] {
		p = math.FMA(p, x, ci)
	}
	return p
}

// phiK returns Phi(x) with full absolute accuracy (and full relative
// accuracy for x >= -37).
func phiK(x float64) float64 {
	s := tailSmall(x)
	if x < 0 {
		return s
	}
	return 1 - s
}

// tailWeights is the weight half of a filter step on an orthant variable:
// for each particle p, from the standardized lower bound lo[p], it sets
// t[p] = P(Z >= lo[p]), c[p] = P(Z < lo[p]), lg[p] = log t[p], adds lg[p]
// to logw[p], and returns the largest logw[p]. For lo[p] > tailMax (or
// NaN) t[p] and c[p] are NaN and lg[p] is LogPhi(-lo[p]): tailDraws then
// uses the log-space path.
func tailWeights(lo, t, c, lg, logw []float64) float64 {
	n := len(lo)
	t, c, lg, logw = t[:n], c[:n], lg[:n], logw[:n]
	mx := math.Inf(-1)
	special, p0 := 0, 0
	switch vec() {
	case vecAVX512:
		if n > 0 {
			mx, special = tailWeightsAVX512(&lo[0], &t[0], &c[0], &lg[0], &logw[0], n)
			p0 = n
		}
	case vecAVX2:
		if p0 = n &^ 7; p0 > 0 {
			mx, special = tailWeightsAVX2(&lo[0], &t[0], &c[0], &lg[0], &logw[0], p0)
		}
	}
	for p := p0; p < n; p++ {
		x := lo[p]
		if !(x <= tailMax) {
			special++
			continue
		}
		t[p], c[p], lg[p] = tailWeight(x)
		logw[p] += lg[p]
		mx = max(mx, logw[p])
	}
	if special > 0 {
		for p, x := range lo {
			if !(x <= tailMax) {
				t[p], c[p] = math.NaN(), math.NaN()
				lg[p] = LogPhi(-x)
				logw[p] += lg[p]
				mx = max(mx, logw[p])
			}
		}
	}
	return mx
}

// tailDraws is the draw half: z[p] is the u[p]-quantile of the standard
// normal truncated to [lo[p], +Inf), from tailWeights' t, c and lg.
func tailDraws(z, lo, t, c, lg, u []float64) {
	n := len(lo)
	z, t, c, lg, u = z[:n], t[:n], c[:n], lg[:n], u[:n]
	special, p0 := 0, 0
	switch vec() {
	case vecAVX512:
		if n > 0 {
			special = tailDrawsAVX512(&z[0], &lo[0], &t[0], &c[0], &u[0], n)
			p0 = n
		}
	case vecAVX2:
		if p0 = n &^ 3; p0 > 0 {
			special = tailDrawsAVX2(&z[0], &lo[0], &t[0], &c[0], &u[0], p0)
		}
	}
	for p := p0; p < n; p++ {
		x := lo[p]
		if !(x <= tailMax) {
			special++
			continue
		}
		z[p] = tailDraw(x, t[p], c[p], u[p])
	}
	if special > 0 {
		for p, x := range lo {
			if !(x <= tailMax) {
				z[p] = upperTailQuantile(x, lg[p], u[p])
			}
		}
	}
}

// expSums returns s1 = sum_p exp(x[p] - mx) and s2 = sum_p exp(x[p] - mx)^2,
// summed in eight lanes (p mod 8) reduced as ((0+1)+(2+3))+((4+5)+(6+7)).
// Every x[p] - mx must be <= 0.
func expSums(x []float64, mx float64) (s1, s2 float64) {
	var a, b [8]float64
	p0 := 0
	switch vec() {
	case vecAVX512:
		if len(x) > 0 {
			return expSumsAVX512(&x[0], len(x), mx)
		}
	case vecAVX2:
		if p0 = len(x) &^ 7; p0 > 0 {
			expSumsAVX2(&x[0], p0, mx, &a, &b)
		}
	}
	for p := p0; p < len(x); p++ {
		e := expK(x[p] - mx)
		a[p%8] += e
		b[p%8] = math.FMA(e, e, b[p%8])
	}
	return laneSum(&a), laneSum(&b)
}

func laneSum(a *[8]float64) float64 {
	return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]))
}

// phiAccumulate adds w Phi(mu[j] * isig[j]) to acc[j] (a fused multiply-add)
// for every j: one particle's contribution to the posteriors of a batch of
// test points.
func phiAccumulate(acc, mu, isig []float64, w float64) {
	n := len(acc)
	mu, isig = mu[:n], isig[:n]
	j0 := 0
	switch vec() {
	case vecAVX512:
		if n > 0 {
			phiAccumulateAVX512(&acc[0], &mu[0], &isig[0], n, w)
			return
		}
	case vecAVX2:
		if j0 = n &^ 3; j0 > 0 {
			phiAccumulateAVX2(&acc[0], &mu[0], &isig[0], j0, w)
		}
	}
	for j := j0; j < n; j++ {
		acc[j] = math.FMA(w, phiK(float64(mu[j]*isig[j])), acc[j])
	}
}
