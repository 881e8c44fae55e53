package core

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/floats/scalar"
	"gonum.org/v1/gonum/mathext"
)

// Reference values in this file were computed with mpmath 1.3 at 50-100
// significant digits (log(ncdf(x)), log1p(-ncdf(-x)) in the upper tail, and
// bisection for quantiles), then rounded to 20 digits.

// relTol is the accepted relative error of the special functions: a few
// units in the last place of float64.
const relTol = 1e-14

func TestLogPhi(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ x, want float64 }{
		{-1e5, -5000000012.4318639983},
		{-1000, -500007.82669481218431},
		{-100, -5005.5242086942050886},
		{-40, -804.60844201375378817},
		{-38, -726.5572160188201301},
		{-37.5, -707.66898931750719107},
		{-37, -689.0305855768905936},
		{-36.9, -685.33288316535061216},
		{-30, -454.32124395634319711},
		{-20, -203.91715537109726394},
		{-10, -53.231285150512470578},
		{-5, -15.064998393988725736},
		{-3, -6.6077262215103495433},
		{-1, -1.8410216450092635058},
		{-0.5, -1.1759117615936186089},
		{-0.001, -0.69394538346696517879},
		{0, -0.69314718055994530942},
		{0.001, -0.6923496142726882434},
		{0.5, -0.36894641528865639307},
		{1, -0.17275377902344988953},
		{2, -0.023012909328963488465},
		{3, -0.0013508099647481937988},
		{5, -2.8665161296376359338e-7},
		{8, -6.2209605742717860585e-16},
		{10, -7.619853024160526066e-24},
		{20, -2.7536241186062336951e-89},
	} {
		if got := LogPhi(c.x); !scalar.EqualWithinRel(got, c.want, relTol) {
			t.Errorf("LogPhi(%v) = %v, want %v (rel err %.2g)", c.x, got, c.want, math.Abs(got/c.want-1))
		}
	}
	if got := LogPhi(math.Inf(-1)); !math.IsInf(got, -1) {
		t.Errorf("LogPhi(-Inf) = %v, want -Inf", got)
	}
	if got := LogPhi(math.Inf(1)); got != 0 {
		t.Errorf("LogPhi(+Inf) = %v, want 0", got)
	}
	if got := LogPhi(math.NaN()); !math.IsNaN(got) {
		t.Errorf("LogPhi(NaN) = %v, want NaN", got)
	}
}

// TestLogPhiContinuous checks that the switch to the asymptotic series at
// x = -37 leaves no step: the two branches agree there to rounding.
func TestLogPhiContinuous(t *testing.T) {
	t.Parallel()
	x := tailCut
	a := math.Log(0.5 * math.Erfc(-x/math.Sqrt2))
	b := logPhiTail(x)
	if !scalar.EqualWithinRel(a, b, relTol) {
		t.Errorf("branches differ at %v: erfc %v, series %v", x, a, b)
	}
}

