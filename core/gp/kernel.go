package gp

import (
	"fmt"
	"math"
)

// KernelKind names a covariance function of the latent process.
type KernelKind int

const (
	// KernelRBF is the paper's squared exponential (eq. RBF):
	//
	//	k(x, x') = beta exp(-||x - x'||^2 / alpha^2)
	//
	// Note: alpha^2, not 2 alpha^2.
	KernelRBF KernelKind = iota
	// KernelLinear is the dot product, scaled: k(x, x') = beta x'x'.
	KernelLinear
	// KernelARD is the RBF with one length scale per feature:
	//
	//	k(x, x') = beta exp(-sum_d (x_d - x'_d)^2 / alpha_d^2)
	KernelARD
	// KernelMatern32 is the Matern kernel with nu = 3/2, r = ||x - x'||:
	//
	//	k = beta (1 + sqrt(3) r / alpha) exp(-sqrt(3) r / alpha)
	KernelMatern32
	// KernelMatern52 is the Matern kernel with nu = 5/2:
	//
	//	k = beta (1 + sqrt(5) r / alpha + 5 r^2 / (3 alpha^2)) exp(-sqrt(5) r / alpha)
	KernelMatern52
)

var kernelNames = [...]string{"rbf", "linear", "ard", "matern32", "matern52"}

func (k KernelKind) String() string {
	if k >= 0 && int(k) < len(kernelNames) {
		return kernelNames[k]
	}
	return fmt.Sprintf("KernelKind(%d)", int(k))
}

// ParseKernel returns the KernelKind called name.
func ParseKernel(name string) (KernelKind, bool) {
	for i, s := range kernelNames {
		if s == name {
			return KernelKind(i), true
		}
	}
	return 0, false
}

// Kernel is a covariance function with its hyperparameters. Alpha holds the
// length scale (one value; KernelARD: one per feature; unused by
// KernelLinear); Beta is the latent scale; Bias is a constant added to
// every covariance (an additive bias term, 0 for none).
type Kernel struct {
	Kind  KernelKind
	Alpha []float64
	Beta  float64
	Bias  float64
}

// Validate reports hyperparameters that do not define a covariance for
// features of dimension d.
func (k *Kernel) Validate(d int) error {
	switch {
	case !(k.Beta >= 0) || math.IsInf(k.Beta, 1):
		return fmt.Errorf("core: beta %v: the latent scale must be a finite number >= 0", k.Beta)
	case !(k.Bias >= 0) || math.IsInf(k.Bias, 1):
		return fmt.Errorf("core: bias %v must be a finite number >= 0", k.Bias)
	}
	want := 1
	switch k.Kind {
	case KernelLinear:
		want = 0
	case KernelARD:
		want = d
	}
	if want == 0 {
		if len(k.Alpha) > 0 {
			return fmt.Errorf("core: the %v kernel has no length scale", k.Kind)
		}
		return nil
	}
	if len(k.Alpha) != want {
		return fmt.Errorf("core: the %v kernel needs %d length scale(s) alpha, got %d", k.Kind, want, len(k.Alpha))
	}
	for _, a := range k.Alpha {
		if !(a > 0) || math.IsInf(a, 1) {
			return fmt.Errorf("core: length scale alpha %v must be a finite number > 0", a)
		}
	}
	return nil
}

// Eval returns k(x, y). It panics if the lengths differ.
func (k *Kernel) Eval(x, y []float64) float64 {
	if len(x) != len(y) {
		panic("gp: kernel arguments differ in length")
	}
	var v float64
	switch k.Kind {
	case KernelLinear:
		s := 0.0
		for i := range x {
			s += x[i] * y[i]
		}
		v = k.Beta * s
	case KernelARD:
		s := 0.0
		for i := range x {
			d := (x[i] - y[i]) / k.Alpha[i]
			s += d * d
		}
		v = k.Beta * math.Exp(-s)
	default:
		s := 0.0
		for i := range x {
			d := x[i] - y[i]
			s += d * d
		}
		a := k.Alpha[0]
		switch k.Kind {
		case KernelRBF:
			v = k.Beta * math.Exp(-s/(a*a))
		case KernelMatern32:
			t := math.Sqrt(3*s) / a
			v = k.Beta * (1 + t) * math.Exp(-t)
		case KernelMatern52:
			t := math.Sqrt(5*s) / a
			v = k.Beta * (1 + t + t*t/3) * math.Exp(-t)
		}
	}
	return v + k.Bias
}

