package format

import "math"

// Schema names of gpc-tune's and gpc-mcmc's tables.
const (
	SchemaTune      = "gpc.tune/1"
	SchemaMCMC      = "gpc.mcmc/1"
	SchemaPosterior = "gpc.posteriors/1"
)

// Tune stages: the value of the stage column of a gpc.tune/1 table.
const (
	StageGrid    = "grid"    // the explore pass over the grid, small M
	StageExploit = "exploit" // the best grid points again, larger M
	StageOptimum = "optimum" // the refined maximum
)

// TuneRow is one row of a gpc.tune/1 table: one estimate of the log
// marginal likelihood at one setting of the hyperparameters.
type TuneRow struct {
	Stage string
	// Point is the grid point's index (the last axis varies fastest), or
	// -1 for the optimum.
	Point int64
	// Hyper holds every hyperparameter's value, in the table's order.
	Hyper        []float64
	LogML, SELog float64
	// SEDiff holds, per axis, the standard error of the difference of
	// log_ml to the next grid point along that axis (common random
	// numbers); NaN at the end of an axis and off the grid stage.
	SEDiff []float64
	// MCSE and Width hold, per axis, the optimum's Monte Carlo standard
	// error and the likelihood's width in the log of the hyperparameter;
	// NaN off the optimum stage.
	MCSE, Width []float64
	Samples     int64
}

// TuneTable builds gpc-tune's output (schema gpc.tune/1), one row per
// estimate:
//
//	stage          utf8: grid, exploit or optimum
//	point          int64: the grid point (last axis fastest), -1 for the optimum
//	<hyper>...     float64: each hyperparameter's value (hyper names the columns)
//	log_ml         float64: the log marginal likelihood estimate
//	se_log_ml      float64: its standard error
//	se_diff_<a>... float64: per axis a, the standard error of the difference
//	               of log_ml to the next grid point along a
//	samples        int64: the particle count of the estimate
//	mc_se_log_<a>  float64: per axis, the optimum's Monte Carlo standard error in log a
//	width_log_<a>  float64: per axis, the width of the likelihood's peak in log a
//
// meta is the schema metadata; gpc:schema and gpc:tool are set here.
func TuneTable(hyper, axes []string, rows []TuneRow, meta map[string]string) *Table {
	t := &Table{Meta: meta}
	if t.Meta == nil {
		t.Meta = map[string]string{}
	}
	t.Meta[KeySchema] = SchemaTune
	t.Meta[KeyTool] = "gpc-tune"
	n := len(rows)
	stage := Column{Name: "stage", Str: make([]string, n)}
	point := Column{Name: "point", Int: make([]int64, n)}
	hcols := make([]Column, len(hyper))
	for j, h := range hyper {
		hcols[j] = Column{Name: h, Float: make([]float64, n)}
	}
	lml := Column{Name: "log_ml", Float: make([]float64, n)}
	se := Column{Name: "se_log_ml", Float: make([]float64, n)}
	perAxis := func(prefix string) []Column {
		c := make([]Column, len(axes))
		for j, a := range axes {
			c[j] = Column{Name: prefix + a, Float: make([]float64, n)}
		}
		return c
	}
	sed, mcse, width := perAxis("se_diff_"), perAxis("mc_se_log_"), perAxis("width_log_")
	samples := Column{Name: "samples", Int: make([]int64, n)}
	at := func(s []float64, j int) float64 {
		if s == nil {
			return math.NaN()
		}
		return s[j]
	}
	for i, r := range rows {
		stage.Str[i], point.Int[i] = r.Stage, r.Point
		for j := range hcols {
			hcols[j].Float[i] = r.Hyper[j]
		}
		lml.Float[i], se.Float[i], samples.Int[i] = r.LogML, r.SELog, r.Samples
		for j := range axes {
			sed[j].Float[i] = at(r.SEDiff, j)
			mcse[j].Float[i] = at(r.MCSE, j)
			width[j].Float[i] = at(r.Width, j)
		}
	}
	t.Cols = append(t.Cols, stage, point)
	t.Cols = append(t.Cols, hcols...)
	t.Cols = append(t.Cols, lml, se)
	t.Cols = append(t.Cols, sed...)
	t.Cols = append(t.Cols, samples)
	t.Cols = append(t.Cols, mcse...)
	t.Cols = append(t.Cols, width...)
	return t
}
