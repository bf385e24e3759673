package tokenizer

import "strings"

// StreamDecoder turns a stream of generated ids into text pieces. The
// concatenation of every piece returned by Next, followed by Flush, equals
// Decode of all the ids. It is not safe for concurrent use.
type StreamDecoder struct {
	t    *Tokenizer
	skip bool
	// win holds the tokens since the last safe boundary; first is true
	// while that boundary is the start of the sequence.
	win   []string
	first bool
}

// NewStreamDecoder starts a stream decoder; skipSpecial drops special
// tokens as Decode does.
func (t *Tokenizer) NewStreamDecoder(skipSpecial bool) *StreamDecoder {
	return &StreamDecoder{t: t, skip: skipSpecial, first: true}
}

// Next adds one id and returns the text that became complete with it:
// empty while a multi-byte character or a run of byte-fallback tokens is
// still open.
func (d *StreamDecoder) Next(id int) (string, error) {
	tok, ok := d.t.visible(id, d.skip)
	if !ok {
		return "", nil
	}
	d.win = append(d.win, tok)
	if _, isByte := byteToken(tok); isByte && d.t.model.byteFallback {
		return "", nil // a byte-fallback run is only decoded as a whole
	}
	text := d.t.decodeTokens(d.win, d.first)
	if strings.HasSuffix(text, "\uFFFD") {
		return "", nil
	}
	// The window ends on a complete character: a safe boundary, after
	// which decoding restarts from an empty window.
	d.win = d.win[:0]
	d.first = false
	return text, nil
}

// Flush returns whatever text is still held back (an incomplete character
// decodes to U+FFFD, as in Decode) and resets the window.
func (d *StreamDecoder) Flush() string {
	if len(d.win) == 0 {
		return ""
	}
	text := d.t.decodeTokens(d.win, d.first)
	d.win = d.win[:0]
	d.first = false
	return text
}
