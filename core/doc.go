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
// common random numbers, optimizers, pseudo-marginal MCMC), vecchia is the
// probit classifier under a Vecchia approximation and its estimator, a
// peer of the dense one on the same driver.
//
// # Data flow
//
// A Box (covariance, bounds, mean) becomes a Factor: the variables are
// ordered (Ordering, or Choose to pick an order and a method by pilot runs), the mean is moved
// into the bounds and the reordered covariance is factorised, R = L L'. With
// v = L z, variable k given the earlier ones is N(sum_{j<k} L[k][j] z_j,
// L[k][k]^2), so the estimator never inverts a matrix. Estimate then runs
// Config.Groups independent particle groups (each with its own random
// stream derived from the seed, so the result does not depend on the thread
// count) and combines them into a Result: log P, its standard error and
// diagnostics (the driver's, shared with core/vecchia: see below).
//
// # The seam: Estimator and its driver
//
// Every estimator of a box probability by particle groups is an
// Estimator (driver.go), modelled on gonum's optimize (one Method
// interface, one Minimize driver): a prepared problem that says how many
// variables its particles step through (Dim), how it runs a Config (Plan:
// its defaults and its memory plan under MaxMemory, the groups run at
// once) and how one worker runs its groups (NewRunner: a Runner, whose
// RunGroup propagates a group with its random stream and whose Output
// detaches what the group leaves: its particles, or its test
// posteriors). Estimate and EstimateGroups drive any Estimator the same
// way: the plan, the groups' streams and workers (RunGroups), one
// in-order hand-over of their outputs to a Sink (inOrder, which gives
// each worker a spare output to reuse), a kept cloud (Config.Keep), and
// the summary (Summarize, Result.Trust). A Factor is this package's
// Estimator (the dense path); core/vecchia's Prepared is the Vecchia
// path's. docs/architecture.md says how the tools use the seam and how
// the estimators to come plug into it.
//
// The files: what the estimators share is driver.go, groups.go,
// estimate.go (Config, Result, GroupResult, Summarize, combine), memory.go
// (MemoryError, PlanParticles), rng.go and share.go (streams, systematic
// resampling, draws), posterior.go's CombinePosteriors, the special
// functions (normal.go, quantile.go, bvn.go) and the batch kernels
// (fastnorm*.go, axpy*.go, vecpath.go). The dense method is factor.go,
// chol.go, filter*.go, ep.go, epevidence.go, widen.go, tilt.go,
// choose.go, parts.go, predict.go, posterior.go's Predict, classes.go
// and score.go.
//
// # Methods
//
// MethodSMC draws each variable from its conditional normal truncated to its
// interval and weights the particle by the interval's probability (the
// fully adapted particle filter), resampling when the effective sample size
// falls. MethodMET is the same with Botev's minimax exponentially tilted
// proposal (Factor.Tilt), MethodEP with the particles propagated under
// expectation propagation's Gaussian approximation and weighted by the
// exact target over it (PrepareEP). MethodPaperHard and MethodPaperSoft are
// the paper's Algorithm GPC-MC with its hard and soft counts (Atiya, Fayed
// and Abdel-Gawad 2013).
//
// # Special functions
//
// LogPhi, LogPhiDiff, PhiInvLog and TruncNormQuantile are accurate into the
// far tails (log Phi(-1e5), intervals 40 standard deviations out), where
// gonum's distuv underflows.
package core
