package sacrebleu

import (
	"math"
	"slices"
	"strings"

	"tally/internal/pystr"
)

// lib_ter.py's constants.
const (
	costIns, costDel, costSub = 1, 1, 1
	maxShiftSize              = 10
	maxShiftDist              = 50
	beamWidth                 = 25
	maxCacheSize              = 10000
	maxShiftCandidates        = 1000
	intInfinity               = int(1e16)
)

// Edit operations, as lib_ter.py writes them in a trace.
const (
	opIns   = 'i'
	opDel   = 'd'
	opNop   = ' '
	opSub   = 's'
	opUndef = 'x'
)

// TERStatsLen is the length of a segment's TER statistics: [edits of the
// best reference, the references' average length].
const TERStatsLen = 2

// terTokenize is TercomTokenizer with TER's defaults (case-insensitive,
// not normalised, punctuation kept): lower-cased, white space collapsed.
func terTokenize(s string) string {
	if s == "" {
		return ""
	}
	return strings.Join(split(pystr.Lower(s)), " ")
}

// TERStats are a segment's TER statistics (TER._compute_segment_statistics
// after _preprocess_segment: rstrip, then the tokenizer): the fewest edits
// to any reference, and the references' average length.
func TERStats(hyp string, refs []string) []float64 {
	wordsHyp := split(terTokenize(rstrip(hyp)))
	refLengths := 0
	best := intInfinity
	for _, ref := range refs {
		edits, n := translationEditRate(wordsHyp, split(terTokenize(rstrip(ref))))
		refLengths += n
		if edits < best {
			best = edits
		}
	}
	return []float64{float64(best), float64(refLengths) / float64(len(refs))}
}

// TERScore is TER._compute_score_from_stats on summed statistics: edits
// over reference length, times 100 (100 for edits against an empty
// reference, 0 for none).
func TERScore(stats []float64) float64 {
	edits, refLen := stats[0], stats[1]
	score := 0.0
	switch {
	case refLen > 0:
		score = edits / refLen
	case edits > 0:
		score = 1
	}
	return 100 * score
}

// translationEditRate is lib_ter.translation_edit_rate: the edit distance
// after Tercom's greedy shifts, plus the shifts; and the reference's
// length.
func translationEditRate(wordsHyp, wordsRef []string) (int, int) {
	if len(wordsRef) == 0 {
		return len(wordsHyp), 0
	}
	ed := newBeamEditDistance(wordsRef)
	shifts := 0
	input := wordsHyp
	checked := 0
	for {
		var delta int
		var next []string
		delta, next, checked = shift(input, wordsRef, ed, checked)
		if checked >= maxShiftCandidates || delta <= 0 {
			break
		}
		shifts++
		input = next
	}
	dist, _ := ed.distance(input)
	return shifts + dist, len(wordsRef)
}

// candidate is a shift considered by shift, ordered as lib_ter's tuple
// (score gain, length, -start, -target, shifted words).
type candidate struct {
	gain, length, negStart, negIdx int
	words                          []string
}

// greater is Python's tuple comparison candidate > other.
func (c *candidate) greater(o *candidate) bool {
	for _, d := range [][2]int{{c.gain, o.gain}, {c.length, o.length}, {c.negStart, o.negStart}, {c.negIdx, o.negIdx}} {
		if d[0] != d[1] {
			return d[0] > d[1]
		}
	}
	return slices.Compare(c.words, o.words) > 0
}

