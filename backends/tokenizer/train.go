package tokenizer

import (
	"fmt"
	"sort"

	"golang.org/x/text/unicode/norm"
)

// Split names a pre-tokenizer split pattern TrainByteLevelSplit can train
// with.
type Split string

// The split patterns: Qwen2's (every digit alone), GPT-2's (runs of
// digits, with the space before them) and Llama 3's (digits in groups of
// up to three).
const (
	SplitQwen2  Split = "qwen2"
	SplitGPT2   Split = "gpt2"
	SplitLlama3 Split = "llama3"
)

// TrainByteLevel trains a small byte-level BPE on corpus and returns a
// complete Qwen2-style tokenizer.json: NFC normalizer, the Qwen2 Split
// regex followed by ByteLevel, a ByteLevel decoder, the 256 byte tokens
// first (ids 0–255 in byte order), then one token per learned merge, and
// the special token <|endoftext|> as the last id. vocabSize counts all of
// them (at least 257). Training is deterministic: each step merges the most
// frequent adjacent pair, ties broken by the smaller pair of token ids.
// It stops early when no pair occurs at least twice.
func TrainByteLevel(corpus string, vocabSize int) ([]byte, error) {
	return TrainByteLevelSplit(corpus, vocabSize, SplitQwen2)
}

// TrainByteLevelSplit is TrainByteLevel with another pre-tokenizer split
// pattern, written into the tokenizer.json's Split step.
func TrainByteLevelSplit(corpus string, vocabSize int, split Split) ([]byte, error) {
	pattern, ok := map[Split]string{SplitQwen2: patternQwen2, SplitGPT2: patternGPT2, SplitLlama3: patternLlama3}[split]
	if !ok {
		return nil, fmt.Errorf("train byte-level BPE: unknown split %q", split)
	}
	if vocabSize < 257 {
		return nil, fmt.Errorf("train byte-level BPE: vocab size %d is below 257", vocabSize)
	}
	corpus = norm.NFC.String(validString(corpus))

	// Pre-tokenize and count words.
	m, _ := knownMatcher(pattern)
	counts := map[string]int{}
	for _, r := range m.findAll(corpus, nil) {
		counts[corpus[r[0]:r[1]]]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	type word struct {
		syms  []int
		count int
	}
	words := make([]word, len(keys))
	for i, k := range keys {
		syms := make([]int, len(k))
		for j := 0; j < len(k); j++ {
			syms[j] = int(k[j])
		}
		words[i] = word{syms: syms, count: counts[k]}
	}

	tokens := make([]string, 256, vocabSize)
	index := make(map[string]int, vocabSize)
	for b := 0; b < 256; b++ {
		tokens[b] = byteChars[b]
		index[tokens[b]] = b
	}
	var merges [][2]string
	// Pair counts and, for each pair, the words it occurs in.
	pairCount := map[uint64]int{}
	where := map[uint64]map[int]struct{}{}
	addWord := func(wi int, sign int) {
		w := words[wi]
		for j := 0; j+1 < len(w.syms); j++ {
			k := pairKey(w.syms[j], w.syms[j+1])
			pairCount[k] += sign * w.count
			if sign > 0 {
				set := where[k]
				if set == nil {
					set = map[int]struct{}{}
					where[k] = set
				}
				set[wi] = struct{}{}
			}
		}
	}
	for wi := range words {
		addWord(wi, 1)
	}
	for len(tokens) < vocabSize-1 {
		best, bestCount := uint64(0), 1
		for k, c := range pairCount {
			if c > bestCount || (c == bestCount && c > 1 && k < best) {
				best, bestCount = k, c
			}
		}
		if bestCount < 2 {
			break
		}
		a, b := int(best>>32), int(uint32(best))
		merged := tokens[a] + tokens[b]
		id, exists := index[merged]
		if !exists {
			id = len(tokens)
			tokens = append(tokens, merged)
			index[merged] = id
		}
		merges = append(merges, [2]string{tokens[a], tokens[b]})
		affected := make([]int, 0, len(where[best]))
		for wi := range where[best] {
			affected = append(affected, wi)
		}
		sort.Ints(affected)
		for _, wi := range affected {
			addWord(wi, -1)
			w := &words[wi]
			out := w.syms[:0]
			for j := 0; j < len(w.syms); j++ {
				if j+1 < len(w.syms) && w.syms[j] == a && w.syms[j+1] == b {
					out = append(out, id)
					j++
					continue
				}
				out = append(out, w.syms[j])
			}
			w.syms = out
			addWord(wi, 1)
		}
		delete(pairCount, best)
		delete(where, best)
		for k, c := range pairCount {
			if c <= 0 {
				delete(pairCount, k)
			}
		}
	}
	return writeByteLevelJSON(tokens, merges, pattern)
}

// writeByteLevelJSON renders the trained model as tokenizer.json, with
// <|endoftext|> as the last id.
func writeByteLevelJSON(tokens []string, merges [][2]string, pattern string) ([]byte, error) {
	v := ByteLevelVocab{Tokens: append(tokens[:len(tokens):len(tokens)], "<|endoftext|>"), Types: make([]int, len(tokens)+1),
		Pattern: pattern, NFC: true, BOS: -1}
	v.Types[len(tokens)] = TokenControl
	for _, m := range merges {
		v.Merges = append(v.Merges, m[0]+" "+m[1])
	}
	return v.JSON()
}
