package format

import (
	"errors"
	"fmt"
	"io"
)

// Exit codes carried by the errors of this package (STYLE.md section 3).
const (
	ExitData  = 65 // bad input data
	ExitIO    = 74 // an I/O failure
	ExitUsage = 80 // a limit the user set (--max-memory) is too small
)

// ErrEmptyInput is the error (in a DataError) of an input of zero bytes.
var ErrEmptyInput = errors.New("empty input")

// DataError is input that cannot be used: a malformed or truncated stream, a
// wrong schema, a value that is not finite, a shape that does not match.
// Where names the place (input, batch, row, column) in words.
type DataError struct {
	Where string
	Err   error
}

func (e *DataError) Error() string {
	if e.Where == "" {
		return "format: " + e.Err.Error()
	}
	return "format: " + e.Where + ": " + e.Err.Error()
}

func (e *DataError) Unwrap() error { return e.Err }

// ExitCode is 65, sysexits' EX_DATAERR.
func (e *DataError) ExitCode() int { return ExitData }

// IOError is a failure to read or write that is not the data's fault.
type IOError struct {
	Op  string
	Err error
}

func (e *IOError) Error() string { return "format: " + e.Op + ": " + e.Err.Error() }

func (e *IOError) Unwrap() error { return e.Err }

// ExitCode is 74, sysexits' EX_IOERR.
func (e *IOError) ExitCode() int { return ExitIO }

// MemoryError is input that would take more memory than the caller allows
// (the tools' --max-memory): What it is, the bytes it needs and the limit.
type MemoryError struct {
	What        string
	Need, Limit int64
}

func (e *MemoryError) Error() string {
	return fmt.Sprintf("format: %s needs %.3g GB, more than the memory limit of %.3g GB (--max-memory)", e.What, float64(e.Need)/1e9, float64(e.Limit)/1e9)
}

// ExitCode is 80: the limit is the user's to raise.
func (e *MemoryError) ExitCode() int { return ExitUsage }

func dataErrorf(where, format string, args ...any) *DataError {
	return &DataError{Where: where, Err: fmt.Errorf(format, args...)}
}

// ioWatch wraps a reader and remembers its first error other than io.EOF, so
// that a failure reported by a decoder can be told apart: the device failed
// (IOError) or the bytes were bad (DataError). Its end is final: a reader
// that asks again after io.EOF gets io.EOF, without reading on (a terminal
// would wait for a second ^D).
type ioWatch struct {
	r   io.Reader
	err error
	eof bool
}

func (w *ioWatch) Read(p []byte) (int, error) {
	if w.eof {
		return 0, io.EOF
	}
	n, err := w.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && w.err == nil {
		w.err = err
	}
	w.eof = errors.Is(err, io.EOF)
	return n, err
}

// classify turns a decoder's error into an IOError if the underlying reader
// failed, else into a DataError at where.
func (w *ioWatch) classify(where string, err error) error {
	if w.err != nil {
		return &IOError{Op: "read " + where, Err: w.err}
	}
	var de *DataError
	if errors.As(err, &de) {
		return err
	}
	return &DataError{Where: where, Err: cutShort(err)}
}
