package tokenizer

import (
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// scanner is a minimal JSON reader for the two large parts of a
// tokenizer.json (the vocab object and the merges array), several times
// faster than encoding/json on them. The input has already been validated
// by encoding/json, but every step still checks its bounds so that bad
// input gives an error, never a panic.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) errf(what string) error {
	return fmt.Errorf("bad JSON at byte %d: %s", s.i, what)
}

// peek returns the next non-space byte (0 at the end).
func (s *scanner) peek() byte {
	s.ws()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

func (s *scanner) expect(c byte) error {
	if s.peek() != c {
		return s.errf(fmt.Sprintf("want %q", c))
	}
	s.i++
	return nil
}

// str reads a JSON string.
func (s *scanner) str() (string, error) {
	if err := s.expect('"'); err != nil {
		return "", err
	}
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		if c == '"' {
			out := string(s.b[start:s.i])
			s.i++
			return out, nil
		}
		if c == '\\' {
			return s.strSlow(start)
		}
		s.i++
	}
	return "", s.errf("unterminated string")
}

func (s *scanner) strSlow(start int) (string, error) {
	out := append([]byte{}, s.b[start:s.i]...)
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return string(out), nil
		case c != '\\':
			out = append(out, c)
			s.i++
			continue
		}
		if s.i+1 >= len(s.b) {
			break
		}
		e := s.b[s.i+1]
		s.i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := s.hex4()
			if !ok {
				return "", s.errf("bad \\u escape")
			}
			if utf16.IsSurrogate(r) {
				r2 := utf8.RuneError
				if s.i+1 < len(s.b) && s.b[s.i] == '\\' && s.b[s.i+1] == 'u' {
					save := s.i
					s.i += 2
					if lo, ok := s.hex4(); ok {
						if d := utf16.DecodeRune(r, lo); d != utf8.RuneError {
							r2 = d
						} else {
							s.i = save
						}
					} else {
						s.i = save
					}
				}
				r = r2
			}
			out = utf8.AppendRune(out, r)
		default:
			return "", s.errf("bad escape")
		}
	}
	return "", s.errf("unterminated string")
}

func (s *scanner) hex4() (rune, bool) {
	if s.i+4 > len(s.b) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(s.b[s.i:s.i+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	s.i += 4
	return rune(v), true
}

// integer reads a JSON integer.
func (s *scanner) integer() (int, error) {
	s.ws()
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	v, err := strconv.Atoi(string(s.b[start:s.i]))
	if err != nil {
		return 0, s.errf("want an integer")
	}
	return v, nil
}

// parseVocab parses {"token": id, ...}.
func parseVocab(s *scanner) (map[string]int, error) {
	if err := s.expect('{'); err != nil {
		return nil, err
	}
	m := make(map[string]int, (len(s.b)-s.i)/32)
	if s.peek() == '}' {
		s.i++
		return m, nil
	}
	for {
		k, err := s.str()
		if err != nil {
			return nil, err
		}
		if err := s.expect(':'); err != nil {
			return nil, err
		}
		v, err := s.integer()
		if err != nil {
			return nil, err
		}
		m[k] = v
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return m, nil
		default:
			return nil, s.errf("want , or }")
		}
	}
}

// parseMergeList parses ["a b", ...] or [["a","b"], ...].
func parseMergeList(s *scanner) ([][2]string, error) {
	if err := s.expect('['); err != nil {
		return nil, err
	}
	out := [][2]string{}
	if s.peek() == ']' {
		s.i++
		return out, nil
	}
	for {
		switch s.peek() {
		case '"':
			l, err := s.str()
			if err != nil {
				return nil, err
			}
			if len(l) >= 8 && l[:8] == "#version" {
				break
			}
			a, rest, ok := cutSpace(l)
			if !ok {
				return nil, fmt.Errorf("bad merge %q", l)
			}
			out = append(out, [2]string{a, rest})
		case '[':
			s.i++
			a, err := s.str()
			if err != nil {
				return nil, err
			}
			if err := s.expect(','); err != nil {
				return nil, err
			}
			c, err := s.str()
			if err != nil {
				return nil, err
			}
			if err := s.expect(']'); err != nil {
				return nil, err
			}
			out = append(out, [2]string{a, c})
		default:
			return nil, s.errf("want a merge")
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return out, nil
		default:
			return nil, s.errf("want , or ]")
		}
	}
}

// cutSpace splits "a b" at its only space.
func cutSpace(l string) (string, string, bool) {
	k := -1
	for i := 0; i < len(l); i++ {
		if l[i] == ' ' {
			if k >= 0 {
				return "", "", false
			}
			k = i
		}
	}
	if k < 0 {
		return "", "", false
	}
	return l[:k], l[k+1:], true
}

// skipValue skips one JSON value and returns its bytes.
func (s *scanner) skipValue() ([]byte, error) {
	s.ws()
	start := s.i
	depth := 0
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch c {
		case '"':
			if _, err := s.skipString(); err != nil {
				return nil, err
			}
		case '{', '[':
			depth++
			s.i++
		case '}', ']':
			if depth == 0 {
				return nil, s.errf("unexpected close")
			}
			depth--
			s.i++
		case ',', ':':
			if depth == 0 {
				return nil, s.errf("unexpected separator")
			}
			s.i++
		default:
			s.i++
		}
		if depth == 0 {
			// Scalars end at a separator or a closing bracket.
			if c != '"' && c != '}' && c != ']' {
				for s.i < len(s.b) {
					d := s.b[s.i]
					if d == ',' || d == '}' || d == ']' || d == ' ' || d == '\n' || d == '\r' || d == '\t' {
						break
					}
					s.i++
				}
			}
			return s.b[start:s.i], nil
		}
	}
	return nil, s.errf("unterminated value")
}

func (s *scanner) skipString() (int, error) {
	s.i++ // opening quote
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '"':
			s.i++
			return s.i, nil
		case '\\':
			s.i += 2
		default:
			s.i++
		}
	}
	return 0, s.errf("unterminated string")
}

// objectFields calls f for each key of a JSON object, with the scanner
// positioned at the value; f must consume the value.
func (s *scanner) objectFields(f func(key string) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		k, err := s.str()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := f(k); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return s.errf("want , or }")
		}
	}
}