// shift is lib_ter._shift: the shift of hypothesis words that lowers the
// edit distance the most, among Tercom's candidates.
func shift(wordsH, wordsR []string, ed *beamEditDistance, checked int) (int, []string, int) {
	pre, invTrace := ed.distance(wordsH)
	trace := flipTrace(invTrace)
	align, refErr, hypErr := traceToAlignment(trace)
	var best *candidate
	sumRange := func(xs []int, from, n int) int {
		s := 0
		for i := from; i < from+n && i < len(xs); i++ {
			s += xs[i]
		}
		return s
	}
	for _, p := range findShiftedPairs(wordsH, wordsR) {
		startH, startR, length := p[0], p[1], p[2]
		if sumRange(hypErr, startH, length) == 0 || sumRange(refErr, startR, length) == 0 {
			continue
		}
		if a := align[startR]; startH <= a && a < startH+length {
			continue
		}
		prevIdx := -1
		for offset := -1; offset < length; offset++ {
			var idx int
			if startR+offset == -1 {
				idx = 0
			} else if a, ok := align[startR+offset]; ok {
				idx = a + 1
			} else {
				break
			}
			if idx == prevIdx {
				continue
			}
			prevIdx = idx
			shifted := performShift(wordsH, startH, length, idx)
			d, _ := ed.distance(shifted)
			c := &candidate{pre - d, length, -startH, -idx, shifted}
			checked++
			if best == nil || c.greater(best) {
				best = c
			}
		}
		if checked >= maxShiftCandidates {
			break
		}
	}
	if best == nil {
		return 0, wordsH, checked
	}
	return best.gain, best.words, checked
}

// performShift moves words[start:start+length] to target.
func performShift(words []string, start, length, target int) []string {
	cat := func(parts ...[]string) []string {
		out := make([]string, 0, len(words))
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	// Python slices clip at the ends.
	sl := func(a, b int) []string {
		a, b = max(0, min(a, len(words))), max(0, min(b, len(words)))
		if a >= b {
			return nil
		}
		return words[a:b]
	}
	switch {
	case target < start:
		return cat(sl(0, target), sl(start, start+length), sl(target, start), sl(start+length, len(words)))
	case target > start+length:
		return cat(sl(0, start), sl(start+length, target), sl(start, start+length), sl(target, len(words)))
	default:
		return cat(sl(0, start), sl(start+length, length+target), sl(start, start+length), sl(length+target, len(words)))
	}
}

// findShiftedPairs is lib_ter._find_shifted_pairs: (hyp start, ref start,
// length) of every matching run, each prefix of a run yielded, at most
// maxShiftSize long and maxShiftDist apart.
func findShiftedPairs(wordsH, wordsR []string) [][3]int {
	var out [][3]int
	nh, nr := len(wordsH), len(wordsR)
	for sh := range nh {
		for sr := range nr {
			if d := sr - sh; d > maxShiftDist || d < -maxShiftDist {
				continue
			}
			length := 0
			for wordsH[sh+length] == wordsR[sr+length] && length < maxShiftSize {
				length++
				out = append(out, [3]int{sh, sr, length})
				if nh == sh+length || nr == sr+length {
					break
				}
			}
		}
	}
	return out
}

// flipTrace swaps insertions and deletions.
func flipTrace(trace string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case opIns:
			return opDel
		case opDel:
			return opIns
		}
		return r
	}, trace)
}

// traceToAlignment is lib_ter.trace_to_alignment.
func traceToAlignment(trace string) (map[int]int, []int, []int) {
	posHyp, posRef := -1, -1
	var hypErr, refErr []int
	align := map[int]int{}
	for _, op := range trace {
		switch op {
		case opNop:
			posHyp++
			posRef++
			align[posRef] = posHyp
			hypErr, refErr = append(hypErr, 0), append(refErr, 0)
		case opSub:
			posHyp++
			posRef++
			align[posRef] = posHyp
			hypErr, refErr = append(hypErr, 1), append(refErr, 1)
		case opIns:
			posHyp++
			hypErr = append(hypErr, 1)
		case opDel:
			posRef++
			align[posRef] = posHyp
			refErr = append(refErr, 1)
		}
	}
	return align, refErr, hypErr
}

// cell is an edit distance matrix cell: cost and the operation.
type cell struct {
	cost int
	op   byte
}

// cacheNode is lib_ter's prefix cache: per next hypothesis word, the
// matrix row after it and the node of longer prefixes.
type cacheNode struct {
	next map[string]*cacheNode
	row  []cell
}

