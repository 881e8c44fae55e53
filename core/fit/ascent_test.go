package fit

import (
	"context"
	"errors"
	"math"
	"testing"
)

// TestMaximize checks the projected L-BFGS ascent on closed forms: the
// maximum of a concave quadratic with unequal curvatures (and a
// correlation), found to 1e-6 in few iterations; no step longer than
// maxStep in any coordinate; a maximum outside the box stops on its edge,
// with the coordinate inside found; a start outside the box is moved in;
// and an evaluation that fails away from the start counts as a worse point.
func TestMaximize(t *testing.T) {
	ctx := context.Background()
	// f = -1/2 (x - c)' H (x - c), H = [[4, 1], [1, 0.5]].
	c := []float64{3, -2}
	quad := func(x []float64) (float64, []float64) {
		d0, d1 := x[0]-c[0], x[1]-c[1]
		g0, g1 := -(4*d0 + d1), -(d0 + 0.5*d1)
		return 0.5 * (d0*g0 + d1*g1), []float64{g0, g1}
	}
	var path [][]float64
	eval := func(x []float64, grad bool) (float64, []float64, error) {
		path = append(path, append([]float64(nil), x...))
		f, g := quad(x)
		return f, g, nil
	}
	x, it, err := maximize(ctx, []float64{0, 0}, eval, search{maxIter: 100, ftol: 1e-14, gtol: 1e-10})
	if err != nil || it < 0 {
		t.Fatalf("quadratic: %v, %d iterations", err, it)
	}
	if math.Abs(x[0]-c[0]) > 1e-6 || math.Abs(x[1]-c[1]) > 1e-6 {
		t.Errorf("quadratic: maximum at %v, want %v", x, c)
	}
	// Every point evaluated is within MaxStep of an earlier one in each
	// coordinate (the line search only shortens the step).
	for i := 1; i < len(path); i++ {
		near := false
		for _, p := range path[:i] {
			if math.Abs(path[i][0]-p[0]) <= MaxStep+1e-12 && math.Abs(path[i][1]-p[1]) <= MaxStep+1e-12 {
				near = true
				break
			}
		}
		if !near {
			t.Errorf("point %d %v is more than MaxStep from every earlier point", i, path[i])
		}
	}
	t.Logf("quadratic: %d iterations, %d evaluations", it, len(path))

	// The box [-1, 1] x [-10, 10]: the maximum in x0 is outside, at 3; on
	// the edge x0 = 1 the maximum in x1 is c1 - 2 (1 - c0) = 2.
	lower, upper := []float64{-1, -10}, []float64{1, 10}
	x, _, err = maximize(ctx, []float64{5, 0}, eval, search{maxIter: 100, ftol: 1e-14, gtol: 1e-10, lower: lower, upper: upper})
	if err != nil {
		t.Fatal(err)
	}
	if x[0] != 1 || math.Abs(x[1]-2) > 1e-6 {
		t.Errorf("boxed: maximum at %v, want [1 2]", x)
	}

	// Failures away from the start (x0 > 2) count as worse points.
	fail := func(x []float64, grad bool) (float64, []float64, error) {
		if x[0] > 2 {
			return 0, nil, errors.New("overflow")
		}
		f, g := quad(x)
		return f, g, nil
	}
	x, _, err = maximize(ctx, []float64{0, 0}, fail, search{maxIter: 200, ftol: 1e-14, gtol: 1e-10})
	if err != nil || x[0] > 2 {
		t.Errorf("with failures beyond x0 = 2: %v, %v", x, err)
	}
	if _, _, err := maximize(ctx, []float64{3, 0}, fail, search{maxIter: 10}); err == nil {
		t.Errorf("a failure at the start: no error")
	}
}
