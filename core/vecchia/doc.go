// Package vecchia is gpc's path past one machine's N^2: the probit GP
// classifier (more generally, a box probability of a Gaussian latent
// process observed with noise) under a Vecchia approximation, and an
// estimator of its probability at a cost linear in N per particle.
//
// # The model
//
// The training points are ordered (MaxMin, by default: coarse to fine) and
// each is conditioned on its M nearest earlier points (EarlierNeighbours,
// on a static k-d tree of its own, kdtree.go): the latent process's joint
// density becomes the product of these conditionals,
//
//	x_k | x_c(k) ~ N(B_k x_c(k), D_k),   B_k = K_cc^-1 k_ck,   D_k = k_kk - k_kc B_k,
//
// whose precision (A'A, A = D^-1/2 (I - B)) has a sparse inverse Cholesky
// factor with M + 1 entries per row: exact when every point conditions on
// all before it, and an approximation of the latent covariance otherwise
// (Model, Structure, NewClassifier). Each training row observes its latent
// value with the probit's noise, w_k = x_k + eps_k, its label saying
// w_k >= 0 or w_k <= 0; a small nugget is moved from the noise into the
// latent process (NewClassifier), which leaves the dense model as it is
// and keeps the neighbours' systems well posed. Repeated points (the same
// features) share one latent value: a repeat conditions on its point alone
// with variance 0. Test points are conditioned on their M nearest training
// points.
//
// Why the latent process, and why maxmin: conditioning the noisy w instead
// (the response) loses the screening effect that makes nearest neighbours
// sufficient, to the noise (docs/vecchia.md's tables measure both);
// and in a maxmin order a point's nearest earlier points surround it, at
// every scale, rather than lie to one side.
//
// # The estimator
//
// The estimator is MethodEP's fully adapted particle filter of core on
// the model, twisted by a Gaussian approximation q of the posterior whose
// conditionals given the earlier variables are sparse (Prepared): the
// particles draw each latent value from q's conditional with the row's
// site divided out and its bound applied, so that they see the constraints
// still ahead; each step costs O(M) per particle. q's sites come from
// Laplace's approximation (Laplace) refined by expectation propagation;
// its factor is exact on a dense block of the coarsest variables and an
// incomplete Cholesky factorisation in A's pattern after it, and each
// particle's weight carries the exact correction from q to the model, so
// the estimate is unbiased for the model's probability. Each group of
// particles predicts the test rows at its end (their particles, a value
// per training point each, are not kept).
//
// Prepared is a core.Estimator: core's driver (core.Estimate,
// core.EstimateGroups) runs it as it runs the dense Factor, with the
// particle groups, their random streams, the in-order hand-over of each
// group's output (its test posteriors, core.CloudGroup's Post) to a
// core.Sink, standard errors and warnings that core owns (core.Summarize,
// core.Result.Trust, core.CombinePosteriors): the same estimates from any
// thread count, and groups run in ranges (shards) combine into the whole
// run's bits. Estimate is core.Estimate with a sink of the posteriors.
//
// # Fitting the kernel
//
// The conditionals' derivatives in the kernel's log-hyperparameters
// (Structure.ConditionalDerivs, and their contraction with a derivative in
// A's entries, Structure.AdjointGradTo) give the gradient of the Vecchia
// prior's log density of a latent path or of weighted paths
// (Model.LogPrior, Model.PriorAdjoint, InnovationMoments), the estimator's
// Fisher score (Prepared.Score: each group's weighted moments of the prior's
// score and of its Stein-identity twin, combined by GroupScores), and of the model's
// Laplace evidence (LaplaceEvidence: the posterior mode by Newton's method,
// log det(A'A + W) by the incomplete factor in A's pattern with a dense
// block of the coarsest rows, differentiated backwards, the mode's
// dependence by the implicit function theorem). Package vfit maximizes the
// evidence, and then the estimate (its exact stage).
//
// References: A. V. Vecchia (1988), "Estimation and model identification
// for continuous spatial processes", JRSS B 50:297-312; M. Katzfuss and J.
// Guinness (2021), "A general framework for Vecchia approximations of
// Gaussian processes", Statistical Science 36:124-141; J. Guinness (2018),
// "Permutation and grouping methods for sharpening Gaussian process
// approximations", Technometrics 60:415-429; F. Schaefer, M. Katzfuss and
// H. Owhadi (2021), "Sparse Cholesky factorization by Kullback-Leibler
// minimization", SIAM J. Sci. Comput. 43:A2019-A2046; D. Zilber and M.
// Katzfuss (2021), "Vecchia-Laplace approximations of generalized Gaussian
// processes for big non-Gaussian spatial data", CSDA 153:107081; J. Cao and
// M. Katzfuss (2024), "Linear-cost Vecchia approximation of multivariate
// normal probabilities", JASA (arXiv 2311.09426).
package vecchia
