package cli

// The data the feature tools read (gpc-kernel, gpc-fit, gpc-tune,
// gpc-mcmc): the training and test features and labels (readFrame,
// extract), their standardization, and the label maps of two classes
// (newLabelMap) and of more (newClassMap).

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/gpc-mc/gpc/core/gp"
	"github.com/gpc-mc/gpc/format"
)

// features is a feature matrix with its labels and identifiers.
type features struct {
	x     []float64 // rows x d, row-major
	rows  int
	names []string
	y     []float64 // nil if there is no label column (test)
	id    []string  // nil without --id, or when this file has no such column
	// source and columns name the file and its columns, for messages.
	source  string
	columns []string
}

// checkID checks that --id names a column of the training file or of the
// test file (test is nil without one): the identifiers belong to whichever
// file has them, and the rows of a file without them are numbered.
func (c *dataFlags) checkID(train, test *features) error {
	if c.ID == "" || train.id != nil || (test != nil && test.id != nil) {
		return nil
	}
	if test == nil {
		return &dataError{fmt.Sprintf("%s: no column %q (--id); the columns are %s", train.source, c.ID, strings.Join(train.columns, ", "))}
	}
	return &dataError{fmt.Sprintf("no column %q (--id) in the training file %s (its columns are %s) nor in the test file %s (%s)", c.ID, train.source, strings.Join(train.columns, ", "), test.source, strings.Join(test.columns, ", "))}
}

func (c *dataFlags) readFrame(path string, e *env) (*format.Frame, error) {
	var r io.Reader = e.stdin
	name := "stdin"
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, &format.IOError{Op: "open input", Err: err}
		}
		defer f.Close()
		r, name = f, path
	}
	schema, r, err := format.Sniff(r, name)
	if err != nil {
		return nil, err
	}
	if schema != "" && schema != format.SchemaHyper {
		return nil, &dataError{fmt.Sprintf("%s: a %s stream, not features: give the features it was made from (CSV, Parquet or Arrow columns)", name, schema)}
	}
	return format.ReadFrameLimit(r, name, format.NewAllocator(), memoryBudget())
}

// extract picks the features, labels and identifiers out of a frame. With
// names nil (the training file) every column but the label and id is a
// feature; otherwise the frame must have exactly those feature columns.
func (c *dataFlags) extract(f *format.Frame, names []string, labels *labelMap, train bool) (*features, error) {
	out := &features{rows: f.Rows, source: f.Name, columns: f.Names}
	lab, id := f.Column(c.Label), -1
	if c.ID != "" {
		id = f.Column(c.ID) // the file may lack it: checkID
	}
	if lab < 0 && train {
		return nil, &dataError{fmt.Sprintf("%s: no label column %q (--label); the columns are %s", f.Name, c.Label, strings.Join(f.Names, ", "))}
	}
	var cols []int
	if names == nil {
		for i, nm := range f.Names {
			if i != lab && i != id {
				cols = append(cols, i)
				out.names = append(out.names, nm)
			}
		}
		if len(cols) == 0 {
			return nil, &dataError{fmt.Sprintf("%s: no feature columns besides the label", f.Name)}
		}
	} else {
		for _, nm := range names {
			i := f.Column(nm)
			if i < 0 {
				return nil, &dataError{fmt.Sprintf("%s: no column %q, which the training file has as a feature", f.Name, nm)}
			}
			cols = append(cols, i)
		}
		for i, nm := range f.Names {
			if i != lab && i != id && !contains(names, nm) {
				return nil, &dataError{fmt.Sprintf("%s: column %q is not among the training file's features (%s)", f.Name, nm, strings.Join(names, ", "))}
			}
		}
		out.names = names
	}
	d := len(cols)
	out.x = make([]float64, f.Rows*d)
	for j, ci := range cols {
		col := &f.Cols[ci]
		if col.Num == nil {
			r := firstNonNumber(col)
			return nil, &dataError{fmt.Sprintf("%s: value %q is not a number; features must be numeric (use --id for an identifier column)", f.Describe(r, ci), col.Text[r])}
		}
		for r, v := range col.Num {
			if col.Null[r] || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, &dataError{fmt.Sprintf("%s: feature value %q; features must be finite numbers", f.Describe(r, ci), col.Text[r])}
			}
			out.x[r*d+j] = v
		}
	}
	if lab >= 0 {
		y, err := labels.apply(f, lab, !train)
		if err != nil {
			return nil, err
		}
		out.y = y
	}
	if id >= 0 {
		out.id = f.Cols[id].Text
	}
	return out, nil
}

