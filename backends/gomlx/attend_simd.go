//go:build amd64 && goexperiment.simd

package gomlx

import (
	"fmt"
	"math"
	"simd/archsimd"
	"unsafe"
)

// simdStepKernels returns the SIMD attention kernels of family ("avx512"
// or "avx2"), or nil for the portable family. The two compute the same
// values, bit for bit: every lane does the same operations in the same
// order, 16 or 8 lanes at a time.
func simdStepKernels(family string) *stepKernels {
	switch family {
	case familyAVX512:
		return &stepKernels{family: family, scores: avx512Scores, softmax: avx512Softmax, accum: avx512Accum, exp: avx512ExpSlice, silu: avx512SiLU}
	case familyAVX2:
		return &stepKernels{family: family, scores: avx2Scores, softmax: avx2Softmax, accum: avx2Accum, exp: avx2ExpSlice, silu: avx2SiLU}
	}
	return nil
}

// checkLen panics when a kernel's slice is shorter than it reads or
// writes (the kernels index through unsafe pointers).
func checkLen(name string, have, need int) {
	if have < need {
		panic(fmt.Sprintf("attention kernel: %s has %d values, needs %d", name, have, need))
	}
}

// at is a pointer to the 4-byte element i of the array at p.
func at(p unsafe.Pointer, i int) unsafe.Pointer { return unsafe.Add(p, 4*i) }

func ld16(p unsafe.Pointer, i int) archsimd.Float32x16 {
	return archsimd.LoadFloat32x16((*[16]float32)(at(p, i)))
}

func st16(x archsimd.Float32x16, p unsafe.Pointer, i int) { x.Store((*[16]float32)(at(p, i))) }

func ld8(p unsafe.Pointer, i int) archsimd.Float32x8 {
	return archsimd.LoadFloat32x8((*[8]float32)(at(p, i)))
}

func st8(x archsimd.Float32x8, p unsafe.Pointer, i int) { x.Store((*[8]float32)(at(p, i))) }

func f32(p unsafe.Pointer, i int) float32 { return *(*float32)(at(p, i)) }

// --- AVX-512 ---

// avx512Scores is stepKernels.scores: 4 rows × 32 keys per pass, 8
// accumulators of 16 lanes.
func avx512Scores(qp, k, s []float32, hd, groups int) {
	checkLen("queries", len(qp), groups*hd*kernelRows)
	checkLen("keys", len(k), hd*kvBlock)
	checkLen("scores", len(s), groups*kernelRows*kvBlock)
	kp, sp := unsafe.Pointer(unsafe.SliceData(k)), unsafe.Pointer(unsafe.SliceData(s))
	for g := range groups {
		qg := unsafe.Pointer(&qp[g*hd*kernelRows])
		zero := archsimd.BroadcastFloat32x16(0)
		a00, a01, a10, a11, a20, a21, a30, a31 := zero, zero, zero, zero, zero, zero, zero, zero
		for d := range hd {
			k0, k1 := ld16(kp, d*kvBlock), ld16(kp, d*kvBlock+16)
			q := (*[4]float32)(at(qg, d*kernelRows))
			b := archsimd.BroadcastFloat32x16(q[0])
			a00, a01 = k0.MulAdd(b, a00), k1.MulAdd(b, a01)
			b = archsimd.BroadcastFloat32x16(q[1])
			a10, a11 = k0.MulAdd(b, a10), k1.MulAdd(b, a11)
			b = archsimd.BroadcastFloat32x16(q[2])
			a20, a21 = k0.MulAdd(b, a20), k1.MulAdd(b, a21)
			b = archsimd.BroadcastFloat32x16(q[3])
			a30, a31 = k0.MulAdd(b, a30), k1.MulAdd(b, a31)
		}
		o := g * kernelRows * kvBlock
		st16(a00, sp, o)
		st16(a01, sp, o+16)
		st16(a10, sp, o+kvBlock)
		st16(a11, sp, o+kvBlock+16)
		st16(a20, sp, o+2*kvBlock)
		st16(a21, sp, o+2*kvBlock+16)
		st16(a30, sp, o+3*kvBlock)
		st16(a31, sp, o+3*kvBlock+16)
	}
}

