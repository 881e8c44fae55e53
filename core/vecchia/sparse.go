package vecchia

import (
	"errors"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/gpc-mc/gpc/core"
)

// tri is a lower-triangular matrix with the sparsity of a Vecchia model's
// inverse Cholesky factor A: row k holds its diagonal and, for a regular
// row, entries in the columns of its conditioning set c(k); a repeated
// point's row is empty (its variable is the point it repeats).
type tri struct {
	n     int
	start []int   // the model's offsets
	nbr   []int32 // the model's conditioning sets
	dup   []bool  // dup[k]: row k is a repeated point's
	diag  []float64
	off   []float64 // parallel to nbr
	// Rows below full hold every earlier regular column, in order: row
	// p's entry for column q is at start[p] + rank[q], rank[q] the number
	// of regular rows before q.
	full int
	rank []int32
	slot []int32    // pairs' scatter array (slots)
	buf  []pairRef  // pairs' list, reused
	pc   *pairCache // the pattern's pairs, computed once (nil: computed row by row)
	// A'A on this pattern for aaOf's A (assemble).
	aaOf     *tri
	aaD, aaO []float64
	sc       *schedule // the level schedule (sched), built at first use
	// complete: every row is dense (full = n) and the factorisations run
	// on a dense copy (eliminateDense); dw is its scratch.
	complete bool
	dw       []float64
}

// newTri returns the pattern of model m with zero values.
func newTri(m *Model) *tri {
	t := &tri{n: m.N, start: m.Start, nbr: m.Nbr, dup: make([]bool, m.N), diag: make([]float64, m.N), off: make([]float64, len(m.Nbr))}
	for k := range m.N {
		t.dup[k] = m.CondVar[k] == 0
	}
	return t
}

// priorFactor sets t to the model's A = D^-1/2 (I - B).
func (t *tri) priorFactor(m *Model) {
	t.stale()
	for k := range t.n {
		if t.dup[k] {
			continue
		}
		s := 1 / math.Sqrt(m.CondVar[k])
		t.diag[k] = s
		for q := m.Start[k]; q < m.Start[k+1]; q++ {
			t.off[q] = -m.Coef[q] * s
		}
	}
}

