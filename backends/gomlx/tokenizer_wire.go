package gomlx

import (
	"crypto/sha256"
	"fmt"

	"tally/backends/tokenizer"

	"tally/internal/fsguard"
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

// textDigest digests what Encode(text, addSpecial) depends on: the
// tokenizer's file and the text (ok is false for a tokenizer read from
// no file).
func (t hfTokenizer) textDigest(text string, addSpecial bool) (d [32]byte, ok bool) {
	if t.Digest() == "" {
		return d, false
	}
	h := sha256.New()
	fmt.Fprintf(h, "tokenizer.json sha256:%s\x00special=%t\x00", t.Digest(), addSpecial)
	h.Write([]byte(text))
	h.Sum(d[:0])
	return d, true
}

// PromptDigest implements backends.PromptDigester: prompts are encoded
// with the post-processor's special tokens.
func (t hfTokenizer) PromptDigest(prompt string) ([32]byte, bool, error) {
	d, ok := t.textDigest(prompt, true)
	return d, ok, nil
}

// WrapTokenizer makes a StreamTokenizer of a tokenizer.Tokenizer.
func WrapTokenizer(t *tokenizer.Tokenizer) StreamTokenizer { return hfTokenizer{t} }

// loadTokenizer reads a model folder's tokenizer.json as folder allows.
func loadTokenizer(folder fsguard.Folder, path string) (StreamTokenizer, error) {
	t, err := tokenizer.LoadIn(folder, path)
	if err != nil {
		return nil, err // it names the file
	}
	return hfTokenizer{t}, nil
}
