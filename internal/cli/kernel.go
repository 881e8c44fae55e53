package cli

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gpc-mc/gpc/core/fit"
	"github.com/gpc-mc/gpc/core/gp"
	"github.com/gpc-mc/gpc/format"
)

const kernelDescription = `Build the covariance stream of a probit GP classifier from features: the first step of the pipeline.

` + pipelineHelp + `

For training features X (N rows) with labels y in {-1, +1} and a kernel k, the train rows hold R = C (I + K) C, C = diag(y), K = k(X, X): the marginal likelihood is P(v >= 0), v ~ N(0, R). Each test pattern x* then adds a row with its covariance y_j k(x_j, x*) with the train variables and its variance 1 + k(x*, x*).

With --vecchia m the output is a Vecchia model (gpc.vecchia/1, docs/vecchia.md) instead of the N x N covariance: the training points in a maxmin order (each next point the farthest from those before it: coarse to fine; --vecchia-order given keeps the file's), each with its m nearest earlier points (its neighbours) and the coefficients and variance of its latent value given theirs (the latent process's conditionals, from the kernel: the dense model's exact joint with m = N - 1), each test point with its m nearest training points. The stream takes O(N m) memory and gpc-train's estimate O(m) per particle and point, for N in the millions; gpc-train, gpc-orthant, gpc-predict and gpc-merge read it. Training points with the same features share one latent value (each with its own label; a warning counts them). Three or more classes make the multinomial probit's C latent processes, on one order with one kernel shared by the classes (docs/vecchia.md), and gpc-predict gives each class's probability as on the dense path.

With three or more label values (text or numbers) the classifier is the multinomial probit model (docs/multiclass.md): one latent function per class with the kernel k, utilities f_c(x) + noise, y = the class of the largest. The train rows are then the N (C - 1) differences u_{i,y_i} - u_{i,k} between each point's class and the others, whose orthant probability is the marginal likelihood, and each test pattern adds C rows, its utilities; the metadata names the classes (gpc:classes).

Features are read from CSV (a header names the columns), Parquet or Arrow IPC, detected from the content; dictionary-encoded columns (pandas categories, R factors, Polars Categoricals) are read as their values. Every column other than the label (--label) and the identifier (--id) is a feature and must be numeric; the test file must have the same feature columns (its label column is optional).

Kernels, with alpha the length scale and beta the latent scale (the prior variance of the latent function):
  rbf       beta exp(-||x - x'||^2 / alpha^2)        (the paper's parametrization: no factor 2)
  ard       beta exp(-sum_d (x_d - x'_d)^2 / alpha_d^2), one --alpha per feature
  matern32  beta (1 + sqrt(3) r/alpha) exp(-sqrt(3) r/alpha),  r = ||x - x'||
  matern52  beta (1 + sqrt(5) r/alpha + 5 r^2/(3 alpha^2)) exp(-sqrt(5) r/alpha)
  linear    beta x'x'
--bias adds a constant to any of them.

` + largeNHelp + `

` + examplesHelp + `
  gpc-kernel --standardize --alpha 4 --beta 10 --train examples/crabs/train.csv --test examples/crabs/test.csv | gpc-train | gpc-predict
  gpc-kernel --standardize --alpha 4 --beta 10 --train examples/crabs/train.csv                    # a summary, on a terminal
  gpc-kernel --kernel ard --alpha 1,1,2,2,2,2 --train examples/crabs/train.csv | gpc-orthant        # one length scale per feature
  gpc-kernel --kernel linear --beta 0.01 --train - < examples/crabs/train.csv | gpc-train --format csv
  gpc-kernel --standardize --alpha 4 --beta 64 --label species --id id --train examples/iris/train.csv --test examples/iris/test.csv | gpc-train | gpc-predict   # three classes

` + exitHelp

