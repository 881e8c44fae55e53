package bench

import (
	"context"
	"math"
	"time"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/fit"
	"github.com/gpc-mc/gpc/core/gp"

	"gonum.org/v1/gonum/mat"
)

// LoadSplit reads a data set's train.csv and test.csv (numeric features and
// a y column of +1/-1) and standardizes both by the training features'
// means and sample standard deviations, as gpc-kernel --standardize does.
func LoadSplit(dir string) (train, test *gp.Classifier, names []string, err error) {
	train, names, err = LoadClassifier(dir+"/train.csv", false)
	if err != nil {
		return nil, nil, nil, err
	}
	test, _, err = LoadClassifier(dir+"/test.csv", false)
	if err != nil {
		return nil, nil, nil, err
	}
	d := train.D
	n := len(train.Y)
	for j := range d {
		m, s := 0.0, 0.0
		for r := range n {
			m += train.X[r*d+j]
		}
		m /= float64(n)
		for r := range n {
			s += (train.X[r*d+j] - m) * (train.X[r*d+j] - m)
		}
		s = math.Sqrt(s / float64(n-1))
		if s == 0 {
			s = 1
		}
		for _, c := range []*gp.Classifier{train, test} {
			for r := range len(c.Y) {
				c.X[r*d+j] = (c.X[r*d+j] - m) / s
			}
		}
	}
	return train, test, names, nil
}

// FitStudyRow is one line of docs/fitting.md's table: hyperparameters
// found by one method on one data set, judged by gpc.
type FitStudyRow struct {
	Data, Method string
	Kernel       gp.Kernel
	// LogML and SE are gpc's exact log marginal likelihood at Kernel, with
	// the particle count Samples that brought SE to at most MaxStudySE.
	LogML, SE float64
	Samples   int
	// Accuracy and MLPP are held out: the fraction of test labels
	// predicted right and the mean log predictive probability of the true
	// labels.
	Accuracy, MLPP float64
	// Seconds and CPUSeconds are the wall and CPU time (user and system,
	// all threads) of finding the hyperparameters.
	Seconds, CPUSeconds float64
	// Prior is the prior of the fit (none if its Mu is nil).
	Prior fit.LogNormalPrior
	// Hessian is the curvature of the exact log posterior at a MAP fit's
	// optimum (FitResult.Hessian), for LaplaceLogEvidence; nil if not
	// measured.
	Hessian []float64
	// LogPred is the log predictive probability of each test label.
	LogPred []float64
}

// MaxStudySE is the largest standard error of the table's exact log
// marginal likelihoods.
const MaxStudySE = 0.1

// ExactLogML estimates the exact log marginal likelihood of data under k
// with fit's estimator (ep, greedy order), doubling the particles from
// 10^4 until the standard error is at most MaxStudySE (at most 3.2 10^5).
func ExactLogML(ctx context.Context, data *gp.Classifier, k *gp.Kernel, seed uint64) (logML, se float64, samples int, err error) {
	f, err := core.Prepare(data.Box(k), fit.FitCandidate, seed, 0)
	if err != nil {
		return 0, 0, 0, err
	}
	for m := 10000; ; m *= 2 {
		res, err := core.Estimate(ctx, f, core.Config{Method: fit.FitCandidate.Method, Samples: m, Seed: seed})
		if err != nil {
			return 0, 0, 0, err
		}
		if res.SE <= MaxStudySE || m >= 320000 {
			return res.LogP, res.SE, m, nil
		}
	}
}

// HeldOut trains gpc on train under k (samples particles) and returns the
// posterior probabilities of y = +1 at the test points.
func HeldOut(ctx context.Context, train, test *gp.Classifier, k *gp.Kernel, samples int, seed uint64) ([]float64, error) {
	f, err := core.Prepare(train.Box(k), fit.FitCandidate, seed, 0)
	if err != nil {
		return nil, err
	}
	res, err := core.Estimate(ctx, f, core.Config{Method: fit.FitCandidate.Method, Samples: samples, Seed: seed, Keep: true})
	if err != nil {
		return nil, err
	}
	t, n, d := len(test.Y), len(train.Y), train.D
	r, vars := make([]float64, t*n), make([]float64, t)
	for i := range t {
		vars[i] = gp.ClassifierTestRow(r[i*n:i*n+n], k, train.X, d, train.Y, test.X[i*d:i*d+d])
	}
	post := make([]core.Posterior, t)
	if err := core.Predict(post, f, res.Cloud, r, vars); err != nil {
		return nil, err
	}
	ps := make([]float64, t)
	for i, p := range post {
		ps[i] = p.P
	}
	return ps, nil
}

