package cli

import (
	"errors"
	"fmt"
	"io"
	"math"
	"runtime/debug"
	"slices"
	"strconv"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/format"
	"github.com/gpc-mc/gpc/internal/sysmem"
)

const predictDescription = `Compute test posteriors p(y* = +1) from a particle cloud: the last step of the pipeline.

` + pipelineHelp + `

For each test row (a test pattern's covariance r with the train variables and variance s), the posterior is the weighted mean over the cloud's particles of Phi(mu*/sigma*), with mu* = r' R^-1 v and sigma*^2 = s - r' R^-1 r (the paper's soft count), and its standard error comes from the independent particle groups.

The cloud is read from the input (gpc-train's output, with the input's test rows), or from --cloud FILE, a saved cloud; the input is then a covariance stream (gpc-kernel's) whose train block must be the cloud's (its fingerprint is checked) and whose test rows are predicted.

The factor the particles were drawn with (the variable order, EP's Gaussian, their Cholesky factors) comes with the cloud: gpc-predict never prepares it again, and starts predicting as soon as it has read it (a cloud of gpc.cloud/2, without it, is still read: the factor is then prepared again from the train block).

The test rows are predicted as the particles stream past, so the cloud is never held: gpc-train writes them ahead of the particles when they take at most a quarter of the cloud's memory (or 1 MiB), and with --cloud as many are read ahead. Beyond that the cloud is held in memory (--max-memory) and the test rows predicted a batch at a time. The posteriors are the same, bit for bit.

Output, one row per test row: id (the input's, or the row number among the test rows), p, se, label (the predicted class, in the training labels' values), y (the true label when the test file had one). The metadata carries the cloud's gpc:log_ml and gpc:se_log_ml. The table (--format table, or a terminal) ends, when test labels are known, with a line: the rows predicted right, the mean log predictive probability of the true labels and the cloud's log marginal likelihood.

A Vecchia cloud (gpc-train on gpc-kernel --vecchia's model, docs/vecchia.md) holds each particle group's weighted posteriors of its test rows, computed as the group ended: gpc-predict combines them (weights n_g I_g, standard errors from their spread, as for a dense cloud). It takes no --count hard. A Vecchia cloud that keeps particle paths (gpc-train --keep; by default when the model had no test rows) predicts new rows later: with --cloud C, the input is gpc-kernel --vecchia's model of the same training data (same kernel, neighbours and order: its training part's fingerprint is checked) with the new rows as its test rows, each predicted from every group's kept paths as the group predicted its own test rows at its end, and the groups combined as above; the paths are held in memory (4 N K bytes for K paths, 4 N (C - 1) K with C classes). A cloud without paths is refused with what to do. With more than three classes the class probabilities' draws come from --seed. A multi-class Vecchia cloud's posteriors are each class's probability, in the dense multi-class table.

From a multi-class cloud (gpc-kernel with three or more classes), one row per test point: id, p_<class> and se_<class> for every class (the probability that the point's utility of that class is the largest, given the training data: exact per particle for three classes, from antithetic draws beyond, whose error is in se; they sum to one), label (the most probable class), y. The cloud is then held in memory (--max-memory).

` + examplesHelp + `
  gpc-kernel --standardize --alpha 4 --beta 10 --train examples/crabs/train.csv --test examples/crabs/test.csv | gpc-train | gpc-predict
  gpc-kernel --standardize --alpha 4 --beta 10 --train examples/crabs/train.csv | gpc-train > cloud.arrows
  gpc-kernel --standardize --alpha 4 --beta 10 --train examples/crabs/train.csv --test examples/crabs/test.csv | gpc-predict --cloud cloud.arrows --format csv > posteriors.csv
  gpc-kernel --standardize --alpha 4 --beta 10 --vecchia 30 --train examples/crabs/train.csv | gpc-train > vcloud.arrows   # no test rows: keeps 4000 particle paths
  gpc-kernel --standardize --alpha 4 --beta 10 --vecchia 30 --train examples/crabs/train.csv --test examples/crabs/test.csv | gpc-predict --cloud vcloud.arrows
  gpc-kernel --standardize --alpha 2 --beta 4 --label species --vecchia 20 --train examples/iris/train.csv | gpc-train > iris-cloud.arrows   # three classes
  gpc-kernel --standardize --alpha 2 --beta 4 --label species --vecchia 20 --train examples/iris/train.csv --test examples/iris/test.csv | gpc-predict --cloud iris-cloud.arrows

` + exitHelp

