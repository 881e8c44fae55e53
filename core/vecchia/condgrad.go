package vecchia

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/gpc-mc/gpc/core/gp"
)

// The derivatives of the Vecchia conditionals in the kernel's
// log-hyperparameters. Row k's conditional comes from the linear system of
// its conditioning set c (Structure.Conditionals),
//
//	S = K_cc + nugget I,   B_k = S^-1 k_ck,   D_k = k_kk + nugget - k_kc B_k,
//
// so that, for a log-hyperparameter theta_j (the nugget does not move),
//
//	dB_k = S^-1 (dk_ck - dS B_k),   dD_k = dk_kk - 2 dk_kc B_k + B_k' dS B_k,
//
// dS = dK_cc, from the kernel's own derivatives (gp.Kernel.LogDerivTo):
// one Cholesky factorisation of S per row (M^3/6) and O(M^2) per
// hyperparameter. Where D_k was held at the nugget (Conditionals' floor),
// dD_k is 0.
//
// A fit needs these derivatives only contracted with the derivative of a
// scalar (a log density, an evidence) with respect to the entries of the
// inverse Cholesky factor A = D^-1/2 (I - B): AdjointGradTo forms that
// contraction row by row, without storing the N M derivatives per
// hyperparameter that ConditionalDerivs returns.

// CondDerivs are the derivatives of a Vecchia model's conditionals with
// respect to the logs of its kernel's hyperparameters Hypers, in the
// model's CSR layout: DCoef[j][q] = d B_kq / d log h_j for the entry q of
// row k (parallel to Nbr, Start[k] <= q < Start[k+1]) and DCondVar[j][k]
// = d D_k / d log h_j. A repeated point's row has derivatives 0.
type CondDerivs struct {
	Hypers          []gp.Hyper
	Start           []int
	Nbr             []int32
	DCoef, DCondVar [][]float64
}

