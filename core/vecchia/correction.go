package vecchia

import (
	"math"

	"github.com/gpc-mc/gpc/core"
)

// correctionSeed is the random stream of CorrectionVariance's probes.
const correctionSeed = 0x636f7272656374

// CorrectionVariance estimates the variance under the proposal q of the
// deferred correction that the particles' final weights carry, r(x) =
// -(x - mu)'(P - T'T)(x - mu)/2 + const, P = A'A + diag(tau) the
// Gaussian q stands for and T'T q's precision (T the incomplete factor):
//
//	Var_q(r) = ||L - I||_F^2 / 2,  L = T^-T P T^-1,
//
// by Hutchinson's estimator over the given number of Rademacher probes
// (each one forward and one backward substitution and a product with
// A'A from the model's conditionals: about 0.2 s at N = 10^6), drawn
// from a fixed stream. It returns the
// estimate and its standard error (0 and 0 for a complete proposal,
// whose factor is exact). exp(r) then spreads like a log-normal of that
// variance: a group of n particles samples it while Var_q(r) is well
// below log n, and beyond that the group estimates are heavy-tailed
// whatever n (docs/vecchia.md, Calibration: 0.99 at N = 10^5 and about
// 15 at 10^6 on the two-class problem, m = 30).
func (p *Prepared) CorrectionVariance(probes int) (v, se float64) {
	if p.Complete() || probes < 1 {
		return 0, 0
	}
	m, t := p.m, p.prop
	n := m.N
	z, u, au, pu, lz := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	vals := make([]float64, probes)
	for i := range vals {
		g := core.GroupStream(correctionSeed, i)
		for k := range z {
			z[k] = 0
			if !t.dup[k] {
				z[k] = 1
				if g.Float64Open() < 0.5 {
					z[k] = -1
				}
			}
		}
		t.solveTo(u, z)
		p.priorPrecisionTimes(pu, au, u)
		for k := range pu {
			pu[k] += p.tau[k] * u[k]
		}
		t.solveTransTo(lz, pu)
		s := 0.0
		for k, zk := range z {
			if !t.dup[k] {
				d := lz[k] - zk
				s += d * d
			}
		}
		vals[i] = s / 2
	}
	mean, ss := 0.0, 0.0
	for _, x := range vals {
		mean += x
	}
	mean /= float64(probes)
	for _, x := range vals {
		ss += (x - mean) * (x - mean)
	}
	if probes > 1 {
		se = math.Sqrt(ss / float64(probes-1) / float64(probes))
	}
	return mean, se
}

// priorPrecisionTimes sets dst = A'A x, the prior's precision times x,
// from the model's conditionals (A's row k is (e_k - B_k) / sqrt(D_k);
// repeated points' rows empty), row by row on one goroutine, without
// building A: at N = 10^6 a copy of A and its transpose would take about
// 0.7 GB beside the particles. ax is scratch of N values.
func (p *Prepared) priorPrecisionTimes(dst, ax, x []float64) {
	m, dup := p.m, p.prop.dup
	for k := range m.N {
		ax[k] = 0
		if dup[k] {
			continue
		}
		s := x[k]
		for q := m.Start[k]; q < m.Start[k+1]; q++ {
			s -= m.Coef[q] * x[m.Nbr[q]]
		}
		ax[k] = s / math.Sqrt(m.CondVar[k])
	}
	clear(dst)
	for k := range m.N {
		if dup[k] {
			continue
		}
		v := ax[k] / math.Sqrt(m.CondVar[k])
		dst[k] += v
		for q := m.Start[k]; q < m.Start[k+1]; q++ {
			dst[m.Nbr[q]] -= m.Coef[q] * v
		}
	}
}
