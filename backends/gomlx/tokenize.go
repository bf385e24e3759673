package gomlx

import (
	"tally/backends"
)

// TextStream turns generated ids into text incrementally: Next returns the
// text that became final with id (possibly empty while a multi-byte
// character is incomplete); Flush returns what is left at the end.
type TextStream interface {
	Next(id int) string
	Flush() string
}

// StreamTokenizer is a local tokenizer that can also decode incrementally.
// The model depends only on this interface, so it works without a
// tokenizer (the fixture models take ids).
type StreamTokenizer interface {
	backends.Tokenizer
	// NewStream starts an incremental decoder.
	NewStream(skipSpecial bool) TextStream
}

// idStream is the TextStream used when a model has no tokenizer: it
// produces no text.
type idStream struct{}

// Next produces no text.
func (idStream) Next(int) string { return "" }

// Flush produces no text.
func (idStream) Flush() string { return "" }
