package format

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"

	"github.com/gpc-mc/gpc/core"
)

// readCloud reads a whole cloud stream: its train block, test rows (in
// whichever place they are) and particles, checking the runs' order.
func readCloud(t *testing.T, data []byte) (*CloudReader, *TestRows, *core.Cloud, error) {
	t.Helper()
	cr, err := OpenCloud(bytes.NewReader(data), "cloud", checkedMem(t))
	if err != nil {
		return nil, nil, nil, err
	}
	t.Cleanup(cr.Close)
	all := &TestRows{}
	tests := func() error {
		for {
			tr, err := cr.NextTest(1)
			if err != nil || tr == nil {
				return err
			}
			all.Cov = append(all.Cov, tr.Cov...)
			all.Var = append(all.Var, tr.Var...)
			all.ID = append(all.ID, tr.ID...)
			all.Y = append(all.Y, tr.Y...)
		}
	}
	if cr.TestsFirst() {
		if err := tests(); err != nil {
			return cr, nil, nil, err
		}
	}
	cloud, err := cr.LoadParticles(0, nil)
	if err != nil {
		return cr, nil, nil, err
	}
	if !cr.TestsFirst() {
		if err := tests(); err != nil {
			return cr, nil, nil, err
		}
	}
	return cr, all, cloud, nil
}

// TestCloudRoundTrip writes clouds with the test rows first and last, in
// record batches of several sizes, and reads back the same train block,
// test rows and particles.
func TestCloudRoundTrip(t *testing.T) {
	want := sampleCov()
	wantCloud := sampleParticles()
	for _, first := range []bool{true, false} {
		for _, batch := range []int{1, 2, 3, 100} {
			cr, tests, cloud, err := readCloud(t, sampleCloud(t, first, batch, checkedMem(t)))
			if err != nil {
				t.Fatalf("first=%v batch=%d: %v", first, batch, err)
			}
			if cr.TestsFirst() != first || cr.Meta()[KeySchema] != SchemaCloud {
				t.Errorf("first=%v batch=%d: TestsFirst %v, schema %q", first, batch, cr.TestsFirst(), cr.Meta()[KeySchema])
			}
			if !reflect.DeepEqual(cr.Train.Cov, want.Cov) || !reflect.DeepEqual(cr.Train.Y, want.Y) || !reflect.DeepEqual(cr.Train.ID, want.ID) ||
				!reflect.DeepEqual(cr.Train.Lower, want.Lower) || !reflect.DeepEqual(cr.Perm, []int{2, 0, 1}) {
				t.Errorf("first=%v batch=%d: train block %+v", first, batch, cr.Train)
			}
			if !reflect.DeepEqual(*tests, want.Test) {
				t.Errorf("first=%v batch=%d: test rows %+v, want %+v", first, batch, *tests, want.Test)
			}
			for g := range wantCloud.Groups {
				if !reflect.DeepEqual(cloud.Groups[g], wantCloud.Groups[g]) {
					t.Errorf("first=%v batch=%d: group %d %+v, want %+v", first, batch, g, cloud.Groups[g], wantCloud.Groups[g])
				}
			}
		}
	}
}

// TestCloudParticlesSkipTests: NextParticles skips the leading test rows
// that were not read (gpc-predict --cloud predicts other test rows), and
// its runs are windows of at most a batch, of one group.
func TestCloudParticlesSkipTests(t *testing.T) {
	cr, err := OpenCloud(bytes.NewReader(sampleCloud(t, true, 2, checkedMem(t))), "cloud", checkedMem(t))
	if err != nil {
		t.Fatal(err)
	}
	defer cr.Close()
	var runs [][2]int
	for {
		ps, err := cr.NextParticles()
		if err != nil {
			t.Fatal(err)
		}
		if ps == nil {
			break
		}
		runs = append(runs, [2]int{ps.Group, len(ps.LogW)})
		ps.Release()
	}
	// Batches of 2 rows: 3 train rows, 2 test rows, then 2 + 1 particles
	// (written group by group, each group from a new batch).
	if want := [][2]int{{0, 1}, {0, 1}, {1, 1}}; !reflect.DeepEqual(runs, want) && !reflect.DeepEqual(runs, [][2]int{{0, 2}, {1, 1}}) {
		t.Errorf("runs (group, particles) %v", runs)
	}
	if tr, err := cr.NextTest(10); tr != nil || err != nil {
		t.Errorf("test rows after the particles of a tests-first cloud: %v, %v", tr, err)
	}
}

