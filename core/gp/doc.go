// Package gp is gpc's Gaussian process model: the covariance functions of
// the latent process with their hyperparameters (Kernel, Hyper) and the
// probit classifier built on them (Classifier), whose marginal likelihood
// and test posteriors are Gaussian orthant probabilities that package core
// estimates.
//
// # The binary probit classifier
//
// Training features x_1..x_N with labels y_i in {-1, +1}, latent f ~ GP(0, k)
// and probit likelihood p(y_i | f_i) = Phi(y_i f_i). With C = diag(y),
//
//	p(y | X) = P(v >= 0),   v ~ N(0, R),   R = C (I + K) C,
//
// (Atiya, Fayed and Abdel-Gawad 2013, eq. MARG-LIK-FIN2): ClassifierCov
// builds R, Classifier.Box the orthant problem, and ClassifierTestRow a
// test pattern's row (eq. R-NEW), whose posterior is a ratio of two orthant
// probabilities (core.Predict).
//
// # The multinomial probit classifier
//
// For C > 2 classes, Multiclass: C independent latent functions
// f_c ~ GP(0, k_c), utilities u_ic = f_c(x_i) + e_ic with e_ic iid
// N(0, 1), and y_i = argmax_c u_ic. The likelihood is the orthant
// probability of the N (C - 1) class differences w_{i,k} = u_{i,y_i} -
// u_{i,k} (k != y_i), with covariance A (blockdiag_c (K_c + I)) A'
// (Multiclass.Cov); for C = 2 it is twice the binary R, the same model. A
// test pattern adds its C utilities (Multiclass.TestRows), whose class
// probabilities given the training differences core.PredictClasses
// averages over the particles.
//
// Both are a Model: the orthant problem under given kernels
// (KernelBox) and the gradient of its log probability in the kernels'
// log-hyperparameters from a covariance score (KernelGradTo), which
// package fit maximizes.
//
// # Kernels
//
// Kernel.Eval computes k(x, x') for the kinds of KernelKind: the paper's RBF
// beta exp(-||x - x'||^2 / alpha^2) (no factor 2), ARD (one alpha per
// feature), Matern 3/2 and 5/2, and the scaled linear kernel, each plus an
// optional constant bias. Hyper names one hyperparameter of a Kernel, so
// that package fit can move it.
package gp
