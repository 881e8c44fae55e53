package vfit

import (
	"bufio"
	"context"
	"math"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpc-mc/gpc/core/gp"
	"github.com/gpc-mc/gpc/core/vecchia"
)

func readTC(t *testing.T, path string) ([]float64, []float64) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan()
	var x, y []float64
	for sc.Scan() {
		p := strings.Split(sc.Text(), ",")
		a, _ := strconv.ParseFloat(p[0], 64)
		b, _ := strconv.ParseFloat(p[1], 64)
		c, _ := strconv.ParseFloat(p[2], 64)
		x = append(x, a, b)
		y = append(y, c)
	}
	return x, y
}

func cpu() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

func TestScratchTime(t *testing.T) {
	path := os.Getenv("TC")
	if path == "" {
		t.Skip()
	}
	x, y := readTC(t, path)
	m := 50
	if v := os.Getenv("TCM"); v != "" {
		m, _ = strconv.Atoi(v)
	}
	p := &Problem{X: x, D: 2, Y: y, M: m}
	k := gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{1}, Beta: 10}
	hs := k.Hypers()
	th := []float64{0, math.Log(10)}
	c0, w0 := cpu(), time.Now()
	ev, err := NewEvidence(context.Background(), p, k, hs, th)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("structure + first value: cpu %.2f wall %.2f block %d", cpu()-c0, time.Since(w0).Seconds(), ev.Block)
	for _, th := range [][]float64{{0, math.Log(10)}, {0.1, math.Log(12)}, {0.2, math.Log(8)}} {
		c0, w0 = cpu(), time.Now()
		f, _, err := ev.At(context.Background(), th, false)
		if err != nil {
			t.Fatal(err)
		}
		c1, w1 := cpu(), time.Now()
		_, g, err := ev.At(context.Background(), th, true)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("theta %v: logZ %.4f grad %v: value cpu %.2f wall %.2f; gradient cpu %.2f wall %.2f", th, f, g, c1-c0, w1.Sub(w0).Seconds(), cpu()-c1, time.Since(w1).Seconds())
	}
	_ = vecchia.DefaultM
}

func TestScratchD(t *testing.T) {
	path := os.Getenv("TC")
	if path == "" {
		t.Skip()
	}
	x, y := readTC(t, path)
	p := &Problem{X: x, D: 2, Y: y, M: 50}
	for _, a := range []float64{1, 1.1, 2} {
		k := &gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{a}, Beta: 12}
		s, _ := vecchia.NewStructure(x, len(y), 2, vecchia.Options{M: 50})
		m, _ := vecchia.NewClassifier(s, k, x, y, p.nugget(), nil, nil, 0)
		last := map[float64]int{}
		for i, v := range m.CondVar {
			for _, tol := range []float64{1e-1, 1e-2, 1e-3} {
				if v >= tol {
					last[tol] = i
				}
			}
		}
		t.Logf("alpha %v: last row with D >= 0.1: %d, 0.01: %d, 0.001: %d", a, last[0.1], last[0.01], last[0.001])
		for _, b := range []int{0, 64, 256, 1000} {
			le := vecchia.NewLaplaceEvidence(m, vecchia.LaplaceOptions{Block: b})
			res, err := le.Eval(context.Background(), m, nil, false)
			if err != nil {
				t.Logf("  block %d: %v", b, err)
				continue
			}
			t.Logf("  block %d: %.4f", b, res.LogZ)
		}
	}
}

func TestScratchFit(t *testing.T) {
	path := os.Getenv("TC")
	if path == "" {
		t.Skip()
	}
	x, y := readTC(t, path)
	p := &Problem{X: x, D: 2, Y: y, M: 50}
	sc, _ := fitDataScale(x, 2)
	k := sc.Start(gp.KernelRBF, 2)
	hs := k.Hypers()
	th0 := []float64{math.Log(k.Alpha[0]), math.Log(k.Beta)}
	lo, hi := sc.Bounds(&k, hs)
	c0, w0 := cpu(), time.Now()
	res, err := Maximize(context.Background(), p, k, hs, th0, fitConfig(lo, hi, func(stage string, samples int, theta []float64, f float64) {
		t.Logf("%s %v %.6f (cpu %.1f)", stage, theta, f, cpu()-c0)
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("optimum %v (alpha %.4g beta %.4g) logZ %.4f evals %d grads %d block %d; cpu %.1f wall %.1f", res.Theta, math.Exp(res.Theta[0]), math.Exp(res.Theta[1]), res.LogZ, res.Evals, res.Grads, res.Evidence.Block, cpu()-c0, time.Since(w0).Seconds())
}

func TestScratchNewton(t *testing.T) {
	path := os.Getenv("TC")
	if path == "" {
		t.Skip()
	}
	x, y := readTC(t, path)
	k := &gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{2}, Beta: 10}
	s, _ := vecchia.NewStructure(x, len(y), 2, vecchia.Options{M: 50})
	m, _ := vecchia.NewClassifier(s, k, x, y, vecchia.DefaultNugget, nil, nil, 0)
	le := vecchia.NewLaplaceEvidence(m, vecchia.LaplaceOptions{Block: vecchia.LaplaceBlock(m)})
	c0 := cpu()
	res, err := le.Eval(context.Background(), m, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cold: newton %d cg %d cpu %.2f", res.Newton, res.CG, cpu()-c0)
	k2 := &gp.Kernel{Kind: gp.KernelRBF, Alpha: []float64{2.1}, Beta: 11}
	m2, _ := vecchia.NewClassifier(s, k2, x, y, vecchia.DefaultNugget, nil, nil, 0)
	c0 = cpu()
	res2, err := le.Eval(context.Background(), m2, res.Mode, false)
	t.Logf("warm: newton %d cg %d cpu %.2f", res2.Newton, res2.CG, cpu()-c0)
	c0 = cpu()
	le.Adjoint()
	t.Logf("adjoint cpu %.2f", cpu()-c0)
	c0 = cpu()
	vecchia.NewClassifier(s, k2, x, y, vecchia.DefaultNugget, nil, nil, 1)
	t.Logf("conditionals cpu %.2f", cpu()-c0)
}
