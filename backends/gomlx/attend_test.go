package gomlx

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// attnShape is the attention shape of a test: query heads, KV heads, head
// width, sliding window.
type attnShape struct{ heads, kvHeads, hd, window int }

// attnFamilies lists the kernel families this machine can run: the SIMD
// ones its CPU has (in a SIMD build) and the portable one.
func attnFamilies() []string {
	f := detectFeatures()
	var out []string
	if f.SIMD && f.AVX512 {
		out = append(out, familyAVX512)
	}
	if f.SIMD && f.AVX2 {
		out = append(out, familyAVX2)
	}
	return append(out, familyGo+f.Arch)
}

// attnSeq is one sequence's projections for a test: q [n, heads, hd], k
// and v [n, kvHeads, hd], before rotation.
type attnSeq struct{ q, k, v []float32 }

func randomSeq(rng *rand.Rand, s attnShape, n int) attnSeq {
	return attnSeq{q: normals(rng, n*s.heads*s.hd), k: normals(rng, n*s.kvHeads*s.hd), v: normals(rng, n*s.kvHeads*s.hd)}
}

// testInvFreq is a RoPE frequency table for head width hd.
func testInvFreq(hd int) []float32 {
	f := make([]float32, hd/2)
	for i := range f {
		f[i] = float32(math.Pow(10000, -2*float64(i)/float64(hd)))
	}
	return f
}

// attnCache is a test's caches with the attnStep that fills them.
type attnCache struct {
	shape        attnShape
	lay          kvLayout
	keys, values []float32
	kern         *stepKernels
}

func newAttnCache(family string, s attnShape, batch, length int) *attnCache {
	lay := kvLayout{batch: batch, heads: s.kvHeads, length: length, hd: s.hd, hdV: roundUp(s.hd, 16)}
	return &attnCache{shape: s, lay: lay, keys: make([]float32, lay.keySize()), values: make([]float32, lay.valueSize()), kern: stepKernelsFor(family)}
}

// part is a piece of one sequence run in one step: tokens [from, to) of
// seqs[seq] into cache row slot.
type part struct{ seq, slot, from, to int }

// step runs one attention step of parts (one per step row, chunk the
// longest) and returns each part's outputs [n, heads·hd].
func (ac *attnCache) step(seqs []attnSeq, parts []part) [][]float32 {
	s := ac.shape
	chunk := 0
	for _, p := range parts {
		chunk = max(chunk, p.to-p.from)
	}
	R := len(parts)
	q := make([]float32, R*chunk*s.heads*s.hd)
	k := make([]float32, R*chunk*s.kvHeads*s.hd)
	v := make([]float32, len(k))
	rows := make([]stepRow, R)
	for r, p := range parts {
		rows[r] = stepRow{slot: p.slot, pos0: p.from, n: p.to - p.from}
		sq := seqs[p.seq]
		qw, kw := s.heads*s.hd, s.kvHeads*s.hd
		copy(q[r*chunk*qw:], sq.q[p.from*qw:p.to*qw])
		copy(k[r*chunk*kw:], sq.k[p.from*kw:p.to*kw])
		copy(v[r*chunk*kw:], sq.v[p.from*kw:p.to*kw])
	}
	a := &attnStep{kern: ac.kern, lay: ac.lay, keys: ac.keys, values: ac.values, heads: s.heads, chunk: chunk,
		window: s.window, scale: float32(1 / math.Sqrt(float64(s.hd))), rows: rows,
		cos: make([]float32, R*chunk*s.hd), ssin: make([]float32, R*chunk*s.hd)}
	fillRope(rows, chunk, testInvFreq(s.hd), a.cos, a.ssin)
	a.write(k, v)
	out := make([]float32, R*chunk*s.heads*s.hd)
	a.run(q, out)
	res := make([][]float32, R)
	for r, p := range parts {
		w := s.heads * s.hd
		res[r] = out[r*chunk*w : (r*chunk+p.to-p.from)*w]
	}
	return res
}

