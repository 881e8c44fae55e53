package vecchia

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"github.com/gpc-mc/gpc/core"
)

// The particles' steps against the machine's memory bandwidth
// (docs/vecchia.md, "Speed and memory"): BenchmarkSteps runs groups of the
// estimator on the two-class model and reports the bytes of the
// neighbours' rows its steps read per second (rows_GB/s), BenchmarkCopy a
// STREAM-like copy of arrays as large as a group's particles (GB/s, bytes
// read and written), each on one thread or every thread (-cpu 1,2):
//
//	GPC_BENCH_N=300000 go test ./core/vecchia -run '^$' -bench 'Steps|Copy' -cpu 1,2 -count 5 -benchtime 4x
//
// The steps' share of the copy rate is their ratio. The two count bytes
// differently: the copy's are read and written (16 per float64 moved),
// the steps' are the neighbours' rows they read (each of the rows of a
// step's pattern, one float32 value a particle; neither the row a step
// writes nor a resampling's reordering of the earlier rows), whether
// they come from memory or from a cache: a point is a neighbour of points
// not long after it in the maxmin order, so many of its rows' reads hit
// the last-level cache (docs/vecchia.md, "Speed and memory").

// benchN is the training points of the benchmarks' model (GPC_BENCH_N).
func benchN() int {
	if n, err := strconv.Atoi(os.Getenv("GPC_BENCH_N")); err == nil && n > 0 {
		return n
	}
	return 100000
}

var benchModel struct {
	once sync.Once
	p    *Prepared
	err  error
}

// benchPrepared is the two-class classifier (m = 30) at benchN, prepared
// once.
func benchPrepared(b *testing.B) *Prepared {
	benchModel.once.Do(func() {
		m := classifier2D(b, benchN(), 30)
		benchModel.p, benchModel.err = Prepare(context.Background(), m, nil)
	})
	if benchModel.err != nil {
		b.Fatal(benchModel.err)
	}
	return benchModel.p
}

// benchGroup is the group size of the estimator's default run (10^4
// particles in 64 groups).
const benchGroup = 156

// rowBytes returns the bytes of the neighbours' rows one group's steps
// read: for each row, its proposal pattern's rows of m float32 values.
func rowBytes(p *Prepared, m int) float64 {
	return float64(len(p.prop.nbr)) * float64(m) * 4
}

func BenchmarkSteps(b *testing.B) {
	p := benchPrepared(b)
	threads := runtime.GOMAXPROCS(0)
	cfg := core.Config{Samples: benchGroup * threads, Groups: threads, Threads: threads, Seed: 1}
	b.ResetTimer()
	for i := range b.N {
		cfg.Seed = uint64(i + 1)
		if _, err := Estimate(context.Background(), p, cfg, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(rowBytes(p, benchGroup)*float64(threads)*float64(b.N)/b.Elapsed().Seconds()/1e9, "rows_GB/s")
}

func BenchmarkCopy(b *testing.B) {
	// A group's float32 values, as float64, and at least 256 MB: far
	// beyond the caches.
	n := max(benchN()*benchGroup/2, 1<<25)
	threads := runtime.GOMAXPROCS(0)
	src, dst := make([][]float64, threads), make([][]float64, threads)
	for t := range threads {
		src[t], dst[t] = make([]float64, n), make([]float64, n)
		for i := range src[t] {
			src[t][i], dst[t][i] = float64(i), 1
		}
	}
	b.ResetTimer()
	for range b.N {
		var wg sync.WaitGroup
		for t := range threads {
			wg.Go(func() { copy(dst[t], src[t]) })
		}
		wg.Wait()
	}
	b.ReportMetric(16*float64(n)*float64(threads)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
}

// BenchmarkDraws times EP's draws of q (drawsOfQ) on the two-class
// model's factor, drawBatch of them: one right-hand side at a time
// (solveManyTo with r = 1, the solve the draws took before they were
// batched) against all of them in one pass (r = drawBatch), on one
// goroutine:
//
//	go test ./core/vecchia -run '^$' -bench Draws -count 6
func BenchmarkDraws(b *testing.B) {
	t := benchPrepared(b).prop
	n := t.n
	y := make([]float64, n*drawBatch)
	for i := range y {
		y[i] = float64(i%7) - 3
	}
	x := make([]float64, n*drawBatch)
	b.Run("one", func(b *testing.B) {
		for range b.N {
			for j := range drawBatch {
				t.solveManyTo(x[j*n:(j+1)*n], y[j*n:(j+1)*n], 1)
			}
		}
	})
	b.Run("batch", func(b *testing.B) {
		for range b.N {
			t.solveManyTo(x, y, drawBatch)
		}
	})
}

// BenchmarkMaxMin and BenchmarkEarlierNeighbours time the maxmin order and
// the conditioning sets (m = 30, on every thread) of 10^5 and 10^6 random
// two-dimensional points, the k-d tree's two uses in the preparation:
//
//	go test ./core/vecchia -run '^$' -bench 'MaxMin|EarlierNeighbours' -benchtime 1x -count 5
func BenchmarkMaxMin(b *testing.B) {
	for _, n := range []int{100000, 1000000} {
		x := randomPoints(n, 2, 1)
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			for range b.N {
				MaxMin(x, n, 2)
			}
		})
	}
}

func BenchmarkEarlierNeighbours(b *testing.B) {
	for _, n := range []int{100000, 1000000} {
		x := randomPoints(n, 2, 1)
		var order []int
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			if order == nil {
				order = MaxMin(x, n, 2)
			}
			b.ResetTimer()
			for range b.N {
				EarlierNeighbours(x, 2, order, 30, 0)
			}
		})
	}
}

