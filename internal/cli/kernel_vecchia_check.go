package cli

// gpc-kernel --vecchia's choice of conditioning sets (--vecchia auto) and
// its check of the approximation before the run (docs/vecchia.md, "How
// good is the approximation").

import (
	"fmt"

	"github.com/gpc-mc/gpc/core/gp"
	"github.com/gpc-mc/gpc/core/vecchia"
	"github.com/gpc-mc/gpc/format"
)

// denseLimit is the training set size up to which a warning suggests the
// dense path (docs/vecchia.md: N = 2 x 10^4 takes 549 s and 11.7 GB).
const denseLimit = 20000

// vecchiaSets chooses the conditioning sets of the structure s (ordered,
// its sets M nearest, or one for auto) and checks them: --vecchia auto
// takes vecchia.Structure.Auto's choice, a count M the M nearest. It
// notes the check on a terminal (or with --progress), warns in one line
// where the approximation is poor, records both in meta, and returns the
// structure and its selection (whose test sets the test points take).
// The check runs on the kernel's features of the training rows.
func (c *kernelCmd) vecchiaSets(e *env, s *vecchia.Structure, k *gp.Kernel, train *features, meta map[string]string) (*vecchia.Structure, vecchia.Selection, error) {
	n := s.N
	var sel vecchia.Selection
	var cr vecchia.CheckResult
	met := true
	if c.vecchiaAuto {
		if c.Progress {
			e.rep.note("choosing the neighbours: checking m = %v in turn", vecchia.DefaultLadder)
		}
		auto, res, err := s.Auto(k, train.x, c.VecchiaNugget, vecchia.AutoOptions{Threads: c.Threads})
		if err != nil {
			return nil, sel, &dataError{fmt.Sprintf("%s: %v", train.source, err)}
		}
		s, sel, met = auto, res.Selection, res.Met
		cr = res.Checks[len(res.Checks)-1]
		tried := ""
		for i, t := range res.Checks {
			if i > 0 {
				tried += ", "
			}
			tried += fmt.Sprintf("m=%d pool=%d: %.3g", t.M, res.Tried[i].Pool, t.Loss)
		}
		meta[format.KeyVecchiaSelect] = fmt.Sprintf("auto: m=%d pool=%d block=%d block_m=%d test_m=%d test_pool=%d target=%g met=%t (label loss tried: %s)",
			sel.M, sel.Pool, sel.Block, sel.BlockM, sel.TestM, sel.TestPool, vecchia.DefaultTarget, met, tried)
	} else {
		sel = vecchia.Selection{M: int(c.Vecchia), TestM: int(c.Vecchia)}
		var err error
		if cr, err = s.Check(k, train.x, c.VecchiaNugget, vecchia.CheckOptions{Threads: c.Threads}); err != nil {
			return nil, sel, &dataError{fmt.Sprintf("%s: %v", train.source, err)}
		}
		met = cr.Loss <= vecchia.DefaultTarget
		meta[format.KeyVecchiaSelect] = fmt.Sprintf("nearest: m=%d test_m=%d", sel.M, sel.TestM)
	}
	meta[format.KeyVecchiaCheck] = fmt.Sprintf("label_loss=%.4g se=%.2g error_scale=%.3g resp_loss=%.4g rows=%d exact=%d big=%d coarse=%d",
		cr.Loss, cr.SE, cr.ErrorScale(), cr.RespLoss, cr.Rows, cr.Exact, cr.Big, cr.Coarse)
	if c.Progress || e.rep.tty && !c.Quiet {
		e.rep.note("Vecchia check, m = %d: the sets lose %.3g nats (se %.2g) of the labels' information beside larger ones (%d sampled points); a rough scale of the log marginal likelihood's error: %.2g nats", sel.M, cr.Loss, cr.SE, cr.Rows, cr.ErrorScale())
	}
	if !met {
		try := "try --vecchia auto or more neighbours"
		if c.vecchiaAuto {
			try = fmt.Sprintf("m = %d is the most --vecchia auto tries", sel.M)
		}
		if n <= denseLimit {
			try += fmt.Sprintf(", or the dense path (drop --vecchia: exact, and feasible at N = %d)", n)
		} else {
			try += ", or shorter length scales"
		}
		e.rep.warnf("the Vecchia approximation with m = %d is poor here: its conditioning sets lose %.3g nats (se %.2g) of the labels' information on a check of %d points, so its log marginal likelihood may be off by about %.2g nats (docs/vecchia.md); %s", sel.M, cr.Loss, cr.SE, cr.Rows, cr.ErrorScale(), try)
	}
	return s, sel, nil
}
