package fit

import (
	"math"

	"gonum.org/v1/gonum/optimize"
)

// NelderMead minimizes f over R^k by gonum's Nelder-Mead simplex method
// (optimize.NelderMead, with its dimension-adaptive coefficients: those of
// Nelder and Mead for k <= 2), from the simplex x0, x0 + step_j e_j. gonum
// stops a simplex search only by its Converger, which sees the best
// vertex, not the simplex; NelderMead stops it when the best vertex has
// stayed within xtol of where it was, in every coordinate, over the last
// simplexWindow(k) iterations (stepConverge: the simplex has shrunk around
// it), or after maxEvals evaluations of f, and returns the best vertex and
// its value. f may return +Inf (an infeasible point); if f(x0) is +Inf
// the search does not start, and x0 and +Inf come back. It is
// deterministic: the same f gives the same path.
//
// References: J. A. Nelder and R. Mead (1965), "A simplex method for
// function minimization", Computer Journal 7:308-313; F. Gao and L. Han
// (2012), "Implementing the Nelder-Mead simplex algorithm with adaptive
// parameters", Comput. Optim. Appl. 51:259-277 (gonum's coefficients).
func NelderMead(f func([]float64) float64, x0, step []float64, xtol float64, maxEvals int) ([]float64, float64) {
	k := len(x0)
	if len(step) != k || k == 0 {
		panic("fit: NelderMead needs a step per coordinate")
	}
	// gonum's simplex has one edge for every coordinate (SimplexSize), so
	// the search runs in the coordinates u_j = (x_j - x0_j) / step_j.
	x := make([]float64, k)
	toX := func(u []float64) []float64 {
		for j := range x {
			x[j] = x0[j] + step[j]*u[j]
		}
		return x
	}
	bestX, bestF := append([]float64(nil), x0...), math.Inf(1)
	p := optimize.Problem{Func: func(u []float64) float64 {
		v := f(toX(u))
		if v < bestF {
			bestF = v
			copy(bestX, x)
		}
		return v
	}}
	utol := make([]float64, k)
	for j := range utol {
		utol[j] = xtol / math.Abs(step[j])
	}
	settings := &optimize.Settings{
		FuncEvaluations: maxEvals,
		Converger:       &stepConverge{tol: utol, window: simplexWindow(k)},
	}
	// The result is the best point f saw: gonum's Location is the best
	// vertex too, but an evaluation limit can stop it between iterations.
	optimize.Minimize(p, make([]float64, k), settings, &optimize.NelderMead{SimplexSize: 1})
	return bestX, bestF
}

// simplexWindow is the number of Nelder-Mead iterations over which the
// best vertex must stay put for the search to stop: each iteration
// replaces one vertex, so 3(k + 1) iterations renew the simplex of k + 1
// vertices about three times, each replacement a contraction towards the
// best vertex when none improves on it.
func simplexWindow(k int) int { return 3 * (k + 1) }

// stepConverge is an optimize.Converger: it reports StepConvergence when
// the best point has moved less than tol[j] in every coordinate j over the
// last window major iterations.
type stepConverge struct {
	tol    []float64
	window int
	hist   [][]float64 // the best points of the last window+1 iterations, oldest first
}

func (c *stepConverge) Init(dim int) { c.hist = c.hist[:0] }

func (c *stepConverge) Converged(loc *optimize.Location) optimize.Status {
	if len(c.hist) == c.window+1 {
		c.hist = append(c.hist[:0], c.hist[1:]...)
	}
	c.hist = append(c.hist, append([]float64(nil), loc.X...))
	if len(c.hist) <= c.window {
		return optimize.NotTerminated
	}
	for _, h := range c.hist[:c.window] {
		for j, v := range h {
			if math.Abs(v-loc.X[j]) >= c.tol[j] {
				return optimize.NotTerminated
			}
		}
	}
	return optimize.StepConvergence
}
