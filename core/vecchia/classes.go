package vecchia

import (
	"fmt"
	"math"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/gp"
)

// Multiclass is the multinomial probit classifier (core/gp's Multiclass)
// under Vecchia priors: C latent processes x_c, one per class, each a
// Vecchia model on one shared order and shared conditioning sets c(k),
// with its own coefficients and conditional variances where the classes
// have kernels of their own,
//
//	x_ck = sum_{j in c(k)} B^c_kj x_cj + sqrt(D^c_k) e_ck,
//	u_ck = x_ck + sqrt(Noise) eps_ck,   y_k = argmax_c u_ck,
//
// e and eps independent standard normals; its probability is
// P(u_{k,y_k} >= u_{k,c} for every k and c), the marginal likelihood of
// the labels Y. The processes are independent a priori. For the
// classifier, x_c is f_c plus the nugget moved into it and Noise is 1 less
// the nugget (NewMulticlass), so that with every earlier point in c(k) the
// model is the dense multinomial probit model exactly.
//
// Why C latent processes and not the C - 1 differences u_{k,y_k} -
// u_{k,c}: the differences mix a point's classes by its label, and given
// the earlier points' differences a point's are not a sparse conditional
// (they lose the common level that the earlier points' values carry), so
// the Vecchia form is lost; the C processes keep it, their prior a
// product of C sparse factors whatever the kernels. The estimator carries
// C - 1 coordinates per point where the classes share a kernel (their
// orthonormal contrasts: latentDims), which is exact, and the C
// processes otherwise.
//
// Rows with CondVar 0 (in every class) repeat an earlier point (Model):
// their one neighbour, with coefficient 1, is the point whose latent
// values they share; each has its own label. Test rows are conditioned
// on training rows only, class by class: x*_ct = sum_j TCoef^c_tj x_cj +
// sqrt(TCondVar^c_t) e*_ct, and a test row's class probabilities are
// P(u*_c = max_d u*_d | the labels), u*_c = x*_c + noise.
type Multiclass struct {
	N, C int
	// Start, Nbr: the shared conditioning sets, as Model's.
	Start []int
	Nbr   []int32
	// Coef[c] and CondVar[c] are class c's coefficients (parallel to Nbr)
	// and conditional variances; one entry of each is shared by every
	// class (one kernel).
	Coef, CondVar [][]float64
	Noise         float64
	// Y holds each training row's class, 0..C-1.
	Y []int

	T        int
	TStart   []int
	TNbr     []int32
	TCoef    [][]float64
	TCondVar [][]float64
}

// class returns class c's index into Coef, CondVar, TCoef and TCondVar.
func (m *Multiclass) class(c int) int {
	if len(m.Coef) == 1 {
		return 0
	}
	return c
}

// Shared reports whether the classes share one set of conditionals (one
// kernel).
func (m *Multiclass) Shared() bool { return len(m.Coef) == 1 }

// Dup returns the position of the point that row k repeats, or -1.
func (m *Multiclass) Dup(k int) int {
	if m.CondVar[0][k] != 0 {
		return -1
	}
	return int(m.Nbr[m.Start[k]])
}

// M returns the largest conditioning set.
func (m *Multiclass) M() int {
	mx := 0
	for k := range m.N {
		mx = max(mx, m.Start[k+1]-m.Start[k])
	}
	return mx
}

// ClassModel returns class c's Vecchia model alone: its conditionals on
// the shared sets, the noise, and the orthant bounds [0, +Inf) (which
// mean nothing here: they make a valid Model). It shares m's arrays.
func (m *Multiclass) ClassModel(c int) *Model {
	i := m.class(c)
	md := &Model{N: m.N, Start: m.Start, Nbr: m.Nbr, Coef: m.Coef[i], CondVar: m.CondVar[i], Noise: m.Noise,
		Lower: make([]float64, m.N), Upper: make([]float64, m.N)}
	for k := range md.Upper {
		md.Upper[k] = math.Inf(1)
	}
	if m.T > 0 {
		md.T, md.TStart, md.TNbr, md.TCoef, md.TCondVar = m.T, m.TStart, m.TNbr, m.TCoef[i], m.TCondVar[i]
	}
	return md
}

