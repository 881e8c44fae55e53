package format

import (
	"fmt"
	"math"
	"strconv"
)

// SchemaHyper is the schema name of gpc-fit's table of hyperparameters.
const SchemaHyper = "gpc.hyper/1"

// HyperRow is one row of a gpc.hyper/1 table: one hyperparameter of a
// fitted kernel.
type HyperRow struct {
	// Name is alpha, beta or bias; Feature, for the ard kernel's alpha,
	// the feature's name ("" otherwise); Class, for a multi-class fit with
	// a kernel per class, the class whose kernel it is ("" for a kernel
	// shared by the classes, and for two classes).
	Name, Feature, Class string
	// Bound is "lower" or "upper" where the fit stopped the
	// hyperparameter on the edge of its box (it ran off toward 0 or
	// infinity), else "".
	Bound string
	Value float64
	// Grad and SEGrad are d log ML / d log Value at the optimum and its
	// standard error; MCSELog the optimum's Monte Carlo standard error in
	// log Value (NaN when not computed); EPValue the EP-evidence optimum's
	// value (NaN when not computed).
	Grad, SEGrad, MCSELog, EPValue float64
}

// HyperFit is what a gpc.hyper/1 table says about the fit as a whole,
// repeated on every row so that a table printed on a terminal shows it.
type HyperFit struct {
	Kernel      string
	Standardize bool
	// LogML and SELogML are the log marginal likelihood at the optimum and
	// its standard error; EPLogZ EP's log evidence at EP's optimum.
	LogML, SELogML, EPLogZ float64
	// LogPrior is the log density of the fit's prior on the
	// log-hyperparameters at the optimum (0 without a prior): LogML +
	// LogPrior is the log posterior that a MAP fit maximizes, up to the
	// evidence.
	LogPrior float64
}

// HyperTable builds gpc-fit's output (schema gpc.hyper/1), one row per
// hyperparameter:
//
//	kernel       utf8: the kernel (gpc-kernel --kernel)
//	name         utf8: alpha, beta or bias
//	feature      utf8: the ard kernel's feature for an alpha, else empty
//	value        float64: the fitted value
//	log_ml       float64: the log marginal likelihood at the fit (every row)
//	se_log_ml    float64: its standard error (every row)
//	grad         float64: d log_ml / d log value at the fit
//	se_grad      float64: its standard error
//	mc_se_log    float64: the fit's Monte Carlo standard error in log value (NaN: not computed)
//	ep_value     float64: the value at the maximum of EP's evidence (NaN: not computed)
//	ep_log_z     float64: EP's log evidence there (every row)
//	standardize  int64: 1 if the features were standardized (gpc-kernel --standardize), else 0
//	log_prior    float64: the prior's log density at the fit, 0 without a prior (every row)
//	class        utf8: the class whose kernel the row is (a multi-class fit with a kernel per class), else empty
//	bound        utf8: lower or upper where the fit stopped the hyperparameter on its box's edge (it ran off), else empty
//
// gpc-kernel --hyper reads it back (ReadHyper), as Arrow or CSV. meta is
// the schema metadata; gpc:schema and gpc:tool are set here.
func HyperTable(fit HyperFit, rows []HyperRow, meta map[string]string) *Table {
	t := &Table{Meta: meta}
	if t.Meta == nil {
		t.Meta = map[string]string{}
	}
	t.Meta[KeySchema] = SchemaHyper
	t.Meta[KeyTool] = "gpc-fit"
	n := len(rows)
	str := func(name string) Column { return Column{Name: name, Str: make([]string, n)} }
	num := func(name string) Column { return Column{Name: name, Float: make([]float64, n)} }
	kernel, name, feature := str("kernel"), str("name"), str("feature")
	value, lml, se, grad, seg, mcse, epv, epz := num("value"), num("log_ml"), num("se_log_ml"), num("grad"), num("se_grad"), num("mc_se_log"), num("ep_value"), num("ep_log_z")
	std := Column{Name: "standardize", Int: make([]int64, n)}
	lpr := num("log_prior")
	class, bound := str("class"), str("bound")
	for i, r := range rows {
		kernel.Str[i], name.Str[i], feature.Str[i] = fit.Kernel, r.Name, r.Feature
		class.Str[i], bound.Str[i] = r.Class, r.Bound
		value.Float[i], grad.Float[i], seg.Float[i], mcse.Float[i], epv.Float[i] = r.Value, r.Grad, r.SEGrad, r.MCSELog, r.EPValue
		lml.Float[i], se.Float[i], epz.Float[i], lpr.Float[i] = fit.LogML, fit.SELogML, fit.EPLogZ, fit.LogPrior
		if fit.Standardize {
			std.Int[i] = 1
		}
	}
	t.Cols = []Column{kernel, name, feature, value, lml, se, grad, seg, mcse, epv, epz, std, lpr, class, bound}
	return t
}

