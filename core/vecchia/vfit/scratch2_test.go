package vfit

import "github.com/gpc-mc/gpc/core/fit"

func fitDataScale(x []float64, d int) (*fit.DataScale, error) { return fit.NewDataScale(x, d) }
func fitConfig(lo, hi []float64, pr func(string, int, []float64, float64)) fit.FitConfig {
	return fit.FitConfig{Lower: lo, Upper: hi, Progress: pr}
}
