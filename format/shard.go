package format

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"math"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// Shard streams. A tool run with --shard I/K computes part of a run (a
// range of its particle groups) and writes a partial result; gpc-merge
// reads the K partial results and writes what the unsharded run writes,
// byte for byte. A shard stream's metadata is the unsharded output's,
// with gpc:schema the shard stream's own, plus these keys, which the merge
// drops (every key gpc:shard or gpc:shard_*).
const (
	SchemaOrthantShard = "gpc.orthant-shard/1"
	SchemaTuneShard    = "gpc.tune-shard/1"
	// SchemaPosteriorsShard is gpc-predict --shard's: the posteriors of a
	// range of the test rows.
	SchemaPosteriorsShard = "gpc.posteriors-shard/1"
	KeyShardBatch         = "gpc:shard_batch_size" // the unsharded output's rows per record batch

	KeyShard            = "gpc:shard"             // "I/K": this is shard I (from 0) of K
	KeyShardRange       = "gpc:shard_range"       // "lo-hi": the shard's particle groups, [lo, hi)
	KeyShardFingerprint = "gpc:shard_fingerprint" // ShardFingerprint of the run: equal in every shard of one run
	KeyShardOf          = "gpc:shard_of"          // the merged stream's gpc:schema
	KeyShardN           = "gpc:shard_n"           // the number of integration variables
	KeyShardSamples     = "gpc:shard_samples"     // the run's particles, all shards
	KeyShardGroups      = "gpc:shard_groups"      // the run's particle groups, all shards
	KeyShardOrder       = "gpc:shard_order"       // the order's name
	KeyShardSolve       = "gpc:shard_solve_iterations"
	KeyShardESS         = "gpc:shard_ess_threshold" // the resampling threshold as planned (a fraction of a group)
	KeyShardPath        = "gpc:shard_path"          // the compute path (exact, or openblas)
	KeyShardGrid        = "gpc:shard_grid"          // gpc-tune: the grid's axis sizes, the last axis fastest
	KeyShardTests       = "gpc:shard_tests"         // gpc-predict: every test row's RowDigest (all the shards read them all)
)

// IsShardKey reports whether a metadata key is one that a shard stream
// adds to the unsharded output's.
func IsShardKey(k string) bool {
	return k == KeyShard || strings.HasPrefix(k, KeyShard+"_")
}

// ShardFingerprint identifies a sharded run: the first 128 bits of the
// SHA-256 of parts (the input's digest, the flags that change the result,
// the seed, K, the compute path), in hex. The shards of one run have the
// same fingerprint; a shard of another input, seed or flags, or of another
// K, has another.
func ShardFingerprint(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(len(p)))
		h.Write(b[:])
		io.WriteString(h, p)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// Digest is the first 128 bits of the SHA-256 of the float64 slices vs
