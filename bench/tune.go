package bench

import (
	"encoding/csv"
	"fmt"
	"github.com/gpc-mc/gpc/core/gp"
	"math"
	"os"
	"strconv"
)

// LoadClassifier reads a CSV file of numeric features with a label column
// y of +1/-1 (the examples' and the shared data's form), standardizing the
// features by their own means and standard deviations when standardize is
// set (as gpc-kernel --standardize does with the training file's).
func LoadClassifier(path string, standardize bool) (*gp.Classifier, []string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer fh.Close()
	recs, err := csv.NewReader(fh).ReadAll()
	if err != nil {
		return nil, nil, fmt.Errorf("bench: %s: %w", path, err)
	}
	if len(recs) < 2 {
		return nil, nil, fmt.Errorf("bench: %s: no rows", path)
	}
	ycol := -1
	var names []string
	for j, h := range recs[0] {
		if h == "y" {
			ycol = j
		} else {
			names = append(names, h)
		}
	}
	if ycol < 0 {
		return nil, nil, fmt.Errorf("bench: %s: no y column", path)
	}
	d := len(names)
	c := &gp.Classifier{D: d}
	for r, rec := range recs[1:] {
		for j, s := range rec {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, nil, fmt.Errorf("bench: %s row %d: %w", path, r+1, err)
			}
			if j == ycol {
				c.Y = append(c.Y, v)
			} else {
				c.X = append(c.X, v)
			}
		}
	}
	if standardize {
		StandardizeInPlace(c.X, d)
	}
	return c, names, nil
}

// StandardizeInPlace centres and scales each of the d columns of x
// (row-major) by its mean and sample standard deviation.
func StandardizeInPlace(x []float64, d int) {
	n := len(x) / d
	for j := range d {
		m, s := 0.0, 0.0
		for r := range n {
			m += x[r*d+j]
		}
		m /= float64(n)
		for r := range n {
			s += (x[r*d+j] - m) * (x[r*d+j] - m)
		}
		s = math.Sqrt(s / float64(n-1))
		if s == 0 {
			s = 1
		}
		for r := range n {
			x[r*d+j] = (x[r*d+j] - m) / s
		}
	}
}
