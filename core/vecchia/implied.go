package vecchia

import "math"

// Implied returns the dense covariance that the model implies for its
// variables w = x + noise, row-major N x N in the model's order,
//
//	Cov(w) = (A'A)^-1 + Noise I,
//
// and, for its test rows, their covariances with w (T x N) and their
// variances: what a dense estimator needs to compute the model's own P
// and posteriors exactly, for checking the sparse estimator at small N
// (O(N^3) work, N^2 memory). A repeated point's latent value is its
// original's.
func (m *Model) Implied() (cov, cross, vars []float64) {
	n := m.N
	// The columns of K = (A'A)^-1 = A^-1 A^-T, from L = A^-1 (lower):
	// x = B x + D^1/2 e gives x = L e with L = (I - B)^-1 D^1/2; row k of
	// L is sum_j B_kj L_j + sqrt(D_k) e_k.
	l := make([]float64, n*n)
	for k := range n {
		row := l[k*n : k*n+n]
		for q := m.Start[k]; q < m.Start[k+1]; q++ {
			j := int(m.Nbr[q])
			b := m.Coef[q]
			for c, v := range l[j*n : j*n+j+1] {
				row[c] += b * v
			}
		}
		row[k] += math.Sqrt(m.CondVar[k])
	}
	cov = make([]float64, n*n)
	for i := range n {
		for j := 0; j <= i; j++ {
			s := 0.0
			li, lj := l[i*n:i*n+j+1], l[j*n:j*n+j+1]
			for c := range lj {
				s += li[c] * lj[c]
			}
			cov[i*n+j], cov[j*n+i] = s, s
		}
		cov[i*n+i] += m.Noise
	}
	if m.T == 0 {
		return cov, nil, nil
	}
	cross, vars = make([]float64, m.T*n), make([]float64, m.T)
	lt := make([]float64, n)
	for t := range m.T {
		clear(lt)
		for q := m.TStart[t]; q < m.TStart[t+1]; q++ {
			j := int(m.TNbr[q])
			for c, v := range l[j*n : j*n+j+1] {
				lt[c] += m.TCoef[q] * v
			}
		}
		v := m.TCondVar[t] + m.Noise
		for _, x := range lt {
			v += x * x
		}
		vars[t] = v
		for i := range n {
			s := 0.0
			for c, x := range l[i*n : i*n+i+1] {
				s += x * lt[c]
			}
			cross[t*n+i] = s
		}
	}
	return cov, cross, vars
}