func firstNonNumber(c *format.FrameColumn) int {
	for r, s := range c.Text {
		if _, err := strconv.ParseFloat(s, 64); err != nil && !c.Null[r] {
			return r
		}
	}
	return 0
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// standardize centres and scales train's and test's features by the
// training mean and standard deviation (a constant feature is only
// centred), and returns them.
func standardize(train, test *features) (mean, sd []float64) {
	d := len(train.names)
	mean, sd = make([]float64, d), make([]float64, d)
	n := float64(train.rows)
	for j := range d {
		for r := range train.rows {
			mean[j] += train.x[r*d+j]
		}
		mean[j] /= n
		for r := range train.rows {
			dv := train.x[r*d+j] - mean[j]
			sd[j] += dv * dv
		}
		if train.rows > 1 {
			sd[j] = math.Sqrt(sd[j] / (n - 1))
		} else {
			sd[j] = 0
		}
	}
	for _, f := range []*features{train, test} {
		if f == nil {
			continue
		}
		for r := range f.rows {
			for j := range d {
				s := sd[j]
				if s == 0 {
					s = 1
				}
				f.x[r*d+j] = (f.x[r*d+j] - mean[j]) / s
			}
		}
	}
	return mean, sd
}

// labelMap maps label values to +1 and -1, or, for more than two
// classes, to the class indices 0..C-1.
type labelMap struct {
	pos, neg string // the values' text, as the metadata records them
	numeric  bool   // +-1 or 0/1 numbers, compared as numbers
	posNum   float64
	negNum   float64
	// classes are the class names of a multi-class label (nil for two
	// classes), in class order; classNum their values when the column is
	// numeric (compared as numbers).
	classes  []string
	classNum []float64
}

// newLabelMap works out the label mapping from the training labels:
// +1/-1 and 1/0 numbers map themselves; otherwise two values, one of
// which positive names; more than two values are the classes of a
// multi-class classifier (newClassMap). One value is an error.
func newLabelMap(f *format.Frame, label, positive string) (*labelMap, error) {
	ci := f.Column(label)
	if ci < 0 {
		return nil, &dataError{fmt.Sprintf("%s: no label column %q (--label); the columns are %s", f.Name, label, strings.Join(f.Names, ", "))}
	}
	col := &f.Cols[ci]
	var distinct []string
	seen := map[string]bool{}
	for r, s := range col.Text {
		if col.Null[r] {
			return nil, &dataError{fmt.Sprintf("%s: the label is missing", f.Describe(r, ci))}
		}
		if !seen[s] && (col.Num == nil || !containsNum(distinct, col.Num[r])) {
			distinct = append(distinct, s)
		}
		seen[s] = true
		if len(distinct) > gp.MaxClasses {
			return nil, &dataError{fmt.Sprintf("%s: label value %q is the %d-th: gpc classifies into at most %d classes (is --label %q the class column?)", f.Describe(r, ci), s, len(distinct), gp.MaxClasses, label)}
		}
	}
	switch {
	case len(distinct) == 1:
		return nil, &dataError{fmt.Sprintf("%s: every training label is %q: a classifier needs at least two classes", f.Name, distinct[0])}
	case len(distinct) > 2 && positive != "":
		return nil, &dataError{fmt.Sprintf("%s: the labels have %d values, %s: --positive chooses between two classes; leave it out for the multi-class classifier", f.Name, len(distinct), quoteList(distinct, 4))}
	case len(distinct) > 2:
		return newClassMap(col, distinct), nil
	}
	m := &labelMap{}
	if positive == "" && col.Num != nil {
		set := map[float64]bool{}
		for _, v := range col.Num {
			set[v] = true
		}
		switch {
		case subset(set, 1, -1):
			m.numeric, m.posNum, m.negNum, m.pos, m.neg = true, 1, -1, "1", "-1"
			return m, nil
		case subset(set, 1, 0):
			m.numeric, m.posNum, m.negNum, m.pos, m.neg = true, 1, 0, "1", "0"
			return m, nil
		}
		for r, v := range col.Num {
			if v != 1 && v != -1 && v != 0 {
				return nil, &dataError{fmt.Sprintf("%s: label %q: numeric labels must be +1/-1 or 1/0; for other values give --positive", f.Describe(r, ci), col.Text[r])}
			}
		}
		return nil, &dataError{fmt.Sprintf("%s: labels mix -1 and 0; they must be +1/-1 or 1/0", f.Name)}
	}
	if positive == "" {
		return nil, &dataError{fmt.Sprintf("%s: the labels are %s; give --positive to say which is the positive class", f.Name, quoteJoin(distinct))}
	}
	if !contains(distinct, positive) && !(col.Num != nil && containsNum(distinct, parseOr(positive))) {
		return nil, &dataError{fmt.Sprintf("%s: --positive %q is not a label value (the values are %s)", f.Name, positive, quoteJoin(distinct))}
	}
	m.pos = positive
	for _, s := range distinct {
		if s != positive && !(col.Num != nil && parseOr(s) == parseOr(positive)) {
			m.neg = s
		}
	}
	if col.Num != nil { // compare numbers as numbers: "1" and "1.0" agree
		m.numeric, m.posNum = true, parseOr(positive)
		m.negNum = math.NaN()
		if m.neg != "" {
			m.negNum = parseOr(m.neg)
		}
	}
	return m, nil
}

func subset(set map[float64]bool, a, b float64) bool {
	for v := range set {
		if v != a && v != b {
			return false
		}
	}
	return true
}

func containsNum(s []string, v float64) bool {
	for _, x := range s {
		if parseOr(x) == v {
			return true
		}
	}
	return false
}

func parseOr(s string) float64 {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return math.NaN()
	}
	return v
}

