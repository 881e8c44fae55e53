package core

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestTwistedStepPaths checks TwistedStep's loops on every vector path
// bit for bit against the step's arithmetic written out per particle
// (core/vecchia's step before the loops moved here), on particle counts
// with and without a tail, both sides of the bound, with and without
// noise.
func TestTwistedStepPaths(t *testing.T) {
	defer func() {
		if err := SetVecPath(VecPaths()[0]); err != nil {
			t.Fatal(err)
		}
	}()
	r := rand.New(rand.NewPCG(7, 8))
	for trial := range 40 {
		n := trial % 21
		if trial >= 21 {
			n = 100 + trial
		}
		lam, ad, dk := 0.5+r.Float64()*3, 0.3+r.Float64()*2, 0.01+r.Float64()
		sw, gain := 0.1+r.Float64(), r.Float64()
		rsd := 0.0
		if trial%3 != 0 {
			rsd = 0.05 + r.Float64()
		}
		sign := 1.0
		if trial%2 == 1 {
			sign = -1
		}
		s := TwistedStep{
			Eta: r.NormFloat64(), Ad: ad, A2: ad * ad, Rnu: r.NormFloat64(), ILam: 1 / lam, HalfLam: 0.5 * lam,
			Bound: 0, ISw: 1 / sw, SSw: sign * sw, Gain: gain, Rsd: rsd, TwoD: 2 * dk,
			HalfTau: 0.5 * r.Float64(), Nu: r.NormFloat64(), Upper: sign < 0,
		}
		if trial%5 == 4 {
			s.Bound = r.NormFloat64()
		}
		vec := func(sd float64) []float64 {
			v := make([]float64, n)
			for i := range v {
				v[i] = sd * r.NormFloat64()
			}
			return v
		}
		mh0, logw0, z, nz, mu, corr0 := vec(3), vec(1), vec(1), vec(1), vec(3), vec(1)
		for i := range z {
			z[i] = math.Abs(z[i])
		}
		// The reference: the step's expressions, as core/vecchia wrote them.
		wantMh, wantC, wantLo, wantLogw := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
		wantX, wantCorr := make([]float32, n), make([]float64, n)
		a2, rnu, ilam, isw := s.A2, s.Rnu, s.ILam, s.ISw
		for i := range n {
			mhat := (s.Eta - mh0[i]) / ad
			ci := (mhat*a2 - rnu) * ilam
			wantC[i] = ci
			wantLogw[i] = logw0[i] + (0.5*lam*ci*ci - 0.5*mhat*mhat*a2)
			wantMh[i] = mhat
			if sign > 0 {
				wantLo[i] = (s.Bound - ci) * isw
			} else {
				wantLo[i] = (ci - s.Bound) * isw
			}
			w := ci + sign*sw*z[i]
			xi := ci + gain*(w-ci)
			if rsd > 0 {
				xi += rsd * nz[i]
			}
			wantX[i] = float32(xi)
			xi = float64(wantX[i])
			dm, dh := xi-mu[i], xi-mhat
			wantCorr[i] = corr0[i] + (-dm*dm/(2*dk) + 0.5*dh*dh*a2 - 0.5*(2*s.HalfTau)*xi*xi + s.Nu*xi)
		}
		for _, path := range VecPaths() {
			if err := SetVecPath(path); err != nil {
				t.Fatal(err)
			}
			mh, logw, corr := append([]float64(nil), mh0...), append([]float64(nil), logw0...), append([]float64(nil), corr0...)
			c, lo, x := make([]float64, n), make([]float64, n), make([]float32, n)
			s.Weights(mh, c, lo, logw)
			nzs := nz
			if rsd == 0 {
				nzs = nil
			}
			s.Moves(c, z, nzs, mu, mh, x, corr)
			for i := range n {
				same := func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }
				if !same(mh[i], wantMh[i]) || !same(c[i], wantC[i]) || !same(lo[i], wantLo[i]) || !same(logw[i], wantLogw[i]) ||
					math.Float32bits(x[i]) != math.Float32bits(wantX[i]) || !same(corr[i], wantCorr[i]) {
					t.Fatalf("trial %d, path %s, n %d, particle %d: got mhat %v c %v lo %v logw %v x %v corr %v, want %v %v %v %v %v %v",
						trial, path, n, i, mh[i], c[i], lo[i], logw[i], x[i], corr[i], wantMh[i], wantC[i], wantLo[i], wantLogw[i], wantX[i], wantCorr[i])
				}
			}
		}
	}
}