// predictCmd is gpc-predict's command line.
type predictCmd struct {
	Input       string `arg:"" optional:"" default:"-" help:"The cloud with test rows (gpc-train's output), or with --cloud a covariance stream; - or nothing reads standard input."`
	Cloud       string `help:"A saved cloud (gpc-train's output; - reads it from standard input, and the covariance then from its file); the input is then the covariance stream whose test rows are predicted."`
	batchFlags  `embed:""`
	Count       string `enum:"soft,hard" default:"soft" help:"soft: the mean of Phi(mu*/sigma*) over the particles; hard: the paper's hard count, the fraction of particles whose draw of v* is positive (noisier; to reproduce the paper, with --seed for its draws)."`
	seedFlags   `embed:""`
	memoryFlags `embed:""`
	shardFlags  `embed:""`
	commonFlags `embed:""`
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
	if err := c.validateBatch(); err != nil {
		return err
	}
	if err := c.validateSeed(); err != nil {
		return err
	}
	if c.Cloud == "-" && (c.Input == "-" || c.Input == "") {
		return usagef("--cloud - reads the cloud from standard input, so the covariance stream cannot come from there too: name its file (gpc-predict --cloud - cov.arrows), or the cloud's (--cloud cloud.arrows)")
	}
	return nil
}

func (c *predictCmd) run(e *env) error {
	// The train block, the factor and the cloud hold no pointers: collect
	// when the heap has grown by a quarter, not doubled (N = 5000: 1.5 GB
	// peak instead of 0.8 GB live).
	defer lowerGC()()
	mem := format.NewAllocator()
	r, name, closeIn, err := openInput(c.Input, e.stdin)
	if err != nil {
		return err
	}
	defer closeIn()
	in := &predictInput{testRows: -1, limit: c.MaxMemory.limit()}
	defer in.close()
	if c.Cloud == "" {
		enlargePipe(r)
		schema, all, err := format.Sniff(r, name)
		if err != nil {
			return err
		}
		if schema == format.SchemaVecchiaCloud {
			return c.runVecchia(e, all, name, mem)
		}
		err = c.readCloud(in, all, name)
		if err != nil {
			return err
		}
	} else if err := c.readCloudFile(in, r, name, e.stdin, mem); err != nil {
		return err
	} else if in.vecchia != nil {
		return c.predictLater(e, in.vecchia, in.vecchiaName, r, name, mem)
	}
	if in.testRows == 0 || (in.stream && in.ahead.Len() == 0) {
		return c.noTests(name, false)
	}
	cloud := in.cloud
	f, err := c.factor(e, cloud)
	if err != nil {
		return err
	}
	// The train block is no longer needed: its memory goes before the
	// cloud's particles come.
	cloud.Train.Cov = nil
	releaseLarge(f.N)
	out := c.newPredictOut(cloud)
	names, err := cloudClasses(cloud.Meta(), name)
	if err != nil {
		return err
	}
	if names != nil {
		if c.Shard != "" {
			return usagef("--shard: a multi-class cloud's posteriors are not sharded yet (predict them in one run)")
		}
		return c.runClasses(e, f, cloud, in.tests, in.ahead, names, in.testRows, out.meta, out.estimate, out.opt, name, mem)
	}
	if in.stream {
		in.testRows = in.ahead.Len()
	}
	if err := c.shardRows(in, out, name); err != nil {
		return err
	}
	if c.Fingerprint {
		return c.printPredictFingerprint(e, cloud, in.tests, in.ahead, in.stream, out.meta, out.estimate, out.sk)
	}
	if in.stream {
		return c.predictStreamed(e, f, in, out, name, mem)
	}
	return c.predictHeld(e, f, in, out, name, mem)
}

