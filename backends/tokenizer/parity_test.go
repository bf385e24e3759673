package tokenizer

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"tally/internal/sharedtest"
	"testing"
)

// sharedDir returns ../shared relative to the module root (the directory
// holding go.mod).
func sharedDir(t testing.TB) string {
	t.Helper()
	return sharedtest.Dir(t)
}

// parityLine is one line of parity-<name>.jsonl.gz.
type parityLine struct {
	I                  int    `json:"i"`
	Cat                string `json:"cat"`
	Text               string `json:"text"`
	IDs                []int  `json:"ids"`
	IDsSpecial         []int  `json:"ids_special"`
	Decoded            string `json:"decoded"`
	DecodedKeepSpecial string `json:"decoded_keep_special"`
}

var fixtureNames = []string{"qwen3", "llama3", "mistral7b"}

// fixtureCache memoises loaded fixtures within one test binary run.
type fixtureCache struct {
	mu    sync.Mutex
	toks  map[string]*Tokenizer
	lines map[string][]parityLine
}

var fixtures = &fixtureCache{toks: map[string]*Tokenizer{}, lines: map[string][]parityLine{}}

func loadFixture(t testing.TB, name string) (*Tokenizer, []parityLine) {
	t.Helper()
	fixtures.mu.Lock()
	defer fixtures.mu.Unlock()
	if tok, ok := fixtures.toks[name]; ok {
		return tok, fixtures.lines[name]
	}
	base := filepath.Join(sharedDir(t), "fixtures", "tokenizers")
	tok, err := Load(filepath.Join(base, name, "tokenizer.json.gz"))
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	f, err := os.Open(filepath.Join(base, "parity-"+name+".jsonl.gz"))
	if err != nil {
		t.Fatalf("open parity file: %v", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("gunzip parity file: %v", err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	var lines []parityLine
	for sc.Scan() {
		var l parityLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("parse parity line %d: %v", len(lines), err)
		}
		lines = append(lines, l)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read parity file: %v", err)
	}
	fixtures.toks[name] = tok
	fixtures.lines[name] = lines
	return tok, lines
}

func TestParity(t *testing.T) {
	for _, name := range fixtureNames {
		t.Run(name, func(t *testing.T) {
			tok, lines := loadFixture(t, name)
			if len(lines) != 10000 {
				t.Errorf("parity lines = %d, want 10000", len(lines))
			}
			var bad [5]int
			shown := 0
			report := func(kind int, l parityLine, got, want any) {
				bad[kind]++
				if shown < 8 {
					shown++
					t.Errorf("%s line %d (%s) %q: %s\n got  %v\n want %v", name, l.I, l.Cat, trunc(l.Text), []string{"ids", "ids_special", "decoded", "decoded_keep_special", "stream"}[kind], got, want)
				}
			}
			for _, l := range lines {
				ids, err := tok.Encode(l.Text, false)
				if err != nil {
					t.Fatalf("encode line %d: %v", l.I, err)
				}
				if !slices.Equal(ids, l.IDs) {
					report(0, l, ids, l.IDs)
				}
				ids2, err := tok.Encode(l.Text, true)
				if err != nil {
					t.Fatalf("encode line %d: %v", l.I, err)
				}
				if !slices.Equal(ids2, l.IDsSpecial) {
					report(1, l, ids2, l.IDsSpecial)
				}
				dec, _ := tok.Decode(l.IDs, true)
				if dec != l.Decoded {
					report(2, l, trunc(dec), trunc(l.Decoded))
				}
				keep, _ := tok.Decode(l.IDs, false)
				if keep != l.DecodedKeepSpecial {
					report(3, l, trunc(keep), trunc(l.DecodedKeepSpecial))
				}
				for _, skip := range []bool{true, false} {
					want := l.Decoded
					if !skip {
						want = l.DecodedKeepSpecial
					}
					if got := streamAll(tok, l.IDs, skip); got != want {
						report(4, l, trunc(got), trunc(want))
					}
				}
			}
			t.Logf("%s: %d lines; mismatches ids=%d ids_special=%d decoded=%d decoded_keep_special=%d stream=%d",
				name, len(lines), bad[0], bad[1], bad[2], bad[3], bad[4])
		})
	}
}

func streamAll(tok *Tokenizer, ids []int, skip bool) string {
	d := tok.NewStreamDecoder(skip)
	var out []byte
	for _, id := range ids {
		s, err := d.Next(id)
		if err != nil {
			return "error: " + err.Error()
		}
		out = append(out, s...)
	}
	return string(out) + d.Flush()
}

func trunc(s string) string {
	r := []rune(s)
	if len(r) > 120 {
		return string(r[:120]) + "…"
	}
	return s
}

func TestFixtureFacts(t *testing.T) {
	tests := []struct {
		name      string
		vocabSize int
		token     string
		id        int
		special   bool
	}{
		{"qwen3", 151669, "<|im_start|>", 151644, true},
		{"qwen3", 151669, "<think>", 151667, false},
		{"qwen3", 151669, "<|endoftext|>", 151643, true},
		{"llama3", 128256, "<|begin_of_text|>", 128000, true},
		{"llama3", 128256, "<|eot_id|>", 128009, true},
		{"mistral7b", 32000, "<s>", 1, true},
		{"mistral7b", 32000, "▁A", 330, false},
	}
	for _, tc := range tests {
		tok, _ := loadFixture(t, tc.name)
		if tok.VocabSize() != tc.vocabSize {
			t.Errorf("%s: VocabSize = %d, want %d", tc.name, tok.VocabSize(), tc.vocabSize)
		}
		id, ok := tok.TokenID(tc.token)
		if !ok || id != tc.id || tok.IsSpecial(id) != tc.special {
			t.Errorf("%s: TokenID(%q) = %d %v special %v", tc.name, tc.token, id, ok, tok.IsSpecial(id))
		}
	}
}

func TestConcurrentEncode(t *testing.T) {
	tok := tiny(t)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				ids, err := tok.Encode("ab a  [L]b word é", true)
				if err != nil || len(ids) == 0 {
					t.Errorf("encode: %v %v", ids, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