// avx512Exp is e^x in every lane, with attnExp's arithmetic (goExp's
// steps, each multiply-add fused): 0 below minExpArg, x capped at 88.
func avx512Exp(x archsimd.Float32x16) archsimd.Float32x16 {
	lo := archsimd.BroadcastFloat32x16(minExpArg)
	valid := x.GreaterEqual(lo)
	x = x.Max(lo).Min(archsimd.BroadcastFloat32x16(88))
	magic := archsimd.BroadcastFloat32x16(expMagic)
	t := x.MulAdd(archsimd.BroadcastFloat32x16(expLog2e), magic)
	n := t.Sub(magic)
	r := n.MulAdd(archsimd.BroadcastFloat32x16(-expLn2Hi), x)
	r = n.MulAdd(archsimd.BroadcastFloat32x16(-expLn2Lo), r)
	z := r.Mul(r)
	y := archsimd.BroadcastFloat32x16(expP0).MulAdd(r, archsimd.BroadcastFloat32x16(expP1))
	y = y.MulAdd(r, archsimd.BroadcastFloat32x16(expP2))
	y = y.MulAdd(r, archsimd.BroadcastFloat32x16(expP3))
	y = y.MulAdd(r, archsimd.BroadcastFloat32x16(expP4))
	y = y.MulAdd(r, archsimd.BroadcastFloat32x16(expP5))
	y = y.MulAdd(z, r).Add(archsimd.BroadcastFloat32x16(1))
	pow := t.AsInt32x16().Sub(archsimd.BroadcastInt32x16(int32(math.Float32bits(expMagic)) - 127)).ShiftAllLeft(23).AsFloat32x16()
	return y.Mul(pow).Masked(valid)
}

// avx512ExpSlice is stepKernels.exp.
func avx512ExpSlice(x []float32) {
	i := 0
	for ; i+16 <= len(x); i += 16 {
		avx512Exp(archsimd.LoadFloat32x16Slice(x[i:])).StoreSlice(x[i:])
	}
	if i < len(x) {
		avx512Exp(archsimd.LoadFloat32x16SlicePart(x[i:])).StoreSlicePart(x[i:])
	}
}

// avx512SiLU is stepKernels.silu.
func avx512SiLU(gate, up, out []float32) {
	one := archsimd.BroadcastFloat32x16(1)
	zero := archsimd.BroadcastFloat32x16(0)
	i := 0
	for ; i+16 <= len(out); i += 16 {
		g := archsimd.LoadFloat32x16Slice(gate[i:])
		s := one.Div(one.Add(avx512Exp(zero.Sub(g))))
		g.Mul(s).Mul(archsimd.LoadFloat32x16Slice(up[i:])).StoreSlice(out[i:])
	}
	if i < len(out) {
		g := archsimd.LoadFloat32x16SlicePart(gate[i:len(out)])
		s := one.Div(one.Add(avx512Exp(zero.Sub(g))))
		g.Mul(s).Mul(archsimd.LoadFloat32x16SlicePart(up[i:len(out)])).StoreSlicePart(out[i:])
	}
}

// hmax16 is the largest lane of x (no lane NaN).
func hmax16(x archsimd.Float32x16) float32 { return hmax8(x.GetLo().Max(x.GetHi())) }

// avx512Softmax is stepKernels.softmax.
func avx512Softmax(s, m, lsum, alpha []float32, rows int, scale float32) {
	checkLen("scores", len(s), rows*kvBlock)
	checkLen("sums", len(lsum), rows*16)
	checkLen("maxima", len(m), rows)
	checkLen("alpha", len(alpha), rows)
	sp := unsafe.Pointer(unsafe.SliceData(s))
	sc := archsimd.BroadcastFloat32x16(scale)
	negInf := float32(math.Inf(-1))
	for i := range rows {
		x0, x1 := ld16(sp, i*kvBlock), ld16(sp, i*kvBlock+16)
		top := m[i]
		if h := hmax16(x0.Max(x1)); h > top {
			top = h
		}
		if top == negInf {
			clear(s[i*kvBlock : (i+1)*kvBlock])
			alpha[i] = 0 // e^0 = 1 below
			continue
		}
		c := top * scale
		nc := archsimd.BroadcastFloat32x16(-c)
		st16(avx512Exp(x0.MulAdd(sc, nc)), sp, i*kvBlock)
		st16(avx512Exp(x1.MulAdd(sc, nc)), sp, i*kvBlock+16)
		alpha[i] = 0
		if top != m[i] {
			alpha[i] = float32(m[i]*scale) - c
		}
		m[i] = top
	}
	avx512ExpSlice(alpha[:rows])
	lp := unsafe.Pointer(unsafe.SliceData(lsum))
	for i := range rows {
		l := ld16(lp, i*16).Mul(archsimd.BroadcastFloat32x16(alpha[i]))
		st16(l.Add(ld16(sp, i*kvBlock)).Add(ld16(sp, i*kvBlock+16)), lp, i*16)
	}
}

