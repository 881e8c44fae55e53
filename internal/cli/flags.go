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
//	hyperFlags      --alpha --beta --bias as values: gpc-kernel, gpc-mcmc (gpc-tune's are grids)
//	estimatorFlags  --samples --seed --method --order --groups --ess --jitter: gpc-orthant, gpc-train, gpc-tune, gpc-mcmc
//	seedFlags       --seed: in estimatorFlags, and gpc-predict
//	memoryFlags     --max-memory: gpc-orthant, gpc-train, gpc-predict
//	shardFlags      --shard --fingerprint: gpc-orthant, gpc-train, gpc-predict, gpc-tune
//
// A flag whose default differs between tools takes it from a kong
// variable set where the struct is embedded (estimatorFlags' --samples:
// `set:"samples=2000"`).

import (
	"os"
	"strconv"
	"strings"

	"gpc/core/gp"
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
// kernel, gpc-mcmc's starting point).
type hyperFlags struct {
	Alpha []float64 `default:"1" sep:"," help:"Length scale alpha (ard: one per feature, comma-separated, in the training file's column order; linear: none)."`
	Beta  float64   `default:"1" help:"Latent scale beta: the prior variance of the latent function."`
	Bias  float64   `default:"0" help:"A constant added to the kernel: the prior variance of a bias term (0: none)."`
}

// kernel returns the kernel of kind with these hyperparameters, checked
// for d features (d < 0: the features are not known yet, so that ard's
// count is not checked). The linear kernel has no length scale: the
// default --alpha is dropped for it.
func (h *hyperFlags) kernel(kind gp.KernelKind, d int) (*gp.Kernel, error) {
	if kind == gp.KernelLinear && len(h.Alpha) == 1 && h.Alpha[0] == 1 {
		h.Alpha = nil
	}
	k := &gp.Kernel{Kind: kind, Alpha: h.Alpha, Beta: h.Beta, Bias: h.Bias}
	check := d
	if d < 0 {
		check = len(h.Alpha)
	}
	if err := k.Validate(check); err != nil {
		return nil, usagef("%v", err)
	}
	return k, nil
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