// refAttention is attention in float64, straightforwardly: every query
// position t of seq attends to positions max(0, t−window+1) … t with
// softmax(q·k/√hd), after rotate-half RoPE of q and k.
func refAttention(s attnShape, seq attnSeq, n int) []float64 {
	hd, G := s.hd, s.heads/s.kvHeads
	inv := testInvFreq(hd)
	rot := func(x []float32, t int) []float64 {
		out := make([]float64, hd)
		for i := range hd / 2 {
			angle := float64(float32(t) * inv[i])
			c, sn := math.Cos(angle), math.Sin(angle)
			x1, x2 := float64(x[i]), float64(x[i+hd/2])
			out[i], out[i+hd/2] = x1*c-x2*sn, x2*c+x1*sn
		}
		return out
	}
	out := make([]float64, n*s.heads*hd)
	for t := range n {
		for h := range s.heads {
			kh := h / G
			q := rot(seq.q[(t*s.heads+h)*hd:(t*s.heads+h+1)*hd], t)
			lo := 0
			if s.window > 0 {
				lo = max(0, t-s.window+1)
			}
			scores := make([]float64, t+1-lo)
			top := math.Inf(-1)
			for j := lo; j <= t; j++ {
				k := rot(seq.k[(j*s.kvHeads+kh)*hd:(j*s.kvHeads+kh+1)*hd], j)
				var dot float64
				for d := range hd {
					dot += q[d] * k[d]
				}
				scores[j-lo] = dot / math.Sqrt(float64(hd))
				top = math.Max(top, scores[j-lo])
			}
			var sum float64
			for i := range scores {
				scores[i] = math.Exp(scores[i] - top)
				sum += scores[i]
			}
			o := out[(t*s.heads+h)*hd : (t*s.heads+h+1)*hd]
			for j := lo; j <= t; j++ {
				v := seq.v[(j*s.kvHeads+kh)*hd : (j*s.kvHeads+kh+1)*hd]
				for d := range hd {
					o[d] += scores[j-lo] / sum * float64(v[d])
				}
			}
		}
	}
	return out
}

// attnErr is the largest |got − want| over the largest |want|.
func attnErr(got []float32, want []float64) float64 {
	var diff, scale float64
	for i, w := range want {
		diff = math.Max(diff, math.Abs(float64(got[i])-w))
		scale = math.Max(scale, math.Abs(w))
	}
	return diff / scale
}

var attnShapes = []attnShape{
	{4, 2, 16, 0},   // the fixtures' llama-tiny
	{8, 2, 8, 0},    // mistral-tiny: a head narrower than a vector
	{12, 4, 64, 0},  // cpu-bench's model
	{3, 1, 80, 0},   // an odd group, a head of 5 vectors
	{4, 4, 128, 0},  // no grouping, a wide head
	{4, 2, 16, 5},   // a sliding window inside a block
	{6, 3, 32, 40},  // a sliding window across blocks
	{2, 1, 48, 100}, // a window longer than some prompts
}

// TestAttendReference: attention of one sequence prefilled in one step
// equals the float64 reference to float32 accuracy, in every kernel
// family and shape.
func TestAttendReference(t *testing.T) {
	for _, fam := range attnFamilies() {
		for _, s := range attnShapes {
			for _, n := range []int{1, 31, 33, 150} {
				t.Run(fmt.Sprintf("%s/h%d-kv%d-hd%d-w%d/n%d", fam, s.heads, s.kvHeads, s.hd, s.window, n), func(t *testing.T) {
					rng := rand.New(rand.NewPCG(uint64(n), uint64(s.hd)))
					seq := randomSeq(rng, s, n)
					ac := newAttnCache(fam, s, 2, roundUp(n+1, 64))
					got := ac.step([]attnSeq{seq}, []part{{0, 1, 0, n}})[0]
					if e := attnErr(got, refAttention(s, seq, n)); e > 2e-6 {
						t.Errorf("relative error %.3g", e)
					}
				})
			}
		}
	}
}

// TestAttendInvariant: a sequence's attention outputs are the same, bit
// for bit, prefilled in one step, in chunks of several sizes, with other
// rows in the step, one token a step, in any cache row: what
// batch invariance rests on.
func TestAttendInvariant(t *testing.T) {
	const n = 300
	for _, fam := range attnFamilies() {
		for _, s := range attnShapes {
			t.Run(fmt.Sprintf("%s/h%d-kv%d-hd%d-w%d", fam, s.heads, s.kvHeads, s.hd, s.window), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(7, uint64(s.hd)))
				seqs := []attnSeq{randomSeq(rng, s, n), randomSeq(rng, s, 90), randomSeq(rng, s, 200)}
				alone := newAttnCache(fam, s, 1, 512)
				want := alone.step(seqs, []part{{0, 0, 0, n}})[0]
				w := s.heads * s.hd
				for _, chunks := range [][]int{{7, 33, 64, 100, 96}, {1, 1, 1, 297}, {160, 140}} {
					ac := newAttnCache(fam, s, 4, 512)
					var got []float32
					from := 0
					for i, c := range chunks {
						// Other rows share the step: the other sequences in
						// other slots, at other positions.
						parts := []part{{0, 2, from, from + c}}
						if i < 2 {
							parts = append(parts, part{1, 0, i * 45, i*45 + 45}, part{2, 3, i * 100, i*100 + 100})
						}
						got = append(got, ac.step(seqs, parts)[0]...)
						from += c
					}
					for p := range n {
						if !slices.Equal(got[p*w:(p+1)*w], want[p*w:(p+1)*w]) {
							t.Fatalf("chunks %v: position %d differs from the sequence alone in one step", chunks, p)
						}
					}
				}
			})
		}
	}
}

