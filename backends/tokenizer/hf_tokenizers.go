//go:build hftokenizers

package tokenizer

import (
	"fmt"

	hft "github.com/daulet/tokenizers"

	"tally/internal/fsguard"
)

// HFTokenizer wraps the Rust `tokenizers` library through
// github.com/daulet/tokenizers (cgo; needs its native libtokenizers.a at
// link time). It is built only with the hftokenizers build tag and serves
// as a reference implementation for the pure-Go Tokenizer.
type HFTokenizer struct {
	t *hft.Tokenizer
}

// LoadHF loads a tokenizer with the Rust library; it accepts the same path
// forms as Load.
func LoadHF(path string) (*HFTokenizer, error) {
	data, path, err := readTokenizerFile(fsguard.Folder{}, path)
	if err != nil {
		return nil, err
	}
	t, err := hft.FromBytes(data)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer %s with the Rust library: %w", path, err)
	}
	return &HFTokenizer{t: t}, nil
}

// Encode tokenises text; addSpecial applies the post-processor.
func (h *HFTokenizer) Encode(text string, addSpecial bool) ([]int, error) {
	ids, _ := h.t.Encode(text, addSpecial)
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	return out, nil
}

// Decode turns ids back into text, dropping special tokens when skipSpecial
// is set. Negative ids are an error.
func (h *HFTokenizer) Decode(ids []int, skipSpecial bool) (string, error) {
	u := make([]uint32, len(ids))
	for i, id := range ids {
		if id < 0 || id > int(^uint32(0)) {
			return "", fmt.Errorf("decode: token id %d out of range", id)
		}
		u[i] = uint32(id)
	}
	return h.t.Decode(u, skipSpecial), nil
}

// Close frees the native tokenizer.
func (h *HFTokenizer) Close() error { return h.t.Close() }