// predictInput is where gpc-predict's particles and test rows come from:
// the cloud, the test rows read ahead of its particles, and the rest of
// them (tests: the cloud's, or --cloud's covariance stream's).
type predictInput struct {
	cloud    *format.CloudReader
	tests    testSource
	ahead    *format.TestRows
	stream   bool // predict as the particles stream past: every test row is ahead
	testRows int  // -1: unknown
	closers  []func()
	// vecchia is --cloud's Vecchia cloud (vecchiaName), which predicts
	// the input's Vecchia model (predictLater), or nil.
	vecchia     io.Reader
	vecchiaName string
	limit       int64 // --max-memory's, read once
}

// close closes the input's readers, the last opened first.
func (in *predictInput) close() {
	for _, c := range slices.Backward(in.closers) {
		c()
	}
}

// readCloud opens the cloud of the input (gpc-train's output), with its
// test rows, and reads those it put ahead of its particles.
func (c *predictCmd) readCloud(in *predictInput, r io.Reader, name string) error {
	// The cloud's record batches, read one after the other, reuse their
	// memory.
	cloud, err := format.OpenCloudLean(r, name, format.NewRecyclingAllocator())
	if err != nil {
		return err
	}
	in.cloud, in.tests, in.testRows = cloud, cloud, cloud.TestRowCount()
	in.closers = append(in.closers, cloud.Close)
	if in.testRows == 0 {
		return c.noTests(name, false) // known from the head, while gpc-train estimates
	}
	if cloud.TestsFirst() {
		// gpc-train put them first because they were small beside
		// the cloud; they must all be read to reach it.
		if in.ahead, _, err = readTests(cloud, c.BatchSize, in.limit, true, name); err != nil {
			return err
		}
		in.stream = true
	}
	return nil
}

// readCloudFile opens --cloud's cloud (a file, or standard input for -)
// and the input's covariance stream, checks that they share their train
// block, and reads the test rows that fit beside a small share of the
// cloud: those are predicted in one pass over it; more, and the cloud is
// held instead.
func (c *predictCmd) readCloudFile(in *predictInput, r io.Reader, name string, stdin io.Reader, mem format.Allocator) error {
	cf, cname, closeCloud, err := openInput(c.Cloud, stdin)
	if err != nil {
		return &format.IOError{Op: "open --cloud", Err: errors.Unwrap(err)}
	}
	in.closers = append(in.closers, closeCloud)
	schema, all, err := format.Sniff(cf, cname)
	if err != nil {
		return err
	}
	if schema == format.SchemaVecchiaCloud {
		in.vecchia, in.vecchiaName = all, cname // predictLater
		return nil
	}
	if schema, all, err := format.Sniff(r, name); err != nil {
		return err
	} else if schema == format.SchemaVecchia {
		return &dataError{fmt.Sprintf("%s: a Vecchia model (gpc-kernel --vecchia), and --cloud %s is a dense cloud: predict with a covariance stream of its training data (gpc-kernel without --vecchia), or train a Vecchia cloud that keeps particle paths (gpc-train --keep) and give it to --cloud", name, c.Cloud)}
	} else {
		r = all
	}
	cloud, err := format.OpenCloudLean(all, cname, format.NewRecyclingAllocator())
	if err != nil {
		return err
	}
	in.cloud = cloud
	in.closers = append(in.closers, cloud.Close)
	cr, err := format.NewCovReader(r, name, mem)
	if err != nil {
		return err
	}
	in.closers = append(in.closers, cr.Close)
	want := cloud.Meta()[format.KeyFingerprint] // checked against the train block by OpenCloud
	if want == "" {
		want = format.Fingerprint(cloud.Train.Cov)
	}
	if fp := format.Fingerprint(cr.Train().Cov); fp != want {
		return &dataError{fmt.Sprintf("%s: its train block (fingerprint %s) is not the one %s was trained on (%s): predict with the covariance the cloud came from, or train a new cloud", name, fp, cname, want)}
	}
	in.tests = cr
	if v, err := strconv.Atoi(cr.Train().Meta[format.KeyRows]); err == nil {
		in.testRows = v - cr.Train().N
	}
	in.ahead, in.stream, err = readTests(cr, c.BatchSize, min(in.limit, aheadBytes(cloud.Particles(), cloud.Train.N)), false, name)
	return err
}