// avx512Accum is stepKernels.accum: 4 rows × 32 columns per pass (8
// accumulators: Go's compiler allocates 16 vector registers), then 4 rows
// × 16.
func avx512Accum(p, v, o, alpha []float32, hdV, groups int) {
	checkLen("probabilities", len(p), groups*kernelRows*kvBlock)
	checkLen("values", len(v), kvBlock*hdV)
	checkLen("outputs", len(o), groups*kernelRows*hdV)
	checkLen("alpha", len(alpha), groups*kernelRows)
	pp, vp, op := unsafe.Pointer(unsafe.SliceData(p)), unsafe.Pointer(unsafe.SliceData(v)), unsafe.Pointer(unsafe.SliceData(o))
	for g := range groups {
		r := g * kernelRows
		o0, o1, o2, o3 := r*hdV, (r+1)*hdV, (r+2)*hdV, (r+3)*hdV
		p0 := r * kvBlock
		c := 0
		for ; c+32 <= hdV; c += 32 {
			al := archsimd.BroadcastFloat32x16(alpha[r])
			a00, a01 := ld16(op, o0+c).Mul(al), ld16(op, o0+c+16).Mul(al)
			al = archsimd.BroadcastFloat32x16(alpha[r+1])
			a10, a11 := ld16(op, o1+c).Mul(al), ld16(op, o1+c+16).Mul(al)
			al = archsimd.BroadcastFloat32x16(alpha[r+2])
			a20, a21 := ld16(op, o2+c).Mul(al), ld16(op, o2+c+16).Mul(al)
			al = archsimd.BroadcastFloat32x16(alpha[r+3])
			a30, a31 := ld16(op, o3+c).Mul(al), ld16(op, o3+c+16).Mul(al)
			pr, vr := at(pp, p0), at(vp, c)
			for range kvBlock {
				v0, v1 := ld16(vr, 0), ld16(vr, 16)
				b := archsimd.BroadcastFloat32x16(f32(pr, 0))
				a00, a01 = v0.MulAdd(b, a00), v1.MulAdd(b, a01)
				b = archsimd.BroadcastFloat32x16(f32(pr, kvBlock))
				a10, a11 = v0.MulAdd(b, a10), v1.MulAdd(b, a11)
				b = archsimd.BroadcastFloat32x16(f32(pr, 2*kvBlock))
				a20, a21 = v0.MulAdd(b, a20), v1.MulAdd(b, a21)
				b = archsimd.BroadcastFloat32x16(f32(pr, 3*kvBlock))
				a30, a31 = v0.MulAdd(b, a30), v1.MulAdd(b, a31)
				pr, vr = at(pr, 1), at(vr, hdV)
			}
			st16(a00, op, o0+c)
			st16(a01, op, o0+c+16)
			st16(a10, op, o1+c)
			st16(a11, op, o1+c+16)
			st16(a20, op, o2+c)
			st16(a21, op, o2+c+16)
			st16(a30, op, o3+c)
			st16(a31, op, o3+c+16)
		}
		for ; c < hdV; c += 16 {
			a0 := ld16(op, o0+c).Mul(archsimd.BroadcastFloat32x16(alpha[r]))
			a1 := ld16(op, o1+c).Mul(archsimd.BroadcastFloat32x16(alpha[r+1]))
			a2 := ld16(op, o2+c).Mul(archsimd.BroadcastFloat32x16(alpha[r+2]))
			a3 := ld16(op, o3+c).Mul(archsimd.BroadcastFloat32x16(alpha[r+3]))
			pr, vr := at(pp, p0), at(vp, c)
			for range kvBlock {
				v0 := ld16(vr, 0)
				a0 = v0.MulAdd(archsimd.BroadcastFloat32x16(f32(pr, 0)), a0)
				a1 = v0.MulAdd(archsimd.BroadcastFloat32x16(f32(pr, kvBlock)), a1)
				a2 = v0.MulAdd(archsimd.BroadcastFloat32x16(f32(pr, 2*kvBlock)), a2)
				a3 = v0.MulAdd(archsimd.BroadcastFloat32x16(f32(pr, 3*kvBlock)), a3)
				pr, vr = at(pr, 1), at(vr, hdV)
			}
			st16(a0, op, o0+c)
			st16(a1, op, o1+c)
			st16(a2, op, o2+c)
			st16(a3, op, o3+c)
		}
	}
}

