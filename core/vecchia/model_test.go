package vecchia

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/gp"
)

// TestValidate checks that each kind of bad model is refused, naming the
// row.
func TestValidate(t *testing.T) {
	good := func() *Model {
		return &Model{N: 3, Start: []int{0, 0, 1, 2}, Nbr: []int32{0, 1}, Coef: []float64{0.5, 0.5},
			CondVar: []float64{1, 0.5, 0.5}, Noise: 1,
			Lower: []float64{0, math.Inf(-1), 0}, Upper: []float64{math.Inf(1), 0, math.Inf(1)},
			T: 1, TStart: []int{0, 1}, TNbr: []int32{2}, TCoef: []float64{1}, TCondVar: []float64{0.1}}
	}
	if err := good().Validate(); err != nil {
		t.Fatalf("a valid model: %v", err)
	}
	for _, c := range []struct {
		name string
		edit func(m *Model)
		want string
	}{
		{"no rows", func(m *Model) { m.N = 0 }, "0 training rows"},
		{"zero noise", func(m *Model) { m.Noise = 0 }, "noise variance 0"},
		{"short arrays", func(m *Model) { m.CondVar = m.CondVar[:2] }, "inconsistent lengths"},
		{"later neighbour", func(m *Model) { m.Nbr[0] = 1 }, "row 1: neighbour 1"},
		{"unordered", func(m *Model) { m.Start = []int{0, 0, 2, 2}; m.Nbr = []int32{0, 0} }, "row 1: neighbour 0 is not an increasing"},
		{"NaN coefficient", func(m *Model) { m.Coef[1] = math.NaN() }, "row 2: coefficient NaN"},
		{"negative variance", func(m *Model) { m.CondVar[1] = -1 }, "row 1: conditional variance -1"},
		{"zero variance, two neighbours", func(m *Model) {
			m.Start = []int{0, 0, 1, 3}
			m.Nbr = []int32{0, 0, 1}
			m.Coef = []float64{0.5, 1, 1}
			m.CondVar[2] = 0
		}, "row 2: conditional variance 0 is only allowed"},
		{"conditioning on a repeat", func(m *Model) {
			m.Coef[0], m.CondVar[1] = 1, 0
		}, "row 2: neighbour 1 is a repeated point"},
		{"empty interval", func(m *Model) { m.Lower[0], m.Upper[0] = 1, 0 }, "row 0: bounds [1, 0]"},
		{"test neighbour out of range", func(m *Model) { m.TNbr[0] = 3 }, "row 3: neighbour 3"},
		{"test variance", func(m *Model) { m.TCondVar[0] = math.Inf(1) }, "row 3: conditional variance +Inf"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := good()
			c.edit(m)
			err := m.Validate()
			var ie *core.InputError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v, want an InputError with %q", err, c.want)
			}
		})
	}
}

// ExampleEstimate estimates the log marginal likelihood of a probit GP
// classifier on 500 points under a Vecchia approximation with 10
// neighbours, and the posterior of a test point.
func ExampleEstimate() {
	n := 500
	x, y := make([]float64, n), make([]float64, n)
	for i := range n {
		x[i] = float64(i)/50 - 5 // one feature, -5 to 5
		y[i] = 1
		if math.Sin(x[i]) < 0 {
			y[i] = -1
		}
	}
	s, _ := NewStructure(x, n, 1, Options{M: 10})
	test := []float64{0.5}
	k := &gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{1}, Beta: 4}
	m, _ := NewClassifier(s, k, x, y, DefaultNugget, test, s.TestNeighbours(test, 1, 10, 1), 1)
	p, _ := Prepare(context.Background(), m, nil)
	var logZ, pg []float64
	res, _ := Estimate(context.Background(), p, core.Config{Samples: 2000, Seed: 1}, func(g int, out core.GroupResult, q []float64) error {
		logZ, pg = append(logZ, out.LogZ), append(pg, q...)
		return nil
	})
	post := make([]core.Posterior, 1)
	_ = core.CombinePosteriors(post, core.GroupSizes(res.Samples, res.Groups), logZ, pg)
	fmt.Printf("log marginal likelihood %.1f (se %.1g)\n", res.LogP, res.SE)
	fmt.Printf("p(y = +1 | x = 0.5) = %.2f (se %.1g)\n", post[0].P, post[0].SE)
	// Output:
	// log marginal likelihood -42.0 (se 0.05)
	// p(y = +1 | x = 0.5) = 1.00 (se 0.0003)
}