// ConditionalDerivs returns the derivatives of the conditionals that
// Conditionals computes (the kernel k on the features feat, by input row,
// with the nugget) with respect to the logs of the hyperparameters hs of
// k, on threads goroutines (the result does not depend on their number).
// It returns an error naming the row whose system could not be
// factorised.
func (s *Structure) ConditionalDerivs(k *gp.Kernel, hs []gp.Hyper, feat []float64, nugget float64, threads int) (*CondDerivs, error) {
	start, nbr := s.offsets()
	p := len(hs)
	cd := &CondDerivs{Hypers: slices.Clone(hs), Start: start, Nbr: nbr, DCoef: make([][]float64, p), DCondVar: make([][]float64, p)}
	for j := range p {
		cd.DCoef[j] = make([]float64, len(nbr))
		cd.DCondVar[j] = make([]float64, s.N)
	}
	coef := make([]float64, len(nbr))
	errs := make([]error, s.N)
	parallelRange(0, s.N, threads, func(a, b int) {
		var w derivWork
		for i := a; i < b; i++ {
			if s.Dup[i] >= 0 {
				continue
			}
			bk := coef[start[i]:start[i+1]]
			if _, clamped, ok := w.row(s, k, hs, feat, i, nbr[start[i]:start[i+1]], nugget, bk); !ok {
				errs[i] = s.singular(i, len(bk), nugget)
				continue
			} else {
				w.explicit(bk, clamped)
			}
			q := len(bk)
			for j := range p {
				copy(cd.DCoef[j][start[i]:start[i+1]], w.db[j*q:j*q+q])
				cd.DCondVar[j][i] = w.dd[j]
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return cd, nil
}

// FactorAdjoint is the derivative of a scalar phi with respect to the
// entries of a Vecchia model's inverse Cholesky factor A = D^-1/2 (I - B)
// (Model): Diag[k] = d phi / d A_kk and Off[q] = d phi / d A_{k,Nbr[q]}
// for the entries q of row k, parallel to the model's Nbr (A_kq =
// -B_kq / sqrt(D_k)). A repeated point's row (no entries of A) is ignored.
type FactorAdjoint struct {
	Diag, Off []float64
}

// NewFactorAdjoint returns a zero adjoint for model m.
func NewFactorAdjoint(m *Model) *FactorAdjoint {
	return &FactorAdjoint{Diag: make([]float64, m.N), Off: make([]float64, len(m.Nbr))}
}

// AdjointGradTo sets dst[j] = d phi / d log h_j for the hyperparameters hs
// of the kernel k, through the conditionals that Conditionals computes
// (features feat by input row, the nugget): the contraction of the
// adjoint adj of phi in A's entries with A's derivatives,
//
//	d phi = sum_k [ adj.Diag_k dA_kk + sum_q adj.Off_kq dA_kq ],
//	dA_kk = -dD_k / (2 D_k^3/2),   dA_kq = -dB_kq / D_k^1/2 + B_kq dD_k / (2 D_k^3/2),
//
// which, with g = S^-1 adj.Off_k and h = -(adj.Diag_k - adj.Off_k' B_k) /
// (2 D_k^3/2), is row by row
//
//	h dk_kk + dk_kc'(-2 h B_k - g / D_k^1/2) + sum_pq dS_pq (h B_p B_q + (g_p B_q + g_q B_p) / (2 D_k^1/2)),
//
// one factorisation of S and one pass over the pairs of the row's
// conditioning set. Rows are summed in fixed chunks in order, on threads
// goroutines, so the result does not depend on their number. It panics if
// dst and hs differ in length, and returns an error naming the row whose
// system could not be factorised.
func (s *Structure) AdjointGradTo(dst []float64, k *gp.Kernel, hs []gp.Hyper, feat []float64, nugget float64, adj *FactorAdjoint, threads int) error {
	if len(dst) != len(hs) {
		panic("vecchia: AdjointGradTo: dst and hs differ in length")
	}
	start, nbr := s.offsets()
	if len(adj.Diag) != s.N || len(adj.Off) != len(nbr) {
		panic("vecchia: AdjointGradTo: the adjoint is not of the structure's shape")
	}
	p := len(hs)
	chunks := (s.N + gradChunk - 1) / gradChunk
	part := make([]float64, chunks*p)
	errs := make([]error, chunks)
	chunkRows(s.N, threads, func(c, a, b int) {
		var w derivWork
		acc := part[c*p : c*p+p]
		bk := make([]float64, 0, 64)
		for i := a; i < b; i++ {
			if s.Dup[i] >= 0 {
				continue
			}
			q := start[i+1] - start[i]
			bk = slices.Grow(bk[:0], q)[:q]
			v, clamped, ok := w.row(s, k, hs, feat, i, nbr[start[i]:start[i+1]], nugget, bk)
			if !ok {
				errs[c] = s.singular(i, q, nugget)
				return
			}
			w.contract(acc, bk, v, clamped, adj.Diag[i], adj.Off[start[i]:start[i+1]])
		}
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	clear(dst)
	for c := range chunks {
		for j := range p {
			dst[j] += part[c*p+j]
		}
	}
	return nil
}

// gradChunk is the rows of one fixed chunk of AdjointGradTo's sum.
const gradChunk = 256

// chunkRows runs fn(c, a, b) on the fixed chunks [c gradChunk, (c+1)
// gradChunk) of [0, n) over threads goroutines (0: GOMAXPROCS).
func chunkRows(n, threads int, fn func(c, a, b int)) {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	chunks := (n + gradChunk - 1) / gradChunk
	next := make(chan int, chunks)
	for c := range chunks {
		next <- c
	}
	close(next)
	var wg sync.WaitGroup
	for range min(threads, chunks) {
		wg.Go(func() {
			for c := range next {
				fn(c, c*gradChunk, min(n, (c+1)*gradChunk))
			}
		})
	}
	wg.Wait()
}

// offsets returns the CSR offsets and neighbours of the structure's
// conditioning sets, as Conditionals lays them out.
func (s *Structure) offsets() ([]int, []int32) {
	start := make([]int, s.N+1)
	for i, c := range s.Nbr {
		start[i+1] = start[i] + len(c)
	}
	nbr := make([]int32, start[s.N])
	for i, c := range s.Nbr {
		copy(nbr[start[i]:], c)
	}
	return start, nbr
}

// singular is Conditionals' error for position i's system.
func (s *Structure) singular(i, q int, nugget float64) error {
	return fmt.Errorf("vecchia: the covariance of point %d's %d neighbours is not positive definite with nugget %g", s.Perm[i], q, nugget)
}

// derivWork is a worker's scratch for one row's conditional and its
// derivatives.
type derivWork struct {
	condWork
	hs   []gp.Hyper
	p, q int
	k    *gp.Kernel
	x0   []float64
	dk   []float64 // p
	g    []float64 // q
	db   []float64 // p x q, explicit's dB
	dd   []float64 // p, explicit's dD
	rhs  []float64 // q
}

// row computes position i's conditional (condWork.solve: the same bits as
// Conditionals) into b, leaving S's Cholesky factor in w.l, and returns
// the conditional variance, whether it was held at the nugget, and false
// if S is not numerically positive definite.
func (w *derivWork) row(s *Structure, k *gp.Kernel, hs []gp.Hyper, feat []float64, i int, c []int32, nugget float64, b []float64) (float64, bool, bool) {
	d := s.D
	point := func(pos int) []float64 { r := s.Perm[pos]; return feat[r*d : r*d+d] }
	xs := w.points(len(c))
	for q, j := range c {
		xs[q] = point(int(j))
	}
	w.k, w.hs, w.p, w.q, w.x0 = k, hs, len(hs), len(c), point(i)
	w.dk = slices.Grow(w.dk[:0], w.p)[:w.p]
	v, ok := w.solve(k, xs, w.x0, nugget, b)
	if !ok {
		return 0, false, false
	}
	// solve left L^-1 k_c in kc; its variance before the floor, in solve's
	// order of operations.
	raw := k.Eval(w.x0, w.x0) + nugget
	for _, y := range w.kc[:w.q] {
		raw -= y * y
	}
	return v, !(raw >= nugget), true
}

// cholSolve sets x = S^-1 r with S = L L' in w.l (x and r may be the
// same).
func (w *derivWork) cholSolve(x, r []float64) {
	q, l := w.q, w.l
	for i := range q {
		t := r[i]
		for p := range i {
			t -= l[i*q+p] * x[p]
		}
		x[i] = t / l[i*q+i]
	}
	for i := q - 1; i >= 0; i-- {
		t := x[i]
		for p := i + 1; p < q; p++ {
			t -= l[p*q+i] * x[p]
		}
		x[i] = t / l[i*q+i]
	}
}

// explicit sets w.db and w.dd to the row's dB and dD for each
// hyperparameter (row must have been called, with b its B).
func (w *derivWork) explicit(b []float64, clamped bool) {
	p, q := w.p, w.q
	xs := w.xs
	w.db = slices.Grow(w.db[:0], p*q)[:p*q]
	w.dd = slices.Grow(w.dd[:0], p)[:p]
	w.rhs = slices.Grow(w.rhs[:0], q)[:q]
	clear(w.db)
	clear(w.dd)
	// rhs_j = dk_c - dS B and B'dS B, pair by pair: dS is symmetric.
	sbs := make([]float64, p)
	for i := range q {
		for j := 0; j <= i; j++ {
			w.k.LogDerivTo(w.dk, w.hs, xs[i], xs[j])
			for h, v := range w.dk {
				w.db[h*q+i] -= v * b[j]
				if i != j {
					w.db[h*q+j] -= v * b[i]
					sbs[h] += 2 * v * b[i] * b[j]
				} else {
					sbs[h] += v * b[i] * b[i]
				}
			}
		}
		w.k.LogDerivTo(w.dk, w.hs, xs[i], w.x0)
		for h, v := range w.dk {
			w.db[h*q+i] += v
			w.dd[h] -= 2 * v * b[i]
		}
	}
	w.k.LogDerivTo(w.dk, w.hs, w.x0, w.x0)
	for h := range p {
		w.dd[h] += w.dk[h] + sbs[h]
		if clamped {
			w.dd[h] = 0
		}
		w.cholSolve(w.db[h*q:h*q+q], w.db[h*q:h*q+q])
	}
}

// contract adds to acc the row's d phi / d log h (AdjointGradTo) for the
// adjoint diag, off of its entries of A (row must have been called, with
// b its B and v its D).
func (w *derivWork) contract(acc, b []float64, v float64, clamped bool, diag float64, off []float64) {
	q := w.q
	sd := math.Sqrt(v)
	h := 0.0
	if !clamped {
		h = -(diag - dot(off, b)) / (2 * v * sd)
	}
	w.g = slices.Grow(w.g[:0], q)[:q]
	g := w.g
	w.cholSolve(g, off)
	xs := w.xs
	for i := range q {
		gi, bi := g[i], b[i]
		for j := 0; j < i; j++ {
			// Both (i, j) and (j, i).
			c := 2*h*bi*b[j] + (gi*b[j]+g[j]*bi)/sd
			if c == 0 {
				continue
			}
			w.k.LogDerivTo(w.dk, w.hs, xs[i], xs[j])
			for t, dv := range w.dk {
				acc[t] += c * dv
			}
		}
		w.k.LogDerivTo(w.dk, w.hs, xs[i], xs[i])
		c := h*bi*bi + gi*bi/sd
		for t, dv := range w.dk {
			acc[t] += c * dv
		}
		w.k.LogDerivTo(w.dk, w.hs, xs[i], w.x0)
		c = -2*h*bi - gi/sd
		for t, dv := range w.dk {
			acc[t] += c * dv
		}
	}
	w.k.LogDerivTo(w.dk, w.hs, w.x0, w.x0)
	for t, dv := range w.dk {
		acc[t] += h * dv
	}
}

// LogPrior returns the log density of the model's latent values x (by
// position) under its Vecchia prior,
//
//	log N(x; 0, (A'A)^-1) = sum_k [ -log(2 pi D_k)/2 - (x_k - B_k x_c(k))^2 / (2 D_k) ],
//
// the sum over the regular rows (a repeated point's value is its point's,
// and adds nothing). It panics if len(x) is not m.N.
func (m *Model) LogPrior(x []float64) float64 {
	if len(x) != m.N {
		panic("vecchia: LogPrior: x is not one value per row")
	}
	lp := 0.0
	for k := range m.N {
		v := m.CondVar[k]
		if v == 0 {
			continue
		}
		r := x[k]
		for q := m.Start[k]; q < m.Start[k+1]; q++ {
			r -= m.Coef[q] * x[m.Nbr[q]]
		}
		lp -= (math.Log(2*math.Pi*v) + r*r/v) / 2
	}
	return lp
}

// InnovationMoments accumulates, over weighted latent paths x (values by
// position, as LogPrior takes them), what the gradient of their weighted
// mean log prior density needs: for each regular row k its standardized
// innovation e_k = (A x)_k = (x_k - B_k x_c(k)) / D_k^1/2 times the row's
// own value, Self[k] = sum w x_k e_k, and times each neighbour's, Off[q] =
// sum w x_Nbr[q] e_k (parallel to the model's Nbr), with Weight = sum w.
// A particle filter's weighted paths give Fisher's identity's expectation
// of the prior's score (PriorAdjoint, then Structure.AdjointGradTo), at
// O(N M) per path.
type InnovationMoments struct {
	Self, Off []float64
	Weight    float64
}

// NewInnovationMoments returns empty moments for model m.
func NewInnovationMoments(m *Model) *InnovationMoments {
	return &InnovationMoments{Self: make([]float64, m.N), Off: make([]float64, len(m.Nbr))}
}

// Add adds the path x with weight wt. It panics if len(x) is not m.N.
func (im *InnovationMoments) Add(m *Model, x []float64, wt float64) {
	if len(x) != m.N {
		panic("vecchia: InnovationMoments.Add: x is not one value per row")
	}
	for k := range m.N {
		v := m.CondVar[k]
		if v == 0 {
			continue
		}
		r := x[k]
		for q := m.Start[k]; q < m.Start[k+1]; q++ {
			r -= m.Coef[q] * x[m.Nbr[q]]
		}
		e := wt * r / math.Sqrt(v)
		im.Self[k] += x[k] * e
		for q := m.Start[k]; q < m.Start[k+1]; q++ {
			im.Off[q] += x[m.Nbr[q]] * e
		}
	}
	im.Weight += wt
}

// PriorAdjoint returns the adjoint in A's entries (FactorAdjoint) of the
// weighted mean log prior density of the paths added, E_w[log N(x; 0,
// (A'A)^-1)] = sum_k log A_kk - E_w[|A x|^2] / 2 + const:
//
//	Diag_k = 1 / A_kk - Self_k / Weight,   Off_q = -Off_q / Weight.
//
// Structure.AdjointGradTo turns it into the gradient in the kernel's
// log-hyperparameters. It panics if no weight was added.
func (im *InnovationMoments) PriorAdjoint(m *Model) *FactorAdjoint {
	if !(im.Weight > 0) {
		panic("vecchia: InnovationMoments.PriorAdjoint: no weight")
	}
	adj := NewFactorAdjoint(m)
	for k := range m.N {
		v := m.CondVar[k]
		if v == 0 {
			continue
		}
		adj.Diag[k] = math.Sqrt(v) - im.Self[k]/im.Weight
		for q := m.Start[k]; q < m.Start[k+1]; q++ {
			adj.Off[q] = -im.Off[q] / im.Weight
		}
	}
	return adj
}

// PriorAdjoint returns the adjoint in A's entries of log N(x; 0,
// (A'A)^-1) at the one path x (InnovationMoments.PriorAdjoint of x
// alone).
func (m *Model) PriorAdjoint(x []float64) *FactorAdjoint {
	im := NewInnovationMoments(m)
	im.Add(m, x, 1)
	return im.PriorAdjoint(m)
}
