package format

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// ReadAnyTable reads the whole Arrow IPC stream in r, any schema, as a Table
// for people (gpc-show): float64 columns as numbers (nulls as NaN), int64
// columns without nulls as integers, every other column as text (strings
// unquoted, lists in brackets, nulls empty), and the schema's metadata. A
// stream that was cut short is an error, as for Dump. name names the input
// in messages.
func ReadAnyTable(r io.Reader, name string) (t *Table, err error) {
	defer func() {
		if p := recover(); p != nil {
			t, err = nil, &DataError{Where: name, Err: fmt.Errorf("malformed Arrow data (%v)", p)}
		}
	}()
	sr, w, g, err := openAnyStream(r, name)
	if err != nil {
		return nil, err
	}
	defer sr.Release()
	s := sr.Schema()
	t = &Table{Meta: s.Metadata().ToMap(), Cols: make([]Column, len(s.Fields()))}
	kind := make([]arrow.Type, len(s.Fields()))
	for i, f := range s.Fields() {
		t.Cols[i].Name = f.Name
		kind[i] = f.Type.ID()
		switch {
		case kind[i] == arrow.FLOAT64:
			t.Cols[i].Float = []float64{}
		case kind[i] == arrow.INT64 && !f.Nullable:
			t.Cols[i].Int = []int64{}
		default:
			t.Cols[i].Str = []string{}
		}
	}
	for sr.Next() {
		rec := sr.Record()
		for c := range t.Cols {
			col := &t.Cols[c]
			a := rec.Column(c)
			for i := range a.Len() {
				switch {
				case col.Float != nil:
					v := math.NaN()
					if !a.IsNull(i) {
						v = a.(*array.Float64).Value(i)
					}
					col.Float = append(col.Float, v)
				case col.Int != nil:
					col.Int = append(col.Int, a.(*array.Int64).Value(i))
				default:
					col.Str = append(col.Str, showText(a, i))
				}
			}
		}
	}
	if err := sr.Err(); err != nil {
		return nil, w.classify(name, err)
	}
	if err := g.checkEnd(t.Meta); err != nil {
		return nil, &DataError{Where: name, Err: err}
	}
	if err := checkRows(t.Meta, t.Rows()); err != nil {
		return nil, &DataError{Where: name, Err: err}
	}
	return t, nil
}

// openAnyStream opens the Arrow IPC stream in r, any schema, behind the
// guard that tells a cut stream from a whole one; w classifies the
// reader's errors.
func openAnyStream(r io.Reader, name string) (sr *ipc.Reader, w *ioWatch, g *ipcGuard, err error) {
	w = &ioWatch{r: r}
	br := bufio.NewReaderSize(w, 64<<10)
	head, _ := br.Peek(8)
	switch {
	case len(head) == 0:
		if w.err != nil {
			return nil, nil, nil, &IOError{Op: "read " + name, Err: w.err}
		}
		return nil, nil, nil, &DataError{Where: name, Err: ErrEmptyInput}
	case !strings.HasPrefix(string(head), string(arrowStreamMagic)):
		return nil, nil, nil, dataErrorf(name, "not an Arrow IPC stream (gpc-show reads the tools' streams; a CSV file is already a table)")
	}
	g = newIPCGuard(br)
	sr, err = ipc.NewReader(g, ipc.WithAllocator(memory.NewGoAllocator()))
	if err != nil {
		return nil, nil, nil, w.classify(name, err)
	}
	return sr, w, g, nil
}

// GroupEstimates is what a stream says of an estimate's particle groups
// (ReadGroupEstimates): each group's estimate of log P and its particles,
// in group order, and the stream's metadata.
type GroupEstimates struct {
	LogZ  []float64
	Sizes []int
	Meta  map[string]string
}

