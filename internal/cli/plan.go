package cli

// Prepared plans (--prepare-only, --plan; docs/scale-out.md): the
// estimator's deterministic O(N^3) preparation (order, factorisation,
// tilting or EP, the pilots that chose among the candidates), written once
// as a gpc.plan/1 stream and read by every shard instead of redone. A
// Vecchia model's preparation (Laplace, EP's rounds, the proposal's
// factor and mean: docs/vecchia.md) is written and read alike, as a
// gpc.vecchia-plan/1 stream tied to its model.

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/vecchia"
	"github.com/gpc-mc/gpc/format"
)

// planFlags are gpc-orthant's and gpc-train's --prepare-only and --plan.
type planFlags struct {
	PrepareOnly bool   `help:"Only prepare the estimate (the variable order, the factorisation, the tilting or EP, the pilot runs of --method auto) and write it as a plan (a gpc.plan/1 Arrow stream) that --plan reads: the shards of a run then share one preparation (docs/scale-out.md). Of a Vecchia model: its Laplace mode, EP's sites and the proposal, as a gpc.vecchia-plan/1 stream."`
	Plan        string `placeholder:"FILE" help:"Read the preparation from FILE (- for standard input, when the input is a file), written by --prepare-only on the same input with the same --samples, --method, --order, --jitter and --seed, instead of redoing it (a Vecchia model's plan: written for the same model, whatever the flags); the output is byte-identical to the run without --plan."`
}

// validatePlan checks --prepare-only and --plan against --shard and the
// input (input: the positional argument; - or "" is standard input).
func (p *planFlags) validatePlan(shard, input string) error {
	switch {
	case p.PrepareOnly && p.Plan != "":
		return usagef("--prepare-only writes a plan and --plan reads one: not both")
	case p.PrepareOnly && shard != "":
		return usagef("--prepare-only prepares the whole run, for every shard: not with --shard")
	case p.Plan == "-" && (input == "-" || input == ""):
		return usagef("--plan - reads the plan from standard input, and the input is read from there too: name the input file")
	}
	return nil
}

// planFingerprint identifies what a preparation depends on: the input
// and the flags that change it, and the compute path of the pilots.
func (c *estimatorFlags) planFingerprint(box core.Box, cfg *core.Config) string {
	return format.ShardFingerprint(format.SchemaPlan,
		format.Digest(box.Cov, box.Lower, box.Upper, box.Mean, box.Labels),
		fmt.Sprintf("samples=%d method=%s order=%s jitter=%v seed=%d", c.Samples, c.Method, c.Order, c.Jitter, cfg.Seed),
		"path="+computePath())
}

const keyPlanPilots = "gpc:plan_pilots" // one line per pilot: candidate, then log_p se_log_p samples, or "failed" and the error

// writePlan prepares box as prepare does and writes the plan to stdout.
// It first checks the memory as the run the plan is for would
// (--max-memory): a run that could not fit is refused here, once, not in
// every shard after the preparation.
func (c *estimatorFlags) writePlan(e *env, box core.Box, name string, cfg core.Config, progress bool, mem format.Allocator) error {
	if err := checkEstimateMemory(name, box.N, &cfg, candidates(c.Method, c.Order), false); err != nil {
		return err
	}
	f, pilots, err := c.prepare(e, box, name, &cfg, progress)
	if err != nil {
		return err
	}
	meta := map[string]string{
		format.KeyVersion:         Version,
		format.KeyMethod:          cfg.Method.String(),
		format.KeyPlanFingerprint: c.planFingerprint(box, &cfg),
	}
	if len(pilots) > 0 {
		lines := make([]string, len(pilots))
		for k, p := range pilots {
			if p.Err != nil {
				lines[k] = fmt.Sprintf("%v failed %s", p.Candidate, oneLine(p.Err.Error()))
				continue
			}
			lines[k] = fmt.Sprintf("%v %s %s %d", p.Candidate, strconv.FormatFloat(p.Result.LogP, 'g', -1, 64), strconv.FormatFloat(p.Result.SE, 'g', -1, 64), p.Result.Samples)
		}
		meta[keyPlanPilots] = strings.Join(lines, "\n")
	}
	return format.WritePlan(e.stdout, &format.Plan{Parts: f.Parts(), Meta: meta}, mem)
}

