package cli

// gpc-kernel --vecchia m (docs/vecchia.md): the Vecchia model
// (gpc.vecchia/1) of the training and test features instead of the
// covariance, and its flags.

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/gpc-mc/gpc/core/gp"
	"github.com/gpc-mc/gpc/core/vecchia"
	"github.com/gpc-mc/gpc/format"
	"github.com/gpc-mc/gpc/internal/sysmem"

	"github.com/alecthomas/kong"
)

// vecchiaFlags are gpc-kernel's --vecchia and its settings.
type vecchiaFlags struct {
	Vecchia       neighbours `placeholder:"m" default:"0" help:"Write a Vecchia model (gpc.vecchia/1) instead of the N x N covariance: each training point conditioned on m earlier points (m neighbours) in a maxmin order, each test point on m training points; O(N m) memory, O(m) time per particle and point, for N up to millions (docs/vecchia.md); worth it from about 10^4 training points, where the dense path takes minutes and GBs. A number m: the m nearest. auto: sets chosen from the data: the first 1000 points with up to 254 nearest earlier points, the later ones with their m nearest, or m chosen by the kernel's conditional variances among their 3m nearest, test points with 2m so chosen among 6m, for the first of m = 30, 50, 100, 200 (nearest sets first) whose check (below), plus twice its standard error, is at most 0.5 nats; if none is, m = 200 of 600, with a warning. The check before the run: on a sample of 500 training points (a systematic sample, two fifths from the first 1000 positions), the information about each point's label that its set loses beside a larger set (the set with its 4m nearest earlier points and the first m, every earlier point in the first 1000 positions), summed over the points; it goes into gpc:vecchia_check and on a terminal, and a poor one (over 0.5 nats) warns with what to try. At most 254; 0: the dense covariance."`
	VecchiaOrder  string     `enum:"maxmin,given" default:"maxmin" help:"With --vecchia: the order of the training points: maxmin (each next point the farthest from those before it: coarse to fine) or given (the file's)."`
	VecchiaNugget float64    `default:"1e-4" help:"With --vecchia: the part of the probit's noise variance (1) moved into the latent process, so that the neighbours' covariances stay well conditioned; the dense model is the same for any value in (0, 1)."`

	// vecchiaAuto records --vecchia auto: the sets are chosen from the
	// data (vecchia.Structure.Auto), m at least Vecchia.
	vecchiaAuto bool
	// autoFixed records that auto is a fixed m (gpc-fit's), not the
	// least m of those gpc-kernel tries.
	autoFixed bool
}

// neighbours is --vecchia's value: the neighbours per point, 0 for the
// dense path, or autoNeighbours for auto, until validateVecchia resolves
// it.
type neighbours int

// autoNeighbours is --vecchia auto before validateVecchia resolves it.
const autoNeighbours neighbours = math.MinInt32

// Decode parses the flag's value (kong.MapperValue).
func (v *neighbours) Decode(ctx *kong.DecodeContext) error {
	var s string
	if err := ctx.Scan.PopValueInto("m", &s); err != nil {
		return err
	}
	if s == "auto" {
		*v = autoNeighbours
		return nil
	}
	m, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("%q is not a count of neighbours (a whole number, auto to choose from the data, 0 for the dense path)", s)
	}
	*v = neighbours(m)
	return nil
}

// validateVecchia resolves --vecchia auto to the least m it tries (the
// data choose the sets later, vecchiaSets) and checks the flags.
func (v *vecchiaFlags) validateVecchia() error {
	if v.Vecchia == autoNeighbours {
		v.Vecchia, v.vecchiaAuto = neighbours(vecchia.DefaultLadder[0]), true
	}
	switch {
	case v.Vecchia < 0:
		return usagef("--vecchia %d: the neighbours per point must be 1 or more (0: the dense covariance)", v.Vecchia)
	case v.Vecchia > vecchia.MaxM:
		return usagef("--vecchia %d: at most %d neighbours per point (the preparation indexes a row's entries in a byte): give fewer, or drop --vecchia for the dense path", v.Vecchia, vecchia.MaxM)
	case !(v.VecchiaNugget > 0 && v.VecchiaNugget < 1):
		return usagef("--vecchia-nugget %v: must be in (0, 1)", v.VecchiaNugget)
	}
	return nil
}

