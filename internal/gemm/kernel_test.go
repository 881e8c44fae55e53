package gemm

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// reference is the path that runs kernGo, the specification: every path
// but openblas must give its bits.
var reference = &kernel{name: "reference", nc: nc64, packSize: groupSize, pack: packGroups,
	rows: func(bp []float64, _ *[]float64, i0, i1, n, kc, kcPad int, a []float64, lda, ag int, c []float64, ldc, cg int, add bool) {
		for i := i0; i < i1; i++ {
			kernGo(a[i*lda:], ag, kc, bp, kcPad, c[i*ldc:], cg, n, add)
		}
	}}

// exactPaths are the paths of this build and CPU that compute the
// package's arithmetic (all but openblas).
func exactPaths() []*kernel {
	var ks []*kernel
	for _, k := range kernels {
		if k.product == nil {
			ks = append(ks, k)
		}
	}
	return ks
}

// product is one C = A B' to compare between paths: A and C row-major
// with strides or stored by groups of 8 columns.
type product struct {
	m, n, k       int
	grouped       bool
	lda, ldb, ldc int
	a, b, c0      []float64
	add           bool
	workers       int
}

// newProduct draws a product of the shape with random strides and values,
// with special values (signed zeros, exact cancellations, large and tiny
// magnitudes) sprinkled in.
func newProduct(r *rand.Rand, m, n, k int, grouped, add bool) *product {
	grouped = grouped && m > 1 // one row by groups is row-major
	p := &product{m: m, n: n, k: k, grouped: grouped, add: add, workers: 1 + r.IntN(3)}
	p.ldb = k + r.IntN(3)
	p.b = randSpecial(r, max(0, (n-1)*p.ldb+k))
	if grouped {
		p.lda, p.ldc = 8, 8
		p.a = randSpecial(r, (k+7)/8*8*m)
		p.c0 = randSpecial(r, (n+7)/8*8*m)
	} else {
		p.lda, p.ldc = k+r.IntN(3), n+r.IntN(3)
		// A's last row ends at column k: a kernel that reads past the
		// chunk's last vector would fault or read beyond the slice.
		p.a = randSpecial(r, max(0, (m-1)*p.lda+k))
		p.c0 = randSpecial(r, (m-1)*p.ldc+n)
	}
	return p
}

func randSpecial(r *rand.Rand, n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		switch r.IntN(40) {
		case 0:
			s[i] = math.Copysign(0, -1)
		case 1:
			s[i] = 0
		case 2:
			s[i] = 1e300 * r.NormFloat64()
		case 3:
			s[i] = 1e-300 * r.NormFloat64()
		case 4:
			s[i] = 1 // with case 5, exact cancellations
		case 5:
			s[i] = -1
		default:
			s[i] = r.NormFloat64()
		}
	}
	return s
}

// run computes the product on path kern and returns C.
func (p *product) run(kern *kernel) []float64 {
	var w Workspace
	c := append([]float64(nil), p.c0...)
	if p.grouped {
		w.ntGrouped(kern, p.m, p.n, p.k, p.a, 8, 8*p.m, p.b, p.ldb, c, 8, 8*p.m, p.add, p.workers)
	} else {
		w.ntGrouped(kern, p.m, p.n, p.k, p.a, p.lda, 8, p.b, p.ldb, c, p.ldc, 8, p.add, p.workers)
	}
	return c
}

// checkPath compares path kern with the reference on p, bit for bit
// (NaN against NaN).
func checkPath(t *testing.T, kern *kernel, p *product) {
	t.Helper()
	want, got := p.run(reference), p.run(kern)
	for i := range want {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) && !(math.IsNaN(got[i]) && math.IsNaN(want[i])) {
			t.Fatalf("%s: m=%d n=%d k=%d grouped=%v add=%v workers=%d: element %d is %v, the reference %v",
				kern.name, p.m, p.n, p.k, p.grouped, p.add, p.workers, i, got[i], want[i])
		}
	}
}

// TestPathsMatchReference runs every path of this CPU against kernGo on
// the shapes of every remainder (rows mod 3 and 4, columns mod 4 and 8,
// the inner dimension mod 8 and across chunks), both storages, with and
// without add.
func TestPathsMatchReference(t *testing.T) {
	for _, kern := range exactPaths() {
		t.Run("path="+kern.name, func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(5, 6))
			for _, s := range shapes {
				for _, grouped := range []bool{false, true} {
					for _, add := range []bool{false, true} {
						checkPath(t, kern, newProduct(r, s[0], s[1], s[2], grouped, add))
					}
				}
			}
		})
	}
}

