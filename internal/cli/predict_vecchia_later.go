package cli

// gpc-predict --cloud on a Vecchia cloud that keeps particle paths
// (gpc-train --keep): the test rows of a Vecchia model of the same
// training data predicted from them (train once, predict later).

import (
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/gpc-mc/gpc/core"
	"github.com/gpc-mc/gpc/core/vecchia"
	"github.com/gpc-mc/gpc/format"
)

// predictLater predicts the test rows of the input r (name), a Vecchia
// model whose training part must be the cloud's (cname: its fingerprint
// is checked), from the cloud's kept paths: each group's posteriors as
// the group computed its own test rows' at its end
// (vecchia.PredictPaths, or with more than two classes
// Multiclass.PredictPaths, whose draws for more than three classes come
// from --seed), combined as gpc-predict combines a Vecchia cloud's
// (weights n_g I_g, standard errors from their spread). The paths are
// held in memory, 4 N K bytes (4 N (C - 1) K with C classes).
func (c *predictCmd) predictLater(e *env, cloud io.Reader, cname string, r io.Reader, name string, mem format.Allocator) error {
	if c.Count != "soft" {
		return usagef("--count %s: --cloud %s is a Vecchia cloud, whose kept paths predict by the soft count: drop --count", c.Count, c.Cloud)
	}
	// The cloud (4 N K bytes) is read while the model is: gpc-kernel,
	// upstream, computes it meanwhile. Their errors are reported in a
	// fixed order: the model's, the cloud's, then their mismatch.
	type cloudRead struct {
		cl  *format.VecchiaCloud
		err error
	}
	done := make(chan cloudRead, 1)
	go func() {
		// Its record batches, read one after the other, reuse their memory.
		cl, err := format.ReadVecchiaCloudPaths(cloud, cname, format.NewRecyclingAllocator(), c.laterHead(cname))
		done <- cloudRead{cl, err}
	}()
	s, mc, names, err := c.laterModel(r, name, mem)
	read := <-done
	if err != nil {
		return err
	}
	if read.err != nil {
		return read.err
	}
	cl, md := read.cl, s.Model
	if err := laterClasses(cl.Meta, cname, names, name); err != nil {
		return err
	}
	if fp, want := vecchiaFingerprint(s), cl.Meta[format.KeyFingerprint]; fp != want {
		return &dataError{fmt.Sprintf("%s: its training part (fingerprint %s) is not the one %s was trained on (%s): build the model from the same training data with the same kernel, neighbours and order (gpc-kernel --vecchia ... --test FILE), or train a new cloud", name, fp, cname, want)}
	}
	sizes, err := vecchiaGroups(cl, cname)
	if err != nil {
		return err
	}
	t := md.T * max(1, len(names)) // a test point's C posteriors with classes
	logZ := make([]float64, len(sizes))
	// The groups that kept paths predict; with fewer paths kept than
	// groups, the others only count in the log marginal likelihood.
	var useSizes []int
	var useLogZ, pg []float64
	for g := range cl.Groups {
		grp := &cl.Groups[g]
		logZ[g] = grp.Out.LogZ
		if cl.Kept[g] == 0 {
			continue
		}
		useSizes, useLogZ = append(useSizes, sizes[g]), append(useLogZ, grp.Out.LogZ)
		pg = append(pg, make([]float64, t)...)
		switch {
		case math.IsInf(grp.Out.LogZ, -1): // a dead group weighs 0
		case mc != nil:
			mc.PredictPaths(pg[len(pg)-t:], grp.Paths, grp.PathW, uint64(c.Seed), c.Threads)
		default:
			vecchia.PredictPaths(pg[len(pg)-t:], md, grp.Paths, grp.PathW, c.Threads)
		}
		grp.Paths = nil // its memory goes at the next collection
	}
	post := make([]core.Posterior, t)
	if err := core.CombinePosteriors(post, useSizes, useLogZ, pg); err != nil {
		return &dataError{fmt.Sprintf("%s: %v", cname, err)}
	}
	outMeta, pos, neg := c.vecchiaMeta(cl.Meta, logZ, sizes)
	outMeta[format.KeyKeptPaths] = cl.Meta[format.KeyKeptPaths]
	var ids []string
	if s.ID != nil {
		ids = s.ID[md.N:]
	}
	_, ids, y := perClass(nil, ids, s.Y[md.N:], len(names))
	tests := &format.TestRows{Y: y, ID: ids}
	if names != nil {
		if mc.C > 3 {
			outMeta["gpc:count_seed"] = strconv.FormatInt(c.Seed, 10)
		}
		return c.vecchiaClasses(e, tests, post, names, outMeta, cname, mem)
	}
	return c.writeVecchia(e, tests, post, pg, outMeta, pos, neg, mem)
}