// mulTo sets dst = T x (repeated points' rows 0), the rows at once on
// every core.
func (t *tri) mulTo(dst, x []float64) {
	parallelFor(0, t.n, func(lo, hi int) {
		for k := lo; k < hi; k++ {
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
	})
}

// mulTransTo sets dst = T' y: each dst[p] gathers its column's entries
// (tri.columns), the diagonal's first and then the rows' in increasing
// order, the rows at once on every core.
func (t *tri) mulTransTo(dst, y []float64) {
	sc, co := t.sched(), t.columns()
	parallelFor(0, t.n, func(lo, hi int) {
		for p := lo; p < hi; p++ {
			if t.dup[p] {
				dst[p] = 0
				continue
			}
			s := 0.0
			s += t.diag[p] * y[p]
			for q := sc.colStart[p]; q < sc.colStart[p+1]; q++ {
				s += co[q] * y[sc.colRow[q]]
			}
			dst[p] = s
		}
	})
}

// solveTo sets dst = T^-1 y (forward substitution; repeated points' rows
// 0): row by row on the calling goroutine below levelSolveThreads threads
// (serialSolves), else the rows of a forward level at once on every core,
// each row's arithmetic the same either way.
func (t *tri) solveTo(dst, y []float64) {
	if serialSolves() {
		for k := 0; k < t.n; k++ {
			if k+1 < t.n && t.forwardPairs(k) {
				dst[k], dst[k+1] = t.forwardPair(dst, y[k], y[k+1], k)
				k++
				continue
			}
			dst[k] = t.forwardRow(dst, y[k], k)
		}
		return
	}
	sc := t.sched()
	levels(sc.fwd, sc.fwdStart, func(rows []int32) {
		for _, k := range rows {
			dst[k] = t.forwardRow(dst, y[k], int(k))
		}
	})
}

// forwardRow returns row k's value of the forward substitution T^-1 (a
// repeated point's 0): s (its right-hand side) less its pattern's entries
// times their rows' values x, over its diagonal.
func (t *tri) forwardRow(x []float64, s float64, k int) float64 {
	if t.dup[k] {
		return 0
	}
	for q := t.start[k]; q < t.start[k+1]; q++ {
		s -= t.off[q] * x[t.nbr[q]]
	}
	return s / t.diag[k]
}

// forwardPairs reports whether rows k and k+1, both regular, can be
// substituted side by side (forwardPair): row k+1 does not read row k.
func (t *tri) forwardPairs(k int) bool {
	if t.dup[k] || t.dup[k+1] {
		return false
	}
	a, e := t.start[k+1], t.start[k+2]
	return a == e || int(t.nbr[e-1]) != k // a row's columns increase
}

// forwardPair returns forwardRow's values of rows k and k+1
// (forwardPairs), s0 and s1 their right-hand sides: the two sums side by
// side, each in its own row's order (forwardRow's bits), so that the
// serial substitution has two chains of dependent subtractions in flight
// instead of one.
func (t *tri) forwardPair(x []float64, s0, s1 float64, k int) (float64, float64) {
	a0, a1, e1 := t.start[k], t.start[k+1], t.start[k+2]
	o0, n0 := t.off[a0:a1], t.nbr[a0:a1]
	o1, n1 := t.off[a1:e1], t.nbr[a1:e1]
	c := min(len(n0), len(n1))
	n0, n1 = n0[:len(o0)], n1[:len(o1)]
	for q := range c {
		s0 -= o0[q] * x[n0[q]]
		s1 -= o1[q] * x[n1[q]]
	}
	for q := c; q < len(n0); q++ {
		s0 -= o0[q] * x[n0[q]]
	}
	for q := c; q < len(n1); q++ {
		s1 -= o1[q] * x[n1[q]]
	}
	return s0 / t.diag[k], s1 / t.diag[k+1]
}

// solveManyTo sets dst to T^-1 y for r right-hand sides at once,
// interleaved (y's value of row k for side j at k*r + j, dst's likewise),
// row by row on the calling goroutine: each entry of T and each
// neighbour's r values are read once for all the sides, a row's sides
// less the combination of its pattern's rows (core.Combine, whose vector
// path reads the rows side by side) over its diagonal. dst may be y (a
// row's values are read before they are written). A side's bits do not
// depend on r or on the other sides.
func (t *tri) solveManyTo(dst, y []float64, r int) {
	acc := make([]float64, r)
	var off []int64
	for k := range t.n {
		d := dst[k*r : (k+1)*r]
		if t.dup[k] {
			clear(d)
			continue
		}
		a, b := t.start[k], t.start[k+1]
		off = rowOffsets(off, t.nbr[a:b], r)
		clear(acc)
		core.Combine(acc, dst, off, t.off[a:b])
		dk := t.diag[k]
		for j, v := range y[k*r : (k+1)*r] {
			d[j] = (v - acc[j]) / dk
		}
	}
}

// rowOffsets returns, in buf's storage, the offsets of rows rows of width
// values each in an array that holds them one after the other: what
// core.Combine and the particles' steps read.
func rowOffsets(buf []int64, rows []int32, width int) []int64 {
	buf = slices.Grow(buf[:0], len(rows))[:len(rows)]
	for q, j := range rows {
		buf[q] = int64(j) * int64(width)
	}
	return buf
}

// prefetchRows asks for values lo to hi of the rows rows of x, stride
// values each, a row ahead of a pass whose reads of each row's
// neighbours' rows are scattered (forward, productBack): a
// hint that changes no value.
func prefetchRows(x []float32, rows []int32, stride, lo, hi int) {
	for _, p := range rows {
		o := stride * int(p)
		core.Prefetch(x[o+lo : o+hi])
	}
}

// backSubstitute runs solveTransTo's substitution in place on y for rows
// n-1 down to k0 only: rows from k0 on then hold the solution's, and rows
// below k0 what is left of y's linear term once the later rows are
// eliminated.
func (t *tri) backSubstitute(y []float64, k0 int) {
	sc, co := t.sched(), t.columns()
	if serialSolves() {
		for p := t.n - 1; p >= k0; p-- {
			y[p] = t.backRow(sc, co, y, y[p], p, k0)
		}
	} else {
		levels(sc.bwd, sc.bwdStart, func(rows []int32) {
			for _, p := range rows {
				if int(p) >= k0 {
					y[p] = t.backRow(sc, co, y, y[p], int(p), k0)
				}
			}
		})
	}
	parallelFor(0, k0, func(lo, hi int) {
		for p := lo; p < hi; p++ {
			if t.dup[p] {
				continue
			}
			s := y[p]
			for q := sc.colStart[p+1] - 1; q >= sc.colStart[p]; q-- {
				k := sc.colRow[q]
				if int(k) < k0 {
					break
				}
				s -= co[q] * y[k]
			}
			y[p] = s
		}
	})
}

// backRow returns row p's value of the back substitution T'^-1 (repeated
// points' 0): s (its linear term) less its column's entries co times the
// values x of the rows from k0 on, from the last row down, over its
// diagonal.
func (t *tri) backRow(sc *schedule, co, x []float64, s float64, p, k0 int) float64 {
	if t.dup[p] {
		return 0
	}
	for q := sc.colStart[p+1] - 1; q >= sc.colStart[p]; q-- {
		k := sc.colRow[q]
		if int(k) < k0 {
			break
		}
		s -= co[q] * x[k]
	}
	return s / t.diag[p]
}

// solveTransTo sets dst = T'^-1 y (back substitution: each row's value
// gathers its column's entries from the last row down), row by row from
// the last (serialSolves) or the rows of a backward level at once on
// every core. y is not modified.
func (t *tri) solveTransTo(dst, y []float64) {
	sc, co := t.sched(), t.columns()
	if serialSolves() {
		for p := t.n - 1; p >= 0; p-- {
			dst[p] = t.backRow(sc, co, dst, y[p], p, 0)
		}
		return
	}
	levels(sc.bwd, sc.bwdStart, func(rows []int32) {
		for _, p := range rows {
			dst[p] = t.backRow(sc, co, dst, y[p], int(p), 0)
		}
	})
}

// pairRef is a pair (p, q) of entries of a row: ao and bo are the entries'
// indices in the row's t.off (ao -1 for the diagonal, p = the row), pos
// the index of entry (p, q) in the other pattern's off.
type pairRef struct{ ao, bo, pos int32 }

// pairs returns, in buf's storage, the pairs (p, q) of entries of row i of
// t's pattern (its columns and i itself) with p > q and q a column of row
// p of the pattern of in. Row i's columns are marked in a scatter array,
// and each row p's pattern is walked once.
func (t *tri) pairs(i int, in *tri, buf []pairRef) []pairRef {
	return t.pairsWith(i, in, buf, t.slots())
}

// pairsWith is pairs with the scatter array slot (n entries, all -1, as
// it leaves them), so that several rows' pairs are found at once.
func (t *tri) pairsWith(i int, in *tri, buf []pairRef, slot []int32) []pairRef {
	buf = buf[:0]
	s, e := t.start[i], t.start[i+1]
	cols := t.nbr[s:e]
	for x, q := range cols {
		slot[q] = int32(x)
	}
	for ai := len(cols); ai >= 0; ai-- {
		p, aOff := i, int32(-1)
		if ai < len(cols) {
			p, aOff = int(cols[ai]), int32(s+ai)
		}
		if in.dup[p] {
			continue
		}
		if p < in.full {
			ps := int32(in.start[p])
			for x, q := range cols[:ai] {
				buf = append(buf, pairRef{aOff, int32(s + x), ps + in.rank[q]})
			}
			continue
		}
		ps := in.start[p]
		row := in.nbr[ps:in.start[p+1]]
		// Branch-free: every candidate is written, and the count grows
		// only for a column of row i below p (0 <= x < ai: a
		// misprediction per entry otherwise costs more than the walk).
		cnt := len(buf)
		buf = slices.Grow(buf, len(row))[:cnt+len(row)]
		lim := uint64(ai)
		for y, q := range row {
			x := slot[q]
			buf[cnt] = pairRef{aOff, int32(s) + x, int32(ps + y)}
			cnt += int((uint64(uint32(x)) - lim) >> 63)
		}
		buf = buf[:cnt]
	}
	for _, q := range cols {
		slot[q] = -1
	}
	return buf
}

// slots returns t's scatter array of n entries, all -1 between uses.
func (t *tri) slots() []int32 {
	if t.slot == nil {
		t.slot = make([]int32, t.n)
		for k := range t.slot {
			t.slot[k] = -1
		}
	}
	return t.slot
}

// ic0 sets t to the incomplete Cholesky factor, in reverse order, of
//
//	P = A'A + diag(w),
//
// A the lower-triangular factor a (the prior's), restricted to t's pattern
// (which holds a's): t'T approximates P (a lower-triangular t with t'T = P
// exactly is the reverse Cholesky factor, whose fill-in the pattern
// drops), so that exp(-|T x - eta|^2/2) is a Gaussian whose conditionals
// given the earlier variables are sparse. The reverse order eliminates the
// last (finest) variables first: for maxmin orderings the exact factor is
// nearly sparse in this pattern (Schaefer, Katzfuss and Owhadi 2021).
// Where a pivot is not positive the factorisation restarts with every
// diagonal entry of P raised by shift times itself, shift growing tenfold
// from 1e-6; it returns the shift used, or an error if even shift 1 fails.
// pd and po are scratch of the pattern's sizes.
//
// References: F. Schaefer, M. Katzfuss and H. Owhadi (2021), "Sparse
// Cholesky factorization by Kullback-Leibler minimization", SIAM J. Sci.
// Comput. 43:A2019-A2046, section 4 (incomplete Cholesky with noise);
// D. Zilber and M. Katzfuss (2021), "Vecchia-Laplace approximations of
// generalized Gaussian processes for big non-Gaussian spatial data", CSDA
// 153:107081.
func (t *tri) ic0(a *tri, w []float64, pd, po []float64) (float64, error) {
	t.assemble(a, w, pd, po)
	return t.factorShifted(pd, po, 0, t.n, maxShift)
}

// assemble sets pd (the diagonal) and po (the pattern's other entries) to
// P = A'A + diag(w) on t's pattern, which holds a's. A'A is computed once
// per pattern and kept (aa): Laplace's steps and EP's rounds assemble
// again only for new w (at N = 3 10^5 the products were a quarter of the
// preparation's time).
func (t *tri) assemble(a *tri, w []float64, pd, po []float64) {
	if t.aaOf != a {
		t.aaD, t.aaO = make([]float64, t.n), make([]float64, len(t.nbr))
		t.products(a, t.aaD, t.aaO)
		t.aaOf = a
	}
	copy(pd, t.aaD)
	copy(po, t.aaO)
	for k := range a.n {
		pd[k] += w[k]
	}
}

// productsFrom sets t's A'A (assemble's, for a) from src's, the products
// on a's own pattern (aaOf a: Laplace's preconditioner), where the rows
// from t's dense block on have a's pattern, as hybridPattern makes them:
// each entry of those rows gets the same terms in the same order of rows
// in either pattern (products), so it copies src's bits, and computes the
// block's rows alone, from the rows that reach them, row after row. At N
// = 10^6 (m = 30) it saves EP's first round a pass of the products (3 s
// on two cores). Where src does not fit (nil, of another A, or another
// pattern after the block) it leaves t to compute them (assemble).
func (t *tri) productsFrom(a, src *tri) {
	k0 := min(t.full, t.n)
	if src == nil || src.aaOf != a || src.n != t.n || t.complete {
		return
	}
	for p := k0; p < t.n; p++ {
		if !t.dup[p] && !slices.Equal(t.nbr[t.start[p]:t.start[p+1]], src.nbr[src.start[p]:src.start[p+1]]) {
			return
		}
	}
	pd, po := make([]float64, t.n), make([]float64, len(t.nbr))
	copy(pd[k0:], src.aaD[k0:])
	for p := k0; p < t.n; p++ {
		if !t.dup[p] {
			copy(po[t.start[p]:t.start[p+1]], src.aaO[src.start[p]:src.start[p+1]])
		}
	}
	// The block's rows: the terms of the rows before the block's end, and
	// then those of the later rows that reach the block (their first
	// neighbours: a row's pattern is in increasing order).
	t.productRows(a, pd, po, 0, k0)
	for i := k0; i < a.n; i++ {
		if a.dup[i] {
			continue
		}
		s, e := a.start[i], a.start[i+1]
		cols := a.nbr[s:e]
		for ai, p := range cols {
			if int(p) >= t.full {
				break
			}
			v := a.off[s+ai]
			pd[p] += v * v
			ps := t.start[p]
			for x, q := range cols[:ai] {
				po[ps+int(t.rank[q])] += v * a.off[s+x]
			}
		}
	}
	t.aaD, t.aaO, t.aaOf = pd, po, a
}

// products sets pd and po to A'A on t's pattern (assemble). With the
// cached pairs of a, the rows after the dense block run at once on every
// core, each thread adding the terms of the rows it owns (owner), row
// after row: each entry gets its terms in the order of the rows, which
// the dense block's rows, first, add on the calling goroutine (the same
// bits for any thread count).
func (t *tri) products(a *tri, pd, po []float64) {
	clear(pd)
	clear(po)
	c := t.pc
	if c == nil || c.a != a {
		t.productRows(a, pd, po, 0, a.n)
		return
	}
	k0 := min(t.full, a.n)
	t.productRows(a, pd, po, 0, k0)
	w := threads()
	team(w, func(me int) {
		for i := k0; i < a.n; i++ {
			if i+2 < a.n {
				c.prefetch(a, i+2)
			}
			if i+1 < a.n {
				t.prefetchTargets(pd, po, a.nbr[a.start[i+1]:a.start[i+2]], w, me)
			}
			if a.dup[i] {
				continue
			}
			s, e := a.start[i], a.start[i+1]
			cols := a.nbr[s:e]
			if owner(int32(i), w) == me {
				v := a.diag[i]
				pd[i] += v * v
				ps := t.start[i]
				for _, r := range c.diagBlock(i) {
					po[ps+int(r.y)] += v * a.off[s+int(r.bo)]
				}
			}
			for ai, p := range cols {
				if owner(p, w) != me {
					continue
				}
				v := a.off[s+ai]
				pd[p] += v * v
				ps := t.start[p]
				if int(p) < t.full {
					for x, q := range cols[:ai] {
						po[ps+int(t.rank[q])] += v * a.off[s+x]
					}
					continue
				}
				for _, r := range c.blockOf(i, ai) {
					po[ps+int(r.y)] += v * a.off[s+int(r.bo)]
				}
			}
		}
	})
}

// productRows adds the terms of A'A of a's rows [lo, hi) to pd and po (t's
// pattern), row after row.
func (t *tri) productRows(a *tri, pd, po []float64, lo, hi int) {
	for i := lo; i < hi; i++ {
		if a.dup[i] {
			continue
		}
		s, e := a.start[i], a.start[i+1]
		pd[i] += a.diag[i] * a.diag[i]
		for q := s; q < e; q++ {
			pd[a.nbr[q]] += a.off[q] * a.off[q]
		}
		if c := t.pc; c != nil && i >= t.full && c.a == a {
			// The cached pairs, p after the dense block; the block's
			// rows, full, by rank.
			cols := a.nbr[s:e]
			for _, r := range c.row(i) {
				p, av := i, a.diag[i]
				if r.ao != pairDiag {
					p, av = int(cols[r.ao]), a.off[s+int(r.ao)]
				}
				if p < t.full {
					continue
				}
				po[t.start[p]+int(r.y)] += av * a.off[s+int(r.bo)]
			}
			for ai, p := range cols {
				if int(p) >= t.full {
					break
				}
				ps := t.start[p]
				for x, q := range cols[:ai] {
					po[ps+int(t.rank[q])] += a.off[s+ai] * a.off[s+x]
				}
			}
			continue
		}
		t.buf = a.pairs(i, t, t.buf)
		for _, r := range t.buf {
			av := a.diag[i]
			if r.ao >= 0 {
				av = a.off[r.ao]
			}
			po[r.pos] += av * a.off[r.bo]
		}
	}
}

// factorShifted factors rows [lo, hi) of the pattern values pd, po (the
// rows from hi on already factored in t, their updates applied to pd and
// po), restarting with a growing diagonal shift where a pivot fails (see
// ic0), up to limit. pd and po are not modified.
func (t *tri) factorShifted(pd, po []float64, lo, hi int, limit float64) (float64, error) {
	t.stale()
	for shift := 0.0; ; {
		d := t.diag[:hi]
		for k := range d {
			d[k] = pd[k] * (1 + shift)
		}
		copy(t.off[:t.start[hi]], po[:t.start[hi]])
		if t.eliminate(lo, hi) {
			return shift, nil
		}
		switch {
		case shift == 0:
			shift = 1e-6
		case shift*10 > limit:
			return shift, errBreakdown
		default:
			shift *= 10
		}
	}
}

// maxShift is the largest diagonal shift of a factorisation whose
// quality only speeds up a solve or shapes EP's marginals (ic0).
const maxShift = 1.0

// errBreakdown: a factorisation failed at every shift up to its limit.
var errBreakdown = errors.New("vecchia: the incomplete Cholesky factorisation breaks down")

// eliminate factors rows hi-1 down to lo of t, whose diag and off hold the
// pattern's values (rows from hi on: the factor): each row's pivot and
// entries, then its outer product subtracted from the entries of the rows
// before it that the pattern holds. It reports false at a pivot that is not
// positive.
func (t *tri) eliminate(lo, hi int) bool {
	if t.complete {
		return t.eliminateDense(lo, hi)
	}
	if t.pc != nil && hi == t.n && lo <= t.full {
		return t.eliminateLevels(lo)
	}
	for k := hi - 1; k >= max(lo, t.full); k-- {
		if t.dup[k] {
			continue
		}
		if !t.pivot(k) {
			return false
		}
		s, e := t.start[k], t.start[k+1]
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
	return t.eliminateBlock(lo, min(hi, t.full))
}

// eliminateDense is eliminate on a complete pattern (every row dense): the
// regular rows below hi, copied into a dense square in reverse order (the
// reverse factor T'T = P is J L' J for the Cholesky factor J P J = L L', J
// the reversal), factored over rows hi-1 down to lo by
// core.PartialCholesky, whose trailing square is then the rows below lo
// with the eliminated rows' updates applied, and copied back. The copies
// run on every core, a row each; the factorisation's bits do not depend
// on the thread count.
func (t *tri) eliminateDense(lo, hi int) bool {
	hr, lr := 0, 0
	for k := range hi {
		if !t.dup[k] {
			hr++
			if k < lo {
				lr++
			}
		}
	}
	t.dw = slices.Grow(t.dw[:0], hr*hr)[:hr*hr]
	w := t.dw
	// Row k (rank r) is column i = hr-1-r of the reversed square; its
	// entry for an earlier column of rank q goes to row hr-1-q > i.
	parallelFor(0, hi, func(a, b int) {
		for k := a; k < b; k++ {
			if t.dup[k] {
				continue
			}
			r := int(t.rank[k])
			i := hr - 1 - r
			w[i*hr+i] = t.diag[k]
			row := t.off[t.start[k] : t.start[k]+r]
			for q, v := range row {
				w[(hr-1-q)*hr+i] = v
			}
		}
	})
	if core.PartialCholesky(w, hr, hr-lr, threads()) >= 0 {
		return false
	}
	parallelFor(0, hi, func(a, b int) {
		for k := a; k < b; k++ {
			if t.dup[k] {
				continue
			}
			r := int(t.rank[k])
			i := hr - 1 - r
			t.diag[k] = w[i*hr+i]
			row := t.off[t.start[k] : t.start[k]+r]
			for q := range row {
				row[q] = w[(hr-1-q)*hr+i]
			}
		}
	})
	return true
}

// eliminateBlock is eliminate's pass over the dense block's rows hi-1
// down to lo (hi at most t.full): each row's pivot, then its outer
// product (its entries divided by the pivot) subtracted from the block's
// rows before it. A dense row's entry of rank q is the block's regular
// row of rank q, and an earlier row's update by row k is an Axpy of row
// k's entries before its own rank. The rows go in panels of blockPanel
// regular rows: a panel's rows pivot and update the panel's later rows
// in turn, and then each row before the panel takes the panel's updates
// in one pass (core.Combine: Axpy's fused multiply-adds, row after row of
// the panel, each vector of the target held while it takes them). Every entry gets the
// updates of a row at a time in the same order, so the same bits, but a
// row before the panel is read from memory once a panel, not once a
// pivot. BenchmarkDenseBlock (a block of 2000 rows, as at N = 10^6, where
// a preparation factors it about 40 times, on one core): 113-121 ms in
// panels of 16, 288-330 ms a row at a time; panels of 8, 16, 32 and 64
// rows took 179-195, 172-176, 179-185 and 183-186 ms while Combine took
// one vector at a time.
func (t *tri) eliminateBlock(lo, hi int) bool {
	var panel [blockPanel]int
	for k := hi - 1; k >= lo; {
		np := 0
		for ; k >= lo && np < blockPanel; k-- {
			if !t.dup[k] {
				panel[np] = k
				np++
			}
		}
		for i, kk := range panel[:np] {
			if !t.pivot(kk) {
				return false
			}
			s := t.start[kk]
			for _, p := range panel[i+1 : np] {
				ip := int(t.rank[p])
				core.Axpy(t.off[t.start[p]:t.start[p]+ip], -t.off[s+ip], t.off[s:s+ip])
			}
		}
		if np == 0 {
			break
		}
		var off [blockPanel]int64
		var a [blockPanel]float64
		for i, kk := range panel[:np] {
			off[i] = int64(t.start[kk])
		}
		last := panel[np-1]
		s0 := t.start[last]
		for ip := range int(t.rank[last]) {
			p := int(t.nbr[s0+ip])
			for i, o := range off[:np] {
				a[i] = -t.off[o+int64(ip)]
			}
			core.Combine(t.off[t.start[p]:t.start[p]+ip], t.off, off[:np], a[:np])
		}
	}
	return true
}

// blockPanel is the regular rows of eliminateBlock's panels.
const blockPanel = 16

// eliminateLevels is eliminate(lo, t.n) for lo at most t.full on the
// cached pairs, the rows after the dense block by backward levels, each
// level's rows at once on every core: first their pivots, then their
// updates of the rows of their patterns, each target row's by the thread
// that owns it (owner), from the level's last row down. An entry's
// updates thus come in an order (level after level, and the rows of a
// level from the last) that does not depend on the thread count. Then
// the dense block's rows from lo on.
func (t *tri) eliminateLevels(lo int) bool {
	c, sc, d := t.pc, t.sched(), t.diag
	k0 := max(lo, t.full)
	w := threads()
	var bad failed
	for l := range len(sc.bwdStart) - 1 {
		lv := sc.bwd[sc.bwdStart[l]:sc.bwdStart[l+1]]
		for len(lv) > 0 && int(lv[0]) < k0 {
			lv = lv[1:] // the block's rows (and those before lo) come last
		}
		parallelFor(0, len(lv), func(a, b int) {
			for _, k := range lv[a:b] {
				if t.dup[k] {
					continue
				}
				if !(d[k] > 0) || math.IsInf(d[k], 1) {
					bad.v.Store(true)
					continue
				}
				dk := math.Sqrt(d[k])
				d[k] = dk
				for q := t.start[k]; q < t.start[k+1]; q++ {
					t.off[q] /= dk
				}
			}
		})
		if bad.v.Load() {
			return false
		}
		ww := w
		if len(lv) < minParallel/8 {
			ww = 1
		}
		team(ww, func(me int) {
			for i := len(lv) - 1; i >= 0; i-- {
				if i > 1 {
					c.prefetch(t, int(lv[i-2]))
				}
				if i > 0 {
					n := int(lv[i-1])
					t.prefetchTargets(d, t.off, t.nbr[t.start[n]:t.start[n+1]], ww, me)
				}
				k := int(lv[i])
				if t.dup[k] {
					continue
				}
				s, e := t.start[k], t.start[k+1]
				cols := t.nbr[s:e]
				// Entry ai's updates go to row p = cols[ai]: its
				// pivot, then its entries (the pairs of block ai, or
				// a dense row's by rank), each entry once per row k.
				for ai, p := range cols {
					if owner(p, ww) != me {
						continue
					}
					v := t.off[s+ai]
					d[p] -= v * v
					ps := t.start[p]
					if int(p) < t.full {
						for x, q := range cols[:ai] {
							t.off[ps+int(t.rank[q])] -= v * t.off[s+x]
						}
						continue
					}
					for _, r := range c.blockOf(k, ai) {
						t.off[ps+int(r.y)] -= v * t.off[s+int(r.bo)]
					}
				}
			}
		})
	}
	return t.eliminateBlock(lo, t.full)
}

// prefetch asks for row k of t's columns, entries and cached pairs, two
// rows ahead of a pass over them that updates other rows (products,
// eliminateLevels): a hint that changes no value.
func (c *pairCache) prefetch(t *tri, k int) {
	s, e := t.start[k], t.start[k+1]
	core.Prefetch(t.nbr[s:e])
	core.Prefetch(t.off[s:e])
	core.Prefetch(c.row(k))
}

// prefetchTargets asks for the diagonals d and entries off (t's pattern)
// of the rows cols that thread me of w owns, the targets of a row's
// updates a row ahead (products, eliminateLevels).
func (t *tri) prefetchTargets(d, off []float64, cols []int32, w, me int) {
	for _, p := range cols {
		if owner(p, w) == me {
			core.Prefetch(d[p : p+1])
			core.Prefetch(off[t.start[p]:t.start[p+1]])
		}
	}
}

// pivot takes the square root of row k's diagonal, divides the row's
// entries by it and subtracts their squares from their columns'
// diagonals: the step of column k that eliminate and eliminateLevels'
// sequential tail share. It reports false where the diagonal is not
// positive and finite (a breakdown).
func (t *tri) pivot(k int) bool {
	d := t.diag
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
	return true
}

// pairDiag is a cached pair's ao for the row's own diagonal entry.
const pairDiag = 255

// pairRef8 is a cached pair of a row's entries (pairs): ao and bo their
// indices in the row (ao pairDiag for the diagonal, p the row itself), y
// the index of entry (p, q) in row p.
type pairRef8 struct{ ao, bo, y uint8 }

// pairCache holds the pairs of every row of A's pattern (pairs(i, a)), so
// that the factorisations of EP's rounds and Laplace's steps read them in
// order rather than search each row's neighbours' rows again: rows after a
// dense block have A's pattern, so the pairs and their places in row p
// are the same in any hybrid pattern, but for a p in the block.
//
// A row's pairs come by entry, the diagonal's first and then its columns'
// from the last down (pairsWith), so that the pairs of entry ai (those
// that update row cols[ai]) are contiguous: blk, parallel to A's nbr,
// holds where they start in the row's pairs (blockOf), so that a thread
// of the factorisation reads the pairs of the rows it owns only.
type pairCache struct {
	a     *tri
	start []int        // row i's first pair in its chunk's refs
	refs  [][]pairRef8 // by chunk of pairChunk rows, as computed: never copied into one
	blk   []uint16
}

// row returns row i's pairs.
func (c *pairCache) row(i int) []pairRef8 {
	ch := c.refs[i/pairChunk]
	end := len(ch)
	if (i+1)%pairChunk != 0 && i+1 < c.a.n {
		end = c.start[i+1]
	}
	return ch[c.start[i]:end]
}

// diagBlock returns row k's pairs of its diagonal entry (ao pairDiag).
func (c *pairCache) diagBlock(k int) []pairRef8 {
	refs := c.row(k)
	if s, e := c.a.start[k], c.a.start[k+1]; e > s {
		return refs[:c.blk[e-1]]
	}
	return refs
}

// blockOf returns row k's pairs of its entry ai: those whose ao is ai.
func (c *pairCache) blockOf(k, ai int) []pairRef8 {
	refs := c.row(k)
	s := c.a.start[k]
	end := len(refs)
	if ai > 0 {
		end = int(c.blk[s+ai-1])
	}
	return refs[c.blk[s+ai]:end]
}

// maxPairCache bounds the cache's bytes; a larger pattern (many
// neighbours) is searched row by row.
const maxPairCache = 2 << 30

// pairChunk is the rows per unit of newPairCache's parallel work.
const pairChunk = 4096

// newPairCache returns the cache of a's pairs, or nil if a has more than
// MaxM neighbours in a row (NewStructure makes none) or its pairs would
// take more than maxPairCache bytes. Chunks of rows are searched at once
// on every core, each with its own scatter array, and kept as they are
// (pairCache.row): joining them into one array was a copy of the whole
// cache (1.5 GB at N = 10^6, m = 30) on one core, 10-20 s with its page
// faults, and held it twice at once.
func newPairCache(a *tri) *pairCache {
	for i := range a.n {
		if a.start[i+1]-a.start[i] >= pairDiag {
			return nil
		}
	}
	chunks := (a.n + pairChunk - 1) / pairChunk
	c := &pairCache{a: a, start: make([]int, a.n), refs: make([][]pairRef8, chunks), blk: make([]uint16, len(a.nbr))}
	var next atomic.Int64
	var total atomic.Int64
	var wg sync.WaitGroup
	for range min(threads(), chunks) {
		wg.Go(func() {
			var buf []pairRef
			slot := make([]int32, a.n)
			for k := range slot {
				slot[k] = -1
			}
			last := 0 // the previous chunk's pairs: the next one's are about as many
			for {
				ch := int(next.Add(1) - 1)
				if ch >= chunks || 3*total.Load() > maxPairCache {
					return
				}
				out := make([]pairRef8, 0, last+last/8)
				for i := ch * pairChunk; i < min(a.n, (ch+1)*pairChunk); i++ {
					c.start[i] = len(out)
					if a.dup[i] {
						continue
					}
					a.prefetchPatterns(i + 2)
					buf = a.pairsWith(i, a, buf, slot)
					s := int32(a.start[i])
					first := len(out)
					for _, r := range buf {
						ao := uint8(pairDiag)
						p := i
						if r.ao >= 0 {
							ao = uint8(r.ao - s)
							p = int(a.nbr[r.ao])
						}
						out = append(out, pairRef8{ao, uint8(r.bo - s), uint8(int(r.pos) - a.start[p])})
					}
					// The entries' blocks, from the last entry down
					// after the diagonal's.
					row := out[first:]
					at := 0
					for at < len(row) && row[at].ao == pairDiag {
						at++
					}
					for ai := a.start[i+1] - a.start[i] - 1; ai >= 0; ai-- {
						c.blk[a.start[i]+ai] = uint16(at)
						for at < len(row) && int(row[at].ao) == ai {
							at++
						}
					}
				}
				c.refs[ch] = out
				last = len(out)
				total.Add(int64(len(out)))
			}
		})
	}
	wg.Wait()
	if 3*total.Load() > maxPairCache {
		return nil
	}
	return c
}

// prefetchPatterns asks for the patterns of row k's columns (the rows that
// pairsWith walks for row k), a hint that changes nothing; k may be past
// the last row.
func (t *tri) prefetchPatterns(k int) {
	if k >= t.n {
		return
	}
	for _, p := range t.nbr[t.start[k]:t.start[k+1]] {
		core.Prefetch(t.nbr[t.start[p]:t.start[p+1]])
	}
}

// fullPattern returns the dense lower pattern (row k: columns 0..k-1), for
// checks at small N.
func fullPattern(m *Model) *tri {
	t := &tri{n: m.N, start: make([]int, m.N+1), dup: make([]bool, m.N), diag: make([]float64, m.N)}
	for k := range m.N {
		t.dup[k] = m.CondVar[k] == 0
		if !t.dup[k] {
			for j := range k {
				if m.CondVar[j] != 0 {
					t.nbr = append(t.nbr, int32(j))
				}
			}
		}
		t.start[k+1] = len(t.nbr)
	}
	t.off = make([]float64, len(t.nbr))
	t.setFull(m.N)
	return t
}

// hybridPattern returns the pattern of base with rows below k0 full (every
// earlier regular column).
func hybridPattern(m *Model, base *tri, k0 int) *tri {
	t := &tri{n: m.N, start: make([]int, m.N+1), dup: make([]bool, m.N), diag: make([]float64, m.N)}
	size, regular := 0, 0
	for k := range m.N {
		if m.CondVar[k] == 0 {
			continue
		}
		if k < k0 {
			size += regular
		} else {
			size += base.start[k+1] - base.start[k]
		}
		regular++
	}
	t.nbr = make([]int32, 0, size)
	for k := range m.N {
		t.dup[k] = m.CondVar[k] == 0
		if !t.dup[k] {
			if k < k0 {
				for j := range k {
					if m.CondVar[j] != 0 {
						t.nbr = append(t.nbr, int32(j))
					}
				}
			} else {
				t.nbr = append(t.nbr, base.nbr[base.start[k]:base.start[k+1]]...)
			}
		}
		t.start[k+1] = len(t.nbr)
	}
	t.off = make([]float64, len(t.nbr))
	t.setFull(k0)
	return t
}

// setFull marks rows below k0 as full (their patterns must be every earlier
// regular column) and sets the ranks.
func (t *tri) setFull(k0 int) {
	t.full = k0
	t.rank = make([]int32, t.n)
	r := int32(0)
	for k := range t.n {
		t.rank[k] = r
		if !t.dup[k] {
			r++
		}
	}
}

// release lets go of what only t's factorisations and scheduled solves
// use (the pairs and their cache, A'A's values and the factor they are
// of, the level schedule, the dense scratch), keeping its pattern and
// values: what the particles and the substitutions read (a schedule is
// built again at first use), as NewPreparedFromParts builds it from a
// plan. At N = 10^6 with them held beside the particles (32 groups of
// 312) gpc-train's peak was 6337 MB, without them 5051 MB.
func (t *tri) release() {
	t.slot, t.buf, t.pc = nil, nil, nil
	t.aaOf, t.aaD, t.aaO = nil, nil, nil
	t.sc, t.dw = nil, nil
}