// beamEditDistance is lib_ter.BeamEditDistance: the edit distance to the
// reference within a beam around the (length-scaled) diagonal, with its
// trace, rows cached by hypothesis prefix (the cache saves time only: a
// cached row is the row the computation would make).
type beamEditDistance struct {
	ref        []string
	initialRow []cell
	cache      cacheNode
	cacheSize  int
}

func newBeamEditDistance(ref []string) *beamEditDistance {
	b := &beamEditDistance{ref: ref, cache: cacheNode{next: map[string]*cacheNode{}}}
	for i := 0; i <= len(ref); i++ {
		b.initialRow = append(b.initialRow, cell{i * costIns, opIns})
	}
	return b
}

func (b *beamEditDistance) distance(hyp []string) (int, string) {
	start, dist := b.findCache(hyp)
	d, rows, trace := b.editDistance(hyp, start, dist)
	b.addCache(hyp, rows)
	return d, trace
}

func (b *beamEditDistance) editDistance(wordsH []string, startH int, cached [][]cell) (int, [][]cell, string) {
	nh, nr := len(wordsH), len(b.ref)
	dist := slices.Clone(cached)
	for range nh - startH {
		row := make([]cell, nr+1)
		for j := range row {
			row[j] = cell{intInfinity, opUndef}
		}
		dist = append(dist, row)
	}
	lengthRatio := 1.0
	if nh > 0 {
		lengthRatio = float64(nr) / float64(nh)
	}
	width := beamWidth
	if float64(beamWidth) < lengthRatio/2 {
		width = int(math.Ceil(lengthRatio/2 + beamWidth))
	}
	for i := startH + 1; i <= nh; i++ {
		diag := int(math.Floor(float64(i) * lengthRatio))
		minJ := max(0, diag-width)
		maxJ := min(nr+1, diag+width)
		if i == nh {
			maxJ = nr + 1
		}
		for j := minJ; j < maxJ; j++ {
			if j == 0 {
				dist[i][j] = cell{dist[i-1][j].cost + costDel, opDel}
				continue
			}
			costS, opS := costSub, byte(opSub)
			if wordsH[i-1] == b.ref[j-1] {
				costS, opS = 0, opNop
			}
			for _, o := range [3]cell{{dist[i-1][j-1].cost + costS, opS}, {dist[i-1][j].cost + costDel, opDel}, {dist[i][j-1].cost + costIns, opIns}} {
				if dist[i][j].cost > o.cost {
					dist[i][j] = o
				}
			}
		}
	}
	var trace []byte
	i, j := nh, nr
	for i > 0 || j > 0 {
		op := dist[i][j].op
		trace = append(trace, op)
		switch op {
		case opSub, opNop:
			i--
			j--
		case opIns:
			j--
		case opDel:
			i--
		default:
			panic("sacrebleu: TER: unknown operation in the trace")
		}
	}
	slices.Reverse(trace)
	return dist[nh][nr].cost, dist[len(cached):], string(trace)
}

func (b *beamEditDistance) addCache(hyp []string, rows [][]cell) {
	if b.cacheSize >= maxCacheSize {
		return
	}
	node := &b.cache
	skip := len(hyp) - len(rows)
	for i := range skip {
		node = node.next[hyp[i]]
	}
	for k, w := range hyp[skip:] {
		n, ok := node.next[w]
		if !ok {
			n = &cacheNode{next: map[string]*cacheNode{}, row: slices.Clone(rows[k])}
			node.next[w] = n
			b.cacheSize++
		}
		node = n
	}
}

func (b *beamEditDistance) findCache(hyp []string) (int, [][]cell) {
	node := &b.cache
	start := 0
	dist := [][]cell{b.initialRow}
	for _, w := range hyp {
		n, ok := node.next[w]
		if !ok {
			break
		}
		start++
		node = n
		dist = append(dist, n.row)
	}
	return start, dist
}
