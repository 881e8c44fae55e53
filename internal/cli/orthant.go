package cli

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"gpc/core"
	"gpc/format"
)

const orthantDescription = `Estimate a Gaussian box probability P(lower <= v <= upper), v ~ N(mean, R), in log space with a standard error.

The input is a covariance stream (an Arrow IPC stream or file with a "cov" list column and optional lower, upper and mean columns; by default the orthant v >= 0), a square matrix as N numeric Arrow columns, or a CSV matrix with or without a header (columns named lower, upper, mean are then per-variable bounds and mean). The form is detected from the content. Rows after the N x N train block (test rows from gpc-kernel) are ignored: for a GP-classification covariance the result is the log marginal likelihood.

The output is one row: log_p, se_log_p, p, n, samples, groups, method, order, seed, min_ess, resamples.

Examples:
  gpc-orthant cov.csv
  gpc-kernel --kernel rbf --alpha 3 --beta 2 --train train.csv | gpc-orthant --samples 100000

Exit status: 0 success, 65 bad input data, 74 I/O error, 80 bad usage, 100 internal error, 130 interrupted.`

// orthantCmd is gpc-orthant's command line.
type orthantCmd struct {
	Input   string  `arg:"" optional:"" default:"-" help:"Covariance input: Arrow IPC stream or file, or CSV; - or nothing reads standard input."`
	Samples int     `default:"10000" help:"Number of particles M (split into --groups groups)."`
	Seed    int64   `default:"1" help:"Random seed. The same input, flags and seed give byte-identical output."`
	Method  string  `enum:"auto,smc,met,paper-hard,paper-soft" default:"auto" help:"Estimator: smc (draws from the truncated conditionals, probability weights, systematic resampling when the ESS halves), met (the same with Botev's minimax exponentially tilted proposal), paper-hard (the paper's Algorithm GPC-MC: rejection and refill, product of acceptance fractions), paper-soft (the same with the paper's soft count), or auto: smc or met, chosen with the order by pilot runs."`
	Order   string  `enum:"auto,given,shuffle,interleave,greedy,variance,sharp" default:"auto" help:"Variable order: given (the input order), shuffle (random, from the seed), interleave (alternate the classes of the y column), greedy (Genz-Bretz: smallest conditional probability first), variance (least predictable variable first), sharp (variables nearly determined by all the others first, then as variance), or auto: chosen with the method by pilot runs of samples/16 particles each (smc/sharp, met/sharp, met/greedy; the paper's methods: shuffle)."`
	Groups  int     `default:"0" help:"Independent particle groups; the estimate is their mean and the standard error comes from their spread (0: up to 32, at least 250 particles each, for smc; 1 for the paper's methods, which then report no standard error)."`
	ESS     float64 `name:"ess" default:"0" help:"Resample when the effective sample size falls below this fraction of the particles, in (0, 1] (0: 0.5 for smc, 0.001 for met)."`
	Jitter  float64 `default:"0" help:"Add this to the covariance diagonal before factorising; recorded in the output metadata (gpc:jitter)."`
	commonFlags
}

// Orthant runs gpc-orthant with the given arguments and standard streams and
// returns its exit status.
func Orthant(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return run("gpc-orthant", orthantDescription, &orthantCmd{}, args, stdin, stdout, stderr)
}

// Validate checks the flags after parsing (kong calls it).
func (c *orthantCmd) Validate() error {
	if err := c.validateCommon(); err != nil {
		return err
	}
	switch {
	case c.Samples < 2:
		return usagef("--samples %d: at least 2 particles are needed", c.Samples)
	case c.Seed < 0:
		return usagef("--seed %d: must be 0 or more", c.Seed)
	case c.Groups < 0:
		return usagef("--groups %d: must be 0 (default) or more", c.Groups)
	case !(c.ESS >= 0 && c.ESS <= 1):
		return usagef("--ess %v: must be in (0, 1], or 0 for the method's default", c.ESS)
	case !(c.Jitter >= 0) || math.IsInf(c.Jitter, 1):
		return usagef("--jitter %v: must be a finite number >= 0", c.Jitter)
	}
	if g := c.Groups; g > 0 && c.Samples/g < 2 {
		return usagef("--samples %d in --groups %d leaves fewer than 2 particles per group", c.Samples, g)
	}
	return nil
}

func (c *orthantCmd) config() core.Config {
	method, _ := core.ParseMethod(c.Method) // auto: settled by choose
	return core.Config{
		Method: method, Samples: c.Samples, Groups: c.Groups, Seed: uint64(c.Seed),
		Threads: c.Threads, ESSThreshold: c.ESS,
	}
}