// kernelCmd is gpc-kernel's command line.
type kernelCmd struct {
	dataFlags    `embed:""`
	testFlags    `embed:""`
	kernelFlags  `embed:""`
	hyperFlags   `embed:""`
	HyperFile    string `name:"hyper" help:"Read the kernel and its hyperparameters from this table (gpc-fit's output, Arrow or CSV; - reads standard input) instead of --kernel, --alpha, --beta and --bias; a multi-class fit with a kernel per class gives each class its own."`
	classFlags   `embed:""`
	vecchiaFlags `embed:""`
	batchFlags   `embed:""`
	commonFlags  `embed:""`

	// hyperKernels are the kernels per class of a --hyper table fitted
	// with a kernel per class (nil otherwise).
	hyperKernels []*gp.Kernel
}

// Kernel runs gpc-kernel.
func Kernel(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return run("gpc-kernel", kernelDescription, &kernelCmd{}, args, stdin, stdout, stderr)
}

// Validate checks the flags after parsing.
func (c *kernelCmd) Validate() error {
	for _, check := range []func() error{c.validateCommon, c.validateData, func() error { return c.validateTest(&c.dataFlags) }, c.validateBatch, c.validateVecchia} {
		if err := check(); err != nil {
			return err
		}
	}
	if c.HyperFile == "-" && (c.Train == "-" || c.Test == "-") {
		return usagef("--hyper and --train or --test cannot both read standard input")
	}
	return c.checkHyper(c.kind()) // ard's count is checked against the features later
}

// readHyper sets --kernel, --alpha, --beta and --bias from the --hyper
// table, the ard kernel's length scales matched to the training features
// by name; a table fitted with a kernel per class (its class column) sets
// hyperKernels instead, one per class of classes (the training labels'
// classes, nil for two).
func (c *kernelCmd) readHyper(e *env, names, classes []string) error {
	f, err := c.readFrame(c.HyperFile, e)
	if err != nil {
		return err
	}
	fit, rows, err := format.ReadHyper(f)
	if err != nil {
		return err
	}
	kind, ok := gp.ParseKernel(fit.Kernel)
	if !ok {
		return &dataError{fmt.Sprintf("%s: kernel %q: not one of rbf, linear, ard, matern32, matern52", f.Name, fit.Kernel)}
	}
	if fit.Standardize != c.Standardize {
		return &dataError{fmt.Sprintf("%s: the hyperparameters were fitted %s --standardize: give the same here, or the length scales mean something else", f.Name, map[bool]string{true: "with", false: "without"}[fit.Standardize])}
	}
	c.Kernel = fit.Kernel
	byClass := map[string][]format.HyperRow{}
	for _, r := range rows {
		byClass[r.Class] = append(byClass[r.Class], r)
	}
	if _, shared := byClass[""]; shared || len(byClass) == 0 {
		if len(byClass) > 1 {
			return &dataError{fmt.Sprintf("%s: rows for every class and rows for one class: a table holds one kernel, or one per class", f.Name)}
		}
		k, err := hyperKernel(f.Name, kind, rows, names)
		if err != nil {
			return err
		}
		beta := k.Beta
		c.Alpha, c.Beta, c.Bias = k.Alpha, &beta, k.Bias
		return nil
	}
	if classes == nil {
		for cl := range byClass {
			return &dataError{fmt.Sprintf("%s: a kernel per class (class %q), but the training labels have two classes", f.Name, cl)}
		}
	}
	for cl := range byClass {
		if !slices.Contains(classes, cl) {
			return &dataError{fmt.Sprintf("%s: hyperparameters of class %q: the training labels have no such class (they have %s)", f.Name, cl, quoteList(classes, 6))}
		}
	}
	c.hyperKernels = make([]*gp.Kernel, len(classes))
	for i, cl := range classes {
		r, ok := byClass[cl]
		if !ok {
			return &dataError{fmt.Sprintf("%s: no hyperparameters for class %q (a kernel per class needs every class's)", f.Name, cl)}
		}
		if c.hyperKernels[i], err = hyperKernel(f.Name+": class "+strconv.Quote(cl), kind, r, names); err != nil {
			return err
		}
	}
	k := c.hyperKernels[0]
	beta := k.Beta
	c.Alpha, c.Beta, c.Bias = k.Alpha, &beta, k.Bias
	return nil
}