// --- AVX2 ---

// avx2Scores is stepKernels.scores: 4 rows × 16 keys per pass (8
// accumulators of 8 lanes), two passes per block.
func avx2Scores(qp, k, s []float32, hd, groups int) {
	checkLen("queries", len(qp), groups*hd*kernelRows)
	checkLen("keys", len(k), hd*kvBlock)
	checkLen("scores", len(s), groups*kernelRows*kvBlock)
	kp, sp := unsafe.Pointer(unsafe.SliceData(k)), unsafe.Pointer(unsafe.SliceData(s))
	for g := range groups {
		qg := unsafe.Pointer(&qp[g*hd*kernelRows])
		for half := 0; half < kvBlock; half += 16 {
			zero := archsimd.BroadcastFloat32x8(0)
			a00, a01, a10, a11, a20, a21, a30, a31 := zero, zero, zero, zero, zero, zero, zero, zero
			for d := range hd {
				k0, k1 := ld8(kp, d*kvBlock+half), ld8(kp, d*kvBlock+half+8)
				q := (*[4]float32)(at(qg, d*kernelRows))
				b := archsimd.BroadcastFloat32x8(q[0])
				a00, a01 = k0.MulAdd(b, a00), k1.MulAdd(b, a01)
				b = archsimd.BroadcastFloat32x8(q[1])
				a10, a11 = k0.MulAdd(b, a10), k1.MulAdd(b, a11)
				b = archsimd.BroadcastFloat32x8(q[2])
				a20, a21 = k0.MulAdd(b, a20), k1.MulAdd(b, a21)
				b = archsimd.BroadcastFloat32x8(q[3])
				a30, a31 = k0.MulAdd(b, a30), k1.MulAdd(b, a31)
			}
			o := g*kernelRows*kvBlock + half
			st8(a00, sp, o)
			st8(a01, sp, o+8)
			st8(a10, sp, o+kvBlock)
			st8(a11, sp, o+kvBlock+8)
			st8(a20, sp, o+2*kvBlock)
			st8(a21, sp, o+2*kvBlock+8)
			st8(a30, sp, o+3*kvBlock)
			st8(a31, sp, o+3*kvBlock+8)
		}
	}
}

// avx2Exp is avx512Exp on 8 lanes.
func avx2Exp(x archsimd.Float32x8) archsimd.Float32x8 {
	lo := archsimd.BroadcastFloat32x8(minExpArg)
	valid := x.GreaterEqual(lo)
	x = x.Max(lo).Min(archsimd.BroadcastFloat32x8(88))
	magic := archsimd.BroadcastFloat32x8(expMagic)
	t := x.MulAdd(archsimd.BroadcastFloat32x8(expLog2e), magic)
	n := t.Sub(magic)
	r := n.MulAdd(archsimd.BroadcastFloat32x8(-expLn2Hi), x)
	r = n.MulAdd(archsimd.BroadcastFloat32x8(-expLn2Lo), r)
	z := r.Mul(r)
	y := archsimd.BroadcastFloat32x8(expP0).MulAdd(r, archsimd.BroadcastFloat32x8(expP1))
	y = y.MulAdd(r, archsimd.BroadcastFloat32x8(expP2))
	y = y.MulAdd(r, archsimd.BroadcastFloat32x8(expP3))
	y = y.MulAdd(r, archsimd.BroadcastFloat32x8(expP4))
	y = y.MulAdd(r, archsimd.BroadcastFloat32x8(expP5))
	y = y.MulAdd(z, r).Add(archsimd.BroadcastFloat32x8(1))
	pow := t.AsInt32x8().Sub(archsimd.BroadcastInt32x8(int32(math.Float32bits(expMagic)) - 127)).ShiftAllLeft(23).AsFloat32x8()
	return y.Mul(pow).Masked(valid)
}