// TestAttendKernelsAgree: the AVX-512 and AVX2 kernels give the same
// attention, bit for bit (where this machine has both).
func TestAttendKernelsAgree(t *testing.T) {
	fams := attnFamilies()
	if len(fams) < 3 {
		t.Skip("needs both AVX-512 and AVX2 kernels")
	}
	for _, s := range attnShapes {
		rng := rand.New(rand.NewPCG(3, uint64(s.hd)))
		seq := randomSeq(rng, s, 200)
		var outs [][]float32
		for _, fam := range fams[:2] {
			ac := newAttnCache(fam, s, 1, 256)
			outs = append(outs, ac.step([]attnSeq{seq}, []part{{0, 0, 0, 150}})[0])
			outs = append(outs, ac.step([]attnSeq{seq}, []part{{0, 0, 150, 200}})[0])
		}
		if !slices.Equal(outs[0], outs[2]) || !slices.Equal(outs[1], outs[3]) {
			t.Errorf("h%d-kv%d-hd%d-w%d: AVX-512 and AVX2 attention differ", s.heads, s.kvHeads, s.hd, s.window)
		}
	}
}

// TestAttnExp: every family's exp is within 2 ulps of e^x on [−86, 88],
// 0 below and for −∞; the SIMD families agree bit for bit.
func TestAttnExp(t *testing.T) {
	var xs []float32
	for x := float32(-90); x <= 88; x += 0.0137 {
		xs = append(xs, x)
	}
	xs = append(xs, 0, -0, float32(math.Inf(-1)), -86, -85.99, -86.01, 1e-8, -1e-8, 88, 87.9)
	var results [][]float32
	for _, fam := range attnFamilies() {
		got := slices.Clone(xs)
		stepKernelsFor(fam).exp(got)
		results = append(results, got)
		for i, x := range xs {
			want := math.Exp(float64(x))
			switch {
			case !(x >= minExpArg):
				if got[i] != 0 {
					t.Errorf("%s: exp(%g) = %g, want 0", fam, x, got[i])
				}
			case math.Abs(float64(got[i])-want) > 2*want*math.Pow(2, -23):
				t.Errorf("%s: exp(%g) = %g, want %g", fam, x, got[i], want)
			}
		}
		one := []float32{0}
		stepKernelsFor(fam).exp(one)
		if one[0] != 1 {
			t.Errorf("%s: exp(0) = %g, want exactly 1", fam, one[0])
		}
	}
	if len(results) == 3 && !slices.Equal(results[0], results[1]) {
		t.Error("AVX-512 and AVX2 exp differ")
	}
}

// FuzzAttend: any shape, prompt length, chunking and cache row gives the
// reference's attention, and the same outputs as one step.
func FuzzAttend(f *testing.F) {
	f.Add(uint8(0), uint16(50), uint8(7), uint8(1), uint16(0), uint64(1))
	f.Add(uint8(3), uint16(1), uint8(1), uint8(0), uint16(3), uint64(2))
	f.Add(uint8(5), uint16(130), uint8(33), uint8(2), uint16(40), uint64(3))
	f.Fuzz(func(t *testing.T, shape uint8, n uint16, chunk, slot uint8, window uint16, seed uint64) {
		s := attnShapes[int(shape)%len(attnShapes)]
		s.window = int(window % 200)
		N := 1 + int(n)%300
		c := 1 + int(chunk)%N
		b := int(slot) % 3
		rng := rand.New(rand.NewPCG(seed, 1))
		seq := randomSeq(rng, s, N)
		fam := attnFamilies()[int(seed%uint64(len(attnFamilies())))]
		whole := newAttnCache(fam, s, 3, roundUp(N, 64)).step([]attnSeq{seq}, []part{{0, b, 0, N}})[0]
		if e := attnErr(whole, refAttention(s, seq, N)); e > 2e-6 {
			t.Fatalf("%s %+v n=%d: relative error %.3g", fam, s, N, e)
		}
		ac := newAttnCache(fam, s, 3, roundUp(N, 64))
		var got []float32
		for from := 0; from < N; from += c {
			got = append(got, ac.step([]attnSeq{seq}, []part{{0, b, from, min(from+c, N)}})[0]...)
		}
		if !slices.Equal(got, whole) {
			t.Fatalf("%s %+v n=%d: chunks of %d differ from one step", fam, s, N, c)
		}
	})
}

