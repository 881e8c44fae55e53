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
// wrote it.
//
// The reader also takes a square matrix as N numeric columns (what a
// dataframe library writes; columns named lower, upper, mean, y and id are
// attributes, and the pandas index column is skipped), in an Arrow IPC
// stream or file, and CSV text with or without a header. The form is
// detected from the content: Arrow's magic bytes, else text.
//
// # Orthant result (gpc.orthant/1)
//
// One row: log_p, se_log_p, p, n, samples, groups, method, order, seed,
// min_ess, resamples (see gpc-orthant --help). Metadata: gpc:schema,
// gpc:tool, gpc:version, gpc:seed, gpc:jitter, gpc:order (the variable
// order used, as input indices), gpc:pilots (the pilot runs that chose it),
// and the input's gpc: keys.
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