// tooFewPoints is the usage error of --vecchia with m neighbours per point
// on n <= m training points, in the words the user typed: --vecchia m, or
// --vecchia auto and the m it chose.
func (v *vecchiaFlags) tooFewPoints(n int) error {
	if v.vecchiaAuto {
		least := "at least "
		if v.autoFixed {
			least = ""
		}
		return usagef("--vecchia auto: it conditions each point on %sm = %d neighbours, and the training data have %d points, each with at most the %d before it: drop --vecchia (the dense path is exact, and fast at this size), or give --vecchia below %d", least, v.Vecchia, n, n-1, n)
	}
	return usagef("--vecchia %d: the training data have %d points, and each conditions on at most the %d before it: give --vecchia below %d, or drop it (the dense path is exact, and fast at this size)", v.Vecchia, n, n-1, n)
}

// runVecchia writes the Vecchia model of the training and test features
// (standardized already as asked) with kernel k.
func (c *kernelCmd) runVecchia(e *env, train, test *features, labels *labelMap, k *gp.Kernel, meta map[string]string, mem format.Allocator) error {
	n := train.rows
	if int(c.Vecchia) >= n {
		return c.tooFewPoints(n)
	}
	// Its memory in huge pages (sysmem.AdviseHeap): gpc-kernel's peak at
	// N = 10^6, m = 30, was 1150 bytes a training row.
	sysmem.AdviseHeap(int64(n) * int64(250+30*max(int(c.Vecchia), 30)))
	s, tnb, sel, err := c.vecchiaStructure(e, train, test, k, meta)
	if err != nil {
		return err
	}
	if c.Progress {
		e.rep.note("the conditionals of %d training and %d test points", n, len(tnb))
	}
	var st *format.VecchiaStream
	if labels.classes != nil {
		st, err = c.vecchiaClasses(s, tnb, train, test, labels, k, meta)
	} else {
		st, err = c.vecchiaTwo(s, tnb, train, test, k, meta)
	}
	if err != nil {
		return err
	}
	m := st.Model
	order, _ := vecchia.ParseOrder(c.VecchiaOrder)
	meta[format.KeyVecchiaM] = strconv.Itoa(sel.M)
	meta[format.KeyVecchiaOrder] = order.String()
	meta[format.KeyVecchiaNugget] = fmtFloat(c.VecchiaNugget)
	meta[format.KeyVecchiaRepeat] = strconv.Itoa(s.Duplicates())
	switch c.outputFormat(e.stdout) {
	case format.Arrow:
		return format.WriteVecchia(e.stdout, st, c.BatchSize, mem)
	case format.CSV:
		return format.WriteTable(e.stdout, vecchiaRows(st), format.CSV, 0, nil)
	}
	t := &format.Table{Cols: []format.Column{
		{Name: "n", Int: []int64{int64(n)}},
		{Name: "test_rows", Int: []int64{int64(m.T)}},
		{Name: "features", Int: []int64{int64(len(train.names))}},
		{Name: "kernel", Str: []string{c.Kernel}},
		{Name: "alpha", Str: []string{meta["gpc:alpha"]}},
		{Name: "beta", Float: []float64{k.Beta}},
		{Name: "vecchia", Int: []int64{int64(sel.M)}},
		{Name: "order", Str: []string{order.String()}},
		{Name: "repeats", Int: []int64{int64(s.Duplicates())}},
		{Name: "fingerprint", Str: []string{vecchiaFingerprint(st)}},
	}}
	if labels.classes != nil {
		t.Cols = append(t.Cols, format.Column{Name: "classes", Str: []string{strings.Join(labels.classes, ",")}})
	}
	return format.WriteTable(e.stdout, t, format.Text, 0, mem)
}

// vecchiaStructure orders the training points, chooses and checks their
// conditioning sets (vecchiaSets, which records the check in meta) and
// finds the test points'.
func (c *kernelCmd) vecchiaStructure(e *env, train, test *features, k *gp.Kernel, meta map[string]string) (*vecchia.Structure, [][]int32, vecchia.Selection, error) {
	var sel vecchia.Selection
	n, d := train.rows, len(train.names)
	order, _ := vecchia.ParseOrder(c.VecchiaOrder)
	// The neighbours are Euclidean in the kernel's metric: the ard
	// kernel's features scaled by their length scales.
	metric := func(x []float64, rows int) []float64 {
		if k.Kind != gp.KernelARD {
			return x
		}
		out := make([]float64, len(x))
		for r := range rows {
			for j := range d {
				out[r*d+j] = x[r*d+j] / k.Alpha[j]
			}
		}
		return out
	}
	// auto orders the points only: vecchiaSets chooses the sets.
	m0 := int(c.Vecchia)
	if c.vecchiaAuto {
		m0 = 1
	}
	if c.Progress {
		e.rep.note("ordering %d training points (%s) and finding %d neighbours each", n, order, m0)
	}
	s, err := vecchia.NewStructure(metric(train.x, n), n, d, vecchia.Options{M: m0, Order: order, Threads: c.Threads})
	if err != nil {
		return nil, nil, sel, err
	}
	if err := e.ctx.Err(); err != nil {
		return nil, nil, sel, err
	}
	if rep := s.Duplicates(); rep > 0 {
		e.rep.warnf("%d of %d training points repeat an earlier point's features: each shares that point's latent value, with a label of its own (docs/vecchia.md)", rep, n)
	}
	s, sel, err = c.vecchiaSets(e, s, k, train, meta)
	if err != nil {
		return nil, nil, sel, err
	}
	if err := e.ctx.Err(); err != nil {
		return nil, nil, sel, err
	}
	var tnb [][]int32
	if test != nil {
		tnb = s.TestSets(k, train.x, test.x, metric(test.x, test.rows), test.rows, c.VecchiaNugget, sel, c.Threads)
	}
	return s, tnb, sel, nil
}