// LowerTo sets dst[i*q+j] = k.Eval(x_i, x_j) for j <= i < q, x holding q
// points of d features one after the other: the lower triangle of their
// covariance, row by row (q x q), each row by evalRowTo (Eval's bits);
// the entries above the diagonal are left as they were. It panics if the
// lengths disagree.
func (k *Kernel) LowerTo(dst, x []float64, d int) {
	if d <= 0 || len(x)%d != 0 {
		panic("gp: LowerTo: the lengths disagree")
	}
	q := len(x) / d
	dst = dst[:q*q]
	for i := range q {
		k.evalRowTo(dst[i*q:i*q+i+1], x[i*d:i*d+d], x[:(i+1)*d], d)
	}
}

// evalRowTo sets dst[j] = k.Eval(xi, x[j*d:j*d+d]) for each j, x holding
// len(dst) rows of d features: the RBF and ARD kernels in one loop, with
// Eval's operations in Eval's order (the same bits), the others through
// Eval. It panics if the lengths disagree.
func (k *Kernel) evalRowTo(dst, xi, x []float64, d int) {
	if len(xi) != d || len(x) != len(dst)*d {
		panic("gp: evalRowTo: the lengths disagree")
	}
	switch k.Kind {
	case KernelRBF:
		a := k.Alpha[0]
		aa := a * a
		for j := range dst {
			xj := x[j*d : j*d+d]
			s := 0.0
			for i, v := range xi {
				t := v - xj[i]
				s += t * t
			}
			dst[j] = k.Beta*math.Exp(-s/aa) + k.Bias
		}
	case KernelARD:
		alpha := k.Alpha[:d]
		for j := range dst {
			xj := x[j*d : j*d+d]
			s := 0.0
			for i, v := range xi {
				t := (v - xj[i]) / alpha[i]
				s += t * t
			}
			dst[j] = k.Beta*math.Exp(-s) + k.Bias
		}
	default:
		for j := range dst {
			dst[j] = k.Eval(xi, x[j*d:j*d+d])
		}
	}
}

// HyperKind names a kernel hyperparameter.
type HyperKind int

const (
	// HyperAlpha is a length scale: Kernel.Alpha[Index].
	HyperAlpha HyperKind = iota
	// HyperBeta is the latent scale Kernel.Beta.
	HyperBeta
	// HyperBias is the additive bias Kernel.Bias.
	HyperBias
)

// Hyper is one hyperparameter of a Kernel: its kind and, for HyperAlpha,
// the index into Kernel.Alpha. Class is the kernel it belongs to where a
// Model takes several (a Multiclass with a kernel per class: class
// Class's); 0 for a single kernel.
type Hyper struct {
	Kind  HyperKind
	Index int
	Class int
}

// Get returns the hyperparameter's value in k.
func (h Hyper) Get(k *Kernel) float64 {
	switch h.Kind {
	case HyperAlpha:
		return k.Alpha[h.Index]
	case HyperBeta:
		return k.Beta
	}
	return k.Bias
}

// Set sets the hyperparameter's value in k.
func (h Hyper) Set(k *Kernel, v float64) {
	switch h.Kind {
	case HyperAlpha:
		k.Alpha[h.Index] = v
	case HyperBeta:
		k.Beta = v
	default:
		k.Bias = v
	}
}

