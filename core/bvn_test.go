package core

import (
	"math"
	"testing"
)

// bvnSimpson is P(X > h, Y > k) for correlation r as the one-dimensional
// integral int_h^inf phi(x) Phi((r x - k) / sqrt(1 - r^2)) dx by
// composite Simpson's rule on [h, h + 12] with 20000 intervals: accurate to
// about 1e-12 for |r| <= 0.999 (the integrand is smooth on the scale
// sqrt(1 - r^2) >= 0.045, far above the step 6e-4).
func bvnSimpson(h, k, r float64) float64 {
	const steps = 20000
	lo, hi := h, h+12
	if lo < -12 {
		lo = -12
	}
	s := math.Sqrt(1 - r*r)
	f := func(x float64) float64 {
		return math.Exp(-x*x/2) / math.Sqrt(2*math.Pi) * Phi((r*x-k)/s)
	}
	dx := (hi - lo) / steps
	sum := f(lo) + f(hi)
	for i := 1; i < steps; i++ {
		w := 2.0
		if i%2 == 1 {
			w = 4
		}
		sum += w * f(lo+float64(i)*dx)
	}
	return sum * dx / 3
}

func TestBivariateUpper(t *testing.T) {
	t.Parallel()
	// Closed form at the origin: 1/4 + asin(r) / (2 pi).
	for _, r := range []float64{-1, -0.999, -0.93, -0.5, -0.1, 0, 0.2, 0.5, 0.8, 0.93, 0.999, 1} {
		want := 0.25 + math.Asin(r)/(2*math.Pi)
		if got := BivariateUpper(0, 0, r); math.Abs(got-want) > 1e-14 {
			t.Errorf("BivariateUpper(0, 0, %v) = %v, want %v", r, got, want)
		}
	}
	// Off the origin, against a one-dimensional integral. Genz reports an
	// absolute accuracy of about 1e-15; the reference's is about 1e-12.
	const tol = 1e-11
	for _, r := range []float64{-0.999, -0.95, -0.8, -0.4, -0.2, 0.1, 0.5, 0.9, 0.95, 0.999} {
		for _, hk := range [][2]float64{{0.3, -1.2}, {-2, 1.5}, {1, 1}, {-0.7, -0.4}, {2.5, -3}, {-3, -3}} {
			h, k := hk[0], hk[1]
			want := bvnSimpson(h, k, r)
			if got := BivariateUpper(h, k, r); math.Abs(got-want) > tol {
				t.Errorf("BivariateUpper(%v, %v, %v) = %.15g, want %.15g", h, k, r, got, want)
			}
		}
	}
	// Independence and infinite limits.
	if got, want := BivariateUpper(0.5, -1, 0), Phi(-0.5)*Phi(1); got != want {
		t.Errorf("r = 0: %v, want %v", got, want)
	}
	if got := BivariateUpper(math.Inf(-1), 1, 0.3); got != Phi(-1) {
		t.Errorf("h = -Inf: %v, want %v", got, Phi(-1))
	}
	if got := BivariateUpper(1, math.Inf(1), 0.3); got != 0 {
		t.Errorf("k = +Inf: %v, want 0", got)
	}
}
