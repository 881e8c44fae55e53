package core

import "math"

// TwistedStep holds the constants of one step of a sequential estimator on
// a sparse model (core/vecchia's runner) through a variable bounded on one
// side only, the classifier's rows, and runs the step's two per-particle
// loops: Weights, before the step's tail weights (OrthantWeights), and
// Moves, after its draws (OrthantDraws). On the avx2 and avx512 paths they
// run in AVX2 four particles at a time (twisted_amd64.s), the Go code's
// operations on each particle in the same order, no product fused with a
// sum: the same bits on every path.
type TwistedStep struct {
	// Weights' constants: the site's eta, the proposal's diagonal ad and
	// its square a2, the divided-out site's rnu, 1/lambda and lambda/2,
	// the bound and 1/sw, the standardization of the bound's distance.
	Eta, Ad, A2, Rnu, ILam, HalfLam, Bound, ISw float64
	// Moves': sign*sw (the bound's side times sw), the gain and residual
	// standard deviation of x given w, twice the prior's conditional
	// variance, tau/2 and nu of the correction.
	SSw, Gain, Rsd, TwoD, HalfTau, Nu float64
	// Upper says the bound is an upper one: lo = (c - Bound)/sw, where a
	// lower bound's is (Bound - c)/sw.
	Upper bool
}

// Weights is the step's first loop: for each particle p < len(mh), from
// the sum mh[p] of its proposal's conditional mean,
//
//	mhat = (Eta - mh[p]) / Ad, stored in mh[p],
//	c[p] = (mhat A2 - Rnu) ILam,
//	logw[p] += HalfLam c c - mhat mhat A2 / 2,
//	lo[p] = (Bound - c) ISw, or (c - Bound) ISw for an upper bound.
func (s *TwistedStep) Weights(mh, c, lo, logw []float64) {
	n := len(mh)
	c, lo, logw = c[:n], lo[:n], logw[:n]
	p0 := 0
	if vec() != vecGeneric && haveAVX2 {
		if p0 = n &^ 3; p0 > 0 {
			twistedWeightsAVX2(s, &mh[0], &c[0], &lo[0], &logw[0], p0)
		}
	}
	for p := p0; p < n; p++ {
		mhat := (s.Eta - mh[p]) / s.Ad
		ci := (float64(mhat*s.A2) - s.Rnu) * s.ILam
		c[p] = ci
		g := float64(float64(s.HalfLam*ci)*ci) - float64(float64(float64(0.5*mhat)*mhat)*s.A2)
		logw[p] += g
		mh[p] = mhat
		if s.Upper {
			lo[p] = (ci - s.Bound) * s.ISw
		} else {
			lo[p] = (s.Bound - ci) * s.ISw
		}
	}
}

// Moves is the step's second loop: for each particle p < len(c), from its
// twisted mean c[p] and standardized draw z[p] beyond the bound, and nz[p]
// its standard normal number of x given w (unused if Rsd is 0),
//
//	w = c + SSw z, x = c + Gain (w - c) + Rsd nz,
//
// x rounded to float32 and stored in xk[p], and its correction gains, at
// the stored value x, -(x - mu)^2/TwoD + (x - mh)^2 A2/2 - HalfTau x^2 +
// Nu x, from the prior's and the proposal's conditional means mu[p] and
// mh[p].
func (s *TwistedStep) Moves(c, z, nz, mu, mh []float64, xk []float32, corr []float64) {
	n := len(c)
	z, mu, mh, xk, corr = z[:n], mu[:n], mh[:n], xk[:n], corr[:n]
	noise := s.Rsd > 0
	if noise {
		nz = nz[:n]
	}
	p0 := 0
	if vec() != vecGeneric && haveAVX2 {
		if p0 = n &^ 3; p0 > 0 {
			var nz0 *float64
			if noise {
				nz0 = &nz[0]
			}
			twistedMovesAVX2(s, &c[0], &z[0], nz0, &mu[0], &mh[0], &xk[0], &corr[0], p0)
		}
	}
	for p := p0; p < n; p++ {
		ci := c[p]
		w := ci + float64(s.SSw*z[p])
		x := ci + float64(s.Gain*(w-ci))
		if noise {
			x += float64(s.Rsd * nz[p])
		}
		xk[p] = float32(x)
		x = float64(xk[p]) // the path's value
		dm, dh := x-mu[p], x-mh[p]
		g := float64(-dm*dm)/s.TwoD + float64(float64(float64(0.5*dh)*dh)*s.A2)
		g -= float64(float64(s.HalfTau*x) * x)
		g += float64(s.Nu * x)
		corr[p] += g
	}
}

// twistedConsts are 1/2 and -0 (the sign bit), for the kernels.
var twistedConsts = [2]float64{0.5, math.Copysign(0, -1)}
