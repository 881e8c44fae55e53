package vecchia

import (
	"math"
	"runtime"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/internal/gemm"
)

// Implied returns the dense covariance that the model implies for its
// variables w = x + noise, row-major N x N in the model's order,
//
//	Cov(w) = (A'A)^-1 + Noise I = L L' + Noise I,   x = L e,
//
// and, for its test rows, their covariances with w (T x N) and their
// variances: what a dense estimator needs to compute the model's own P
// and posteriors exactly, to check the sparse estimator and to measure
// the approximation (O(N^3) work on internal/gemm's kernel, N^2 memory).
// Row k of L is sum_j B_kj L_j + sqrt(D_k) e_k; a repeated point's latent
// value is its point's.
func (m *Model) Implied() (cov, cross, vars []float64) {
	n := m.N
	l := m.latentFactor()
	cov = m.impliedCov(l)
	if m.T == 0 {
		return cov, nil, nil
	}
	lt := make([]float64, m.T*n)
	vars = make([]float64, m.T)
	for t := range m.T {
		row := lt[t*n : t*n+n]
		for q := m.TStart[t]; q < m.TStart[t+1]; q++ {
			j := int(m.TNbr[q])
			core.Axpy(row[:j+1], m.TCoef[q], l[j*n:j*n+j+1])
		}
		v := m.TCondVar[t] + m.Noise
		for _, x := range row {
			v += x * x
		}
		vars[t] = v
	}
	cross = make([]float64, m.T*n)
	var ws gemm.Workspace
	workers := runtime.GOMAXPROCS(0)
	ws.NT(m.T, n, n, lt, n, l, n, cross, n, false, workers)
	return cov, cross, vars
}

// latentFactor returns the lower-triangular L with x = L e (row-major N x
// N).
func (m *Model) latentFactor() []float64 {
	n := m.N
	l := make([]float64, n*n)
	for k := range n {
		row := l[k*n : k*n+n]
		for q := m.Start[k]; q < m.Start[k+1]; q++ {
			j := int(m.Nbr[q])
			core.Axpy(row[:j+1], m.Coef[q], l[j*n:j*n+j+1])
		}
		row[k] += math.Sqrt(m.CondVar[k])
	}
	return l
}
