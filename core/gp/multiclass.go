package gp

import (
	"fmt"

	"github.com/gpc-mc/gpc/core"
)

// MaxClasses is the most classes a Multiclass takes: a test point adds one
// variable per class, and the class probabilities of a particle are
// counted over that many utilities.
const MaxClasses = 256

// Multiclass is a multinomial probit GP training set: features X (rows of D
// values, row-major), class labels Y in 0..C-1 and one kernel per class
// (Kernels[c] for class c), or one kernel shared by all classes
// (len(Kernels) == 1).
//
// The model: C independent latent functions f_c ~ GP(0, k_c), utilities
// u_ic = f_c(x_i) + e_ic with e_ic iid N(0, 1), and y_i = argmax_c u_ic.
// Its likelihood p(y | X) is the orthant probability P(w >= 0) of the
// N (C - 1) class differences w_{i,k} = u_{i,y_i} - u_{i,k}, k != y_i
// (MulticlassCov).
type Multiclass struct {
	X       []float64
	D       int
	Y       []int
	C       int
	Kernels []*Kernel
}

// kernel returns class c's kernel.
func (m *Multiclass) kernel(c int) *Kernel {
	if len(m.Kernels) == 1 {
		return m.Kernels[0]
	}
	return m.Kernels[c]
}

// Validate reports a training set that does not define the model: fewer
// than two classes or more than MaxClasses, a label outside 0..C-1,
// shapes that disagree, or a kernel count that is neither 1 nor C. A class
// without training points is allowed: its latent function keeps its prior.
func (m *Multiclass) Validate() error {
	switch {
	case m.C < 2:
		return fmt.Errorf("gp: %d class(es): the multinomial probit model needs at least 2", m.C)
	case m.C > MaxClasses:
		return fmt.Errorf("gp: %d classes: at most %d are supported", m.C, MaxClasses)
	case m.D < 1 || len(m.X) != len(m.Y)*m.D:
		return fmt.Errorf("gp: %d feature values for %d points of %d features", len(m.X), len(m.Y), m.D)
	case len(m.Kernels) != 1 && len(m.Kernels) != m.C:
		return fmt.Errorf("gp: %d kernels for %d classes: give one, or one per class", len(m.Kernels), m.C)
	}
	for i, y := range m.Y {
		if y < 0 || y >= m.C {
			return fmt.Errorf("gp: point %d: class %d is not in 0..%d", i, y, m.C-1)
		}
	}
	return nil
}

// Vars returns the number of orthant variables, N (C - 1).
func (m *Multiclass) Vars() int { return len(m.Y) * (m.C - 1) }

// Other returns the class of point i's difference variable q (0 <= q <
// C - 1): the classes other than y_i, in increasing order.
func (m *Multiclass) Other(i, q int) int {
	if q < m.Y[i] {
		return q
	}
	return q + 1
}

// Box returns the model's orthant problem: covariance Cov, the variable of
// point i's q-th difference at index i (C - 1) + q. It has no labels: the
// interleaving order alternates two classes by sign, which the differences
// do not have.
func (m *Multiclass) Box() core.Box {
	return core.Box{N: m.Vars(), Cov: m.Cov()}
}

