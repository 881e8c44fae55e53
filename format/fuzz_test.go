package format

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"
)

// FuzzReadCovariance feeds arbitrary bytes to the covariance reader (Arrow
// stream, Arrow file and CSV paths, chosen by content). It must never panic:
// either it returns an error, or what it read survives a write and read
// round trip unchanged.
func FuzzReadCovariance(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "interop", "*.arrow*"))
	for _, name := range files {
		if data, err := os.ReadFile(name); err == nil {
			f.Add(data)
		}
	}
	mem := memory.NewGoAllocator()
	for _, c := range []*Covariance{sampleCov(), {N: 1, Cov: []float64{2}}} {
		var buf bytes.Buffer
		if err := WriteCovariance(&buf, c, map[string]string{KeyTool: "fuzz"}, 2, mem); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	for _, s := range []string{"1,0.5\n0.5,1\n", "a,b,lower\n1,0,-1\n0,1,0\n", ",x\n0,1\n", "1\t2\n3\t4\n", "\"1\",2\n2,1\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<20 {
			return
		}
		c, err := ReadCovariance(bytes.NewReader(data), "fuzz", mem)
		if err != nil {
			return
		}
		if c.N < 1 || len(c.Cov) != c.N*c.N || len(c.Test.Cov) != c.N*c.Test.Len() {
			t.Fatalf("inconsistent result: N %d, %d entries, %d test entries for %d test rows", c.N, len(c.Cov), len(c.Test.Cov), c.Test.Len())
		}
		var buf bytes.Buffer
		if err := WriteCovariance(&buf, c, nil, 3, mem); err != nil {
			t.Fatal(err)
		}
		back, err := ReadCovariance(&buf, "round trip", mem)
		if err != nil {
			t.Fatalf("round trip: %v", err)
		}
		sameCov(t, back, c)
	})
}

// FuzzDump: the text dump of any bytes never panics.
func FuzzDump(f *testing.F) {
	mem := memory.NewGoAllocator()
	var buf bytes.Buffer
	if err := WriteCovariance(&buf, sampleCov(), nil, 2, mem); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	tab := &Table{Cols: []Column{{Name: "x", Float: []float64{1, 2}}, {Name: "s", Str: []string{"a", "b"}}}}
	buf.Reset()
	if err := WriteTable(&buf, tab, Arrow, 1, mem); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = Dump(io.Discard, bytes.NewReader(data))
	})
}