// Validate checks the model: 2 to gp.MaxClasses classes, one set of
// conditionals or one per class (training and test alike), each class's
// as Model.Validate checks them (the repeated rows the same in every
// class), the labels in 0..C-1 and the noise positive and finite. It
// returns a *core.InputError naming the first row that is wrong (a test
// row's index counts from N).
func (m *Multiclass) Validate() error {
	switch {
	case m.C < 2 || m.C > gp.MaxClasses:
		return &core.InputError{Index: -1, Msg: fmt.Sprintf("%d classes: a multi-class Vecchia model takes 2 to %d", m.C, gp.MaxClasses)}
	case len(m.Coef) != 1 && len(m.Coef) != m.C || len(m.CondVar) != len(m.Coef):
		return &core.InputError{Index: -1, Msg: fmt.Sprintf("%d sets of conditionals for %d classes: give one, or one per class", len(m.Coef), m.C)}
	case len(m.Y) != m.N:
		return &core.InputError{Index: -1, Msg: fmt.Sprintf("%d labels for %d training rows", len(m.Y), m.N)}
	case m.T > 0 && (len(m.TCoef) != len(m.Coef) || len(m.TCondVar) != len(m.Coef)):
		return &core.InputError{Index: -1, Msg: "the test rows' conditionals are not one set, or one per class, as the training rows'"}
	}
	for k, y := range m.Y {
		if y < 0 || y >= m.C {
			return &core.InputError{Index: k, Msg: fmt.Sprintf("row %d: class %d is not in 0..%d", k, y, m.C-1)}
		}
	}
	for i := range m.Coef {
		if len(m.CondVar[i]) != m.N {
			return &core.InputError{Index: -1, Msg: "the model's arrays have inconsistent lengths"}
		}
		if err := m.ClassModel(i).Validate(); err != nil {
			return err
		}
		if i > 0 {
			for k := range m.N {
				if (m.CondVar[i][k] == 0) != (m.CondVar[0][k] == 0) {
					return &core.InputError{Index: k, Msg: fmt.Sprintf("row %d repeats a point in some classes only", k)}
				}
			}
		}
	}
	return nil
}

// latentDims returns the latent coordinates per point that the
// estimator carries, L, and the map E (C x L, row-major) from them to the
// classes' latent values, x_k = E g_k. One kernel: the C - 1 orthonormal
// contrasts of the classes (Helmert's, orthogonal to the classes' common
// level), since an orthogonal map of iid processes is iid and the
// labels depend on the classes' differences only, so that the common
// level, independent of the rest and of the labels, integrates out
// exactly; a kernel per class: the classes themselves (E = I).
func (m *Multiclass) latentDims() (l int, e []float64) {
	c := m.C
	if !m.Shared() {
		e = make([]float64, c*c)
		for i := range c {
			e[i*c+i] = 1
		}
		return c, e
	}
	l = c - 1
	e = make([]float64, c*l)
	for j := 1; j < c; j++ {
		// h_j = (1, ..., 1, -j, 0, ...) / sqrt(j (j + 1)), j ones.
		s := 1 / math.Sqrt(float64(j*(j+1)))
		for i := range j {
			e[i*l+j-1] = s
		}
		e[j*l+j-1] = -float64(j) * s
	}
	return l, e
}

// expanded returns the pattern of the model's L N latent coordinates
// (latentDims), variable k L + a for row k's coordinate a, as a Model
// (whose bounds and noise mean nothing): row k L + a conditions on every
// coordinate of row k's neighbours (with coordinate a's coefficients, 0
// for the others) and, with coefficient 0, on row k's coordinates before
// a; its conditional variance is coordinate a's (its class's, or the
// shared one). A repeated row's variables repeat its point's. The
// proposal's factors live in this pattern (tri): a point's coordinates
// are coupled by its label's site, and the fill-in that the sites make
// between a point's coordinates and its neighbours' other coordinates is
// not small (at N = 400, three classes, a pattern of the same coordinate
// at the neighbours left the correction's log spread over the particles
// at 7, this one at 0.3), so the pattern keeps it.
func (m *Multiclass) expanded(l int) *Model {
	n := m.N * l
	e := &Model{N: n, Start: make([]int, 1, n+1), CondVar: make([]float64, n), Noise: m.Noise,
		Lower: make([]float64, n), Upper: make([]float64, n)}
	for k := range m.N {
		s, t := m.Start[k], m.Start[k+1]
		for a := range l {
			i := 0
			if !m.Shared() {
				i = a
			}
			v := k*l + a
			if d := m.Dup(k); d >= 0 {
				e.Nbr = append(e.Nbr, int32(d*l+a))
				e.Coef = append(e.Coef, 1)
			} else {
				for q := s; q < t; q++ {
					for b := range l {
						e.Nbr = append(e.Nbr, m.Nbr[q]*int32(l)+int32(b))
						if b == a {
							e.Coef = append(e.Coef, m.Coef[i][q])
						} else {
							e.Coef = append(e.Coef, 0)
						}
					}
				}
				for b := range a {
					e.Nbr = append(e.Nbr, int32(k*l+b))
					e.Coef = append(e.Coef, 0)
				}
				e.CondVar[v] = m.CondVar[i][k]
			}
			e.Start = append(e.Start, len(e.Nbr))
		}
	}
	return e
}