// ReadHyper reads the kernel and hyperparameters of a gpc.hyper/1 table
// from a Frame (ReadFrame: gpc-fit's Arrow output, or the same table as
// CSV): the columns kernel, name, value and, where present, feature, class
// and standardize, and the fit's log_ml, se_log_ml and ep_log_z (NaN where
// absent); other columns are ignored. It returns a *DataError naming
// the row when a column is missing, the kernels differ between rows, a name
// is not alpha, beta or bias, or a value is not a finite number >= 0.
func ReadHyper(f *Frame) (HyperFit, []HyperRow, error) {
	var fit HyperFit
	bad := func(where string, format string, args ...any) error {
		return &DataError{Where: f.Name + where, Err: fmt.Errorf(format, args...)}
	}
	col := func(name string) int { return f.Column(name) }
	ki, ni, vi, fi, si, ci := col("kernel"), col("name"), col("value"), col("feature"), col("standardize"), col("class")
	for _, c := range []struct {
		i    int
		name string
	}{{ki, "kernel"}, {ni, "name"}, {vi, "value"}} {
		if c.i < 0 {
			return fit, nil, bad("", "no column %q: not a table of hyperparameters (gpc-fit's output, schema %s)", c.name, SchemaHyper)
		}
	}
	if f.Rows == 0 {
		return fit, nil, bad("", "no hyperparameters")
	}
	for _, c := range []struct {
		name string
		dst  *float64
	}{{"log_ml", &fit.LogML}, {"se_log_ml", &fit.SELogML}, {"ep_log_z", &fit.EPLogZ}, {"log_prior", &fit.LogPrior}} {
		*c.dst = math.NaN()
		if i := col(c.name); i >= 0 && f.Cols[i].Num != nil {
			*c.dst = f.Cols[i].Num[0]
		}
	}
	rows := make([]HyperRow, f.Rows)
	for r := range f.Rows {
		where := ": " + f.Line(r)
		k := f.Cols[ki].Text[r]
		if r == 0 {
			fit.Kernel = k
		} else if k != fit.Kernel {
			return fit, nil, bad(where, "kernel %q differs from the first row's %q", k, fit.Kernel)
		}
		name := f.Cols[ni].Text[r]
		switch name {
		case "alpha", "beta", "bias":
		default:
			return fit, nil, bad(where, "hyperparameter %q: must be alpha, beta or bias", name)
		}
		text := f.Cols[vi].Text[r]
		v, err := strconv.ParseFloat(text, 64)
		if f.Cols[vi].Num != nil {
			v, err = f.Cols[vi].Num[r], nil
		}
		if err != nil || !(v >= 0) || math.IsInf(v, 1) {
			return fit, nil, bad(where, "%s value %q: must be a finite number >= 0", name, text)
		}
		rows[r] = HyperRow{Name: name, Value: v}
		if fi >= 0 {
			rows[r].Feature = f.Cols[fi].Text[r]
		}
		if ci >= 0 && !f.Cols[ci].Null[r] {
			rows[r].Class = f.Cols[ci].Text[r]
		}
		if si >= 0 {
			s := f.Cols[si].Text[r]
			switch {
			case s != "0" && s != "1":
				return fit, nil, bad(where, "standardize %q: must be 0 or 1", s)
			case r > 0 && (s == "1") != fit.Standardize:
				return fit, nil, bad(where, "standardize differs from the first row's")
			}
			fit.Standardize = s == "1"
		}
	}
	return fit, rows, nil
}
