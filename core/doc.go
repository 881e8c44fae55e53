// Package core is the numerical heart of gpc: Gaussian box probabilities
//
//	P(lower <= v <= upper),   v ~ N(mean, R),
//
// in log space, by sequential Monte Carlo, for dimensions in the thousands.
// It does no I/O and knows nothing of Arrow or flags.
//
// Its sub-packages build on it: gp is the Gaussian process model (kernels,
// the probit classifier whose marginal likelihood is an orthant
// probability), fit chooses the model's hyperparameters (tuning surfaces on
// common random numbers, optimizers, pseudo-marginal MCMC).
//
// # Data flow
//
// A Box (covariance, bounds, mean) becomes a Factor: the variables are
// ordered (Ordering, or ChooseOrder to pick by pilot runs), the mean is moved
// into the bounds and the reordered covariance is factorised, R = L L'. With
// v = L z, variable k given the earlier ones is N(sum_{j<k} L[k][j] z_j,
// L[k][k]^2), so the estimator never inverts a matrix. Estimate then runs
// Config.Groups independent particle groups (each with its own random
// stream derived from the seed, so the result does not depend on the thread
// count) and combines them into a Result: log P, its standard error and
// diagnostics.
//
// # Methods
//
// MethodSMC draws each variable from its conditional normal truncated to its
// interval and weights the particle by the interval's probability (the
// fully adapted particle filter), resampling when the effective sample size
// falls. MethodPaperHard and MethodPaperSoft are the paper's Algorithm
// GPC-MC with its hard and soft counts (Atiya, Fayed and Abdel-Gawad 2013).
//
// # Special functions
//
// LogPhi, LogPhiDiff, PhiInvLog and TruncNormQuantile are accurate into the
// far tails (log Phi(-1e5), intervals 40 standard deviations out), where
// gonum's distuv underflows.
package core
