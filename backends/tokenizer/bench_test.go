package tokenizer

import (
	"path/filepath"
	"testing"
)

func BenchmarkLoad(b *testing.B) {
	for _, name := range fixtureNames {
		b.Run(name, func(b *testing.B) {
			p := filepath.Join(sharedDir(b), "fixtures", "tokenizers", name, "tokenizer.json.gz")
			for b.Loop() {
				if _, err := Load(p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEncode encodes the whole parity corpus per iteration; MB/s is
// input text throughput.
func BenchmarkEncode(b *testing.B) {
	for _, name := range fixtureNames {
		b.Run(name, func(b *testing.B) {
			tok, lines := loadFixture(b, name)
			total := 0
			for _, l := range lines {
				total += len(l.Text)
			}
			b.SetBytes(int64(total))
			for b.Loop() {
				for _, l := range lines {
					if _, err := tok.Encode(l.Text, false); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkDecode decodes the ids of the whole parity corpus per iteration;
// MB/s is output text throughput.
func BenchmarkDecode(b *testing.B) {
	for _, name := range fixtureNames {
		b.Run(name, func(b *testing.B) {
			tok, lines := loadFixture(b, name)
			total := 0
			for _, l := range lines {
				total += len(l.DecodedKeepSpecial)
			}
			b.SetBytes(int64(total))
			for b.Loop() {
				for _, l := range lines {
					if _, err := tok.Decode(l.IDs, false); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkStream decodes the parity corpus token by token.
func BenchmarkStream(b *testing.B) {
	for _, name := range fixtureNames {
		b.Run(name, func(b *testing.B) {
			tok, lines := loadFixture(b, name)
			total := 0
			for _, l := range lines {
				total += len(l.DecodedKeepSpecial)
			}
			b.SetBytes(int64(total))
			for b.Loop() {
				for _, l := range lines {
					d := tok.NewStreamDecoder(false)
					for _, id := range l.IDs {
						if _, err := d.Next(id); err != nil {
							b.Fatal(err)
						}
					}
					d.Flush()
				}
			}
		})
	}
}
