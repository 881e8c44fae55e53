package core

import "math"

// What a sequential estimator outside this package (core/vecchia's, on a
// sparse model) shares with Estimate's filter, so that both weight, draw
// and resample their particles by the same code: the group's random
// stream (PCG, GroupStream), its uniforms (DrawUniforms), the batch
// kernels of an orthant variable's weights and draws (OrthantWeights,
// OrthantDraws), the effective sample size (ExpSums) and systematic
// resampling (Systematic). As an Estimator (driver.go), its groups run on
// the same driver as a Factor's, and Summarize, Result.Trust and
// CombinePosteriors turn the groups' outcomes into the same estimates,
// standard errors and warnings.

// PCG is a work unit's random number generator: O'Neill's PCG-DXSM, the
// generator of math/rand/v2's PCG, as a value whose state a hot loop keeps
// in registers. Its zero value is a valid generator; GroupStream gives a
// particle group's.
type PCG = pcg

// GroupStream returns the random stream of particle group g of an estimate
// with the given seed: the stream Estimate gives that group, so that an
// estimator run group by group (RunGroups) is reproducible whatever the
// thread count.
func GroupStream(seed uint64, g int) PCG { return newPCG(seed, domainGroup, uint64(g)) }

// Float64Open returns a uniform number in the open interval (0, 1) from s.
func (s *pcg) Float64Open() float64 {
	var x uint64
	*s, x = s.next()
	return openUnit(x)
}

// DrawUniforms fills u with one step's uniforms for the particles' draws,
// as Estimate's filter draws them: stratified among the particles at the
// first variable (first) and among the copies of one ancestor right after
// a resampling (resampled, with idx the resampled ancestors, copies side
// by side), Latin in blocks of LatinBlock otherwise. Each u[p] is uniform
// on (0, 1) given the past.
func DrawUniforms(u []float64, first, resampled bool, idx []int, s *PCG) {
	drawUniforms(u, first, resampled, idx, s)
}

// OrthantWeights is the weighting half of a fully adapted step on a
// variable bounded below only: for each particle p, from its standardized
// lower bound lo[p], it sets t[p] = P(Z >= lo[p]), c[p] = P(Z < lo[p]) and
// lg[p] = log t[p] (all with full relative accuracy), adds lg[p] to
// logw[p], and returns the largest logw[p]. The slices have lo's length.
// It runs on the batch kernels of the CPU's vector path.
func OrthantWeights(lo, t, c, lg, logw []float64) float64 {
	return tailWeights(lo, t, c, lg, logw)
}

// OrthantDraws is the drawing half: z[p] is the u[p]-quantile of the
// standard normal truncated to [lo[p], +Inf), from OrthantWeights' t, c
// and lg.
func OrthantDraws(z, lo, t, c, lg, u []float64) {
	tailDraws(z, lo, t, c, lg, u)
}

// ExpSums returns s1 = sum_p exp(x[p] - mx) and s2 = sum_p exp(x[p] - mx)^2
// (every x[p] <= mx), summed in a fixed order: the effective sample size of
// the weights exp(x) is s1^2 / s2.
func ExpSums(x []float64, mx float64) (s1, s2 float64) { return expSums(x, mx) }

// Systematic sets idx to m = len(idx) ancestors drawn by systematic
// resampling from the normalized log weights logw (their exps sum to 1),
// with the single uniform u in (0, 1): ancestor j appears about m exp(logw[j])
// times, its copies side by side.
//
// References: J. Carpenter, P. Clifford and P. Fearnhead (1999), "Improved
// particle filter for nonlinear problems", IEE Proceedings - Radar, Sonar
// and Navigation 146:2-7.
func Systematic(idx []int, logw []float64, u float64) {
	m := len(idx)
	j, c := 0, math.Exp(logw[0])
	for p := range m {
		t := (float64(p) + u) / float64(m)
		for c < t && j < m-1 {
			j++
			c += math.Exp(logw[j])
		}
		idx[p] = j
	}
}