// Other returns the class of row k's q-th difference (0 <= q < C - 1):
// the classes other than its label, in increasing order.
func (m *Multiclass) Other(k, q int) int {
	if q < m.Y[k] {
		return q
	}
	return q + 1
}

// Implied returns the dense multinomial probit problem that the model
// implies, in core/gp's Multiclass layout (Multiclass.Cov, TestRows):
// the covariance of the N (C - 1) class differences w_{k,q} = u_{k,y_k} -
// u_{k,Other(k,q)}, variable k (C - 1) + q, row-major, from each class's
// implied covariance (Model.Implied); and, for its test rows, the
// covariances of each test row's C utilities with the differences (row
// t C + c, T C x N (C - 1)) and their variances. With core's estimator
// and core.PredictClasses it computes the model's own probability and
// class posteriors exactly (up to their Monte Carlo error): what checks
// the sparse estimator and measures the approximation. O(C N^3) work and
// (N C)^2 memory.
func (m *Multiclass) Implied() (cov, cross, vars []float64) {
	n, c := m.N, m.C
	q := c - 1
	nv := n * q
	s := make([][]float64, c)  // S_c = Cov(u_c) over the training rows
	cx := make([][]float64, c) // Cov(x*_c, x_c), T x N
	vv := make([][]float64, c) // Var(u*_c)
	for cl := range c {
		if cl > 0 && m.Shared() {
			s[cl], cx[cl], vv[cl] = s[0], cx[0], vv[0]
			continue
		}
		s[cl], cx[cl], vv[cl] = m.ClassModel(cl).Implied()
	}
	cov = gp.DifferenceCov(s, m.Y, c)
	if m.T == 0 {
		return cov, nil, nil
	}
	cross, vars = make([]float64, m.T*c*nv), make([]float64, m.T*c)
	for t := range m.T {
		for cl := range c {
			row := cross[(t*c+cl)*nv : (t*c+cl+1)*nv]
			for j := range n {
				kx := cx[cl][t*n+j]
				for b := range q {
					switch cl {
					case m.Y[j]:
						row[j*q+b] = kx
					case m.Other(j, b):
						row[j*q+b] = -kx
					}
				}
			}
			vars[t*c+cl] = vv[cl][t]
		}
	}
	return cov, cross, vars
}

// NewMulticlass returns the multinomial probit classifier's model on the
// structure s: kernels ks (one shared by the classes, or one per class,
// each on the features feat, by input row, n x d), labels y (by input
// row, 0..classes-1), and the test points with features tf whose
// conditioning sets tnb come from s.TestNeighbours. The nugget, in (0, 1),
// is moved from each utility's noise (variance 1) into its latent
// process, as NewClassifier moves it. Rows are in the structure's order.
func NewMulticlass(s *Structure, ks []*gp.Kernel, classes int, feat []float64, y []int, nugget float64, tf []float64, tnb [][]int32, threads int) (*Multiclass, error) {
	if !(nugget > 0 && nugget < 1) {
		return nil, fmt.Errorf("vecchia: nugget %v is not in (0, 1)", nugget)
	}
	if len(ks) != 1 && len(ks) != classes {
		return nil, fmt.Errorf("vecchia: %d kernels for %d classes: give one, or one per class", len(ks), classes)
	}
	m := &Multiclass{N: s.N, C: classes, Noise: 1 - nugget, Y: make([]int, s.N)}
	for i, k := range ks {
		start, nbr, coef, cv, err := s.Conditionals(k, feat, nugget, threads)
		if err != nil {
			return nil, fmt.Errorf("class %d's kernel: %w", i, err)
		}
		m.Start, m.Nbr = start, nbr
		m.Coef, m.CondVar = append(m.Coef, coef), append(m.CondVar, cv)
		if len(tnb) > 0 {
			ts, tn, tc, tv, err := s.TestConditionals(k, feat, tf, tnb, nugget, threads)
			if err != nil {
				return nil, fmt.Errorf("class %d's kernel: %w", i, err)
			}
			m.T, m.TStart, m.TNbr = len(tnb), ts, tn
			m.TCoef, m.TCondVar = append(m.TCoef, tc), append(m.TCondVar, tv)
		}
	}
	for pos, r := range s.Perm {
		m.Y[pos] = y[r]
	}
	return m, m.Validate()
}