func (c *orthantCmd) run(e *env) error {
	r, name, closeIn, err := openInput(c.Input, e.stdin)
	if err != nil {
		return err
	}
	defer closeIn()
	mem := format.NewAllocator()
	cov, err := format.ReadCovariance(r, name, mem)
	if err != nil {
		return err
	}
	box := core.Box{N: cov.N, Cov: cov.Cov, Lower: cov.Lower, Upper: cov.Upper, Mean: cov.Mean, Labels: cov.Y}
	cfg := c.config()
	f, pilots, err := c.factor(e, box, cov, name, &cfg)
	if err != nil {
		return err
	}
	e.rep.startProgress(c.Progress, int64(cfg.Samples)*int64(cov.N), "particle-steps")
	cfg.Progress = e.rep.add
	res, err := core.Estimate(e.ctx, f, cfg)
	if err != nil {
		return err
	}
	e.rep.stopProgress()
	if ok, why := res.Trust(); !ok {
		e.rep.warnf("the standard error is not reliable: %s", why)
	}
	t := orthantTable(&res, f, cfg, pilots)
	t.Meta[format.KeyJitter] = strconv.FormatFloat(c.Jitter, 'g', -1, 64)
	passMeta(t.Meta, cov.Meta)
	return format.WriteTable(e.stdout, t, c.outputFormat(e.stdout), 0, mem)
}

// candidates returns what --method and --order leave to choose: a single
// candidate when both are given.
func candidates(method, order string) []core.Candidate {
	var ms []core.Method
	if m, ok := core.ParseMethod(method); ok {
		ms = []core.Method{m}
	}
	var os []core.OrderKind
	if o, ok := core.ParseOrder(order); ok {
		os = []core.OrderKind{o}
	}
	switch {
	case ms == nil && os == nil:
		return core.AutoCandidates
	case ms == nil:
		ms = []core.Method{core.MethodSMC, core.MethodMET}
	case os == nil && (ms[0] == core.MethodPaperHard || ms[0] == core.MethodPaperSoft):
		os = []core.OrderKind{core.OrderShuffle} // the paper's shuffled order
	case os == nil:
		os = []core.OrderKind{core.OrderSharp, core.OrderGreedy}
	}
	var cs []core.Candidate
	for _, m := range ms {
		for _, o := range os {
			cs = append(cs, core.Candidate{Method: m, Order: o})
		}
	}
	return cs
}

// factor prepares the box as --method and --order ask, choosing by pilot
// runs when they leave more than one candidate, and sets cfg.Method.
func (c *orthantCmd) factor(e *env, box core.Box, cov *format.Covariance, name string, cfg *core.Config) (*core.Factor, []core.Pilot, error) {
	cands := candidates(c.Method, c.Order)
	for _, cand := range cands {
		if cand.Order == core.OrderInterleave && cov.Y == nil {
			return nil, nil, &dataError{fmt.Sprintf("--order interleave alternates the classes of the y column, and %s has none", name)}
		}
	}
	if len(cands) > 1 {
		f, cand, pilots, err := core.Choose(e.ctx, box, cands, c.Jitter, *cfg)
		cfg.Method = cand.Method
		return f, pilots, err
	}
	cand := cands[0]
	cfg.Method = cand.Method
	f, err := core.Prepare(box, cand, cfg.Seed, c.Jitter)
	return f, nil, err
}

// orthantTable is gpc-orthant's one-row result (schema gpc.orthant/1).
func orthantTable(res *core.Result, f *core.Factor, cfg core.Config, pilots []core.Pilot) *format.Table {
	perm := make([]string, len(f.Perm))
	for i, p := range f.Perm {
		perm[i] = strconv.Itoa(p)
	}
	meta := map[string]string{
		format.KeySchema:  format.SchemaOrthant,
		format.KeyTool:    "gpc-orthant",
		format.KeyVersion: Version,
		format.KeySeed:    strconv.FormatUint(cfg.Seed, 10),
		format.KeyOrder:   strings.Join(perm, ","),
	}
	if f.Mu != nil {
		meta[format.KeyTilt] = f.TiltStats.String()
	}
	if len(pilots) > 0 {
		var ps []string
		for _, p := range pilots {
			ps = append(ps, fmt.Sprintf("%v log_p=%s se_log_p=%s samples=%d", p.Candidate,
				strconv.FormatFloat(p.Result.LogP, 'g', -1, 64), strconv.FormatFloat(p.Result.SE, 'g', -1, 64), p.Result.Samples))
		}
		meta[format.KeyPilots] = strings.Join(ps, "; ")
	}
	return &format.Table{Meta: meta, Cols: []format.Column{
		{Name: "log_p", Float: []float64{res.LogP}},
		{Name: "se_log_p", Float: []float64{res.SE}},
		{Name: "p", Float: []float64{math.Exp(res.LogP)}},
		{Name: "n", Int: []int64{int64(f.N)}},
		{Name: "samples", Int: []int64{int64(res.Samples)}},
		{Name: "groups", Int: []int64{int64(res.Groups)}},
		{Name: "method", Str: []string{cfg.Method.String()}},
		{Name: "order", Str: []string{f.Order.String()}},
		{Name: "seed", Int: []int64{int64(cfg.Seed)}},
		{Name: "min_ess", Float: []float64{res.MinESS}},
		{Name: "resamples", Int: []int64{int64(res.Resamples)}},
	}}
}