// Axpy sets y[i] = fma(a, x[i], y[i]) for each i < len(y) (x at least as
// long), on the vector path in use: the same bits on every path.
func Axpy(y []float64, a float64, x []float64) {
	n := len(y)
	x = x[:n]
	p0 := 0
	switch vec() {
	case vecAVX512:
		if n > 0 {
			axpyAVX512(&y[0], &x[0], n, a)
			return
		}
	case vecAVX2:
		if p0 = n &^ 3; p0 > 0 {
			axpyAVX2(&y[0], &x[0], p0, a)
		}
	}
	for i := p0; i < n; i++ {
		y[i] = math.FMA(a, x[i], y[i])
	}
}

// Axpy2 is two Axpy of one x: y[i] = fma(a, x[i], y[i]) and z[i] =
// fma(b, x[i], z[i]), reading x once.
func Axpy2(y, z []float64, a, b float64, x []float64) {
	n := len(y)
	x, z = x[:n], z[:n]
	p0 := 0
	switch vec() {
	case vecAVX512:
		if n > 0 {
			axpy2AVX512(&y[0], &z[0], &x[0], n, a, b)
			return
		}
	case vecAVX2:
		if p0 = n &^ 3; p0 > 0 {
			axpy2AVX2(&y[0], &z[0], &x[0], p0, a, b)
		}
	}
	for i := p0; i < n; i++ {
		y[i] = math.FMA(a, x[i], y[i])
		z[i] = math.FMA(b, x[i], z[i])
	}
}

// Combine adds to each y[i] (i < len(y)) the combination sum_j a[j]
// x[off[j]+i] of the rows of x that start at the offsets off, as Axpy(y,
// a[j], x[off[j]:]) for j = 0, 1, ... does it: the same fused multiply-adds
// in the same order, so the same bits. It reads the rows side by side, a
// vector of each at a time, so that their memory latencies overlap (a
// particle filter's neighbours' rows, scattered in memory). It panics if a
// row is out of x's range.
func Combine(y, x []float64, off []int64, a []float64) {
	n := len(y)
	a = a[:len(off)]
	checkRows(x, off, n)
	if vec() == vecAVX512 && n > 0 && len(off) > 0 {
		combineAVX512(&y[0], &x[0], &off[0], &a[0], len(off), n)
		return
	}
	for j, o := range off {
		Axpy(y, a[j], x[o:o+int64(n)])
	}
}

// Combine2 is Combine of a into y and of b into z, reading the rows once.
func Combine2(y, z, x []float64, off []int64, a, b []float64) {
	n := len(y)
	z, a, b = z[:n], a[:len(off)], b[:len(off)]
	checkRows(x, off, n)
	if vec() == vecAVX512 && n > 0 && len(off) > 0 {
		combine2AVX512(&y[0], &z[0], &x[0], &off[0], &a[0], &b[0], len(off), n)
		return
	}
	for j, o := range off {
		Axpy2(y, z, a[j], b[j], x[o:o+int64(n)])
	}
}

// Spread subtracts a[j] v from the row of len(v) values of x at offset
// off[j], for each j in order: x[off[j]+i] = fma(-a[j], v[i],
// x[off[j]+i]), Axpy's bits for each row (Axpy(x[off[j]:], -a[j], v)),
// in one call for all the rows of a scattered update. The rows must not
// overlap.
func Spread(x []float64, off []int64, a, v []float64) {
	n := len(v)
	a = a[:len(off)]
	checkRows(x, off, n)
	if vec() == vecAVX512 && n > 0 && len(off) > 0 {
		spreadAVX512(&x[0], &v[0], &off[0], &a[0], len(off), n)
		return
	}
	for j, o := range off {
		Axpy(x[o:o+int64(n)], -a[j], v)
	}
}

// checkRows panics if a row of n values at an offset of off is not within
// x.
func checkRows(x []float64, off []int64, n int) {
	for _, o := range off {
		if o < 0 || o+int64(n) > int64(len(x)) {
			panic("core: Combine, Spread: a row is out of range")
		}
	}
}