// BenchmarkSubstitutions times the forward and backward substitutions
// with the prior's factor at benchN, level by level on every core and
// row by row on one (levelSolveThreads):
//
//	GPC_BENCH_N=1000000 go test ./core/vecchia -run '^$' -bench Substitutions -count 5
func BenchmarkSubstitutions(b *testing.B) {
	defer func(v int) { levelSolveThreads = v }(levelSolveThreads)
	m := classifier2D(b, benchN(), 30)
	a := newTri(m)
	a.priorFactor(m)
	a.sched()
	a.columns()
	n := a.n
	y, x := make([]float64, n), make([]float64, n)
	for i := range y {
		y[i] = float64(i%7) - 3
	}
	for _, c := range []struct {
		name string
		lst  int
	}{{"levels", 1}, {"rows", 1 << 20}} {
		levelSolveThreads = c.lst
		b.Run("forward/"+c.name, func(b *testing.B) {
			for range b.N {
				a.solveTo(x, y)
			}
		})
		b.Run("backward/"+c.name, func(b *testing.B) {
			for range b.N {
				a.solveTransTo(x, y)
			}
		})
	}
}

// BenchmarkBlockProducts times one block of blockWidth products of the
// block correction's operator E'(L - I)E (batchApply: a forward solve,
// then the product with A'A + diag(tau) and the backward solve in one
// pass, over all N rows, batchSides sides a thread), on the prior's
// factor with tau = 0.3 and a block of 2000 rows, the cost of each of
// blockLanczos's steps:
//
//	GPC_BENCH_N=1000000 go test ./core/vecchia -run '^$' -bench BlockProducts -count 5
func BenchmarkBlockProducts(b *testing.B) {
	m := benchClassifier(b)
	t := newTri(m)
	t.priorFactor(m)
	tau := make([]float64, m.N)
	for k := range tau {
		tau[k] = 0.3
	}
	var reg []int
	for k := range min(2000, m.N) {
		if !t.dup[k] {
			reg = append(reg, k)
		}
	}
	v, dst := make([][]float64, blockWidth), make([][]float64, blockWidth)
	for j := range v {
		v[j], dst[j] = make([]float64, len(reg)), make([]float64, len(reg))
		for i := range v[j] {
			v[j][i] = float64((i+j)%7) - 3
		}
	}
	ws := newBatchWorkers()
	batchApply(t, reg, m, tau, ws, dst, v)
	b.ResetTimer()
	for range b.N {
		batchApply(t, reg, m, tau, ws, dst, v)
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/float64(blockWidth), "s/vector")
}

var benchClassifierModel struct {
	once sync.Once
	m    *Model
}

// benchClassifier is the two-class model (m = 30) at benchN, built once.
func benchClassifier(b *testing.B) *Model {
	benchClassifierModel.once.Do(func() { benchClassifierModel.m = classifier2D(b, benchN(), 30) })
	return benchClassifierModel.m
}

// BenchmarkPrepare times Prepare on the two-class model (m = 30) at
// benchN, the whole preparation of gpc-train's Vecchia path (Laplace,
// EP's rounds, the proposal's factor and the block correction):
//
//	GPC_BENCH_N=1000000 go test ./core/vecchia -run '^$' -bench Prepare -benchtime 1x -cpuprofile prep.prof
func BenchmarkPrepare(b *testing.B) {
	m := benchClassifier(b)
	b.ResetTimer()
	for range b.N {
		if _, err := Prepare(context.Background(), m, nil); err != nil {
			b.Fatal(err)
		}
	}
}
