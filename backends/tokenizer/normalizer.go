package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// normalizer transforms the text of one segment (between added tokens).
type normalizer interface {
	normalize(s string) (string, error)
}

type normForm struct{ f norm.Form }

func (n normForm) normalize(s string) (string, error) { return n.f.String(s), nil }

type prependNorm struct{ prefix string }

func (n prependNorm) normalize(s string) (string, error) {
	if s == "" {
		return s, nil
	}
	return n.prefix + s, nil
}

type replaceNorm struct{ r *replacer }

func (n replaceNorm) normalize(s string) (string, error) { return n.r.replace(s) }

type lowercaseNorm struct{}

func (lowercaseNorm) normalize(s string) (string, error) {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if r == 0x130 { // Rust's char::to_lowercase gives "i\u0307"
			b.WriteString("i\u0307")
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String(), nil
}

type stripNorm struct{ left, right bool }

func (n stripNorm) normalize(s string) (string, error) {
	if n.left {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
	}
	if n.right {
		s = strings.TrimRightFunc(s, unicode.IsSpace)
	}
	return s, nil
}

type stripAccentsNorm struct{}

func (stripAccentsNorm) normalize(s string) (string, error) {
	return strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Mn, r) {
			return -1
		}
		return r
	}, s), nil
}

type seqNorm []normalizer

func (q seqNorm) normalize(s string) (string, error) {
	var err error
	for _, n := range q {
		if s, err = n.normalize(s); err != nil {
			return "", err
		}
	}
	return s, nil
}

// replacer replaces every non-overlapping occurrence of a literal string or
// a regular expression.
type replacer struct {
	literal string
	re      *boundedRegexp
	content string
}

// patternJSON is the {"String": ...} / {"Regex": ...} pattern object.
type patternJSON struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

func newReplacer(p patternJSON, content, where string) (*replacer, error) {
	switch {
	case p.String != nil:
		return &replacer{literal: *p.String, content: content}, nil
	case p.Regex != nil:
		re, err := compileRegexp(*p.Regex, where)
		if err != nil {
			return nil, err
		}
		return &replacer{re: re, content: content}, nil
	}
	return nil, fmt.Errorf("tokenizer.json: %s pattern missing", where)
}

func (r *replacer) replace(s string) (string, error) {
	if r.re == nil {
		if r.literal == "" {
			return s, nil
		}
		return strings.ReplaceAll(s, r.literal, r.content), nil
	}
	ms, err := r.re.matches(s)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	prev := 0
	for _, m := range ms {
		b.WriteString(s[prev:m[0]])
		b.WriteString(r.content)
		prev = m[1]
	}
	b.WriteString(s[prev:])
	return b.String(), nil
}

type normalizerJSON struct {
	Type        string            `json:"type"`
	Normalizers []json.RawMessage `json:"normalizers"`
	Prepend     string            `json:"prepend"`
	Pattern     patternJSON       `json:"pattern"`
	Content     string            `json:"content"`
	Left        bool              `json:"left"`
	Right       bool              `json:"right"`
}

func parseNormalizer(raw json.RawMessage) (normalizer, error) {
	if isNull(raw) {
		return nil, nil
	}
	var j normalizerJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, fmt.Errorf("tokenizer.json: normalizer: %w", err)
	}
	switch j.Type {
	case "NFC":
		return normForm{norm.NFC}, nil
	case "NFD":
		return normForm{norm.NFD}, nil
	case "NFKC":
		return normForm{norm.NFKC}, nil
	case "NFKD":
		return normForm{norm.NFKD}, nil
	case "Prepend":
		return prependNorm{j.Prepend}, nil
	case "Replace":
		r, err := newReplacer(j.Pattern, j.Content, "normalizer Replace")
		if err != nil {
			return nil, err
		}
		return replaceNorm{r}, nil
	case "Lowercase":
		return lowercaseNorm{}, nil
	case "Strip":
		return stripNorm{j.Left, j.Right}, nil
	case "StripAccents":
		return stripAccentsNorm{}, nil
	case "Sequence":
		var q seqNorm
		for _, sub := range j.Normalizers {
			n, err := parseNormalizer(sub)
			if err != nil {
				return nil, err
			}
			if n != nil {
				q = append(q, n)
			}
		}
		return q, nil
	}
	return nil, fmt.Errorf("tokenizer.json: normalizer type %q not supported", j.Type)
}

func isNull(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "" || s == "null"
}
