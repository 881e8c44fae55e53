package vecchia

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/gp"
)

// fuzzTable decodes a fuzzer's bytes into a feature table whose rows
// repeat often: table[0] picks the features (1 to 3), table[1] the test
// rows (0 to 5, the table's last rows); then each row is a byte of flags
// and d feature bytes. Flag bit 0 is the label; with bit 1 set the row
// copies the features of an earlier row (training or test), chosen by the
// flags' other bits, and its feature bytes are not read; otherwise each
// feature is one of 8 levels, (b mod 8)/2 - 2, so that rows also coincide
// by chance. At most 150 training rows.
func fuzzTable(table []byte) (x []float64, d int, y, tx []float64, ok bool) {
	if len(table) < 2 {
		return nil, 0, nil, nil, false
	}
	d = 1 + int(table[0]%3)
	tests := int(table[1] % 6)
	var rows [][]float64
	var labels []float64
	for p := 2; p < len(table) && len(rows) < 150+tests; {
		flags := table[p]
		p++
		lab := 1.0
		if flags&1 == 0 {
			lab = -1
		}
		if flags&2 != 0 && len(rows) > 0 {
			rows = append(rows, slices.Clone(rows[int(flags>>2)%len(rows)]))
			labels = append(labels, lab)
			continue
		}
		if p+d > len(table) {
			break
		}
		row := make([]float64, d)
		for j := range d {
			row[j] = float64(table[p+j]%8)/2 - 2
		}
		p += d
		rows = append(rows, row)
		labels = append(labels, lab)
	}
	n := len(rows) - tests
	if n < 1 {
		return nil, 0, nil, nil, false
	}
	for i, r := range rows {
		if i < n {
			x = append(x, r...)
			y = append(y, labels[i])
		} else {
			tx = append(tx, r...)
		}
	}
	return x, d, y, tx, true
}

// FuzzRepeats builds Vecchia classifiers from feature tables with repeated
// rows, and test rows that repeat training rows and each other (fuzzTable),
// under an RBF kernel (alpha 0.25 to 4, beta 0.5 to 20), 1 to 20
// neighbours and either order, and checks that nothing panics, the model
// is valid, the preparation succeeds, a short estimate is a finite log
// probability with finite posteriors in [0, 1], and test rows with the same
// features get the same posterior. The seed corpus is in
// testdata/fuzz/FuzzRepeats.
func FuzzRepeats(f *testing.F) {
	f.Fuzz(func(t *testing.T, table []byte, mb uint8, given bool, ab, bb uint8) {
		x, d, y, tx, ok := fuzzTable(table)
		if !ok {
			return
		}
		n, tn := len(y), len(tx)/d
		opt := Options{M: 1 + int(mb%20), Threads: 1}
		if given {
			opt.Order = OrderGiven
		}
		s, err := NewStructure(x, n, d, opt)
		if err != nil {
			t.Fatalf("NewStructure: %v", err)
		}
		k := &gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{0.25 + float64(ab%16)/4}, Beta: 0.5 + float64(bb%40)/2}
		m, err := NewClassifier(s, k, x, y, DefaultNugget, tx, s.TestNeighbours(tx, tn, opt.M, 1), 1)
		if err != nil {
			t.Fatalf("NewClassifier: %v", err)
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("Validate: %v", err)
		}
		p, err := Prepare(context.Background(), m, nil)
		if err != nil {
			t.Fatalf("Prepare: %v", err)
		}
		res, post := vecchiaPosteriors(t, p, core.Config{Samples: 256, Seed: 1, Threads: 1})
		if math.IsNaN(res.LogP) || math.IsInf(res.LogP, 0) || res.LogP > 0 {
			t.Fatalf("log P %v (SE %v)", res.LogP, res.SE)
		}
		for j, q := range post {
			if !(q.P >= 0 && q.P <= 1) || math.IsNaN(q.SE) {
				t.Fatalf("test row %d: posterior %v (SE %v)", j, q.P, q.SE)
			}
			for i := range j {
				if slices.Equal(tx[i*d:i*d+d], tx[j*d:j*d+d]) && post[i] != q {
					t.Fatalf("test rows %d and %d have the same features and posteriors %v and %v", i, j, post[i], q)
				}
			}
		}
	})
}
