package vecchia

import (
	"slices"
	"sync/atomic"

	"github.com/gpc-mc/gpc/core"
)

// denseBlock is the proposal's dense block during EP (parallelEP.run): the
// first k0 rows of the factor t, full rows of every earlier regular
// column. Once the later rows are eliminated, t's block rows hold the
// precision Lambda of the block's prior given the later sites; load keeps
// a copy, and factor factors Lambda + diag(tau) in t's block rows.
type denseBlock struct {
	t      *tri
	k0     int
	reg    []int // the block's regular rows
	idx    []int // idx[k]: row k's index among reg, -1 for a repeat
	pd, po []float64
	// scratch
	ut   []float64 // nr x nr: the factor's transpose, row i = column i of L
	sq   []float64 // nr x nr: the squares of L^-1, by columns
	cols [][]float64
	vars []float64
	mean []float64
}

func newDenseBlock(t *tri, k0 int) *denseBlock {
	b := &denseBlock{t: t, k0: k0, idx: make([]int, k0)}
	for k := range k0 {
		b.idx[k] = -1
		if !t.dup[k] {
			b.idx[k] = len(b.reg)
			b.reg = append(b.reg, k)
		}
	}
	return b
}

// load copies the block's rows of t (Lambda).
func (b *denseBlock) load(t *tri) {
	b.pd = append(b.pd[:0], t.diag[:b.k0]...)
	b.po = append(b.po[:0], t.off[:t.start[b.k0]]...)
}

// factor sets t's block rows to the reverse Cholesky factor of Lambda +
// diag(tau) (tau by latent variable).
func (b *denseBlock) factor(tau []float64) error {
	pd := slices.Clone(b.pd)
	for _, k := range b.reg {
		pd[k] += tau[k]
	}
	_, err := b.t.factorShifted(pd, b.po, 0, b.k0, maxShift)
	return err
}

// marginals returns the means and variances, by regular row, of the
// block's Gaussian with precision L'L (t's block rows: factor's) and
// linear term h + nu (over the block's rows):
//
//	mean = (L'L)^-1 (h + nu),   variances = diag(L^-1 L^-T).
//
// The variances are the squared rows of L^-1, from its columns by forward
// substitution on the vector kernels (L's transpose, so that each step's
// update is contiguous): nr^3/6 multiply-adds.
func (b *denseBlock) marginals(h, nu []float64) (mean, vars []float64) {
	t := b.t
	nr := len(b.reg)
	b.ut = slices.Grow(b.ut[:0], nr*nr)[:nr*nr]
	clear(b.ut)
	diag := make([]float64, nr)
	for i, k := range b.reg {
		diag[i] = t.diag[k]
		for q := t.start[k]; q < t.start[k+1]; q++ {
			j := b.idx[t.nbr[q]]
			b.ut[j*nr+i] = t.off[q] // ut[j][i] = L[i][j]
		}
	}
	// mean: L' eta = h + nu (back substitution), L mean = eta (forward).
	b.mean = slices.Grow(b.mean[:0], nr)[:nr]
	eta := make([]float64, nr)
	for i, k := range b.reg {
		eta[i] = h[k] + nu[k]
	}
	for i := nr - 1; i >= 0; i-- {
		eta[i] /= diag[i]
		v := eta[i]
		// eta[j] -= L[i][j] eta[i] for j < i: column i of L' is row i of
		// L, ut's column i.
		for j := range i {
			eta[j] -= b.ut[j*nr+i] * v
		}
	}
	copy(b.mean, eta)
	for i := range nr {
		s := b.mean[i]
		for j := range i {
			s -= b.ut[j*nr+i] * b.mean[j]
		}
		b.mean[i] = s / diag[i]
	}
	// variances: column c of L^-1, u, from u_c = 1/L_cc down, the
	// columns at once on every core; their squares are kept (sq, by
	// columns) and summed in column order, so the same bits for any
	// thread count.
	b.vars = slices.Grow(b.vars[:0], nr)[:nr]
	clear(b.vars)
	b.sq = slices.Grow(b.sq[:0], nr*nr)[:nr*nr]
	w := min(threads(), max(nr, 1))
	for len(b.cols) < w {
		b.cols = append(b.cols, nil)
	}
	// A worker takes marginalPanel columns at a time and reads each row
	// of ut once for all of them (core.Spread: each column's update is
	// Axpy's, in the same order, so the same bits as a column at a
	// time).
	var next atomic.Int64
	team(w, func(me int) {
		b.cols[me] = slices.Grow(b.cols[me][:0], marginalPanel*nr)[:marginalPanel*nr]
		u := b.cols[me]
		var off [marginalPanel]int64
		var a [marginalPanel]float64
		for {
			c0 := int(next.Add(marginalPanel) - marginalPanel)
			if c0 >= nr {
				return
			}
			np := min(marginalPanel, nr-c0)
			for j := range np {
				uc := u[j*nr : j*nr+nr]
				clear(uc[c0+j:])
				uc[c0+j] = 1
			}
			for i := c0; i < nr; i++ {
				nj := min(np, i-c0+1) // the columns begun by row i
				for j := range nj {
					v := u[j*nr+i] / diag[i]
					u[j*nr+i] = v
					b.sq[(c0+j)*nr+i] = v * v
					off[j], a[j] = int64(j*nr+i+1), v
				}
				if i+1 < nr {
					core.Spread(u, off[:nj], a[:nj], b.ut[i*nr+i+1:i*nr+nr])
				}
			}
		}
	})
	parallelFor(0, nr, func(lo, hi int) {
		for c := range hi {
			sq := b.sq[c*nr : c*nr+nr]
			for i := max(lo, c); i < hi; i++ {
				b.vars[i] += sq[i]
			}
		}
	})
	return b.mean, b.vars
}

// marginalPanel is the columns of L^-1 a worker of marginals computes
// together.
const marginalPanel = 16
