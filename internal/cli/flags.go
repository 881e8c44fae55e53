package cli

// The flags that several tools take, each declared once, here, and
// embedded (kong's embed) by the tools that take it, so that a flag's
// name, help and checks are the same in every tool (TestSharedFlags checks
// the help). A tool's own flags, and what a shared flag means in that tool
// beyond its help, are in the tool's file and description.
//
//	commonFlags     every tool: --format --threads --quiet --progress --version (cli.go)
//	dataFlags       --train --label --positive --id --standardize: gpc-kernel, gpc-tune, gpc-mcmc
//	testFlags       --test: gpc-kernel, gpc-mcmc
//	batchFlags      --batch-size: gpc-kernel, gpc-train, gpc-predict
//	kernelFlags     --kernel: gpc-kernel, gpc-tune, gpc-mcmc
//	hyperFlags      --alpha --beta --bias as values: gpc-kernel, gpc-fit, gpc-mcmc (gpc-tune's are grids)
//	classFlags      --class-alpha --class-beta: gpc-kernel, gpc-fit
//	estimatorFlags  --samples --seed --method --order --groups --ess --jitter: gpc-orthant, gpc-train, gpc-tune, gpc-mcmc
//	seedFlags       --seed: in estimatorFlags, and gpc-predict
//	memoryFlags     --max-memory: gpc-orthant, gpc-train, gpc-predict
//	shardFlags      --shard --fingerprint: gpc-orthant, gpc-train, gpc-predict, gpc-tune
//
// A flag whose default differs between tools takes it from a kong
// variable set where the struct is embedded (estimatorFlags' --samples:
// `set:"samples=2000"`).

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/gpc-mc/gpc/core/fit"
	"github.com/gpc-mc/gpc/core/gp"
	"github.com/gpc-mc/gpc/format"
)

// dataFlags are the flags of the tools that read training features.
type dataFlags struct {
	Train       string `required:"" help:"Training features with labels: CSV, Parquet or Arrow IPC; - reads standard input."`
	Label       string `default:"y" help:"The label column: +1/-1, 1/0, two values one of which --positive names, or three or more classes (a multi-class classifier: gpc-kernel, gpc-train and gpc-predict)."`
	Positive    string `help:"The label value of the positive class (+1); needed when the labels are not +1/-1 or 1/0."`
	ID          string `help:"A column that identifies the rows (not a feature), passed through to the outputs as the test rows' id; the training file, the test file or both may have it (rows without it are numbered)."`
	Standardize bool   `help:"Center and scale each feature by its training mean and standard deviation (recorded in the output's metadata)."`
}

// validateData checks the data flags.
func (d *dataFlags) validateData() error {
	if d.Label == d.ID {
		return usagef("--label and --id name the same column %q", d.Label)
	}
	return nil
}

// testFlags is --test, the test features of the tools that predict.
type testFlags struct {
	Test string `help:"Test features (the training file's feature columns; labels optional); - reads standard input."`
}

// validateTest checks that the training and the test features do not
// both read standard input.
func (t *testFlags) validateTest(d *dataFlags) error {
	if d.Train == "-" && t.Test == "-" {
		return usagef("--train and --test cannot both read standard input")
	}
	return nil
}

// batchFlags is --batch-size, the rows per batch of the tools that
// stream rows.
type batchFlags struct {
	BatchSize int `default:"4096" help:"Rows per batch: per Arrow record batch written (gpc-kernel's: at most 32 MiB of covariance each, so fewer rows above N = 1024), and per batch of test rows predicted."`
}

func (b *batchFlags) validateBatch() error {
	if b.BatchSize < 1 {
		return usagef("--batch-size %d: must be at least 1", b.BatchSize)
	}
	return nil
}

// kernelFlags is --kernel.
type kernelFlags struct {
	Kernel string `enum:"rbf,linear,ard,matern32,matern52" default:"rbf" help:"Covariance function of the latent process: rbf, linear, ard, matern32 or matern52 (gpc-kernel --help gives their formulas)."`
}

