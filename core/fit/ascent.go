package fit

import (
	"context"
	"math"

	"gonum.org/v1/gonum/floats"
)

// search holds the tunables of maximize.
type search struct {
	// maxIter bounds the iterations; the evaluations are bounded by
	// maxFuncPerIter times as many.
	maxIter int
	// ftol ends the search when 3 iterations in a row gain less than it;
	// gtol when the gradient's norm (the components pushing against the
	// box left out) falls below it.
	ftol, gtol float64
	// maxStep is the largest change of one coordinate in one iteration
	// (MaxStep when 0).
	maxStep float64
	// noise, if not nil, returns the standard error of each component of
	// the last gradient eval returned: the search stops once the
	// gradient's k free components are consistent with noise,
	// z^2 = sum_j (g_j / se_j)^2 <= k + NoiseRatio sqrt(2 k) (a Monte
	// Carlo gradient that has reached its noise points nowhere).
	noise func() []float64
	// lower and upper, if not nil, are the box the search stays in
	// (Bounds).
	lower, upper []float64
}

// MaxStep is the largest change of one log-hyperparameter in one iteration
// of Fit's searches: a factor e^0.5, about 1.65. The marginal likelihood of
// a kernel with many hyperparameters (ard: one per feature) has many local
// maxima, and a quasi-Newton step that extrapolates along a flat direction
// jumps across them: measured on sonar's ard kernel from GPML's start
// (length scales sqrt(2 D), beta 1), EP's evidence with gonum's L-BFGS,
// whose steps are unbounded, ended at -43.04 (exact log ML -42.70), its
// first step sending beta from 1 to 4500; with steps bounded by 1, 0.5
// and 0.25 log units at -42.60, -42.27 and -42.27 (exact -42.32, -41.97,
// -41.97). On ionosphere 0.5 gave EP's evidence -42.42 (exact -41.69),
// 1 gave -42.38 (-41.63). A bounded step follows the likelihood's own
// ascent from the start, as GPML's minimize, whose line search
// extrapolates at most 3 times the last step, does.
const MaxStep = 0.5

// The line search: backtracking by lsContraction from the quasi-Newton
// step (bounded by MaxStep) while the gain falls short of lsArmijo times
// the gradient's prediction, at most lsTrials values.
const (
	lsContraction = 0.25
	lsTrials      = 7
	lsArmijo      = 1e-4
)

// NoiseRatio says when a search on a Monte Carlo objective stops: once the
// sum of the squares of the gradient's k free components, each divided by
// its standard error, is within NoiseRatio standard deviations of its
// mean at the maximum, where the estimated gradient is pure noise and the
// sum chi-square with k degrees of freedom: z^2 <= k + NoiseRatio sqrt(2
// k). The direction of such a gradient says little, and line searches
// along it mostly fail. Measured on digits (10 classes, 2
// hyperparameters): a rule on the norms alone, |g| <= 2 sqrt(sum_j
// se_j^2), stopped the last round where beta's component was 7 of its
// standard errors, hidden by alpha's larger ones; without a rule, the
// first round went on for 20 more estimates within 0.5 nats of its end.
const NoiseRatio = 2

// maxFuncPerIter bounds the evaluations per iteration on average
// (backtracking line searches included).
const maxFuncPerIter = 10

// lbfgsStore is the number of curvature pairs the quasi-Newton direction
// keeps.
const lbfgsStore = 15

