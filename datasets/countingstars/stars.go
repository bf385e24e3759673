package countingstars

import (
	"fmt"
	"os"
	"strconv"
)

// LoadStars reads a_stars.txt or r_stars.txt: one Python dict literal
// mapping a count of stars ("32", "64", ...) to the list of star counts.
func LoadStars(path string) (map[string][]int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read stars: %w", err)
	}
	m, err := ParseStars(data)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return m, nil
}

// ParseStars parses the dict literal of a_stars.txt / r_stars.txt (the
// original reads it with Python's eval): {'32': [15, 117, ...], ...}. Keys
// are quoted with ' or " (no escapes) or bare integers; values are lists
// of integers; whitespace and trailing commas are allowed as in Python.
// Errors name the byte offset.
func ParseStars(data []byte) (map[string][]int, error) {
	p := parser{s: data}
	p.ws()
	if err := p.expect('{'); err != nil {
		return nil, err
	}
	out := map[string][]int{}
	for {
		p.ws()
		if p.peek() == '}' {
			p.i++
			break
		}
		key, err := p.key()
		if err != nil {
			return nil, err
		}
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("offset %d: duplicate key %q", p.i, key)
		}
		p.ws()
		if err := p.expect(':'); err != nil {
			return nil, err
		}
		p.ws()
		list, err := p.list()
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", key, err)
		}
		out[key] = list
		p.ws()
		if p.peek() == ',' {
			p.i++
			continue
		}
		p.ws()
		if err := p.expect('}'); err != nil {
			return nil, err
		}
		break
	}
	p.ws()
	if p.i != len(p.s) {
		return nil, fmt.Errorf("offset %d: unexpected %q after the dict", p.i, p.s[p.i])
	}
	return out, nil
}

type parser struct {
	s []byte
	i int
}

func (p *parser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *parser) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r', '\f', '\v':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) expect(c byte) error {
	if p.i >= len(p.s) {
		return fmt.Errorf("offset %d: want %q, got end of input", p.i, c)
	}
	if p.s[p.i] != c {
		return fmt.Errorf("offset %d: want %q, got %q", p.i, c, p.s[p.i])
	}
	p.i++
	return nil
}

func (p *parser) key() (string, error) {
	q := p.peek()
	if q != '\'' && q != '"' {
		n, err := p.int()
		if err != nil {
			return "", fmt.Errorf("%w (want a key)", err)
		}
		return strconv.Itoa(n), nil
	}
	start := p.i + 1
	for j := start; j < len(p.s); j++ {
		switch p.s[j] {
		case q:
			p.i = j + 1
			return string(p.s[start:j]), nil
		case '\\', '\n':
			return "", fmt.Errorf("offset %d: unsupported %q in a key", j, p.s[j])
		}
	}
	return "", fmt.Errorf("offset %d: unterminated key", p.i)
}

func (p *parser) list() ([]int, error) {
	if err := p.expect('['); err != nil {
		return nil, err
	}
	out := []int{}
	for {
		p.ws()
		if p.peek() == ']' {
			p.i++
			return out, nil
		}
		n, err := p.int()
		if err != nil {
			return nil, err
		}
		out = append(out, n)
		p.ws()
		switch p.peek() {
		case ',':
			p.i++
		case ']':
			p.i++
			return out, nil
		default:
			if p.i >= len(p.s) {
				return nil, fmt.Errorf("offset %d: unterminated list", p.i)
			}
			return nil, fmt.Errorf("offset %d: want ',' or ']', got %q", p.i, p.s[p.i])
		}
	}
}

func (p *parser) int() (int, error) {
	start := p.i
	if c := p.peek(); c == '-' || c == '+' {
		p.i++
	}
	digits := p.i
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
	if p.i == digits {
		if p.i >= len(p.s) {
			return 0, fmt.Errorf("offset %d: want an integer, got end of input", p.i)
		}
		return 0, fmt.Errorf("offset %d: want an integer, got %q", p.i, p.s[p.i])
	}
	n, err := strconv.Atoi(string(p.s[start:p.i]))
	if err != nil {
		return 0, fmt.Errorf("offset %d: %w", start, err)
	}
	return n, nil
}