// kind returns the kernel's kind.
func (k *kernelFlags) kind() gp.KernelKind {
	kind, _ := gp.ParseKernel(k.Kernel)
	return kind
}

// hyperFlags are the kernel's hyperparameters as values (gpc-kernel's
// kernel, gpc-fit's and gpc-mcmc's starting point); those not given are
// the data's start (startKernel, fit.DataScale.Start).
type hyperFlags struct {
	Alpha []float64 `sep:"," help:"Length scale alpha (ard: one per feature, comma-separated, in the training file's column order, or one for every feature; linear: none). Default: the median distance between two training points (every feature's, for ard)."`
	Beta  *float64  `help:"Latent scale beta: the prior variance of the latent function. Default: 1, the probit noise's variance (linear: 1 / the mean of x'x over the training points), so that each training point's prior class probability is uniform on (0, 1)."`
	Bias  float64   `default:"0" help:"A constant added to the kernel: the prior variance of a bias term (0: none)."`
}

// checkHyper checks the hyperparameters given for a kernel of kind
// before the features are read: each a finite number, a length scale
// above 0 and none for the linear kernel.
func (h *hyperFlags) checkHyper(kind gp.KernelKind) error {
	k := gp.Kernel{Kind: kind, Alpha: h.Alpha, Beta: 1, Bias: h.Bias}
	if h.Beta != nil {
		k.Beta = *h.Beta
	}
	if kind != gp.KernelLinear && k.Alpha == nil {
		k.Alpha = []float64{1}
	}
	if kind == gp.KernelARD && len(k.Alpha) > 0 {
		for _, a := range k.Alpha {
			if err := (&gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{a}, Beta: k.Beta, Bias: k.Bias}).Validate(1); err != nil {
				return usagef("%v", err)
			}
		}
		return nil
	}
	if err := k.Validate(len(k.Alpha)); err != nil {
		return usagef("%v", err)
	}
	return nil
}

// kernel returns the kernel of kind with these hyperparameters for the
// features of train (names, rows of d), those not given taken from the
// data's scale (fit.DataScale.Start: sc must not be nil then); a single
// --alpha of the ard kernel is every feature's. start describes the
// starting point for metadata and messages: each hyperparameter, and where
// each default came from.
func (h *hyperFlags) kernel(kind gp.KernelKind, names []string, sc *fit.DataScale) (k *gp.Kernel, start string, err error) {
	d := len(names)
	if err := h.checkHyper(kind); err != nil {
		return nil, "", err
	}
	var data gp.Kernel
	if sc != nil {
		data = sc.Start(kind, d)
	}
	k = &gp.Kernel{Kind: kind, Alpha: slices.Clone(h.Alpha), Bias: h.Bias}
	var from []string
	switch {
	case kind == gp.KernelLinear:
	case h.Alpha == nil:
		k.Alpha = data.Alpha
		from = append(from, fmt.Sprintf("alpha %.6g, the median distance between two training points", sc.Median))
	case kind == gp.KernelARD && len(h.Alpha) == 1 && d > 1:
		k.Alpha = make([]float64, d)
		for j := range k.Alpha {
			k.Alpha[j] = h.Alpha[0]
		}
	}
	if h.Beta != nil {
		k.Beta = *h.Beta
	} else {
		k.Beta = data.Beta
		if kind == gp.KernelLinear {
			from = append(from, fmt.Sprintf("beta %.6g, 1 / the mean of x'x", k.Beta))
		} else {
			from = append(from, "beta 1, the probit noise's variance")
		}
	}
	if err := k.Validate(d); err != nil {
		return nil, "", usagef("%v (the training file has %d features: %s)", err, d, strings.Join(names, ", "))
	}
	start = describeKernel(k, names)
	if from != nil {
		start += " (the data's start: " + strings.Join(from, "; ") + ")"
	}
	return k, start, nil
}

// given reports whether any of alpha and beta was given.
func (h *hyperFlags) given() bool { return h.Alpha != nil || h.Beta != nil }

