package core

import "math"

// Coefficients of Wichura's algorithm AS 241 (PPND16), "The percentage points
// of the normal distribution", Applied Statistics 37 (1988) 477-484,
// highest power first. Relative accuracy about 1e-16.
var (
	as241CentralNum = [...]float64{2509.0809287301226727, 33430.575583588128105, 67265.770927008700853, 45921.953931549871457, 13731.693765509461125, 1971.5909503065514427, 133.14166789178437745, 3.387132872796366608}
	as241CentralDen = [...]float64{5226.495278852854561, 28729.085735721942674, 39307.89580009271061, 21213.794301586595867, 5394.1960214247511077, 687.1870074920579083, 42.313330701600911252, 1}
	as241NearNum    = [...]float64{7.7454501427834140764e-4, 0.0227238449892691845833, 0.24178072517745061177, 1.27045825245236838258, 3.64784832476320460504, 5.7694972214606914055, 4.6303378461565452959, 1.42343711074968357734}
	as241NearDen    = [...]float64{1.05075007164441684324e-9, 5.475938084995344946e-4, 0.0151986665636164571966, 0.14810397642748007459, 0.68976733498510000455, 1.6763848301838038494, 2.05319162663775882187, 1}
	as241FarNum     = [...]float64{2.01033439929228813265e-7, 2.71155556874348757815e-5, 0.0012426609473880784386, 0.026532189526576123093, 0.29656057182850489123, 1.7848265399172913358, 5.4637849111641143699, 6.6579046435011037772}
	as241FarDen     = [...]float64{2.04426310338993978564e-15, 1.4215117583164458887e-7, 1.8463183175100546818e-5, 7.868691311456132591e-4, 0.0148753612908506148525, 0.13692988092273580531, 0.59983220655588793769, 1}
)

func horner8(c *[8]float64, x float64) float64 {
	return ((((((c[0]*x+c[1])*x+c[2])*x+c[3])*x+c[4])*x+c[5])*x+c[6])*x + c[7]
}

// PhiInv returns the p-quantile of the standard normal distribution, the x
// with Phi(x) = p. It returns -Inf for p = 0, +Inf for p = 1 and NaN outside
// [0, 1].
func PhiInv(p float64) float64 {
	switch {
	case !(p >= 0 && p <= 1):
		return math.NaN()
	case p <= 0.5:
		return quantileLow(p)
	}
	return -quantileLow(1 - p)
}

// quantileLow is lowerQuantile(p, log p) for 0 <= p <= 1/2, the logarithm
// taken only where the tails need it: AS 241's central region (p - 1/2 >=
// -0.425, 85 % of uniform draws) needs none, and EP's draws of q (about 4
// x 10^8 quantiles in a preparation at N = 10^6) spent 2 % of the
// preparation's CPU time in math.Log.
func quantileLow(p float64) float64 {
	if p-0.5 >= -0.425 {
		return lowerQuantile(p, 0) // lp unused there
	}
	return lowerQuantile(p, math.Log(p))
}

// PhiInvLog returns the x with log Phi(x) = lp, the standard normal quantile
// of exp(lp) given in log space, so that quantiles far beyond the float64
// range of p are exact: PhiInvLog(-804.6084420137538) = -40. It returns -Inf
// for lp = -Inf, +Inf for lp = 0 and NaN for lp > 0.
//
// For lp >= -729 it evaluates AS 241 directly from lp (its tail branches need
// only r = sqrt(-log p)); below, where AS 241's range ends, it refines the
// asymptotic inverse x0 = -sqrt(s - log s - log 2 pi), s = -2 lp, by Newton
// steps on LogPhi.
func PhiInvLog(lp float64) float64 {
	switch {
	case lp > 0 || math.IsNaN(lp):
		return math.NaN()
	case lp > -math.Ln2:
		// Upper half: q = 1 - p = -expm1(lp), accurate for lp near 0.
		return -quantileLow(-math.Expm1(lp))
	case lp >= -729:
		return lowerQuantile(math.Exp(lp), lp)
	case math.IsInf(lp, -1):
		return lp
	}
	s := -2 * lp
	x := -math.Sqrt(s - math.Log(s) - 2*logSqrt2Pi)
	for range 8 {
		// d/dx log Phi(x) = phi(x)/Phi(x) = exp(log phi(x) - log Phi(x)).
		lphi := LogPhi(x)
		dx := (lphi - lp) / math.Exp(LogPhiDensity(x)-lphi)
		x -= dx
		if math.Abs(dx) <= 1e-15*math.Abs(x) {
			break
		}
	}
	return x
}

// lowerQuantile is AS 241 for 0 <= p <= 1/2, given both p and lp = log p.
func lowerQuantile(p, lp float64) float64 {
	dp := p - 0.5
	if dp >= -0.425 {
		z := 0.180625 - dp*dp
		return dp * horner8(&as241CentralNum, z) / horner8(&as241CentralDen, z)
	}
	if math.IsInf(lp, -1) {
		return lp
	}
	r := math.Sqrt(-lp)
	if r <= 5 {
		z := r - 1.6
		return -horner8(&as241NearNum, z) / horner8(&as241NearDen, z)
	}
	z := r - 5
	return -horner8(&as241FarNum, z) / horner8(&as241FarDen, z)
}

// TruncNormQuantile returns the u-quantile of the standard normal
// distribution truncated to [a, b] (a < b; either may be infinite):
//
//	x = Phi^-1( Phi(a) + u (Phi(b) - Phi(a)) ),
//
// evaluated in log space on the side of zero where the interval's mass lies,
// so that it stays exact for intervals deep in either tail (a = 40 or
// b = -1e4). The result is clamped to [a, b] and is nondecreasing in u.
// Called with u uniform on (0, 1) it draws from the truncated normal.
func TruncNormQuantile(a, b, u float64) float64 {
	if a+b > 0 {
		return -truncLower(-b, -a, 1-u)
	}
	return truncLower(a, b, u)
}

// truncLower computes the u-quantile of the standard normal truncated to
// [a, b] for an interval whose mass lies mostly below zero (a + b <= 0), so
// that Phi(a) and Phi(b) are both accurate in log space.
//
// With r = Phi(a)/Phi(b), the target is Phi(x) = Phi(b) (r + u (1 - r)).
func truncLower(a, b, u float64) float64 {
	lb := LogPhi(b)
	r := math.Exp(LogPhi(a) - lb)
	x := PhiInvLog(lb + math.Log(u+r*(1-u)))
	if x < a {
		return a
	}
	if x > b {
		return b
	}
	return x
}

// upperTailQuantile draws from the standard normal truncated to [a, +Inf),
// given lw = LogPhi(-a) = log P(Z >= a), which the caller already computed
// as the particle's incremental weight: x = -Phi^-1(Phi(-a) (1 - u)).
func upperTailQuantile(a, lw, u float64) float64 {
	x := -PhiInvLog(lw + math.Log1p(-u))
	if x < a {
		return a
	}
	return x
}
