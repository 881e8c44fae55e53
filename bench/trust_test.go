package bench

import (
	"context"
	"strings"
	"testing"

	"github.com/gpc-mc/gpc/core"
)

// TestTrustMET checks core.Result.Trust on met/sharp, whose resampling
// threshold (core.METESSThreshold, a quarter of a particle in a group of
// 250) lets the effective sample size fall to about one particle by design
// (docs/calibration.md, finding 4): on RBF classification at N = 100,
// beta = 100, where the study finds its standard error honest, it is
// trusted though its ESS fell below 2 particles; at N = 1000, beta = 10,
// where its standard error fails (95 % coverage 66.5 %), it is warned, by
// its groups' disagreement.
func TestTrustMET(t *testing.T) {
	cases := []struct {
		n     int
		beta  float64
		trust bool
	}{{100, 100, true}, {1000, 10, false}}
	for _, c := range cases {
		d := RBFProblem{N: c.n, NTest: 0, Alpha: 1, Beta: c.beta, Seed: 1}.Generate()
		f, err := core.Prepare(d.Box, core.Candidate{Method: core.MethodMET, Order: core.OrderSharp}, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		for seed := uint64(1); seed <= 3; seed++ {
			r, err := core.Estimate(context.Background(), f, core.Config{Method: core.MethodMET, Samples: 8000, Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			ok, why := r.Trust()
			t.Logf("N = %d, beta = %g, seed %d: ESS %.2f particles, resampling below %.2f, effective groups %.1f of %d: trusted %v %s",
				c.n, c.beta, seed, r.MinESSParticles, r.ResampleESS, r.EffectiveGroups, r.Groups, ok, why)
			if ok != c.trust {
				t.Errorf("N = %d, beta = %g, seed %d: Trust() = %v (%s), want %v", c.n, c.beta, seed, ok, why, c.trust)
			}
			if c.trust && !(r.MinESSParticles < 2 && r.ResampleESS < 2) {
				t.Errorf("N = %d, seed %d: ESS %.2f, threshold %.2f particles: the case no longer tests the rule", c.n, seed, r.MinESSParticles, r.ResampleESS)
			}
			if !c.trust && !strings.Contains(why, "heavy-tailed") {
				t.Errorf("N = %d, seed %d: warned for %q, not the groups' disagreement", c.n, seed, why)
			}
		}
	}
}