// avx2ExpSlice is stepKernels.exp.
func avx2ExpSlice(x []float32) {
	i := 0
	for ; i+8 <= len(x); i += 8 {
		avx2Exp(archsimd.LoadFloat32x8Slice(x[i:])).StoreSlice(x[i:])
	}
	if i < len(x) {
		avx2Exp(archsimd.LoadFloat32x8SlicePart(x[i:])).StoreSlicePart(x[i:])
	}
}

// avx2SiLU is stepKernels.silu.
func avx2SiLU(gate, up, out []float32) {
	one := archsimd.BroadcastFloat32x8(1)
	zero := archsimd.BroadcastFloat32x8(0)
	i := 0
	for ; i+8 <= len(out); i += 8 {
		g := archsimd.LoadFloat32x8Slice(gate[i:])
		s := one.Div(one.Add(avx2Exp(zero.Sub(g))))
		g.Mul(s).Mul(archsimd.LoadFloat32x8Slice(up[i:])).StoreSlice(out[i:])
	}
	if i < len(out) {
		g := archsimd.LoadFloat32x8SlicePart(gate[i:len(out)])
		s := one.Div(one.Add(avx2Exp(zero.Sub(g))))
		g.Mul(s).Mul(archsimd.LoadFloat32x8SlicePart(up[i:len(out)])).StoreSlicePart(out[i:])
	}
}

// hmax8 is the largest lane of x (no lane NaN).
func hmax8(x archsimd.Float32x8) float32 {
	y := x.GetLo().Max(x.GetHi())
	a, b, c, d := y.GetElem(0), y.GetElem(1), y.GetElem(2), y.GetElem(3)
	if b > a {
		a = b
	}
	if d > c {
		c = d
	}
	if c > a {
		a = c
	}
	return a
}

// avx2Softmax is stepKernels.softmax; lanes 0-7 of a row's sums take keys
// 0-7 and 16-23, lanes 8-15 keys 8-15 and 24-31, as avx512Softmax's.
func avx2Softmax(s, m, lsum, alpha []float32, rows int, scale float32) {
	checkLen("scores", len(s), rows*kvBlock)
	checkLen("sums", len(lsum), rows*16)
	checkLen("maxima", len(m), rows)
	checkLen("alpha", len(alpha), rows)
	sp := unsafe.Pointer(unsafe.SliceData(s))
	sc := archsimd.BroadcastFloat32x8(scale)
	negInf := float32(math.Inf(-1))
	for i := range rows {
		o := i * kvBlock
		x0, x1, x2, x3 := ld8(sp, o), ld8(sp, o+8), ld8(sp, o+16), ld8(sp, o+24)
		top := m[i]
		if h := hmax8(x0.Max(x1).Max(x2.Max(x3))); h > top {
			top = h
		}
		if top == negInf {
			clear(s[o : o+kvBlock])
			alpha[i] = 0
			continue
		}
		c := top * scale
		nc := archsimd.BroadcastFloat32x8(-c)
		st8(avx2Exp(x0.MulAdd(sc, nc)), sp, o)
		st8(avx2Exp(x1.MulAdd(sc, nc)), sp, o+8)
		st8(avx2Exp(x2.MulAdd(sc, nc)), sp, o+16)
		st8(avx2Exp(x3.MulAdd(sc, nc)), sp, o+24)
		alpha[i] = 0
		if top != m[i] {
			alpha[i] = float32(m[i]*scale) - c
		}
		m[i] = top
	}
	avx2ExpSlice(alpha[:rows])
	lp := unsafe.Pointer(unsafe.SliceData(lsum))
	for i := range rows {
		a := archsimd.BroadcastFloat32x8(alpha[i])
		o := i * kvBlock
		lo := ld8(lp, i*16).Mul(a).Add(ld8(sp, o)).Add(ld8(sp, o+16))
		hi := ld8(lp, i*16+8).Mul(a).Add(ld8(sp, o+8)).Add(ld8(sp, o+24))
		st8(lo, lp, i*16)
		st8(hi, lp, i*16+8)
	}
}

