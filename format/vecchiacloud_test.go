package format

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gpc-mc/gpc/core"
)

// keptCloud writes a Vecchia cloud of n training rows, one test row and
// two groups that keep the paths given (n x k by variable, k their
// weights' length), announcing kept in gpc:kept_paths.
func keptCloud(t *testing.T, n int, kept string, paths [][]float32, w [][]float64) []byte {
	t.Helper()
	meta := map[string]string{KeySchema: SchemaVecchiaCloud, KeyTests: "1", KeyN: strconv.Itoa(n), KeyKeptPaths: kept}
	var b bytes.Buffer
	mem := NewAllocator()
	cw, err := NewVecchiaCloudWriter(&b, meta, []int{7}, nil, []float64{1}, 16, mem)
	if err != nil {
		t.Fatal(err)
	}
	for g := range paths {
		if err := cw.WriteGroup(g, core.GroupResult{LogZ: -1, MinESS: 0.5, DeadAt: -1}, []float64{0.25}); err != nil {
			t.Fatal(err)
		}
		if len(w[g]) > 0 {
			if err := cw.WritePaths(g, n, paths[g], w[g]); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := cw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestVecchiaCloudPaths writes and reads a cloud's kept paths: they come
// back as written, in path rows of 4 MiB (a group of 500000 paths takes
// three rows for its 5 variables); the reader without paths checks them
// and keeps none; a weights row of the wrong length is refused.
func TestVecchiaCloudPaths(t *testing.T) {
	const n = 5
	ks := []int{500000, 3}
	var paths [][]float32
	var ws [][]float64
	for g, k := range ks {
		p := make([]float32, n*k)
		for i := range p {
			p[i] = float32(i%1000) + float32(g)/8
		}
		w := make([]float64, k)
		for i := range w {
			w[i] = 1 / float64(k)
		}
		paths, ws = append(paths, p), append(ws, w)
	}
	if got := VecchiaPathRows(n, ks[0]); got != 1+3 {
		t.Fatalf("VecchiaPathRows(5, 500000) = %d, want 4 (weights and three path rows)", got)
	}
	data := keptCloud(t, n, "500000,3", paths, ws)
	c, err := ReadVecchiaCloudPaths(bytes.NewReader(data), "cloud", NewAllocator(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Kept, ks) || c.N != n || len(c.Groups) != 2 {
		t.Fatalf("kept %v of %d values, %d groups", c.Kept, c.N, len(c.Groups))
	}
	for g := range ks {
		if !slices.Equal(c.Groups[g].Paths, paths[g]) || !slices.Equal(c.Groups[g].PathW, ws[g]) {
			t.Errorf("group %d: the paths or weights read are not those written", g)
		}
	}
	lean, err := ReadVecchiaCloudHead(bytes.NewReader(data), "cloud", false, NewAllocator(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if lean.Groups[0].Paths != nil || lean.Groups[0].P[0] != 0.25 {
		t.Errorf("the reader without paths kept them, or lost the posteriors")
	}
	bad := keptCloud(t, n, "500000,4", paths, ws)
	if _, err := ReadVecchiaCloudPaths(bytes.NewReader(bad), "cloud", NewAllocator(), nil); err == nil || !strings.Contains(err.Error(), "has 3 path weights where gpc:kept_paths announces 4") {
		t.Errorf("a group with 3 weights where 4 are announced: %v", err)
	}
}

// TestVecchiaCloudAnnouncedCounts: a Vecchia cloud whose metadata
// announces more than it holds (2^24 test rows and two of them; kept paths
// of 2^24 variables and five) fails on the count, with a data error,
// without reserving memory for what was announced (it did: 256 and 192
// MB, and Go's fatal out of memory for counts of 10^12).
func TestVecchiaCloudAnnouncedCounts(t *testing.T) {
	var ids bytes.Buffer
	cw, err := NewVecchiaCloudWriter(&ids, map[string]string{KeySchema: SchemaVecchiaCloud, KeyTests: "2"}, []int{0, 1}, []string{"a", "b"}, []float64{1, 0}, 1, NewAllocator())
	if err != nil {
		t.Fatal(err)
	}
	if err := cw.WriteGroup(0, core.GroupResult{LogZ: -1, MinESS: 1, DeadAt: -1}, []float64{0.5, 0.5}); err != nil {
		t.Fatal(err)
	}
	if err := cw.Close(); err != nil {
		t.Fatal(err)
	}
	tests := rewriteMeta(t, ids.Bytes(), func(m map[string]string) map[string]string {
		m[KeyTests] = "16777216"
		return m
	})
	paths := rewriteMeta(t, keptCloud(t, 5, "3", [][]float32{make([]float32, 15)}, [][]float64{{0.5, 0.25, 0.25}}), func(m map[string]string) map[string]string {
		m[KeyN] = "16777216"
		return m
	})
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"test rows", tests, "group 0 has 2 test posteriors where the metadata announces 16777216 test rows"},
		{"kept paths", paths, "group 0's kept paths end before their 16777216 variables"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkBounded(t, tc.data, tc.want, func(data []byte) error {
				_, err := ReadVecchiaCloudPaths(bytes.NewReader(data), "cloud", NewAllocator(), nil)
				return err
			})
		})
	}
}