func TestLogPhiDiff(t *testing.T) {
	t.Parallel()
	inf := math.Inf(1)
	for _, c := range []struct{ a, b, want float64 }{
		{-1, 1, -0.38171514630212607227},
		{2, 3, -3.844353426334205621},
		{-3, -2, -3.844353426334205621},
		{30, 31, -454.32124395634325204},
		{-31, -30, -454.32124395634325204},
		{-1e-10, 1e-10, -23.251642282585184236},
		{5, inf, -15.064998393988725736},
		{-inf, -40, -804.60844201375378817},
		{-inf, inf, 0},
		{-2, 40, -0.023012909328963488465},
	} {
		if got := LogPhiDiff(c.a, c.b); !scalar.EqualWithinAbsOrRel(got, c.want, 1e-300, relTol) {
			t.Errorf("LogPhiDiff(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
	// A narrow interval: the two log Phi values nearly cancel, so the error
	// grows as 1e-16 |log Phi| / width; 1e-8 relative is what is guaranteed.
	if got, want := LogPhiDiff(0.5, 0.5000001), -17.162034209689349927; !scalar.EqualWithinRel(got, want, 1e-8) {
		t.Errorf("LogPhiDiff(0.5, 0.5000001) = %v, want %v", got, want)
	}
	if got := LogPhiDiff(1, 1); !math.IsInf(got, -1) {
		t.Errorf("LogPhiDiff(1, 1) = %v, want -Inf", got)
	}
	if got := LogPhiDiff(2, 1); !math.IsNaN(got) {
		t.Errorf("LogPhiDiff(2, 1) = %v, want NaN", got)
	}
}

func TestPhiInvLog(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ lp, want float64 }{
		{-1e6, -1414.207782991017327},
		{-5000, -99.944748174841092478},
		{-800, -39.884694838256677568},
		{-729, -38.06418523091146245},
		{-700, -37.295079632647416957},
		{-100, -13.888476033003886317},
		{-10, -3.9139462405318930773},
		{-2, -1.1015196284987502661},
		{-0.7, -0.0085594785824802822957},
		{-0.5, 0.27028802073873585392},
		{-1e-5, 4.2648919103089225399},
		{-1e-12, 7.034483825301201654},
		{-1e-300, 37.047096299361199237},
	} {
		if got := PhiInvLog(c.lp); !scalar.EqualWithinRel(got, c.want, 1e-13) {
			t.Errorf("PhiInvLog(%v) = %v, want %v (rel err %.2g)", c.lp, got, c.want, math.Abs(got/c.want-1))
		}
	}
	// Round trip over the whole range, both sides of AS 241's limit.
	for x := -3000.0; x < 8; x += 0.37 {
		lp := LogPhi(x)
		if got := PhiInvLog(lp); !scalar.EqualWithinAbsOrRel(got, x, 1e-13, 1e-13) {
			t.Errorf("PhiInvLog(LogPhi(%v)) = %v", x, got)
		}
	}
	if !math.IsInf(PhiInvLog(math.Inf(-1)), -1) || !math.IsInf(PhiInvLog(0), 1) || !math.IsNaN(PhiInvLog(0.1)) {
		t.Error("PhiInvLog: wrong value at -Inf, 0 or a positive argument")
	}
}

func TestPhiInvAgreesWithGonum(t *testing.T) {
	t.Parallel()
	for p := 1e-300; p < 1; p = p*3 + 1e-4 {
		if got, want := PhiInv(p), mathext.NormalQuantile(p); !scalar.EqualWithinAbsOrRel(got, want, 1e-15, 1e-14) {
			t.Errorf("PhiInv(%v) = %v, gonum %v", p, got, want)
		}
	}
}

func TestTruncNormQuantile(t *testing.T) {
	t.Parallel()
	inf := math.Inf(1)
	for _, c := range []struct{ a, b, u, want float64 }{
		{5, inf, 0.3, 5.068334263013015619},
		{-inf, -40, 0.7, -40.008910319783512882},
		{-1, 2, 0.25, -0.34964142929246547259},
		{30, 30.5, 0.5, 30.023070458992498174},
		{-3, -2.9, 0.9, -2.9087780531144625145},
		{-50, 50, 0.5, 0},
	} {
		if got := TruncNormQuantile(c.a, c.b, c.u); !scalar.EqualWithinAbsOrRel(got, c.want, 1e-15, 1e-12) {
			t.Errorf("TruncNormQuantile(%v, %v, %v) = %v, want %v", c.a, c.b, c.u, got, c.want)
		}
	}
	// Monotone in u and inside [a, b], in every regime.
	for _, ab := range [][2]float64{{-inf, inf}, {3, inf}, {-inf, -60}, {80, 80.01}, {-0.1, 0.2}, {-5, 1}} {
		prev := math.Inf(-1)
		for u := 1e-12; u < 1; u += 0.0137 {
			x := TruncNormQuantile(ab[0], ab[1], u)
			if x < ab[0] || x > ab[1] || x < prev {
				t.Fatalf("TruncNormQuantile(%v, %v, %v) = %v after %v", ab[0], ab[1], u, x, prev)
			}
			prev = x
		}
	}
	// The orthant fast path agrees with the general one.
	for _, a := range []float64{-3, 0, 2, 45} {
		for _, u := range []float64{1e-9, 0.2, 0.7, 1 - 1e-9} {
			got := upperTailQuantile(a, LogPhi(-a), u)
			if want := TruncNormQuantile(a, inf, u); !scalar.EqualWithinAbsOrRel(got, want, 1e-14, 1e-13) {
				t.Errorf("upperTailQuantile(%v, %v) = %v, general %v", a, u, got, want)
			}
		}
	}
}

func TestTruncatedMean(t *testing.T) {
	t.Parallel()
	inf := math.Inf(1)
	// E[Z | Z > 0] = sqrt(2/pi); symmetric intervals have mean 0; deep in
	// the tail E[Z | Z > a] is about a + 1/a.
	for _, c := range []struct{ a, b, want, tol float64 }{
		{0, inf, math.Sqrt(2 / math.Pi), 1e-15},
		{-2, 2, 0, 1e-15},
		{-inf, inf, 0, 0},
		{50, inf, 50 + 1/50.0 - 2/(50.0*50*50), 1e-6},
	} {
		if got := truncatedMean(c.a, c.b); math.Abs(got-c.want) > c.tol {
			t.Errorf("truncatedMean(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func BenchmarkLogPhi(b *testing.B) {
	b.ReportAllocs()
	s := 0.0
	for b.Loop() {
		for x := -10.0; x < 10; x += 0.5 {
			s += LogPhi(x)
		}
	}
	_ = s
}

func BenchmarkTruncNormQuantile(b *testing.B) {
	b.ReportAllocs()
	s := 0.0
	for b.Loop() {
		for x := -10.0; x < 10; x += 0.5 {
			s += upperTailQuantile(x, LogPhi(-x), 0.3)
		}
	}
	_ = s
}

// TestPhiInvLazyLog: PhiInv and PhiInvLog's upper half take log p only in
// AS 241's tails (quantileLow); their values are those of lowerQuantile
// given log p always, bit for bit, on the branches' boundaries and on
// random p.
func TestPhiInvLazyLog(t *testing.T) {
	eager := func(p float64) float64 {
		if p <= 0.5 {
			return lowerQuantile(p, math.Log(p))
		}
		q := 1 - p
		return -lowerQuantile(q, math.Log(q))
	}
	ps := []float64{0, 1, 0.5, 0.075, math.Nextafter(0.075, 0), math.Nextafter(0.075, 1), 0.925, math.Nextafter(0.925, 1), 1e-300, 1 - 1e-16}
	r := rand.New(rand.NewPCG(11, 12))
	for range 100000 {
		ps = append(ps, r.Float64())
	}
	for _, p := range ps {
		if got, want := PhiInv(p), eager(p); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("PhiInv(%v) = %v, want %v", p, got, want)
		}
	}
	for _, lp := range []float64{-0.1, -0.5, -1e-10, math.Log(0.925), math.Log(0.93)} {
		q := -math.Expm1(lp)
		if got, want := PhiInvLog(lp), -lowerQuantile(q, math.Log(q)); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("PhiInvLog(%v) = %v, want %v", lp, got, want)
		}
	}
}