// maximize runs a limited-memory BFGS ascent on eval from x0 (L-BFGS,
// Nocedal and Wright 2006, Algorithm 7.4), projected on the box [lower,
// upper]: coordinates at a bound whose gradient points out of the box are
// held there (the active set; the curvature pairs are dropped when it
// changes), each step is bounded by maxStep in every coordinate and
// clipped to the box, a backtracking line search asks for values only (the
// gradient is computed at the points it accepts), and a curvature pair is
// kept only when s'y > 0, which the backtracking search does not ensure.
// eval returns the objective and, when asked, its gradient.
//
// The search stops when 3 iterations in a row gain less than ftol, when
// the gradient (its free components) falls below gtol, when the line
// search finds no better point along the quasi-Newton direction nor along
// the gradient (on a Monte Carlo objective: the gradient has reached its
// noise), or after maxIter iterations. An evaluation that fails away from
// x0 (a step so long that the covariance overflows, EP breaking down, a
// non-finite estimate) counts as a worse point, so that the search steps
// back; one that fails at x0, or an interruption, ends the search with its
// error. It returns the best point seen and the iterations run, as
// -(iterations+1) if it stopped at maxIter or its evaluation budget.
//
// gonum's optimize.LBFGS has no bound on the step, no box, and keeps every
// curvature pair, which after a backtracking (Armijo) search can have
// s'y < 0 and turn the direction uphill: hence this one.
//
// References: J. Nocedal and S. J. Wright (2006), Numerical Optimization,
// 2nd ed., Springer, sections 7.2 and 16.7; C. E. Rasmussen (2006),
// minimize.m, GPML's optimizer.
func maximize(ctx context.Context, x0 []float64, eval func(x []float64, grad bool) (float64, []float64, error), sc search) ([]float64, int, error) {
	k := len(x0)
	maxStep := sc.maxStep
	if maxStep == 0 {
		maxStep = MaxStep
	}
	clip := func(x []float64) {
		for j := range x {
			if sc.lower != nil {
				x[j] = math.Max(x[j], sc.lower[j])
			}
			if sc.upper != nil {
				x[j] = math.Min(x[j], sc.upper[j])
			}
		}
	}
	evals, budget := 0, maxFuncPerIter*sc.maxIter
	try := func(x []float64, grad bool) (float64, []float64, error) {
		if err := ctx.Err(); err != nil {
			return 0, nil, err
		}
		evals++
		f, g, err := eval(x, grad)
		if err == nil && (math.IsNaN(f) || math.IsInf(f, 0) || grad && (g == nil || !allFinite(g))) {
			err = ErrNonFinite
		}
		return f, g, err
	}
	x := append([]float64(nil), x0...)
	clip(x)
	f, g, err := try(x, true)
	if err != nil {
		return nil, 0, err
	}
	var s, y [][]float64
	var rho []float64
	active := make([]bool, k)
	free := make([]float64, k) // the gradient without its active components
	d := make([]float64, k)
	xn := make([]float64, k)
	alpha := make([]float64, lbfgsStore)
	stall, it := 0, 0
	limited := true
	for ; it < sc.maxIter && evals < budget; it++ {
		changed := false
		for j := range k {
			a := sc.lower != nil && x[j] <= sc.lower[j] && g[j] < 0 || sc.upper != nil && x[j] >= sc.upper[j] && g[j] > 0
			changed = changed || a != active[j]
			active[j] = a
			free[j] = g[j]
			if a {
				free[j] = 0
			}
		}
		if changed {
			s, y, rho = s[:0], y[:0], rho[:0]
		}
		norm := floats.Norm(free, 2)
		if norm <= sc.gtol || norm == 0 {
			limited = false
			break
		}
		if sc.noise != nil {
			// The gradient in units of its noise, component by component:
			// z^2 = sum_j (g_j / se_j)^2, about the number of free
			// components at the maximum.
			z2, free := 0.0, 0
			for j, se := range sc.noise() {
				if !active[j] && se > 0 {
					z2 += (g[j] / se) * (g[j] / se)
					free++
				}
			}
			if free > 0 && z2 <= float64(free)+NoiseRatio*math.Sqrt(2*float64(free)) {
				limited = false
				break
			}
		}
		// The quasi-Newton direction d = H free (two-loop recursion; H
		// approximates the inverse of minus the Hessian), or the gradient
		// itself, of length 1, without pairs.
		copy(d, free)
		if len(s) == 0 {
			floats.Scale(1/norm, d)
		} else {
			for i := len(s) - 1; i >= 0; i-- {
				alpha[i] = rho[i] * floats.Dot(s[i], d)
				floats.AddScaled(d, -alpha[i], y[i])
			}
			last := len(s) - 1
			floats.Scale(floats.Dot(s[last], y[last])/floats.Dot(y[last], y[last]), d)
			for i := range s {
				b := rho[i] * floats.Dot(y[i], d)
				floats.AddScaled(d, alpha[i]-b, s[i])
			}
			for j := range k {
				if active[j] {
					d[j] = 0
				}
			}
		}
		var fn float64
		found := false
		for attempt := 0; attempt < 2 && !found; attempt++ {
			if attempt == 1 || !(floats.Dot(d, free) > 0) {
				// Uphill, or no better point along it: the gradient.
				if len(s) == 0 && attempt == 1 {
					break // that was the gradient already
				}
				copy(d, free)
				floats.Scale(1/norm, d)
				s, y, rho = s[:0], y[:0], rho[:0]
			}
			t := 1.0
			if m := floats.Norm(d, math.Inf(1)); m > maxStep {
				t = maxStep / m
			}
			for range lsTrials {
				if evals >= budget {
					break
				}
				copy(xn, x)
				floats.AddScaled(xn, t, d)
				clip(xn)
				v, _, err := try(xn, false)
				if err != nil && ctx.Err() != nil {
					return nil, 0, err
				}
				// The gain the gradient predicts for the clipped step.
				pred := 0.0
				for j := range k {
					pred += g[j] * (xn[j] - x[j])
				}
				if err == nil && v >= f+lsArmijo*pred {
					fn, found = v, true
					break
				}
				t *= lsContraction
			}
		}
		if !found {
			limited = false
			break
		}
		_, gn, err := try(xn, true)
		if err != nil {
			if ctx.Err() != nil {
				return nil, 0, err
			}
			limited = false
			break
		}
		// A curvature pair of -f: s = xn - x, y = g - gn.
		sv, yv := make([]float64, k), make([]float64, k)
		floats.SubTo(sv, xn, x)
		floats.SubTo(yv, g, gn)
		if sy := floats.Dot(sv, yv); sy > 1e-12*floats.Norm(sv, 2)*floats.Norm(yv, 2) {
			if len(s) == lbfgsStore {
				s, y, rho = s[1:], y[1:], rho[1:]
			}
			s, y, rho = append(s, sv), append(y, yv), append(rho, 1/sy)
		}
		if fn-f < sc.ftol {
			stall++
		} else {
			stall = 0
		}
		copy(x, xn)
		f, g = fn, gn
		if stall >= 3 {
			limited = false
			it++
			break
		}
	}
	if limited {
		return x, -it - 1, nil
	}
	return x, it, nil
}