func quoteJoin(s []string) string {
	q := make([]string, len(s))
	for i, x := range s {
		q[i] = strconv.Quote(x)
	}
	return strings.Join(q, " and ")
}

// apply maps column ci of f to +1/-1; a value that is neither class is an
// error naming it and its row, and so is a missing one unless missing is
// allowed (test rows), when it becomes NaN.
func (m *labelMap) apply(f *format.Frame, ci int, missing bool) ([]float64, error) {
	if m.classes != nil {
		return m.applyClasses(f, ci, missing)
	}
	col := &f.Cols[ci]
	y := make([]float64, f.Rows)
	for r, s := range col.Text {
		switch {
		case col.Null[r] && missing:
			y[r] = math.NaN()
		case col.Null[r]:
			return nil, &dataError{fmt.Sprintf("%s: the label is missing", f.Describe(r, ci))}
		case m.numeric && col.Num != nil && col.Num[r] == m.posNum, !m.numeric && s == m.pos:
			y[r] = 1
		case m.numeric && col.Num != nil && col.Num[r] == m.negNum, !m.numeric && s == m.neg && m.neg != "":
			y[r] = -1
		default:
			return nil, &dataError{fmt.Sprintf("%s: unknown label %q (the classes are %q and %q)", f.Describe(r, ci), s, m.pos, m.neg)}
		}
	}
	return y, nil
}

// text returns the label value of class y.
func (m *labelMap) text(y float64) string {
	if y > 0 {
		return m.pos
	}
	return m.neg
}

