package tokenizer

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// demoCorpus generates about n bytes of varied text deterministically.
func demoCorpus(n int) string {
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"the", "model", "token", "evaluates", "long", "context", "benchmark", "tally",
		"question", "answer", "Paris", "2026", "x", "naïve", "café", "東京", "данные", "it's", "we'll", "\n", "\t"}
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(words[rng.IntN(len(words))])
		switch rng.IntN(6) {
		case 0:
			b.WriteString(". ")
		case 1:
			b.WriteString(", ")
		default:
			b.WriteByte(' ')
		}
	}
	return b.String()
}

func TestTrainByteLevel(t *testing.T) {
	corpus := demoCorpus(50_000)
	tests := []struct {
		name      string
		vocabSize int
		wantErr   bool
	}{
		{"too small", 100, true},
		{"bytes only", 257, false},
		{"demo", 512, false},
		{"large", 1024, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data, err := TrainByteLevel(corpus, tc.vocabSize)
			if tc.wantErr {
				if err == nil {
					t.Fatal("want an error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			again, err := TrainByteLevel(corpus, tc.vocabSize)
			if err != nil || !bytes.Equal(data, again) {
				t.Fatalf("training is not deterministic (err %v)", err)
			}
			tok, err := FromJSON(data)
			if err != nil {
				t.Fatalf("FromJSON of trained tokenizer: %v", err)
			}
			if tok.VocabSize() > tc.vocabSize {
				t.Errorf("VocabSize = %d, want <= %d", tok.VocabSize(), tc.vocabSize)
			}
			eot, ok := tok.TokenID("<|endoftext|>")
			if !ok || eot != tok.VocabSize()-1 || !tok.IsSpecial(eot) {
				t.Errorf("<|endoftext|> id %d ok %v special %v; vocab %d", eot, ok, tok.IsSpecial(eot), tok.VocabSize())
			}
			for _, s := range []string{corpus[:2000], "Hello, world! 12345 ÿ 😀 e\u0301", "", "<|endoftext|>tail"} {
				ids, err := tok.Encode(s, true)
				if err != nil {
					t.Fatal(err)
				}
				got, err := tok.Decode(ids, false)
				if err != nil {
					t.Fatal(err)
				}
				want := strings.ReplaceAll(s, "e\u0301", "é") // NFC
				if got != want {
					t.Errorf("round trip %q -> %q", trunc(want), trunc(got))
				}
			}
			if tc.vocabSize == 512 {
				ids, _ := tok.Encode(corpus, false)
				t.Logf("vocab %d: %d bytes -> %d tokens (%.2f bytes/token)", tok.VocabSize(), len(corpus), len(ids), float64(len(corpus))/float64(len(ids)))
				if len(ids) >= len(corpus)/2 {
					t.Errorf("trained merges compress too little: %d tokens for %d bytes", len(ids), len(corpus))
				}
			}
		})
	}
}

func BenchmarkTrainByteLevel(b *testing.B) {
	corpus := demoCorpus(50_000)
	for b.Loop() {
		if _, err := TrainByteLevel(corpus, 512); err != nil {
			b.Fatal(err)
		}
	}
}

func ExampleTrainByteLevel() {
	data, _ := TrainByteLevel(strings.Repeat("low lower lowest ", 50), 300)
	tok, _ := FromJSON(data)
	ids, _ := tok.Encode(" lowest", false)
	text, _ := tok.Decode(ids, false)
	fmt.Println(len(ids), text)
	// Output: 1  lowest
}

// TestTrainByteLevelSplit checks that the split pattern decides how digits
// are grouped, and that the trained tokenizer round-trips.
func TestTrainByteLevelSplit(t *testing.T) {
	corpus := strings.Repeat("Tom ran 27.99 miles in 1995. ", 40)
	for _, tc := range []struct {
		split Split
		want  []string
	}{
		{SplitQwen2, []string{" ", "2", "7", ".", "9", "9"}},
		{SplitGPT2, []string{" 27", ".", "99"}},
		{SplitLlama3, []string{" ", "27", ".", "99"}},
	} {
		data, err := TrainByteLevelSplit(corpus, 400, tc.split)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := FromJSON(data)
		if err != nil {
			t.Fatal(err)
		}
		ids, err := tok.Encode(" 27.99", false)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, id := range ids {
			s, _ := tok.Decode([]int{id}, false)
			got = append(got, s)
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%s: %q, want %q", tc.split, got, tc.want)
		}
		text, _ := tok.Decode(ids, false)
		if text != " 27.99" {
			t.Errorf("%s: round trip %q", tc.split, text)
		}
	}
	if _, err := TrainByteLevelSplit(corpus, 400, "nope"); err == nil {
		t.Error("unknown split accepted")
	}
}
