package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

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

// The token types of a GGUF vocabulary (llama.cpp's llama_token_type)
// that ByteLevelVocab treats apart: control tokens are special added
// tokens, user-defined ones added tokens matched before the model.
const (
	TokenControl     = 3
	TokenUserDefined = 4
)

// ByteLevelVocab is a byte-level BPE vocabulary as a GGUF file's metadata
// holds it (tokenizer.ggml.model "gpt2": tokens by id, their types, merges
// as "left right").
type ByteLevelVocab struct {
	// Tokens are the token strings by id (bytes as GPT-2's byte characters).
	Tokens []string
	// Types are the tokens' types (TokenControl, TokenUserDefined, others
	// normal); missing entries are normal.
	Types []int
	// Merges are the merge rules in rank order, "left right".
	Merges []string
	// Pattern is the pre-tokenizer's split regex (see PatternFor).
	Pattern string
	// NFC normalises the input to NFC first (Qwen2).
	NFC bool
	// IgnoreMerges takes a pre-tokenized word that is a token as it is
	// before any merge (Llama 3; llama.cpp does so for "llama-bpe").
	IgnoreMerges bool
	// BOS is the id prepended to every encoding when AddBOS is set.
	BOS    int
	AddBOS bool
}

// PatternFor is the split regex of a GGUF pre-tokenizer name
// (tokenizer.ggml.pre): "llama-bpe" (Llama 3), "qwen2", or GPT-2's for
// "default", "gpt-2" and "". ok is false for other names.
func PatternFor(pre string) (pattern string, ok bool) {
	switch pre {
	case "llama-bpe", "llama3":
		return patternLlama3, true
	case "qwen2":
		return patternQwen2, true
	case "", "default", "gpt-2", "gpt2":
		return patternGPT2, true
	}
	return "", false
}

// JSON renders the vocabulary as a tokenizer.json: control and
// user-defined tokens as added tokens, the others as the BPE model's
// vocabulary, the Split regex followed by ByteLevel, and a template that
// prepends BOS when AddBOS is set.
func (v ByteLevelVocab) JSON() ([]byte, error) {
	q := func(s string) string {
		b, _ := json.Marshal(s)
		return string(b)
	}
	typ := func(i int) int {
		if i < len(v.Types) {
			return v.Types[i]
		}
		return 0
	}
	var buf bytes.Buffer
	buf.WriteString(`{"version":"1.0","truncation":null,"padding":null,"added_tokens":[`)
	n := 0
	for i, t := range v.Tokens {
		if k := typ(i); k == TokenControl || k == TokenUserDefined {
			if n > 0 {
				buf.WriteByte(',')
			}
			n++
			fmt.Fprintf(&buf, `{"id":%d,"content":%s,"single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":%t}`,
				i, q(t), k == TokenControl)
		}
	}
	buf.WriteString(`],`)
	if v.NFC {
		buf.WriteString(`"normalizer":{"type":"NFC"},`)
	} else {
		buf.WriteString(`"normalizer":null,`)
	}
	fmt.Fprintf(&buf, `"pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":%s},"behavior":"Isolated","invert":false},{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":false,"use_regex":false}]},`, q(v.Pattern))
	if v.AddBOS && v.BOS >= 0 {
		if v.BOS >= len(v.Tokens) {
			return nil, fmt.Errorf("tokenizer: BOS id %d outside the %d tokens", v.BOS, len(v.Tokens))
		}
		b := q(v.Tokens[v.BOS])
		fmt.Fprintf(&buf, `"post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":%s,"type_id":0}},{"Sequence":{"id":"A","type_id":0}}],`+
			`"pair":[{"SpecialToken":{"id":%s,"type_id":0}},{"Sequence":{"id":"A","type_id":0}},{"Sequence":{"id":"B","type_id":1}}],`+
			`"special_tokens":{%s:{"id":%s,"ids":[%d],"tokens":[%s]}}},`, b, b, b, b, v.BOS, b)
	} else {
		buf.WriteString(`"post_processor":{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":false,"use_regex":false},`)
	}
	buf.WriteString(`"decoder":{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":false,"use_regex":false},`)
	buf.WriteString(`"model":{"type":"BPE","dropout":null,"unk_token":null,"continuing_subword_prefix":"","end_of_word_suffix":"","fuse_unk":false,"byte_fallback":false,`)
	fmt.Fprintf(&buf, `"ignore_merges":%t,"vocab":{`, v.IgnoreMerges)
	first := true
	for i, t := range v.Tokens {
		if k := typ(i); k == TokenControl || k == TokenUserDefined {
			continue
		}
		if !first {
			buf.WriteByte(',')
		}
		first = false
		fmt.Fprintf(&buf, "%s:%d", q(t), i)
	}
	buf.WriteString(`},"merges":[`)
	for i, m := range v.Merges {
		l, r, ok := strings.Cut(m, " ")
		if !ok || l == "" || r == "" || strings.Contains(r, " ") {
			return nil, fmt.Errorf("tokenizer: merge %d %q is not two tokens", i, m)
		}
		if i > 0 {
			buf.WriteByte(',')
		}
		fmt.Fprintf(&buf, "[%s,%s]", q(l), q(r))
	}
	buf.WriteString("]}}\n")
	return buf.Bytes(), nil
}
