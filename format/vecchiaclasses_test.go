package format

import (
	"bytes"
	"math"
	"reflect"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/gpc-mc/gpc/core/gp"
	"github.com/gpc-mc/gpc/core/vecchia"
)

// TestVecchiaClassesRoundTrip writes a three-class Vecchia model (seven
// points on a line, two neighbours each, two test points) as its stream
// and reads it back: the same model, its class names, and a fingerprint
// that changes with a training label; a two-class stream has no classes.
func TestVecchiaClassesRoundTrip(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	x := []float64{0, 1.5, 0.3, 2.2, 3.1, 0.9, 2.7}
	y := []int{0, 1, 0, 2, 2, 1, 2}
	tx := []float64{0.5, 2.5}
	s, err := vecchia.NewStructure(x, len(x), 1, vecchia.Options{M: 2})
	if err != nil {
		t.Fatal(err)
	}
	k := &gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{1}, Beta: 4}
	m, err := vecchia.NewMulticlass(s, []*gp.Kernel{k}, 3, x, y, 1e-4, tx, s.TestNeighbours(tx, 2, 2, 1), 1)
	if err != nil {
		t.Fatal(err)
	}
	labels := make([]float64, 0, m.N+m.T)
	for _, c := range m.Y {
		labels = append(labels, float64(c))
	}
	labels = append(labels, 1, math.NaN())
	rows := []int{}
	for i := range m.N + m.T {
		rows = append(rows, i)
	}
	names := []string{"a", "b", "c"}
	st, err := VecchiaClassesStream(m, names, rows, nil, labels, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteVecchia(&buf, st, 3, mem); err != nil {
		t.Fatal(err)
	}
	got, err := ReadVecchia(bytes.NewReader(buf.Bytes()), "rt", mem)
	if err != nil {
		t.Fatal(err)
	}
	gotNames, err := got.Classes("rt")
	if err != nil || !reflect.DeepEqual(gotNames, names) {
		t.Fatalf("classes %v (%v), want %v", gotNames, err, names)
	}
	back, err := got.Multiclass("rt", gotNames)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, m) {
		t.Errorf("read back %+v, wrote %+v", back, m)
	}
	fp := got.Meta[KeyFingerprint]
	st.Y[0] = float64((m.Y[0] + 1) % 3)
	if other := VecchiaClassesFingerprint(st.Model, st.Meta[KeyClasses], st.Y); other == fp {
		t.Error("the fingerprint does not change with a training label")
	}
	two := sampleVecchia()
	if c, err := two.Classes("two"); c != nil || err != nil {
		t.Errorf("a two-class stream's classes: %v, %v", c, err)
	}
}