// hyperKernel builds the kernel of kind from a --hyper table's rows (of one
// kernel), the ard kernel's length scales matched to the training
// features names; where names the table (and class) for messages.
func hyperKernel(where string, kind gp.KernelKind, rows []format.HyperRow, names []string) (*gp.Kernel, error) {
	k := &gp.Kernel{Kind: kind, Beta: math.NaN()}
	if kind == gp.KernelARD {
		k.Alpha = make([]float64, len(names))
		for j := range k.Alpha {
			k.Alpha[j] = math.NaN()
		}
	}
	for _, r := range rows {
		switch r.Name {
		case "beta":
			k.Beta = r.Value
		case "bias":
			k.Bias = r.Value
		case "alpha":
			if kind != gp.KernelARD {
				k.Alpha = append(k.Alpha, r.Value)
				continue
			}
			j := slices.Index(names, r.Feature)
			if j < 0 {
				return nil, &dataError{fmt.Sprintf("%s: the ard length scale of feature %q: the training file has no such feature (it has %s)", where, r.Feature, strings.Join(names, ", "))}
			}
			k.Alpha[j] = r.Value
		}
	}
	for j, a := range k.Alpha {
		if math.IsNaN(a) {
			return nil, &dataError{fmt.Sprintf("%s: no ard length scale for feature %q", where, names[j])}
		}
	}
	if math.IsNaN(k.Beta) {
		return nil, &dataError{fmt.Sprintf("%s: no beta", where)}
	}
	if kind == gp.KernelLinear && len(k.Alpha) > 0 {
		return nil, &dataError{fmt.Sprintf("%s: the linear kernel has no length scale", where)}
	}
	if err := k.Validate(len(names)); err != nil {
		return nil, &dataError{fmt.Sprintf("%s: %v", where, err)}
	}
	return k, nil
}

func (c *kernelCmd) run(e *env) error {
	mem := format.NewAllocator()
	train, test, labels, err := c.readData(e)
	if err != nil {
		return err
	}
	if c.HyperFile != "" {
		if err := c.readHyper(e, train.names, labels.classes); err != nil {
			return err
		}
	}
	meta := c.dataMeta(e, train, test, labels)
	k, err := c.chooseKernel(train, meta)
	if err != nil {
		return err
	}
	if c.Vecchia > 0 {
		return c.runVecchia(e, train, test, labels, k, meta, mem)
	}
	if labels.classes != nil {
		return c.runClasses(e, train, test, labels, k, meta, mem)
	}
	if c.perClass() {
		return usagef("--class-alpha and --class-beta are for three or more classes; %s has two", train.source)
	}
	return c.writeDense(e, train, test, labels, k, meta, mem)
}

// readData reads the training features and labels and the test
// features, refusing a covariance that would not fit in memory.
func (c *kernelCmd) readData(e *env) (train, test *features, labels *labelMap, err error) {
	trainF, err := c.readFrame(c.Train, e)
	if err != nil {
		return nil, nil, nil, err
	}
	if labels, err = newLabelMap(trainF, c.Label, c.Positive); err != nil {
		return nil, nil, nil, err
	}
	if train, err = c.extract(trainF, nil, labels, true); err != nil {
		return nil, nil, nil, err
	}
	if train.rows == 0 {
		return nil, nil, nil, &dataError{fmt.Sprintf("%s: no training rows", trainF.Name)}
	}
	if avail, ok := availableMemory(); ok && c.Vecchia == 0 {
		if need := 8 * float64(train.rows) * float64(train.rows); need > float64(avail) {
			return nil, nil, nil, &dataError{fmt.Sprintf("%s: %d training rows make a %d x %d covariance of about %s, and only %s of memory is available: --vecchia auto makes a model of O(N) memory instead (docs/vecchia.md)", trainF.Name, train.rows, train.rows, train.rows, format.Bytes(need), format.Bytes(float64(avail)))}
		}
	}
	if c.Test != "" {
		testF, err := c.readFrame(c.Test, e)
		if err != nil {
			return nil, nil, nil, err
		}
		if test, err = c.extract(testF, train.names, labels, false); err != nil {
			return nil, nil, nil, err
		}
	}
	if err := c.checkID(train, test); err != nil {
		return nil, nil, nil, err
	}
	if train.id == nil && test != nil && test.id != nil {
		// The stream's id column is there for the test rows' sake; the
		// training rows' ids are empty, as test rows without ids are.
		train.id = make([]string, train.rows)
	}
	return train, test, labels, nil
}

