package main

import (
	"context"
	"fmt"
	"image/color"
	"math"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/gpc-mc/gpc/bench"
	"github.com/gpc-mc/gpc/bench/figure"
)

// figures draws Figures 1 and 2: log10 of the posterior MAE and of the log
// ML MAPE on Experiment 2 problem 3 against the CPU seconds of a run, one
// line per method (a point per M).
func figures(rep *Report, dir string) error {
	for _, f := range []struct {
		file, ylabel, title string
		y                   func(T2Row) float64
		paper               []paperPoint // the points the paper's text gives
		paperNames          []string
	}{
		{"figure1.png", "log10 MAE of the test posteriors", "Figure 1: Experiment 2 problem 3 (N = 400), posteriors",
			func(r T2Row) float64 { return r.MAE }, nil, nil},
		// The text of section 6.3: log(MAPE) = -4.52 at 525 s (the paper's
		// algorithm) and -4.70 at 5350 s (ESS); read as natural logs of the
		// MAPE in percent, these match Table 2b's problem 3 at M ~ 10^6.
		{"figure2.png", "log10 MAPE (%) of log ML", "Figure 2: Experiment 2 problem 3 (N = 400), log ML",
			func(r T2Row) float64 { return r.MAPE },
			[]paperPoint{{525, -4.52 / math.Ln10, draw.CrossGlyph{}}, {5350, -4.70 / math.Ln10, draw.PlusGlyph{}}},
			[]string{"paper (text: ln MAPE -4.52 at 525 s)", "ESS (text: -4.70 at 5350 s)"}},
	} {
		p := plot.New()
		p.Title.Text = f.title
		p.X.Label.Text = "CPU seconds per run (log scale)"
		p.Y.Label.Text = f.ylabel
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		for i, meth := range Methods {
			var xy plotter.XYs
			for _, r := range rep.Figure {
				if r.Method == meth && r.CPU > 0 && f.y(r) > 0 {
					xy = append(xy, plotter.XY{X: r.CPU, Y: math.Log10(f.y(r))})
				}
			}
			if len(xy) == 0 {
				continue
			}
			l, s, err := plotter.NewLinePoints(xy)
			if err != nil {
				return err
			}
			l.Color = plotutil.Color(i)
			l.Dashes = plotutil.Dashes(i)
			s.Color = plotutil.Color(i)
			s.Shape = plotutil.Shape(i)
			p.Add(l, s)
			p.Legend.Add(meth, l, s)
		}
		for k, pt := range f.paper {
			s, err := plotter.NewScatter(plotter.XYs{{X: pt.x, Y: pt.y}})
			if err != nil {
				return err
			}
			s.Shape, s.Radius = pt.glyph, vg.Points(5)
			p.Add(s)
			p.Legend.Add(f.paperNames[k], s)
		}
		p.Add(plotter.NewGrid())
		if err := figure.SaveLegendOutside(p, 21*vg.Centimeter, 12*vg.Centimeter, filepath.Join(dir, f.file)); err != nil {
			return err
		}
	}
	return nil
}

// paperPoint is a point of a figure given in the paper's text: CPU
// seconds and log10 of the error.
type paperPoint struct {
	x, y  float64
	glyph draw.GlyphDrawer
}

// grid is a posterior surface for plotter.HeatMap.
type grid struct {
	n      int
	xs, ys []float64
	z      []float64 // row r (y), column c (x)
}

func (g *grid) Dims() (c, r int)      { return g.n, g.n }
func (g *grid) Z(c, r int) float64    { return g.z[r*g.n+c] }
func (g *grid) X(c int) float64       { return g.xs[c] }
func (g *grid) Y(r int) float64       { return g.ys[r] }
func (g *grid) Min() float64          { return 0 }
func (g *grid) Max() float64          { return 1 }
func (g *grid) test(i int) [2]float64 { return [2]float64{g.xs[i%g.n], g.ys[i/g.n]} }

