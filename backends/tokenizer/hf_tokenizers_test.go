//go:build hftokenizers

package tokenizer

import (
	"path/filepath"
	"slices"
	"testing"
)

// TestHFAgreement checks that the Rust library (through cgo) and the pure-Go
// reader agree on the parity corpus.
func TestHFAgreement(t *testing.T) {
	for _, name := range fixtureNames {
		t.Run(name, func(t *testing.T) {
			tok, lines := loadFixture(t, name)
			hf, err := LoadHF(filepath.Join(sharedDir(t), "fixtures", "tokenizers", name, "tokenizer.json.gz"))
			if err != nil {
				t.Fatal(err)
			}
			defer hf.Close()
			bad := 0
			for _, l := range lines {
				for _, special := range []bool{false, true} {
					a, _ := tok.Encode(l.Text, special)
					b, _ := hf.Encode(l.Text, special)
					if !slices.Equal(a, b) {
						bad++
						if bad < 5 {
							t.Errorf("line %d %q special=%v: go %v, rust %v", l.I, trunc(l.Text), special, a, b)
						}
					}
				}
				for _, skip := range []bool{false, true} {
					a, _ := tok.Decode(l.IDs, skip)
					b, _ := hf.Decode(l.IDs, skip)
					if a != b {
						bad++
						if bad < 5 {
							t.Errorf("line %d decode skip=%v: go %q, rust %q", l.I, skip, trunc(a), trunc(b))
						}
					}
				}
			}
			t.Logf("%s: %d lines, %d disagreements", name, len(lines), bad)
		})
	}
}
