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

	"github.com/gpc-mc/gpc/core"
)

// TestLargeNScaling draws docs/benchmarks.md's large-N scaling plot: the
// CPU seconds of the preparation (core.Choose), of the propagation
// (core.Estimate) and of both on the large-N issue's problem at M = 10^4,
// against N on log-log axes, with the N^2 M and N^3 slopes through the
// smallest N's total. It runs only when GPC_LARGEN_PLOT names the PNG to
// write (GPC_LARGEN_SIZES: the N, default 1000,2000,5000), and prints the
// figures as a markdown table.
//
//	GPC_LARGEN_PLOT=docs/largen-scaling.png go test ./bench -run LargeNScaling -v -timeout 1h
func TestLargeNScaling(t *testing.T) {
	out := os.Getenv("GPC_LARGEN_PLOT")
	if out == "" {
		t.Skip("GPC_LARGEN_PLOT names the plot to write")
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
	var prep, prop, total plotter.XYs
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
		x := float64(n)
		prep = append(prep, plotter.XY{X: x, Y: (c1 - c0).Seconds()})
		prop = append(prop, plotter.XY{X: x, Y: (c2 - c1).Seconds()})
		total = append(total, plotter.XY{X: x, Y: (c2 - c0).Seconds()})
		fmt.Printf("| %d | %.2f | %.2f | %.2f | %.1f |\n", n, (c1 - c0).Seconds(), (c2 - c1).Seconds(), (c2 - c0).Seconds(), wall.Seconds())
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("gpc-orthant's work on the large-N problem, M = %d", m)
	p.X.Label.Text = "N (log scale)"
	p.Y.Label.Text = "CPU seconds (log scale)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	for i, s := range []struct {
		name string
		xy   plotter.XYs
	}{{"total", total}, {"preparation", prep}, {"propagation", prop}} {
		l, sc, err := plotter.NewLinePoints(s.xy)
		if err != nil {
			t.Fatal(err)
		}
		l.Color, sc.Color, sc.Shape = plotutil.Color(i), plotutil.Color(i), plotutil.Shape(i)
		p.Add(l, sc)
		p.Legend.Add(s.name, l, sc)
	}
	// The reference slopes through the smallest N's total.
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
			t.Fatal(err)
		}
		l.Color, l.Dashes = plotutil.Color(3+i), plotutil.Dashes(1+i)
		p.Add(l)
		p.Legend.Add(r.name, l)
	}
	p.Add(plotter.NewGrid())
	if err := p.Save(16*vg.Centimeter, 12*vg.Centimeter, out); err != nil {
		t.Fatal(err)
	}
}
