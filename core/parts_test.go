package core

import (
	"context"
	"math"
	"testing"
)

// TestFactorParts checks that a Factor rebuilt from its Parts gives the
// same estimate, bit for bit, for each method, and that broken parts are
// refused.
func TestFactorParts(t *testing.T) {
	box := Box{N: 30, Cov: randSPD(30, 7)}
	for _, c := range []Candidate{{MethodEP, OrderGreedy}, {MethodMET, OrderSharp}, {MethodSMC, OrderGiven}} {
		f, err := Prepare(box, c, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		g, err := NewFactorFromParts(f.Parts())
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		cfg := Config{Method: c.Method, Samples: 2000, Seed: 3}
		r1, err1 := Estimate(context.Background(), f, cfg)
		r2, err2 := Estimate(context.Background(), g, cfg)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if r1.LogP != r2.LogP || r1.SE != r2.SE {
			t.Errorf("%v: rebuilt factor gives log P %v (se %v), the original %v (%v)", c, r2.LogP, r2.SE, r1.LogP, r1.SE)
		}
	}
	f, _ := Prepare(box, Candidate{MethodEP, OrderGreedy}, 1, 0)
	for name, breakIt := range map[string]func(p *FactorParts){
		"short L":    func(p *FactorParts) { p.L = p.L[:len(p.L)-1] },
		"perm":       func(p *FactorParts) { p.Perm = append([]int{p.Perm[1]}, p.Perm[1:]...) },
		"NaN tau":    func(p *FactorParts) { p.Tau = append([]float64{math.NaN()}, p.Tau[1:]...) },
		"upper L":    func(p *FactorParts) { l := append([]float64(nil), p.L...); l[1] = 1; p.L = l },
		"no kappa":   func(p *FactorParts) { p.Kappa = nil },
		"bad order":  func(p *FactorParts) { p.Order = 99 },
		"zero pivot": func(p *FactorParts) { l := append([]float64(nil), p.L...); l[0] = 0; p.L = l },
	} {
		p := f.Parts()
		breakIt(&p)
		if _, err := NewFactorFromParts(p); err == nil {
			t.Errorf("%s: NewFactorFromParts accepted it", name)
		}
	}
}
