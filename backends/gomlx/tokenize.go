package gomlx

import (
	"errors"

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

// UseChatTemplate makes the model an instruct model: every prompt encoded
// with special tokens (Encode(text, true), as generate does for prompts)
// is first rendered by render (a chat template) and then tokenised
// without the post-processor, since the template writes the BOS itself;
// Encode(text, false) (continuations) is unchanged. Call it before any
// generation.
func (m *Model) UseChatTemplate(render func(prompt string) (string, error)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tok == nil {
		return errors.New("gomlx: a chat template needs the model's tokenizer")
	}
	m.tok = chatTokenizer{StreamTokenizer: m.tok, render: render}
	return nil
}

// chatMode reports whether prompts go through a chat template.
func (m *Model) chatMode() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.tok.(chatTokenizer)
	return ok
}

// chatTokenizer renders prompts through a chat template before encoding.
type chatTokenizer struct {
	StreamTokenizer
	render func(string) (string, error)
}

// Encode renders text as a chat prompt when addSpecial is set, then
// encodes it without a second BOS.
func (c chatTokenizer) Encode(text string, addSpecial bool) ([]int, error) {
	if !addSpecial {
		return c.StreamTokenizer.Encode(text, false)
	}
	rendered, err := c.render(text)
	if err != nil {
		return nil, err
	}
	return c.StreamTokenizer.Encode(rendered, false)
}
