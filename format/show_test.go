package format

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"
)

// groupStream is an Arrow stream of tab.
func groupStream(t testing.TB, tab *Table) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteTable(&b, tab, Arrow, 2, memory.NewGoAllocator()); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// cloudLike is a stream with a cloud's kind and log_p columns: particle
// rows (whose log_p is not a group's) around three group rows.
func cloudLike(sizes string) *Table {
	nan := math.NaN()
	return &Table{Meta: map[string]string{KeySchema: "gpc.cloud/3", KeyGroupSizes: sizes}, Cols: []Column{
		{Name: "kind", Str: []string{"train", "particle", "group", "particle", "group", "group", "test"}},
		{Name: "log_p", Float: []float64{nan, nan, -3.5, nan, -3.25, math.Inf(-1), nan}},
	}}
}

// TestReadGroupEstimates: the group rows' estimates in order, else the
// metadata's, with the group sizes; the streams that hold none, a part or
// a bad value refused as data errors.
func TestReadGroupEstimates(t *testing.T) {
	ge, err := ReadGroupEstimates(bytes.NewReader(groupStream(t, cloudLike("4,4,3"))), "cloud")
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{-3.5, -3.25, math.Inf(-1)}; !slices.Equal(ge.LogZ, want) || !slices.Equal(ge.Sizes, []int{4, 4, 3}) {
		t.Errorf("group rows: %v of %v, want %v of [4 4 3]", ge.LogZ, ge.Sizes, want)
	}
	post := &Table{Meta: map[string]string{KeySchema: SchemaPosterior, KeyGroupLogP: "-1.5,-2", KeyGroupSizes: "5,6"},
		Cols: []Column{{Name: "p", Float: []float64{0.5}}}}
	ge, err = ReadGroupEstimates(bytes.NewReader(groupStream(t, post)), "post")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ge.LogZ, []float64{-1.5, -2}) || !slices.Equal(ge.Sizes, []int{5, 6}) || ge.Meta[KeySchema] != SchemaPosterior {
		t.Errorf("metadata: %v of %v (%v)", ge.LogZ, ge.Sizes, ge.Meta)
	}
	whole := groupStream(t, cloudLike("4,4,3"))
	for _, c := range []struct {
		name, want string
		data       []byte
	}{
		{"a shard's part", "3 group estimates where metadata gpc:group_sizes gives 4 groups (a shard holds a range of the groups", groupStream(t, cloudLike("2,2,2,2"))},
		{"no sizes", "metadata gpc:group_sizes is missing", groupStream(t, &Table{Meta: map[string]string{KeyGroupLogP: "-1"}, Cols: []Column{{Name: "p", Float: []float64{1}}}})},
		{"a size of 0", "group 1 has 0 particles", groupStream(t, cloudLike("4,0,3"))},
		{"no groups", "no particle groups' estimates", groupStream(t, &Table{Meta: map[string]string{KeyGroupSizes: "3"}, Cols: []Column{{Name: "p", Float: []float64{1}}}})},
		{"NaN in the metadata", "is not a log probability", groupStream(t, &Table{Meta: map[string]string{KeyGroupLogP: "-1,NaN", KeyGroupSizes: "3,3"}, Cols: []Column{{Name: "p", Float: []float64{1}}}})},
		{"a cut stream", "cut short", whole[:len(whole)-8]},
		{"empty", "empty input", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadGroupEstimates(bytes.NewReader(c.data), "in")
			var de *DataError
			if !errors.As(err, &de) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want a data error with %q", err, c.want)
			}
		})
	}
}

// FuzzReadGroupEstimates: any bytes read by gpc-show --summary's reader
// either fail with an error or give as many group estimates as sizes,
// none NaN, every size positive.
func FuzzReadGroupEstimates(f *testing.F) {
	f.Add(groupStream(f, cloudLike("4,4,3")))
	f.Add(groupStream(f, &Table{Meta: map[string]string{KeyGroupLogP: "-1.5,-2", KeyGroupSizes: "5,6"}, Cols: []Column{{Name: "p", Float: []float64{0.5}}}}))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > fuzzMax {
			return
		}
		defer watchdog()()
		ge, err := ReadGroupEstimates(bytes.NewReader(data), "fuzz")
		if err != nil {
			return
		}
		if len(ge.LogZ) != len(ge.Sizes) {
			t.Fatalf("%d estimates, %d sizes", len(ge.LogZ), len(ge.Sizes))
		}
		for g := range ge.LogZ {
			if math.IsNaN(ge.LogZ[g]) || ge.Sizes[g] < 1 {
				t.Fatalf("group %d: %v of %d", g, ge.LogZ[g], ge.Sizes[g])
			}
		}
	})
}