// Score returns the accuracy of the probabilities p of y = +1 against the
// labels y, and the mean log probability of the true labels (each
// probability clamped to [1e-300, 1]).
func Score(p, y []float64) (acc, mlpp float64) {
	for _, lq := range LogPredictive(p, y) {
		if lq > math.Log(0.5) {
			acc++
		}
		mlpp += lq
	}
	return acc / float64(len(p)), mlpp / float64(len(p))
}

// LogPredictive returns the log probability of each true label y_i under
// the probabilities p_i of y = +1 (clamped to [1e-300, 1]).
func LogPredictive(p, y []float64) []float64 {
	lq := make([]float64, len(p))
	for i, pi := range p {
		q := pi
		if y[i] < 0 {
			q = 1 - pi
		}
		lq[i] = math.Log(math.Max(q, 1e-300))
	}
	return lq
}

// PairedSE is the standard error of the mean of a - b over paired test
// points (the sample standard deviation of the differences over
// sqrt(n)): how far apart two models' mean log predictive probabilities
// on the same test set may lie by the test set's luck alone.
func PairedSE(a, b []float64) float64 {
	n := float64(len(a))
	m := 0.0
	for i := range a {
		m += (a[i] - b[i]) / n
	}
	v := 0.0
	for i := range a {
		d := a[i] - b[i] - m
		v += d * d
	}
	return math.Sqrt(v / (n - 1) / n)
}

// FitGPC runs gpc's fit (fit.Surface.Fit, the defaults of gpc-fit, its box
// of the hyperparameters (fit.DataScale.Bounds) included; with the
// curvature at the optimum, FitResult.Hessian, if hessian is set) from
// start under prior (none if its Mu is nil; the EP stage gets the same
// prior), and also returns the EP-evidence optimum its first stage found
// and the wall and CPU seconds (cpu, if not nil, returns the process's CPU
// time) of each: the EP stage's alone, and the whole fit.
func FitGPC(ctx context.Context, data *gp.Classifier, start gp.Kernel, prior fit.LogNormalPrior, samples int, seed uint64, hessian bool, cpu func() time.Duration) (exact, ep gp.Kernel, epSecs, fitSecs, epCPU, fitCPU float64, res *fit.FitResult, err error) {
	if cpu == nil {
		cpu = func() time.Duration { return 0 }
	}
	params := start.Hypers()
	theta0 := make([]float64, len(params))
	for j, h := range params {
		theta0[j] = math.Log(h.Get(&start))
	}
	t0, c0 := time.Now(), cpu()
	scale, err := fit.NewDataScale(data.X, data.D)
	if err != nil {
		return exact, ep, 0, 0, 0, 0, nil, err
	}
	lower, upper := scale.Bounds(&start, params)
	s, err := fit.NewFitSurface(ctx, data, start, params, theta0, fit.FitCandidate, 0, core.Config{Samples: samples, Seed: seed})
	if err != nil {
		return exact, ep, 0, 0, 0, 0, nil, err
	}
	epTheta, _, err := s.MaximizeEP(ctx, theta0, fit.FitConfig{Prior: prior, Lower: lower, Upper: upper})
	if err != nil {
		return exact, ep, 0, 0, 0, 0, nil, err
	}
	epSecs, epCPU = time.Since(t0).Seconds(), (cpu() - c0).Seconds()
	t0, c0 = time.Now(), cpu()
	res, err = s.Fit(ctx, theta0, fit.FitConfig{Samples: samples, Seed: seed, Prior: prior, Hessian: hessian, Lower: lower, Upper: upper})
	fitSecs, fitCPU = time.Since(t0).Seconds(), (cpu() - c0).Seconds()
	if res == nil {
		return exact, ep, epSecs, fitSecs, epCPU, fitCPU, nil, err
	}
	// A fit that ends short of ConvergedRatio is still reported, with its
	// gradient norm.
	return *s.KernelAt(res.Theta), *s.KernelAt(epTheta), epSecs, fitSecs, epCPU, fitCPU, res, nil
}

// LaplaceLogEvidence is the Laplace approximation of the log evidence of a
// model whose hyperparameters theta (k of them) have a prior: with
// logJoint = log p(y | theta*) + log p(theta*) at the maximum theta* of
// the log posterior and H (k x k, row-major) its Hessian there,
//
//	log p(y) ~ logJoint + k/2 log(2 pi) - 1/2 log det(-H).
//
// It compares models with different hyperparameters (with and without a
// bias) by their evidence, where their joint densities alone, of different
// dimension, do not compare. It returns NaN if -H is not positive
// definite.
func LaplaceLogEvidence(logJoint float64, h []float64) float64 {
	k := int(math.Sqrt(float64(len(h))))
	neg := mat.NewSymDense(k, nil)
	for i := range k {
		for j := i; j < k; j++ {
			neg.SetSym(i, j, -(h[i*k+j]+h[j*k+i])/2)
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(neg) {
		return math.NaN()
	}
	return logJoint + float64(k)/2*math.Log(2*math.Pi) - ch.LogDet()/2
}
