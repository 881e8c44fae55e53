package format

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"gpc/core"
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

// FuzzReadFrame: any bytes read as a features table either fail with an
// error or give a consistent frame.
func FuzzReadFrame(f *testing.F) {
	for _, s := range []string{"a,b,y\n1,2,1\n3,4,-1\n", "x\ty\n1\tM\n", "1,2\n3,4\n", "a,b\n,\n", "\"q\",b\n1,2\n"} {
		f.Add([]byte(s))
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "interop", "*.arrow*"))
	for _, name := range files {
		if data, err := os.ReadFile(name); err == nil {
			f.Add(data)
		}
	}
	mem := memory.NewGoAllocator()
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<20 {
			return
		}
		fr, err := ReadFrame(bytes.NewReader(data), "fuzz", mem)
		if err != nil {
			return
		}
		if len(fr.Names) != len(fr.Cols) {
			t.Fatalf("%d names for %d columns", len(fr.Names), len(fr.Cols))
		}
		for _, c := range fr.Cols {
			if len(c.Text) != fr.Rows || len(c.Null) != fr.Rows || (c.Num != nil && len(c.Num) != fr.Rows) {
				t.Fatalf("a column of %d values in %d rows", len(c.Text), fr.Rows)
			}
		}
	})
}

// FuzzOpenCloud: any bytes read as a cloud either fail with an error or
// give a cloud whose parts agree.
func FuzzOpenCloud(f *testing.F) {
	mem := memory.NewGoAllocator()
	c := sampleCov()
	cloud := &core.Cloud{N: c.N, Groups: []core.CloudGroup{
		{Z: []float64{0.1, 0.2, 0.3, -1, 0, 1}, LogW: []float64{-0.5, -0.9}, LogZ: -2},
		{Z: []float64{0.4, 0.5, 0.6}, LogW: []float64{0}, LogZ: -2.5},
	}}
	var buf bytes.Buffer
	cw, err := NewCloudWriter(&buf, c, map[string]string{KeyGroupSizes: "2,1", KeyGroupLogP: "-2,-2.5", KeyOrder: "2,0,1", KeyFingerprint: Fingerprint(c.Cov)}, 2, mem)
	if err != nil {
		f.Fatal(err)
	}
	for g := range cloud.Groups {
		if err := cw.WriteParticles(g, &cloud.Groups[g]); err != nil {
			f.Fatal(err)
		}
	}
	if err := cw.WriteTest(&c.Test); err != nil {
		f.Fatal(err)
	}
	if err := cw.Close(); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<20 {
			return
		}
		done := make(chan bool)
		defer close(done)
		go func() {
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				buf := make([]byte, 1<<20)
				n := runtime.Stack(buf, true)
				panic("hang:\n" + string(buf[:n]))
			}
		}()
		cr, err := OpenCloud(bytes.NewReader(data), "fuzz", mem, CloudOptions{Limit: 1 << 26})
		if err != nil {
			return
		}
		defer cr.Close()
		n := cr.Train.N
		if len(cr.Train.Cov) != n*n || len(cr.Perm) != n {
			t.Fatalf("train block of %d values, order of %d, for N = %d", len(cr.Train.Cov), len(cr.Perm), n)
		}
		for _, g := range cr.Cloud.Groups {
			if len(g.Z) != g.Len()*n {
				t.Fatalf("group of %d particles with %d values", g.Len(), len(g.Z))
			}
		}
		for {
			tr, err := cr.NextTest(2)
			if err != nil || tr == nil {
				return
			}
			if len(tr.Cov) != tr.Len()*n {
				t.Fatalf("%d test values for %d rows", len(tr.Cov), tr.Len())
			}
		}
	})
}
