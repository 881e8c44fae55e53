package core

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/floats/scalar"
)

// ulp2 is two units in the last place of a float64 near 1: the accepted
// relative error of expK and logK against the standard library's exp and
// log (each within 1 ulp of the exact value).
const ulp2 = 0x1p-51

// kernelTol is the accepted relative error of the normal kernels against
// the high-precision references and against LogPhi and upperTailQuantile
// (about 10 ulp: the reduction v = 4/(4+t) triples the error of v, and the
// tail is a product of three rounded factors).
const kernelTol = 2e-15

func TestExpK(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 1))
	for i := range 1000000 {
		x := -r.Float64() * 750
		if i%3 == 0 {
			x = -r.Float64()
		}
		got, want := expK(x), math.Exp(x)
		if want < 0x1p-1022 { // subnormal: compare in absolute terms
			if math.Abs(got-want) > 0x1p-1074 {
				t.Fatalf("expK(%v) = %v, want %v", x, got, want)
			}
			continue
		}
		if relErr(got, want) > ulp2 {
			t.Fatalf("expK(%v) = %v, want %v (rel err %.3g)", x, got, want, relErr(got, want))
		}
	}
	for _, c := range []struct{ x, want float64 }{{0, 1}, {-746, 0}, {-1000, 0}, {math.Inf(-1), 0}, {-745, 5e-324}} {
		if got := expK(c.x); got != c.want {
			t.Errorf("expK(%v) = %v, want %v", c.x, got, c.want)
		}
	}
}

func TestLogK(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(2, 2))
	for i := range 1000000 {
		var x float64
		switch i % 4 {
		case 0:
			x = r.Float64()
		case 1:
			x = 1 + (r.Float64()-0.5)*1e-3
		case 2:
			x = math.Exp(-r.Float64() * 740) // down into the subnormals
		default:
			x = math.Float64frombits(r.Uint64() >> 2) // any positive exponent
		}
		if x == 0 || math.IsInf(x, 0) || math.IsNaN(x) {
			continue
		}
		got, want := logK(x), math.Log(x)
		if x < 0x1p-1022 {
			// math.Log is wrong for subnormals on amd64 (golang/go#56600).
			want = math.Log(x*0x1p64) - 64*math.Ln2
		}
		if relErr(got, want) > ulp2 && math.Abs(got-want) > 0x1p-60 {
			t.Fatalf("logK(%v) = %v, want %v", x, got, want)
		}
	}
	if got := logK(1); got != 0 {
		t.Errorf("logK(1) = %v", got)
	}
}

// TestTailWeight checks T = Phi(-lo) against mpmath (Phi(-t) at 40 digits,
// at the float64 nearest each t) and log T against the references of
// TestLogPhi.
func TestTailWeight(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ t, want float64 }{
		{0, 0.5},
		{0.3, 0.38208857781104736693},
		{1, 0.15865525393145705141},
		{2.5, 0.006209665325776135167},
		{5, 2.8665157187919391167e-7},
		{8.3, 5.2055697448902540246e-17},
		{10, 7.619853024160526066e-24},
		{20, 2.7536241186062336951e-89},
		{30, 4.9067139271481870595e-198},
		{36.9, 2.3105244811406175061e-298},
	} {
		tt, cc, _ := tailWeight(c.t)
		if relErr(tt, c.want) > kernelTol {
			t.Errorf("T(%v) = %v, want %v (rel err %.2g)", c.t, tt, c.want, relErr(tt, c.want))
		}
		// The mirror image: C(-t) = Phi(-t) too.
		if _, cm, _ := tailWeight(-c.t); c.t > 0 && relErr(cm, c.want) > kernelTol {
			t.Errorf("C(%v) = %v, want %v", -c.t, cm, c.want)
		}
		if tt+cc != 1 && c.t < 8 {
			t.Errorf("T + C = %v at %v", tt+cc, c.t)
		}
	}
	// log T = LogPhi(-lo): the references of TestLogPhi, x = -lo.
	for _, c := range []struct{ x, want float64 }{
		{-37, -689.0305855768905936}, {-36.9, -685.33288316535061216}, {-30, -454.32124395634319711},
		{-20, -203.91715537109726394}, {-10, -53.231285150512470578}, {-5, -15.064998393988725736},
		{-3, -6.6077262215103495433}, {-1, -1.8410216450092635058}, {-0.5, -1.1759117615936186089},
		{-0.001, -0.69394538346696517879}, {0, -0.69314718055994530942}, {0.001, -0.6923496142726882434},
		{0.5, -0.36894641528865639307}, {1, -0.17275377902344988953}, {2, -0.023012909328963488465},
		{3, -0.0013508099647481937988}, {5, -2.8665161296376359338e-7}, {8, -6.2209605742717860585e-16},
		{10, -7.619853024160526066e-24}, {20, -2.7536241186062336951e-89},
	} {
		if _, _, lg := tailWeight(-c.x); relErr(lg, c.want) > kernelTol {
			t.Errorf("log T(%v) = %v, want %v (rel err %.2g)", -c.x, lg, c.want, relErr(lg, c.want))
		}
	}
	// Agreement with LogPhi on a dense grid, both sides. Below lo = -20
	// LogPhi(-lo) is exp of its asymptotic series, whose argument (-lo^2/2)
	// carries a rounding error of 1e-16 lo^2: its own relative error.
	for lo := -45.0; lo <= tailMax; lo += 0.0137 {
		_, _, lg := tailWeight(lo)
		tol := kernelTol
		if lo < 20 {
			tol = max(tol, 2e-16*lo*lo)
		}
		if want := LogPhi(-lo); relErr(lg, want) > tol && math.Abs(lg-want) > 1e-300 {
			t.Fatalf("log T(%v) = %v, LogPhi %v (rel err %.2g)", lo, lg, want, relErr(lg, want))
		}
	}
}