// factor is the factor the particles were drawn with: the cloud's own
// (gpc-train writes it), else (a gpc.cloud/2 stream) rebuilt in their
// order: for ep, EP is deterministic and gives the same Gaussian again,
// with EP's own sites as gpc.cloud/2's writers had them (not widened).
func (c *predictCmd) factor(e *env, cloud *format.CloudReader) (*core.Factor, error) {
	f := cloud.Factor
	cloud.Factor = nil // f only: predicting in one pass lets go of it once the test basis is made
	if f != nil {
		return f, nil
	}
	meta := cloud.Meta()
	if c.Progress {
		e.rep.note("the cloud (%s) does not carry its factor: preparing it again", meta[format.KeySchema])
	}
	jitter, _ := strconv.ParseFloat(meta[format.KeyJitter], 64)
	box := boxOf(cloud.Train)
	box.Labels = nil
	ord := core.Ordering{Kind: core.OrderGiven, Perm: cloud.Perm}
	if meta[format.KeyMethod] == core.MethodEP.String() {
		return core.PrepareEPUnwidened(box, ord, jitter)
	}
	return core.NewFactor(box, ord, jitter)
}

// predictOut is what gpc-predict writes: the posteriors' metadata and
// labels, the rows [lo, hi) of the test rows that a shard (sk > 0)
// predicts, and its digest of every test row.
type predictOut struct {
	meta     map[string]string
	pos, neg string
	opt      core.PredictOptions
	// estimate adds the cloud's estimate of the log marginal likelihood,
	// from its groups' estimates (known once their particles were read),
	// as gpc-train computed it.
	estimate       func()
	lo, hi, rows   int
	si, sk         int
	digest         *format.RowDigest
	proto          *format.Table
	oneGroupWarned bool
}

// newPredictOut is the posteriors' output of cloud.
func (c *predictCmd) newPredictOut(cloud *format.CloudReader) *predictOut {
	out := &predictOut{digest: format.NewRowDigest()}
	out.meta, out.pos, out.neg = c.posteriorsMeta(cloud.Meta())
	if c.Count == "hard" {
		out.meta["gpc:count_seed"] = strconv.FormatInt(c.Seed, 10)
	}
	out.estimate = func() {
		sizes := cloud.GroupSizes()
		logML, se, _ := core.CombineGroups(cloud.LogZ, sizes)
		out.meta[format.KeyLogML] = fmtFloat(logML)
		out.meta[format.KeySELogML] = fmtFloat(se)
		out.meta[format.KeyGroupLogP] = format.JoinFloats(cloud.LogZ)
	}
	out.opt = core.PredictOptions{Hard: c.Count == "hard", Seed: uint64(c.Seed), Threads: c.Threads}
	out.proto = posteriorTable(nil, nil, 0, out.pos, out.neg)
	out.proto.Meta = out.meta
	return out
}

