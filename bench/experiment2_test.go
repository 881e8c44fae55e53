package bench

import (
	"context"
	"testing"
)

// TestExperiment2 is the acceptance check of the paper's Experiment 2
// (issue "The GPC pipeline"): problems 1-4, the default method, M = 10^4,
// five runs each: mean absolute error of the test posteriors <= 3e-4 and
// mean |log ML error| <= 0.01 nats, against the exact one-dimensional
// integrals (eq. ONE-D).
//
//	go test ./bench -run Experiment2 -v
func TestExperiment2(t *testing.T) {
	if testing.Short() {
		t.Skip("accuracy study: skipped under -short")
	}
	for p := range Exp2Problems {
		r, err := Experiment2(context.Background(), p, 5, 10000, "auto", 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		t.Log(r)
		if r.MAE > 3e-4 || r.AbsLogML > 0.01 {
			t.Errorf("problem %d: MAE %.2e (max 3e-4), |log ML error| %.4f (max 0.01)", p+1, r.MAE, r.AbsLogML)
		}
	}
	// paper-hard, with the paper's hard count, is the paper's algorithm: at
	// M = 10^4 it lands within a factor 3 of the paper's Tables 2a and 2b.
	for p := range Exp2Problems {
		r, err := Experiment2(context.Background(), p, 3, 10000, "paper-hard/shuffle", 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		t.Log(r)
		mae, mape := PaperTable2a[p][10000], PaperTable2b[p][10000]
		if r.MAE < mae/3 || r.MAE > 3*mae || r.MAPE < mape/3 || r.MAPE > 3*mape {
			t.Errorf("paper-hard problem %d: MAE %.2e and MAPE %.4f%%, the paper's %.2e and %.4f%% times [1/3, 3]", p+1, r.MAE, r.MAPE, mae, mape)
		}
	}
}
