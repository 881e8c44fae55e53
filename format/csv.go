package format

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// sniffDelimiter guesses the field separator from the start of the text:
// the most frequent of comma, tab and semicolon on the first line (comma
// when none occurs).
func sniffDelimiter(br *bufio.Reader) rune {
	head, _ := br.Peek(br.Size())
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		head = head[:i]
	}
	best, bestN := ',', 0
	for _, d := range []rune{',', '\t', ';'} {
		if c := bytes.Count(head, []byte(string(d))); c > bestN {
			best, bestN = d, c
		}
	}
	return best
}

// csvTable is CSV text read as a header (possibly synthesized) and rows of
// fields, with the line of each row for messages.
type csvTable struct {
	header    []string
	hasHeader bool
	rows      [][]string
	lines     []int
}

// utf8BOM is the byte-order mark that Excel and other Windows programs put
// at the start of UTF-8 text; it is not part of the first column's name.
var utf8BOM = []byte("\xef\xbb\xbf")

// readCSV reads all of br as CSV. The first record is a header if some
// field in it is a name (neither a number nor empty). A UTF-8 byte-order
// mark is skipped.
func readCSV(br *bufio.Reader, name string, w *ioWatch) (*csvTable, error) {
	if bom, _ := br.Peek(len(utf8BOM)); bytes.Equal(bom, utf8BOM) {
		br.Discard(len(utf8BOM))
	}
	head, _ := br.Peek(min(br.Buffered(), 4096))
	if !utf8.Valid(trimPartialRune(head)) || bytes.IndexByte(head, 0) >= 0 {
		return nil, dataErrorf(name, "not an Arrow IPC stream or file, and not CSV text (binary content)")
	}
	cr := csv.NewReader(br)
	cr.Comma = sniffDelimiter(br)
	cr.TrimLeadingSpace = true
	t := &csvTable{}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if w.err != nil {
				return nil, &IOError{Op: "read " + name, Err: w.err}
			}
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, dataErrorf(fmt.Sprintf("%s: line %d", name, pe.Line), "%v", pe.Err)
			}
			return nil, dataErrorf(name, "%v", err)
		}
		line, _ := cr.FieldPos(0)
		if len(t.rows) == 0 && t.header == nil {
			if hasName(rec) {
				t.header, t.hasHeader = rec, true
				continue
			}
		}
		t.rows = append(t.rows, rec)
		t.lines = append(t.lines, line)
	}
	if t.header == nil {
		if len(t.rows) == 0 {
			return nil, dataErrorf(name, "empty input")
		}
		t.header = make([]string, len(t.rows[0]))
		for i := range t.header {
			t.header[i] = "column " + strconv.Itoa(i+1)
		}
	}
	return t, nil
}

// trimPartialRune drops a UTF-8 sequence cut off at the end of b.
func trimPartialRune(b []byte) []byte {
	for i := 0; i < utf8.UTFMax && i < len(b); i++ {
		if utf8.RuneStart(b[len(b)-1-i]) {
			if !utf8.FullRune(b[len(b)-1-i:]) {
				return b[:len(b)-1-i]
			}
			break
		}
	}
	return b
}

func hasName(rec []string) bool {
	for _, f := range rec {
		if _, err := parseNumber(f); err != nil && strings.TrimSpace(f) != "" {
			return true
		}
	}
	return false
}

// parseNumber parses one CSV field as a float64 (surrounding blanks allowed).
func parseNumber(f string) (float64, error) {
	f = strings.TrimSpace(f)
	if f == "" {
		return 0, errors.New("empty field")
	}
	v, err := strconv.ParseFloat(f, 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
			return 0, fmt.Errorf("%q is out of the float64 range", f)
		}
		return 0, fmt.Errorf("%q is not a number", f)
	}
	return v, nil
}

// readCSVCov reads a square matrix from CSV. With a header, columns named
// lower, upper, mean, y and id are per-row attributes, a column with an empty
// name (the index pandas writes) is ignored, and the others form the matrix.
func readCSVCov(br *bufio.Reader, name string, w *ioWatch) (*Covariance, error) {
	t, err := readCSV(br, name, w)
	if err != nil {
		return nil, err
	}
	var matrix []int
	attrs := map[string]int{}
	for i, h := range t.header {
		h = strings.TrimSpace(h)
		switch {
		case !t.hasHeader:
			matrix = append(matrix, i)
		case h == "" || isIgnored(h):
		case h == ColLower || h == ColUpper || h == ColMean || h == ColY || h == ColID:
			attrs[h] = i
		case h == ColCov || h == ColVar || h == ColRole:
			return nil, dataErrorf(name+": header", "column %q belongs to the Arrow covariance stream; in CSV the matrix is given as N numeric columns", h)
		default:
			matrix = append(matrix, i)
		}
	}
	n := len(matrix)
	if n == 0 {
		return nil, dataErrorf(name, "no matrix columns")
	}
	if len(t.rows) != n {
		return nil, dataErrorf(name, "the matrix is not square: %d columns but %d rows", n, len(t.rows))
	}
	b := newCovBuilder(n, name, "CSV", map[string]string{}, attrs)
	c := b.c
	c.Cov = make([]float64, n*n) // n rows of n fields are in memory already
	for r, rec := range t.rows {
		where := fmt.Sprintf("%s: line %d", name, t.lines[r])
		for k, col := range matrix {
			cw := fmt.Sprintf("%s, column %d", where, col+1)
			if t.hasHeader {
				cw += " (" + t.header[col] + ")"
			}
			v, err := parseNumber(rec[col])
			if err != nil {
				return nil, dataErrorf(cw, "%v", err)
			}
			if err := finite(v, cw); err != nil {
				return nil, err
			}
			c.Cov[r*n+k] = v
		}
		for _, a := range []struct {
			col string
			dst *[]float64
		}{{ColLower, &c.Lower}, {ColUpper, &c.Upper}, {ColMean, &c.Mean}, {ColY, &c.Y}} {
			col, ok := attrs[a.col]
			if !ok {
				continue
			}
			v, err := parseNumber(rec[col])
			if err != nil {
				return nil, dataErrorf(fmt.Sprintf("%s, column %d (%s)", where, col+1, a.col), "%v", err)
			}
			*a.dst = append(*a.dst, v)
		}
		if col, ok := attrs[ColID]; ok {
			c.ID = append(c.ID, strings.TrimSpace(rec[col]))
		}
	}
	return c, nil
}