// vecchiaTwo is the two-class Vecchia stream of structure s with test
// sets tnb.
func (c *kernelCmd) vecchiaTwo(s *vecchia.Structure, tnb [][]int32, train, test *features, k *gp.Kernel, meta map[string]string) (*format.VecchiaStream, error) {
	var tx []float64
	if test != nil {
		tx = test.x
	}
	m, err := vecchia.NewClassifier(s, k, train.x, train.y, c.VecchiaNugget, tx, tnb, c.Threads)
	if err != nil {
		return nil, &dataError{fmt.Sprintf("%s: %v", train.source, err)}
	}
	return vecchiaStream(s, m, train, test, meta), nil
}

// vecchiaStream is the stream of model m: its training rows in the
// model's order, then the test rows, with their labels and ids.
func vecchiaStream(s *vecchia.Structure, m *vecchia.Model, train, test *features, meta map[string]string) *format.VecchiaStream {
	n, tests := train.rows, m.T
	st := &format.VecchiaStream{Model: m, Row: make([]int, 0, n+tests), Y: make([]float64, 0, n+tests), Meta: meta}
	if train.id != nil || (test != nil && test.id != nil) {
		st.ID = make([]string, 0, n+tests)
	}
	for _, r := range s.Perm {
		st.Row = append(st.Row, r)
		st.Y = append(st.Y, train.y[r])
		if st.ID != nil {
			st.ID = append(st.ID, train.id[r])
		}
	}
	for j := range tests {
		st.Row = append(st.Row, j)
		y := math.NaN()
		if test.y != nil {
			y = test.y[j]
		}
		st.Y = append(st.Y, y)
		if st.ID != nil {
			id := ""
			if test.id != nil {
				id = test.id[j]
			}
			st.ID = append(st.ID, id)
		}
	}
	return st
}

// vecchiaRows is the Vecchia stream as a table (--format csv): a row per
// variable, its neighbours and coefficients space-separated.
func vecchiaRows(s *format.VecchiaStream) *format.Table {
	m := s.Model
	cols := []format.Column{{Name: "role"}, {Name: "row"}, {Name: "id"}, {Name: "y"}, {Name: "cond_var"}, {Name: "lower"}, {Name: "upper"}, {Name: "nbr"}, {Name: "coef"}}
	t := &format.Table{Cols: cols}
	for i := range m.N + m.T {
		role, start, nbr, coef, cv, lo, hi := "train", m.Start, m.Nbr, m.Coef, m.CondVar, 0.0, math.Inf(1)
		k := i
		if i >= m.N {
			role, start, nbr, coef, cv, k = "test", m.TStart, m.TNbr, m.TCoef, m.TCondVar, i-m.N
		} else {
			lo, hi = m.Lower[i], m.Upper[i]
		}
		var ns, cs []string
		for q := start[k]; q < start[k+1]; q++ {
			ns = append(ns, strconv.Itoa(int(nbr[q])))
			cs = append(cs, fmtFloat(coef[q]))
		}
		id := ""
		if s.ID != nil {
			id = s.ID[i]
		}
		vals := []string{role, strconv.Itoa(s.Row[i]), id, fmtFloat(s.Y[i]), fmtFloat(cv[k]), fmtFloat(lo), fmtFloat(hi), strings.Join(ns, " "), strings.Join(cs, " ")}
		for c := range t.Cols {
			t.Cols[c].Str = append(t.Cols[c].Str, vals[c])
		}
	}
	return t
}
