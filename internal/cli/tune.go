package cli

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/fit"
	"github.com/gpc-mc/gpc/core/gp"
	"github.com/gpc-mc/gpc/format"
)

const tuneDescription = `Choose a GP classifier's hyperparameters by the marginal likelihood: estimate the log marginal likelihood, with its standard error, over a grid of hyperparameters, then refine.

Features are read as gpc-kernel reads them (CSV, Parquet or Arrow IPC, with labels: two classes, or three or more for the multinomial probit model, with one kernel shared by the classes). Each hyperparameter takes one value (fixed) or several (a grid axis): a comma-separated list, or LO:HI:K, K values spaced evenly in log from LO to HI. The grid is every combination of the axes' values. A hyperparameter not given is fixed at the data's start, as gpc-fit's (alpha the median distance between two training points, every feature's for ard; beta 1, linear: 1 / the mean of x'x); with neither --alpha nor --beta the grid is centred on it: alpha from a quarter of the start to 4 times it (5 values; ard: fixed), beta from 0.01 to 100 times it (5 values). gpc:start in the metadata says where the start came from.

Three stages, one row per estimate:
  grid     every grid point with --samples particles (explore);
  exploit  the --exploit best grid points again with --exploit-samples particles;
  optimum  the maximum, found by the Nelder-Mead simplex on the log-hyperparameters (inside the grid's range) with --exploit-samples particles, then refined by a quadratic fitted around it; mc_se_log_<axis> is its Monte Carlo standard error in the log of each hyperparameter, width_log_<axis> the width of the likelihood's peak there.

With --shard I/K (and --exploit 0 --no-optimize) it evaluates only shard I of K of the grid's points, which gpc-merge joins with the other shards into exactly the unsharded grid (docs/scale-out.md); --from GRID then runs the exploit and optimum stages from that grid, with the unsharded run's output.

Every estimate uses common random numbers: the same method and variable order (chosen once, by pilot runs at the grid's middle point) and the same random streams, so that the difference between two nearby points is far more precise than either value. se_diff_<axis> is the standard error of the difference of log_ml to the next grid point along that axis.

` + largeNHelp + `

` + examplesHelp + `
  gpc-tune --standardize --alpha 8:64:4 --beta 1e4:1e7:4 --samples 500 --exploit-samples 2000 --train examples/crabs/train.csv
  gpc-tune --standardize --kernel linear --beta 0.01:10:7 --no-optimize --train examples/crabs/train.csv --format csv > surface.csv   # a grid, no optimum
  gpc-tune --standardize --alpha 4,8 --beta 1e3,1e4 --samples 500 --exploit 0 --no-optimize --train examples/crabs/train.csv --format table

` + exitHelp

// tuneCmd is gpc-tune's command line.
type tuneCmd struct {
	dataFlags   `embed:""`
	kernelFlags `embed:""`
	Alpha       []string `sep:"none" help:"Length scale alpha: a value, a list a,b,c or a range LO:HI:K (K values, log-spaced). ard: one --alpha per feature, in the training file's column order; linear: none. Default: the data's start (see above)."`
	Beta        string   `help:"Latent scale beta: a value, a list or a range LO:HI:K. Default: the data's start (see above)."`
	Bias        string   `default:"0" help:"A constant added to the kernel: a value, a list or a range LO:HI:K."`

	estimatorFlags `embed:"" set:"samples=2000"`
	Exploit        int  `default:"3" help:"How many of the best grid points to estimate again with --exploit-samples (0: none)."`
	ExploitSamples int  `default:"20000" help:"Particles per estimate for the best points and the optimizer (exploit)."`
	Optimize       bool `default:"true" negatable:"" help:"Search for the maximum from the best point (--no-optimize: the grid and exploit stages only)."`
	shardFlags     `embed:""`
	From           string `placeholder:"GRID" help:"Take the grid stage's estimates from GRID (gpc-tune's output: gpc-merge's of a grid run in shards, or a whole run's), checked to be this run's grid (the same data, grid and flags; its best point is estimated again, bit for bit), instead of computing them; then the exploit and optimum stages: the output is the unsharded run's, byte for byte. - reads standard input."`
	commonFlags    `embed:""`
}

// Tune runs gpc-tune.
func Tune(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return run("gpc-tune", tuneDescription, &tuneCmd{}, args, stdin, stdout, stderr)
}

// maxGridPoints bounds the grid's size.
const maxGridPoints = 1000000

