package fit

import "testing"

// TestSnapOffProbe checks the run-off check's probe: an objective still
// rising to the box's edge moves there; one that falls by more than
// SnapTol at the probe SnapProbe towards the edge stays, and the edge is
// never evaluated; one whose edge is within SnapProbe is judged at the
// edge alone.
func TestSnapOffProbe(t *testing.T) {
	cfg := FitConfig{Lower: []float64{-10}, Upper: []float64{10}}
	for _, tc := range []struct {
		name   string
		f      func(x float64) float64
		theta  float64
		want   float64
		atEdge bool
	}{
		// Rising slowly (gradient 1e-9 > 0): the edge is within SnapTol.
		{"flat", func(x float64) float64 { return 1e-9 * x }, 0, 10, true},
		// A maximum at 0 with a tiny positive gradient left: falls by 0.5
		// at the probe.
		{"peak", func(x float64) float64 { return -0.5*x*x + 1e-9*x }, 0, 0, false},
		// The edge 0.5 away: judged there (falls by 0.125).
		{"near", func(x float64) float64 { return -0.5*(x-9.5)*(x-9.5) + 1e-9*(x-9.5) }, 9.5, 9.5, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			edge := false
			ev := func(x []float64, grad bool) (float64, []float64, error) {
				if x[0] == 10 {
					edge = true
				}
				var g []float64
				if grad {
					h := 1e-6
					g = []float64{(tc.f(x[0]+h) - tc.f(x[0]-h)) / (2 * h)}
					if x[0] == tc.theta {
						g[0] = 1e-9 // the search's end: pointing out
					}
				}
				return tc.f(x[0]), g, nil
			}
			x, _, err := snapOff([]float64{tc.theta}, ev, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if x[0] != tc.want || edge != tc.atEdge {
				t.Errorf("ended at %v (want %v), the edge evaluated %v (want %v)", x[0], tc.want, edge, tc.atEdge)
			}
		})
	}
}
