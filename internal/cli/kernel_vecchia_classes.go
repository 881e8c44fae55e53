package cli

// gpc-kernel --vecchia M on more than two classes: the multi-class Vecchia
// stream (format.VecchiaClassesStream), the multinomial probit's C latent
// processes under one Vecchia prior shared by the classes
// (vecchia.Multiclass).

import (
	"fmt"
	"reflect"

	"github.com/gpc-mc/gpc/core/gp"
	"github.com/gpc-mc/gpc/core/vecchia"
	"github.com/gpc-mc/gpc/format"
	"github.com/gpc-mc/gpc/internal/sysmem"
)

// vecchiaClasses is the multi-class Vecchia stream of structure s with
// test neighbours tnb.
func (c *kernelCmd) vecchiaClasses(s *vecchia.Structure, tnb [][]int32, train, test *features, labels *labelMap, k *gp.Kernel, meta map[string]string) (*format.VecchiaStream, error) {
	nc := len(labels.classes)
	kernels := c.hyperKernels
	if kernels == nil {
		var err error
		if kernels, err = c.classKernels(k, labels.classes, len(train.names), false, meta); err != nil {
			return nil, err
		}
	} else {
		classMeta(kernels, meta)
	}
	for _, kc := range kernels[1:] {
		if !reflect.DeepEqual(kc, kernels[0]) {
			return nil, usagef("--vecchia: a kernel per class (--class-alpha, --class-beta or a --hyper table's rows per class): the multi-class Vecchia model has one kernel shared by its %d classes so far; give one kernel, or drop --vecchia for the dense path", nc)
		}
	}
	y := make([]int, train.rows)
	for i, v := range train.y {
		y[i] = int(v)
	}
	var tx []float64
	if test != nil {
		tx = test.x
	}
	m, err := vecchia.NewMulticlass(s, kernels[:1], nc, train.x, y, c.VecchiaNugget, tx, tnb, c.Threads)
	if err != nil {
		return nil, &dataError{fmt.Sprintf("%s: %v", train.source, err)}
	}
	delete(meta, format.KeyLabelPositive)
	delete(meta, format.KeyLabelNegative)
	rows := vecchiaStream(s, m.ClassModel(0), train, test, meta)
	st, err := format.VecchiaClassesStream(m, labels.classes, rows.Row, rows.ID, rows.Y, meta)
	if err != nil {
		return nil, err
	}
	return st, nil
}

// vecchiaFingerprint is the fingerprint WriteVecchia gives st.
func vecchiaFingerprint(st *format.VecchiaStream) string {
	if cl, ok := st.Meta[format.KeyClasses]; ok {
		return format.VecchiaClassesFingerprint(st.Model, cl, st.Y)
	}
	return format.VecchiaFingerprint(st.Model)
}

// prepareVecchiaClasses prepares a multi-class Vecchia stream's estimator
// (prepareVecchia).
func (c *estimatorFlags) prepareVecchiaClasses(e *env, s *format.VecchiaStream, name string, classes []string, progress bool) (*vecchiaProblem, error) {
	m, err := s.Multiclass(name, classes)
	if err != nil {
		return nil, err
	}
	// Its memory in huge pages (sysmem.AdviseHeap), as the two-class
	// preparation's: at N = 10^5 points of 3 classes (m = 30, 64
	// particles) gpc-train took 54.2 s against 60.1 s, 6.3 s of system
	// time against 18.4 and 38 thousand page faults against 634, peaking
	// at 2.57 GB against 2.49; at 5 x 10^4 points of 4 classes 55.9 s
	// against 83.8, 8.4 s of system time against 22.1, peaking at 3.43 GB
	// against 3.18 (the 2-core AMD EPYC guest, 2026-12-02; the same bits).
	sysmem.AdviseHeap(int64(vecchiaClassesPrepareBytes(m.N, m.C, maxRow(m.Start))))
	tr, done := e.rep.trace(progress)
	p, err := vecchia.PrepareMulticlass(e.ctx, m, tr)
	done()
	if err != nil {
		return nil, err
	}
	releaseLarge(m.N) // the preparation's scratch, before the particles
	if p.Shift > 0 {
		e.rep.warnf("the proposal's incomplete factorisation needed its diagonal raised by %.3g: the estimate is exact, its variance larger", p.Shift)
	}
	if p.SiteScale < 1 {
		e.rep.warnf("the proposal keeps only %.3g of its sites (their fill-in is more than the Vecchia pattern holds: length scales long beside the points' spacing, or many features): the estimate is exact, its variance larger; more neighbours, or the dense path, do better", p.SiteScale)
	}
	if p.BlockRule > p.Block {
		e.rep.warnf("the proposal's dense block holds %d of the %d coarsest rows its rule asks for (at most %d variables): rows with large sites fall after it, and the estimate can then be far too low (docs/vecchia.md, More than two classes); compare runs with more --samples", p.Block, p.BlockRule, vecchia.MaxBlock)
	}
	prep := fmt.Sprintf("laplace_steps=%d block=%d block_rule=%d ep_rounds=%d shift=%g clipped=%d widened=%d site_scale=%g", p.Laplace.Iterations, p.Block, p.BlockRule, p.EP.Sweeps, p.Shift, p.Clipped, p.Widened, p.SiteScale)
	return &vecchiaProblem{Estimator: p, s: s, classes: classes, ep: p.EP, prep: prep, n: m.N, t: m.T * m.C, ess: c.ESS, seed: c.Seed}, nil
}

// vecchiaClassesPrepareBytes is the peak memory of the multi-class
// preparation (vecchia.PrepareMulticlass) on n points of c classes with m
// neighbours: its factors hold an L x L block (L = c - 1 latent values a
// point) for each neighbour, so it is vecchiaPrepareBytes of n L^2 rows,
// with a quarter more, which covers gpc-train's peaks at n = 10^5, c = 3
// (2.49 GB, against 2.49 without the quarter) and n = 5 x 10^4, c = 4
// (3.18 GB, against 2.80), m = 30.
func vecchiaClassesPrepareBytes(n, c, m int) float64 {
	l := max(1, c-1)
	return 1.25 * vecchiaPrepareBytes(n*l*l, m)
}

// maxRow returns the most entries of any row of a pattern whose row i is
// [start[i], start[i+1]).
func maxRow(start []int) int {
	m := 0
	for i := 1; i < len(start); i++ {
		m = max(m, start[i]-start[i-1])
	}
	return m
}
