package tokenizer

import (
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// readFixtureJSON decodes the tokenizer.json of a fixture tokenizer into v.
func readFixtureJSON(t *testing.T, name string, v any) {
	t.Helper()
	f, err := os.Open(filepath.Join(sharedDir(t), "fixtures", "tokenizers", name, "tokenizer.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.NewDecoder(zr).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// checkParityLines compares tok with Hugging Face's ids and texts on the
// parity corpus of fixture name (with and without special tokens).
func checkParityLines(t *testing.T, tok *Tokenizer, name string) {
	t.Helper()
	_, lines := loadFixture(t, name)
	bad := 0
	for _, l := range lines {
		ids, _ := tok.Encode(l.Text, false)
		ids2, _ := tok.Encode(l.Text, true)
		dec, _ := tok.Decode(l.IDs, true)
		keep, _ := tok.Decode(l.IDs, false)
		if !slices.Equal(ids, l.IDs) || !slices.Equal(ids2, l.IDsSpecial) || dec != l.Decoded || keep != l.DecodedKeepSpecial {
			if bad++; bad <= 5 {
				t.Errorf("line %d (%s) %q:\n ids %v\n want %v\n special %v\n want %v\n decoded %q\n want %q",
					l.I, l.Cat, trunc(l.Text), ids, l.IDs, ids2, l.IDsSpecial, trunc(dec), trunc(l.Decoded))
			}
		}
	}
	t.Logf("%s: %d of %d lines differ", name, bad, len(lines))
}

// TestByteLevelVocabParity rebuilds the Llama 3 and Qwen3 tokenizers from
// the parts a GGUF file keeps of them (tokens by id, their types, merges,
// the pre-tokenizer's name, BOS), as llama.cpp's and Ollama's converters
// write them, and checks the result against Hugging Face's ids and texts
// on the parity corpus.
func TestByteLevelVocabParity(t *testing.T) {
	for _, tc := range []struct{ name, pre string }{{"llama3", "llama-bpe"}, {"qwen3", "qwen2"}} {
		t.Run(tc.name, func(t *testing.T) {
			var tj struct {
				AddedTokens []struct {
					ID      int    `json:"id"`
					Content string `json:"content"`
					Special bool   `json:"special"`
				} `json:"added_tokens"`
				PostProcessor struct {
					Type          string `json:"type"`
					SpecialTokens map[string]struct {
						IDs []int `json:"ids"`
					} `json:"special_tokens"`
				} `json:"post_processor"`
				Model struct {
					Vocab  map[string]int  `json:"vocab"`
					Merges json.RawMessage `json:"merges"`
				} `json:"model"`
			}
			readFixtureJSON(t, tc.name, &tj)
			n := len(tj.Model.Vocab)
			for _, a := range tj.AddedTokens {
				n = max(n, a.ID+1)
			}
			v := ByteLevelVocab{Tokens: make([]string, n), Types: make([]int, n), BOS: -1}
			for s, id := range tj.Model.Vocab {
				v.Tokens[id], v.Types[id] = s, 1
			}
			for _, a := range tj.AddedTokens {
				v.Tokens[a.ID], v.Types[a.ID] = a.Content, TokenUserDefined
				if a.Special {
					v.Types[a.ID] = TokenControl
				}
			}
			var pairs [][2]string
			if json.Unmarshal(tj.Model.Merges, &pairs) != nil {
				pairs = nil // a partial decode of "left right" strings
				var strs []string
				if err := json.Unmarshal(tj.Model.Merges, &strs); err != nil {
					t.Fatal(err)
				}
				v.Merges = strs
			}
			for _, p := range pairs {
				v.Merges = append(v.Merges, p[0]+" "+p[1])
			}
			for _, st := range tj.PostProcessor.SpecialTokens {
				v.BOS, v.AddBOS = st.IDs[0], true
			}
			var ok bool
			if v.Pattern, ok = PatternFor(tc.pre); !ok {
				t.Fatal(tc.pre)
			}
			v.NFC, v.IgnoreMerges = tc.pre == "qwen2", tc.pre == "llama-bpe"
			js, err := v.JSON()
			if err != nil {
				t.Fatal(err)
			}
			tok, err := FromJSON(js)
			if err != nil {
				t.Fatal(err)
			}
			checkParityLines(t, tok, tc.name)
		})
	}
}

// TestSentencePieceVocabParity rebuilds the Mistral 7B tokenizer from what
// a GGUF file keeps of a SentencePiece model (pieces, scores, types) and
// checks it against Hugging Face on the parity corpus. The fixture has no
// SentencePiece scores, so each piece's score here is minus the rank of
// the first of its merges in the fixture's tokenizer.json (the order
// SentencePiece learned them in, which its scores encode): the merges
// derived from them must be the fixture's, in its order.
func TestSentencePieceVocabParity(t *testing.T) {
	var tj struct {
		AddedTokens []struct {
			ID      int    `json:"id"`
			Content string `json:"content"`
		} `json:"added_tokens"`
		Model struct {
			Vocab  map[string]int `json:"vocab"`
			Merges []string       `json:"merges"`
		} `json:"model"`
	}
	readFixtureJSON(t, "mistral7b", &tj)
	n := len(tj.Model.Vocab)
	v := SentencePieceVocab{Tokens: make([]string, n), Scores: make([]float32, n), Types: make([]int, n), AddSpacePrefix: true, BOS: 1, AddBOS: true}
	for s, id := range tj.Model.Vocab {
		v.Tokens[id], v.Types[id], v.Scores[id] = s, 1, -1e6
	}
	for _, a := range tj.AddedTokens {
		v.Types[a.ID] = TokenControl
	}
	v.Types[0] = TokenUnknown
	for i := range v.Tokens {
		if len(v.Tokens[i]) == 6 && v.Tokens[i][:3] == "<0x" {
			v.Types[i] = 6 // byte
		}
	}
	for rank := len(tj.Model.Merges) - 1; rank >= 0; rank-- {
		l, r, _ := strings.Cut(tj.Model.Merges[rank], " ")
		v.Scores[tj.Model.Vocab[l+r]] = float32(-rank)
	}
	got := v.Merges()
	if len(got) != len(tj.Model.Merges) {
		t.Errorf("%d merges derived, the fixture has %d", len(got), len(tj.Model.Merges))
	}
	for i := range min(len(got), len(tj.Model.Merges)) {
		if m := got[i][0] + " " + got[i][1]; m != tj.Model.Merges[i] {
			t.Fatalf("merge %d is %q, the fixture's %q", i, m, tj.Model.Merges[i])
		}
	}
	js, err := v.JSON()
	if err != nil {
		t.Fatal(err)
	}
	tok, err := FromJSON(js)
	if err != nil {
		t.Fatal(err)
	}
	checkParityLines(t, tok, "mistral7b")
}
