package bench

import (
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"gonum.org/v1/plot/vg/draw"
)

// figureDir is where the plot tests write their PNGs: GPC_FIGURE_DIR, to
// look at them, or a temporary directory.
func figureDir(t *testing.T) string {
	if d := os.Getenv("GPC_FIGURE_DIR"); d != "" {
		return d
	}
	return t.TempDir()
}

// TestLargeNPlotTicks: the scaling plot labels every measured N on its log
// x axis (gonum's log ticks label powers of ten only: N = 1000, 2000 and
// 5000 had one label).
func TestLargeNPlotTicks(t *testing.T) {
	ns := []int{1000, 2000, 5000}
	p, err := largeNPlot(ns, []float64{0.26, 1.89, 17.74}, []float64{0.45, 1.43, 6.91})
	if err != nil {
		t.Fatal(err)
	}
	labels := map[float64]string{}
	for _, tk := range p.X.Tick.Marker.Ticks(p.X.Min, p.X.Max) {
		labels[tk.Value] = tk.Label
	}
	for _, n := range ns {
		if labels[float64(n)] != strconv.Itoa(n) {
			t.Errorf("N = %d has the tick label %q", n, labels[float64(n)])
		}
	}
	out := filepath.Join(figureDir(t), "largen-scaling.png")
	if err := drawLargeNScaling(out, ns, []float64{0.26, 1.89, 17.74}, []float64{0.45, 1.43, 6.91}); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, out)
}

// TestPlotSurfaceLegend draws a surface whose contours fill the grid and
// whose marks lie in its top right corner, where the legend was drawn over
// them: the legend now stands beside the axes, and the image's right
// column (where it is) holds none of the contours' colours.
func TestPlotSurfaceLegend(t *testing.T) {
	g := &Surface2{X: LogSpace(0.1, 30, 17), Y: LogSpace(0.1, 1000, 17)}
	for i, x := range g.X {
		g.LogML = append(g.LogML, make([]float64, len(g.Y)))
		for j, y := range g.Y {
			dx, dy := x-math.Log(20), y-math.Log(500)
			g.LogML[i][j] = -100 - 2*dx*dx - dy*dy + dx*dy
		}
	}
	marks := []Mark{
		{Label: "optimum (gpc-tune)", X: math.Log(25), Y: math.Log(800), Shape: draw.CrossGlyph{}, Color: color.Black},
		{Label: "fine grid maximum", X: math.Log(20), Y: math.Log(500), Shape: draw.CircleGlyph{}, Color: color.RGBA{R: 200, A: 255}},
	}
	out := filepath.Join(figureDir(t), "surface.png")
	if err := PlotSurface(out, "a synthetic surface (contours every nat)", "log10 alpha", "log10 beta", g, 1, 15, marks); err != nil {
		t.Fatal(err)
	}
	img := checkPNG(t, out)
	b := img.Bounds()
	// The legend's column: the right 15 % of the image.
	for x := b.Max.X - 15*b.Dx()/100; x < b.Max.X; x++ {
		for y := b.Min.Y; y < b.Max.Y; y++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if g>>8 > r>>8+60 && g>>8 > bl>>8+60 { // a green contour
				t.Fatalf("a contour's colour at (%d, %d), in the legend's column", x, y)
			}
		}
	}
}

// checkPNG decodes the PNG at path.
func checkPNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return img
}
