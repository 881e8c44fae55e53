package cli

// gpc-kernel's covariance stream of more than two classes: the
// multinomial probit model (core/gp's Multiclass).

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpc-mc/gpc/core/gp"
	"github.com/gpc-mc/gpc/format"
)

// runClasses writes the multi-class covariance stream (format.KeyClasses):
// the N (C - 1) class differences of the training points, then C rows per
// test point.
func (c *kernelCmd) runClasses(e *env, train, test *features, labels *labelMap, k *gp.Kernel, meta map[string]string, mem format.Allocator) error {
	d, nc := len(train.names), len(labels.classes)
	y := make([]int, train.rows)
	for i, v := range train.y {
		y[i] = int(v)
	}
	kernels := c.hyperKernels
	if kernels == nil {
		var err error
		if kernels, err = c.classKernels(k, labels.classes, d, false, meta); err != nil {
			return err
		}
	} else {
		classMeta(kernels, meta)
	}
	m := &gp.Multiclass{X: train.x, D: d, Y: y, C: nc, Kernels: kernels}
	n := m.Vars()
	if avail, ok := availableMemory(); ok {
		if need := 8 * float64(n) * float64(n); need > float64(avail) {
			return &dataError{fmt.Sprintf("%s: %d training rows of %d classes make %d class differences, a %d x %d covariance of about %s, and only %s of memory is available", c.Train, train.rows, nc, n, n, n, format.Bytes(need), format.Bytes(float64(avail)))}
		}
	}
	delete(meta, format.KeyLabelPositive)
	delete(meta, format.KeyLabelNegative)
	meta[format.KeyClasses] = format.JoinClasses(labels.classes)
	meta["gpc:train_points"] = strconv.Itoa(train.rows)
	ones := make([]float64, n)
	for i := range ones {
		ones[i] = 1
	}
	cov := &format.Covariance{N: n, Cov: m.Cov(), Y: ones}
	if train.id != nil {
		cov.ID = make([]string, n)
		for i := range n {
			cov.ID[i] = train.id[i/(nc-1)]
		}
	}
	meta[format.KeyFingerprint] = format.Fingerprint(cov.Cov)
	tests := 0
	if test != nil {
		tests = test.rows * nc
	}
	// Test rows lo..hi: point p's class c at row p C + c.
	rows := func(lo, hi int) *format.TestRows {
		t := &format.TestRows{Cov: make([]float64, (hi-lo)*n), Var: make([]float64, hi-lo)}
		if test.id != nil {
			t.ID = make([]string, hi-lo)
		}
		if test.y != nil {
			t.Y = make([]float64, hi-lo)
		}
		pc, pv := make([]float64, nc*n), make([]float64, nc)
		for p := lo / nc; p*nc < hi; p++ {
			m.TestRows(pc, pv, test.x[p*d:p*d+d])
			for cl := range nc {
				r := p*nc + cl
				if r < lo || r >= hi {
					continue
				}
				copy(t.Cov[(r-lo)*n:(r-lo+1)*n], pc[cl*n:(cl+1)*n])
				t.Var[r-lo] = pv[cl]
				if t.ID != nil {
					t.ID[r-lo] = test.id[p]
				}
				if t.Y != nil {
					t.Y[r-lo] = test.y[p]
				}
			}
		}
		return t
	}
	switch c.outputFormat(e.stdout) {
	case format.Arrow:
		return c.writeStream(e, cov, rows, meta, tests, mem)
	case format.CSV:
		return c.writeCSV(e.stdout, cov, rows, tests)
	}
	testPoints := 0
	if test != nil {
		testPoints = test.rows
	}
	t := &format.Table{Cols: []format.Column{
		{Name: "n", Int: []int64{int64(n)}},
		{Name: "train_points", Int: []int64{int64(train.rows)}},
		{Name: "test_points", Int: []int64{int64(testPoints)}},
		{Name: "features", Int: []int64{int64(d)}},
		{Name: "kernel", Str: []string{c.Kernel}},
		{Name: "alpha", Str: []string{meta["gpc:alpha"]}},
		{Name: "beta", Float: []float64{k.Beta}},
		{Name: "bias", Float: []float64{k.Bias}},
		{Name: "classes", Str: []string{strings.Join(labels.classes, ",")}},
		{Name: "fingerprint", Str: []string{meta[format.KeyFingerprint]}},
	}}
	return format.WriteTable(e.stdout, t, format.Text, 0, mem)
}

// classMeta records kernels per class (a --hyper table's) in meta:
// gpc:class_alpha (one length scale per class; for ard, each class's list,
// separated by semicolons) and gpc:class_beta.
func classMeta(ks []*gp.Kernel, meta map[string]string) {
	alphas, betas := make([]string, len(ks)), make([]float64, len(ks))
	for i, k := range ks {
		alphas[i], betas[i] = format.JoinFloats(k.Alpha), k.Beta
	}
	if ks[0].Kind != gp.KernelLinear {
		meta["gpc:class_alpha"] = strings.Join(alphas, ";")
	}
	meta["gpc:class_beta"] = format.JoinFloats(betas)
}
