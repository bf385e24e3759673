package rouge

import "math/bits"

// bitLCS computes longest common subsequences of token-id sequences with
// the bit-parallel row recurrence of Hyyrö (2004), "Bit-parallel LCS-length
// computation revisited": a row of the dynamic-programming table of
// rouge_score's _lcs_table is a bit vector V over the candidate positions
// whose zero bits mark where the row increases, and the next row is
// V' = (V + (V & M)) | (V &^ M) for the match mask M of the next reference
// token. The results equal the reference's table cell for cell; the
// buffers are reused between calls.
type bitLCS struct {
	slot  []int32  // per token id: 1 + index of its mask in masks, or 0
	masks []uint64 // match masks of the candidate's tokens, words each
	rows  []uint64 // V_0 .. V_rows, words each (indices only)
	cur   []uint64 // the running row (length only)
	used  []int32  // token ids that have a slot, to reset slot
	idx   []int    // result buffer of indices
}

// prepare builds the match masks of can; vocab bounds the token ids (0 when
// unknown, then it grows as needed).
func (b *bitLCS) prepare(can []int32, words, vocab int) {
	for _, id := range b.used {
		b.slot[id] = 0
	}
	b.used = b.used[:0]
	b.masks = b.masks[:0]
	for j, id := range can {
		if int(id) >= len(b.slot) {
			n := max(vocab, int(id)+1, 2*len(b.slot))
			b.slot = append(b.slot, make([]int32, n-len(b.slot))...)
		}
		s := b.slot[id]
		if s == 0 {
			b.used = append(b.used, id)
			need := len(b.used) * words
			if cap(b.masks) < need {
				grown := make([]uint64, len(b.masks), max(need, 2*cap(b.masks), 64))
				copy(grown, b.masks)
				b.masks = grown
			}
			b.masks = b.masks[:need]
			clear(b.masks[need-words:])
			s = int32(len(b.used))
			b.slot[id] = s
		}
		b.masks[int(s-1)*words+j>>6] |= 1 << (j & 63)
	}
}

// step advances row v (in place) by the reference token id.
func (b *bitLCS) step(v []uint64, id int32) {
	if int(id) >= len(b.slot) || b.slot[id] == 0 {
		return // no match: V' = (V + 0) | V = V
	}
	words := len(v)
	m := b.masks[int(b.slot[id]-1)*words : int(b.slot[id])*words]
	var carry uint64
	for k := range v {
		u := v[k] & m[k]
		sum, c := bits.Add64(v[k], u, carry)
		carry = c
		v[k] = sum | (v[k] &^ m[k])
	}
}

// length returns the LCS length of ref and can (_lcs_table[-1][-1]).
func (b *bitLCS) length(ref, can []int32, vocab int) int {
	if len(ref) == 0 || len(can) == 0 {
		return 0
	}
	words := (len(can) + 63) / 64
	b.prepare(can, words, vocab)
	if cap(b.cur) < words {
		b.cur = make([]uint64, words)
	}
	v := b.cur[:words]
	for k := range v {
		v[k] = ^uint64(0)
	}
	for _, id := range ref {
		b.step(v, id)
	}
	return zerosBelow(v, len(can))
}

// zerosBelow counts the zero bits of v among bit positions [0, j): the
// table value t[i][j] for the row v = V_i.
func zerosBelow(v []uint64, j int) int {
	n := 0
	full := j >> 6
	for k := 0; k < full; k++ {
		n += 64 - bits.OnesCount64(v[k])
	}
	if r := j & 63; r != 0 {
		n += r - bits.OnesCount64(v[full]&(1<<r-1))
	}
	return n
}

// indices is lcs_ind(ref, can): the indices into ref of the LCS that
// _backtrack_norec reads out of the full table (in decreasing order). At
// cell (i, j) with ref[i-1] != can[j-1] the reference moves left when
// t[i][j-1] > t[i-1][j] and up otherwise.
// The result is valid until the next call.
func (b *bitLCS) indices(ref, can []int32, vocab int) []int {
	out := b.idx[:0]
	defer func() { b.idx = out }()
	rows, cols := len(ref), len(can)
	if rows == 0 || cols == 0 {
		return out
	}
	words := (cols + 63) / 64
	b.prepare(can, words, vocab)
	need := (rows + 1) * words
	if cap(b.rows) < need {
		b.rows = make([]uint64, need)
	}
	all := b.rows[:need]
	for k := 0; k < words; k++ {
		all[k] = ^uint64(0)
	}
	for i := 1; i <= rows; i++ {
		copy(all[i*words:(i+1)*words], all[(i-1)*words:i*words])
		b.step(all[i*words:(i+1)*words], ref[i-1])
	}
	row := func(i int) []uint64 { return all[i*words : (i+1)*words] }
	// inc reports t[i][j] - t[i][j-1] (1 when bit j-1 of V_i is zero).
	inc := func(i, j int) int {
		return int(^row(i)[(j-1)>>6]>>((j-1)&63)) & 1
	}
	i, j := rows, cols
	a, u := zerosBelow(row(i), j), zerosBelow(row(i-1), j) // t[i][j], t[i-1][j]
	for i > 0 && j > 0 {
		if ref[i-1] == can[j-1] {
			out = append(out, i-1)
			i--
			j--
			if i == 0 || j == 0 {
				break
			}
			a, u = zerosBelow(row(i), j), zerosBelow(row(i-1), j)
			continue
		}
		if left := a - inc(i, j); left > u { // t[i][j-1] > t[i-1][j]
			u -= inc(i-1, j)
			a = left
			j--
		} else {
			i--
			a = u
			if i > 0 {
				u = zerosBelow(row(i-1), j)
			}
		}
	}
	return out
}