// Validate checks the flags after parsing.
func (c *tuneCmd) Validate() error {
	if err := c.validateCommon(); err != nil {
		return err
	}
	if err := c.validateData(); err != nil {
		return err
	}
	if err := c.validateEstimator(); err != nil {
		return err
	}
	switch {
	case c.Exploit < 0:
		return usagef("--exploit %d: must be 0 or more", c.Exploit)
	case c.From != "" && c.Shard != "":
		return usagef("--from reads the whole grid, which --shard splits: not both")
	case c.From == "-" && c.Train == "-":
		return usagef("--from - and --train - both read standard input: name one of the files")
	case c.Shard != "" && (c.Exploit > 0 || c.Optimize):
		return usagef("--shard splits the grid stage only: give --exploit 0 --no-optimize (the later stages need the whole grid)")
	case c.ExploitSamples < 2:
		return usagef("--exploit-samples %d: at least 2 particles are needed", c.ExploitSamples)
	case c.Groups > 0 && c.ExploitSamples/c.Groups < 2:
		return usagef("--exploit-samples %d in --groups %d leaves fewer than 2 particles per group", c.ExploitSamples, c.Groups)
	}
	v := *c // the data's start is not known yet: its shape will do
	v.startGrid(nil, -1)
	_, err := v.specs(-1)
	return err
}

// hyperSpec is one hyperparameter: its column name, its values (one:
// fixed) and where it sits in the kernel.
type hyperSpec struct {
	name   string
	values []float64
	hyper  gp.Hyper
}

// parseSpec parses a hyperparameter's value, list or log-spaced range.
// Grid values must be positive (the grid is in log); a single value only
// non-negative where zero is allowed.
func parseSpec(flag, s string, zeroOK bool) ([]float64, error) {
	s = strings.TrimSpace(s)
	num := func(t string) (float64, error) {
		v, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, usagef("%s %q: %q is not a finite number", flag, s, t)
		}
		return v, nil
	}
	if parts := strings.Split(s, ":"); len(parts) > 1 {
		if len(parts) != 3 {
			return nil, usagef("%s %q: a range is LO:HI:K", flag, s)
		}
		lo, err := num(parts[0])
		if err != nil {
			return nil, err
		}
		hi, err := num(parts[1])
		if err != nil {
			return nil, err
		}
		k, err := strconv.Atoi(strings.TrimSpace(parts[2]))
		switch {
		case err != nil || k < 2:
			return nil, usagef("%s %q: the range's count K must be an integer of at least 2", flag, s)
		case !(lo > 0 && hi > lo):
			return nil, usagef("%s %q: a range needs 0 < LO < HI (its values are spaced in log)", flag, s)
		case k > maxGridPoints:
			return nil, usagef("%s %q: at most %d values", flag, s, maxGridPoints)
		}
		v := make([]float64, k)
		for i := range v {
			v[i] = math.Exp(math.Log(lo) + (math.Log(hi)-math.Log(lo))*float64(i)/float64(k-1))
		}
		v[0], v[k-1] = lo, hi
		return v, nil
	}
	var v []float64
	for _, t := range strings.Split(s, ",") {
		x, err := num(t)
		if err != nil {
			return nil, err
		}
		v = append(v, x)
	}
	if len(v) == 1 {
		if v[0] < 0 || v[0] == 0 && !zeroOK {
			return nil, usagef("%s %v: must be a number > 0", flag, v[0])
		}
		return v, nil
	}
	slices.Sort(v)
	for i, x := range v {
		if !(x > 0) {
			return nil, usagef("%s %q: grid values must be > 0 (the grid is in log)", flag, s)
		}
		if i > 0 && x == v[i-1] {
			return nil, usagef("%s %q: the value %v is listed twice", flag, s, x)
		}
	}
	return v, nil
}

