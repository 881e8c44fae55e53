package fit

import (
	"math"
	"slices"
)

// NelderMead minimizes f over R^k by the Nelder-Mead simplex method with
// the standard coefficients (reflection 1, expansion 2, contraction 1/2,
// shrink 1/2), from the simplex x0, x0 + step_j e_j. It stops when every
// vertex lies within xtol of the best in every coordinate, or after
// maxEvals evaluations of f, and returns the best vertex and its value.
// f may return +Inf (an infeasible point). It is deterministic: the same f
// gives the same path.
//
// References: J. A. Nelder and R. Mead (1965), "A simplex method for
// function minimization", Computer Journal 7:308-313; J. C. Lagarias et al.
// (1998), "Convergence properties of the Nelder-Mead simplex method in low
// dimensions", SIAM J. Optim. 9:112-147 (the variant used here).
func NelderMead(f func([]float64) float64, x0, step []float64, xtol float64, maxEvals int) ([]float64, float64) {
	k := len(x0)
	if len(step) != k || k == 0 {
		panic("fit: NelderMead needs a step per coordinate")
	}
	type vertex struct {
		x []float64
		f float64
	}
	evals := 0
	eval := func(x []float64) vertex {
		evals++
		return vertex{x, f(x)}
	}
	simplex := make([]vertex, 0, k+1)
	simplex = append(simplex, eval(slices.Clone(x0)))
	for j := range k {
		x := slices.Clone(x0)
		x[j] += step[j]
		simplex = append(simplex, eval(x))
	}
	// point returns c + t (c - w): the centroid c moved away from w.
	point := func(c, w []float64, t float64) []float64 {
		x := make([]float64, k)
		for j := range x {
			x[j] = c[j] + t*(c[j]-w[j])
		}
		return x
	}
	for {
		slices.SortStableFunc(simplex, func(a, b vertex) int {
			switch {
			case a.f < b.f:
				return -1
			case a.f > b.f:
				return 1
			}
			return 0
		})
		small := true
		for _, v := range simplex[1:] {
			for j := range k {
				if math.Abs(v.x[j]-simplex[0].x[j]) > xtol {
					small = false
				}
			}
		}
		if small || evals >= maxEvals {
			return simplex[0].x, simplex[0].f
		}
		c := make([]float64, k)
		for _, v := range simplex[:k] {
			for j := range c {
				c[j] += v.x[j] / float64(k)
			}
		}
		worst := simplex[k]
		r := eval(point(c, worst.x, 1))
		switch {
		case r.f < simplex[0].f:
			if e := eval(point(c, worst.x, 2)); e.f < r.f {
				simplex[k] = e
			} else {
				simplex[k] = r
			}
			continue
		case r.f < simplex[k-1].f:
			simplex[k] = r
			continue
		}
		// Contract: outside if the reflection improved on the worst, else
		// inside.
		var ct vertex
		if r.f < worst.f {
			ct = eval(point(c, worst.x, 0.5))
			if ct.f <= r.f {
				simplex[k] = ct
				continue
			}
		} else {
			ct = eval(point(c, worst.x, -0.5))
			if ct.f < worst.f {
				simplex[k] = ct
				continue
			}
		}
		// Shrink towards the best vertex.
		for i := 1; i <= k; i++ {
			x := make([]float64, k)
			for j := range x {
				x[j] = simplex[0].x[j] + 0.5*(simplex[i].x[j]-simplex[0].x[j])
			}
			simplex[i] = eval(x)
		}
	}
}
