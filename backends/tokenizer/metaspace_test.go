package tokenizer

import (
	"slices"
	"testing"

	"tally/backends"
)

// The pure-Go tokenizer satisfies the backends contract.
var _ backends.Tokenizer = (*Tokenizer)(nil)

// metaJSON is a Llama-2-era layout: Metaspace pre-tokenizer and decoder.
const metaJSON = `{
  "version": "1.0",
  "added_tokens": [{"id": 0, "content": "<s>", "special": true, "normalized": false}],
  "normalizer": null,
  "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": true},
  "post_processor": {"type": "Sequence", "processors": [{"type": "ByteLevel"}, {"type": "TemplateProcessing",
     "single": [{"SpecialToken": {"id": "<s>"}}, {"Sequence": {"id": "A"}}], "special_tokens": {"<s>": {"id": "<s>", "ids": [0]}}}]},
  "decoder": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first"},
  "model": {"type": "BPE", "vocab": {"<s>": 0, "▁": 1, "h": 2, "i": 3, "▁h": 4, "▁hi": 5, "hi": 6},
    "merges": [["▁", "h"], ["▁h", "i"], ["h", "i"]]}
}`

func TestMetaspace(t *testing.T) {
	tok, err := FromJSON([]byte(metaJSON))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		in      string
		special bool
		want    []int
		dec     string
	}{
		{"hi hi", false, []int{5, 5}, "hi hi"},
		{"hi  hi", true, []int{0, 5, 1, 5}, "hi  hi"},
		{"<s>hi", false, []int{0, 6}, "hi"}, // no prepend after an added token (scheme "first")
		{" hi", false, []int{5}, "hi"},
	}
	for _, tc := range tests {
		got, err := tok.Encode(tc.in, tc.special)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("Encode(%q) = %v, want %v", tc.in, got, tc.want)
		}
		dec, _ := tok.Decode(got, true)
		if dec != tc.dec {
			t.Errorf("Decode(%v) = %q, want %q", got, dec, tc.dec)
		}
		if s := streamAll(tok, got, true); s != dec {
			t.Errorf("stream(%v) = %q, want %q", got, s, dec)
		}
	}
}

// FuzzStreamRandomIDs feeds arbitrary id sequences (not only ones Encode
// produces) to every tokenizer and checks the stream decoder against Decode.
func FuzzStreamRandomIDs(f *testing.F) {
	toks := []*Tokenizer{tiny(f)}
	meta, err := FromJSON([]byte(metaJSON))
	if err != nil {
		f.Fatal(err)
	}
	toks = append(toks, meta)
	for _, name := range fixtureNames {
		tok, _ := loadFixture(f, name)
		toks = append(toks, tok)
	}
	f.Add([]byte{0, 1, 0, 7, 0, 5, 0, 6})
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	f.Add([]byte{0xff, 0xfe, 0x01, 0x00, 0x00, 0x03})
	f.Fuzz(func(t *testing.T, data []byte) {
		for ti, tok := range toks {
			ids := make([]int, 0, len(data)/2)
			for i := 0; i+1 < len(data); i += 2 {
				v := int(data[i])<<8 | int(data[i+1])
				if tok.VocabSize() < 1000 {
					v %= tok.VocabSize() + 1
				} else if v&1 == 1 {
					v = v % 600 // favour byte tokens and short pieces
				}
				ids = append(ids, v)
			}
			for _, skip := range []bool{false, true} {
				want, _ := tok.Decode(ids, skip)
				if got := streamAll(tok, ids, skip); got != want {
					t.Fatalf("tokenizer %d ids %v skip %v: stream %q, decode %q", ti, ids, skip, got, want)
				}
			}
		}
	})
}