// shardRows sets the test rows the output holds: all of them, or with
// --shard I/K shard I's, [lo, hi) of the testRows, with its metadata.
func (c *predictCmd) shardRows(in *predictInput, out *predictOut, name string) error {
	si, sk, err := c.shard()
	if err != nil {
		return err
	}
	out.si, out.sk = si, sk
	out.lo, out.hi, out.rows = 0, in.testRows, in.testRows
	if sk == 0 {
		return nil
	}
	if in.testRows < 0 {
		return &dataError{fmt.Sprintf("%s: --shard splits the test rows, and their count is not known before they are read (no gpc:rows in the metadata)", name)}
	}
	if sk > in.testRows {
		return tooManyShards(si, sk, in.testRows, "test rows", "row", "")
	}
	out.lo, out.hi = shardRange(si, sk, in.testRows)
	out.rows = out.hi - out.lo
	addShardMeta(out.meta, format.SchemaPosteriorsShard, si, sk, out.lo, out.hi, "")
	out.meta[format.KeyShardRowsOf] = strconv.Itoa(in.testRows)
	out.meta[format.KeyShardBatch] = strconv.Itoa(c.BatchSize)
	return nil
}

// shardDone adds a shard's fingerprint, which covers every test row, to
// its metadata once they are all read.
func (c *predictCmd) shardDone(out *predictOut) {
	if out.sk > 0 {
		out.meta[format.KeyShardTests] = out.digest.Sum()
		out.meta[format.KeyShardFingerprint] = c.predictFingerprint(out.meta, out.sk)
	}
}

// predictStreamed predicts the test rows read ahead as the particles
// stream past, and writes their posteriors.
func (c *predictCmd) predictStreamed(e *env, f *core.Factor, in *predictInput, out *predictOut, name string, mem format.Allocator) error {
	ahead := in.ahead
	out.digest.Add(ahead)
	if out.sk > 0 {
		ahead, out.opt.First = sliceTests(ahead, out.lo, out.hi), out.lo
	}
	post, err := c.streamPredict(e, f, in.cloud, ahead, out.opt, name)
	if err != nil {
		return err
	}
	out.estimate()
	c.shardDone(out)
	tw := format.NewTableWriter(e.stdout, c.outputFormat(e.stdout), out.proto, ahead.Len(), c.BatchSize, mem)
	var sum predictSummary
	for a := 0; a < ahead.Len(); a += c.BatchSize {
		b := min(ahead.Len(), a+c.BatchSize)
		sum.add(sliceTests(ahead, a, b), post[a:b])
		if err := tw.Write(posteriorTable(sliceTests(ahead, a, b), post[a:b], out.lo+a, out.pos, out.neg)); err != nil {
			return err
		}
	}
	tw.Note = sum.line(out.meta)
	return tw.Close()
}

// predictHeld holds the cloud's particles and predicts the test rows a
// batch at a time. A shard's posteriors (a few numbers a row) are held
// until every test row has been read: its fingerprint covers them all,
// and goes first, in the schema.
func (c *predictCmd) predictHeld(e *env, f *core.Factor, in *predictInput, out *predictOut, name string, mem format.Allocator) error {
	// Record batches are garbage as soon as their particles are copied
	// out: collect them before the heap doubles (the particles hold no
	// pointers, so a collection costs little), so that the cloud is in
	// memory about once.
	defer debug.SetGCPercent(debug.SetGCPercent(cloudGCPercent))
	cl, err := in.cloud.LoadParticles(in.limit, sysmem.Floats)
	if err != nil {
		return err
	}
	out.estimate()
	var tw *format.TableWriter
	var held []*format.Table
	if out.sk == 0 {
		tw = format.NewTableWriter(e.stdout, c.outputFormat(e.stdout), out.proto, out.rows, c.BatchSize, mem)
	}
	e.rep.startProgress(c.Progress, rowsProgress(in.testRows, "test rows"))
	defer e.rep.stopProgress()
	row := 0
	var sum predictSummary
	for t := in.ahead; ; t = nil {
		if err := e.ctx.Err(); err != nil {
			return err
		}
		if t == nil {
			if t, err = in.tests.NextTest(c.BatchSize); err != nil {
				return err
			}
			if t == nil {
				break
			}
		}
		first := row
		row += t.Len()
		pt, err := c.predictBatch(e, f, cl, t, first, out, &sum, name)
		if err != nil {
			return err
		}
		if pt == nil {
			continue
		}
		if out.sk > 0 {
			held = append(held, pt)
		} else if err := tw.Write(pt); err != nil {
			return err
		}
	}
	if row == 0 {
		return c.noTests(name, false)
	}
	if out.sk > 0 {
		c.shardDone(out)
		tw = format.NewTableWriter(e.stdout, c.outputFormat(e.stdout), out.proto, out.rows, c.BatchSize, mem)
		for _, pt := range held {
			if err := tw.Write(pt); err != nil {
				return err
			}
		}
	}
	tw.Note = sum.line(out.meta)
	return tw.Close()
}

