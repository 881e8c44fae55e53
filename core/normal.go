package core

import "math"

const (
	// logSqrt2Pi is log(sqrt(2 pi)).
	logSqrt2Pi = 0.91893853320467274178032973640561764
	// tailCut is where LogPhi leaves math.Erfc for the asymptotic series:
	// beyond |x| = 20 the series' tenth term is below 1e-17, while Erfc's
	// relative error grows (3.6e-14 at erfc(20/sqrt 2)).
	tailCut = -20.0
)

// LogPhi returns log Phi(x), the logarithm of the standard normal cumulative
// distribution function
//
//	Phi(x) = 1/sqrt(2 pi) * integral_{-inf}^{x} exp(-t^2/2) dt,
//
// with full relative accuracy for every finite x, including the far lower
// tail where Phi(x) underflows (LogPhi(-40) = -804.6084420137538,
// LogPhi(-1e5) = -5.000001151292546e9) and the upper tail where log Phi(x)
// is a tiny negative number.
//
// For |x| > 20 it uses the asymptotic expansion of the Mills ratio
//
//	Phi(x) = phi(x)/|x| * (1 - 1/x^2 + 3/x^4 - 15/x^6 + ...),
//
// truncated where the terms fall below the float64 epsilon.
//
// References: Abramowitz and Stegun, Handbook of Mathematical Functions,
// 26.2.12 (the asymptotic expansion) and 7.1.2 (erfc).
func LogPhi(x float64) float64 {
	switch {
	case x >= -tailCut:
		return math.Log1p(-math.Exp(logPhiTail(-x)))
	case x > 0:
		// Phi(x) = 1 - Phi(-x): log1p keeps the tiny result accurate.
		return math.Log1p(-0.5 * math.Erfc(x/math.Sqrt2))
	case x > tailCut:
		return math.Log(0.5 * math.Erfc(-x/math.Sqrt2))
	case math.IsInf(x, -1):
		return math.Inf(-1)
	case math.IsNaN(x):
		return x
	}
	return logPhiTail(x)
}

// logPhiTail is the asymptotic expansion of log Phi(x) for x <= -20.
func logPhiTail(x float64) float64 {
	t2 := 1 / (x * x)
	// S = sum_k (-1)^k (2k-1)!! t2^k; at |x| >= 20 the tenth term is below 1e-17.
	s, term := 1.0, 1.0
	for k := 1; k <= 10; k++ {
		term *= -float64(2*k-1) * t2
		s += term
	}
	return -0.5*x*x - math.Log(-x) - logSqrt2Pi + math.Log(s)
}

// Phi returns the standard normal cumulative distribution function.
func Phi(x float64) float64 {
	return 0.5 * math.Erfc(-x/math.Sqrt2)
}

// LogPhiDensity returns log phi(x) = -x^2/2 - log sqrt(2 pi), the log of the
// standard normal density.
func LogPhiDensity(x float64) float64 {
	return -0.5*x*x - logSqrt2Pi
}

// LogPhiDiff returns log(Phi(b) - Phi(a)), the log probability that a
// standard normal variable lies in [a, b], accurately for any a <= b,
// including intervals deep in either tail. It returns -Inf when a == b and
// NaN when a > b or either bound is NaN.
//
// Three cases avoid cancellation:
//
//	b <= 0:      log Phi(b) + log(1 - exp(log Phi(a) - log Phi(b)))
//	a >= 0:      the mirror image, with Phi(-a) and Phi(-b)
//	a < 0 < b:   log((erf(b/sqrt 2) + erf(-a/sqrt 2)) / 2), a sum of positives.
func LogPhiDiff(a, b float64) float64 {
	switch {
	case !(a <= b):
		return math.NaN()
	case a == b:
		return math.Inf(-1)
	case b <= 0:
		lb := LogPhi(b)
		return lb + log1mExp(LogPhi(a)-lb)
	case a >= 0:
		la := LogPhi(-a)
		return la + log1mExp(LogPhi(-b)-la)
	}
	return math.Log(0.5 * (math.Erf(b/math.Sqrt2) + math.Erf(-a/math.Sqrt2)))
}

// log1mExp returns log(1 - exp(x)) for x <= 0, accurate near 0 and for very
// negative x (Maechler 2012, "Accurately computing log(1 - exp(-|a|))").
func log1mExp(x float64) float64 {
	if x > -math.Ln2 {
		return math.Log(-math.Expm1(x))
	}
	return math.Log1p(-math.Exp(x))
}

// LogSumExp returns log(sum_i exp(x_i)), computed without overflow. It
// returns -Inf for an empty slice or when every x_i is -Inf.
func LogSumExp(x []float64) float64 {
	mx := math.Inf(-1)
	for _, v := range x {
		if v > mx {
			mx = v
		}
	}
	if math.IsInf(mx, 0) {
		return mx
	}
	s := 0.0
	for _, v := range x {
		s += math.Exp(v - mx)
	}
	return mx + math.Log(s)
}
