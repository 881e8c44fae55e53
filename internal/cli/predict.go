package cli

import (
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"
	"strconv"

	"gpc/core"
	"gpc/format"
	"gpc/internal/sysmem"
)

const predictDescription = `Compute test posteriors p(y* = +1) from a particle cloud: the last step of the pipeline.

` + pipelineHelp + `

For each test row (a test pattern's covariance r with the train variables and variance s), the posterior is the weighted mean over the cloud's particles of Phi(mu*/sigma*), with mu* = r' R^-1 v and sigma*^2 = s - r' R^-1 r (the paper's soft count), and its standard error comes from the independent particle groups.

The cloud is read from the input (gpc-train's output, whose test rows follow it), or from --cloud FILE, a saved cloud; the input is then a covariance stream (gpc-kernel's) whose train block must be the cloud's (its fingerprint is checked) and whose test rows are predicted.

Output, one row per test row: id (the input's, or the row number among the test rows), p, se, label (the predicted class, in the training labels' values), y (the true label when the test file had one). The metadata carries the cloud's gpc:log_ml and gpc:se_log_ml.

` + examplesHelp + `
  gpc-kernel --standardize --alpha 4 --beta 10 --train examples/crabs/train.csv --test examples/crabs/test.csv | gpc-train | gpc-predict
  gpc-kernel --standardize --alpha 4 --beta 10 --train examples/crabs/train.csv | gpc-train > cloud.arrows
  gpc-kernel --standardize --alpha 4 --beta 10 --train examples/crabs/train.csv --test examples/crabs/test.csv | gpc-predict --cloud cloud.arrows --format csv > posteriors.csv

` + exitHelp

// predictCmd is gpc-predict's command line.
type predictCmd struct {
	Input     string   `arg:"" optional:"" default:"-" help:"The cloud with test rows (gpc-train's output), or with --cloud a covariance stream; - or nothing reads standard input."`
	Cloud     string   `help:"A saved cloud (gpc-train's output); the input is then the covariance stream whose test rows are predicted."`
	BatchSize int      `default:"4096" help:"Test rows per batch (and per Arrow record batch)."`
	Count     string   `enum:"soft,hard" default:"soft" help:"soft: the mean of Phi(mu*/sigma*) over the particles; hard: the paper's hard count, the fraction of particles whose draw of v* is positive (noisier; to reproduce the paper)."`
	Seed      int64    `default:"1" help:"Random seed of the hard count's draws."`
	MaxMemory byteSize `name:"max-memory" default:"0" help:"Most memory the cloud may take, e.g. 8GB or 512MiB (0: half the available memory); a larger cloud is refused (exit 80)."`
	commonFlags
}

// cloudGCPercent is the garbage collector's GOGC while a tool holds a
// cloud: garbage may reach 10% of the live heap.
const cloudGCPercent = 10

// Predict runs gpc-predict.
func Predict(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return run("gpc-predict", predictDescription, &predictCmd{}, args, stdin, stdout, stderr)
}

// Validate checks the flags after parsing.
func (c *predictCmd) Validate() error {
	if err := c.validateCommon(); err != nil {
		return err
	}
	if c.BatchSize < 1 {
		return usagef("--batch-size %d: must be at least 1", c.BatchSize)
	}
	if c.Seed < 0 {
		return usagef("--seed %d: must be 0 or more", c.Seed)
	}
	if c.Cloud == "-" && (c.Input == "-" || c.Input == "") {
		return usagef("--cloud and the input cannot both read standard input")
	}
	return nil
}

