package format

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"

	"github.com/gpc-mc/gpc/core/vecchia"
)

// The multi-class Vecchia stream: a Vecchia stream (gpc.vecchia/1) whose
// metadata names its classes (KeyClasses), the multinomial probit's C
// latent processes under one Vecchia prior shared by the classes
// (vecchia.Multiclass with one kernel). Its rows are the two-class
// stream's: the conditioning sets, coefficients and conditional
// variances, which every class shares; a training row's y is its class's
// index (0..C-1) and its bounds are 0 and +Inf (the label is y, not an
// orthant). A test row stands for its point's C classes: gpc-train's
// cloud of it (gpc.vecchia-cloud/1 with KeyClasses) has C rows per test
// point, point p's class c at row p C + c, as the dense multi-class
// stream's test rows are laid out.

// VecchiaClassesStream returns the multi-class Vecchia stream of m, which
// must have one set of conditionals (a kernel shared by the classes):
// the model's rows as Model's (m.ClassModel(0)), the training rows'
// labels as y, and rows, ids and meta (without KeyClasses, which it sets
// from names) as a VecchiaStream's. The test rows' labels in y are class
// indices or NaN.
func VecchiaClassesStream(m *vecchia.Multiclass, names []string, rows []int, ids []string, y []float64, meta map[string]string) (*VecchiaStream, error) {
	if !m.Shared() {
		return nil, fmt.Errorf("format: a multi-class Vecchia stream holds one kernel shared by the classes, not %d", len(m.Coef))
	}
	if len(names) != m.C {
		return nil, fmt.Errorf("format: %d class names for %d classes", len(names), m.C)
	}
	meta[KeyClasses] = JoinClasses(names)
	return &VecchiaStream{Model: m.ClassModel(0), Row: rows, ID: ids, Y: y, Meta: meta}, nil
}

// VecchiaClassesFingerprint identifies a multi-class Vecchia model's
// training part: VecchiaFingerprint's with its classes and training
// labels.
func VecchiaClassesFingerprint(m *vecchia.Model, classes string, y []float64) string {
	h := sha256.New()
	h.Write([]byte(VecchiaFingerprint(m)))
	h.Write([]byte(classes))
	var b [8]byte
	for _, v := range y[:m.N] {
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(v))
		h.Write(b[:])
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// Classes returns the class names of a multi-class Vecchia stream, or nil
// for a two-class one.
func (s *VecchiaStream) Classes(name string) ([]string, error) {
	v, ok := s.Meta[KeyClasses]
	if !ok {
		return nil, nil
	}
	names, err := SplitClasses(v)
	if err != nil {
		return nil, dataErrorf(name, "%v", err)
	}
	return names, nil
}

// Multiclass returns the multi-class model of a Vecchia stream whose
// metadata names its classes (Classes): every training row's y must be
// a class index and its bounds 0 and +Inf, the test rows' y a class index
// or none. Errors are *DataError naming the row.
func (s *VecchiaStream) Multiclass(name string, names []string) (*vecchia.Multiclass, error) {
	md, c := s.Model, len(names)
	m := &vecchia.Multiclass{N: md.N, C: c, Start: md.Start, Nbr: md.Nbr, Coef: [][]float64{md.Coef}, CondVar: [][]float64{md.CondVar},
		Noise: md.Noise, Y: make([]int, md.N)}
	for k := range md.N {
		y := s.Y[k]
		if math.IsNaN(y) || y != math.Trunc(y) || y < 0 || y >= float64(c) {
			return nil, dataErrorf(name, "training row %d: y = %v is not a class index (0 to %d) of the %d classes %s names", k, y, c-1, c, KeyClasses)
		}
		if md.Lower[k] != 0 || !math.IsInf(md.Upper[k], 1) {
			return nil, dataErrorf(name, "training row %d: bounds [%v, %v] where a multi-class Vecchia model's are [0, +Inf)", k, md.Lower[k], md.Upper[k])
		}
		m.Y[k] = int(y)
	}
	for j := range md.T {
		if y := s.Y[md.N+j]; !math.IsNaN(y) && (y != math.Trunc(y) || y < 0 || y >= float64(c)) {
			return nil, dataErrorf(name, "test row %d: y = %v is not a class index (0 to %d) of the %d classes %s names", j, y, c-1, c, KeyClasses)
		}
	}
	if md.T > 0 {
		m.T, m.TStart, m.TNbr = md.T, md.TStart, md.TNbr
		m.TCoef, m.TCondVar = [][]float64{md.TCoef}, [][]float64{md.TCondVar}
	}
	if err := m.Validate(); err != nil {
		return nil, dataErrorf(name, "%v", err)
	}
	return m, nil
}
