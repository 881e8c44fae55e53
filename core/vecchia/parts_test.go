package vecchia

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/gpc-mc/gpc/core"
)

// TestPartsRoundTrip checks that a Prepared rebuilt from its parts gives
// the estimate and test posteriors of the one prepared, bit for bit, with
// a dense block, rows after it and repeated points.
func TestPartsRoundTrip(t *testing.T) {
	m, _ := oneFactorModelSmall(40, 3, []int{5, 30}, 20)
	p, err := Prepare(context.Background(), m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Block == 0 || p.Block >= m.N {
		t.Fatalf("block %d of %d rows: the test wants rows in and after it", p.Block, m.N)
	}
	pp := p.Parts()
	lens := ProposalPattern(m, pp.Block)
	total := 0
	for _, l := range lens {
		total += l
	}
	if total != len(pp.Off) {
		t.Fatalf("ProposalPattern sums to %d, the factor has %d entries", total, len(pp.Off))
	}
	q, err := NewPreparedFromParts(m, pp)
	if err != nil {
		t.Fatal(err)
	}
	cfg := core.Config{Samples: 400, Seed: 3}
	a, err := Estimate(context.Background(), p, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Estimate(context.Background(), q, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if math.Float64bits(a.LogP) != math.Float64bits(b.LogP) || math.Float64bits(a.SE) != math.Float64bits(b.SE) {
		t.Errorf("prepared: %v (%v), from its parts: %v (%v)", a.LogP, a.SE, b.LogP, b.SE)
	}
	if slices.Equal(p.rtau, p.tau) {
		t.Error("the rows' sites are the variables': the test wants repeated points")
	}
}

// TestPartsRefused checks that parts that do not fit the model are
// refused.
func TestPartsRefused(t *testing.T) {
	m, _ := oneFactorModelSmall(40, 3, []int{5, 30}, 20)
	p, err := Prepare(context.Background(), m, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, spoil := range map[string]func(pp *PreparedParts){
		"block":     func(pp *PreparedParts) { pp.Block++ },
		"short eta": func(pp *PreparedParts) { pp.Eta = pp.Eta[:10] },
		"nan tau":   func(pp *PreparedParts) { pp.Tau = slices.Clone(pp.Tau); pp.Tau[3] = math.NaN() },
		"row nu":    func(pp *PreparedParts) { pp.RowNu = pp.RowNu[:39] },
		"diag":      func(pp *PreparedParts) { pp.Diag = slices.Clone(pp.Diag); pp.Diag[1] = 0 },
		"off":       func(pp *PreparedParts) { pp.Off = pp.Off[1:] },
		"scale":     func(pp *PreparedParts) { pp.SiteScale = 2 },
	} {
		pp := p.Parts()
		spoil(&pp)
		if _, err := NewPreparedFromParts(m, pp); err == nil {
			t.Errorf("%s: parts accepted", name)
		}
	}
}