// predictBatch predicts the output's rows of a batch t of test rows from
// the held cloud cl (first: t's first row among the test rows) and
// returns their posteriors' table; nil where a shard has none of them.
func (c *predictCmd) predictBatch(e *env, f *core.Factor, cl *core.Cloud, t *format.TestRows, first int, out *predictOut, sum *predictSummary, name string) (*format.Table, error) {
	if out.sk > 0 {
		out.digest.Add(t)
		// This shard's rows of the batch, [lo, hi) less first.
		a, b := min(max(out.lo-first, 0), t.Len()), max(min(out.hi-first, t.Len()), 0)
		if a >= b {
			return nil, nil
		}
		t, first = sliceTests(t, a, b), first+a
	}
	post := make([]core.Posterior, t.Len())
	out.opt.First = first
	if err := core.PredictWith(post, f, cl, t.Cov, t.Var, out.opt); err != nil {
		return nil, testRowError(err, name, first)
	}
	if !out.oneGroupWarned && len(post) > 0 && math.IsNaN(post[0].SE) {
		e.rep.warnf("the cloud has one particle group: the posteriors have no standard error (train with --groups)")
		out.oneGroupWarned = true
	}
	sum.add(t, post)
	e.rep.add(int64(t.Len()))
	return posteriorTable(t, post, first, out.pos, out.neg), nil
}

// printPredictFingerprint is --fingerprint: it reads the cloud's
// particles through (their groups' estimates are in the fingerprint) and
// every test row, as a shard does, and prints the fingerprint.
func (c *predictCmd) printPredictFingerprint(e *env, cloud *format.CloudReader, tests testSource, ahead *format.TestRows, stream bool, meta map[string]string, estimate func(), k int) error {
	digest := format.NewRowDigest()
	if ahead != nil {
		digest.Add(ahead)
	}
	for {
		ps, err := cloud.NextParticles()
		if err != nil {
			return err
		}
		if ps == nil {
			break
		}
		ps.Release()
	}
	for !stream {
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
		digest.Add(t)
	}
	estimate()
	meta[format.KeyShardTests] = digest.Sum()
	return printFingerprint(e, c.predictFingerprint(meta, k))
}

// predictSummary sums up the test rows whose labels are known, for the
// line that ends the terminal table.
type predictSummary struct {
	labelled, right int
	logPred         float64 // the sum of log p(y = the true label)
}

func (s *predictSummary) add(t *format.TestRows, post []core.Posterior) {
	if t.Y == nil {
		return
	}
	for i, q := range post {
		y := t.Y[i]
		if math.IsNaN(y) {
			continue
		}
		s.labelled++
		p := q.P
		if y < 0 {
			p = 1 - q.P
		}
		if (q.P >= 0.5) == (y > 0) { // the predicted label is right
			s.right++
		}
		s.logPred += math.Log(p)
	}
}

// line is the summary: the accuracy, the mean log predictive probability
// of the true labels and the cloud's log marginal likelihood; "" when no
// label is known.
func (s *predictSummary) line(meta map[string]string) string {
	if s.labelled == 0 {
		return ""
	}
	logML, _ := strconv.ParseFloat(meta[format.KeyLogML], 64)
	se, _ := strconv.ParseFloat(meta[format.KeySELogML], 64)
	return fmt.Sprintf("%d of %d labelled test rows right (accuracy %.4g), mean log predictive probability %.4g; log marginal likelihood %.7g (se %.2g)",
		s.right, s.labelled, float64(s.right)/float64(s.labelled), s.logPred/float64(s.labelled), logML, se)
}

