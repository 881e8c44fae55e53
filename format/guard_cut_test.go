package format

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

// messageParts returns the offsets where each message of an Arrow IPC
// stream starts, where its metadata ends (its body starts) and where it
// ends; the end-of-stream marker is not a message.
func messageParts(t *testing.T, data []byte) (start, body, end []int) {
	t.Helper()
	var sh *shape
	for o := 0; o+8 <= len(data); {
		metaLen := int(binary.LittleEndian.Uint32(data[o+4:]))
		if metaLen == 0 {
			break
		}
		m, err := checkMessage(data[o+8:o+8+metaLen], sh)
		if err != nil {
			t.Fatal(err)
		}
		if m.schema != nil {
			sh = m.schema
		}
		start, body, end = append(start, o), append(body, o+8+metaLen), append(end, o+8+metaLen+int(m.bodyLen))
		o = end[len(end)-1]
	}
	return start, body, end
}

// TestCutPoints: a gpc stream cut short at any of the four kinds of point
// (inside the schema message, between two messages, inside a record
// batch's metadata, inside its body) is refused with "cut short", in
// gpc's words: never Arrow's ("arrow/ipc: ...") nor a bare "unexpected
// EOF"; by every reader (the covariance reader, the table reader of
// gpc-show, the dump of the tests).
func TestCutPoints(t *testing.T) {
	t.Parallel()
	data := writeCov(t, sampleCov(), map[string]string{"gpc:kernel": "rbf", KeySchema: SchemaCovariance}, 1)
	start, body, end := messageParts(t, data)
	if len(start) < 4 || body[2]-start[2] < 16 || end[2]-body[2] < 16 {
		t.Fatalf("too few messages or too small ones: %v %v %v", start, body, end)
	}
	for _, c := range []struct {
		name string
		at   int
		want string
	}{
		{"inside the schema's prefix", 5, "the stream ends inside its schema, the first message: it was cut short"},
		{"inside the schema's metadata", body[0] - 10, "the stream ends inside its schema, the first message: it was cut short"},
		{"between messages", end[1], "the stream ended without Arrow's end-of-stream marker: it was cut short"},
		{"inside a record batch's prefix", start[2] + 6, "the stream ends inside message 2's metadata: it was cut short"},
		{"inside a record batch's metadata", body[2] - 8, "the stream ends inside message 2's metadata: it was cut short"},
		{"inside a record batch's body", end[2] - 8, "the stream ends inside message 2's body (a record batch's data): it was cut short"},
	} {
		cut := data[:c.at]
		_, err1 := ReadCovariance(bytes.NewReader(cut), "in", checkedMem(t))
		_, err2 := ReadAnyTable(bytes.NewReader(cut), "in")
		err3 := Dump(&bytes.Buffer{}, bytes.NewReader(cut))
		for i, err := range []error{err1, err2, err3} {
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "arrow/ipc") || strings.Contains(err.Error(), "EOF") {
				t.Errorf("%s, reader %d: %v; want %q", c.name, i, err, c.want)
			}
		}
	}
}
