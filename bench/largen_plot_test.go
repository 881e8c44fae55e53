package bench

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/gpc-mc/gpc/bench/figure"
	"github.com/gpc-mc/gpc/core"
)

// TestLargeNScaling draws docs/benchmarks.md's large-N scaling plot: the
// CPU seconds of the preparation (core.Choose), of the propagation
// (core.Estimate) and of both on the large-N issue's problem at M = 10^4,
// against N on log-log axes, with the N^2 M and N^3 slopes through the
// smallest N's total. It runs only when GPC_LARGEN_PLOT names the PNG to
// write (GPC_LARGEN_SIZES: the N, default 1000,2000,5000), and prints the
// figures as a markdown table. With GPC_LARGEN_REDRAW=docs/benchmarks.md it
// measures nothing and redraws the plot from that table, as published.
//
//	GPC_LARGEN_PLOT=docs/largen-scaling.png go test ./bench -run LargeNScaling -v -timeout 1h
//	GPC_LARGEN_REDRAW=../docs/benchmarks.md GPC_LARGEN_PLOT=../docs/largen-scaling.png go test ./bench -run 'LargeNScaling$' -v
func TestLargeNScaling(t *testing.T) {
	out := os.Getenv("GPC_LARGEN_PLOT")
	if out == "" {
		t.Skip("GPC_LARGEN_PLOT names the plot to write")
	}
	if doc := os.Getenv("GPC_LARGEN_REDRAW"); doc != "" {
		ns, prep, prop, err := largeNTable(doc)
		if err != nil {
			t.Fatal(err)
		}
		if err := drawLargeNScaling(out, ns, prep, prop); err != nil {
			t.Fatal(err)
		}
		return
	}
	sizes := []int{1000, 2000, 5000}
	if s := os.Getenv("GPC_LARGEN_SIZES"); s != "" {
		sizes = sizes[:0]
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, n)
		}
	}
	const m = 10000
	var prep, prop []float64
	fmt.Println("| N | preparation CPU-s | propagation CPU-s | total CPU-s | wall s |")
	fmt.Println("|---|---|---|---|---|")
	for _, n := range sizes {
		box := largeNBox(n, 1)
		cfg := core.Config{Samples: m, Seed: 1}
		t0, c0 := time.Now(), processCPU()
		f, cand, _, err := core.Choose(context.Background(), box, core.AutoCandidates, 0, cfg)
		if err != nil {
			t.Fatal(err)
		}
		c1 := processCPU()
		cfg.Method = cand.Method
		if _, err := core.Estimate(context.Background(), f, cfg); err != nil {
			t.Fatal(err)
		}
		c2, wall := processCPU(), time.Since(t0)
		prep = append(prep, (c1 - c0).Seconds())
		prop = append(prop, (c2 - c1).Seconds())
		fmt.Printf("| %d | %.2f | %.2f | %.2f | %.1f |\n", n, (c1 - c0).Seconds(), (c2 - c1).Seconds(), (c2 - c0).Seconds(), wall.Seconds())
	}
	if err := drawLargeNScaling(out, sizes, prep, prop); err != nil {
		t.Fatal(err)
	}
}

// largeNTable reads the scaling table of docs/benchmarks.md (the rows of
// TestLargeNScaling's markdown after "**Scaling**"): N, preparation and
// propagation CPU seconds.
func largeNTable(doc string) (ns []int, prep, prop []float64, err error) {
	data, err := os.ReadFile(doc)
	if err != nil {
		return nil, nil, nil, err
	}
	text := string(data)
	i := strings.Index(text, "**Scaling**")
	if i < 0 {
		return nil, nil, nil, fmt.Errorf("%s: no **Scaling** table", doc)
	}
	for _, line := range strings.Split(text[i:], "\n") {
		f := strings.Split(strings.Trim(line, "| "), " | ")
		if len(f) < 3 {
			if len(ns) > 0 && !strings.HasPrefix(line, "|") {
				break
			}
			continue
		}
		n, err1 := strconv.Atoi(f[0])
		a, err2 := strconv.ParseFloat(f[1], 64)
		b, err3 := strconv.ParseFloat(f[2], 64)
		if err1 != nil || err2 != nil || err3 != nil {
			continue // the header and its rule
		}
		ns, prep, prop = append(ns, n), append(prep, a), append(prop, b)
	}
	if len(ns) < 2 {
		return nil, nil, nil, fmt.Errorf("%s: %d rows in the **Scaling** table", doc, len(ns))
	}
	return ns, prep, prop, nil
}

// largeNPlot is the scaling plot of the CPU seconds of the preparation and
// the propagation at each N (M = 10^4), with their total and the N^2 M and
// N^3 slopes through the smallest N's total, every N labelled on the x
// axis.
func largeNPlot(ns []int, prep, prop []float64) (*plot.Plot, error) {
	var pp, pg, total plotter.XYs
	for i, n := range ns {
		x := float64(n)
		pp = append(pp, plotter.XY{X: x, Y: prep[i]})
		pg = append(pg, plotter.XY{X: x, Y: prop[i]})
		total = append(total, plotter.XY{X: x, Y: prep[i] + prop[i]})
	}
	p := plot.New()
	p.Title.Text = "gpc-orthant's work on the large-N problem, M = 10^4 particles"
	p.X.Label.Text = "N, variables (log scale)"
	p.Y.Label.Text = "CPU seconds (log scale)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	var xt []plot.Tick
	for _, n := range ns {
		xt = append(xt, plot.Tick{Value: float64(n), Label: strconv.Itoa(n)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(xt)
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	for i, s := range []struct {
		name string
		xy   plotter.XYs
	}{{"total", total}, {"preparation", pp}, {"propagation", pg}} {
		l, sc, err := plotter.NewLinePoints(s.xy)
		if err != nil {
			return nil, err
		}
		l.Color, sc.Color, sc.Shape = plotutil.Color(i), plotutil.Color(i), plotutil.Shape(i)
		p.Add(l, sc)
		p.Legend.Add(s.name, l, sc)
	}
	x0, y0 := total[0].X, total[0].Y
	for i, r := range []struct {
		name string
		pow  float64
	}{{"N^2 M (slope 2)", 2}, {"N^3 (slope 3)", 3}} {
		var xy plotter.XYs
		for _, pt := range total {
			xy = append(xy, plotter.XY{X: pt.X, Y: y0 * math.Pow(pt.X/x0, r.pow)})
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return nil, err
		}
		l.Color, l.Dashes = plotutil.Color(3+i), plotutil.Dashes(1+i)
		p.Add(l)
		p.Legend.Add(r.name, l)
	}
	p.Add(plotter.NewGrid())
	return p, nil
}

// drawLargeNScaling writes largeNPlot to out, its legend beside the axes.
func drawLargeNScaling(out string, ns []int, prep, prop []float64) error {
	p, err := largeNPlot(ns, prep, prop)
	if err != nil {
		return err
	}
	return figure.SaveLegendOutside(p, 20*vg.Centimeter, 12*vg.Centimeter, out)
}
