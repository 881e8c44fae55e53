package bench

import (
	"context"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/gpc-mc/gpc/bench/figure"
	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/fit"
)

// Surface2 is a surface estimated on a grid of two log-hyperparameters:
// LogML[i][j] at (X[i], Y[j]), with standard errors and, for neighbours,
// the common-random-numbers standard errors of the differences.
type Surface2 struct {
	X, Y             []float64
	LogML, SE        [][]float64
	SEDiffX, SEDiffY [][]float64 // to (i+1, j) and (i, j+1); NaN at the edges
}

// LogSpace returns k values evenly spaced in log from lo to hi, as logs.
func LogSpace(lo, hi float64, k int) []float64 {
	v := make([]float64, k)
	for i := range v {
		v[i] = math.Log(lo) + (math.Log(hi)-math.Log(lo))*float64(i)/float64(k-1)
	}
	return v
}

// EvalSurface2 estimates s on the grid xs x ys (log-hyperparameters, s's
// two parameters in order) with m particles and one seed.
func EvalSurface2(ctx context.Context, s *fit.Surface, xs, ys []float64, m int, seed uint64) (*Surface2, error) {
	g := &Surface2{X: xs, Y: ys}
	res := make([][]core.Result, len(xs))
	for i, x := range xs {
		res[i] = make([]core.Result, len(ys))
		for j, y := range ys {
			r, _, err := s.Eval(ctx, []float64{x, y}, m, seed, false)
			if err != nil {
				return nil, err
			}
			res[i][j] = r
		}
	}
	mk := func() [][]float64 {
		a := make([][]float64, len(xs))
		for i := range a {
			a[i] = make([]float64, len(ys))
		}
		return a
	}
	g.LogML, g.SE, g.SEDiffX, g.SEDiffY = mk(), mk(), mk(), mk()
	for i := range xs {
		for j := range ys {
			g.LogML[i][j], g.SE[i][j] = res[i][j].LogP, res[i][j].SE
			g.SEDiffX[i][j], g.SEDiffY[i][j] = math.NaN(), math.NaN()
			if i+1 < len(xs) {
				g.SEDiffX[i][j] = fit.DiffSE(&res[i][j], &res[i+1][j])
			}
			if j+1 < len(ys) {
				g.SEDiffY[i][j] = fit.DiffSE(&res[i][j], &res[i][j+1])
			}
		}
	}
	return g, nil
}

// Argmax returns the grid point of the largest estimate.
func (g *Surface2) Argmax() (int, int) {
	bi, bj := 0, 0
	for i := range g.X {
		for j := range g.Y {
			if g.LogML[i][j] > g.LogML[bi][bj] {
				bi, bj = i, j
			}
		}
	}
	return bi, bj
}

// CRNRatios returns, per axis, the median over the grid of SE / SE_diff
// (each point against its neighbour, the larger of the two SEs) and the
// fraction of neighbour pairs where it is at least 5.
func (g *Surface2) CRNRatios() (medX, medY, fracX, fracY float64) {
	var rx, ry []float64
	for i := range g.X {
		for j := range g.Y {
			if i+1 < len(g.X) {
				rx = append(rx, math.Max(g.SE[i][j], g.SE[i+1][j])/g.SEDiffX[i][j])
			}
			if j+1 < len(g.Y) {
				ry = append(ry, math.Max(g.SE[i][j], g.SE[i][j+1])/g.SEDiffY[i][j])
			}
		}
	}
	med := func(v []float64) (float64, float64) {
		s := append([]float64(nil), v...)
		sortFloats(s)
		n5 := 0
		for _, x := range s {
			if x >= 5 {
				n5++
			}
		}
		return s[len(s)/2], float64(n5) / float64(len(s))
	}
	medX, fracX = med(rx)
	medY, fracY = med(ry)
	return
}

func sortFloats(s []float64) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// surfaceGrid adapts a Surface2 to plotter.GridXYZ, in log10 units.
type surfaceGrid struct{ g *Surface2 }

func (s surfaceGrid) Dims() (c, r int)   { return len(s.g.X), len(s.g.Y) }
func (s surfaceGrid) Z(c, r int) float64 { return s.g.LogML[c][r] }
func (s surfaceGrid) X(c int) float64    { return s.g.X[c] / math.Ln10 }
func (s surfaceGrid) Y(r int) float64    { return s.g.Y[r] / math.Ln10 }

// Mark is a labelled point of a surface plot (log-hyperparameters).
type Mark struct {
	Label string
	X, Y  float64
	Shape draw.GlyphDrawer
	Color color.Color
}

// PlotSurface draws the contours of g's log marginal likelihood over
// (log10 x, log10 y), levels every step nats down from the maximum, with
// the marks, to a PNG of the given path.
func PlotSurface(path, title, xlab, ylab string, g *Surface2, step float64, levels int, marks []Mark) error {
	bi, bj := g.Argmax()
	top := g.LogML[bi][bj]
	lv := make([]float64, levels)
	for i := range lv {
		lv[i] = top - step*float64(levels-i) + step/2
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlab
	p.Y.Label.Text = ylab
	c := plotter.NewContour(surfaceGrid{g}, lv, palette.Rainbow(levels, palette.Blue, palette.Red, 1, 1, 1))
	p.Add(c)
	for _, m := range marks {
		s, err := plotter.NewScatter(plotter.XYs{{X: m.X / math.Ln10, Y: m.Y / math.Ln10}})
		if err != nil {
			return err
		}
		s.GlyphStyle.Shape = m.Shape
		s.GlyphStyle.Color = m.Color
		s.GlyphStyle.Radius = vg.Points(5)
		p.Add(s)
		p.Legend.Add(m.Label, s)
	}
	// The legend beside the axes: the contours fill the data area.
	return figure.SaveLegendOutside(p, 20*vg.Centimeter, 12*vg.Centimeter, path)
}