// dataMeta is the output's metadata of the data: the features, the
// labels and (--standardize, which it applies) the standardization.
func (c *kernelCmd) dataMeta(e *env, train, test *features, labels *labelMap) map[string]string {
	meta := map[string]string{
		format.KeyTool:          "gpc-kernel",
		format.KeyVersion:       Version,
		"gpc:features":          strings.Join(train.names, ","),
		"gpc:label":             c.Label,
		format.KeyLabelPositive: labels.pos,
		format.KeyLabelNegative: labels.neg,
	}
	if c.Standardize {
		mean, sd := standardize(train, test)
		meta["gpc:standardize"] = "true"
		meta["gpc:feature_mean"] = format.JoinFloats(mean)
		meta["gpc:feature_sd"] = format.JoinFloats(sd)
		for j, s := range sd {
			if s == 0 {
				e.rep.warnf("feature %q is constant in the training set", train.names[j])
			}
		}
	}
	return meta
}

// chooseKernel is the kernel of the flags (or --hyper), the data's start
// where they leave a hyperparameter out, recorded in meta.
func (c *kernelCmd) chooseKernel(train *features, meta map[string]string) (*gp.Kernel, error) {
	var scale *fit.DataScale
	if c.Beta == nil || c.Alpha == nil && c.kind() != gp.KernelLinear {
		// The data's start, on the features as the kernel sees them.
		var err error
		if scale, err = fit.NewDataScale(train.x, len(train.names)); err != nil {
			return nil, &dataError{fmt.Sprintf("%s: %v", train.source, err)}
		}
	}
	k, start, err := c.kernel(c.kind(), train.names, scale)
	if err != nil {
		return nil, err
	}
	meta["gpc:kernel"] = c.Kernel
	meta["gpc:beta"] = fmtFloat(k.Beta)
	meta["gpc:bias"] = fmtFloat(k.Bias)
	if k.Alpha != nil {
		meta["gpc:alpha"] = format.JoinFloats(k.Alpha)
	}
	if scale != nil {
		meta["gpc:start"] = start
	}
	return k, nil
}

// writeDense writes the covariance stream of two classes: the train
// block, then the test rows (or, on a terminal, a row describing it).
func (c *kernelCmd) writeDense(e *env, train, test *features, labels *labelMap, k *gp.Kernel, meta map[string]string, mem format.Allocator) error {
	n := train.rows
	r, fp := covFingerprint(k, train)
	cov := &format.Covariance{N: n, Cov: r, Y: train.y, ID: train.id}
	meta[format.KeyFingerprint] = fp
	tests := 0
	if test != nil {
		tests = test.rows
	}
	rows := func(lo, hi int) *format.TestRows { return testRows(k, train, test, lo, hi) }
	switch c.outputFormat(e.stdout) {
	case format.Arrow:
		return c.writeStream(e, cov, rows, meta, tests, mem)
	case format.CSV:
		return c.writeCSV(e.stdout, cov, rows, tests)
	}
	t := &format.Table{Cols: []format.Column{
		{Name: "n", Int: []int64{int64(n)}},
		{Name: "test_rows", Int: []int64{int64(tests)}},
		{Name: "features", Int: []int64{int64(len(train.names))}},
		{Name: "kernel", Str: []string{c.Kernel}},
		{Name: "alpha", Str: []string{meta["gpc:alpha"]}},
		{Name: "beta", Float: []float64{k.Beta}},
		{Name: "bias", Float: []float64{k.Bias}},
		{Name: "positive", Str: []string{labels.pos}},
		{Name: "fingerprint", Str: []string{meta[format.KeyFingerprint]}},
	}}
	return format.WriteTable(e.stdout, t, format.Text, 0, mem)
}