// TestCloudLayoutErrors: a cloud whose rows are not where its metadata
// says is refused with a DataError naming the place.
func TestCloudLayoutErrors(t *testing.T) {
	mem := checkedMem(t)
	c := sampleCov()
	cloud := sampleParticles()
	meta := func() map[string]string {
		return map[string]string{KeyGroupSizes: "2,1", KeyGroupLogP: "-2,-2.5", KeyOrder: "2,0,1", KeyFingerprint: Fingerprint(c.Cov)}
	}
	write := func(tests *TestRows, m map[string]string, after bool, z00 float64, logZ0 ...float64) []byte {
		var buf bytes.Buffer
		cw, err := NewCloudWriter(&buf, c, nil, tests, m, 100, mem)
		if err != nil {
			t.Fatal(err)
		}
		for g := range cloud.Groups {
			grp := cloud.Groups[g]
			grp.Z = append([]float64(nil), grp.Z...)
			if g == 0 {
				grp.Z[0] = z00
				if len(logZ0) > 0 {
					grp.LogZ = logZ0[0]
				}
			}
			if err := cw.WriteParticles(g, &grp); err != nil {
				t.Fatal(err)
			}
		}
		if after {
			if err := cw.WriteTest(&c.Test); err == nil && tests != nil {
				t.Fatal("WriteTest after the particles of a tests-first cloud succeeded")
			}
		}
		if err := cw.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	wrongCount := meta()
	wrongCount[KeyGroupSizes] = "2,2"
	shortGroup := meta()
	shortGroup[KeyGroupSizes] = "1,2"
	twoFirst := meta()
	twoFirst[KeyTestsFirst] = "2" // but none written before the particles
	zeroFirst := meta()
	zeroFirst[KeyTestsFirst] = "0" // and test rows written after them
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"leading test rows missing", write(nil, twoFirst, false, 0.1), "0 test rows before the particles, but metadata gpc:tests_first announces 2"},
		{"test rows after a tests-first cloud", write(nil, zeroFirst, true, 0.1), "a test row after the particles, but metadata gpc:tests_first says"},
		{"NaN draw", write(&c.Test, meta(), false, math.NaN()), "batch 2, row 5, z[0]: NaN: values must be finite"},
		{"Inf draw", write(nil, meta(), true, math.Inf(1)), "values must be finite"},
		{"particles missing", write(&c.Test, wrongCount, false, 0.1), `batch 5, row 9: a "group" row where particle 1 of group 1 was expected`},
		{"group row missing", write(&c.Test, shortGroup, false, 0.1), `a "particle" row (group 0) where the row of group 0 was expected, after its 1 particles`},
		{"NaN group estimate", write(&c.Test, meta(), false, 0.1, math.NaN()), `column "log_p": NaN: a group's estimate of log P must be a number below +Inf`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, _, err := readCloud(t, tc.data)
			var de *DataError
			if !errors.As(err, &de) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want a DataError with %q", err, tc.want)
			}
		})
	}
}

// TestGuardLargeBody: a message body larger than trustedLen is read by the
// guard itself, its buffer growing as the data arrive (Arrow's reader
// allocates the length it is told first: a fuzzed cloud whose body claimed
// 98 GB ran the process out of memory, testdata/fuzz/FuzzOpenCloud/
// 2f2bffaba7f4b9ec): a real body of more than 64 MiB (a 3000 x 3000 train
// block in one batch) reads back, and the stream cut inside it is a data
// error.
func TestGuardLargeBody(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a 72 MB batch")
	}
	const n = 3000
	c := &Covariance{N: n, Cov: make([]float64, n*n)}
	for i := range n {
		for j := range n {
			c.Cov[i*n+j] = 1 / (1 + math.Abs(float64(i-j)))
		}
	}
	var buf bytes.Buffer
	if err := WriteCovariance(&buf, c, nil, n, checkedMem(t)); err != nil {
		t.Fatal(err)
	}
	got, err := ReadCovariance(bytes.NewReader(buf.Bytes()), "big", checkedMem(t))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Cov, c.Cov) {
		t.Fatal("the 72 MB batch read back differs")
	}
	cut := buf.Bytes()[:buf.Len()/2]
	if _, err := ReadCovariance(bytes.NewReader(cut), "cut", checkedMem(t)); err == nil || !strings.Contains(err.Error(), "body") {
		t.Errorf("a stream cut inside a 72 MB body: %v", err)
	}
}