// readPlan reads the plan of --plan for box and cfg (whose Method it
// sets): its factor and the pilots as the output reports them. A plan of
// another input or other flags is a data error.
func (c *estimatorFlags) readPlan(e *env, path string, box core.Box, cfg *core.Config) (*core.Factor, []core.Pilot, error) {
	r, name, closePlan, err := openInput(path, e.stdin)
	if err != nil {
		return nil, nil, &format.IOError{Op: "open plan", Err: errors.Unwrap(err)}
	}
	defer closePlan()
	what := "plan " + path
	if name == "stdin" {
		what = "the plan on standard input"
	}
	p, f, err := format.ReadPlan(r, name, format.NewAllocator())
	if err != nil {
		return nil, nil, err
	}
	if p.Meta[format.KeyPlanFingerprint] != c.planFingerprint(box, cfg) {
		return nil, nil, &dataError{fmt.Sprintf("%s was prepared for another input or other flags (--samples, --method, --order, --jitter, --seed) than this run's", what)}
	}
	if f.N != box.N {
		return nil, nil, &dataError{fmt.Sprintf("%s has %d variables, the input %d", what, f.N, box.N)}
	}
	m, ok := core.ParseMethod(p.Meta[format.KeyMethod])
	if !ok {
		return nil, nil, &dataError{fmt.Sprintf("%s: metadata %s = %q is not a method", what, format.KeyMethod, p.Meta[format.KeyMethod])}
	}
	cfg.Method = m
	pilots, err := parsePilots(p.Meta[keyPlanPilots])
	if err != nil {
		return nil, nil, &dataError{fmt.Sprintf("%s: metadata %s: %v", what, keyPlanPilots, err)}
	}
	return f, pilots, nil
}

// errPrepareOnlyClasses is the refusal of --prepare-only for a
// multi-class Vecchia model.
func errPrepareOnlyClasses() error {
	return usagef("--prepare-only: the input is a multi-class Vecchia model, whose preparation has no plan stream yet: drop --prepare-only")
}

// writeVecchiaPlan writes the Vecchia problem's preparation as a plan
// (gpc.vecchia-plan/1) to stdout, once the run it is for was found to fit
// in memory (--max-memory), as writePlan does for a covariance.
func (c *estimatorFlags) writeVecchiaPlan(e *env, v *vecchiaProblem, cfg core.Config, mem format.Allocator) error {
	if _, err := planned(v, cfg); err != nil {
		return err
	}
	p, ok := v.Estimator.(*vecchia.Prepared)
	if !ok {
		return errPrepareOnlyClasses() // prepareVecchia refuses it first
	}
	pp := p.Parts()
	meta := map[string]string{format.KeyVersion: Version, format.KeyMethod: vecchiaMethod}
	return format.WriteVecchiaPlan(e.stdout, p.Model(), &pp, meta, mem)
}

// readVecchiaPlan reads the Vecchia plan at path for model m: the
// prepared estimator, rebuilt bit for bit. A plan of another model, or
// not a Vecchia plan, is a data error.
func (c *estimatorFlags) readVecchiaPlan(e *env, path string, m *vecchia.Model, mem format.Allocator) (*vecchia.Prepared, error) {
	r, name, closePlan, err := openInput(path, e.stdin)
	if err != nil {
		return nil, &format.IOError{Op: "open plan", Err: errors.Unwrap(err)}
	}
	defer closePlan()
	_, p, err := format.ReadVecchiaPlan(r, name, m, mem)
	return p, err
}

// parsePilots reads writePlan's pilot lines.
func parsePilots(s string) ([]core.Pilot, error) {
	if s == "" {
		return nil, nil
	}
	var ps []core.Pilot
	for _, line := range strings.Split(s, "\n") {
		fs := strings.SplitN(line, " ", 4)
		if len(fs) < 3 {
			return nil, fmt.Errorf("%q is not a pilot", line)
		}
		var p core.Pilot
		mo, ord, _ := strings.Cut(fs[0], "/")
		var ok1, ok2 bool
		p.Candidate.Method, ok1 = core.ParseMethod(mo)
		p.Candidate.Order, ok2 = core.ParseOrder(ord)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("%q is not a candidate", fs[0])
		}
		if fs[1] == "failed" {
			p.Err = errors.New(strings.Join(fs[2:], " "))
			ps = append(ps, p)
			continue
		}
		if len(fs) != 4 {
			return nil, fmt.Errorf("%q is not a pilot", line)
		}
		var err1, err2, err3 error
		p.Result.LogP, err1 = strconv.ParseFloat(fs[1], 64)
		p.Result.SE, err2 = strconv.ParseFloat(fs[2], 64)
		p.Result.Samples, err3 = strconv.Atoi(fs[3])
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("%q: %v", line, err)
		}
		ps = append(ps, p)
	}
	return ps, nil
}