// Cov returns the covariance of the class differences, MulticlassCov: for
// S(i,c; j,d) = Cov(u_ic, u_jd) = [c = d] (K_c[i][j] + [i = j]),
//
//	Cov(w_{i,k}, w_{j,l}) = S(i,y_i; j,y_j) - S(i,y_i; j,l) - S(i,k; j,y_j) + S(i,k; j,l),
//
// that is A (blockdiag_c (K_c + I)) A' with A the class-difference
// contrasts, row-major, variable i (C - 1) + q for point i's q-th
// difference (Other). For C = 2 it is exactly 2 C (I + K) C, twice the
// binary classifier's R (ClassifierCov, labels +1 for class 1 and -1 for
// class 0), whose orthant probabilities are the same. It panics if
// Validate fails.
func (m *Multiclass) Cov() []float64 {
	if err := m.Validate(); err != nil {
		panic(err)
	}
	n, c := len(m.Y), m.C
	// One kernel matrix per distinct kernel, with the noise on the
	// diagonal: s[c][i][j] = K_c[i][j] + [i = j].
	s := make([][]float64, c)
	for cl := range c {
		if cl > 0 && len(m.Kernels) == 1 {
			s[cl] = s[0]
			continue
		}
		k := m.kernel(cl)
		kc := make([]float64, n*n)
		for i := range n {
			xi := m.X[i*m.D : i*m.D+m.D]
			for j := range i + 1 {
				v := k.Eval(xi, m.X[j*m.D:j*m.D+m.D])
				kc[i*n+j], kc[j*n+i] = v, v
			}
			kc[i*n+i]++
		}
		s[cl] = kc
	}
	return DifferenceCov(s, m.Y, c)
}

// DifferenceCov returns the covariance of the N (C - 1) class differences
// w_{i,k} = u_{i,y_i} - u_{i,k}, k != y_i, from the covariances of the
// classes' utilities over the N points: s[c] (N x N, row-major) is
// Cov(u_c), the classes independent; s's entries may share one matrix.
// Row-major, variable i (C - 1) + q for point i's q-th difference, the
// classes other than y_i in increasing order (Multiclass.Other). Cov is it
// on the kernel matrices plus the noise; core/vecchia's Multiclass.Implied
// on a Vecchia model's implied covariances.
func DifferenceCov(s [][]float64, y []int, c int) []float64 {
	n := len(y)
	other := func(i, q int) int {
		if q < y[i] {
			return q
		}
		return q + 1
	}
	q := c - 1
	nv := n * q
	r := make([]float64, nv*nv)
	for i := range n {
		yi := y[i]
		for j := range i + 1 {
			yj := y[j]
			for a := range q {
				k := other(i, a)
				for b := range q {
					l := other(j, b)
					v := 0.0
					if yi == yj {
						v += s[yi][i*n+j]
					}
					if yi == l {
						v -= s[yi][i*n+j]
					}
					if k == yj {
						v -= s[k][i*n+j]
					}
					if k == l {
						v += s[k][i*n+j]
					}
					r[(i*q+a)*nv+j*q+b] = v
					r[(j*q+b)*nv+i*q+a] = v
				}
			}
		}
	}
	return r
}

// TestRows fills dst (C rows of N (C - 1), row-major) with the
// covariances of a test pattern's utilities u*_c = f_c(xs) + e_c with the
// training differences,
//
//	Cov(u*_c, w_{j,l}) = ([c = y_j] - [c = l]) k_c(xs, x_j),
//
// and vars (length C) with their variances 1 + k_c(xs, xs). The utilities
// are independent a priori. The posterior probability of class c is
// P(u*_c = max_k u*_k | w >= 0) (core.PredictClasses). It panics if the
// lengths disagree.
func (m *Multiclass) TestRows(dst, vars []float64, xs []float64) {
	n, c, q := len(m.Y), m.C, m.C-1
	nv := n * q
	if len(dst) != c*nv || len(vars) != c || len(xs) != m.D {
		panic("gp: Multiclass.TestRows lengths disagree")
	}
	clear(dst)
	kx := make([]float64, n)
	for cl := range c {
		k := m.kernel(cl)
		if cl == 0 || len(m.Kernels) > 1 {
			for j := range n {
				kx[j] = k.Eval(m.X[j*m.D:j*m.D+m.D], xs)
			}
		}
		row := dst[cl*nv : cl*nv+nv]
		for j := range n {
			for b := range q {
				l := m.Other(j, b)
				switch cl {
				case m.Y[j]:
					row[j*q+b] = kx[j]
				case l:
					row[j*q+b] = -kx[j]
				}
			}
		}
		vars[cl] = 1 + k.Eval(xs, xs)
	}
}
