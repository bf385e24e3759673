package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Vocabularies as a GGUF file's metadata keeps them (llama.cpp's and
// Ollama's converters write tokenizer.ggml.tokens, token_type, merges or
// scores), rendered as the tokenizer.json Hugging Face would have for the
// same model, so that one reader serves both.

// The token types of a GGUF vocabulary (llama.cpp's llama_token_type)
// that the vocabularies treat apart: control tokens are special added
// tokens, user-defined ones added tokens matched before the model, the
// unknown token the model's unk_token.
const (
	TokenUnknown     = 2
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
	added := func(k int) bool { return k == TokenControl || k == TokenUserDefined }
	var buf bytes.Buffer
	buf.WriteString(`{"version":"1.0","truncation":null,"padding":null,"added_tokens":[`)
	writeAddedTokens(&buf, v.Tokens, v.Types, added)
	buf.WriteString(`],`)
	if v.NFC {
		buf.WriteString(`"normalizer":{"type":"NFC"},`)
	} else {
		buf.WriteString(`"normalizer":null,`)
	}
	fmt.Fprintf(&buf, `"pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":%s},"behavior":"Isolated","invert":false},{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":false,"use_regex":false}]},`, quote(v.Pattern))
	if v.AddBOS && v.BOS >= 0 {
		if err := writeBOSTemplate(&buf, v.Tokens, v.BOS); err != nil {
			return nil, err
		}
	} else {
		buf.WriteString(`"post_processor":{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":false,"use_regex":false},`)
	}
	buf.WriteString(`"decoder":{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":false,"use_regex":false},`)
	buf.WriteString(`"model":{"type":"BPE","dropout":null,"unk_token":null,"continuing_subword_prefix":"","end_of_word_suffix":"","fuse_unk":false,"byte_fallback":false,`)
	fmt.Fprintf(&buf, `"ignore_merges":%t,"vocab":{`, v.IgnoreMerges)
	first := true
	for i, t := range v.Tokens {
		if added(typeOf(v.Types, i)) {
			continue
		}
		if !first {
			buf.WriteByte(',')
		}
		first = false
		fmt.Fprintf(&buf, "%s:%d", quote(t), i)
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
		fmt.Fprintf(&buf, "[%s,%s]", quote(l), quote(r))
	}
	buf.WriteString("]}}\n")
	return buf.Bytes(), nil
}

// SentencePieceVocab is a SentencePiece BPE vocabulary as a GGUF file's
// metadata holds it (tokenizer.ggml.model "llama": tokens by id with their
// scores and types, no merges; Llama 2, Mistral).
type SentencePieceVocab struct {
	// Tokens are the pieces by id ("▁" for a space, "<0x0A>" for a byte).
	Tokens []string
	// Scores are the pieces' scores: a merge that makes a higher-scored
	// piece comes first.
	Scores []float32
	// Types are the tokens' types (TokenUnknown, TokenControl,
	// TokenUserDefined, others normal); missing entries are normal.
	Types []int
	// AddSpacePrefix prepends "▁" to the text (tokenizer.ggml.add_space_prefix,
	// true unless a file says otherwise).
	AddSpacePrefix bool
	// BOS is the id prepended to every encoding when AddBOS is set.
	BOS    int
	AddBOS bool
}

// Merges derives the merge rules from the pieces and their scores as
// Hugging Face's converter does for a SentencePiece BPE model
// (tokenizers' SentencePieceExtractor.extract): every split of a piece
// into two pieces of the vocabulary is a merge ranked by the piece's score,
// highest first; splits of one piece by the ids of their left then right
// parts. Control, unknown and user-defined tokens take part in none.
func (v SentencePieceVocab) Merges() [][2]string {
	normal := func(i int) bool {
		if i >= len(v.Types) {
			return true
		}
		switch v.Types[i] {
		case TokenUnknown, TokenControl, TokenUserDefined:
			return false
		}
		return true
	}
	index := make(map[string]int, len(v.Tokens))
	for i, t := range v.Tokens {
		if normal(i) {
			index[t] = i
		}
	}
	type merge struct {
		l, r  int
		score float32
	}
	var all []merge
	for i, t := range v.Tokens {
		if !normal(i) {
			continue
		}
		var local []merge
		for k := range t {
			if k == 0 {
				continue
			}
			l, okl := index[t[:k]]
			r, okr := index[t[k:]]
			if okl && okr {
				local = append(local, merge{l: l, r: r, score: v.Scores[i]})
			}
		}
		sort.Slice(local, func(a, b int) bool {
			if local[a].l != local[b].l {
				return local[a].l < local[b].l
			}
			return local[a].r < local[b].r
		})
		all = append(all, local...)
	}
	sort.SliceStable(all, func(a, b int) bool { return all[a].score > all[b].score })
	out := make([][2]string, len(all))
	for i, m := range all {
		out[i] = [2]string{v.Tokens[m.l], v.Tokens[m.r]}
	}
	return out
}

