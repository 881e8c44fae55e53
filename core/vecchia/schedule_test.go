package vecchia

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"testing"

	"github.com/gpc-mc/gpc/core"
)

// The sequential kernels that schedule.go's level-scheduled ones replace,
// row by row as they were: the parallel kernels must give their bits.

func (t *tri) refMulTo(dst, x []float64) {
	for k := range t.n {
		if t.dup[k] {
			dst[k] = 0
			continue
		}
		s := t.diag[k] * x[k]
		for q := t.start[k]; q < t.start[k+1]; q++ {
			s += t.off[q] * x[t.nbr[q]]
		}
		dst[k] = s
	}
}

// mulTransTo sets dst = T' y.
func (t *tri) refMulTransTo(dst, y []float64) {
	clear(dst)
	for k := range t.n {
		if t.dup[k] {
			continue
		}
		yk := y[k]
		dst[k] += t.diag[k] * yk
		for q := t.start[k]; q < t.start[k+1]; q++ {
			dst[t.nbr[q]] += t.off[q] * yk
		}
	}
}

// solveTo sets dst = T^-1 y (forward substitution; repeated points' rows
// 0).
func (t *tri) refSolveTo(dst, y []float64) {
	for k := range t.n {
		if t.dup[k] {
			dst[k] = 0
			continue
		}
		s := y[k]
		for q := t.start[k]; q < t.start[k+1]; q++ {
			s -= t.off[q] * dst[t.nbr[q]]
		}
		dst[k] = s / t.diag[k]
	}
}

// backSubstitute runs solveTransTo's substitution in place on y for rows
// n-1 down to k0 only: rows from k0 on then hold the solution's, and rows
// below k0 what is left of y's linear term once the later rows are
// eliminated.
func (t *tri) refBackSubstitute(y []float64, k0 int) {
	for k := t.n - 1; k >= k0; k-- {
		if t.dup[k] {
			y[k] = 0
			continue
		}
		v := y[k] / t.diag[k]
		y[k] = v
		for q := t.start[k]; q < t.start[k+1]; q++ {
			y[t.nbr[q]] -= t.off[q] * v
		}
	}
}

// solveTransTo sets dst = T'^-1 y (back substitution, row by row from the
// last, each scattering into its columns). y is not modified.
func (t *tri) refSolveTransTo(dst, y []float64) {
	copy(dst, y)
	for k := t.n - 1; k >= 0; k-- {
		if t.dup[k] {
			dst[k] = 0
			continue
		}
		v := dst[k] / t.diag[k]
		dst[k] = v
		for q := t.start[k]; q < t.start[k+1]; q++ {
			dst[t.nbr[q]] -= t.off[q] * v
		}
	}
}

// sameBits reports whether a and b hold the same bits.
func sameBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// scheduleModel is a model with a dense block's worth of coarse rows and
// repeated points, for the kernels' tests.
func scheduleModel(t *testing.T) *Model {
	m := classifier2D(t, 3000, 12)
	return m
}