// describeKernel writes a kernel's hyperparameters as name=value pairs:
// alpha (ard: alpha_<feature> each, or one alpha when they are equal),
// beta, and the bias if there is one.
func describeKernel(k *gp.Kernel, names []string) string {
	var parts []string
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	switch {
	case k.Kind == gp.KernelARD && slices.Min(k.Alpha) != slices.Max(k.Alpha):
		for j, a := range k.Alpha {
			parts = append(parts, "alpha_"+names[j]+"="+num(a))
		}
	case len(k.Alpha) > 0:
		parts = append(parts, "alpha="+num(k.Alpha[0]))
	}
	parts = append(parts, "beta="+num(k.Beta))
	if k.Bias > 0 {
		parts = append(parts, "bias="+num(k.Bias))
	}
	return strings.Join(parts, " ")
}

// classFlags are a multi-class kernel per class: gpc-kernel's kernels,
// gpc-fit's start.
type classFlags struct {
	ClassAlpha []float64 `sep:"," help:"Multi-class: one length scale alpha per class, in class order (sorted, as gpc:classes lists them), instead of --alpha: a kernel per class (not for ard or linear)."`
	ClassBeta  []float64 `sep:"," help:"Multi-class: one latent scale beta per class, in class order, instead of --beta: a kernel per class."`
}

// perClass reports whether a kernel per class was asked for.
func (c *classFlags) perClass() bool { return c.ClassAlpha != nil || c.ClassBeta != nil }

// classKernels returns the kernel of each class: k for all, or k with
// --class-alpha's and --class-beta's values, one per class (recorded in
// meta, if not nil, as gpc:class_alpha and gpc:class_beta). With per set
// and neither flag, every class gets a copy of k.
func (c *classFlags) classKernels(k *gp.Kernel, classes []string, d int, per bool, meta map[string]string) ([]*gp.Kernel, error) {
	nc := len(classes)
	if !c.perClass() && !per {
		return []*gp.Kernel{k}, nil
	}
	for _, f := range []struct {
		name string
		v    []float64
	}{{"--class-alpha", c.ClassAlpha}, {"--class-beta", c.ClassBeta}} {
		if f.v != nil && len(f.v) != nc {
			return nil, usagef("%s has %d values for the %d classes %s", f.name, len(f.v), nc, quoteList(classes, 6))
		}
	}
	if c.ClassAlpha != nil && (k.Kind == gp.KernelARD || k.Kind == gp.KernelLinear) {
		return nil, usagef("--class-alpha: the %v kernel has no single length scale per class", k.Kind)
	}
	ks := make([]*gp.Kernel, nc)
	for cl := range nc {
		kc := *k
		kc.Alpha = slices.Clone(k.Alpha)
		if c.ClassAlpha != nil {
			kc.Alpha = []float64{c.ClassAlpha[cl]}
		}
		if c.ClassBeta != nil {
			kc.Beta = c.ClassBeta[cl]
		}
		if err := kc.Validate(d); err != nil {
			return nil, usagef("class %q: %v", classes[cl], err)
		}
		ks[cl] = &kc
	}
	if meta != nil && c.ClassAlpha != nil {
		meta["gpc:class_alpha"] = format.JoinFloats(c.ClassAlpha)
	}
	if meta != nil && c.ClassBeta != nil {
		meta["gpc:class_beta"] = format.JoinFloats(c.ClassBeta)
	}
	return ks, nil
}

// seedFlags is --seed.
type seedFlags struct {
	Seed int64 `default:"1" help:"Random seed. The same input, flags and seed give byte-identical output."`
}

func (s *seedFlags) validateSeed() error {
	if s.Seed < 0 {
		return usagef("--seed %d: must be 0 or more", s.Seed)
	}
	return nil
}

