package gomlx

import (
	"fmt"

	"tally/backends/tokenizer"
)

// hfTokenizer adapts tally's tokenizer.json reader to StreamTokenizer.
type hfTokenizer struct{ *tokenizer.Tokenizer }

// NewStream implements StreamTokenizer.
func (t hfTokenizer) NewStream(skipSpecial bool) TextStream {
	return hfStream{t.NewStreamDecoder(skipSpecial)}
}

type hfStream struct{ d *tokenizer.StreamDecoder }

// Next returns the text completed by id (a decode error yields no text).
func (s hfStream) Next(id int) string {
	text, err := s.d.Next(id)
	if err != nil {
		return ""
	}
	return text
}

// Flush returns the text still held back.
func (s hfStream) Flush() string { return s.d.Flush() }

// WrapTokenizer makes a StreamTokenizer of a tokenizer.Tokenizer.
func WrapTokenizer(t *tokenizer.Tokenizer) StreamTokenizer { return hfTokenizer{t} }

// loadTokenizer reads a tokenizer.json.
func loadTokenizer(path string) (StreamTokenizer, error) {
	t, err := tokenizer.Load(path)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer %s: %w", path, err)
	}
	return hfTokenizer{t}, nil
}
