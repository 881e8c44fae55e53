// Package figure holds what the benchmarks' plots share: saving a plot
// with its legend beside the axes rather than over the data.
package figure

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// legendGap is the space between the plot and its legend.
const legendGap = 4 * vg.Millimeter

// SaveLegendOutside writes p, w by h, to path (its extension names the
// image format, as plot.Save's), with p's legend in a column to the right
// of the axes, its top level with the data area's, where it covers no
// data: gonum's plot draws the legend inside the data area, over whatever
// lies under it. The plot itself takes the width the legend leaves.
func SaveLegendOutside(p *plot.Plot, w, h vg.Length, path string) error {
	leg := p.Legend
	p.Legend = plot.NewLegend()
	defer func() { p.Legend = leg }()
	c, err := draw.NewFormattedCanvas(w, h, strings.TrimPrefix(filepath.Ext(path), "."))
	if err != nil {
		return err
	}
	dc := draw.New(c)
	leg.Top, leg.Left, leg.XOffs, leg.YOffs = true, true, 0, 0
	lw := leg.Rectangle(dc).Size().X + legendGap
	if lw >= w/2 {
		return fmt.Errorf("figure: the legend (%v wide) leaves too little of %v for the plot", lw, w)
	}
	p.Draw(draw.Crop(dc, 0, -lw, 0, 0))
	top := vg.Length(0)
	if p.Title.Text != "" {
		top = p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y + p.Title.Padding
	}
	leg.Draw(draw.Crop(dc, w-lw+legendGap, 0, 0, -top))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := c.(io.WriterTo).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