// memoryFlags is --max-memory, the memory the particles may take.
type memoryFlags struct {
	// MaxMemory bounds the particles' memory (core.Config.MaxMemory).
	MaxMemory byteSize `name:"max-memory" default:"0" help:"Most memory the particles may take, e.g. 8GB or 512MiB (0: half the available memory; never more than what is left after factorising). Besides the particles, N variables hold about 3 N x N float64 matrices (24 N^2 bytes: the covariance, R's factor and EP's). Groups that do not fit run fewer at a time, or are split into more, smaller groups (independent, combined exactly: the estimate agrees within its standard error). Neither gpc-train nor gpc-predict holds a cloud, unless gpc-predict's test rows come after the particles: it then holds the cloud within this limit. A run that does not fit is refused (exit 80)."`
}

// shardFlags is --shard, the part of a run a tool computes: gpc-orthant,
// gpc-train, gpc-predict, gpc-tune.
type shardFlags struct {
	Shard       string `placeholder:"I/K" help:"Compute only shard I of K (I from 0 to K-1): a range of the particle groups (gpc-predict: of the test rows; gpc-tune: of the grid points), written as a partial result that gpc-merge combines with the other shards into exactly the unsharded output, byte for byte; slurm takes I and K from a Slurm job array (SLURM_ARRAY_TASK_ID minus SLURM_ARRAY_TASK_MIN, and SLURM_ARRAY_TASK_COUNT). See docs/scale-out.md."`
	Fingerprint bool   `help:"With --shard: print the fingerprint that the run's shards carry (gpc:shard_fingerprint: a hash of the input, the flags, the seed, K and the compute path) as one line, and exit without computing them. A driver compares it with the shards a failed run left (gpc-merge --check) to reuse those of this run (examples/slurm/run.sh). It reads the input and prepares as the shard would (quick with --plan; gpc-predict reads the whole cloud)."`
}

// shard returns --shard's I and K, or K = 0 without --shard; slurm reads
// them from the job array's environment.
func (s *shardFlags) shard() (i, k int, err error) {
	if s.Shard == "" {
		if s.Fingerprint {
			return 0, 0, usagef("--fingerprint prints the fingerprint of a sharded run's shards: give --shard I/K (K matters)")
		}
		return 0, 0, nil
	}
	if s.Shard == "slurm" {
		return slurmShard(os.Getenv)
	}
	is, ks, ok := strings.Cut(s.Shard, "/")
	i, err1 := strconv.Atoi(is)
	k, err2 := strconv.Atoi(ks)
	if !ok || err1 != nil || err2 != nil {
		return 0, 0, usagef("--shard %q: must be I/K (shard I of K, I from 0) or slurm", s.Shard)
	}
	if k < 1 || i < 0 || i >= k {
		return 0, 0, usagef("--shard %s: I must be from 0 to K-1, and K at least 1", s.Shard)
	}
	return i, k, nil
}

// slurmShard is --shard slurm: the task's index in its job array (from 0,
// whatever --array's first index) and the array's size.
func slurmShard(getenv func(string) string) (i, k int, err error) {
	num := func(name string) (int, error) {
		v := getenv(name)
		n, err := strconv.Atoi(v)
		if err != nil {
			if v == "" {
				return 0, usagef("--shard slurm: %s is not set: run the tool in a Slurm job array (sbatch --array)", name)
			}
			return 0, usagef("--shard slurm: %s=%q is not a number", name, v)
		}
		return n, nil
	}
	id, err := num("SLURM_ARRAY_TASK_ID")
	if err != nil {
		return 0, 0, err
	}
	lo, err := num("SLURM_ARRAY_TASK_MIN")
	if err != nil {
		return 0, 0, err
	}
	k, err = num("SLURM_ARRAY_TASK_COUNT")
	if err != nil {
		return 0, 0, err
	}
	hi, err := num("SLURM_ARRAY_TASK_MAX")
	if err != nil {
		return 0, 0, err
	}
	if hi-lo+1 != k {
		return 0, 0, usagef("--shard slurm: the array's indices %d-%d are not %d consecutive tasks (submit --array=0-%d, no step)", lo, hi, k, k-1)
	}
	if k < 1 || id < lo || id > hi {
		return 0, 0, usagef("--shard slurm: SLURM_ARRAY_TASK_ID=%d is not in the array %d-%d", id, lo, hi)
	}
	return id - lo, k, nil
}