// avx2Accum is stepKernels.accum: 4 rows × 16 columns per pass (8
// accumulators of 8 lanes), then 4 rows × 8.
func avx2Accum(p, v, o, alpha []float32, hdV, groups int) {
	checkLen("probabilities", len(p), groups*kernelRows*kvBlock)
	checkLen("values", len(v), kvBlock*hdV)
	checkLen("outputs", len(o), groups*kernelRows*hdV)
	checkLen("alpha", len(alpha), groups*kernelRows)
	pp, vp, op := unsafe.Pointer(unsafe.SliceData(p)), unsafe.Pointer(unsafe.SliceData(v)), unsafe.Pointer(unsafe.SliceData(o))
	for g := range groups {
		r := g * kernelRows
		o0, o1, o2, o3 := r*hdV, (r+1)*hdV, (r+2)*hdV, (r+3)*hdV
		p0 := r * kvBlock
		c := 0
		for ; c+16 <= hdV; c += 16 {
			al := archsimd.BroadcastFloat32x8(alpha[r])
			a00, a01 := ld8(op, o0+c).Mul(al), ld8(op, o0+c+8).Mul(al)
			al = archsimd.BroadcastFloat32x8(alpha[r+1])
			a10, a11 := ld8(op, o1+c).Mul(al), ld8(op, o1+c+8).Mul(al)
			al = archsimd.BroadcastFloat32x8(alpha[r+2])
			a20, a21 := ld8(op, o2+c).Mul(al), ld8(op, o2+c+8).Mul(al)
			al = archsimd.BroadcastFloat32x8(alpha[r+3])
			a30, a31 := ld8(op, o3+c).Mul(al), ld8(op, o3+c+8).Mul(al)
			pr, vr := at(pp, p0), at(vp, c)
			for range kvBlock {
				v0, v1 := ld8(vr, 0), ld8(vr, 8)
				b := archsimd.BroadcastFloat32x8(f32(pr, 0))
				a00, a01 = v0.MulAdd(b, a00), v1.MulAdd(b, a01)
				b = archsimd.BroadcastFloat32x8(f32(pr, kvBlock))
				a10, a11 = v0.MulAdd(b, a10), v1.MulAdd(b, a11)
				b = archsimd.BroadcastFloat32x8(f32(pr, 2*kvBlock))
				a20, a21 = v0.MulAdd(b, a20), v1.MulAdd(b, a21)
				b = archsimd.BroadcastFloat32x8(f32(pr, 3*kvBlock))
				a30, a31 = v0.MulAdd(b, a30), v1.MulAdd(b, a31)
				pr, vr = at(pr, 1), at(vr, hdV)
			}
			st8(a00, op, o0+c)
			st8(a01, op, o0+c+8)
			st8(a10, op, o1+c)
			st8(a11, op, o1+c+8)
			st8(a20, op, o2+c)
			st8(a21, op, o2+c+8)
			st8(a30, op, o3+c)
			st8(a31, op, o3+c+8)
		}
		for ; c < hdV; c += 8 {
			a0 := ld8(op, o0+c).Mul(archsimd.BroadcastFloat32x8(alpha[r]))
			a1 := ld8(op, o1+c).Mul(archsimd.BroadcastFloat32x8(alpha[r+1]))
			a2 := ld8(op, o2+c).Mul(archsimd.BroadcastFloat32x8(alpha[r+2]))
			a3 := ld8(op, o3+c).Mul(archsimd.BroadcastFloat32x8(alpha[r+3]))
			pr, vr := at(pp, p0), at(vp, c)
			for range kvBlock {
				v0 := ld8(vr, 0)
				a0 = v0.MulAdd(archsimd.BroadcastFloat32x8(f32(pr, 0)), a0)
				a1 = v0.MulAdd(archsimd.BroadcastFloat32x8(f32(pr, kvBlock)), a1)
				a2 = v0.MulAdd(archsimd.BroadcastFloat32x8(f32(pr, 2*kvBlock)), a2)
				a3 = v0.MulAdd(archsimd.BroadcastFloat32x8(f32(pr, 3*kvBlock)), a3)
				pr, vr = at(pr, 1), at(vr, hdV)
			}
			st8(a0, op, o0+c)
			st8(a1, op, o1+c)
			st8(a2, op, o2+c)
			st8(a3, op, o3+c)
		}
	}
}
