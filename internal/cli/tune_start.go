package cli

// The data's start in gpc-tune (gpc-fit's, gpc-mcmc's and gpc-kernel's
// is hyperFlags.kernel), and the model of a training set of two classes
// or more.

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpc-mc/gpc/core/fit"
	"github.com/gpc-mc/gpc/core/gp"
)

// The default grid around the data's start when neither --alpha nor
// --beta is given: alpha from startGridAlpha below the start to as far
// above it, beta from startGridBeta below to as far above, each in
// startGridPoints log-spaced values.
const (
	startGridAlpha  = 4
	startGridBeta   = 100
	startGridPoints = 5
)

// startGrid fills the hyperparameters not given from the data's start
// (fit.DataScale.Start, sc; nil before the data are read, for Validate:
// the start's shape with placeholder values): with neither --alpha nor
// --beta, grids centred on it (an ard kernel's alphas fixed); else the one
// not given fixed at it. It returns what it filled in, for gpc:start, or
// "" if nothing.
func (c *tuneCmd) startGrid(sc *fit.DataScale, d int) string {
	kind, _ := gp.ParseKernel(c.Kernel)
	start := gp.Kernel{Kind: kind, Alpha: []float64{1}, Beta: 1}
	if sc != nil {
		start = sc.Start(kind, d)
	}
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	grid := func(v, f float64) string {
		return fmt.Sprintf("%s:%s:%d", num(v/f), num(v*f), startGridPoints)
	}
	both := c.Alpha == nil && c.Beta == ""
	var from []string
	if c.Alpha == nil && kind != gp.KernelLinear {
		switch {
		case kind == gp.KernelARD:
			for range start.Alpha {
				c.Alpha = append(c.Alpha, num(start.Alpha[0]))
			}
			from = append(from, "alpha "+num(start.Alpha[0])+" for every feature")
		case both:
			c.Alpha = []string{grid(start.Alpha[0], startGridAlpha)}
			from = append(from, "alpha "+c.Alpha[0])
		default:
			c.Alpha = []string{num(start.Alpha[0])}
			from = append(from, "alpha "+c.Alpha[0])
		}
	}
	if c.Beta == "" {
		c.Beta = num(start.Beta)
		if both {
			c.Beta = grid(start.Beta, startGridBeta)
		}
		from = append(from, "beta "+c.Beta)
	}
	if from == nil || sc == nil {
		return ""
	}
	why := "alpha around the median distance between two training points, " + num(sc.Median)
	if kind == gp.KernelLinear {
		why = "beta around 1 / the mean of x'x"
	}
	return strings.Join(from, ", ") + " (the data's start: " + why + ")"
}

// trainingModel returns the model of the training features: the binary
// classifier, or for three or more classes (labels.classes) the
// multinomial probit model with k shared by the classes; and its number of
// orthant variables.
func trainingModel(train *features, labels *labelMap, k *gp.Kernel) (gp.Model, int, error) {
	d := len(train.names)
	if labels.classes == nil {
		return &gp.Classifier{X: train.x, D: d, Y: train.y}, train.rows, nil
	}
	y := make([]int, train.rows)
	for i, v := range train.y {
		y[i] = int(v)
	}
	m := &gp.Multiclass{X: train.x, D: d, Y: y, C: len(labels.classes), Kernels: []*gp.Kernel{k}}
	if err := m.Validate(); err != nil {
		return nil, 0, &dataError{fmt.Sprintf("%s: %v", train.source, err)}
	}
	return m, m.Vars(), nil
}
