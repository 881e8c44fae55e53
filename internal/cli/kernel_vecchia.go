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

	"github.com/alecthomas/kong"
)

// vecchiaFlags are gpc-kernel's --vecchia and its settings.
type vecchiaFlags struct {
	Vecchia       neighbours `placeholder:"m" default:"0" help:"Write a Vecchia model (gpc.vecchia/1) instead of the N x N covariance: each training point conditioned on its m nearest earlier points (m neighbours) in a maxmin order, each test point on its m nearest training points; O(N m) memory, O(m) time per particle and point, for N up to millions (docs/vecchia.md); worth it from about 10^4 training points, where the dense path takes minutes and GBs. auto: m = 50, within 1 nat of the dense model's log marginal likelihood and 0.003 of its posteriors on the 2-D tables at N = 1000 to 10^4, at 1.4-1.6 times the time of m = 30 (30: within 1.5 nats and 0.005). Many features with length scales long beside the points' spacing need far more, or the dense path: on 36-feature satellite data no m up to 100 comes within a nat, and gpc-train warns. At most 254; 0: the dense covariance."`
	VecchiaOrder  string     `enum:"maxmin,given" default:"maxmin" help:"With --vecchia: the order of the training points: maxmin (each next point the farthest from those before it: coarse to fine) or given (the file's)."`
	VecchiaNugget float64    `default:"1e-4" help:"With --vecchia: the part of the probit's noise variance (1) moved into the latent process, so that the neighbours' covariances stay well conditioned; the dense model is the same for any value in (0, 1)."`

	// vecchiaAuto records that --vecchia auto chose Vecchia's m.
	vecchiaAuto bool
}

// neighbours is --vecchia's value: the neighbours per point, 0 for the
// dense path, or autoNeighbours for auto, until validateVecchia resolves
// it.
type neighbours int

// autoNeighbours is --vecchia auto before validateVecchia chooses its m.
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
		return fmt.Errorf("%q is not a count of neighbours (a whole number, auto for %d, 0 for the dense path)", s, vecchia.DefaultM)
	}
	*v = neighbours(m)
	return nil
}

// validateVecchia resolves --vecchia auto to the m it chooses and checks
// the flags.
func (v *vecchiaFlags) validateVecchia() error {
	if v.Vecchia == autoNeighbours {
		v.Vecchia, v.vecchiaAuto = vecchia.DefaultM, true
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
		return usagef("--vecchia auto: it conditions each point on m = %d neighbours, and the training data have %d points, each with at most the %d before it: drop --vecchia (the dense path is exact, and fast at this size), or give --vecchia below %d", v.Vecchia, n, n-1, n)
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
	s, tnb, err := c.vecchiaStructure(e, train, test, k)
	if err != nil {
		return err
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
	meta[format.KeyVecchiaM] = strconv.Itoa(int(c.Vecchia))
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
		{Name: "vecchia", Int: []int64{int64(c.Vecchia)}},
		{Name: "order", Str: []string{order.String()}},
		{Name: "repeats", Int: []int64{int64(s.Duplicates())}},
		{Name: "fingerprint", Str: []string{vecchiaFingerprint(st)}},
	}}
	if labels.classes != nil {
		t.Cols = append(t.Cols, format.Column{Name: "classes", Str: []string{strings.Join(labels.classes, ",")}})
	}
	return format.WriteTable(e.stdout, t, format.Text, 0, mem)
}

// vecchiaStructure orders the training points and finds their neighbours
// and the test points'.
func (c *kernelCmd) vecchiaStructure(e *env, train, test *features, k *gp.Kernel) (*vecchia.Structure, [][]int32, error) {
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
	if c.Progress {
		e.rep.note("ordering %d training points (%s) and finding %d neighbours each", n, order, c.Vecchia)
	}
	s, err := vecchia.NewStructure(metric(train.x, n), n, d, vecchia.Options{M: int(c.Vecchia), Order: order, Threads: c.Threads})
	if err != nil {
		return nil, nil, err
	}
	if err := e.ctx.Err(); err != nil {
		return nil, nil, err
	}
	if rep := s.Duplicates(); rep > 0 {
		e.rep.warnf("%d of %d training points repeat an earlier point's features: each shares that point's latent value, with a label of its own (docs/vecchia.md)", rep, n)
	}
	var tnb [][]int32
	if test != nil {
		tnb = s.TestNeighbours(metric(test.x, test.rows), test.rows, int(c.Vecchia), c.Threads)
	}
	if c.Progress {
		e.rep.note("the conditionals of %d training and %d test points", n, len(tnb))
	}
	return s, tnb, nil
}

// vecchiaTwo is the two-class Vecchia stream of structure s with test
// neighbours tnb.
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
