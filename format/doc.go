// Package format is the only package of gpc that imports Apache Arrow. It
// defines the streams the tools exchange, reads them (and the CSV and
// dataframe forms users have), and writes them.
//
// # Covariance stream (gpc.covariance/1)
//
// One row per Gaussian variable. The first N rows are the train block, the
// variables integrated over; rows after it are test rows (from gpc-kernel).
//
//	cov    FixedSizeList<float64>[N], not null: the row's covariance with
//	       the N train variables (a List<float64> of length N is accepted)
//	lower  float64, optional: the variable's lower bound (default 0)
//	upper  float64, optional: its upper bound (default +Inf)
//	mean   float64, optional: its mean (default 0)
//	var    float64: a test row's own variance (null on train rows)
//	y      float64, optional: the row's label (+1 or -1)
//	id     utf8 (or an integer), optional: passed through to every output
//	role   utf8, optional: "train" or "test"
//
// Metadata: gpc:schema = gpc.covariance/1, gpc:n = N, gpc:rows = the number
// of rows (checked at the end, so a stream cut at a batch boundary is
// caught), and gpc:tool, gpc:version and the kernel's keys when a gpc tool
// wrote it. gpc-kernel's record batches hold --batch-size rows, fewer where
// that would be more than 32 MiB of matrix entries (CovBatchRows): 419 rows
// at N = 10^4.
//
// A multi-class stream (gpc-kernel with three or more classes) has
// gpc:classes, the class names as a JSON array (KeyClasses), and
// gpc:train_points: its train rows are the class differences of the
// multinomial probit model, C - 1 per training point, and its test rows
// come C to a test point (KeyClasses says how); gpc:class_alpha and
// gpc:class_beta record per-class hyperparameters when they were given.
// The cloud and the posteriors made from it carry these keys on.
//
// The reader also takes a square matrix as N numeric columns (what a
// dataframe library writes; columns named lower, upper, mean, y and id are
// attributes, and the pandas index column is skipped), in an Arrow IPC
// stream or file, and CSV text with or without a header. The form is
// detected from the content: Arrow's magic bytes, else text.
//
// # Cloud stream (gpc.cloud/3)
//
// gpc-train's output: what gpc-predict needs, self-contained, written as
// the estimate runs (never held whole). Columns:
//
//	kind   utf8: "train", "factor", "test", "particle" or "group"
//	cov    List<float64>: a train or test row's covariance with the N
//	       train variables; factor row k's k + 1 entries of row k of the
//	       factor L (empty on other rows)
//	z      List<float64>: a particle's N draws, in the order gpc:order;
//	       factor row k's k + 1 entries of row k of R's Cholesky factor
//	       (input order; EP's factor only) (empty on other rows)
//	log_w  float64: a particle's log weight, normalized in its group
//	group  int32: a particle's or group row's group
//	var    float64: a test row's variance
//	y, id  the row's label and id, as in the covariance stream
//	log_p  float64: a group row's estimate of log P from its group
//
// Rows: the N train rows; the N factor rows, when gpc:factor is present;
// the test rows, when gpc:tests_first is present
// (it counts them); then group by group (gpc:group_sizes) the group's
// particles and its group row; then the test rows, when gpc:tests_first is
// absent. gpc-train writes each group as soon as it and the groups before
// it are estimated, so the stream's size does not bound the memory of
// either tool; it puts the test rows first when they take at most a
// quarter of the cloud's memory (or 1 MiB), so that gpc-predict predicts
// them as the particles stream past, holding a few record batches instead
// of the cloud. The estimate of log P (the log marginal likelihood) and
// its standard error are those of the group rows' estimates
// (core.CombineGroups): gpc-predict's output metadata and gpc-train
// --format table give them (gpc:log_ml, gpc:se_log_ml). Metadata: gpc:n,
// gpc:samples, gpc:groups, gpc:group_sizes, gpc:method, gpc:order,
// gpc:seed, gpc:fingerprint (of the train block), gpc:lower, gpc:upper and
// gpc:mean when the box is not the orthant, gpc:rows, and the input's
// kernel and label keys. The factor rows and gpc:factor (its scalars, as
// a plan's gpc:plan_factor), gpc:factor_a, gpc:factor_b, and
// gpc:factor_mu (a tilted factor) or gpc:factor_tau, gpc:factor_kappa and
// gpc:factor_m (EP's; each N values in the factor's order) hold the
// factor the particles were drawn with (core.FactorParts), so that
// gpc-predict predicts from it instead of preparing it again (O(N^3):
// EP's sweeps and the factorisations). gpc.cloud/2 streams (no factor
// rows: gpc-predict prepares the factor again from the train block and
// gpc:order) and gpc.cloud/1 streams (no log_p column nor group
// rows: gpc:group_log_p, gpc:log_ml and gpc:se_log_ml in the metadata; the
// test rows after the particles) are still read.
//
// # Vecchia model (gpc.vecchia/1)
//
// gpc-kernel --vecchia m's output instead of the covariance: a probit
// classifier's Vecchia model (core/vecchia.Model, docs/vecchia.md), O(N m)
// values. One row per variable: the N training rows in the model's order
// (maxmin by default), then the test rows.
//
//	role      utf8: "train" or "test"
//	row       int64: the row's index in its input file (training or test)
//	nbr       List<int32>: the conditioning set, positions of training rows
//	          (earlier ones, for a training row), increasing
//	coef      List<float64>: the conditioning coefficients B (x = B x_nbr + ...)
//	cond_var  float64: the latent value's conditional variance D; 0 for a
//	          repeated point (one neighbour, the point it repeats, coefficient 1)
//	lower, upper  float64: a training row's bounds on w = x + noise (0 and
//	          +Inf for a label +1, -Inf and 0 for -1); a test row's 0 and +Inf
//	y         float64, nullable: the label
//	id        utf8, optional: passed through to gpc-predict's output
//
// Metadata: gpc:n (training rows), gpc:tests, gpc:rows, gpc:noise (the
// noise's variance, 1 less the nugget), gpc:vecchia_m, gpc:vecchia_order,
// gpc:vecchia_nugget, gpc:vecchia_repeats, gpc:fingerprint (of the
// training rows' model: VecchiaFingerprint), and the kernel's keys. The
// reader checks the model whole (vecchia.Model.Validate).
//
// # Vecchia cloud (gpc.vecchia-cloud/1)
//
// gpc-train's output on a Vecchia model. Its particles are not all kept (a
// particle is a value per training point): each group predicts the test
// rows at its end. With gpc:kept_paths (gpc-train --keep: each group's
// count K_g) it also keeps paths for later prediction: a column x
// (List<float32>), and after each group's row a weights row (kind
// "weights": p, the K_g weights) and path rows (kind "path": row, the
// first variable's position; x, the K_g paths' values of consecutive
// variables, 4 MiB a row). Rows: the test rows (kind "test": row, id, y), then one
// row per group as the groups finish, in order (kind "group": group,
// log_p, min_ess, resamples, ancestors, dead_at as core.GroupResult, and p,
// List<float64>: the group's weighted posterior of every test row).
// gpc-predict combines the groups (core.CombinePosteriors). Metadata:
// gpc:n, gpc:tests, gpc:samples, gpc:groups, gpc:group_sizes, gpc:method
// (vecchia), gpc:order_kind, gpc:seed, gpc:ess_threshold, gpc:fingerprint,
// gpc:ep and gpc:vecchia_prepare (the preparation), gpc:rows, and the
// model's keys. gpc-train --shard writes gpc.vecchia-cloud-shard/1: the
// test rows and its range of groups, with the shard keys and
// gpc:shard_batch_size, which gpc-merge re-encodes into the unsharded
// cloud, byte for byte.
//
// # Orthant result (gpc.orthant/1)
//
// One row: log_p, se_log_p, p, n, samples, groups, method, order, seed,
// min_ess, resamples (see gpc-orthant --help). Metadata: gpc:schema,
// gpc:tool, gpc:version, gpc:seed, gpc:jitter, gpc:order (the variable
// order used, as input indices), gpc:pilots (the pilot runs that chose it),
// and the input's gpc: keys.
//
// # Shards (gpc.orthant-shard/1, gpc.cloud-shard/1, gpc.tune-shard/1, gpc.posteriors-shard/1, gpc.vecchia-cloud-shard/1)
//
// What gpc-orthant --shard I/K and gpc-train --shard I/K write: a range
// [lo, hi) of the run's particle groups, for gpc-merge. The metadata is
// the unsharded output's, with gpc:schema the shard's and gpc:shard_of the
// unsharded schema, plus gpc:shard ("I/K"), gpc:shard_range ("lo-hi"),
// gpc:shard_fingerprint (ShardFingerprint: input, flags, seed, K, compute
// path), gpc:shard_path and the tool's own gpc:shard_* keys; gpc-merge
// drops every gpc:shard* key. gpc.orthant-shard/1 has one row per group:
// group, log_z, min_ess, resamples, ancestors, dead_at (core.GroupResult).
// gpc.cloud-shard/1 is a cloud stream holding the train and test rows and
// its groups' particles and group rows, in the unsharded cloud's record
// batches (cloudshard.go); gpc:rows counts its own rows and
// gpc:shard_rows_of the unsharded cloud's. gpc.tune-shard/1 is the tuning
// table's grid rows of its range of grid points, plus group_log_p (each
// point's group estimates, comma-separated), and gpc:shard_grid (the axes'
// sizes). gpc.posteriors-shard/1 is the posteriors of a range of the test
// rows, with gpc:shard_rows_of (all the test rows) and
// gpc:shard_batch_size (the unsharded output's rows per record batch),
// and gpc:shard_tests, the RowDigest of every test row, which its
// fingerprint covers (so the shard holds its rows until it has read them
// all).
//
// # Tuning table (gpc.tune/1)
//
// gpc-tune's output, one row per estimate of the log marginal likelihood
// (TuneTable): stage (grid, exploit, optimum), point (the grid point, last
// axis fastest; -1 for the optimum), one float64 column per hyperparameter
// (alpha or alpha_<feature> for ard, beta, bias when given), log_ml,
// se_log_ml, se_diff_<axis> (the standard error of the difference to the
// next grid point along the axis, with common random numbers), samples,
// mc_se_log_<axis> and width_log_<axis> (the optimum's Monte Carlo standard
// error and the likelihood's width, in the log of the hyperparameter).
// Metadata: gpc:method, gpc:order and gpc:order_kind (fixed for every
// estimate, chosen at gpc:reference), gpc:seed, gpc:samples,
// gpc:exploit_samples, gpc:optimizer_estimates, gpc:pilots, the kernel and
// the features' labels and standardization.
//
// # Fitted hyperparameters (gpc.hyper/1)
//
// gpc-fit's output, one row per hyperparameter (HyperTable): kernel, name
// (alpha, beta, bias), feature (the ard kernel's feature of an alpha),
// value, log_ml and se_log_ml (the fit's, on every row), grad and se_grad
// (d log_ml / d log value there, plus the prior's for a MAP fit),
// mc_se_log (the optimum's Monte Carlo error, NaN unless --hessian),
// ep_value and ep_log_z (EP's optimum), standardize (1 or 0), log_prior
// (the prior's log density at the fit, 0 without one), class (the class
// whose kernel the row is, for a multi-class fit with a kernel per class;
// empty otherwise) and bound (lower or upper where the fit stopped the
// hyperparameter on the edge of its box: it ran off). gpc-kernel --hyper
// reads it (ReadHyper) as Arrow or as CSV: only kernel, name and value are
// required, so a table written by hand serves. Metadata: gpc:seed,
// gpc:method, gpc:order, gpc:samples, gpc:final_samples, gpc:start (the
// starting point, and where a default came from), gpc:prior_sd,
// gpc:bounds (the box), gpc:ran_off, gpc:restarts (each start and its
// optimum, with --restarts), gpc:exact_gain, gpc:grad_norm,
// gpc:noise_norm, gpc:estimates, gpc:iterations, gpc:classes (three or
// more classes), the features and their standardization.
//
// # MCMC samples (gpc.mcmc/1)
//
// gpc-mcmc's output, one row per kept iteration: iteration (from 0 after
// the burn-in), one float64 column per hyperparameter, log_ml and
// se_log_ml (the estimate the chain holds), accepted (1 if the iteration's
// proposal was accepted). Metadata: gpc:acceptance, gpc:var_log_ml (the
// mean variance of the log marginal likelihood estimates after burn-in),
// gpc:var_log_ratio (the variance of the random numbers' noise in the
// acceptance ratio's log difference), gpc:prior, gpc:refresh, gpc:samples,
// gpc:groups, gpc:burn, gpc:thin, gpc:proposal_step, gpc:proposal_shape,
// gpc:method, gpc:order, gpc:seed.
//
// # Posteriors (gpc.posteriors/1)
//
// gpc-predict's output and gpc-mcmc's --posteriors file: id, p, se, label,
// y; from a multi-class cloud (gpc:classes), id, p_<class> for each class,
// se_<class> for each class, label (the most probable class), y; gpc-mcmc adds sd_hyper, the posteriors' spread over the hyperparameter
// samples, and gpc:states, how many it averaged.
//
// # Streams that do not lie
//
// A stream cut at a batch boundary is a valid Arrow stream: Arrow's reader
// takes the end of the input for the end of the stream. So every writer
// here ends its stream with Arrow's end-of-stream marker on success, and
// only then (a failed or interrupted tool leaves its output without it),
// and every reader here refuses a stream whose schema has gpc:schema but
// that ends without the marker. Where the row count is known when the
// schema is written, gpc:rows carries it, and the readers (and Dump) check
// it at the end: the covariance (gpc-kernel), the cloud (gpc-train, when
// its input had gpc:rows: train rows, particles and test rows), the orthant
// result and the summaries (WriteTable), and the posteriors (gpc-predict,
// when the cloud had gpc:rows).
//
// # Robustness
//
// Arrow's v17 IPC reader trusts the lengths inside a message, so a few
// corrupt bytes can make it allocate without bound. Every Arrow input passes
// through a guard first (guard.go) that checks each message's metadata
// against the bytes that actually arrived. Parquet is read column by column
// in the caller's goroutine (so that a panic of the decoder on corrupt data
// is recovered, which pqarrow's own goroutines would not allow), after its
// claimed row count is checked against the memory the caller allows
// (ReadFrameLimit). Errors are *DataError (exit 65)
// naming the input, batch, row and column, or *IOError (exit 74) when the
// reader itself failed.
package format