// TestPathsMatchReferenceRandom draws random shapes (property test).
func TestPathsMatchReferenceRandom(t *testing.T) {
	trials := 300
	if testing.Short() {
		trials = 60
	}
	for _, kern := range exactPaths() {
		t.Run("path="+kern.name, func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(11, 12))
			for range trials {
				m, n, k := 1+r.IntN(40), 1+r.IntN(80), r.IntN(1200)
				if r.IntN(4) == 0 {
					m = 1 + r.IntN(300) // several blocks of rows, several workers
				}
				checkPath(t, kern, newProduct(r, m, n, k, r.IntN(2) == 0, r.IntN(2) == 0))
			}
		})
	}
}

// TestPathsNonFinite: infinities and NaNs propagate as in the reference.
func TestPathsNonFinite(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, kern := range exactPaths() {
		for _, v := range []float64{math.Inf(1), math.Inf(-1), math.NaN()} {
			p := newProduct(r, 7, 13, 37, false, true)
			p.a[r.IntN(len(p.a))] = v
			p.b[r.IntN(len(p.b))] = v
			checkPath(t, kern, p)
		}
	}
}

func TestSetPath(t *testing.T) {
	defer current.Store(current.Load())
	for _, name := range Paths() {
		if err := SetPath(name); err != nil || Path() != name {
			t.Errorf("SetPath(%q): %v, Path() = %q", name, err, Path())
		}
	}
	if err := SetPath("sse9"); err == nil {
		t.Error("SetPath(sse9) did not fail")
	}
	if Paths()[len(Paths())-1] != "generic" {
		t.Errorf("paths %v do not end in generic", Paths())
	}
}

// BenchmarkPaths times every path of this CPU and build on one thread:
// the filter's block products (m x 64 x k) and sub-block products
// (m x 8 x k), the large-N preparation's block updates (C -= A B' with
// k = 64-256; m x 384 x 96 is a block column of the blocked Cholesky's
// trailing update, m x 384 x 256 the same with wider panels), a square
// product. GFLOP/cpu-s divides by the
// process's CPU time (robust to other processes on the machine). Built
// with -tags openblas, the row path=openblas-dgemm is OpenBLAS's
// cblas_dgemm on the whole product, on one thread: the reference rate.
//
//	go test ./internal/gemm -run '^$' -bench Paths -count 3
func BenchmarkPaths(b *testing.B) {
	shapes := [][3]int{{3125, 64, 1984}, {31250, 64, 128}, {3125, 8, 56}, {2048, 2048, 2048},
		{4000, 4000, 128}, {4000, 1000, 64}, {6000, 1000, 256}, {4000, 384, 96}, {4000, 384, 256}}
	smoke := false
	if bt := flag.Lookup("test.benchtime"); testing.Short() || bt != nil && bt.Value.String() == "1x" {
		smoke = true
	}
	for _, s := range shapes {
		m, n, k := s[0], s[1], s[2]
		flops := 2 * float64(m) * float64(n) * float64(k)
		r := rand.New(rand.NewPCG(1, 2))
		x, y, c := randSlice(r, m*k), randSlice(r, n*k), make([]float64, m*n)
		names := Paths()
		if dgemmDirect != nil {
			names = append(names, "openblas-dgemm")
		}
		for p, name := range names {
			b.Run(fmt.Sprintf("path=%s/m=%d/n=%d/k=%d", name, m, n, k), func(b *testing.B) {
				if smoke && flops > 1e9 {
					b.Skip("large: skipped in the smoke run (-benchtime 1x) and under -short")
				}
				var w Workspace
				cpu0 := processCPU()
				for b.Loop() {
					if p == len(kernels) {
						dgemmDirect(m, n, k, x, k, y, k, c, n)
						continue
					}
					w.ntGrouped(kernels[p], m, n, k, x, k, 8, y, k, c, n, 8, false, 1)
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				if cpu := processCPU() - cpu0; cpu > 0 {
					b.ReportMetric(flops*float64(b.N)/cpu.Seconds()/1e9, "GFLOP/cpu-s")
				}
			})
		}
	}
}