// TestScheduledKernels checks the level-scheduled products and solves
// (the substitutions both by levels and row by row) against the
// sequential ones, bit for bit, and the factorisation across
// thread counts, bit for bit, on 1 to 4 threads, on A's pattern and on a
// hybrid pattern with a dense block; the factor's T'T against the matrix
// on its pattern is TestIC0's.
func TestScheduledKernels(t *testing.T) {
	defer func(v int) { minParallel = v }(minParallel)
	defer func(v int) { levelSolveThreads = v }(levelSolveThreads)
	minParallel = 2
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	m, _ := oneFactorModelSmall(600, 5, []int{7, 300, 599}, 200)
	for _, mm := range []*Model{scheduleModel(t), m} {
		n := mm.N
		a := newTri(mm)
		a.priorFactor(mm)
		pc := newPairCache(a)
		if pc == nil {
			t.Fatal("no pair cache")
		}
		r := rand.New(rand.NewPCG(1, 2))
		x, w := make([]float64, n), make([]float64, n)
		for k := range x {
			x[k], w[k] = r.NormFloat64(), 0.5*r.Float64()
		}
		for _, block := range []int{0, 40} {
			h := hybridPattern(mm, a, block)
			h.pc = pc
			pd, po := make([]float64, n), make([]float64, len(h.nbr))
			h.assemble(a, w, pd, po)
			var wantD, wantO, wantLD, wantLO []float64
			for procs := 1; procs <= 4; procs++ {
				runtime.GOMAXPROCS(procs)
				h.sc = nil
				if _, err := h.factorShifted(pd, po, 0, n, 0); err != nil {
					t.Fatalf("block %d, %d threads: %v", block, procs, err)
				}
				if procs == 1 {
					wantD, wantO = slices.Clone(h.diag), slices.Clone(h.off)
				} else if !sameBits(h.diag, wantD) || !sameBits(h.off, wantO) {
					t.Errorf("block %d, %d threads: the factor differs from one thread's", block, procs)
				}
				if block > 0 {
					if _, err := h.factorShifted(pd, po, block, n, 0); err != nil {
						t.Fatal(err)
					}
					if procs == 1 {
						wantLD, wantLO = slices.Clone(h.diag), slices.Clone(h.off)
					} else if !sameBits(h.diag, wantLD) || !sameBits(h.off, wantLO) {
						t.Errorf("block %d, %d threads: the later rows' factor differs from one thread's", block, procs)
					}
					if _, err := h.factorShifted(pd, po, 0, n, 0); err != nil {
						t.Fatal(err)
					}
				}
				for _, tr := range []*tri{a, h} {
					got, want := make([]float64, n), make([]float64, n)
					for _, lst := range []int{1, 1 << 20} {
						levelSolveThreads = lst
						for name, op := range map[string][2]func(){
							"mulTo":        {func() { tr.mulTo(got, x) }, func() { tr.refMulTo(want, x) }},
							"mulTransTo":   {func() { tr.mulTransTo(got, x) }, func() { tr.refMulTransTo(want, x) }},
							"solveTo":      {func() { tr.solveTo(got, x) }, func() { tr.refSolveTo(want, x) }},
							"solveTransTo": {func() { tr.solveTransTo(got, x) }, func() { tr.refSolveTransTo(want, x) }},
							"backSubstitute": {func() { copy(got, x); tr.backSubstitute(got, block) },
								func() { copy(want, x); tr.refBackSubstitute(want, block) }},
						} {
							op[0]()
							op[1]()
							if !sameBits(got, want) {
								t.Errorf("block %d, %d threads, %s (levels from %d threads): differs from the sequential kernel", block, procs, name, lst)
							}
						}
					}
					// solveManyTo: three and eight interleaved sides, each
					// the bits of its own solve (solveManyTo of one side),
					// and that the sequential kernel's to rounding.
					for _, r := range []int{3, 8} {
						ys, xs := make([]float64, n*r), make([]float64, n*r)
						for k := range n {
							for j := range r {
								ys[k*r+j] = x[k] * float64(j+1)
							}
						}
						tr.solveManyTo(xs, ys, r)
						in := slices.Clone(ys)
						if tr.solveManyTo(in, in, r); !sameBits(in, xs) {
							t.Errorf("block %d, %d threads, solveManyTo: %d sides in place differ", block, procs, r)
						}
						for j := range r {
							side := make([]float64, n)
							for k := range n {
								side[k] = ys[k*r+j]
							}
							tr.solveManyTo(want, side, 1)
							for k := range n {
								got[k] = xs[k*r+j]
							}
							if !sameBits(got, want) {
								t.Errorf("block %d, %d threads, solveManyTo: side %d of %d differs from its own solve", block, procs, j, r)
							}
							tr.refSolveTo(want, side)
							for k := range n {
								if d := math.Abs(got[k] - want[k]); !(d <= 1e-11*(1+math.Abs(want[k]))) {
									t.Fatalf("block %d, %d threads, solveManyTo: side %d of %d, row %d: %v against the sequential kernel's %v", block, procs, j, r, k, got[k], want[k])
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestPrepareThreads checks that the preparation does not depend on the
// thread count, bit for bit (the block's correction's batches of products
// on as many threads as there are).
func TestPrepareThreads(t *testing.T) {
	defer func(v int) { minParallel = v }(minParallel)
	defer func(c float64) { correctMin = c }(correctMin)
	minParallel, correctMin = 16, 0
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	m, _ := oneFactorModelSmall(3000, 5, []int{7, 300, 2999}, 100)
	var want PreparedParts
	for procs := 1; procs <= 3; procs++ {
		runtime.GOMAXPROCS(procs)
		p, err := Prepare(context.Background(), m, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := p.Parts()
		if got.Block == 0 || got.Block > m.N/2 || !p.BlockCorrected {
			t.Fatalf("a dense block of %d rows of %d, corrected %v: the test wants many rows after it, and the block's marginal corrected (correctBlock)", got.Block, m.N, p.BlockCorrected)
		}
		if procs == 1 {
			want = got
			continue
		}
		if got.Block != want.Block || !sameBits(got.Diag, want.Diag) || !sameBits(got.Off, want.Off) || !sameBits(got.Eta, want.Eta) ||
			!sameBits(got.Tau, want.Tau) || !sameBits(got.Nu, want.Nu) || got.EP != want.EP || got.MeanSteps != want.MeanSteps {
			t.Errorf("%d threads: the preparation differs from one thread's", procs)
		}
	}
}

// refEliminate is the sequential factorisation eliminateLevels replaced,
// for BenchmarkEliminate.
func (t *tri) refEliminate(lo, hi int) bool {
	d := t.diag
	for k := hi - 1; k >= lo; k-- {
		if t.dup[k] {
			continue
		}
		if !(d[k] > 0) || math.IsInf(d[k], 1) {
			return false
		}
		dk := math.Sqrt(d[k])
		d[k] = dk
		s, e := t.start[k], t.start[k+1]
		for q := s; q < e; q++ {
			t.off[q] /= dk
		}
		for q := s; q < e; q++ {
			d[t.nbr[q]] -= t.off[q] * t.off[q]
		}
		if k < t.full {
			// A dense row: its outer product, row by row of the block.
			row := t.off[s:e]
			for ip, v := range row {
				p := int(t.nbr[s+ip])
				core.Axpy(t.off[t.start[p]:t.start[p]+ip], -v, row[:ip])
			}
			continue
		}
		if c := t.pc; c != nil {
			cols := t.nbr[s:e]
			for _, r := range c.row(k) {
				if r.ao == pairDiag {
					continue
				}
				p := int(cols[r.ao])
				if p < t.full {
					continue
				}
				t.off[t.start[p]+int(r.y)] -= t.off[s+int(r.ao)] * t.off[s+int(r.bo)]
			}
			for ai, p := range cols {
				if int(p) >= t.full {
					break
				}
				ps := t.start[p]
				for x, q := range cols[:ai] {
					t.off[ps+int(t.rank[q])] -= t.off[s+ai] * t.off[s+x]
				}
			}
			continue
		}
		t.buf = t.pairs(k, t, t.buf)
		for _, r := range t.buf {
			if r.ao >= 0 {
				t.off[r.pos] -= t.off[r.ao] * t.off[r.bo]
			}
		}
	}
	return true
}

// BenchmarkEliminate times the incomplete factorisation of the two-class
// model's prior plus sites: the sequential one it replaced (seq) and the
// level-scheduled one on the threads of -cpu (levels), at 30000 points or
// GPC_BENCH_N:
//
//	GPC_BENCH_N=1000000 go test ./core/vecchia -run '^$' -bench Eliminate/impl=levels -count 5
func BenchmarkEliminate(b *testing.B) {
	n0 := 30000
	if os.Getenv("GPC_BENCH_N") != "" {
		n0 = benchN()
	}
	m := classifier2D(b, n0, 30)
	n := m.N
	a := newTri(m)
	a.priorFactor(m)
	pc := newPairCache(a)
	h := hybridPattern(m, a, 0)
	h.pc = pc
	w := make([]float64, n)
	for k := range w {
		w[k] = 0.3
	}
	pd, po := make([]float64, n), make([]float64, len(h.nbr))
	h.assemble(a, w, pd, po)
	b.Run("impl=seq", func(b *testing.B) {
		for b.Loop() {
			copy(h.diag, pd)
			copy(h.off, po)
			h.refEliminate(0, n)
		}
	})
	b.Run("impl=levels", func(b *testing.B) {
		for b.Loop() {
			copy(h.diag, pd)
			copy(h.off, po)
			h.eliminate(0, n)
		}
	})
}

// TestTranspose checks the pattern's transpose (tri.transpose, built by
// ranges of rows on every thread) against the entries sorted by column
// and then row, on 1 to 4 threads, on a model with repeated points (whose
// rows are left out) and one without.
func TestTranspose(t *testing.T) {
	defer func(v int) { minParallel = v }(minParallel)
	minParallel = 2
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	m, _ := oneFactorModelSmall(600, 5, []int{7, 300, 599}, 200)
	for _, mm := range []*Model{scheduleModel(t), m} {
		a := newTri(mm)
		type entry struct{ p, k, q int32 }
		var want []entry
		for k := range a.n {
			if a.dup[k] {
				continue
			}
			for q := a.start[k]; q < a.start[k+1]; q++ {
				want = append(want, entry{a.nbr[q], int32(k), int32(q)})
			}
		}
		slices.SortFunc(want, func(x, y entry) int {
			if x.p != y.p {
				return int(x.p - y.p)
			}
			return int(x.k - y.k)
		})
		for threads := 1; threads <= 4; threads++ {
			runtime.GOMAXPROCS(threads)
			start, row, pos := a.transpose()
			if len(start) != a.n+1 || len(row) != len(want) || len(pos) != len(want) {
				t.Fatalf("%d threads: %d column starts, %d entries, want %d and %d", threads, len(start), len(row), a.n+1, len(want))
			}
			for i, e := range want {
				if row[i] != e.k || pos[i] != e.q {
					t.Fatalf("%d threads: entry %d is row %d at %d, want row %d at %d", threads, i, row[i], pos[i], e.k, e.q)
				}
			}
			for p := range a.n {
				n := 0
				for _, e := range want {
					if int(e.p) == p {
						n++
					}
				}
				if start[p+1]-start[p] != n {
					t.Fatalf("%d threads: column %d has %d entries, want %d", threads, p, start[p+1]-start[p], n)
				}
			}
		}
	}
}

// TestEliminateBlock checks eliminate's panels of the dense block's rows
// (eliminateBlock) against the block's row-at-a-time factorisation
// (refEliminate's) bit for bit: the whole factor (the levels, then the block), the block
// alone after the later rows, a part of the block (lo inside it), with
// and without the pair cache, blocks whose regular rows are and are not a
// multiple of the panel's, and a model with repeated points in the block.
func TestEliminateBlock(t *testing.T) {
	rep, _ := oneFactorModelSmall(600, 5, []int{7, 30, 31, 300, 599}, 200)
	for _, mc := range []struct {
		name string
		m    *Model
	}{{"classifier", scheduleModel(t)}, {"repeats", rep}} {
		m := mc.m
		n := m.N
		a := newTri(m)
		a.priorFactor(m)
		pc := newPairCache(a)
		for _, k0 := range []int{1, 9, 64, 203} {
			for _, cached := range []bool{true, false} {
				h := hybridPattern(m, a, k0)
				if cached {
					h.pc = pc
				}
				r := rand.New(rand.NewPCG(uint64(k0), 3))
				w := make([]float64, n)
				for k := range w {
					w[k] = 0.5 + r.Float64()
				}
				pd, po := make([]float64, n), make([]float64, len(h.nbr))
				h.assemble(a, w, pd, po)
				run := func(f func(lo, hi int) bool, parts [][2]int) ([]float64, []float64) {
					copy(h.diag, pd)
					copy(h.off, po)
					for _, p := range parts {
						if !f(p[0], p[1]) {
							t.Fatalf("%s, block %d: breakdown on rows %d to %d", mc.name, k0, p[0], p[1])
						}
					}
					return slices.Clone(h.diag), slices.Clone(h.off)
				}
				for _, parts := range [][][2]int{{{0, n}}, {{k0, n}, {0, k0}}, {{k0, n}, {k0 / 2, k0}, {0, k0 / 2}}} {
					gd, go_ := run(h.eliminate, parts)
					// The rows after the block as eliminate takes them
					// (by levels with the cache), the block's a row at a
					// time.
					wd, wo := run(func(lo, hi int) bool {
						if hi > k0 && !h.eliminate(max(lo, k0), hi) {
							return false
						}
						return lo >= k0 || h.refEliminate(lo, min(hi, k0))
					}, parts)
					if !sameBits(gd, wd) || !sameBits(go_, wo) {
						t.Errorf("%s, block %d, cached %v, parts %v: the factor differs from the row-at-a-time one", mc.name, k0, cached, parts)
					}
				}
			}
		}
	}
}

// BenchmarkDenseBlock times the factorisation of a dense block of 2000
// rows whose later rows are factored already (as EP's rounds factor their
// block), on the two-class model at 30000 points or GPC_BENCH_N: the
// panels (eliminate) against a row at a time (refEliminate); and the
// factored block's marginals.
//
//	go test ./core/vecchia -run '^$' -bench DenseBlock -count 5
func BenchmarkDenseBlock(b *testing.B) {
	n0 := 30000
	if os.Getenv("GPC_BENCH_N") != "" {
		n0 = benchN()
	}
	m := classifier2D(b, n0, 30)
	n, k0 := m.N, 2000
	a := newTri(m)
	a.priorFactor(m)
	h := hybridPattern(m, a, k0)
	h.pc = newPairCache(a)
	w := make([]float64, n)
	for k := range w {
		w[k] = 0.3
	}
	pd, po := make([]float64, n), make([]float64, len(h.nbr))
	h.assemble(a, w, pd, po)
	copy(h.diag, pd)
	copy(h.off, po)
	if !h.eliminate(k0, n) {
		b.Fatal("the rows after the block break down")
	}
	d0, o0 := slices.Clone(h.diag), slices.Clone(h.off)
	for _, impl := range []struct {
		name string
		f    func(lo, hi int) bool
	}{{"panels", h.eliminate}, {"rows", h.refEliminate}} {
		b.Run("impl="+impl.name, func(b *testing.B) {
			for b.Loop() {
				copy(h.diag, d0)
				copy(h.off[:h.start[k0]], o0)
				if !impl.f(0, k0) {
					b.Fatal("the block breaks down")
				}
			}
		})
	}
	// The factored block's means and variances (EP's block sweeps).
	b.Run("impl=marginals", func(b *testing.B) {
		blk := newDenseBlock(h, k0)
		for b.Loop() {
			blk.marginals(w, w)
		}
	})
}

// TestBlockMarginalsPanels checks the dense block's variances, whose
// columns of L^-1 go marginalPanel at a time (denseBlock.marginals), bit
// for bit against a column at a time (Axpy down each column, the squares
// summed in column order), on 1 and 2 threads, for blocks whose regular
// rows are and are not a multiple of the panel, with repeated points in
// the block.
func TestBlockMarginalsPanels(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	rep, _ := oneFactorModelSmall(600, 5, []int{7, 30, 31, 300, 599}, 200)
	for _, m := range []*Model{scheduleModel(t), rep} {
		n := m.N
		a := newTri(m)
		a.priorFactor(m)
		for _, k0 := range []int{1, 16, 37, 203} {
			h := hybridPattern(m, a, k0)
			r := rand.New(rand.NewPCG(uint64(k0), 9))
			w, nu, hh := make([]float64, n), make([]float64, n), make([]float64, n)
			for k := range w {
				w[k], nu[k], hh[k] = 0.5+r.Float64(), r.NormFloat64(), r.NormFloat64()
			}
			pd, po := make([]float64, n), make([]float64, len(h.nbr))
			h.assemble(a, w, pd, po)
			if _, err := h.factorShifted(pd, po, 0, n, maxShift); err != nil {
				t.Fatalf("block %d: %v", k0, err)
			}
			b := newDenseBlock(h, k0)
			for _, procs := range []int{1, 2} {
				runtime.GOMAXPROCS(procs)
				_, vars := b.marginals(hh, nu)
				nr := len(b.reg)
				want := make([]float64, nr)
				u := make([]float64, nr)
				for c := range nr {
					clear(u)
					u[c] = 1
					for i := c; i < nr; i++ {
						u[i] /= h.diag[b.reg[i]]
						if i+1 < nr {
							core.Axpy(u[i+1:], -u[i], b.ut[i*nr+i+1:i*nr+nr])
						}
					}
					for i := c; i < nr; i++ {
						want[i] += u[i] * u[i]
					}
				}
				if !sameBits(vars, want) {
					t.Errorf("block %d, %d threads: the variances differ from a column at a time's", k0, procs)
				}
			}
		}
	}
}
