package vecchia

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/gpc-mc/gpc/core"
)

// The preparation's fallbacks where the incomplete factorisation breaks
// down (Prepare): EP's rounds stop at the last round whose factorisation
// held, the proposal halves the sites after the dense block until its own
// factorisation holds (SiteScale), and where even the nearly removed sites
// break it, Prepare refuses the model. The factor is incomplete only after
// the dense block, which holds every row of a small model; so the models
// below are put after a block filled by one unconstrained point repeated
// (afterBlock), whose rows are empty and whose variable is independent of
// theirs, so that the block costs one variable and P is the small model's.

// afterBlock returns m with rows inserted after its first b rows: one
// point (variance 1, no neighbours, bounds (-Inf, +Inf)) and its repeats,
// MaxBlock - b rows in all, so that m's rows from b on fall after the
// proposal's dense block. Its probability is m's.
func afterBlock(m *Model, b int) *Model {
	f := MaxBlock - b
	n := m.N + f
	o := &Model{N: n, Noise: m.Noise, Start: []int{0}, CondVar: make([]float64, 0, n), Lower: make([]float64, 0, n), Upper: make([]float64, 0, n)}
	row := func(k int) {
		for q := m.Start[k]; q < m.Start[k+1]; q++ {
			j := m.Nbr[q]
			if int(j) >= b {
				j += int32(f)
			}
			o.Nbr = append(o.Nbr, j)
			o.Coef = append(o.Coef, m.Coef[q])
		}
		o.Start = append(o.Start, len(o.Nbr))
		o.CondVar = append(o.CondVar, m.CondVar[k])
		o.Lower, o.Upper = append(o.Lower, m.Lower[k]), append(o.Upper, m.Upper[k])
	}
	for k := range b {
		row(k)
	}
	for k := range f {
		v := 1.0
		if k > 0 {
			o.Nbr = append(o.Nbr, int32(b))
			o.Coef = append(o.Coef, 1)
			v = 0
		}
		o.Start = append(o.Start, len(o.Nbr))
		o.CondVar = append(o.CondVar, v)
		o.Lower, o.Upper = append(o.Lower, math.Inf(-1)), append(o.Upper, math.Inf(1))
	}
	for k := b; k < m.N; k++ {
		row(k)
	}
	return o
}

// labelled sets m's bounds from labels (+1: [0, +Inf), -1: (-Inf, 0]).
func labelled(m *Model, y ...float64) *Model {
	m.Lower, m.Upper = make([]float64, m.N), make([]float64, m.N)
	for k, v := range y {
		m.Lower[k], m.Upper[k] = 0, math.Inf(1)
		if v < 0 {
			m.Lower[k], m.Upper[k] = math.Inf(-1), 0
		}
	}
	return m
}

// The constructed models (found by a search over random models of 4 to 7
// rows with integer coefficients up to 10^3 and variances 1 to 100): their
// conditionals are far weaker than the labels' information, as a kernel's
// are with long length scales among many features, and the sites fill in
// far more than the pattern holds.
var (
	// stopModel's later rows: EP's second round fails to factor, and the
	// proposal halves its sites 16 times (its first two rows go in the
	// dense block).
	stopModel = labelled(&Model{N: 6, Start: []int{0, 0, 1, 2, 5, 7, 8}, Nbr: []int32{0, 0, 0, 1, 2, 1, 2, 3},
		Coef: []float64{-910, 108, -812, -389, -130, -448, 453, 686}, CondVar: []float64{1.16, 18.43, 28.2, 2.51, 53.86, 73.77}, Noise: 1},
		-1, -1, 1, 1, -1, 1)
	stopBlock = 2
	// brokenModel's later rows break the proposal's factorisation even
	// with their sites scaled by 2^-21.
	brokenModel = labelled(&Model{N: 6, Start: []int{0, 0, 1, 2, 5, 8, 11}, Nbr: []int32{0, 0, 0, 1, 2, 0, 2, 3, 0, 1, 4},
		Coef: []float64{4, -64, -93, 15, 59, 86, 95, 98, -21, 30, 37}, CondVar: []float64{82.51, 18.88, 9.69, 1.34, 2.95, 71.38}, Noise: 1},
		1, 1, 1, 1, 1, -1)
	brokenBlock = 2
)

// TestFallbackStopAndHalve checks the fallback on a model whose sites
// break the incomplete factorisation: the preparation succeeds with EP
// stopped before its last round and the later sites scaled down
// (Prepared.EP, SiteScale, what gpc-train reports and warns of), and the
// estimate is a finite log probability. (The model's covariance spans 17
// orders of magnitude, so no dense estimate checks its value.)
func TestFallbackStopAndHalve(t *testing.T) {
	m := afterBlock(stopModel, stopBlock)
	p, err := Prepare(context.Background(), m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Block != MaxBlock {
		t.Fatalf("the dense block holds %d rows, want %d (the model's later rows after it)", p.Block, MaxBlock)
	}
	if p.EP.Sweeps >= epRounds || p.SiteScale >= 1 {
		t.Fatalf("EP %v, site scale %v: the model no longer forces the fallback (construct another that does)", p.EP, p.SiteScale)
	}
	if !(p.SiteScale >= minSiteScale) {
		t.Errorf("site scale %v is below the least, %v", p.SiteScale, minSiteScale)
	}
	res, err := Estimate(context.Background(), p, core.Config{Samples: 2000, Seed: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if math.IsNaN(res.LogP) || math.IsInf(res.LogP, 0) || res.LogP > 0 {
		t.Fatalf("log P %v", res.LogP)
	}
}

// TestFallbackBreaksDown checks that a model whose later rows break the
// proposal's factorisation even with their sites nearly removed is
// refused with an input error that says what to do.
func TestFallbackBreaksDown(t *testing.T) {
	_, err := Prepare(context.Background(), afterBlock(brokenModel, brokenBlock), nil)
	var ie *core.InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "breaks down even with the later sites nearly removed") || !strings.Contains(err.Error(), "use the dense path") {
		t.Fatalf("%v, want an InputError: the factorisation breaks down even with the later sites nearly removed", err)
	}
	// The same rows in the dense block: exact, no fallback.
	p, err := Prepare(context.Background(), brokenModel, nil)
	if err != nil {
		t.Fatalf("the model alone (its rows in the dense block): %v", err)
	}
	if p.SiteScale != 1 || p.EP.Sweeps != epRounds {
		t.Errorf("the model alone: EP %v, site scale %v", p.EP, p.SiteScale)
	}
}