// TestTailDraw checks the kernel's truncated-normal quantile against
// upperTailQuantile (itself checked against mpmath in TestTruncNormQuantile)
// across both halves, both AS 241 tails and deep truncations.
func TestTailDraw(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 3))
	for i := range 200000 {
		lo := -40 + r.Float64()*(tailMax+40)
		u := uniformOpen(r)
		switch i % 5 {
		case 0:
			u = math.Ldexp(u, -r.IntN(50))
		case 1:
			u = 1 - math.Ldexp(u, -r.IntN(50)) // in (0, 1]: 1 is not a uniform
			if u == 1 {
				continue
			}
		}
		tt, cc, lg := tailWeight(lo)
		got := tailDraw(lo, tt, cc, u)
		want := upperTailQuantile(lo, LogPhi(-lo), u)
		if got < lo || !scalar.EqualWithinAbsOrRel(got, want, 1e-14, 1e-13) {
			t.Fatalf("draw(lo=%v, u=%v) = %v, upperTailQuantile %v (lg %v)", lo, u, got, want, lg)
		}
	}
}

func TestPhiK(t *testing.T) {
	t.Parallel()
	for x := -50.0; x < 50; x += 0.0173 {
		got, want := phiK(x), Phi(x)
		if !scalar.EqualWithinAbsOrRel(got, want, 1e-16, 1e-14) {
			t.Fatalf("phiK(%v) = %v, Phi %v", x, got, want)
		}
	}
}

// forEachVecPath runs f on every path of the batch kernels this build and
// CPU have (VecPaths), then restores the path in use. Other tests may run
// meanwhile on whichever path is set: their results do not depend on it.
func forEachVecPath(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	was := VecPath()
	defer func() {
		if err := SetVecPath(was); err != nil {
			t.Fatal(err)
		}
	}()
	for _, name := range VecPaths() {
		if err := SetVecPath(name); err != nil {
			t.Fatal(err)
		}
		t.Run("vec="+name, f)
	}
}

func TestVecPaths(t *testing.T) {
	paths := VecPaths()
	if paths[len(paths)-1] != "generic" {
		t.Errorf("VecPaths() = %v: the Go kernels are not last", paths)
	}
	if err := SetVecPath("sse9"); err == nil {
		t.Error("SetVecPath(sse9) did not fail")
	}
	if VecPath() != paths[0] {
		t.Errorf("VecPath() = %s, want the fastest, %s", VecPath(), paths[0])
	}
}

// TestBatchKernels checks the batch functions on every path of this build
// and CPU (the assembly kernels where the CPU has them) against the scalar
// Go kernels bit for bit, including the lanes past a multiple of 4 and 8,
// subnormal exponentials and the log-space fallback above tailMax.
func TestBatchKernels(t *testing.T) {
	t.Parallel()
	forEachVecPath(t, testBatchKernels)
}

func testBatchKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for _, n := range []int{1, 3, 4, 5, 7, 8, 9, 13, 31, 64, 1000, 200000} {
		lo, u, logw := make([]float64, n), make([]float64, n), make([]float64, n)
		for p := range n {
			lo[p] = -42 + r.Float64()*84
			switch p % 5 {
			case 0:
				lo[p] = r.NormFloat64()
			case 1:
				lo[p] = r.NormFloat64() * 1e-3
			}
			u[p] = uniformOpen(r)
			switch p % 7 {
			case 0:
				u[p] = math.Ldexp(u[p], -r.IntN(60))
			case 1:
				u[p] = 1 - math.Ldexp(u[p], -r.IntN(56)) // 1 included
			}
			logw[p] = -r.Float64() * 3
			if p%11 == 0 {
				logw[p] = -700 - r.Float64()*100 // exp(logw - max) subnormal or 0
			}
		}
		if n == 1000 {
			// Sorted: whole vectors take one branch of the quantile.
			slices.Sort(u)
			slices.Sort(lo)
		}
		lo[0] = 40 // log-space fallback
		if n > 3 {
			lo[3] = math.Inf(-1) // an unbounded variable
		}
		tt, cc, lg, lw := make([]float64, n), make([]float64, n), make([]float64, n), append([]float64(nil), logw...)
		mx := tailWeights(lo, tt, cc, lg, lw)
		wantMx := math.Inf(-1)
		for p := range n {
			var wt, wc, wl float64
			if lo[p] <= tailMax {
				wt, wc, wl = tailWeight(lo[p])
			} else {
				wt, wc, wl = math.NaN(), math.NaN(), LogPhi(-lo[p])
			}
			wlw := logw[p] + wl
			wantMx = max(wantMx, wlw)
			if !same(tt[p], wt) || !same(cc[p], wc) || !same(lg[p], wl) || !same(lw[p], wlw) {
				t.Fatalf("n=%d p=%d lo=%v: t, c, lg, logw = %v %v %v %v, want %v %v %v %v", n, p, lo[p], tt[p], cc[p], lg[p], lw[p], wt, wc, wl, wlw)
			}
		}
		if !same(mx, wantMx) {
			t.Fatalf("n=%d: max %v, want %v", n, mx, wantMx)
		}
		z := make([]float64, n)
		tailDraws(z, lo, tt, cc, lg, u)
		for p := range n {
			want := upperTailQuantile(lo[p], lg[p], u[p])
			if lo[p] <= tailMax {
				want = tailDraw(lo[p], tt[p], cc[p], u[p])
			}
			if !same(z[p], want) {
				t.Fatalf("n=%d p=%d: z = %v, want %v", n, p, z[p], want)
			}
		}
		s1, s2 := expSums(lw, mx)
		var a, b [8]float64
		for p, v := range lw {
			e := expK(v - mx)
			a[p%8] += e
			b[p%8] = math.FMA(e, e, b[p%8])
		}
		if !same(s1, laneSum(&a)) || !same(s2, laneSum(&b)) {
			t.Fatalf("n=%d: expSums = %v, %v, want %v, %v", n, s1, s2, laneSum(&a), laneSum(&b))
		}
		acc, isig := make([]float64, n), make([]float64, n)
		for j := range n {
			acc[j] = r.Float64()
			isig[j] = 0.5 + r.Float64()
		}
		want := append([]float64(nil), acc...)
		phiAccumulate(acc, lo, isig, 0.3)
		for j := range n {
			want[j] = math.FMA(0.3, phiK(float64(lo[j]*isig[j])), want[j])
			if !same(acc[j], want[j]) {
				t.Fatalf("n=%d j=%d: phiAccumulate %v, want %v", n, j, acc[j], want[j])
			}
		}
	}
}

// relErr is |got - want| / |want| (0 when they are equal), without the
// absolute floor scalar.EqualWithinRel applies below the normal range.
func relErr(got, want float64) float64 {
	if got == want {
		return 0
	}
	return math.Abs(got-want) / math.Abs(want)
}

// same reports whether a and b are the same float64, bit for bit (any NaN
// matches any NaN).
func same(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || math.IsNaN(a) && math.IsNaN(b)
}

// BenchmarkTailKernels times the batch kernels on every path of this build
// and CPU: a filter step's weights (tailWeights), sums (expSums) and draws
// (tailDraws), and prediction's Phi (phiAccumulate), per particle.
func BenchmarkTailKernels(b *testing.B) {
	const m = 4096
	r := rand.New(rand.NewPCG(5, 5))
	lo, u, logw := make([]float64, m), make([]float64, m), make([]float64, m)
	isig, acc := make([]float64, m), make([]float64, m)
	for p := range m {
		lo[p] = r.NormFloat64() * 2
		u[p] = uniformOpen(r)
		isig[p] = 0.5 + r.Float64()
	}
	tt, cc, lg, z := make([]float64, m), make([]float64, m), make([]float64, m), make([]float64, m)
	mx := tailWeights(lo, tt, cc, lg, logw)
	was := VecPath()
	defer SetVecPath(was)
	for _, name := range VecPaths() {
		SetVecPath(name)
		for _, k := range []struct {
			name string
			f    func()
		}{
			{"weights", func() { clear(logw); tailWeights(lo, tt, cc, lg, logw) }},
			{"sums", func() { expSums(logw, mx) }},
			{"draws", func() { tailDraws(z, lo, tt, cc, lg, u) }},
			{"phi", func() { phiAccumulate(acc, lo, isig, 0.5) }},
		} {
			b.Run("kernel="+k.name+"/vec="+name, func(b *testing.B) {
				for b.Loop() {
					k.f()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/m, "ns/particle")
			})
		}
	}
}
