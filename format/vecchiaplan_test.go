package format

import (
	"bytes"
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/gpc-mc/gpc/core/vecchia"
)

// TestVecchiaPlanRoundTrip writes a Vecchia model's plan and reads it back
// with the model, in one batch and in several: the same parts, bit for
// bit.
func TestVecchiaPlanRoundTrip(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	m := sampleVecchia().Model
	p, err := vecchia.Prepare(context.Background(), m, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := p.Parts()
	defer func(r int) { vecchiaPlanRows = r }(vecchiaPlanRows)
	for _, rows := range []int{1 << 16, 3} {
		vecchiaPlanRows = rows
		var buf bytes.Buffer
		if err := WriteVecchiaPlan(&buf, m, &want, map[string]string{KeyTool: "test"}, mem); err != nil {
			t.Fatal(err)
		}
		meta, q, err := ReadVecchiaPlan(bytes.NewReader(buf.Bytes()), "plan", m, mem)
		if err != nil {
			t.Fatal(err)
		}
		got := q.Parts()
		same := func(a, b []float64) bool {
			return slices.EqualFunc(a, b, func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) })
		}
		if got.Block != want.Block || !same(got.Diag, want.Diag) || !same(got.Off, want.Off) || !same(got.Eta, want.Eta) ||
			!same(got.Tau, want.Tau) || !same(got.Nu, want.Nu) || !same(got.Laplace.Mode, want.Laplace.Mode) ||
			got.Laplace.Iterations != want.Laplace.Iterations || got.EP != want.EP || got.Shift != want.Shift ||
			got.Widened != want.Widened || got.MeanSteps != want.MeanSteps || got.Clipped != want.Clipped || got.SiteScale != want.SiteScale {
			t.Errorf("%d rows a batch: the parts read back differ", rows)
		}
		if meta[KeyTool] != "test" || meta[KeySchema] != SchemaVecchiaPlan {
			t.Errorf("%d rows a batch: metadata %v", rows, meta)
		}
	}
}

// TestVecchiaPlanRefused checks that a plan of another model, a cut plan
// and a plan with a spoiled scalar are refused as data errors.
func TestVecchiaPlanRefused(t *testing.T) {
	mem := memory.NewGoAllocator()
	m := sampleVecchia().Model
	p, err := vecchia.Prepare(context.Background(), m, nil)
	if err != nil {
		t.Fatal(err)
	}
	pp := p.Parts()
	defer func(r int) { vecchiaPlanRows = r }(vecchiaPlanRows)
	vecchiaPlanRows = 2
	var buf bytes.Buffer
	if err := WriteVecchiaPlan(&buf, m, &pp, nil, mem); err != nil {
		t.Fatal(err)
	}
	other := *m
	other.Noise = 0.5
	cut := buf.Bytes()[:buf.Len()*2/3]
	for name, c := range map[string]struct {
		data []byte
		m    *vecchia.Model
		msg  string
	}{
		"another model": {buf.Bytes(), &other, "another Vecchia model"},
		"cut":           {cut, m, ""},
	} {
		_, _, err := ReadVecchiaPlan(bytes.NewReader(c.data), "plan", c.m, mem)
		var de *DataError
		if !errors.As(err, &de) {
			t.Errorf("%s: %v, want a data error", name, err)
			continue
		}
		if !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want %q", name, err, c.msg)
		}
	}
	var spoiled vecchia.PreparedParts
	if err := parseVecchiaPlanScalars(strings.Replace(vecchiaPlanScalars(&pp), "shift=", "shift=x", 1), &spoiled); err == nil {
		t.Error("a spoiled scalar was read")
	}
	if err := parseVecchiaPlanScalars(strings.Replace(vecchiaPlanScalars(&pp), " clipped=0", "", 1), &spoiled); err == nil {
		t.Error("a missing scalar was not noticed")
	}
}
