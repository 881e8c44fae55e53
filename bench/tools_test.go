//go:build linux

package bench

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// BenchmarkHeadlineTools times the paper's headline run through the tools,
// as a user runs it: gpc-train --samples 1000000 (the default method) on
// the covariance of examples/exp4 (N = 200 training and 200 test patterns,
// RBF, alpha 3, beta 2), piped into gpc-predict --format csv, two processes
// joined by an operating-system pipe. The tools are built once, outside
// the timing; gpc-kernel's covariance is written once. It reports the
// seconds per run and each tool's peak resident memory (maxrss), and the
// cloud's particle array for comparison (M N 8 bytes).
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
			for b.Loop() {
				trainRSS, predictRSS = pipeTools(b, bin, cov, method)
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/run")
			b.ReportMetric(float64(trainRSS)/1e6, "train-peak-MB")
			b.ReportMetric(float64(predictRSS)/1e6, "predict-peak-MB")
			b.ReportMetric(float64(m)*n*8/1e6, "particles-MB")
		})
	}
}

// buildTools builds gpc-kernel, gpc-train and gpc-predict into a temporary
// directory and returns it.
func buildTools(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	build := exec.Command("go", "build", "-o", dir+string(os.PathSeparator), "../cmd/gpc-kernel", "../cmd/gpc-train", "../cmd/gpc-predict")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return dir
}

// pipeTools runs gpc-train < cov | gpc-predict --format csv > /dev/null
// and returns each process's peak resident memory in bytes.
func pipeTools(b *testing.B, bin, cov, method string) (trainRSS, predictRSS int64) {
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
	return rss(train), rss(predict)
}