// noTests is the error of an input without test rows: a pipeline that
// forgot gpc-kernel's --test would otherwise print an empty table and
// look successful. gpc-predict says so as soon as the cloud's head
// arrives: gpc-train writes it once it has prepared the estimate and
// before it runs it, and stops (a broken pipe) when gpc-predict has gone.
// What else to try depends on the cloud: a dense cloud, saved, predicts
// new test rows (--cloud); a Vecchia cloud the test rows it was trained
// with (vecchiaNoTests).
func (c *predictCmd) noTests(name string, vecchiaCloud bool) error {
	msg := name + ": the cloud has no test rows (gpc-kernel had no --test), so there is nothing to predict: give gpc-kernel --test FILE, or save the cloud (gpc-train > cloud.arrows) and predict from it the test rows of a covariance stream that has them (gpc-kernel ... --test FILE | gpc-predict --cloud cloud.arrows)"
	switch {
	case c.Cloud != "":
		msg = name + ": the covariance has no test rows (gpc-kernel had no --test), so there is nothing to predict: give gpc-kernel --test FILE"
	case vecchiaCloud:
		msg = name + ": the Vecchia cloud has no test rows (gpc-kernel had no --test), so there is nothing to predict here: " + vecchiaNoTests
	}
	return &dataError{msg}
}

// vecchiaNoTests is what to do about a Vecchia cloud without test rows.
const vecchiaNoTests = "save it (gpc-train > cloud.arrows: without test rows it keeps particle paths) and predict new rows from it (gpc-kernel --vecchia ... --test FILE | gpc-predict --cloud cloud.arrows), or give gpc-kernel --test FILE and train again"

// testSource yields test rows a batch at a time.
type testSource interface {
	NextTest(int) (*format.TestRows, error)
}

// aheadBytes is how much memory the test rows predicted in one pass over a
// cloud of m particles in n dimensions may take (their covariances and
// their basis rows, testRowBytes each): a quarter of the cloud's, or 1 MiB
// for a small cloud. gpc-train writes test rows within it before the
// particles; gpc-predict --cloud reads as many ahead. Beyond it, holding
// the cloud is the smaller cost. (At N = 10^4, M = 10^4, 1000 test rows
// take 160 MB, a fifth of the cloud's 800 MB: predicted in one pass,
// gpc-predict holds 1.8 GB fewer at its peak than with the cloud held.)
func aheadBytes(m, n int) int64 {
	return max(1<<20, int64(m)*int64(n)*8/4)
}

// testRowBytes is the memory a test row of n covariances takes while it is
// predicted in one pass (its covariances and its row of the test basis).
func testRowBytes(n int) int64 { return 2*8*int64(n) + 64 }

// readTests reads test rows from src until they end or would take more
// than limit bytes (testRowBytes each). It returns them (never nil) and
// whether they are all of them. If must is set, running over limit is an
// error: the test rows are all needed before the cloud.
func readTests(src testSource, batch int, limit int64, must bool, name string) (*format.TestRows, bool, error) {
	all := &format.TestRows{}
	for {
		t, err := src.NextTest(batch)
		if err != nil {
			return nil, false, err
		}
		if t == nil {
			return all, true, nil
		}
		if all.Len() == 0 {
			*all = *t
		} else {
			all.Cov = append(all.Cov, t.Cov...)
			all.Var = append(all.Var, t.Var...)
			all.ID = append(all.ID, t.ID...)
			all.Y = append(all.Y, t.Y...)
		}
		n := len(t.Cov) / max(1, t.Len())
		if need := int64(all.Len()) * testRowBytes(n); limit > 0 && need > limit {
			if must {
				return nil, false, &format.MemoryError{What: fmt.Sprintf("%s: the test rows before the particles (%d and more)", name, all.Len()), Need: need, Limit: limit}
			}
			return all, false, nil
		}
	}
}

