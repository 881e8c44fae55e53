package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/format"
)

const showDescription = `Show a saved stream (any gpc tool's Arrow output, or any Arrow IPC stream) as a table or as CSV, or its metadata.

` + pipelineHelp + `

The tools write Arrow IPC streams to pipes and files; gpc-show prints one for people: a table (the default, also off a terminal), or CSV with --format csv (every digit), or the stream again with --format arrow. Numbers are shown to 7 significant digits in the table; lists (a covariance's or a cloud's rows) in brackets. With --meta it prints the stream's metadata instead, one "key = value" line each, sorted: its schema, the tool and version that wrote it, the seed, the kernel and its hyperparameters, the fingerprint of the train block, the estimate. The whole stream is read into memory: show a large cloud's metadata, or a few rows (| head), rather than all of it.

With --summary it prints one row instead, the estimate that the particle groups' estimates of a cloud (gpc-train) or of posteriors (gpc-predict) give: log_ml and se_log_ml as gpc-predict computes them, the particles and groups, and effective_groups, the effective number of groups that carry the mean, (sum_g n_g I_g)^2 / sum_g (n_g I_g)^2 with I_g group g's estimate of P and n_g its particles: the group count when the groups agree, 1 when one dominates. Below half the groups the group estimates are heavy-tailed and the standard error is not reliable (gpc-train warns). --summary reads a cloud batch by batch, keeping only its group rows.

` + examplesHelp + `
  gpc-orthant --samples 2000 examples/onefactor-100.csv > logp.arrows
  gpc-show logp.arrows
  gpc-show --meta logp.arrows
  gpc-show --format csv logp.arrows
  gpc-kernel --standardize --alpha 4 --beta 10 --train examples/crabs/train.csv | gpc-train --samples 2000 > cloud.arrows
  gpc-show --summary cloud.arrows

` + exitHelp

// showCmd is gpc-show's command line.
type showCmd struct {
	Input       string `arg:"" optional:"" default:"-" help:"An Arrow IPC stream; - or nothing reads standard input."`
	Meta        bool   `help:"Print the stream's metadata (key = value, sorted by key) instead of its rows."`
	Summary     bool   `help:"Print the estimate of a cloud's (or posteriors') particle groups instead of its rows: log_ml, se_log_ml, samples, groups and effective_groups, the effective number of groups that carry the mean."`
	commonFlags `embed:""`
}

// Show runs gpc-show.
func Show(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return run("gpc-show", showDescription, &showCmd{}, args, stdin, stdout, stderr)
}

// Validate checks the flags after parsing.
func (c *showCmd) Validate() error {
	if c.Meta && c.Summary {
		return usagef("--meta and --summary print different things: give one")
	}
	return c.validateCommon()
}

func (c *showCmd) run(e *env) error {
	r, name, closeIn, err := openInput(c.Input, e.stdin)
	if err != nil {
		return err
	}
	defer closeIn()
	if c.Summary {
		return c.summary(e, r, name)
	}
	t, err := format.ReadAnyTable(r, name)
	if err != nil {
		return err
	}
	if c.Meta {
		var b strings.Builder
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			for k := range t.Meta {
				if !yield(k) {
					return
				}
			}
		}) {
			fmt.Fprintf(&b, "%s = %s\n", k, oneLine(t.Meta[k]))
		}
		if _, err := io.WriteString(e.stdout, b.String()); err != nil {
			return &format.IOError{Op: "write output", Err: err}
		}
		return nil
	}
	return format.WriteTable(e.stdout, t, c.showFormat(), 0, format.NewAllocator())
}

// showFormat is the output's format: a table unless --format says
// otherwise.
func (c *showCmd) showFormat() format.Format {
	switch c.Format {
	case "csv":
		return format.CSV
	case "arrow":
		return format.Arrow
	}
	return format.Text
}

// summary writes --summary's row: the estimate of the stream's particle
// groups (core.CombineGroups, as gpc-predict combines them) and the
// effective number of groups that carry it.
func (c *showCmd) summary(e *env, r io.Reader, name string) error {
	ge, err := format.ReadGroupEstimates(r, name)
	if err != nil {
		return err
	}
	logML, se, eff := core.CombineGroups(ge.LogZ, ge.Sizes)
	samples := 0
	for _, n := range ge.Sizes {
		samples += n
	}
	meta := map[string]string{format.KeySchema: "gpc.show-summary/1", format.KeyTool: "gpc-show"}
	if s, ok := ge.Meta[format.KeySchema]; ok {
		meta["gpc:summary_of"] = s
	}
	t := &format.Table{Meta: meta, Cols: []format.Column{
		{Name: "log_ml", Float: []float64{logML}},
		{Name: "se_log_ml", Float: []float64{se}},
		{Name: "samples", Int: []int64{int64(samples)}},
		{Name: "groups", Int: []int64{int64(len(ge.Sizes))}},
		{Name: "effective_groups", Float: []float64{eff}},
	}}
	return format.WriteTable(e.stdout, t, c.showFormat(), 0, format.NewAllocator())
}
