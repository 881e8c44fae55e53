package format

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/vecchia"
)

// sampleVecchia is a small Vecchia stream: four training rows (the fourth
// a repeat of the first) and two test rows.
func sampleVecchia() *VecchiaStream {
	m := &vecchia.Model{N: 4, Start: []int{0, 0, 1, 3, 4}, Nbr: []int32{0, 0, 1, 0}, Coef: []float64{0.5, 0.2, 0.6, 1},
		CondVar: []float64{2, 1, 0.5, 0}, Noise: 0.9999,
		Lower: []float64{0, math.Inf(-1), 0, math.Inf(-1)}, Upper: []float64{math.Inf(1), 0, math.Inf(1), 0},
		T: 2, TStart: []int{0, 2, 3}, TNbr: []int32{1, 2, 0}, TCoef: []float64{0.3, 0.4, 0.9}, TCondVar: []float64{0.1, 0.2}}
	return &VecchiaStream{Model: m, Row: []int{2, 0, 1, 3, 0, 1}, ID: []string{"c", "a", "b", "d", "t0", "t1"},
		Y: []float64{1, -1, 1, -1, math.NaN(), 1}, Meta: map[string]string{KeyTool: "test"}}
}

// TestVecchiaRoundTrip writes and reads a Vecchia stream back, in several
// batch sizes: the same model, rows, ids and labels.
func TestVecchiaRoundTrip(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s := sampleVecchia()
	for _, batch := range []int{1, 2, 4096} {
		var buf bytes.Buffer
		if err := WriteVecchia(&buf, s, batch, mem); err != nil {
			t.Fatal(err)
		}
		got, err := ReadVecchia(bytes.NewReader(buf.Bytes()), "rt", mem)
		if err != nil {
			t.Fatal(err)
		}
		m, w := got.Model, s.Model
		if m.N != w.N || m.T != w.T || m.Noise != w.Noise || !eqInts(m.Start, w.Start) || !eqInts(m.TStart, w.TStart) ||
			!eqF(m.Coef, w.Coef) || !eqF(m.CondVar, w.CondVar) || !eqF(m.Lower, w.Lower) || !eqF(m.Upper, w.Upper) ||
			!eqF(m.TCoef, w.TCoef) || !eqF(m.TCondVar, w.TCondVar) || !eqInts(got.Row, s.Row) || !eqF(got.Y, s.Y) {
			t.Errorf("batch %d: the model read back differs", batch)
		}
		if got.Meta[KeyFingerprint] != VecchiaFingerprint(w) {
			t.Errorf("batch %d: fingerprint %q, want %q", batch, got.Meta[KeyFingerprint], VecchiaFingerprint(w))
		}
	}
}

// TestVecchiaReadReserves reads a model of 3000 rows (row k conditions on
// its min(k, 8) predecessors) written in batches of 256: the same
// neighbours and coefficients, their arrays reserved from the first
// batch's rate for all rows (a sixteenth spare at most, a second
// reservation only if the first fell short) rather than grown by append.
func TestVecchiaReadReserves(t *testing.T) {
	const n, m = 3000, 8
	md := &vecchia.Model{N: n, Noise: 1, Start: []int{0}, TStart: []int{0}}
	s := &VecchiaStream{Model: md, Meta: map[string]string{KeyTool: "test"}}
	for k := range n {
		for j := max(0, k-m); j < k; j++ {
			md.Nbr = append(md.Nbr, int32(j))
			md.Coef = append(md.Coef, 1/float64(8+k-j))
		}
		md.Start = append(md.Start, len(md.Nbr))
		md.CondVar = append(md.CondVar, 1)
		md.Lower = append(md.Lower, 0)
		md.Upper = append(md.Upper, math.Inf(1))
		s.Row = append(s.Row, k)
		s.Y = append(s.Y, 1)
	}
	var buf bytes.Buffer
	if err := WriteVecchia(&buf, s, 256, memory.DefaultAllocator); err != nil {
		t.Fatal(err)
	}
	got, err := ReadVecchia(bytes.NewReader(buf.Bytes()), "reserve", memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	g := got.Model
	if !slices.Equal(g.Nbr, md.Nbr) || !eqF(g.Coef, md.Coef) || !eqInts(g.Start, md.Start) {
		t.Fatal("the model read back differs")
	}
	if l := len(g.Nbr); cap(g.Nbr) > l+l/16+m || cap(g.Coef) > l+l/16+m {
		t.Errorf("%d neighbours held in capacities %d and %d: more than the reservation's spare", l, cap(g.Nbr), cap(g.Coef))
	}
	if cap(g.Start) != n+1 || cap(got.Row) != n || cap(got.Y) != n {
		t.Errorf("row arrays' capacities %d, %d, %d: not reserved for the %d rows", cap(g.Start), cap(got.Row), cap(got.Y), n)
	}
}

// TestVecchiaReadAnnouncedRows: a stream whose metadata announces 10^12
// training rows but holds four fails on the count, with a data error,
// instead of reserving memory for the rows announced.
func TestVecchiaReadAnnouncedRows(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteVecchia(&buf, sampleVecchia(), 2, memory.DefaultAllocator); err != nil {
		t.Fatal(err)
	}
	data := rewriteMeta(t, buf.Bytes(), func(m map[string]string) map[string]string {
		m[KeyN], m[KeyRows] = "1000000000000", "1000000000002"
		return m
	})
	_, err := ReadVecchia(bytes.NewReader(data), "announced", memory.DefaultAllocator)
	var de *DataError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "announces") {
		t.Fatalf("got %v, want a data error on the announced count", err)
	}
}

func eqInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// eqF compares float64 slices, NaN equal to NaN.
func eqF(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && !(math.IsNaN(a[i]) && math.IsNaN(b[i])) {
			return false
		}
	}
	return true
}

// TestVecchiaCloudRoundTrip writes a Vecchia cloud and reads it back.
func TestVecchiaCloudRoundTrip(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var buf bytes.Buffer
	meta := map[string]string{KeySchema: SchemaVecchiaCloud, KeyTests: "2", KeyRows: "4"}
	cw, err := NewVecchiaCloudWriter(&buf, meta, []int{0, 1}, []string{"a", "b"}, []float64{1, math.NaN()}, 1, mem)
	if err != nil {
		t.Fatal(err)
	}
	outs := []core.GroupResult{{LogZ: -3, MinESS: 0.5, Resamples: 2, Ancestors: 7, DeadAt: -1}, {LogZ: -3.1, MinESS: 0.4, Resamples: 1, Ancestors: 9, DeadAt: -1}}
	for g, o := range outs {
		if err := cw.WriteGroup(g, o, []float64{0.25, 0.75 + float64(g)/10}); err != nil {
			t.Fatal(err)
		}
	}
	if err := cw.Close(); err != nil {
		t.Fatal(err)
	}
	c, err := ReadVecchiaCloud(bytes.NewReader(buf.Bytes()), "rt", false, mem)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Groups) != 2 || c.Groups[1].Out != outs[1] || c.Groups[1].P[1] != 0.85 || c.ID[1] != "b" || !math.IsNaN(c.Y[1]) {
		t.Errorf("read back: %+v", c)
	}
}

// FuzzReadVecchia: any bytes either fail with an error or give a valid
// model whose stream writes and reads back the same.
func FuzzReadVecchia(f *testing.F) {
	mem := memory.NewGoAllocator()
	var buf bytes.Buffer
	if err := WriteVecchia(&buf, sampleVecchia(), 2, mem); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > fuzzMax {
			return
		}
		defer watchdog()()
		s, err := ReadVecchia(bytes.NewReader(data), "fuzz", mem)
		if err != nil {
			return
		}
		if err := s.Model.Validate(); err != nil {
			t.Fatalf("read a model that is not valid: %v", err)
		}
		var out bytes.Buffer
		if err := WriteVecchia(&out, s, 3, mem); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadVecchia(bytes.NewReader(out.Bytes()), "again", mem); err != nil {
			t.Fatalf("written back, it does not read: %v", err)
		}
	})
}

// FuzzReadVecchiaCloud: any bytes either fail with an error or give a
// cloud whose groups' posteriors have the test rows' count.
func FuzzReadVecchiaCloud(f *testing.F) {
	mem := memory.NewGoAllocator()
	var buf bytes.Buffer
	meta := map[string]string{KeySchema: SchemaVecchiaCloud, KeyTests: "1", KeyRows: "2"}
	cw, err := NewVecchiaCloudWriter(&buf, meta, []int{0}, nil, []float64{1}, 1, mem)
	if err != nil {
		f.Fatal(err)
	}
	if err := cw.WriteGroup(0, core.GroupResult{LogZ: -1, MinESS: 1, DeadAt: -1}, []float64{0.5}); err != nil {
		f.Fatal(err)
	}
	if err := cw.Close(); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > fuzzMax {
			return
		}
		defer watchdog()()
		c, err := ReadVecchiaCloud(bytes.NewReader(data), "fuzz", false, mem)
		if err != nil {
			return
		}
		for _, g := range c.Groups {
			if len(g.P) != len(c.Row) {
				t.Fatalf("group %d has %d posteriors for %d test rows", g.Group, len(g.P), len(c.Row))
			}
		}
	})
}
