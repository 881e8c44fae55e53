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
// the dense block, which holds every row whose prior conditional variance
// is not small beside the sites; so the models below have one row of
// variance about 30 (the block) and later rows of variance 1e-4 to 9e-4
// whose coefficients are in the thousands: each later variable is nearly
// a fixed combination of earlier ones, far apart in scale, and the sites'
// fill-in is far more than the pattern holds.

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

// The constructed models, found by a search over random models of 4 to 7
// rows (integer coefficients up to 10^4 in magnitude, a first row of
// variance 1 to 99, later rows' 1e-4 to 9e-4).
var (
	// stopModel: EP's fifth round fails to factor, and the proposal halves
	// its sites four times.
	stopModel = labelled(&Model{N: 7, Start: []int{0, 0, 1, 3, 5, 7, 10, 13}, Nbr: []int32{0, 0, 1, 0, 2, 0, 3, 2, 3, 4, 3, 4, 5},
		Coef:    []float64{-1071, 6321, 2322, -1503, 4556, 9444, -57, 4150, -7524, 6999, -8124, 2544, 1278},
		CondVar: []float64{37, 0.0008, 0.0005, 0.0001, 0.0001, 0.0005, 0.0007}, Noise: 1},
		1, 1, 1, 1, 1, -1, -1)
	// brokenModel breaks the proposal's factorisation even with its later
	// sites scaled by 2^-21.
	brokenModel = labelled(&Model{N: 6, Start: []int{0, 0, 1, 2, 5, 7, 9}, Nbr: []int32{0, 0, 0, 1, 2, 2, 3, 3, 4},
		Coef:    []float64{-9379, 8699, -9666, -4130, -1218, 4874, -4719, 781, -4127},
		CondVar: []float64{28, 0.0005, 0.0009, 0.0002, 0.0001, 0.0005}, Noise: 1},
		-1, 1, 1, 1, -1, -1)
)

// TestFallbackStopAndHalve checks the fallback on a model whose sites
// break the incomplete factorisation: the preparation succeeds with EP
// stopped before its last round and the later sites scaled down
// (Prepared.EP, SiteScale, what gpc-train reports and warns of), and the
// estimate is a finite log probability. (The model's covariance spans
// many orders of magnitude, so no dense estimate checks its value.)
func TestFallbackStopAndHalve(t *testing.T) {
	p, err := Prepare(context.Background(), stopModel, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Block != 1 {
		t.Fatalf("the dense block holds %d rows, want 1 (the model's later rows after it)", p.Block)
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
	_, err := Prepare(context.Background(), brokenModel, nil)
	var ie *core.InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "breaks down even with the later sites nearly removed") || !strings.Contains(err.Error(), "use the dense path") {
		t.Fatalf("%v, want an InputError: the factorisation breaks down even with the later sites nearly removed", err)
	}
}
