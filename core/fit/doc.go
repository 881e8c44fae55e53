// Package fit chooses a Gaussian process classifier's hyperparameters from
// its marginal likelihood, estimated by package core:
//
//   - Surface: the log marginal likelihood as a function of the
//     log-hyperparameters, estimated with common random numbers (the same
//     method, variable order and random streams at every point), so that it
//     is smooth in theta for a fixed seed and differences between nearby
//     points are far more precise than the values;
//   - Surface.Maximize: the maximum of that surface by a simplex search and a
//     local quadratic fit, with the Monte Carlo error of the optimum;
//   - Surface.Fit and FitStarts: the maximum by gradients, L-BFGS on EP's
//     evidence and then on the estimate with Fisher's identity's gradient,
//     from the data's start (DataScale.Start) inside a box (DataScale.Bounds),
//     refusing a flat region (KernelTrap), from one start or several;
//   - Surface.PseudoMarginal: pseudo-marginal MCMC over the
//     log-hyperparameters under a LogNormalPrior, the estimate being
//     unbiased for the marginal likelihood.
//
// The training set is any gp.Model: the binary classifier, or the
// multinomial probit model with one kernel or one per class. It does no
// I/O; the tools gpc-tune, gpc-fit and gpc-mcmc (internal/cli) drive it.
package fit
