package tokenizer

import (
	"strings"
	"sync"
	"unicode/utf8"
)

// byteChars and charBytes are GPT-2's byte-to-unicode map and its inverse
// (constant tables, filled once at package initialisation).
var byteChars, charBytes = buildByteMaps()

func buildByteMaps() ([256]string, map[rune]byte) {
	var bc [256]string
	cb := make(map[rune]byte, 256)
	n := 0
	for b := 0; b < 256; b++ {
		var r rune
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			r = rune(b)
		} else {
			r = rune(256 + n)
			n++
		}
		bc[b] = string(r)
		cb[r] = byte(b)
	}
	return bc, cb
}

// mergeInfo is the rank of a merge and the id it produces.
type mergeInfo struct {
	rank  int32
	newID int32
}

// bpeModel is the BPE model of tokenizer.json.
type bpeModel struct {
	vocab        map[string]int
	vocabR       map[int]string
	merges       map[uint64]mergeInfo
	unkToken     string
	hasUnk       bool
	prefix       *string // continuing_subword_prefix
	suffix       *string // end_of_word_suffix
	fuseUnk      bool
	byteFallback bool
	ignoreMerges bool
	byteIDs      [256]int // <0xXX> ids for byte fallback (-1 if absent)

	mu    sync.RWMutex
	cache map[string][]int
}

const (
	cacheCapacity = 10000
	cacheMaxWord  = 256
)

func pairKey(a, b int) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// tokenize appends the ids of one pre-token to dst.
func (m *bpeModel) tokenize(s string, dst []int) ([]int, error) {
	if s == "" {
		return dst, nil
	}
	if m.ignoreMerges {
		if id, ok := m.vocab[s]; ok {
			return append(dst, id), nil
		}
	}
	cacheable := len(s) <= cacheMaxWord
	if cacheable {
		m.mu.RLock()
		ids, ok := m.cache[s]
		m.mu.RUnlock()
		if ok {
			return append(dst, ids...), nil
		}
	}
	ids, err := m.mergeWord(s)
	if err != nil {
		return dst, err
	}
	if cacheable {
		m.mu.Lock()
		if len(m.cache) < cacheCapacity {
			// s is often part of a larger string: the cache keeps a copy.
			m.cache[strings.Clone(s)] = ids
		}
		m.mu.Unlock()
	}
	return append(dst, ids...), nil
}

type symbol struct {
	id         int
	prev, next int
	size       int // byte length; 0 once merged away
}

// mergeWord runs Rust's Word::merge_all on the characters of w.
func (m *bpeModel) mergeWord(w string) ([]int, error) {
	syms := make([]symbol, 0, len(w))
	add := func(id, size int) {
		n := len(syms)
		syms = append(syms, symbol{id: id, prev: n - 1, next: n + 1, size: size})
	}
	unkID, unkLen, haveUnk := 0, 0, false
	for i := 0; i < len(w); {
		_, n := utf8.DecodeRuneInString(w[i:])
		s := w[i : i+n]
		first, last := i == 0, i+n == len(w)
		i += n
		if !first && m.prefix != nil && *m.prefix != "" {
			s = *m.prefix + s
		}
		if last && m.suffix != nil && *m.suffix != "" {
			s += *m.suffix
		}
		if id, ok := m.vocab[s]; ok {
			if haveUnk {
				add(unkID, unkLen)
				haveUnk = false
			}
			add(id, n)
			continue
		}
		if m.byteFallback {
			ok := true
			for k := 0; k < len(s); k++ {
				if m.byteIDs[s[k]] < 0 {
					ok = false
					break
				}
			}
			if ok {
				for k := 0; k < len(s); k++ {
					add(m.byteIDs[s[k]], 1)
				}
				continue
			}
		}
		if m.hasUnk {
			uid, ok := m.vocab[m.unkToken]
			if !ok {
				return nil, errorf("unk_token %q not in vocab", m.unkToken)
			}
			switch {
			case haveUnk && m.fuseUnk:
				unkLen += n
			case haveUnk:
				add(unkID, unkLen)
				unkID, unkLen = uid, n
			default:
				unkID, unkLen, haveUnk = uid, n, true
			}
		}
	}
	if haveUnk {
		add(unkID, unkLen)
	}
	if len(syms) > 0 {
		syms[len(syms)-1].next = -1
	}
	m.mergeAll(syms)
	out := make([]int, 0, len(syms))
	for _, s := range syms {
		if s.size != 0 {
			out = append(out, s.id)
		}
	}
	return out, nil
}

// mergeItem is a queued merge; the queue is a min-heap on (rank, pos).
type mergeItem struct {
	pos   int
	rank  int32
	newID int32
}

func less(a, b mergeItem) bool {
	if a.rank != b.rank {
		return a.rank < b.rank
	}
	return a.pos < b.pos
}

type mergeHeap []mergeItem

func (h *mergeHeap) push(x mergeItem) {
	*h = append(*h, x)
	q := *h
	i := len(q) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !less(q[i], q[p]) {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
}

func (h *mergeHeap) pop() mergeItem {
	q := *h
	top := q[0]
	n := len(q) - 1
	q[0] = q[n]
	q = q[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		c := l
		if r := l + 1; r < n && less(q[r], q[l]) {
			c = r
		}
		if !less(q[c], q[i]) {
			break
		}
		q[i], q[c] = q[c], q[i]
		i = c
	}
	*h = q
	return top
}

func (m *bpeModel) mergeAll(syms []symbol) {
	if len(syms) < 2 {
		return
	}
	h := make(mergeHeap, 0, len(syms))
	for i := 0; i+1 < len(syms); i++ {
		if mi, ok := m.merges[pairKey(syms[i].id, syms[i+1].id)]; ok {
			h.push(mergeItem{pos: i, rank: mi.rank, newID: mi.newID})
		}
	}
	for len(h) > 0 {
		top := h.pop()
		cur := &syms[top.pos]
		if cur.size == 0 || cur.next == -1 {
			continue
		}
		nextPos := cur.next
		right := syms[nextPos]
		mi, ok := m.merges[pairKey(cur.id, right.id)]
		if !ok || mi.newID != top.newID {
			continue
		}
		cur.id = int(top.newID)
		cur.size += right.size
		cur.next = right.next
		syms[nextPos].size = 0
		if right.next > -1 && right.next < len(syms) {
			syms[right.next].prev = top.pos
		}
		if cur.prev >= 0 {
			if mi, ok := m.merges[pairKey(syms[cur.prev].id, cur.id)]; ok {
				h.push(mergeItem{pos: cur.prev, rank: mi.rank, newID: mi.newID})
			}
		}
		if cur.next >= 0 && cur.next < len(syms) {
			if mi, ok := m.merges[pairKey(cur.id, syms[cur.next].id)]; ok {
				h.push(mergeItem{pos: top.pos, rank: mi.rank, newID: mi.newID})
			}
		}
	}
}
