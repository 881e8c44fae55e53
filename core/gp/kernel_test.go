package gp_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpc-mc/gpc/core/gp"
)

// derivTol bounds the error of a central difference with step derivStep on
// the log scale: truncation O(h^2) ~ 1e-10 relative, rounding
// ~ 1e-16 / h ~ 1e-11.
const (
	derivStep = 1e-5
	derivTol  = 1e-7
)

// TestLogDeriv checks each kernel's derivatives with respect to its
// log-hyperparameters against central differences of Eval.
func TestLogDeriv(t *testing.T) {
	x := []float64{0.3, -1.2, 0.8}
	ys := [][]float64{{1.1, 0.4, -0.5}, {0.3, -1.2, 0.8}, {0.31, -1.2, 0.8}}
	kernels := []gp.Kernel{
		{Kind: gp.KernelRBF, Alpha: []float64{1.7}, Beta: 3},
		{Kind: gp.KernelRBF, Alpha: []float64{0.4}, Beta: 1e3, Bias: 0.5},
		{Kind: gp.KernelARD, Alpha: []float64{0.5, 2, 1.3}, Beta: 2},
		{Kind: gp.KernelMatern32, Alpha: []float64{1.1}, Beta: 10, Bias: 2},
		{Kind: gp.KernelMatern52, Alpha: []float64{0.9}, Beta: 0.7},
		{Kind: gp.KernelLinear, Beta: 1.5, Bias: 0.1},
	}
	for _, k := range kernels {
		for yi, y := range ys {
			t.Run(fmt.Sprintf("%v/bias=%v/y=%d", k.Kind, k.Bias, yi), func(t *testing.T) {
				hs := k.Hypers()
				got := make([]float64, len(hs))
				k.LogDerivTo(got, hs, x, y)
				for n, h := range hs {
					up, dn := k, k
					up.Alpha = append([]float64(nil), k.Alpha...)
					dn.Alpha = append([]float64(nil), k.Alpha...)
					v := h.Get(&k)
					h.Set(&up, v*math.Exp(derivStep/2))
					h.Set(&dn, v*math.Exp(-derivStep/2))
					want := (up.Eval(x, y) - dn.Eval(x, y)) / derivStep
					if math.Abs(got[n]-want) > derivTol*(1+math.Abs(want)) {
						t.Errorf("hyper %v: got %.10g, want %.10g", h, got[n], want)
					}
				}
			})
		}
	}
}

// TestHypers checks which hyperparameters a kernel exposes.
func TestHypers(t *testing.T) {
	for _, c := range []struct {
		k    gp.Kernel
		want int
	}{
		{gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{1}, Beta: 1}, 2},
		{gp.Kernel{Kind: gp.KernelARD, Alpha: []float64{1, 2, 3}, Beta: 1, Bias: 1}, 5},
		{gp.Kernel{Kind: gp.KernelLinear, Beta: 1}, 1},
	} {
		if got := len(c.k.Hypers()); got != c.want {
			t.Errorf("%v: %d hyperparameters, want %d", c.k.Kind, got, c.want)
		}
	}
}

// TestCorrelation checks Kernel.Correlation against Eval, and its 1 - c
// against the closed forms' series where c is within 1e-12 of 1.
func TestCorrelation(t *testing.T) {
	x, y := []float64{0.3, -1}, []float64{0.5, 0.2}
	for _, k := range []gp.Kernel{
		{Kind: gp.KernelRBF, Alpha: []float64{1.3}, Beta: 2, Bias: 0.5},
		{Kind: gp.KernelARD, Alpha: []float64{0.7, 3}, Beta: 4},
		{Kind: gp.KernelMatern32, Alpha: []float64{2}, Beta: 3},
		{Kind: gp.KernelMatern52, Alpha: []float64{0.9}, Beta: 1, Bias: 1},
	} {
		c, om := k.Correlation(x, y)
		if want := (k.Eval(x, y) - k.Bias) / k.Beta; math.Abs(c-want) > 1e-15 {
			t.Errorf("%v: correlation %v, Eval's %v", k.Kind, c, want)
		}
		if math.Abs(om-(1-c)) > 1e-15 {
			t.Errorf("%v: 1 - c = %v, want %v", k.Kind, om, 1-c)
		}
		// Points 1e-7 apart: 1 - c ~ r^2 / alpha^2, far below 1e-12.
		far := []float64{x[0] + 1e-7, x[1]}
		_, om = k.Correlation(x, far)
		r2 := 1e-14 / (k.Alpha[0] * k.Alpha[0])
		want := map[gp.KernelKind]float64{gp.KernelRBF: r2, gp.KernelARD: r2, gp.KernelMatern32: 3 * r2 / 2, gp.KernelMatern52: 5 * r2 / 6}[k.Kind]
		if math.Abs(om-want) > 1e-6*want {
			t.Errorf("%v: 1 - c = %v at a distance of 1e-7, want %v", k.Kind, om, want)
		}
	}
}

// TestLowerTo checks the covariance's lower triangle against Eval bit for
// bit, for every kernel, on points with ties and integer codes, and that
// the entries above the diagonal are left alone.
func TestLowerTo(t *testing.T) {
	ks := []gp.Kernel{
		{Kind: gp.KernelRBF, Alpha: []float64{1.7}, Beta: 3},
		{Kind: gp.KernelRBF, Alpha: []float64{0.4}, Beta: 1e3, Bias: 0.5},
		{Kind: gp.KernelARD, Alpha: []float64{0.5, 2, 1.3}, Beta: 2},
		{Kind: gp.KernelARD, Alpha: []float64{0.3, 7, 1}, Beta: 1, Bias: 0.1},
		{Kind: gp.KernelMatern32, Alpha: []float64{1.1}, Beta: 10, Bias: 2},
		{Kind: gp.KernelMatern52, Alpha: []float64{0.9}, Beta: 0.7},
		{Kind: gp.KernelLinear, Beta: 0.3},
	}
	rng := rand.New(rand.NewPCG(3, 4))
	const q, d = 13, 3
	x := make([]float64, q*d)
	for i := range q {
		for c := range d {
			x[i*d+c] = rng.NormFloat64()
		}
		x[i*d+2] = float64(i % 3) // an integer code
	}
	copy(x[7*d:8*d], x[2*d:3*d]) // a repeated point
	for _, k := range ks {
		dst := make([]float64, q*q)
		for i := range dst {
			dst[i] = -7
		}
		k.LowerTo(dst, x, d)
		for i := range q {
			for j := range q {
				want := -7.0
				if j <= i {
					want = k.Eval(x[i*d:i*d+d], x[j*d:j*d+d])
				}
				if math.Float64bits(dst[i*q+j]) != math.Float64bits(want) {
					t.Fatalf("%v: entry (%d, %d) = %v, want %v", k.Kind, i, j, dst[i*q+j], want)
				}
			}
		}
	}
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for points that do not fill x")
		}
	}()
	ks[0].LowerTo(make([]float64, 4), []float64{1, 2, 3}, 2)
}