// laterModel reads predictLater's input, a Vecchia model with test rows,
// and returns it with, for more than two classes, its multi-class model
// and class names.
func (c *predictCmd) laterModel(r io.Reader, name string, mem format.Allocator) (*format.VecchiaStream, *vecchia.Multiclass, []string, error) {
	schema, all, err := format.Sniff(r, name)
	if err != nil {
		return nil, nil, nil, err
	}
	if schema != format.SchemaVecchia {
		return nil, nil, nil, &dataError{fmt.Sprintf("%s: not a Vecchia model (schema %q): --cloud %s is a Vecchia cloud, which predicts the test rows of gpc-kernel --vecchia's model of its training data (the same training data, kernel and neighbours, with --test FILE)", name, schema, c.Cloud)}
	}
	s, err := format.ReadVecchia(all, name, mem)
	if err != nil {
		return nil, nil, nil, err
	}
	if s.Model.T == 0 {
		return nil, nil, nil, &dataError{name + ": the Vecchia model has no test rows (gpc-kernel had no --test), so there is nothing to predict: give gpc-kernel --test FILE"}
	}
	names, err := s.Classes(name)
	if err != nil || names == nil {
		return s, nil, nil, err
	}
	mc, err := s.Multiclass(name, names)
	if err != nil {
		return nil, nil, nil, err
	}
	return s, mc, names, nil
}

// laterHead checks a Vecchia cloud's head for predictLater, before its
// paths are read: kept paths, and room for them in memory (--max-memory).
func (c *predictCmd) laterHead(cname string) func(map[string]string, int) error {
	return func(meta map[string]string, _ int) error {
		if _, ok := meta[format.KeyKeptPaths]; !ok {
			return usagef("--cloud %s: this Vecchia cloud keeps no particle paths, only the posteriors of the test rows it was trained with: train it with gpc-train --keep K (the default when the model has no test rows keeps 4000) to predict new rows later, or give the new rows to gpc-kernel --vecchia with --test and train again", c.Cloud)
		}
		kept, n, err := format.VecchiaKeptPaths(meta, cname)
		if err != nil {
			return err
		}
		k := 0
		for _, v := range kept {
			k += max(0, v)
		}
		if need, limit := 4*int64(max(0, n))*int64(k), c.MaxMemory.limit(); need > limit {
			return usagef("--cloud %s: its %d kept paths of %d values take %s, and only %s of memory is available for them (--max-memory): raise --max-memory, or train the cloud with a smaller --keep", c.Cloud, k, n, format.Bytes(float64(need)), format.Bytes(float64(limit)))
		}
		return nil
	}
}

// laterClasses checks that the cloud (cname, its metadata meta) and the
// model (name, its class names: nil for two) have the same number of
// classes, before their fingerprints are compared.
func laterClasses(meta map[string]string, cname string, names []string, name string) error {
	cnames, err := cloudClasses(meta, cname)
	if err != nil {
		return err
	}
	what := func(names []string) string {
		if names == nil {
			return "a two-class"
		}
		return fmt.Sprintf("a %d-class", len(names))
	}
	if len(cnames) != len(names) {
		return &dataError{fmt.Sprintf("%s is %s Vecchia model and %s %s Vecchia cloud: build the model from the cloud's training data, with its labels (gpc-kernel --vecchia ... --test FILE)", name, what(names), cname, what(cnames))}
	}
	return nil
}
