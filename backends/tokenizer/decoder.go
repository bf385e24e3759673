package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// decoder is one step of Rust's Decoder::decode_chain. first is true when
// the token list starts at the very beginning of the decoded sequence
// (false for the later windows of a StreamDecoder); steps that treat the
// start specially (Strip after a fusing step, Metaspace) look at it.
type decoder interface {
	decodeChain(tokens []string, first bool) []string
	// fuses reports whether the output is a single token.
	fuses() bool
}

type byteLevelDec struct{}

func (byteLevelDec) fuses() bool { return true }

func (byteLevelDec) decodeChain(tokens []string, _ bool) []string {
	var buf []byte
	for _, t := range tokens {
		start := len(buf)
		ok := true
		for _, r := range t {
			b, found := charBytes[r]
			if !found {
				ok = false
				break
			}
			buf = append(buf, b)
		}
		if !ok {
			buf = append(buf[:start], t...)
		}
	}
	return []string{lossyUTF8(buf)}
}

type replaceDec struct{ r *replacer }

func (replaceDec) fuses() bool { return false }

func (d replaceDec) decodeChain(tokens []string, _ bool) []string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		out[i], _ = d.r.replace(t)
	}
	return out
}

type byteFallbackDec struct{}

func (byteFallbackDec) fuses() bool { return false }

// byteToken parses a "<0xXX>" token.
func byteToken(t string) (byte, bool) {
	if len(t) != 6 || !strings.HasPrefix(t, "<0x") || t[5] != '>' {
		return 0, false
	}
	var v byte
	for _, c := range []byte(t[3:5]) {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		v = v<<4 | d
	}
	return v, true
}

func (byteFallbackDec) decodeChain(tokens []string, _ bool) []string {
	out := make([]string, 0, len(tokens))
	var pending []byte
	flush := func() {
		if len(pending) == 0 {
			return
		}
		if utf8.Valid(pending) {
			out = append(out, string(pending))
		} else {
			for range pending {
				out = append(out, "\uFFFD")
			}
		}
		pending = pending[:0]
	}
	for _, t := range tokens {
		if b, ok := byteToken(t); ok {
			pending = append(pending, b)
			continue
		}
		flush()
		out = append(out, t)
	}
	flush()
	return out
}

type fuseDec struct{}

func (fuseDec) fuses() bool { return true }

func (fuseDec) decodeChain(tokens []string, _ bool) []string {
	return []string{strings.Join(tokens, "")}
}

type stripDec struct {
	content     rune
	start, stop int
	// onlyFirst is set when a fusing step precedes: the token is then the
	// whole text, and its start exists only in the first window.
	onlyFirst bool
}

func (stripDec) fuses() bool { return false }

func (d stripDec) decodeChain(tokens []string, first bool) []string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		chars := []rune(t)
		startCut := 0
		if first || !d.onlyFirst {
			for k := 0; k < d.start && k < len(chars); k++ {
				if chars[k] != d.content {
					break
				}
				startCut = k + 1
			}
		}
		stopCut := len(chars)
		for k := 0; k < d.stop; k++ {
			idx := len(chars) - k - 1
			if idx < startCut || chars[idx] != d.content {
				break
			}
			stopCut = idx
		}
		out[i] = string(chars[startCut:stopCut])
	}
	return out
}

type metaspaceDec struct {
	replacement rune
	prependNone bool // prepend_scheme "never"
}

func (metaspaceDec) fuses() bool { return false }

func (d metaspaceDec) decodeChain(tokens []string, first bool) []string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		var b strings.Builder
		for _, c := range t {
			if c == d.replacement {
				if i == 0 && first && !d.prependNone {
					continue
				}
				b.WriteByte(' ')
				continue
			}
			b.WriteRune(c)
		}
		out[i] = b.String()
	}
	return out
}

type seqDec []decoder

func (q seqDec) fuses() bool {
	for _, d := range q {
		if d.fuses() {
			return true
		}
	}
	return false
}

func (q seqDec) decodeChain(tokens []string, first bool) []string {
	for _, d := range q {
		tokens = d.decodeChain(tokens, first)
	}
	return tokens
}

type decoderJSON struct {
	Type          string            `json:"type"`
	Decoders      []json.RawMessage `json:"decoders"`
	Pattern       patternJSON       `json:"pattern"`
	Content       string            `json:"content"`
	Start         int               `json:"start"`
	Stop          int               `json:"stop"`
	Replacement   string            `json:"replacement"`
	PrependScheme string            `json:"prepend_scheme"`
	AddPrefix     *bool             `json:"add_prefix_space"`
}

// parseDecoder parses a decoder; fused tells whether an earlier step of an
// enclosing sequence already fused the tokens.
func parseDecoder(raw json.RawMessage, fused bool) (decoder, error) {
	if isNull(raw) {
		return nil, nil
	}
	var j decoderJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, fmt.Errorf("tokenizer.json: decoder: %w", err)
	}
	switch j.Type {
	case "ByteLevel":
		return byteLevelDec{}, nil
	case "Replace":
		r, err := newReplacer(j.Pattern, j.Content, "decoder Replace")
		if err != nil {
			return nil, err
		}
		return replaceDec{r}, nil
	case "ByteFallback":
		return byteFallbackDec{}, nil
	case "Fuse":
		return fuseDec{}, nil
	case "Strip":
		c := []rune(j.Content)
		if len(c) != 1 {
			return nil, fmt.Errorf("tokenizer.json: decoder Strip content %q not supported", j.Content)
		}
		if j.Start < 0 || j.Stop < 0 {
			return nil, fmt.Errorf("tokenizer.json: decoder Strip start/stop %d/%d not supported", j.Start, j.Stop)
		}
		return stripDec{content: c[0], start: j.Start, stop: j.Stop, onlyFirst: fused}, nil
	case "Metaspace":
		d := metaspaceDec{replacement: '\u2581'}
		if j.Replacement != "" {
			r := []rune(j.Replacement)
			if len(r) != 1 {
				return nil, fmt.Errorf("tokenizer.json: decoder Metaspace replacement %q not supported", j.Replacement)
			}
			d.replacement = r[0]
		}
		if j.PrependScheme == "never" || (j.PrependScheme == "" && j.AddPrefix != nil && !*j.AddPrefix) {
			d.prependNone = true
		}
		return d, nil
	case "Sequence":
		var q seqDec
		for _, sub := range j.Decoders {
			d, err := parseDecoder(sub, fused)
			if err != nil {
				return nil, err
			}
			if d != nil {
				q = append(q, d)
				fused = fused || d.fuses()
			}
		}
		return q, nil
	}
	return nil, fmt.Errorf("tokenizer.json: decoder type %q not supported", j.Type)
}