// ReadGroupEstimates reads the group estimates of the Arrow IPC stream in
// r: the group rows (kind "group", their log_p) of a cloud (gpc.cloud/2
// and /3, gpc.vecchia-cloud/1), else the metadata's gpc:group_log_p
// (gpc.cloud/1, gpc-predict's posteriors), with the
// group sizes of gpc:group_sizes. It reads the stream batch by batch and
// keeps only the group rows' estimates, so a cloud of any size can be
// read. A stream without group estimates, or with fewer or more than
// gpc:group_sizes counts (a shard holds a range of them), is a data
// error. name names the input in messages.
func ReadGroupEstimates(r io.Reader, name string) (ge *GroupEstimates, err error) {
	defer func() {
		if p := recover(); p != nil {
			ge, err = nil, &DataError{Where: name, Err: fmt.Errorf("malformed Arrow data (%v)", p)}
		}
	}()
	sr, w, g, err := openAnyStream(r, name)
	if err != nil {
		return nil, err
	}
	defer sr.Release()
	ge = &GroupEstimates{Meta: sr.Schema().Metadata().ToMap()}
	kindCol, logPCol, groupCol := -1, -1, -1
	for i, f := range sr.Schema().Fields() {
		switch {
		case f.Name == "kind" && f.Type.ID() == arrow.STRING:
			kindCol = i
		case f.Name == "log_p" && f.Type.ID() == arrow.FLOAT64:
			logPCol = i
		case f.Name == "group" && f.Type.ID() == arrow.INT32:
			groupCol = i
		}
	}
	rows, groupRows := 0, kindCol >= 0 && logPCol >= 0
	for sr.Next() {
		rec := sr.Record()
		rows += int(rec.NumRows())
		if !groupRows {
			continue
		}
		kind, logP := rec.Column(kindCol).(*array.String), rec.Column(logPCol).(*array.Float64)
		for i := range kind.Len() {
			if kind.IsNull(i) || kind.Value(i) != "group" {
				continue
			}
			if groupCol >= 0 {
				if gr := rec.Column(groupCol).(*array.Int32); gr.IsNull(i) || int(gr.Value(i)) != len(ge.LogZ) {
					return nil, dataErrorf(name, "group row %d is group %s, not %d (a shard holds a range of the groups: merge the shards first, gpc-merge)", len(ge.LogZ), showText(gr, i), len(ge.LogZ))
				}
			}
			if logP.IsNull(i) || math.IsNaN(logP.Value(i)) || math.IsInf(logP.Value(i), 1) {
				return nil, dataErrorf(name, "group %d's log_p is not a log probability", len(ge.LogZ))
			}
			ge.LogZ = append(ge.LogZ, logP.Value(i))
		}
	}
	if err := sr.Err(); err != nil {
		return nil, w.classify(name, err)
	}
	if err := g.checkEnd(ge.Meta); err != nil {
		return nil, &DataError{Where: name, Err: err}
	}
	if err := checkRows(ge.Meta, rows); err != nil {
		return nil, &DataError{Where: name, Err: err}
	}
	if ge.LogZ == nil {
		if _, ok := ge.Meta[KeyGroupLogP]; !ok {
			return nil, dataErrorf(name, "the stream holds no particle groups' estimates (neither group rows nor %s): a cloud (gpc-train) or posteriors (gpc-predict) does", KeyGroupLogP)
		}
		if ge.LogZ, err = metaList(ge.Meta, KeyGroupLogP, name, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) }); err != nil {
			return nil, err
		}
		for k, v := range ge.LogZ {
			if math.IsNaN(v) || math.IsInf(v, 1) {
				return nil, dataErrorf(name, "metadata %s: group %d's %v is not a log probability", KeyGroupLogP, k, v)
			}
		}
	}
	if ge.Sizes, err = metaList(ge.Meta, KeyGroupSizes, name, strconv.Atoi); err != nil {
		return nil, err
	}
	for k, s := range ge.Sizes {
		if s < 1 {
			return nil, dataErrorf(name, "metadata %s: group %d has %d particles", KeyGroupSizes, k, s)
		}
	}
	if len(ge.LogZ) != len(ge.Sizes) {
		return nil, dataErrorf(name, "%d group estimates where metadata %s gives %d groups (a shard holds a range of the groups: merge the shards first, gpc-merge)", len(ge.LogZ), KeyGroupSizes, len(ge.Sizes))
	}
	return ge, nil
}

// showText is element i of a as ReadTable shows it.
func showText(a arrow.Array, i int) string {
	if a.IsNull(i) {
		return ""
	}
	if s, ok := a.(*array.String); ok {
		return s.Value(i)
	}
	return valueText(a, i)
}