// readTrainingClasses reads and labels the training features as gpc-kernel
// does, two classes or more, and returns their label mapping and metadata
// (for three or more classes, label indices 0..C-1 in train.y).
func (c *dataFlags) readTrainingClasses(e *env) (*features, *labelMap, map[string]string, error) {
	label, positive := c.Label, c.Positive
	frame, err := c.readFrame(c.Train, e)
	if err != nil {
		return nil, nil, nil, err
	}
	labels, err := newLabelMap(frame, label, positive)
	if err != nil {
		return nil, nil, nil, err
	}
	train, err := c.extract(frame, nil, labels, true)
	if err != nil {
		return nil, nil, nil, err
	}
	if train.rows == 0 {
		return nil, nil, nil, &dataError{fmt.Sprintf("%s: no training rows", frame.Name)}
	}
	meta := map[string]string{
		"gpc:features":          strings.Join(train.names, ","),
		"gpc:label":             label,
		format.KeyLabelPositive: labels.pos,
		format.KeyLabelNegative: labels.neg,
	}
	if labels.classes != nil {
		delete(meta, format.KeyLabelPositive)
		delete(meta, format.KeyLabelNegative)
		meta[format.KeyClasses] = format.JoinClasses(labels.classes)
	}
	return train, labels, meta, nil
}

// newClassMap maps the distinct label values of col to class indices:
// numbers in increasing order when the column is numeric, else text in
// byte order.
func newClassMap(col *format.FrameColumn, distinct []string) *labelMap {
	m := &labelMap{classes: slices.Clone(distinct)}
	if col.Num != nil {
		slices.SortFunc(m.classes, func(a, b string) int { return cmp.Compare(parseOr(a), parseOr(b)) })
		for _, s := range m.classes {
			m.classNum = append(m.classNum, parseOr(s))
		}
	} else {
		slices.Sort(m.classes)
	}
	return m
}

// applyClasses maps column ci of f to class indices, as apply does.
func (m *labelMap) applyClasses(f *format.Frame, ci int, missing bool) ([]float64, error) {
	col := &f.Cols[ci]
	index := make(map[string]int, len(m.classes))
	for i, s := range m.classes {
		index[s] = i
	}
	y := make([]float64, f.Rows)
	for r, s := range col.Text {
		if col.Null[r] {
			if !missing {
				return nil, &dataError{fmt.Sprintf("%s: the label is missing", f.Describe(r, ci))}
			}
			y[r] = math.NaN()
			continue
		}
		i, ok := index[s]
		if !ok && m.classNum != nil && col.Num != nil {
			i = slices.Index(m.classNum, col.Num[r])
			ok = i >= 0
		}
		if !ok {
			return nil, &dataError{fmt.Sprintf("%s: unknown label %q: the training labels have %d classes, %s", f.Describe(r, ci), s, len(m.classes), quoteList(m.classes, 6))}
		}
		y[r] = float64(i)
	}
	return y, nil
}

// quoteList quotes the first max values of s, and says how many more.
func quoteList(s []string, max int) string {
	q := make([]string, 0, max)
	for i, x := range s {
		if i == max {
			return strings.Join(q, ", ") + fmt.Sprintf(" and %d more", len(s)-max)
		}
		q = append(q, strconv.Quote(x))
	}
	return strings.Join(q, ", ")
}

// readTraining is readTrainingClasses for the tools that handle two
// classes (gpc-mcmc): more are refused.
func (c *dataFlags) readTraining(e *env) (*features, *labelMap, map[string]string, error) {
	train, labels, meta, err := c.readTrainingClasses(e)
	if err == nil && labels.classes != nil {
		return nil, nil, nil, &dataError{fmt.Sprintf("%s: the labels have %d classes, %s: this tool handles two (gpc-kernel, gpc-train, gpc-predict, gpc-fit and gpc-tune handle more)", train.source, len(labels.classes), quoteList(labels.classes, 4))}
	}
	return train, labels, meta, err
}

// standardizeMeta standardizes train and test (if not nil) by the
// training means and standard deviations, recorded in meta.
func standardizeMeta(train, test *features, meta map[string]string) {
	mean, sd := standardize(train, test)
	meta["gpc:standardize"] = "true"
	meta["gpc:feature_mean"] = format.JoinFloats(mean)
	meta["gpc:feature_sd"] = format.JoinFloats(sd)
}
