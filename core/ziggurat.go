package core

import "math"

// The particles' normal numbers: math/rand/v2's NormFloat64 on a group's
// PCG, the same algorithm, tables and consumption of the stream, so that
// NormFloats gives, bit for bit, the numbers rand.New(&s).NormFloat64
// returns in turn, without an interface call per number and with the
// generator's state kept in registers across the batch.
//
// The method is Marsaglia and Tsang's ziggurat with 128 strips: one 64-bit
// output picks a strip (bits 32-38) and a signed abscissa (the low 32
// bits); inside the strip's rectangle, the usual case, the number is the
// abscissa scaled, otherwise the wedge or the base strip's tail decide by
// further uniforms.
//
// References:
//
//	G. Marsaglia and W. W. Tsang, The ziggurat method for generating random
//	variables, Journal of Statistical Software 5(8), 2000 (its zigset gives
//	the tables, computed here at start-up).

// zigR is the start of the base strip's tail, Marsaglia and Tsang's r for
// 128 strips (and math/rand/v2's rn).
const zigR = 3.442619855899

// zig holds the ziggurat's tables: k, the rectangles' acceptance bounds on
// |abscissa|; w, the abscissa's scale in each strip; f, the density at the
// strips' edges.
var zig = zigTables()

type zigTable struct {
	k    [128]uint32
	w, f [128]float32
}

// zigTables computes the tables as zigset does for the normal: from r and
// the strips' common area v, each strip's edge from the one above it, in
// float64 and rounded to the tables' types. (The values equal those that
// math/rand/v2 lists, entry for entry; TestNormFloats holds the draws to
// it.)
func zigTables() *zigTable {
	const m1 = 1 << 31
	const v = 9.91256303526217e-3
	t := new(zigTable)
	d := zigR
	tn := d
	q := v / math.Exp(-0.5*d*d)
	t.k[0] = uint32(d / q * m1)
	t.w[0] = float32(q / m1)
	t.w[127] = float32(d / m1)
	t.f[0] = 1
	t.f[127] = float32(math.Exp(-0.5 * d * d))
	for i := 126; i >= 1; i-- {
		d = math.Sqrt(-2 * math.Log(v/d+math.Exp(-0.5*d*d)))
		t.k[i+1] = uint32(d / tn * m1)
		tn = d
		t.f[i] = float32(math.Exp(-0.5 * d * d))
		t.w[i] = float32(d / m1)
	}
	return t
}

// NormFloats fills z with standard normal numbers from s: those that
// rand.New(s).NormFloat64 would return, in turn. Where AVX-512 runs, the
// usual case (the rectangles) takes eight outputs at a time (zigRects,
// pcgvec_amd64.go), the strips' arithmetic in the vector too: 3.5 ns a
// number against 4.2 in batches of a group's 156 (BenchmarkNormFloats,
// the 2-core AMD EPYC). (Two scalar streams a step apart, as
// drawUniforms once took them, measured no faster: the strips'
// arithmetic, not the generator's steps, set the pace.)
func (s *pcg) NormFloats(z []float64) {
	g, t := *s, zig
	i := 0
	// The vector path, eight outputs at a time, as far as the next number
	// outside its rectangle, which normOutside finishes before the vector
	// path goes on; the loop below takes the last few.
	for zigVector() && len(z)-i >= 8 {
		i += zigRects(&g, z[i:])
		if len(z)-i < 8 {
			break
		}
		var x uint64 // z[i]'s output, outside its rectangle
		g, x = g.next()
		g, z[i] = g.normOutside(x)
		i++
	}
	for ; i < len(z); i++ {
		var x uint64
		g, x = g.next()
		if j, b, in := t.rect(x); in {
			z[i] = float64(j) * float64(t.w[b])
			continue
		}
		g, z[i] = g.normOutside(x)
	}
	*s = g
}

// normOutside finishes a number whose first output x fell outside its
// strip's rectangle: the base strip's tail or the strip's wedge, drawing
// anew (from the rectangle test on) when the wedge rejects.
func (g pcg) normOutside(x uint64) (pcg, float64) {
	t := zig
	for {
		j, b, in := t.rect(x)
		v := float64(j) * float64(t.w[b])
		if in {
			return g, v
		}
		var u uint64
		if b == 0 {
			for {
				g, u = g.next()
				v = -math.Log(unit53(u)) * (1 / zigR)
				g, u = g.next()
				y := -math.Log(unit53(u))
				if y+y >= v*v {
					break
				}
			}
			if j > 0 {
				return g, zigR + v
			}
			return g, -zigR - v
		}
		g, u = g.next()
		if t.f[b]+float32(unit53(u))*(t.f[b-1]-t.f[b]) < float32(math.Exp(-0.5*v*v)) {
			return g, v
		}
		g, x = g.next()
	}
}

// rect splits the generator's output x into its strip b (bits 32-38) and
// signed abscissa j (the low 32 bits), and reports whether |j| lies
// inside the strip's rectangle, where the number is j's scaled value.
func (t *zigTable) rect(x uint64) (j int32, b uint64, in bool) {
	j, b = int32(x), x>>32&0x7f
	a := uint32(j)
	if j < 0 {
		a = uint32(-j)
	}
	return j, b, a < t.k[b]
}

// unit53 is rand.Rand's Float64 of the output x: the low 53 bits over
// 2^53, in [0, 1).
func unit53(x uint64) float64 { return float64(x<<11>>11) / (1 << 53) }