// TestCloudFactor: the factor rows of a gpc.cloud/3 stream give back the
// factor the particles were drawn with, bit for bit (with EP twisting,
// with tilting and with neither; factor rows in one record batch and
// split over several), and the test row count still comes out of gpc:rows.
func TestCloudFactor(t *testing.T) {
	defer func(v int) { factorBatchValues = v }(factorBatchValues)
	c := sampleCov()
	for _, cand := range []core.Candidate{{Method: core.MethodEP, Order: core.OrderGreedy}, {Method: core.MethodMET, Order: core.OrderSharp}, {Method: core.MethodSMC, Order: core.OrderGiven}} {
		f := sampleFactor(t, c, cand)
		parts := f.Parts()
		for _, values := range []int{1 << 22, 3, 1} {
			factorBatchValues = values
			cloud := sampleParticles()
			data := writeFactorCloud(t, c, &parts, map[string]string{KeyFingerprint: Fingerprint(c.Cov),
				KeyRows: "11"}, 2) // 3 train, 3 factor, 3 particle and 2 group rows
			cr, _, got, err := readCloud(t, data)
			if err != nil {
				t.Fatalf("%v, %d values a batch: %v", cand, values, err)
			}
			if cr.Factor == nil || !reflect.DeepEqual(cr.Factor.Parts(), parts) {
				t.Errorf("%v, %d values a batch: factor read back %+v, written %+v", cand, values, cr.Factor, parts)
			}
			if !reflect.DeepEqual(got.Groups[1], cloud.Groups[1]) || cr.TestRowCount() != 0 {
				t.Errorf("%v, %d values a batch: particles %+v, test rows %d", cand, values, got.Groups, cr.TestRowCount())
			}
		}
	}
}

// sampleFactor prepares the train block c for cand, as gpc-train does.
func sampleFactor(t *testing.T, c *Covariance, cand core.Candidate) *core.Factor {
	t.Helper()
	box := core.Box{N: c.N, Cov: c.Cov, Lower: c.Lower, Upper: c.Upper, Mean: c.Mean}
	f, err := core.Prepare(box, cand, 1, 1e-12)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestCloudFactorErrors: factor rows that do not match their metadata
// are refused with a DataError naming the place.
func TestCloudFactorErrors(t *testing.T) {
	c := sampleCov()
	f := sampleFactor(t, c, core.Candidate{Method: core.MethodEP, Order: core.OrderGreedy})
	write := func(edit func(m map[string]string) map[string]string) []byte {
		parts := f.Parts()
		// The schema's metadata edited: the stream rewritten with it.
		return rewriteMeta(t, writeFactorCloud(t, c, &parts, map[string]string{KeyFingerprint: Fingerprint(c.Cov)}, 100), edit)
	}
	for _, tc := range []struct {
		name string
		edit func(m map[string]string) map[string]string
		want string
	}{
		{"sites dropped", func(m map[string]string) map[string]string {
			delete(m, KeyFactorTau)
			delete(m, KeyFactorKappa)
			delete(m, KeyFactorM)
			return m
		}, `batch 1, row 3: column "z" has 1 entries, want 0`},
		{"sites short", func(m map[string]string) map[string]string { m[KeyFactorTau] = "1,2"; return m }, "metadata gpc:factor_tau has 2 values for 3 variables"},
		{"bounds missing", func(m map[string]string) map[string]string { delete(m, KeyFactorA); return m }, "metadata gpc:factor without gpc:factor_a"},
		{"scalars wrong", func(m map[string]string) map[string]string { m[KeyFactor] = "jitter=x"; return m }, "metadata gpc:factor: jitter"},
		{"NaN site", func(m map[string]string) map[string]string { m[KeyFactorTau] = "NaN,0,0"; return m }, "the factor: factor part Tau[0] is NaN"},
		{"in a gpc.cloud/2", func(m map[string]string) map[string]string { m[KeySchema] = schemaCloudV2; return m }, "metadata gpc:factor in a gpc.cloud/2 stream"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, _, err := readCloud(t, write(tc.edit))
			var de *DataError
			if !errors.As(err, &de) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want a DataError with %q", err, tc.want)
			}
		})
	}
}

