package format

import (
	"bufio"
	"io"
	"maps"
	"math"
	"strconv"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// CovarianceSchema returns the schema of a covariance stream with n train
// variables: `cov` as a non-nullable FixedSizeList<float64>[n], then the
// optional float64 columns lower, upper, mean and y and the string column id
// when the flags ask for them, and var (float64, null on train rows) and
// role (string) when there are test rows. meta is merged into the schema
// metadata after gpc:schema and gpc:n.
func CovarianceSchema(n int, lower, upper, mean, y, id, test bool, meta map[string]string) *arrow.Schema {
	item := arrow.Field{Name: "item", Type: arrow.PrimitiveTypes.Float64}
	fields := []arrow.Field{{Name: ColCov, Type: arrow.FixedSizeListOfField(int32(n), item)}}
	for _, c := range []struct {
		name string
		on   bool
	}{{ColLower, lower}, {ColUpper, upper}, {ColMean, mean}, {ColY, y}} {
		if c.on {
			// y is null on test rows whose label is unknown.
			fields = append(fields, arrow.Field{Name: c.name, Type: arrow.PrimitiveTypes.Float64, Nullable: c.name == ColY})
		}
	}
	if id {
		fields = append(fields, arrow.Field{Name: ColID, Type: arrow.BinaryTypes.String})
	}
	if test {
		fields = append(fields,
			arrow.Field{Name: ColVar, Type: arrow.PrimitiveTypes.Float64, Nullable: true},
			arrow.Field{Name: ColRole, Type: arrow.BinaryTypes.String})
	}
	m := map[string]string{KeySchema: SchemaCovariance, KeyN: strconv.Itoa(n)}
	maps.Copy(m, meta)
	md := arrow.MetadataFrom(m)
	return arrow.NewSchema(fields, &md)
}

// WriteCovariance writes c as a covariance stream, batchRows rows per record
// batch, with meta (and gpc:rows) in the schema metadata.
func WriteCovariance(w io.Writer, c *Covariance, meta map[string]string, batchRows int, mem memory.Allocator) error {
	n, nt := c.N, c.Test.Len()
	m := maps.Clone(meta)
	if m == nil {
		m = map[string]string{}
	}
	m[KeyRows] = strconv.Itoa(n + nt)
	schema := CovarianceSchema(n, c.Lower != nil, c.Upper != nil, c.Mean != nil, c.Y != nil, c.ID != nil, nt > 0, m)
	bw := bufio.NewWriter(w)
	iw := ipc.NewWriter(bw, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	rb := array.NewRecordBuilder(mem, schema)
	defer rb.Release()
	if batchRows < 1 {
		batchRows = 4096
	}
	flush := func() error {
		rec := rb.NewRecord()
		defer rec.Release()
		return iw.Write(rec)
	}
	inBatch := 0
	for r := range n + nt {
		train := r < n
		col := 0
		lb := rb.Field(col).(*array.FixedSizeListBuilder)
		lb.Append(true)
		if train {
			lb.ValueBuilder().(*array.Float64Builder).AppendValues(c.Cov[r*n:r*n+n], nil)
		} else {
			t := r - n
			lb.ValueBuilder().(*array.Float64Builder).AppendValues(c.Test.Cov[t*n:t*n+n], nil)
		}
		col++
		for _, a := range []struct {
			train, test []float64
			def         float64 // a test row's value when it has none
		}{{c.Lower, nil, 0}, {c.Upper, nil, math.Inf(1)}, {c.Mean, nil, 0}, {c.Y, c.Test.Y, math.NaN()}} {
			if a.train == nil {
				continue
			}
			fb := rb.Field(col).(*array.Float64Builder)
			switch {
			case train:
				fb.Append(a.train[r])
			case a.test != nil:
				fb.Append(a.test[r-n])
			case math.IsNaN(a.def):
				fb.AppendNull()
			default:
				fb.Append(a.def)
			}
			col++
		}
		if c.ID != nil {
			sb := rb.Field(col).(*array.StringBuilder)
			switch {
			case train:
				sb.Append(c.ID[r])
			case len(c.Test.ID) == nt:
				sb.Append(c.Test.ID[r-n])
			default:
				sb.Append("")
			}
			col++
		}
		if nt > 0 {
			vb := rb.Field(col).(*array.Float64Builder)
			rl := rb.Field(col + 1).(*array.StringBuilder)
			if train {
				vb.AppendNull()
				rl.Append("train")
			} else {
				vb.Append(c.Test.Var[r-n])
				rl.Append("test")
			}
		}
		inBatch++
		if inBatch == batchRows {
			if err := flush(); err != nil {
				return &IOError{Op: "write covariance", Err: err}
			}
			inBatch = 0
		}
	}
	if inBatch > 0 {
		if err := flush(); err != nil {
			return &IOError{Op: "write covariance", Err: err}
		}
	}
	if err := iw.Close(); err != nil {
		return &IOError{Op: "write covariance", Err: err}
	}
	if err := bw.Flush(); err != nil {
		return &IOError{Op: "write covariance", Err: err}
	}
	return nil
}
