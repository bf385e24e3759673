package gomlx

import (
	"encoding/binary"
	"fmt"
)

// GGML block formats, widened to float32 on load. They are written here
// from the format's definition (ggml's ggml-common.h block structs and
// dequantize_row_* in ggml-quants.c) because no Go library served to this
// project decodes them: github.com/ollama/ollama/fs/ggml reads GGUF
// headers only (its kernels are C), and gomlx/compute's pure-Go
// dequantizers are internal to its fused quantized product.

// ggmlType is a GGML tensor type (the "kind" of a GGUF tensor entry).
// F32, F16 and BF16 are read as safetensors' are (readTensorF32); the
// block formats decode a block at a time.
type ggmlType struct {
	name   string
	values int // values per block
	bytes  int // bytes per block
	decode func(block []byte, out []float32)
}

// ggmlTypes are the tensor types a GGUF file may hold that tally reads, by
// kind (ggml.h's enum ggml_type).
var ggmlTypes = map[uint32]ggmlType{
	0:  {"F32", 1, 4, nil},
	1:  {"F16", 1, 2, nil},
	30: {"BF16", 1, 2, nil},
	2:  {"Q4_0", 32, 18, decodeQ4_0},
	8:  {"Q8_0", 32, 34, decodeQ8_0},
	12: {"Q4_K", 256, 144, decodeQ4K},
	13: {"Q5_K", 256, 176, decodeQ5K},
	14: {"Q6_K", 256, 210, decodeQ6K},
}

// ggmlTypeNamed is the type of a name in ggmlTypes.
func ggmlTypeNamed(name string) (ggmlType, bool) {
	for _, t := range ggmlTypes {
		if t.name == name {
			return t, true
		}
	}
	return ggmlType{}, false
}

// isBlockType reports whether name is a GGML block format (several values
// per block) that dequantize reads.
func isBlockType(name string) bool {
	t, ok := ggmlTypeNamed(name)
	return ok && t.values > 1
}

// dequantize widens n values of type t held in data.
func (t ggmlType) dequantize(data []byte, n int) ([]float32, error) {
	if n%t.values != 0 {
		return nil, fmt.Errorf("%d values are not whole %s blocks of %d", n, t.name, t.values)
	}
	blocks := n / t.values
	if len(data) != blocks*t.bytes {
		return nil, fmt.Errorf("%d bytes for %d %s values, want %d", len(data), n, t.name, blocks*t.bytes)
	}
	out := make([]float32, n)
	for i := range blocks {
		t.decode(data[i*t.bytes:(i+1)*t.bytes], out[i*t.values:(i+1)*t.values])
	}
	return out, nil
}

// f16 reads a little-endian binary16 value.
func f16(b []byte) float32 { return halfToFloat32(binary.LittleEndian.Uint16(b)) }

// decodeQ8_0: a binary16 scale d, then 32 signed bytes q; x = d·q.
func decodeQ8_0(b []byte, out []float32) {
	d := f16(b)
	for i, q := range b[2:34] {
		out[i] = d * float32(int8(q))
	}
}

// decodeQ4_0: a binary16 scale d, then 16 bytes whose low nibbles are
// values 0–15 and high nibbles values 16–31, each offset by 8; x = d·(q−8).
func decodeQ4_0(b []byte, out []float32) {
	d := f16(b)
	for j, q := range b[2:18] {
		out[j] = d * float32(int(q&0x0f)-8)
		out[j+16] = d * float32(int(q>>4)-8)
	}
}

// scaleMinK4 is the j-th 6-bit scale and minimum of the 12 packed scale
// bytes of a Q4_K or Q5_K block (8 sub-blocks of 32 values).
func scaleMinK4(j int, s []byte) (sc, m byte) {
	if j < 4 {
		return s[j] & 63, s[j+4] & 63
	}
	return (s[j+4] & 0x0f) | ((s[j-4] >> 6) << 4), (s[j+4] >> 4) | ((s[j] >> 6) << 4)
}

// decodeQ4K: binary16 d and dmin, 12 bytes of packed 6-bit scales and
// minimums, then 128 bytes of 4-bit values; each 64 values take the low
// nibbles of 32 bytes (sub-block 2i) then their high nibbles (2i+1), and
// x = d·scale·q − dmin·min.
func decodeQ4K(b []byte, out []float32) {
	d, dmin := f16(b), f16(b[2:])
	scales, qs := b[4:16], b[16:144]
	for g := range 4 {
		sc1, m1 := scaleMinK4(2*g, scales)
		sc2, m2 := scaleMinK4(2*g+1, scales)
		d1, min1 := d*float32(sc1), dmin*float32(m1)
		d2, min2 := d*float32(sc2), dmin*float32(m2)
		q := qs[32*g : 32*g+32]
		y := out[64*g : 64*g+64]
		for l := range 32 {
			y[l] = d1*float32(q[l]&0x0f) - min1
			y[l+32] = d2*float32(q[l]>>4) - min2
		}
	}
}

// decodeQ5K is decodeQ4K with a fifth bit per value: 32 bytes of high
// bits after the scales, bit 2i of byte l for value l of sub-block 2i and
// bit 2i+1 for value l of sub-block 2i+1.
func decodeQ5K(b []byte, out []float32) {
	d, dmin := f16(b), f16(b[2:])
	scales, qh, qs := b[4:16], b[16:48], b[48:176]
	for g := range 4 {
		sc1, m1 := scaleMinK4(2*g, scales)
		sc2, m2 := scaleMinK4(2*g+1, scales)
		d1, min1 := d*float32(sc1), dmin*float32(m1)
		d2, min2 := d*float32(sc2), dmin*float32(m2)
		u1, u2 := byte(1)<<(2*g), byte(2)<<(2*g)
		q := qs[32*g : 32*g+32]
		y := out[64*g : 64*g+64]
		for l := range 32 {
			h1, h2 := 0, 0
			if qh[l]&u1 != 0 {
				h1 = 16
			}
			if qh[l]&u2 != 0 {
				h2 = 16
			}
			y[l] = d1*float32(int(q[l]&0x0f)+h1) - min1
			y[l+32] = d2*float32(int(q[l]>>4)+h2) - min2
		}
	}
}

// decodeQ6K: 128 bytes of low nibbles, 64 bytes of high 2-bit pairs, 16
// signed 8-bit scales (one per 16 values), then binary16 d; each half of
// 128 values takes 64 low-nibble bytes and 32 high-bit bytes, and
// x = d·scale·(q−32).
func decodeQ6K(b []byte, out []float32) {
	ql, qh, sc := b[0:128], b[128:192], b[192:208]
	d := f16(b[208:])
	for half := range 2 {
		ql, qh, sc, y := ql[64*half:], qh[32*half:], sc[8*half:], out[128*half:]
		for l := range 32 {
			is := l / 16
			q1 := int(ql[l]&0x0f|((qh[l]>>0)&3)<<4) - 32
			q2 := int(ql[l+32]&0x0f|((qh[l]>>2)&3)<<4) - 32
			q3 := int(ql[l]>>4|((qh[l]>>4)&3)<<4) - 32
			q4 := int(ql[l+32]>>4|((qh[l]>>6)&3)<<4) - 32
			y[l] = d * float32(int8(sc[is])) * float32(q1)
			y[l+32] = d * float32(int8(sc[is+2])) * float32(q2)
			y[l+64] = d * float32(int8(sc[is+4])) * float32(q3)
			y[l+96] = d * float32(int8(sc[is+6])) * float32(q4)
		}
	}
}
