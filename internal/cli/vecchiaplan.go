package cli

// Plans of the Vecchia path (gpc-train and gpc-orthant --prepare-only and
// --plan on a Vecchia model, docs/vecchia.md and docs/scale-out.md): the
// model's preparation (Laplace, EP's rounds, the proposal's factor and
// mean), written once as a gpc.vecchia-plan/1 stream and read by every
// shard with the model instead of redone.

import (
	"errors"

	"github.com/gpc-mc/gpc/core/vecchia"
	"github.com/gpc-mc/gpc/format"
)

// vecchiaPrepared reads the Vecchia model of the input and its prepared
// estimator: from --plan's file when given (a plan of another model is a
// data error), else by preparing it.
func (c *estimatorFlags) vecchiaPrepared(e *env, r interface{ Read([]byte) (int, error) }, name string, progress bool, mem format.Allocator) (*format.VecchiaStream, *vecchia.Prepared, error) {
	if c.plan == nil || c.plan.Plan == "" {
		return prepareVecchia(e, r, name, progress, mem)
	}
	s, err := format.ReadVecchia(r, name, mem)
	if err != nil {
		return nil, nil, err
	}
	pr, pname, closePlan, err := openInput(c.plan.Plan, e.stdin)
	if err != nil {
		return nil, nil, &format.IOError{Op: "open plan", Err: errors.Unwrap(err)}
	}
	defer closePlan()
	_, p, err := format.ReadVecchiaPlan(pr, pname, s.Model, mem)
	if err != nil {
		return nil, nil, err
	}
	vecchiaWarnings(e, p)
	return s, p, nil
}

// writeVecchiaPlan writes the Vecchia model's preparation p as a plan to
// standard output (--prepare-only), once the run it is for was found to
// fit in memory (planned).
func writeVecchiaPlan(e *env, s *format.VecchiaStream, p *vecchia.Prepared, mem format.Allocator) error {
	pp := p.Parts()
	meta := map[string]string{format.KeyVersion: Version, format.KeyMethod: vecchiaMethod}
	return format.WriteVecchiaPlan(e.stdout, s.Model, &pp, meta, mem)
}

// vecchiaWarnings warns of what the preparation had to give up.
func vecchiaWarnings(e *env, p *vecchia.Prepared) {
	if p.Shift > 0 {
		e.rep.warnf("the proposal's incomplete factorisation needed its diagonal raised by %.3g: the estimate is exact, its variance larger", p.Shift)
	}
	if p.SiteScale < 1 {
		e.rep.warnf("the proposal keeps only %.3g of EP's sites after its dense block (their fill-in is more than the Vecchia pattern holds: length scales long beside the points' spacing, or many features): the estimate is exact, its variance larger; more neighbours, or the dense path, do better", p.SiteScale)
	}
}
