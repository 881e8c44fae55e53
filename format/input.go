package format

import (
	"bufio"
	"bytes"
	"fmt"
	"io"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// inputKind is an input's form, detected from its first bytes.
type inputKind int

const (
	kindText inputKind = iota
	kindArrowStream
	kindArrowFile
	kindParquet
)

// input is an opened input whose form is known.
type input struct {
	name string
	w    *ioWatch
	br   *bufio.Reader
	kind inputKind
}

// openInput wraps r and detects its form by content: Arrow's stream and
// file magic, Parquet's, else text. Empty input is a DataError.
func openInput(r io.Reader, name string) (*input, error) {
	w := &ioWatch{r: r}
	in := &input{name: name, w: w, br: bufio.NewReaderSize(w, 64<<10)}
	head, _ := in.br.Peek(8)
	switch {
	case len(head) == 0:
		if w.err != nil {
			return nil, &IOError{Op: "read " + name, Err: w.err}
		}
		return nil, &DataError{Where: name, Err: ErrEmptyInput}
	case bytes.HasPrefix(head, arrowFileMagic):
		in.kind = kindArrowFile
	case bytes.HasPrefix(head, arrowStreamMagic):
		in.kind = kindArrowStream
	case bytes.HasPrefix(head, parquetMagic):
		in.kind = kindParquet
	}
	return in, nil
}

// recordSource yields an Arrow input's record batches.
type recordSource interface {
	// next returns the next record, owned by the source until the next
	// call; nil at the end.
	next() (arrow.Record, error)
	release()
}

// openArrow opens an Arrow stream or file input for the readers of a
// stream's whole content (ReadVecchia, ReadVecchiaCloud): what names what
// the input should have been, for the line that refuses another kind. The
// caller releases src.
func openArrow(r io.Reader, name, what string, mem memory.Allocator) (in *input, src recordSource, schema *arrow.Schema, err error) {
	if in, err = openInput(r, name); err != nil {
		return nil, nil, nil, err
	}
	if in.kind != kindArrowStream && in.kind != kindArrowFile {
		return nil, nil, nil, dataErrorf(name, "not an Arrow IPC stream: %s", what)
	}
	defer recoverArrow(name, &err)
	if src, schema, err = in.arrowSource(mem); err != nil {
		return nil, nil, nil, err
	}
	return in, src, schema, nil
}

// readBatches hands each of src's record batches to add, with its index
// and the rows before it, and checks the total against the metadata's
// gpc:rows (a stream cut short at a batch boundary): the batch loop of the
// readers that build a stream's whole content (ReadVecchia,
// ReadVecchiaCloud).
func (in *input) readBatches(src recordSource, meta map[string]string, add func(rec arrow.Record, batch, rows int) error) error {
	name, rows := in.name, 0
	for batch := 0; ; batch++ {
		rec, err := src.next()
		if err != nil {
			return in.w.classify(name, err)
		}
		if rec == nil {
			break
		}
		if err := add(rec, batch, rows); err != nil {
			return err
		}
		rows += int(rec.NumRows())
	}
	if err := checkRows(meta, rows); err != nil {
		return &DataError{Where: name, Err: err}
	}
	return nil
}

// arrowSource opens an Arrow stream or file input. A file is read whole and
// checked (its footer, at the end, holds the schema); a stream is read
// message by message through the guard.
func (in *input) arrowSource(mem memory.Allocator) (recordSource, *arrow.Schema, error) {
	switch in.kind {
	case kindArrowFile:
		data, err := io.ReadAll(in.br)
		if err != nil {
			return nil, nil, in.w.classify(in.name, err)
		}
		if err := checkFile(data); err != nil {
			return nil, nil, dataErrorf(in.name, "%v", err)
		}
		fr, err := ipc.NewFileReader(bytes.NewReader(data), ipc.WithAllocator(mem))
		if err != nil {
			return nil, nil, dataErrorf(in.name, "not a valid Arrow IPC file: %v", err)
		}
		return &fileSource{fr: fr}, fr.Schema(), nil
	case kindArrowStream:
		g := newIPCGuard(in.br)
		sr, err := ipc.NewReader(g, ipc.WithAllocator(mem))
		if err != nil {
			return nil, nil, in.w.classify(in.name, fmt.Errorf("not a valid Arrow IPC stream: %w", err))
		}
		return &streamSource{sr: sr, g: g, meta: sr.Schema().Metadata().ToMap()}, sr.Schema(), nil
	}
	panic("format: arrowSource on a non-Arrow input")
}

type streamSource struct {
	sr   *ipc.Reader
	g    *ipcGuard
	meta map[string]string
}

func (s *streamSource) next() (arrow.Record, error) {
	if s.sr.Next() {
		return s.sr.Record(), nil
	}
	if err := s.sr.Err(); err != nil {
		return nil, err
	}
	return nil, s.g.checkEnd(s.meta)
}

func (s *streamSource) release() { s.sr.Release() }

type fileSource struct {
	fr *ipc.FileReader
	i  int
}

func (s *fileSource) next() (arrow.Record, error) {
	if s.i >= s.fr.NumRecords() {
		return nil, nil
	}
	s.i++
	return s.fr.Record(s.i - 1) // released by the reader at the next call or Close
}

func (s *fileSource) release() { s.fr.Close() }

// recoverArrow turns a panic from Arrow's decoder, which trusts buffer
// lengths it has not checked, into a DataError in *err.
func recoverArrow(name string, err *error) {
	if p := recover(); p != nil {
		*err = dataErrorf(name, "malformed Arrow data (%v)", p)
	}
}
