package core

import (
	"errors"
	"math"

	"github.com/gpc-mc/gpc/internal/gemm"

	"gonum.org/v1/gonum/floats"
)

// LogEvidence returns EP's approximation of log P, the log normalising
// constant of the prior times the scaled sites,
//
//	log Z_EP = log Z + sum_i log Zt_i,
//	log Zt_i = log Zh_i - 1/2 log(s_i^2/c_i^2) - m_i^2/(2 s_i^2) + mu_i^2/(2 c_i^2),
//
// Z as in EP, for each site its cavity N(mu_i, c_i^2) (Sigma_ii and M_i
// without the site), Zh_i = P(a_i <= u_i <= b_i) under the cavity, and
// s_i^2, m_i the cavity times the unscaled site: each scale Zt_i makes the
// scaled site carry the mass of the indicator it replaces. It is exact for
// independent variables.
//
// References: Rasmussen and Williams (2006), eq. 3.65 and 3.73; Cunningham,
// Hennig and Lacoste-Julien (2011), eq. 19.
func (e *EP) LogEvidence() float64 {
	lz := e.LogZ
	for i := range e.N {
		s2, m := e.Sigma[i*e.N+i], e.M[i]
		t, nu := e.Tau[i], e.Nu[i]
		cp := 1/s2 - t // cavity precision
		c2 := 1 / cp
		mu := c2 * (m/s2 - nu)
		// The cavity times the site, recomputed from the cavity.
		q2 := 1 / (cp + t)
		qm := q2 * (mu*cp + nu)
		c := math.Sqrt(c2)
		lz += LogPhiDiff((e.a[i]-mu)/c, (e.b[i]-mu)/c) -
			0.5*math.Log(q2/c2) - qm*qm/(2*q2) + mu*mu/(2*c2)
	}
	return lz
}

// Score returns the gradient of LogEvidence with respect to R at EP's fixed
// point, as a Score of one group: with T = diag(Tau),
//
//	A = b b' - T^1/2 B^-1 T^1/2,   B = I + T^1/2 R T^1/2,
//	b = Nu - T^1/2 B^-1 T^1/2 R Nu,
//
// which is Fisher's identity with EP's Gaussian in place of the truncated
// normal, A = R^-1 (Sigma + M M') R^-1 - R^-1 (Rasmussen and Williams 2006,
// eq. 5.27 and Algorithm 5.2; GPML's infEP). It is the exact derivative only
// where EP has converged.
func (e *EP) Score() (*Score, error) {
	n := e.N
	if e.r == nil {
		return nil, errors.New("core: EP.Score needs an EP that kept R (NewEPTol)")
	}
	sq := make([]float64, n)
	for i, t := range e.Tau {
		sq[i] = math.Sqrt(t)
	}
	// B = I + T^1/2 R T^1/2 = L_B L_B' (its lower triangle).
	l := make([]float64, n*n)
	for i := range n {
		for j := 0; j <= i; j++ {
			l[i*n+j] = sq[i] * e.r[i*n+j] * sq[j]
		}
		l[i*n+i]++
	}
	workers := cholWorkers()
	if cholesky(l, n, nil, workers) >= 0 {
		return nil, errors.New("core: EP broke down: I + T^1/2 R T^1/2 is not positive definite")
	}
	// V = T^1/2 L_B^-T (row i: sq_i e_i' L_B^-T), so that
	// T^1/2 B^-1 T^1/2 = V V' =: C.
	v := make([]float64, n*n)
	for i := range n {
		v[i*n+i] = sq[i]
	}
	var ws gemm.Workspace
	solveRowsTo(v, n, l, n, &ws, workers)
	c := l // L_B is no longer needed
	symProductTo(c, v, n, n, &ws, workers)
	// b = Nu - C R Nu.
	rnu := make([]float64, n)
	for i := range n {
		rnu[i] = floats.Dot(e.r[i*n:i*n+n], e.Nu)
	}
	b := make([]float64, n)
	for i := range n {
		b[i] = e.Nu[i] - floats.Dot(c[i*n:i*n+n], rnu)
	}
	a := c
	for i := range n {
		row := a[i*n : i*n+n]
		for j := range row {
			row[j] = b[i]*b[j] - row[j]
		}
	}
	return &Score{N: n, A: [][]float64{a}, Weight: []float64{1}}, nil
}
