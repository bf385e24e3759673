package pyre

import (
	"strconv"
	"strings"
)

// tmplPiece is one piece of a replacement template: literal text, or a
// group's text (group >= 0).
type tmplPiece struct {
	lit   string
	group int
}

// parseTemplate reads a re.sub replacement as re/_parser.py's
// parse_template does.
func (re *Regexp) parseTemplate(repl string) ([]tmplPiece, error) {
	src := []rune(repl)
	var out []tmplPiece
	var lit strings.Builder
	bad := func(msg string) error { return &Error{Pattern: repl, Msg: msg, Pos: -1} }
	addGroup := func(idx int) error {
		if idx > re.groups {
			return bad("invalid group reference " + strconv.Itoa(idx))
		}
		if lit.Len() > 0 {
			out = append(out, tmplPiece{lit: lit.String(), group: -1})
			lit.Reset()
		}
		out = append(out, tmplPiece{group: idx})
		return nil
	}
	isDigit := func(i int) bool { return i < len(src) && src[i] >= '0' && src[i] <= '9' }
	isOct := func(i int) bool { return i < len(src) && src[i] >= '0' && src[i] <= '7' }
	for i := 0; i < len(src); {
		c := src[i]
		if c != '\\' {
			lit.WriteRune(c)
			i++
			continue
		}
		if i+1 >= len(src) {
			return nil, bad("bad escape (end of pattern)")
		}
		c = src[i+1]
		i += 2
		switch {
		case c == 'g':
			if i >= len(src) || src[i] != '<' {
				return nil, bad("missing <")
			}
			end := i + 1
			for end < len(src) && src[end] != '>' {
				end++
			}
			if end >= len(src) {
				return nil, bad("missing >, unterminated name")
			}
			name := string(src[i+1 : end])
			if name == "" {
				return nil, bad("missing group name")
			}
			i = end + 1
			var idx int
			if isIdentifier(name) {
				g, ok := re.names[name]
				if !ok {
					return nil, bad("unknown group name '" + name + "'")
				}
				idx = g
			} else {
				v, err := strconv.Atoi(name)
				if err != nil || v < 0 || strings.ContainsAny(name, "+- ") {
					return nil, bad("bad character in group name '" + name + "'")
				}
				idx = v
			}
			if err := addGroup(idx); err != nil {
				return nil, err
			}
		case c == '0':
			n := 0
			for ; n < 2 && isOct(i); n++ {
				i++
			}
			v, _ := strconv.ParseInt(string(src[i-n-1:i]), 8, 32)
			lit.WriteRune(rune(v & 0xff))
		case c >= '1' && c <= '9':
			num := string(c)
			if isDigit(i) {
				num += string(src[i])
				i++
				if c <= '7' && num[1] <= '7' && isOct(i) {
					num += string(src[i])
					i++
					v, _ := strconv.ParseInt(num, 8, 32)
					if v > 0o377 {
						return nil, bad("octal escape value \\" + num + " outside of range 0-0o377")
					}
					lit.WriteRune(rune(v))
					continue
				}
			}
			v, _ := strconv.Atoi(num)
			if err := addGroup(v); err != nil {
				return nil, err
			}
		default:
			if r, ok := simpleEscapes[c]; ok {
				lit.WriteRune(r)
			} else if isASCIILetter(c) {
				return nil, bad("bad escape \\" + string(c))
			} else {
				lit.WriteRune('\\')
				lit.WriteRune(c)
			}
		}
	}
	if lit.Len() > 0 {
		out = append(out, tmplPiece{lit: lit.String(), group: -1})
	}
	return out, nil
}
