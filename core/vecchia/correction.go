package vecchia

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
// A'A from the model's conditionals, batchSides of them at once on every
// core: batchCorrectionVariance), drawn from a fixed stream. It returns the
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
	return batchCorrectionVariance(p.prop, probes, p.m, p.tau)
}