// specs parses the hyperparameter flags for features of dimension d (d < 0:
// not known yet, ard's count unchecked) with the given feature names.
func (c *tuneCmd) specs(d int, names ...string) ([]hyperSpec, error) {
	kind, _ := gp.ParseKernel(c.Kernel)
	var out []hyperSpec
	switch kind {
	case gp.KernelLinear:
		if len(c.Alpha) > 0 {
			return nil, usagef("--alpha: the linear kernel has no length scale")
		}
	case gp.KernelARD:
		if d >= 0 && len(c.Alpha) != d {
			return nil, usagef("--alpha: the ard kernel needs one --alpha per feature: %d given, the training file has %d features (%s)", len(c.Alpha), d, strings.Join(names, ", "))
		}
		for j, a := range c.Alpha {
			v, err := parseSpec("--alpha", a, false)
			if err != nil {
				return nil, err
			}
			name := "alpha_" + strconv.Itoa(j+1)
			if j < len(names) {
				name = "alpha_" + names[j]
			}
			out = append(out, hyperSpec{name, v, gp.Hyper{Kind: gp.HyperAlpha, Index: j}})
		}
	default:
		if len(c.Alpha) != 1 {
			return nil, usagef("--alpha: the %s kernel has one length scale (give a list a,b,c or a range LO:HI:K for a grid)", c.Kernel)
		}
		v, err := parseSpec("--alpha", c.Alpha[0], false)
		if err != nil {
			return nil, err
		}
		out = append(out, hyperSpec{"alpha", v, gp.Hyper{Kind: gp.HyperAlpha}})
	}
	v, err := parseSpec("--beta", c.Beta, false)
	if err != nil {
		return nil, err
	}
	out = append(out, hyperSpec{"beta", v, gp.Hyper{Kind: gp.HyperBeta}})
	if v, err = parseSpec("--bias", c.Bias, true); err != nil {
		return nil, err
	}
	if !(len(v) == 1 && v[0] == 0) {
		out = append(out, hyperSpec{"bias", v, gp.Hyper{Kind: gp.HyperBias}})
	}
	points := 1
	axes := 0
	for _, s := range out {
		points *= len(s.values)
		if len(s.values) > 1 {
			axes++
		}
		if points > maxGridPoints {
			return nil, usagef("the grid has more than %d points", maxGridPoints)
		}
	}
	if axes == 0 {
		return nil, usagef("nothing to tune: give a hyperparameter several values (a list a,b,c or a range LO:HI:K, e.g. --beta 0.1:100:13)")
	}
	return out, nil
}

// grid enumerates the points of the axes (last axis fastest).
type grid struct {
	sizes []int
}

func (g grid) len() int {
	n := 1
	for _, s := range g.sizes {
		n *= s
	}
	return n
}

// index returns the multi-index of point i.
func (g grid) index(i int) []int {
	idx := make([]int, len(g.sizes))
	for j := len(g.sizes) - 1; j >= 0; j-- {
		idx[j] = i % g.sizes[j]
		i /= g.sizes[j]
	}
	return idx
}

// stride returns how far apart neighbours along axis j are.
func (g grid) stride(j int) int {
	s := 1
	for _, n := range g.sizes[j+1:] {
		s *= n
	}
	return s
}

// evalError reports an estimate that failed at one point for a reason other
// than the data or an interruption (EP breaking down at an extreme
// setting): the point gets no value and the tool goes on.
func evalError(e *env, err error) bool {
	var ie *core.InputError
	return err != nil && !errors.As(err, &ie) && e.ctx.Err() == nil
}

func (c *tuneCmd) run(e *env) error {
	t, err := c.newTuning(e)
	if err != nil || t == nil {
		return err
	}
	// Explore: the whole grid, or a shard's range of its points.
	n := t.g.len()
	si, sk, err := c.shard()
	if err != nil {
		return err
	}
	lo, hi := 0, n
	if sk > 0 {
		if sk > n {
			return tooManyShards(si, sk, n, "grid points", "point", "")
		}
		lo, hi = shardRange(si, sk, n)
	}
	if c.From != "" {
		hi = lo // the grid's estimates are read (gridFrom, below)
	}
	e.rep.startProgress(c.Progress, countProgress(hi-lo+min(c.Exploit, n), "estimates"))
	results, err := t.explore(lo, hi)
	if err != nil {
		return err
	}
	rows := t.gridRows(results, lo, hi)
	if c.From != "" {
		if rows, err = t.readFrom(results); err != nil {
			return err
		}
	}
	if sk > 0 {
		e.rep.stopProgress()
		tab := format.TuneTable(t.names(), t.axisNames(), rows, t.meta(map[string]string{}))
		c.addTuneShard(tab, results[lo:hi], t.train, si, sk, lo, hi, t.g.sizes)
		return format.WriteTable(e.stdout, tab, c.outputFormat(e.stdout), 0, format.NewAllocator())
	}
	rows, bestTheta, err := t.exploit(results, rows)
	e.rep.stopProgress()
	if err != nil {
		return err
	}
	meta := map[string]string{}
	if c.Optimize {
		if rows, err = t.optimize(bestTheta, rows, meta); err != nil {
			return err
		}
	}
	if t.failed > 3 {
		e.rep.warnf("%d estimates failed in all", t.failed)
	}
	return c.writeTune(e, format.TuneTable(t.names(), t.axisNames(), rows, t.meta(meta)))
}

