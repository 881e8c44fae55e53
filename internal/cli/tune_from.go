package cli

// gpc-tune --from GRID: the grid stage's estimates read from a grid that
// gpc-tune wrote (unsharded, or merged by gpc-merge from the shards of
// --shard), then the exploit and optimum stages, as the unsharded run does
// them: a sharded grid ends with the unsharded run's output, byte for byte.

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/format"
)

// gridFrom reads --from's grid of n points and checks that it is this
// run's: gpc-tune's table, want's metadata (this run's, but for
// gpc:exploit_samples, which the grid stage does not use), the grid
// stage's rows in order with this run's hyperparameters (hyper(i)) and
// --samples; and, computed again, its best point's estimate bit for bit
// (estimate(i)), which the training data and every flag that changes the
// grid decide. It fills results with the grid's estimates (nil where the
// grid has none) and returns the grid's rows.
func (c *tuneCmd) gridFrom(e *env, want map[string]string, names, axes []string, n int, hyper func(int) []float64,
	estimate func(int) (core.Result, error), results []*core.Result) ([]format.TuneRow, error) {
	r, name, closeIn, err := openInput(c.From, e.stdin)
	if err != nil {
		return nil, err
	}
	defer closeIn()
	t, err := format.ReadTable(r, name, format.NewAllocator())
	if err != nil {
		return nil, err
	}
	other := func(what string, args ...any) error {
		return &dataError{fmt.Sprintf("--from %s: %s: not this run's grid (the same training data, kernel, grid, --samples, --seed and estimator flags)", name, fmt.Sprintf(what, args...))}
	}
	if s := t.Meta[format.KeySchema]; s != format.SchemaTune {
		return nil, &dataError{fmt.Sprintf("--from %s: gpc:schema %q: not a gpc-tune grid (%s; gpc-merge joins a sharded grid into one)", name, s, format.SchemaTune)}
	}
	// The short values first: a different --seed or --samples is named
	// before the pilots' results or the variable order it changed.
	keys := slices.SortedFunc(maps.Keys(want), func(a, b string) int {
		return cmp.Or(cmp.Compare(len(want[a]), len(want[b])), cmp.Compare(a, b))
	})
	for _, key := range keys {
		if key != "gpc:exploit_samples" && t.Meta[key] != want[key] {
			return nil, other("metadata %s is %q, this run's %q", key, t.Meta[key], want[key])
		}
	}
	proto := format.TuneTable(names, axes, nil, nil)
	if len(t.Cols) != len(proto.Cols) {
		return nil, other("%d columns, this run's grid has %d", len(t.Cols), len(proto.Cols))
	}
	for j := range proto.Cols {
		if t.Cols[j].Name != proto.Cols[j].Name || (t.Cols[j].Float == nil) != (proto.Cols[j].Float == nil) || (t.Cols[j].Int == nil) != (proto.Cols[j].Int == nil) {
			return nil, other("column %d is %q, this run's %q", j, t.Cols[j].Name, proto.Cols[j].Name)
		}
	}
	col := func(name string) *format.Column { return t.Column(name) }
	stage, point, logML, se, samples := col("stage"), col("point"), col("log_ml"), col("se_log_ml"), col("samples")
	rows := make([]format.TuneRow, 0, n)
	for i := range t.Rows() {
		if stage.Str[i] != format.StageGrid {
			continue // a whole run's output: its exploit and optimum rows
		}
		k := len(rows)
		if k == n || point.Int[i] != int64(k) {
			return nil, other("row %d is grid point %d, not %d", i, point.Int[i], k)
		}
		row := format.TuneRow{Stage: format.StageGrid, Point: int64(k), Hyper: make([]float64, len(names)), LogML: logML.Float[i], SELog: se.Float[i],
			SEDiff: make([]float64, len(axes)), Samples: samples.Int[i]}
		want := hyper(k)
		for j, h := range names {
			row.Hyper[j] = col(h).Float[i]
			if math.Float64bits(row.Hyper[j]) != math.Float64bits(want[j]) {
				return nil, other("grid point %d has %s = %v, this run's %v", k, h, row.Hyper[j], want[j])
			}
		}
		for j, a := range axes {
			row.SEDiff[j] = col("se_diff_" + a).Float[i]
		}
		if row.Samples != int64(c.Samples) {
			return nil, other("grid point %d has %d samples, --samples is %d", k, row.Samples, c.Samples)
		}
		if !math.IsNaN(row.LogML) {
			results[k] = &core.Result{LogP: row.LogML, SE: row.SELog, Samples: c.Samples}
		}
		rows = append(rows, row)
	}
	if len(rows) != n {
		return nil, other("%d grid points, this run's grid has %d", len(rows), n)
	}
	best := -1
	for i, res := range results {
		if res != nil && !math.IsInf(res.LogP, -1) && (best < 0 || res.LogP > results[best].LogP) {
			best = i
		}
	}
	if best < 0 {
		return rows, nil // the run fails as the unsharded one does: no grid point gave an estimate
	}
	res, err := estimate(best)
	if err != nil {
		return nil, err
	}
	if math.Float64bits(res.LogP) != math.Float64bits(results[best].LogP) || math.Float64bits(res.SE) != math.Float64bits(results[best].SE) {
		return nil, other("grid point %d, estimated again, gives log_ml %v (se %v), the grid %v (se %v)", best, res.LogP, res.SE, results[best].LogP, results[best].SE)
	}
	return rows, nil
}