// surfaces draws the default method's posterior P(y = +1 | x) of a 2-D
// Experiment 4 problem on a grid, with the training points, for each
// hyperparameter set of the plan.
func surfaces(ctx context.Context, p Plan, dir string) ([]string, error) {
	prob := bench.Exp4Problems[p.SurfaceProblem]
	if prob.D != 2 {
		return nil, fmt.Errorf("surface: problem %d is not 2-D", p.SurfaceProblem+1)
	}
	d := prob.Generate(p.Seed + uint64(p.SurfaceProblem))
	lo, hi := [2]float64{math.Inf(1), math.Inf(1)}, [2]float64{math.Inf(-1), math.Inf(-1)}
	for i := range prob.N {
		for k := range 2 {
			lo[k], hi[k] = math.Min(lo[k], d.X[2*i+k]), math.Max(hi[k], d.X[2*i+k])
		}
	}
	g := &grid{n: p.Grid}
	for i := range g.n {
		t := (float64(i) + 0.5) / float64(g.n)
		g.xs = append(g.xs, lo[0]-0.5+t*(hi[0]-lo[0]+1))
		g.ys = append(g.ys, lo[1]-0.5+t*(hi[1]-lo[1]+1))
	}
	gp := prob
	gp.NTest = g.n * g.n
	gd := &bench.Exp4Data{X: d.X, Y: d.Y, XTest: make([]float64, 2*gp.NTest)}
	for i := range gp.NTest {
		x := g.test(i)
		gd.XTest[2*i], gd.XTest[2*i+1] = x[0], x[1]
	}
	var files []string
	for _, h := range p.SurfaceHyper {
		ab := bench.Exp4Hyper[h]
		run, err := bench.Experiment4Run(ctx, gp, gd, ab[0], ab[1], "auto", p.SurfaceM, 0, p.Seed)
		if err != nil {
			return nil, fmt.Errorf("surface: %w", err)
		}
		g.z = make([]float64, gp.NTest)
		for i, q := range run.Post {
			g.z[i] = q.P
		}
		cm := moreland.SmoothBlueRed()
		cm.SetMin(0)
		cm.SetMax(1)
		pl := plot.New()
		pl.Title.Text = fmt.Sprintf("Experiment 4 problem %d, alpha = %g, beta = %g: P(y = +1 | x), %s, M = %d", p.SurfaceProblem+1, ab[0], ab[1], run.Method, p.SurfaceM)
		pl.Title.TextStyle.Font.Size = vg.Points(9)
		pl.X.Label.Text, pl.Y.Label.Text = "x1", "x2"
		pl.Add(plotter.NewHeatMap(g, cm.Palette(64)))
		for _, cls := range []struct {
			y     float64
			name  string
			shape draw.GlyphDrawer
			col   color.Color
		}{{1, "class +1 (N(0, I))", draw.CircleGlyph{}, color.RGBA{R: 140, A: 255}}, {-1, "class -1 (N(e, Sigma0))", draw.TriangleGlyph{}, color.RGBA{B: 140, A: 255}}} {
			var xy plotter.XYs
			for i := range prob.N {
				if d.Y[i] == cls.y {
					xy = append(xy, plotter.XY{X: d.X[2*i], Y: d.X[2*i+1]})
				}
			}
			s, err := plotter.NewScatter(xy)
			if err != nil {
				return nil, err
			}
			s.Shape, s.Color, s.Radius = cls.shape, cls.col, vg.Points(2.5)
			pl.Add(s)
			pl.Legend.Add(cls.name, s)
		}
		name := fmt.Sprintf("surface-p%d-set%d.png", p.SurfaceProblem+1, h+1)
		if err := figure.SaveLegendOutside(pl, 18*vg.Centimeter, 13*vg.Centimeter, filepath.Join(dir, name)); err != nil {
			return nil, err
		}
		files = append(files, name)
	}
	return files, nil
}