// covFingerprint returns the classifier's covariance and its fingerprint
// (format.Fingerprint's), hashing the rows as the kernel finishes them.
func covFingerprint(k *gp.Kernel, train *features) ([]float64, string) {
	fp := format.NewFingerprinter()
	var (
		mu     sync.Mutex
		latest []float64 // the rows final so far
		ready  = make(chan struct{}, 1)
		hashed = make(chan struct{})
	)
	go func() {
		defer close(hashed)
		for h := 0; h < train.rows*train.rows; {
			<-ready
			mu.Lock()
			rows := latest
			mu.Unlock()
			fp.Write(rows[h:])
			h = len(rows)
		}
	}()
	r := gp.ClassifierCovRows(k, train.x, len(train.names), train.y, func(rows []float64) {
		mu.Lock()
		latest = rows
		mu.Unlock()
		select {
		case ready <- struct{}{}:
		default: // the hasher has a signal waiting: it will read latest
		}
	})
	<-hashed
	return r, fp.Sum()
}

// testRows computes test rows lo..hi of the covariance stream.
func testRows(k *gp.Kernel, train, test *features, lo, hi int) *format.TestRows {
	n, d := train.rows, len(train.names)
	t := &format.TestRows{Cov: make([]float64, (hi-lo)*n), Var: make([]float64, hi-lo)}
	for j := lo; j < hi; j++ {
		t.Var[j-lo] = gp.ClassifierTestRow(t.Cov[(j-lo)*n:(j-lo+1)*n], k, train.x, d, train.y, test.x[j*d:j*d+d])
	}
	if test.id != nil {
		t.ID = test.id[lo:hi]
	}
	if test.y != nil {
		t.Y = test.y[lo:hi]
	}
	return t
}

// writeStream writes the covariance stream, the test rows a batch at a
// time; an interrupt stops it between batches, without the end-of-stream
// marker, so that no reader takes the stream for complete.
func (c *kernelCmd) writeStream(e *env, cov *format.Covariance, rows func(lo, hi int) *format.TestRows, meta map[string]string, tests int, mem format.Allocator) error {
	cw := format.NewCovWriter(e.stdout, cov, tests, meta, c.BatchSize, mem)
	e.rep.startProgress(c.Progress && tests > 0, rowsProgress(tests, "test rows"))
	defer e.rep.stopProgress()
	for lo := 0; lo < tests; lo += c.BatchSize {
		if err := e.ctx.Err(); err != nil {
			return err
		}
		hi := min(lo+c.BatchSize, tests)
		if err := cw.WriteTest(rows(lo, hi)); err != nil {
			return err
		}
		e.rep.add(int64(hi - lo))
	}
	return cw.Close()
}

// writeCSV writes the stream's rows as CSV: role, id, y, var, then the N
// covariances; rows gives the tests test rows.
func (c *kernelCmd) writeCSV(w io.Writer, cov *format.Covariance, rows func(lo, hi int) *format.TestRows, tests int) error {
	n := cov.N
	cols := []format.Column{{Name: "role"}, {Name: "id"}, {Name: "y"}, {Name: "var"}}
	for j := range n {
		cols = append(cols, format.Column{Name: "cov_" + strconv.Itoa(j)})
	}
	tab := &format.Table{Cols: cols}
	add := func(role, id string, y, v float64, row []float64) {
		vals := []string{role, id, fmtFloat(y), fmtFloat(v)}
		for _, x := range row {
			vals = append(vals, fmtFloat(x))
		}
		for i := range tab.Cols {
			tab.Cols[i].Str = append(tab.Cols[i].Str, vals[i])
		}
	}
	for r := range n {
		id := strconv.Itoa(r)
		if cov.ID != nil {
			id = cov.ID[r]
		}
		add("train", id, cov.Y[r], math.NaN(), cov.Cov[r*n:r*n+n])
	}
	if tests > 0 {
		t := rows(0, tests)
		for r := range t.Len() {
			id, y := strconv.Itoa(r), math.NaN()
			if t.ID != nil {
				id = t.ID[r]
			}
			if t.Y != nil {
				y = t.Y[r]
			}
			add("test", id, y, t.Var[r], t.Cov[r*n:r*n+n])
		}
	}
	return format.WriteTable(w, tab, format.CSV, 0, nil)
}
