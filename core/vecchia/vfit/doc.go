// Package vfit chooses a Vecchia classifier's kernel hyperparameters by
// the deterministic stage of a fit: the maximum of the Vecchia model's
// Laplace evidence (vecchia.LaplaceEvidence, Zilber and Katzfuss's
// Vecchia-Laplace), O(N M^3) per evaluation with its exact gradient, by
// core/fit's search (fit.MaximizeEvidence: L-BFGS with bounded steps in
// the box of fit.DataScale.Bounds, the run-off snapped to the box's edge)
// from the data's start (fit.DataScale.Start), refusing a start or an end
// in a trap (fit.KernelTrap), from one start or several (fit.DrawRestart).
//
//   - Problem: the training set and the Vecchia model's settings (M, the
//     order, the nugget, the log-determinant's dense block);
//   - Evidence: the evidence as a function of the log-hyperparameters on
//     one ordering and set of neighbours (a vecchia.Structure), with its
//     gradient through the conditionals' derivatives
//     (vecchia.Structure.AdjointGradTo);
//   - Maximize and MaximizeStarts: the search, recomputing the ordering
//     and neighbours where the ard kernel's metric moved (below).
//
// # The ordering and the neighbours
//
// The maxmin order and the nearest neighbours are Euclidean in the
// kernel's metric: the features themselves for the isotropic kernels (rbf,
// Matern), whose length scale scales every distance alike and so changes
// neither, and each feature over its length scale for ard. So an isotropic
// kernel's structure is computed once, and an ard kernel's at the start's
// length scales; the search then runs on that fixed structure, its
// objective a smooth function of theta, to its optimum. If the optimum's
// length scales have moved, relative to one another, by more than a factor
// RestructureFactor from the structure's (the spread of log(alpha_d /
// alpha_d of the structure) over the features above log 2: a common
// factor moves no neighbour), the structure is recomputed at the optimum
// and the search runs again from there, at most MaxRestructures times.
// Where the structure at the optimum breaks the evidence's factor down
// even with the largest dense block (its neighbours in the new metric
// far weaker than the labels' information), the search's own structure
// and its optimum stay, and Result.Kept says so. Within one search the objective never jumps; between searches it
// changes by the difference between the two structures' Vecchia models at
// the same theta.
//
// The exact stage (Exact, two classes) follows the Laplace stage as the
// dense fit's follows EP's, on the same code (fit.Exact): its Sampler
// estimates the Vecchia model's log marginal likelihood as gpc-train does,
// on the Laplace stage's last structure held fixed (common random numbers
// across theta), with the gradient by Fisher's identity over each particle
// group's final weighted paths (vecchia.Prepared.Score,
// vecchia.GroupScores).
//
// The package does numerics only: no I/O.
package vfit
