package main

// Plan sizes a run: which cells of each table are computed, and with how
// many problems, runs and particles.
type Plan struct {
	Name string
	Seed uint64

	// Table 1: its cells; mvtnorm is run up to MvtnormMaxN (R's pmvnorm
	// accepts at most 1000).
	T1          []T1Cell
	MvtnormMaxN int
	NoR         bool

	// Tables 2a and 2b: problems (0-based), particle counts, runs.
	T2Problems []int
	T2M        []int
	T2Runs     int

	// Figures 1 and 2 (Experiment 2 problem 3): particle counts, runs.
	FigM    []int
	FigRuns int

	// Table 3: synthetic problems (0-based), the real ones by name, the
	// particle count; BigMethods are the methods run on problems of more
	// than BigN training patterns (all of Methods otherwise).
	T3Synthetic []int
	T3Real      []string
	T3M         int
	BigN        int
	BigMethods  []string

	// The real data sets of the pipeline table, and its particle count.
	Real  []string
	RealM int

	// Surfaces: Experiment 4 problem (0-based) and hyperparameter sets
	// (0-based) drawn as posterior surfaces on a Grid x Grid grid.
	SurfaceProblem int
	SurfaceHyper   []int
	SurfaceM       int
	Grid           int
}

// T1Cell is a cell of Table 1: dimension, particles, problems.
type T1Cell struct{ N, M, Problems int }

// Methods are the rows of every table: gpc's default (method and order
// chosen by a pilot, as the tools do), each gpc method in its best order,
// and the paper's algorithm with its hard and soft counts (one particle
// population, shuffled order, as in the paper).
var Methods = []string{"default", "ep/greedy", "met/sharp", "smc/sharp", "paper-hard", "paper-soft"}

var quickPlan = Plan{
	Name: "quick", Seed: 1,
	T1: []T1Cell{{50, 10000, 5}}, MvtnormMaxN: 50,
	T2Problems: []int{0}, T2M: []int{10000}, T2Runs: 2,
	FigM: []int{1000}, FigRuns: 2,
	T3Synthetic: []int{0}, T3M: 2000, BigN: 200, BigMethods: []string{"default", "paper-soft"},
	Real: []string{"crabs"}, RealM: 2000,
	SurfaceProblem: 0, SurfaceHyper: []int{2}, SurfaceM: 1000, Grid: 16,
}

// tinyPlan is quickPlan cut down further for the race detector (-short).
var tinyPlan = Plan{
	Name: "tiny", Seed: 1,
	T1: []T1Cell{{50, 2000, 3}}, MvtnormMaxN: 50,
	T2Problems: []int{0}, T2M: []int{2000}, T2Runs: 1,
	FigM: []int{500}, FigRuns: 1,
	T3Synthetic: []int{0}, T3M: 1000, BigN: 100, BigMethods: []string{"default"},
	Real: []string{"crabs"}, RealM: 1000,
	SurfaceProblem: 0, SurfaceHyper: []int{2}, SurfaceM: 500, Grid: 8,
}

// fullPlan is the published run, sized to fit 40 minutes on the 2-core
// test machine while other work runs beside it (niced); it took 15.5.
var fullPlan = Plan{
	Name: "full", Seed: 1,
	T1:          []T1Cell{{50, 10000, 10}, {50, 100000, 10}, {200, 10000, 10}, {500, 10000, 5}, {1000, 10000, 3}},
	MvtnormMaxN: 1000,
	T2Problems:  []int{0, 1, 2, 3}, T2M: []int{10000}, T2Runs: 3,
	FigM: []int{1000, 3000, 10000, 30000}, FigRuns: 3,
	T3Synthetic: []int{0, 1, 2, 3, 4, 5}, T3Real: []string{"crabs", "breast_cancer", "usps_3v5"}, T3M: 10000,
	BigN: 500, BigMethods: []string{"default", "met/sharp", "paper-soft"},
	Real: []string{"crabs", "breast_cancer", "ionosphere", "sonar", "pima", "usps_3v5"}, RealM: 10000,
	SurfaceProblem: 1, SurfaceHyper: []int{2, 5}, SurfaceM: 10000, Grid: 40,
}