func (c *predictCmd) run(e *env) error {
	// The cloud's record batches are garbage as soon as their particles are
	// copied out: collect them before the heap doubles (the particles hold
	// no pointers, so a collection costs little), so that the cloud is in
	// memory about once.
	defer debug.SetGCPercent(debug.SetGCPercent(cloudGCPercent))
	mem := format.NewAllocator()
	r, name, closeIn, err := openInput(c.Input, e.stdin)
	if err != nil {
		return err
	}
	defer closeIn()
	var cloud *format.CloudReader
	var tests interface {
		NextTest(int) (*format.TestRows, error)
	}
	testRows := -1 // unknown
	if c.Cloud == "" {
		enlargePipe(r)
		if cloud, err = format.OpenCloud(r, name, mem, format.CloudOptions{Limit: c.MaxMemory.limit(), Alloc: sysmem.Floats}); err != nil {
			return err
		}
		defer cloud.Close()
		tests = cloud
		if v, err := strconv.Atoi(cloud.Meta()[format.KeyRows]); err == nil {
			testRows = v - cloud.Train.N - totalParticles(cloud.Cloud)
		}
	} else {
		cf, err := os.Open(c.Cloud)
		if err != nil {
			return &format.IOError{Op: "open --cloud", Err: err}
		}
		defer cf.Close()
		if cloud, err = format.OpenCloud(cf, c.Cloud, mem, format.CloudOptions{Limit: c.MaxMemory.limit(), Alloc: sysmem.Floats}); err != nil {
			return err
		}
		defer cloud.Close()
		cr, err := format.NewCovReader(r, name, mem)
		if err != nil {
			return err
		}
		defer cr.Close()
		if fp := format.Fingerprint(cr.Train().Cov); fp != format.Fingerprint(cloud.Train.Cov) {
			return &dataError{fmt.Sprintf("%s: its train block (fingerprint %s) is not the one %s was trained on (%s): predict with the covariance the cloud came from, or train a new cloud", name, fp, c.Cloud, format.Fingerprint(cloud.Train.Cov))}
		}
		tests = cr
		if v, err := strconv.Atoi(cr.Train().Meta[format.KeyRows]); err == nil {
			testRows = v - cr.Train().N
		}
	}
	meta := cloud.Meta()
	jitter, _ := strconv.ParseFloat(meta[format.KeyJitter], 64)
	// The factor the particles were drawn with, rebuilt in their order:
	// for ep, EP is deterministic and gives the same Gaussian again.
	box := boxOf(cloud.Train)
	box.Labels = nil
	ord := core.Ordering{Kind: core.OrderGiven, Perm: cloud.Perm}
	var f *core.Factor
	if meta[format.KeyMethod] == core.MethodEP.String() {
		f, err = core.PrepareEP(box, ord, jitter)
	} else {
		f, err = core.NewFactor(box, ord, jitter)
	}
	if err != nil {
		return err
	}
	pos, neg := meta[format.KeyLabelPositive], meta[format.KeyLabelNegative]
	if pos == "" {
		pos, neg = "1", "-1"
	}
	outMeta := map[string]string{
		format.KeySchema:  "gpc.posteriors/1",
		format.KeyTool:    "gpc-predict",
		format.KeyVersion: Version,
	}
	passMeta(outMeta, meta)
	outMeta["gpc:count"] = c.Count
	if c.Count == "hard" {
		outMeta["gpc:count_seed"] = strconv.FormatInt(c.Seed, 10)
	}
	proto := posteriorTable(nil, nil, 0, pos, neg)
	proto.Meta = outMeta
	tw := format.NewTableWriter(e.stdout, c.outputFormat(e.stdout), proto, testRows, c.BatchSize, mem)
	e.rep.startProgress(c.Progress, rowsProgress(testRows, "test rows"))
	defer e.rep.stopProgress()
	row := 0
	warned := false
	for {
		if err := e.ctx.Err(); err != nil {
			return err
		}
		t, err := tests.NextTest(c.BatchSize)
		if err != nil {
			return err
		}
		if t == nil {
			break
		}
		post := make([]core.Posterior, t.Len())
		opt := core.PredictOptions{Hard: c.Count == "hard", Seed: uint64(c.Seed), First: row, Threads: c.Threads}
		if err := core.PredictWith(post, f, cloud.Cloud, t.Cov, t.Var, opt); err != nil {
			if ie, ok := err.(*core.InputError); ok && ie.Index >= 0 {
				return &dataError{fmt.Sprintf("%s: test row %d: %s", name, row+ie.Index, ie.Msg)}
			}
			return err
		}
		if !warned && len(post) > 0 && math.IsNaN(post[0].SE) {
			e.rep.warnf("the cloud has one particle group: the posteriors have no standard error (train with --groups)")
			warned = true
		}
		if err := tw.Write(posteriorTable(t, post, row, pos, neg)); err != nil {
			return err
		}
		row += t.Len()
		e.rep.add(int64(t.Len()))
	}
	return tw.Close()
}

func totalParticles(c *core.Cloud) int {
	n := 0
	for _, g := range c.Groups {
		n += g.Len()
	}
	return n
}

// posteriorTable is a batch of the posteriors stream (gpc.posteriors/1).
// first is the batch's first test row, for default ids.
func posteriorTable(t *format.TestRows, post []core.Posterior, first int, pos, neg string) *format.Table {
	n := len(post)
	id, label, y := make([]string, n), make([]string, n), make([]string, n)
	p, se := make([]float64, n), make([]float64, n)
	for i, q := range post {
		id[i] = strconv.Itoa(first + i)
		if t.ID != nil && t.ID[i] != "" {
			id[i] = t.ID[i]
		}
		p[i], se[i] = q.P, q.SE
		label[i] = neg
		if q.P >= 0.5 {
			label[i] = pos
		}
		if t.Y != nil && !math.IsNaN(t.Y[i]) {
			y[i] = neg
			if t.Y[i] > 0 {
				y[i] = pos
			}
		}
	}
	return &format.Table{Cols: []format.Column{
		{Name: "id", Str: id},
		{Name: "p", Float: p},
		{Name: "se", Float: se},
		{Name: "label", Str: label},
		{Name: "y", Str: y},
	}}
}
