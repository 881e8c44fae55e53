package vecchia

import (
	"fmt"
	"math"

	"github.com/gpc-mc/gpc/core"
)

// PreparedParts are what Prepare computes for a model, written once as a
// plan (gpc-train --prepare-only) so that the shards of a run read it
// rather than prepare again: with the model, NewPreparedFromParts rebuilds
// the Prepared bit for bit.
type PreparedParts struct {
	// Block is Prepared.Block.
	Block int
	// Diag and Off are the proposal's factor T: its diagonal (N) and the
	// other entries of its rows in order, row k's in the columns of its
	// pattern (ProposalPattern): every earlier regular row for k < Block,
	// the model's conditioning set after it; a repeated point's row is
	// empty.
	Diag, Off []float64
	// Eta, Tau and Nu are q's linear term and the sites by latent
	// variable (N each); RowTau and RowNu the rows' own sites (N each: a
	// row's share of its variable's site, its own where no other row
	// observes the variable).
	Eta, Tau, Nu  []float64
	RowTau, RowNu []float64
	// Laplace holds Laplace's sites and mode.
	Laplace Sites
	EP      core.EPStats
	// Shift, Widened, MeanSteps, Clipped and SiteScale are Prepared's.
	Shift                       float64
	Widened, MeanSteps, Clipped int
	SiteScale                   float64
}

// Parts returns p's parts (sharing p's memory: not to be modified).
func (p *Prepared) Parts() PreparedParts {
	return PreparedParts{
		Block: p.Block, Diag: p.prop.diag, Off: p.prop.off, Eta: p.eta, Tau: p.tau, Nu: p.nu,
		RowTau: p.rtau, RowNu: p.rnu,
		Laplace: *p.Laplace, EP: p.EP, Shift: p.Shift, Widened: p.Widened, MeanSteps: p.MeanSteps,
		Clipped: p.Clipped, SiteScale: p.SiteScale,
	}
}

// ProposalPattern returns the number of entries of each row of the
// proposal's factor besides its diagonal, for a model m and a dense block
// of the first block rows: the lengths of the rows of PreparedParts.Off.
func ProposalPattern(m *Model, block int) []int {
	out := make([]int, m.N)
	regular := 0
	for k := range m.N {
		switch {
		case m.CondVar[k] == 0:
		case k < block:
			out[k] = regular
		default:
			out[k] = m.Start[k+1] - m.Start[k]
		}
		if m.CondVar[k] != 0 {
			regular++
		}
	}
	return out
}

// NewPreparedFromParts returns the Prepared of model m whose parts are pp
// (Prepared.Parts of Prepare(m)'s result): the same proposal, bit for bit,
// with no work but the checks. It returns a *core.InputError if the model
// is not valid or the parts do not fit it: their lengths, a block that is
// not ValidBlock, values that are not finite, a factor's diagonal
// entry that is not positive on a regular row.
func NewPreparedFromParts(m *Model, pp PreparedParts) (*Prepared, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	n := m.N
	bad := func(format string, args ...any) error {
		return &core.InputError{Index: -1, Msg: fmt.Sprintf(format, args...)}
	}
	if !ValidBlock(m, pp.Block) {
		return nil, bad("a dense block of %d rows in a model of %d (at most %d, or every row of a model of at most %d regular rows)", pp.Block, n, BlockLimit(m), MaxComplete)
	}
	for _, v := range []struct {
		name string
		x    []float64
	}{{"diag", pp.Diag}, {"eta", pp.Eta}, {"tau", pp.Tau}, {"nu", pp.Nu}, {"row tau", pp.RowTau}, {"row nu", pp.RowNu}, {"Laplace's tau", pp.Laplace.Tau}, {"Laplace's nu", pp.Laplace.Nu}, {"Laplace's mode", pp.Laplace.Mode}} {
		if len(v.x) != n {
			return nil, bad("%d values of %s for a model of %d rows", len(v.x), v.name, n)
		}
		for k, x := range v.x {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, bad("%s of row %d is %v: not finite", v.name, k, x)
			}
		}
	}
	t := hybridPattern(m, newTri(m), pp.Block)
	if len(pp.Off) != len(t.nbr) {
		return nil, bad("%d entries of the proposal's factor where a block of %d rows gives the pattern %d", len(pp.Off), pp.Block, len(t.nbr))
	}
	for q, x := range pp.Off {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, bad("entry %d of the proposal's factor is %v: not finite", q, x)
		}
	}
	for k := range n {
		if !t.dup[k] && !(pp.Diag[k] > 0) {
			return nil, bad("the proposal factor's diagonal of row %d is %v: not positive", k, pp.Diag[k])
		}
	}
	if !(pp.Shift >= 0) || !(pp.SiteScale > 0 && pp.SiteScale <= 1) {
		return nil, bad("shift %v and site scale %v: not a preparation's", pp.Shift, pp.SiteScale)
	}
	copy(t.diag, pp.Diag)
	copy(t.off, pp.Off)
	lap := pp.Laplace
	p := &Prepared{m: m, prop: t, eta: pp.Eta, tau: pp.Tau, nu: pp.Nu, rtau: pp.RowTau, rnu: pp.RowNu, Block: pp.Block, Laplace: &lap,
		EP: pp.EP, Shift: pp.Shift, Widened: pp.Widened, MeanSteps: pp.MeanSteps, Clipped: pp.Clipped, SiteScale: pp.SiteScale}
	return p, nil
}
