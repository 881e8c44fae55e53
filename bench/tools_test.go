//go:build linux

package bench

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// BenchmarkHeadlineTools times the paper's headline run through the tools,
// as a user runs it: gpc-train --samples 1000000 (the default method) on
// the covariance of examples/exp4 (N = 200 training and 200 test patterns,
// RBF, alpha 3, beta 2), piped into gpc-predict --format csv, two processes
// joined by an operating-system pipe. The tools are built once, outside
// the timing; gpc-kernel's covariance is written once. It reports the
// seconds per run, the CPU seconds the two tools used per run (user and
// system: robust to other processes on a shared machine, where the wall
// clock is not), each tool's peak resident memory (maxrss), and the cloud's
// particle array for comparison (M N 8 bytes).
//
//	go test ./bench -run '^$' -bench HeadlineTools -benchtime 3x -count 3
func BenchmarkHeadlineTools(b *testing.B) {
	const n, m = 200, 1000000
	for _, method := range []string{"auto", "met"} {
		b.Run(fmt.Sprintf("n=%d/m=%d/test=200/method=%s", n, m, method), func(b *testing.B) {
			skipLarge(b, float64(m)*n*n)
			bin := buildTools(b)
			cov := filepath.Join(b.TempDir(), "cov.arrows")
			kernel := exec.Command(filepath.Join(bin, "gpc-kernel"), "--alpha", "3", "--beta", "2",
				"--train", "../examples/exp4/train.csv", "--test", "../examples/exp4/test.csv")
			out, err := kernel.Output()
			if err != nil {
				b.Fatalf("gpc-kernel: %v", err)
			}
			if err := os.WriteFile(cov, out, 0o644); err != nil {
				b.Fatal(err)
			}
			var trainRSS, predictRSS int64
			var cpu time.Duration
			for b.Loop() {
				var c time.Duration
				trainRSS, predictRSS, c = pipeTools(b, bin, cov, method)
				cpu += c
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/run")
			b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/run")
			b.ReportMetric(float64(trainRSS)/1e6, "train-peak-MB")
			b.ReportMetric(float64(predictRSS)/1e6, "predict-peak-MB")
			b.ReportMetric(float64(m)*n*8/1e6, "particles-MB")
		})
	}
}

// BenchmarkOrthantTool times gpc-orthant --samples 100000 (the default
// method, its pilots included) as a process on the covariance of the paper's
// Experiment 4 problem 6 (N = 1000 training patterns, seed 1, RBF, alpha 3,
// beta 2), written once by gpc-kernel outside the timing. It reports the
// seconds and the CPU seconds per run.
//
//	go test ./bench -run '^$' -bench OrthantTool -benchtime 3x -count 3
func BenchmarkOrthantTool(b *testing.B) {
	const n, m = 1000, 100000
	b.Run(fmt.Sprintf("n=%d/m=%d", n, m), func(b *testing.B) {
		skipLarge(b, float64(m)*n*n)
		bin := buildTools(b)
		dir := b.TempDir()
		p := Exp4Problems[5]
		d := p.Generate(1)
		train := filepath.Join(dir, "train.csv")
		if err := os.WriteFile(train, exp4CSV(d.X, d.Y, p.N), 0o644); err != nil {
			b.Fatal(err)
		}
		cov := filepath.Join(dir, "cov.arrows")
		out, err := exec.Command(filepath.Join(bin, "gpc-kernel"), "--alpha", "3", "--beta", "2", "--train", train).Output()
		if err != nil {
			b.Fatalf("gpc-kernel: %v", err)
		}
		if err := os.WriteFile(cov, out, 0o644); err != nil {
			b.Fatal(err)
		}
		var cpu time.Duration
		for b.Loop() {
			orthant := exec.Command(filepath.Join(bin, "gpc-orthant"), "--samples", strconv.Itoa(m), cov)
			orthant.Stdout, orthant.Stderr = io.Discard, os.Stderr
			if err := orthant.Run(); err != nil {
				b.Fatalf("gpc-orthant: %v", err)
			}
			cpu += childCPU(orthant)
		}
		b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/run")
		b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/run")
	})
}

// buildTools builds gpc-kernel, gpc-train, gpc-predict and gpc-orthant into
// a temporary directory and returns it.
func buildTools(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	build := exec.Command("go", "build", "-o", dir+string(os.PathSeparator), "../cmd/gpc-kernel", "../cmd/gpc-train", "../cmd/gpc-predict", "../cmd/gpc-orthant")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return dir
}

// pipeTools runs gpc-train < cov | gpc-predict --format csv > /dev/null
// and returns each process's peak resident memory in bytes and the CPU
// time of both.
func pipeTools(b *testing.B, bin, cov, method string) (trainRSS, predictRSS int64, cpu time.Duration) {
	b.Helper()
	in, err := os.Open(cov)
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	train := exec.Command(filepath.Join(bin, "gpc-train"), "--samples", "1000000", "--method", method)
	train.Stdin, train.Stdout, train.Stderr = in, pw, os.Stderr
	predict := exec.Command(filepath.Join(bin, "gpc-predict"), "--format", "csv")
	predict.Stdin, predict.Stdout, predict.Stderr = pr, io.Discard, os.Stderr
	if err := train.Start(); err != nil {
		b.Fatal(err)
	}
	if err := predict.Start(); err != nil {
		b.Fatal(err)
	}
	pw.Close()
	pr.Close()
	if err := train.Wait(); err != nil {
		b.Fatalf("gpc-train: %v", err)
	}
	if err := predict.Wait(); err != nil {
		b.Fatalf("gpc-predict: %v", err)
	}
	rss := func(c *exec.Cmd) int64 {
		if u, ok := c.ProcessState.SysUsage().(*syscall.Rusage); ok {
			return u.Maxrss * 1024 // kilobytes on Linux
		}
		return 0
	}
	return rss(train), rss(predict), childCPU(train) + childCPU(predict)
}

// childCPU is the CPU time, user and system, of a command that ended.
func childCPU(c *exec.Cmd) time.Duration {
	return c.ProcessState.UserTime() + c.ProcessState.SystemTime()
}