// Hypers returns the hyperparameters of k that a gradient moves: every
// length scale (one per feature for KernelARD, none for KernelLinear), the
// latent scale and, if k.Bias > 0, the bias.
func (k *Kernel) Hypers() []Hyper {
	var hs []Hyper
	if k.Kind != KernelLinear {
		for i := range k.Alpha {
			hs = append(hs, Hyper{Kind: HyperAlpha, Index: i})
		}
	}
	hs = append(hs, Hyper{Kind: HyperBeta})
	if k.Bias > 0 {
		hs = append(hs, Hyper{Kind: HyperBias})
	}
	return hs
}

// LogDerivTo fills dst (one value per element of hs) with the derivatives
// of k(x, y) with respect to the logs of the hyperparameters hs:
//
//	RBF:      d k / d log alpha = k0 2 r^2 / alpha^2
//	ARD:      d k / d log alpha_d = k0 2 (x_d - y_d)^2 / alpha_d^2
//	Matern32: d k / d log alpha = beta t^2 exp(-t),                t = sqrt(3) r / alpha
//	Matern52: d k / d log alpha = beta t^2 (1 + t) exp(-t) / 3,    t = sqrt(5) r / alpha
//	all:      d k / d log beta = k0,   d k / d log bias = bias,
//
// k0 = k - bias, r = ||x - y||. It panics if the lengths of x and y differ,
// if dst and hs do, or if hs names a length scale k does not have.
func (k *Kernel) LogDerivTo(dst []float64, hs []Hyper, x, y []float64) {
	if len(dst) != len(hs) {
		panic("gp: LogDerivTo: dst and hs differ in length")
	}
	k0 := k.Eval(x, y) - k.Bias
	var s float64 // r^2 (RBF, Matern)
	if k.Kind != KernelARD && k.Kind != KernelLinear {
		for i := range x {
			d := x[i] - y[i]
			s += d * d
		}
	}
	for n, h := range hs {
		switch h.Kind {
		case HyperBeta:
			dst[n] = k0
		case HyperBias:
			dst[n] = k.Bias
		case HyperAlpha:
			a := k.Alpha[h.Index]
			switch k.Kind {
			case KernelARD:
				d := (x[h.Index] - y[h.Index]) / a
				dst[n] = k0 * 2 * d * d
			case KernelRBF:
				dst[n] = k0 * 2 * s / (a * a)
			case KernelMatern32:
				t := math.Sqrt(3*s) / a
				dst[n] = k.Beta * t * t * math.Exp(-t)
			case KernelMatern52:
				t := math.Sqrt(5*s) / a
				dst[n] = k.Beta * t * t * (1 + t) * math.Exp(-t) / 3
			default:
				panic("gp: the linear kernel has no length scale")
			}
		}
	}
}

// Correlation returns, for a stationary kernel (every kind but
// KernelLinear), the correlation c of the latent function at x and y,
// (k(x, y) - bias) / beta, and 1 - c computed without cancellation where
// c is near 1 (for a kernel so smooth that the points barely differ). It
// panics for KernelLinear and if the lengths differ.
func (k *Kernel) Correlation(x, y []float64) (c, oneMinus float64) {
	if len(x) != len(y) {
		panic("gp: kernel arguments differ in length")
	}
	s := 0.0
	switch k.Kind {
	case KernelLinear:
		panic("gp: the linear kernel is not stationary")
	case KernelARD:
		for i := range x {
			d := (x[i] - y[i]) / k.Alpha[i]
			s += d * d
		}
		return math.Exp(-s), -math.Expm1(-s)
	}
	for i := range x {
		d := x[i] - y[i]
		s += d * d
	}
	a := k.Alpha[0]
	switch k.Kind {
	case KernelRBF:
		s /= a * a
		return math.Exp(-s), -math.Expm1(-s)
	case KernelMatern32:
		t := math.Sqrt(3*s) / a
		c = (1 + t) * math.Exp(-t)
		if t < 1e-3 {
			return c, t * t / 2 * (1 - 2*t/3)
		}
		return c, 1 - c
	}
	t := math.Sqrt(5*s) / a
	c = (1 + t + t*t/3) * math.Exp(-t)
	if t < 1e-3 {
		return c, t * t / 6 * (1 - t*t/4)
	}
	return c, 1 - c
}