// tuning is gpc-tune's run: the grid of hyperparameters (specs, their
// axes: the specs of more than one value) around the reference point
// theta0 and the common-random-numbers surface it is estimated on.
type tuning struct {
	c        *tuneCmd
	e        *env
	train    *features
	dataMeta map[string]string
	start    string // the data's start (gpc:start), or ""
	specs    []hyperSpec
	axes     []int // indices into specs
	theta0   []float64
	g        grid
	surf     *fit.Surface
	pilots   []core.Pilot
	refOrder core.OrderKind
	seed     uint64
	failed   int
}

// newTuning reads the training data, lays out the grid and makes its
// surface; with --fingerprint it prints the shards' fingerprint and
// returns no tuning.
func (c *tuneCmd) newTuning(e *env) (*tuning, error) {
	train, labels, dataMeta, err := c.readTrainingClasses(e)
	if err != nil {
		return nil, err
	}
	if err := c.checkID(train, nil); err != nil {
		return nil, err
	}
	if c.Standardize {
		standardizeMeta(train, nil, dataMeta)
	}
	d := len(train.names)
	scale, err := fit.NewDataScale(train.x, d)
	if err != nil {
		return nil, &dataError{fmt.Sprintf("%s: %v", train.source, err)}
	}
	t := &tuning{c: c, e: e, train: train, dataMeta: dataMeta, start: c.startGrid(scale, d), seed: uint64(c.Seed)}
	if t.specs, err = c.specs(d, train.names...); err != nil {
		return nil, err
	}
	base, params := t.layout(d)
	if err := base.Validate(d); err != nil {
		return nil, usagef("%v", err)
	}
	if c.Fingerprint {
		return nil, c.printTuneFingerprint(e, train, t.g.len())
	}
	data, vars, err := trainingModel(train, labels, &base)
	if err != nil {
		return nil, err
	}
	cands := candidates(c.Method, c.Order)
	cfg := c.config(c.Threads, byteSize(0).limit())
	// The grid's estimates, then the exploit stage's and the optimizer's.
	if err := checkEstimateMemory(c.Train, vars, &cfg, cands, false); err != nil {
		return nil, err
	}
	if c.Exploit > 0 || c.Optimize {
		big := cfg
		big.Samples = c.ExploitSamples
		if err := checkMemoryFlag("--exploit-samples", c.Train, vars, &big, cands, false); err != nil {
			return nil, err
		}
	}
	t.surf, t.pilots, t.refOrder, err = fit.NewSurface(e.ctx, data, base, params, t.theta0, cands, c.Jitter, cfg)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// layout sets the grid's axes and reference point and returns the kernel
// at the reference point and the hyperparameters of the axes.
func (t *tuning) layout(d int) (gp.Kernel, []gp.Hyper) {
	kind, _ := gp.ParseKernel(t.c.Kernel)
	base := gp.Kernel{Kind: kind}
	if kind == gp.KernelARD {
		base.Alpha = make([]float64, d)
	} else if kind != gp.KernelLinear {
		base.Alpha = make([]float64, 1)
	}
	var params []gp.Hyper
	for i, s := range t.specs {
		mid := s.values[(len(s.values)-1)/2]
		s.hyper.Set(&base, mid)
		if len(s.values) > 1 {
			t.axes = append(t.axes, i)
			params = append(params, s.hyper)
			t.theta0 = append(t.theta0, math.Log(mid))
			t.g.sizes = append(t.g.sizes, len(s.values))
		}
	}
	return base, params
}

// hyperAt is the hyperparameters (one per spec) at theta.
func (t *tuning) hyperAt(theta []float64) []float64 {
	k := t.surf.KernelAt(theta)
	v := make([]float64, len(t.specs))
	for i, s := range t.specs {
		v[i] = s.hyper.Get(k)
	}
	return v
}

// thetaOf is grid point i's log-hyperparameters along the axes.
func (t *tuning) thetaOf(i int) []float64 {
	idx := t.g.index(i)
	th := make([]float64, len(t.axes))
	for j, a := range t.axes {
		th[j] = math.Log(t.specs[a].values[idx[j]])
	}
	return th
}

// warnFail counts an estimate that failed at theta, and warns of the
// first three.
func (t *tuning) warnFail(theta []float64, err error) {
	t.failed++
	if t.failed <= 3 {
		t.e.rep.warnf("no estimate at %s: %v", describe(t.specs, t.hyperAt(theta)), err)
	}
}

// names is the specs' names, axisNames the axes'.
func (t *tuning) names() []string {
	names := make([]string, len(t.specs))
	for i, s := range t.specs {
		names[i] = s.name
	}
	return names
}

func (t *tuning) axisNames() []string {
	names := make([]string, len(t.axes))
	for j, a := range t.axes {
		names[j] = t.specs[a].name
	}
	return names
}

// explore estimates grid points [lo, hi) (results: one per point of the
// grid, nil where not estimated).
func (t *tuning) explore(lo, hi int) ([]*core.Result, error) {
	results := make([]*core.Result, t.g.len())
	for i := lo; i < hi; i++ {
		th := t.thetaOf(i)
		res, _, err := t.surf.Eval(t.e.ctx, th, t.c.Samples, t.seed, false)
		t.e.rep.add(1)
		if err != nil {
			if !evalError(t.e, err) {
				return nil, err
			}
			t.warnFail(th, err)
			continue
		}
		results[i] = &res
	}
	return results, nil
}

// gridRows is the grid stage's rows of points [lo, hi), with the
// standard errors of the differences to the next points along each axis.
func (t *tuning) gridRows(results []*core.Result, lo, hi int) []format.TuneRow {
	var rows []format.TuneRow
	for i := lo; i < hi; i++ {
		row := format.TuneRow{Stage: format.StageGrid, Point: int64(i), Hyper: t.hyperAt(t.thetaOf(i)), LogML: math.NaN(), SELog: math.NaN(), Samples: int64(t.c.Samples)}
		if r := results[i]; r != nil {
			row.LogML, row.SELog = r.LogP, r.SE
		}
		idx := t.g.index(i)
		row.SEDiff = make([]float64, len(t.axes))
		for j := range t.axes {
			row.SEDiff[j] = math.NaN()
			if nb := i + t.g.stride(j); idx[j]+1 < t.g.sizes[j] && results[i] != nil && results[nb] != nil {
				row.SEDiff[j] = fit.DiffSE(results[i], results[nb])
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// readFrom reads the grid's estimates from --from's grid (gridFrom).
func (t *tuning) readFrom(results []*core.Result) ([]format.TuneRow, error) {
	c := t.c
	estimate := func(i int) (core.Result, error) {
		res, _, err := t.surf.Eval(t.e.ctx, t.thetaOf(i), c.Samples, t.seed, false)
		return res, err
	}
	rows, err := c.gridFrom(t.e, t.meta(map[string]string{}), t.names(), t.axisNames(), t.g.len(), func(i int) []float64 { return t.hyperAt(t.thetaOf(i)) }, estimate, results)
	if err != nil {
		return nil, err
	}
	for i, r := range results {
		if r == nil {
			t.warnFail(t.thetaOf(i), fmt.Errorf("none in --from %s", c.From))
		}
	}
	return rows, nil
}

// meta adds the tuning's metadata to meta.
func (t *tuning) meta(meta map[string]string) map[string]string {
	c := t.c
	for k, v := range t.dataMeta {
		meta[k] = v
	}
	meta[format.KeyVersion] = Version
	meta["gpc:kernel"] = c.Kernel
	meta[format.KeySeed] = strconv.FormatUint(t.seed, 10)
	meta[format.KeyMethod] = t.surf.Method.String()
	meta[format.KeyOrder] = format.JoinInts(t.surf.Perm)
	meta[format.KeyOrderKind] = t.refOrder.String()
	meta[format.KeyJitter] = strconv.FormatFloat(c.Jitter, 'g', -1, 64)
	meta["gpc:reference"] = describe(t.specs, t.hyperAt(t.theta0))
	if t.start != "" {
		meta["gpc:start"] = t.start
	}
	meta[format.KeySamples] = strconv.Itoa(c.Samples)
	meta["gpc:exploit_samples"] = strconv.Itoa(c.ExploitSamples)
	if len(t.pilots) > 0 {
		pm := estimatorMeta(&core.Factor{Perm: t.surf.Perm}, core.Config{Method: t.surf.Method}, t.pilots, c.Jitter)
		meta[format.KeyPilots] = pm[format.KeyPilots]
	}
	return meta
}

// exploit estimates the best grid points again with more particles and
// returns their rows after rows, and the best of them.
func (t *tuning) exploit(results []*core.Result, rows []format.TuneRow) ([]format.TuneRow, []float64, error) {
	order := make([]int, 0, len(results))
	for i, r := range results {
		if r != nil && !math.IsInf(r.LogP, -1) {
			order = append(order, i)
		}
	}
	if len(order) == 0 {
		return nil, nil, &dataError{"no grid point gave an estimate"}
	}
	slices.SortStableFunc(order, func(a, b int) int { return -cmpFloat(results[a].LogP, results[b].LogP) })
	best, bestLogML := order[0], math.Inf(-1)
	bestTheta := t.thetaOf(best)
	for _, i := range order[:min(t.c.Exploit, len(order))] {
		th := t.thetaOf(i)
		res, _, err := t.surf.Eval(t.e.ctx, th, t.c.ExploitSamples, t.seed, false)
		t.e.rep.add(1)
		if err != nil {
			if !evalError(t.e, err) {
				return nil, nil, err
			}
			t.warnFail(th, err)
			continue
		}
		rows = append(rows, format.TuneRow{Stage: format.StageExploit, Point: int64(i), Hyper: t.hyperAt(th), LogML: res.LogP, SELog: res.SE, Samples: int64(t.c.ExploitSamples)})
		if res.LogP > bestLogML {
			bestLogML, bestTheta = res.LogP, th
		}
	}
	return rows, bestTheta, nil
}

// optimize maximizes the common-random-numbers surface inside the grid
// from start and returns the optimum's row after rows.
func (t *tuning) optimize(start []float64, rows []format.TuneRow, meta map[string]string) ([]format.TuneRow, error) {
	e, specs := t.e, t.specs
	k := len(t.axes)
	step, lo, hi := make([]float64, k), make([]float64, k), make([]float64, k)
	for j, a := range t.axes {
		v := specs[a].values
		lo[j], hi[j] = math.Log(v[0]), math.Log(v[len(v)-1])
		step[j] = (hi[j] - lo[j]) / float64(len(v)-1)
	}
	ocfg := fit.OptimizeConfig{Samples: t.c.ExploitSamples, Seed: t.seed, Step: step, Lower: lo, Upper: hi,
		Eval: func([]float64, *core.Result) { e.rep.add(1) }}
	e.rep.startProgress(t.c.Progress, countProgress(200*k+2*k*k+2, "estimates"))
	opt, err := t.surf.Maximize(e.ctx, start, ocfg)
	e.rep.stopProgress()
	if err != nil {
		return nil, err
	}
	rows = append(rows, format.TuneRow{Stage: format.StageOptimum, Point: -1, Hyper: t.hyperAt(opt.Theta), LogML: opt.Result.LogP, SELog: opt.Result.SE,
		MCSE: opt.MCSE, Width: opt.Width, Samples: int64(t.c.ExploitSamples)})
	meta["gpc:optimizer_estimates"] = strconv.Itoa(opt.Evals)
	for j, a := range t.axes {
		if opt.Theta[j]-lo[j] < step[j]/2 || hi[j]-opt.Theta[j] < step[j]/2 {
			e.rep.warnf("the maximum is at the edge of the grid along %s (%v): the likelihood may go on rising outside it", specs[a].name, math.Exp(opt.Theta[j]))
		}
	}
	if slices.ContainsFunc(opt.Width, math.IsNaN) {
		e.rep.warnf("the log marginal likelihood is not concave around the optimum: its location is poorly determined")
	}
	return rows, nil
}

// writeTune writes gpc-tune's table; on a terminal, the columns that fit
// its width, the rest named.
func (c *tuneCmd) writeTune(e *env, t *format.Table) error {
	f := c.outputFormat(e.stdout)
	if f != format.Text {
		return format.WriteTable(e.stdout, t, f, 0, format.NewAllocator())
	}
	fit, dropped := format.FitWidth(t, termWidth(e.stdout))
	if err := format.WriteTable(e.stdout, fit, f, 0, nil); err != nil {
		return err
	}
	if len(dropped) > 0 {
		if _, err := fmt.Fprintf(e.stdout, "(%d more columns, wider than the terminal: %s; --format csv shows them all)\n", len(dropped), strings.Join(dropped, ", ")); err != nil {
			return &format.IOError{Op: "write output", Err: err}
		}
	}
	return nil
}

// describe writes hyperparameter values as name=value pairs.
func describe(specs []hyperSpec, v []float64) string {
	parts := make([]string, len(specs))
	for i, s := range specs {
		parts[i] = s.name + "=" + strconv.FormatFloat(v[i], 'g', 6, 64)
	}
	return strings.Join(parts, " ")
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