// BenchmarkAttend measures one layer's attention of a prefill chunk
// (prompt 4k and 16k tokens, the last 2,048 attending to all before them)
// and of a decode step at those lengths, on the tiny model's shape and
// cpu-bench's, in this machine's kernel families; GFLOP/s counts the two
// products' multiply-adds over the causal keys.
func BenchmarkAttend(b *testing.B) {
	for _, fam := range attnFamilies() {
		for _, sc := range []struct {
			name  string
			shape attnShape
		}{{"tiny", attnShape{4, 2, 16, 0}}, {"cpubench", attnShape{12, 4, 64, 0}}} {
			for _, n := range []int{4096, 16384} {
				for _, what := range []string{"prefill", "decode"} {
					b.Run(fmt.Sprintf("%s/%s/%d/%s", fam, sc.name, n, what), func(b *testing.B) {
						s := sc.shape
						rng := rand.New(rand.NewPCG(1, 2))
						seq := randomSeq(rng, s, n)
						ac := newAttnCache(fam, s, 1, n)
						from := n - 2048
						if what == "decode" {
							from = n - 1
						}
						ac.step([]attnSeq{seq}, []part{{0, 0, 0, from}})
						flops := 0.0
						for p := from; p < n; p++ {
							flops += 4 * float64(s.heads*s.hd) * float64(p+1)
						}
						b.ResetTimer()
						for range b.N {
							ac.step([]attnSeq{seq}, []part{{0, 0, from, n}})
						}
						b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
					})
				}
			}
		}
	}
}

// BenchmarkAttnKernels measures each attention kernel alone on one core,
// its data in the L1 cache: a tile of 48 query rows (cpu-bench's 16
// positions × 3 heads) against one block of 32 keys of width 64;
// GFLOP/s for the products, Gexp/s for softmax.
func BenchmarkAttnKernels(b *testing.B) {
	const rows, hd = 48, 64
	rng := rand.New(rand.NewPCG(1, 1))
	qp, k, v := normals(rng, rows*hd), normals(rng, hd*kvBlock), normals(rng, kvBlock*hd)
	s, o := make([]float32, rows*kvBlock), make([]float32, rows*hd)
	m, lsum, alpha := make([]float32, rows), make([]float32, rows*16), make([]float32, rows)
	for _, fam := range attnFamilies() {
		kern := stepKernelsFor(fam)
		b.Run(fam+"/scores", func(b *testing.B) {
			for range b.N {
				kern.scores(qp, k, s, hd, rows/kernelRows)
			}
			b.ReportMetric(2*rows*hd*kvBlock*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
		b.Run(fam+"/softmax", func(b *testing.B) {
			for range b.N {
				for i := range m {
					m[i] = 3
				}
				kern.softmax(s, m, lsum, alpha, rows, 0.125)
			}
			b.ReportMetric(rows*kvBlock*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gexp/s")
		})
		b.Run(fam+"/accum", func(b *testing.B) {
			for i := range alpha {
				alpha[i] = 1
			}
			for range b.N {
				kern.accum(s, v, o, alpha, hd, rows/kernelRows)
			}
			b.ReportMetric(2*rows*hd*kvBlock*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// TestSiLU: every family's silu(gate)·up is within 4 ulps of the float64
// value (lengths that leave a partial vector too); the SIMD families
// agree bit for bit.
func TestSiLU(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	n := 1000 + 13
	gate, up := normals(rng, n), normals(rng, n)
	for i := range gate {
		gate[i] *= 8
	}
	gate[0], gate[1], gate[2] = -100, 100, 0
	var outs [][]float32
	for _, fam := range attnFamilies() {
		out := make([]float32, n)
		stepKernelsFor(fam).siluOnCores(gate, up, out)
		outs = append(outs, out)
		for i, g := range gate {
			want := float64(g) / (1 + math.Exp(-float64(g))) * float64(up[i])
			if math.Abs(float64(out[i])-want) > 4*math.Abs(want)*math.Pow(2, -23)+1e-37 {
				t.Errorf("%s: silu(%g)·%g = %g, want %g", fam, g, up[i], out[i], want)
			}
		}
	}
	if len(outs) == 3 && !slices.Equal(outs[0], outs[1]) {
		t.Error("AVX-512 and AVX2 silu differ")
	}
}
