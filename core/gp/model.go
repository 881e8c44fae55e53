package gp

import "github.com/gpc-mc/gpc/core"

// Model is the training set of a probit GP classifier whose marginal
// likelihood is a Gaussian orthant probability: Classifier (two classes,
// one kernel) and Multiclass (C classes, one kernel shared by the classes
// or one per class). Package fit moves the hyperparameters of its kernels.
type Model interface {
	// Inputs returns the training features, rows of d values, row-major.
	Inputs() (x []float64, d int)
	// KernelCount returns how many kernels KernelBox takes: 1, or one per
	// class (a Multiclass with Kernels per class).
	KernelCount() int
	// KernelBox returns the orthant problem whose probability is the
	// marginal likelihood under the kernels ks (KernelCount of them).
	KernelBox(ks []*Kernel) core.Box
	// KernelGradTo fills dst (len(a) groups of len(hs) values) with
	// d log p(y | X) / d log h for each hyperparameter h of hs (of kernel
	// ks[h.Class]), from covariance scores A_g of the orthant problem
	// (core.Score, one per particle group).
	KernelGradTo(dst []float64, ks []*Kernel, hs []Hyper, a [][]float64)
}

// Inputs returns the classifier's features.
func (c *Classifier) Inputs() ([]float64, int) { return c.X, c.D }

// KernelCount returns 1: the binary classifier has one kernel.
func (c *Classifier) KernelCount() int { return 1 }

// KernelBox is Box(ks[0]).
func (c *Classifier) KernelBox(ks []*Kernel) core.Box { return c.Box(ks[0]) }

// KernelGradTo is LogGradTo with ks[0].
func (c *Classifier) KernelGradTo(dst []float64, ks []*Kernel, hs []Hyper, a [][]float64) {
	c.LogGradTo(dst, ks[0], hs, a)
}

// Inputs returns the training features.
func (m *Multiclass) Inputs() ([]float64, int) { return m.X, m.D }

// KernelCount returns len(m.Kernels): 1 for a kernel shared by the classes,
// else C.
func (m *Multiclass) KernelCount() int { return len(m.Kernels) }

// KernelBox returns the orthant problem of the model with kernels ks in
// place of m.Kernels (Box).
func (m *Multiclass) KernelBox(ks []*Kernel) core.Box {
	mk := *m
	mk.Kernels = ks
	return mk.Box()
}

// KernelGradTo fills dst (len(a) groups of len(hs) values) with the
// model's d log p(y | X) / d log h for each hyperparameter h of hs, of
// kernel ks[h.Class] (0 for a shared kernel), from covariance scores A_g
// of its orthant problem (core.Score, one per group). The covariance is
// R = A S A' with S = blockdiag_c (K_c + I) and A the class-difference
// contrasts (Cov), so dR = A blockdiag_c(dK_c) A' and
//
//	d log p = 1/2 tr(A_g dR) = 1/2 sum_c sum_ij B_c[i][j] dK_c[i][j],
//	B_c[i][j] = sum_qr a_iqc A_g[(i,q),(j,r)] a_jrc,   a_iqc = [c = y_i] - [c = Other(i, q)],
//
// for each pair of points one pass over their (C - 1) x (C - 1) block of
// A_g. It panics if the shapes disagree.
func (m *Multiclass) KernelGradTo(dst []float64, ks []*Kernel, hs []Hyper, a [][]float64) {
	n, q, h := len(m.Y), m.C-1, len(hs)
	nv := n * q
	if len(dst) != len(a)*h {
		panic("gp: Multiclass.KernelGradTo: dst must hold one value per group and hyperparameter")
	}
	for _, ag := range a {
		if len(ag) != nv*nv {
			panic("gp: Multiclass.KernelGradTo: a score is not N (C - 1) square")
		}
	}
	clear(dst)
	shared := len(ks) == 1
	// The hyperparameters of each kernel, and the derivatives of each
	// kernel at a pair.
	byKernel := make([][]int, len(ks))
	for p, hp := range hs {
		byKernel[hp.Class] = append(byKernel[hp.Class], p)
	}
	sub := make([][]Hyper, len(ks))
	dk := make([][]float64, len(ks))
	for c, idx := range byKernel {
		for _, p := range idx {
			sub[c] = append(sub[c], hs[p])
		}
		dk[c] = make([]float64, len(idx))
	}
	rs, cs := make([]float64, q), make([]float64, q)
	bc := make([]float64, m.C)
	d := m.D
	for i := range n {
		xi := m.X[i*d : i*d+d]
		yi := m.Y[i]
		for j := range i + 1 {
			xj := m.X[j*d : j*d+d]
			yj := m.Y[j]
			for c := range ks {
				if len(sub[c]) > 0 {
					ks[c].LogDerivTo(dk[c], sub[c], xi, xj)
				}
			}
			w := 0.5 // 1/2 tr(...)
			if i != j {
				w = 1 // the pair (j, i) too
			}
			for g, ag := range a {
				// The block's row sums, column sums and total.
				clear(rs)
				clear(cs)
				tot := 0.0
				for u := range q {
					row := ag[(i*q+u)*nv+j*q : (i*q+u)*nv+j*q+q]
					for v, x := range row {
						rs[u] += x
						cs[v] += x
					}
				}
				for _, x := range rs {
					tot += x
				}
				for c := range m.C {
					switch {
					case c == yi && c == yj:
						bc[c] = tot
					case c == yi:
						bc[c] = -cs[otherIndex(yj, c)]
					case c == yj:
						bc[c] = -rs[otherIndex(yi, c)]
					default:
						bc[c] = ag[(i*q+otherIndex(yi, c))*nv+j*q+otherIndex(yj, c)]
					}
				}
				out := dst[g*h : g*h+h]
				if shared {
					sum := 0.0
					for _, v := range bc {
						sum += v
					}
					for t, p := range byKernel[0] {
						out[p] += w * sum * dk[0][t]
					}
					continue
				}
				for c, idx := range byKernel {
					for t, p := range idx {
						out[p] += w * bc[c] * dk[c][t]
					}
				}
			}
		}
	}
}

// otherIndex returns the index q of class c among the classes other than
// y (Other's inverse): c itself below y, c - 1 above.
func otherIndex(y, c int) int {
	if c < y {
		return c
	}
	return c - 1
}