// sliceTests returns test rows [a, b) of t.
func sliceTests(t *format.TestRows, a, b int) *format.TestRows {
	n := len(t.Cov) / max(1, t.Len())
	s := &format.TestRows{Cov: t.Cov[a*n : b*n], Var: t.Var[a:b]}
	if t.ID != nil {
		s.ID = t.ID[a:b]
	}
	if t.Y != nil {
		s.Y = t.Y[a:b]
	}
	return s
}

// testRowError names the test row of a core.InputError; first is the
// first test row of the call that failed.
func testRowError(err error, name string, first int) error {
	if ie, ok := err.(*core.InputError); ok && ie.Index >= 0 {
		return &dataError{fmt.Sprintf("%s: test row %d: %s", name, first+ie.Index, ie.Msg)}
	}
	return err
}

// streamPredict predicts the test rows t as the cloud's particles stream
// past, holding only the record batches in flight.
func (c *predictCmd) streamPredict(e *env, f *core.Factor, cloud *format.CloudReader, t *format.TestRows, opt core.PredictOptions, name string) ([]core.Posterior, error) {
	p, err := core.NewPredictor(f, cloud.GroupSizes(), t.Cov, t.Var, opt)
	if err != nil {
		return nil, testRowError(err, name, 0)
	}
	defer p.Close()
	// The factor's N x N matrices have done their work (the basis holds
	// what the particles meet): their memory goes before the particles
	// come.
	n := f.N
	f = nil
	releaseLarge(n)
	e.rep.startProgress(c.Progress, countProgress(cloud.Particles(), "particles"))
	defer e.rep.stopProgress()
	for {
		if err := e.ctx.Err(); err != nil {
			return nil, err
		}
		ps, err := cloud.NextParticles()
		if err != nil {
			return nil, err
		}
		if ps == nil {
			break
		}
		k := len(ps.LogW)
		p.Add(ps.Group, ps.First, ps.Z, ps.LogW, ps.Release)
		e.rep.add(int64(k))
	}
	post := make([]core.Posterior, t.Len())
	if err := p.Finish(post, cloud.LogZ); err != nil {
		return nil, testRowError(err, name, 0)
	}
	if len(post) > 0 && math.IsNaN(post[0].SE) {
		e.rep.warnf("the cloud has one particle group: the posteriors have no standard error (train with --groups)")
	}
	return post, nil
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

// predictFingerprint is a posteriors shard's gpc:shard_fingerprint: the
// cloud (its estimate and train block, in the output's metadata), the
// test rows (all of them: gpc:shard_tests, their format.RowDigest, which
// the shard sets first), the flags that change the posteriors, K and the
// compute path.
func (c *predictCmd) predictFingerprint(meta map[string]string, k int) string {
	return format.ShardFingerprint("gpc-predict", meta[format.KeyFingerprint], meta[format.KeyGroupLogP], meta[format.KeySeed], "tests="+meta[format.KeyShardTests],
		fmt.Sprintf("count=%s seed=%d batch-size=%d", c.Count, c.Seed, c.BatchSize), "shards="+strconv.Itoa(k), "path="+computePath())
}

// posteriorsMeta starts the posteriors' metadata from the cloud's meta,
// and returns the labels (1 and -1 where the cloud names none).
func (c *predictCmd) posteriorsMeta(meta map[string]string) (out map[string]string, pos, neg string) {
	pos, neg = meta[format.KeyLabelPositive], meta[format.KeyLabelNegative]
	if pos == "" {
		pos, neg = "1", "-1"
	}
	out = map[string]string{
		format.KeySchema:  "gpc.posteriors/1",
		format.KeyTool:    "gpc-predict",
		format.KeyVersion: Version,
	}
	passMeta(out, meta)
	out["gpc:count"] = c.Count
	return out, pos, neg
}