// (each with its length, so that nil and empty differ from a value), in
// hex: an input's identity for ShardFingerprint.
func Digest(vs ...[]float64) string {
	h := sha256.New()
	var b [8]byte
	for _, v := range vs {
		if v == nil {
			binary.LittleEndian.PutUint64(b[:], math.MaxUint64)
			h.Write(b[:])
			continue
		}
		binary.LittleEndian.PutUint64(b[:], uint64(len(v)))
		h.Write(b[:])
		for _, x := range v {
			binary.LittleEndian.PutUint64(b[:], math.Float64bits(x))
			h.Write(b[:])
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// RowDigest is the identity of a sequence of test rows, read in batches:
// the first 128 bits of the SHA-256 of each row's covariances, variance,
// label and id (each marked absent where the rows have none), in hex. The
// same rows give the same digest however they are batched.
type RowDigest struct {
	h    hash.Hash
	rows int
}

// NewRowDigest returns the digest of no rows.
func NewRowDigest() *RowDigest { return &RowDigest{h: sha256.New()} }

// Add adds the rows of t.
func (d *RowDigest) Add(t *TestRows) {
	n := t.Len()
	if n == 0 {
		return
	}
	width := len(t.Cov) / n
	var b [8]byte
	put := func(u uint64) {
		binary.LittleEndian.PutUint64(b[:], u)
		d.h.Write(b[:])
	}
	for i := range n {
		put(uint64(width))
		for _, x := range t.Cov[i*width : (i+1)*width] {
			put(math.Float64bits(x))
		}
		put(math.Float64bits(t.Var[i]))
		if t.Y != nil {
			put(1)
			put(math.Float64bits(t.Y[i]))
		} else {
			put(0)
		}
		if t.ID != nil {
			put(uint64(len(t.ID[i])) + 1)
			io.WriteString(d.h, t.ID[i])
		} else {
			put(0)
		}
	}
	d.rows += n
}

// Sum returns the digest of the rows added so far, with their count.
func (d *RowDigest) Sum() string {
	return fmt.Sprintf("%d:%s", d.rows, hex.EncodeToString(d.h.Sum(nil)[:16]))
}

// ReadTable reads a small gpc result stream (an Arrow IPC stream or file
// of float64, int64 and utf8 columns without nulls, such as WriteTable
// writes) whole. A stream without gpc:schema, or cut short (no
// end-of-stream marker, fewer rows than gpc:rows), is a *DataError.
func ReadTable(r io.Reader, name string, mem memory.Allocator) (t *Table, err error) {
	defer recoverArrow(name, &err)
	in, src, schema, err := openGPCStream(r, name, mem)
	if err != nil {
		return nil, err
	}
	defer src.release()
	meta := schema.Metadata().ToMap()
	t = &Table{Meta: meta, Cols: make([]Column, len(schema.Fields()))}
	for i, f := range schema.Fields() {
		c := &t.Cols[i]
		c.Name = f.Name
		switch f.Type.ID() {
		case arrow.FLOAT64:
			c.Float = []float64{}
		case arrow.INT64:
			c.Int = []int64{}
		case arrow.STRING:
			c.Str = []string{}
		default:
			return nil, dataErrorf(name, "column %q has type %s: not a gpc result table", f.Name, f.Type)
		}
	}
	for batch := 0; ; batch++ {
		rec, err := src.next()
		if err != nil {
			return nil, in.w.classify(name, err)
		}
		if rec == nil {
			break
		}
		for i := range t.Cols {
			col, c := rec.Column(i), &t.Cols[i]
			if col.NullN() > 0 {
				return nil, dataErrorf(fmt.Sprintf("%s: batch %d, column %q", name, batch, c.Name), "null values")
			}
			switch a := col.(type) {
			case *array.Float64:
				c.Float = append(c.Float, a.Float64Values()...)
			case *array.Int64:
				c.Int = append(c.Int, a.Int64Values()...)
			case *array.String:
				for j := range a.Len() {
					c.Str = append(c.Str, a.Value(j))
				}
			}
		}
	}
	if err := checkRows(meta, t.Rows()); err != nil {
		return nil, dataErrorf(name, "%v", err)
	}
	return t, nil
}

// Column returns the column called name, or nil.
func (t *Table) Column(name string) *Column {
	for i := range t.Cols {
		if t.Cols[i].Name == name {
			return &t.Cols[i]
		}
	}
	return nil
}

// openGPCStream opens r as an Arrow IPC stream or file of a gpc stream
// (its metadata has gpc:schema) and reads its schema; the caller releases
// the source.
func openGPCStream(r io.Reader, name string, mem memory.Allocator) (*input, recordSource, *arrow.Schema, error) {
	in, err := openInput(r, name)
	if err != nil {
		return nil, nil, nil, err
	}
	if in.kind != kindArrowStream && in.kind != kindArrowFile {
		return nil, nil, nil, dataErrorf(name, "not an Arrow IPC stream")
	}
	src, schema, err := in.arrowSource(mem)
	if err != nil {
		return nil, nil, nil, err
	}
	if _, ok := schema.Metadata().ToMap()[KeySchema]; !ok {
		src.release()
		return nil, nil, nil, dataErrorf(name, "no %s in the metadata: not a gpc stream", KeySchema)
	}
	return in, src, schema, nil
}

// StreamMeta reads the schema of the Arrow IPC stream or file r and
// returns its metadata (a gpc stream's: it must have gpc:schema).
func StreamMeta(r io.Reader, name string, mem memory.Allocator) (meta map[string]string, err error) {
	defer recoverArrow(name, &err)
	_, src, schema, err := openGPCStream(r, name, mem)
	if err != nil {
		return nil, err
	}
	src.release()
	meta = schema.Metadata().ToMap()
	return meta, nil
}
