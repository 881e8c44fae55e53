package vecchia

import (
	"context"
	"math"
	"testing"
)

// TestCorrectionVariance checks CorrectionVariance's Hutchinson estimate
// of ||L - I||_F^2 / 2 against the exact sum over unit vectors, on a
// two-dimensional classifier with many rows after the dense block (its cap
// lowered to 200), within four of its standard errors (fixed probes: the
// test cannot flake), that a second call gives the same bits, and that
// the estimate is 0 for a complete proposal. Under -race -short the exact
// sum is left out.
func TestCorrectionVariance(t *testing.T) {
	defer func(c int) { blockCap = c }(blockCap)
	blockCap = 200
	m := classifier2D(t, 6500, 10) // above MaxComplete: not the complete proposal
	p, err := Prepare(context.Background(), m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Complete() || p.Block > m.N/2 {
		t.Fatalf("a block of %d rows of %d: the test wants many rows after it", p.Block, m.N)
	}
	v, se := p.CorrectionVariance(200)
	if v1, _ := p.CorrectionVariance(200); v1 != v {
		t.Errorf("a second call gave %v, the first %v", v1, v)
	}
	if raceEnabled && testing.Short() {
		// The exact sum (N = 6500 unit vectors, four sparse passes
		// each) took three minutes of the race detector's run: -race
		// -short checks the estimate's threads only, the plain run its
		// value.
		if !(v > 0) || !(se > 0) {
			t.Errorf("Var_q(r) %v (se %v)", v, se)
		}
	} else {
		exact := exactCorrection(p)
		t.Logf("Var_q(r): %.5g (se %.2g) by 200 probes, %.5g exactly", v, se, exact)
		if !(exact > 0) || !(se > 0) || math.Abs(v-exact) > 4*se {
			t.Errorf("Var_q(r) %.5g (se %.2g), exactly %.5g", v, se, exact)
		}
	}

	blockCap = 150
	mc := manyFeatureModel(t, 600, 10, 12, 1, 1000)
	pc, err := Prepare(context.Background(), mc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !pc.Complete() {
		t.Fatal("want the complete proposal (TestCompleteProposal's model)")
	}
	if v, se := pc.CorrectionVariance(16); v != 0 || se != 0 {
		t.Errorf("a complete proposal's Var_q(r) %v (se %v), want 0", v, se)
	}
}

// exactCorrection returns ||L - I||_F^2 / 2 for p's proposal, L = T^-T P
// T^-1 (P = A'A + diag(tau)), summed over the unit vectors.
func exactCorrection(p *Prepared) float64 {
	m := p.m
	n := m.N
	a := newTri(m)
	a.priorFactor(m)
	e, u, au, pu, le := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	exact := 0.0
	for j := range n {
		if p.prop.dup[j] {
			continue
		}
		clear(e)
		e[j] = 1
		p.prop.solveTo(u, e)
		a.mulTo(au, u)
		a.mulTransTo(pu, au)
		for k := range pu {
			pu[k] += p.tau[k] * u[k]
		}
		p.prop.solveTransTo(le, pu)
		for k := range n {
			if !p.prop.dup[k] {
				d := le[k] - e[k]
				exact += d * d / 2
			}
		}
	}
	return exact
}