// writeFactorCloud writes a cloud of c with factor (nil: none), meta
// (gpc:group_sizes and gpc:order added unless set) and sampleParticles'
// groups, batch rows a record batch.
func writeFactorCloud(t *testing.T, c *Covariance, factor *core.FactorParts, meta map[string]string, batch int) []byte {
	t.Helper()
	if _, ok := meta[KeyGroupSizes]; !ok {
		meta[KeyGroupSizes] = "2,1"
	}
	if _, ok := meta[KeyOrder]; !ok && factor != nil {
		meta[KeyOrder] = JoinInts(factor.Perm)
	}
	var buf bytes.Buffer
	cw, err := NewCloudWriter(&buf, c, factor, nil, meta, batch, checkedMem(t))
	if err != nil {
		t.Fatal(err)
	}
	cloud := sampleParticles()
	for g := range cloud.Groups {
		if err := cw.WriteParticles(g, &cloud.Groups[g]); err != nil {
			t.Fatal(err)
		}
	}
	if err := cw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// rewriteMeta rewrites an Arrow stream with its schema's metadata edited.
func rewriteMeta(t *testing.T, data []byte, edit func(m map[string]string) map[string]string) []byte {
	t.Helper()
	mem := checkedMem(t)
	r, err := ipc.NewReader(bytes.NewReader(data), ipc.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	md := arrow.MetadataFrom(edit(r.Schema().Metadata().ToMap()))
	schema := arrow.NewSchema(r.Schema().Fields(), &md)
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	for r.Next() {
		rec := array.NewRecord(schema, r.Record().Columns(), r.Record().NumRows())
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestCloudLean: OpenCloudLean keeps no train block when the cloud carries
// its factor, still checks the block against the fingerprint, and keeps it
// when the cloud has no factor.
func TestCloudLean(t *testing.T) {
	c := sampleCov()
	f := sampleFactor(t, c, core.Candidate{Method: core.MethodEP, Order: core.OrderGreedy})
	parts := f.Parts()
	write := func(factor *core.FactorParts, fp string) []byte {
		return writeFactorCloud(t, c, factor, map[string]string{KeyOrder: JoinInts(parts.Perm), KeyFingerprint: fp}, 2)
	}
	for _, tc := range []struct {
		name   string
		data   []byte
		kept   bool
		errMsg string
	}{
		{"with its factor", write(&parts, Fingerprint(c.Cov)), false, ""},
		{"without", write(nil, Fingerprint(c.Cov)), true, ""},
		{"a wrong fingerprint", write(&parts, "00"), false, "does not match the cloud's own fingerprint"},
	} {
		cr, err := OpenCloudLean(bytes.NewReader(tc.data), "cloud", checkedMem(t))
		if tc.errMsg != "" {
			if err == nil || !strings.Contains(err.Error(), tc.errMsg) {
				t.Errorf("%s: error %v, want %q", tc.name, err, tc.errMsg)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if (cr.Train.Cov != nil) != tc.kept || (tc.kept && !reflect.DeepEqual(cr.Train.Cov, c.Cov)) || !reflect.DeepEqual(cr.Train.Y, c.Y) {
			t.Errorf("%s: train block %+v", tc.name, cr.Train)
		}
		cr.Close()
	}
}

// allocated returns the bytes f allocates on the heap (its callers do not
// run in parallel, so that the count is theirs).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// announcedBound is the most a reader may allocate for a small stream
// whose metadata announces far more than it holds: a few MiB, where
// reserving for the count announced took hundreds.
const announcedBound = 16 << 20

// TestCloudAnnouncedCounts: a cloud whose metadata announces more than it
// holds (4096 train rows and one of them; a group of 2^22 particles and
// two of them) fails on the count, with a data error, without reserving
// memory for what was announced (it did: 128 MB for each, and Go's fatal
// out of memory for an N of 10^6 or a group of 10^12).
func TestCloudAnnouncedCounts(t *testing.T) {
	const n = 4096
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	mem := checkedMem(t)
	schema := cloudSchema(map[string]string{KeySchema: SchemaCloud, KeyN: strconv.Itoa(n), KeyOrder: JoinInts(order), KeyGroupSizes: "1"}, false)
	rb := array.NewRecordBuilder(mem, schema)
	defer rb.Release()
	rb.Field(0).(*array.StringBuilder).Append(KindTrain)
	cov := rb.Field(1).(*array.ListBuilder)
	cov.Append(true)
	cov.ValueBuilder().(*array.Float64Builder).AppendValues(make([]float64, n), nil)
	rb.Field(2).(*array.ListBuilder).Append(true)
	for c := 3; c < schema.NumFields(); c++ {
		rb.Field(c).AppendNull()
	}
	rec := rb.NewRecord()
	defer rec.Release()
	var oneRow bytes.Buffer
	w := ipc.NewWriter(&oneRow, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	bigGroup := rewriteMeta(t, sampleCloud(t, false, 100, mem), func(m map[string]string) map[string]string {
		m[KeyGroupSizes] = "4194304,1"
		return m
	})
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"train rows", oneRow.Bytes(), "the stream ended after 1 rows, inside the 4096 train rows"},
		{"particles", bigGroup, `a "group" row where particle 2 of group 0 was expected`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkBounded(t, tc.data, tc.want, func(data []byte) (err error) {
				_, _, _, err = readCloud(t, data)
				return err
			})
		})
	}
}

// checkBounded fails the test unless read, on data, allocates at most
// announcedBound bytes and fails with a DataError that says want.
func checkBounded(t *testing.T, data []byte, want string, read func([]byte) error) {
	t.Helper()
	var err error
	if a := allocated(func() { err = read(data) }); a > announcedBound {
		t.Errorf("reading a stream of %d bytes allocated %d", len(data), a)
	}
	var de *DataError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want a DataError with %q", err, want)
	}
}