// JSON renders the vocabulary as the tokenizer.json Hugging Face's
// converter makes of such a model: BPE with byte fallback over every
// piece, the derived merges, "▁" for spaces (and before the text when
// AddSpacePrefix), control and unknown tokens as special added tokens, and
// a template that prepends BOS when AddBOS is set.
func (v SentencePieceVocab) JSON() ([]byte, error) {
	if len(v.Scores) != len(v.Tokens) {
		return nil, fmt.Errorf("tokenizer: %d scores for %d pieces", len(v.Scores), len(v.Tokens))
	}
	unk := ""
	for i, t := range v.Tokens {
		if typeOf(v.Types, i) == TokenUnknown {
			unk = t
			break
		}
	}
	var buf bytes.Buffer
	buf.WriteString(`{"version":"1.0","truncation":null,"padding":null,"added_tokens":[`)
	writeAddedTokens(&buf, v.Tokens, v.Types, func(k int) bool { return k == TokenControl || k == TokenUnknown || k == TokenUserDefined })
	buf.WriteString(`],"normalizer":{"type":"Sequence","normalizers":[`)
	if v.AddSpacePrefix {
		buf.WriteString(`{"type":"Prepend","prepend":"\u2581"},`)
	}
	buf.WriteString(`{"type":"Replace","pattern":{"String":" "},"content":"\u2581"}]},"pre_tokenizer":null,`)
	if v.AddBOS && v.BOS >= 0 {
		if err := writeBOSTemplate(&buf, v.Tokens, v.BOS); err != nil {
			return nil, err
		}
	} else {
		buf.WriteString(`"post_processor":null,`)
	}
	buf.WriteString(`"decoder":{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"\u2581"},"content":" "},{"type":"ByteFallback"},{"type":"Fuse"}`)
	if v.AddSpacePrefix {
		buf.WriteString(`,{"type":"Strip","content":" ","start":1,"stop":0}`)
	}
	unkJSON := "null"
	if unk != "" {
		unkJSON = quote(unk)
	}
	fmt.Fprintf(&buf, `]},"model":{"type":"BPE","dropout":null,"unk_token":%s,"continuing_subword_prefix":null,"end_of_word_suffix":null,"fuse_unk":true,"byte_fallback":true,"ignore_merges":false,"vocab":{`, unkJSON)
	for i, t := range v.Tokens {
		if i > 0 {
			buf.WriteByte(',')
		}
		fmt.Fprintf(&buf, "%s:%d", quote(t), i)
	}
	buf.WriteString(`},"merges":[`)
	for i, m := range v.Merges() {
		if i > 0 {
			buf.WriteByte(',')
		}
		fmt.Fprintf(&buf, "[%s,%s]", quote(m[0]), quote(m[1]))
	}
	buf.WriteString("]}}\n")
	return buf.Bytes(), nil
}

// quote is s as a JSON string.
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// typeOf is the type of token i (0, normal, past the end of types).
func typeOf(types []int, i int) int {
	if i < len(types) {
		return types[i]
	}
	return 0
}

// writeAddedTokens writes the added_tokens entries of the tokens whose
// type added selects, special unless user-defined.
func writeAddedTokens(buf *bytes.Buffer, tokens []string, types []int, added func(int) bool) {
	n := 0
	for i, t := range tokens {
		if k := typeOf(types, i); added(k) {
			if n > 0 {
				buf.WriteByte(',')
			}
			n++
			fmt.Fprintf(buf, `{"id":%d,"content":%s,"single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":%t}`,
				i, quote(t), k != TokenUserDefined)
		}
	}
}

// writeBOSTemplate writes a post_processor that prepends token bos.
func writeBOSTemplate(buf *bytes.Buffer, tokens []string, bos int) error {
	if bos >= len(tokens) {
		return fmt.Errorf("tokenizer: BOS id %d outside the %d tokens", bos, len(tokens))
	}
	b := quote(tokens[bos])
	fmt.Fprintf(buf, `"post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":%s,"type_id":0}},{"Sequence":{"id":"A","type_id":0}}],`+
		`"pair":[{"SpecialToken":{"id":%s,"type_id":0}},{"Sequence":{"id":"A","type_id":0}},{"SpecialToken":{"id":%s,"type_id":1}},{"Sequence":{"id":"B","type_id":1}}],`+
		`"special_tokens":{%s:{"id":%s,"ids":[%d],"tokens":[%s]}}},`, b, b, b, b, b, bos, b)
	return nil
}
