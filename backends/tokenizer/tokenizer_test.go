package tokenizer

import (
	"compress/gzip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

// tinyJSON is a hand-written SentencePiece-style tokenizer.json with byte
// fallback and a few added tokens with lstrip/rstrip/single_word flags.
const tinyJSON = `{
  "version": "1.0",
  "added_tokens": [
    {"id": 0, "content": "<unk>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
    {"id": 1, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
    {"id": 2, "content": "[L]", "single_word": false, "lstrip": true, "rstrip": false, "normalized": false, "special": true},
    {"id": 3, "content": "[R]", "single_word": false, "lstrip": false, "rstrip": true, "normalized": false, "special": false},
    {"id": 4, "content": "word", "single_word": true, "lstrip": false, "rstrip": false, "normalized": false, "special": false}
  ],
  "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"}, {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
  "pre_tokenizer": null,
  "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
    "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
  "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
  "model": {"type": "BPE", "dropout": null, "unk_token": "<unk>", "continuing_subword_prefix": null, "end_of_word_suffix": null,
    "fuse_unk": true, "byte_fallback": true,
    "vocab": {"<unk>": 0, "<s>": 1, "[L]": 2, "[R]": 3, "word": 4, "<0xC3>": 5, "<0xA9>": 6, "▁": 7, "a": 8, "b": 9, "▁a": 10, "ab": 11, "▁ab": 12, "w": 13, "o": 14, "r": 15, "d": 16},
    "merges": ["▁ a", "a b", "▁a b"]}
}`

func tiny(t testing.TB) *Tokenizer {
	t.Helper()
	tok, err := FromJSON([]byte(tinyJSON))
	if err != nil {
		t.Fatalf("FromJSON: %v", err)
	}
	return tok
}

func TestTinyEncode(t *testing.T) {
	tok := tiny(t)
	tests := []struct {
		in      string
		special bool
		want    []int
	}{
		{"", false, []int{}},
		{"", true, []int{1}},
		{"ab", true, []int{1, 12}},
		{"ab", false, []int{12}},
		{"é", false, []int{7, 5, 6}},           // byte fallback
		{"zz", false, []int{7, 0}},             // fused unk
		{"a  [L]b", false, []int{10, 2, 7, 9}}, // lstrip eats the spaces
		{"[R]  b", false, []int{3, 7, 9}},      // rstrip eats the spaces
		{"word", false, []int{4}},
		{"words", false, []int{7, 13, 14, 15, 16, 0}}, // single_word: not a whole word
		{"a word b", false, []int{10, 7, 4, 7, 7, 9}},
		{"<s>ab", false, []int{1, 12}}, // each segment gets its own Prepend
	}
	for _, tc := range tests {
		got, err := tok.Encode(tc.in, tc.special)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("Encode(%q, %v) = %v, want %v", tc.in, tc.special, got, tc.want)
		}
	}
}

func TestTinyDecode(t *testing.T) {
	tok := tiny(t)
	tests := []struct {
		ids  []int
		skip bool
		want string
	}{
		{nil, true, ""},
		{[]int{1, 12}, true, "ab"},
		{[]int{1, 12}, false, "<s> ab"},
		{[]int{7, 5, 6}, false, "é"},
		{[]int{7, 5, 10}, false, "� a"},
		{[]int{7, 5, 5}, false, "��"},
		{[]int{3, 2, 12}, true, "[R] ab"},
		{[]int{999, -1, 12}, true, "ab"}, // unknown ids are ignored
	}
	for _, tc := range tests {
		got, err := tok.Decode(tc.ids, tc.skip)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("Decode(%v, %v) = %q, want %q", tc.ids, tc.skip, got, tc.want)
		}
		if s := streamAll(tok, tc.ids, tc.skip); s != tc.want {
			t.Errorf("stream(%v, %v) = %q, want %q", tc.ids, tc.skip, s, tc.want)
		}
	}
}

func TestStreamPieces(t *testing.T) {
	tok := tiny(t)
	d := tok.NewStreamDecoder(false)
	var got []string
	for _, id := range []int{7, 12, 5, 6, 10, 5} {
		s, err := d.Next(id)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, s)
	}
	got = append(got, d.Flush())
	// "▁" alone is stripped at the very start; the byte run é waits for the
	// next ordinary token; the last lone byte comes out in Flush.
	want := []string{"", " ab", "", "", "é a", "", "�"}
	if !slices.Equal(got, want) {
		t.Errorf("pieces %q, want %q", got, want)
	}
}

func TestAccessors(t *testing.T) {
	tok := tiny(t)
	if tok.VocabSize() != 17 {
		t.Errorf("VocabSize = %d", tok.VocabSize())
	}
	if id, ok := tok.TokenID("▁ab"); !ok || id != 12 {
		t.Errorf("TokenID(▁ab) = %d %v", id, ok)
	}
	if _, ok := tok.TokenID("nope"); ok {
		t.Error("TokenID(nope) found")
	}
	for id, want := range map[int]bool{0: true, 1: true, 2: true, 3: false, 4: false, 12: false, 99: false} {
		if tok.IsSpecial(id) != want {
			t.Errorf("IsSpecial(%d) = %v", id, !want)
		}
	}
}

func TestFromJSONErrors(t *testing.T) {
	tests := []struct {
		name, from, to, want string
	}{
		{"pre_tokenizer", `"pre_tokenizer": null`, `"pre_tokenizer": {"type": "Foo"}`, `pre_tokenizer type "Foo" not supported`},
		{"normalizer", `"normalizer": {"type": "Sequence"`, `"normalizer": {"type": "Bert", "x": {"type": "Sequence"}`, `normalizer type "Bert" not supported`},
		{"decoder", `"decoder": {"type": "Sequence"`, `"decoder": {"type": "CTC", "x": {"type": "Sequence"}`, `decoder type "CTC" not supported`},
		{"post", `"post_processor": {"type": "TemplateProcessing"`, `"post_processor": {"type": "Odd"`, `post_processor type "Odd" not supported`},
		{"model", `"type": "BPE"`, `"type": "Unigram"`, `model type "Unigram" not supported`},
		{"merge", `"a b",`, `"a q",`, `merge token "q" not in vocab`},
		{"version", `"version": "1.0"`, `"version": "2.0"`, `version "2.0" not supported`},
		{"syntax", `"merges": [`, `"merges": [[`, `tokenizer.json`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(tinyJSON, tc.from, tc.to, 1)
			if src == tinyJSON {
				t.Fatalf("replacement %q not applied", tc.from)
			}
			_, err := FromJSON([]byte(src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
		})
	}
}

func TestLoadForms(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.MkdirAll(plain, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(plain, "tokenizer.json"), []byte(tinyJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	gzDir := filepath.Join(dir, "gz")
	if err := os.MkdirAll(gzDir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(gzDir, "tokenizer.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	if _, err := zw.Write([]byte(tinyJSON)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path    string
		wantErr bool
	}{
		{filepath.Join(plain, "tokenizer.json"), false},
		{plain, false},
		{filepath.Join(gzDir, "tokenizer.json.gz"), false},
		{gzDir, false},
		{filepath.Join(dir, "missing"), true},
		{dir, true},
	}
	for _, tc := range tests {
		tok, err := Load(tc.path)
		if (err != nil) != tc.wantErr {
			t.Errorf("Load(%s): err %v", tc.path, err)
			continue
		}
		if err == nil {
			if ids, _ := tok.Encode("ab", false); !slices.Equal(ids, []int{12}) {
				t.Errorf("Load(%s): encode gives %v", tc.path, ids)
			}
		}
	}
}

func TestSplitBehaviors(t *testing.T) {
	tests := []struct {
		beh  int
		want []string
	}{
		{behRemoved, []string{"The", "final", "countdown"}},
		{behIsolated, []string{"The", "-", "final", "-", "-", "countdown"}},
		{behMergedWithPrevious, []string{"The-", "final-", "-", "countdown"}},
		{behMergedWithNext, []string{"The", "-final", "-", "-countdown"}},
		{behContiguous, []string{"The", "-", "final", "--", "countdown"}},
	}
	for _, tc := range tests {
		sp := &splitPre{literal: "-", behavior: tc.beh}
		var got []string
		for _, p := range sp.split([]piece{{text: "The-final--countdown", id: -1}}, nil, new(scratch)) {
			got = append(got, p.text)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("behavior %d: got %q, want %q", tc.beh, got, tc.want)
		}
	}
}

func TestLossyUTF8(t *testing.T) {
	tests := []struct {
		in   []byte
		want string
	}{
		{[]byte("abc"), "abc"},
		{[]byte{0xE4, 0xBD}, "\uFFFD"},
		{[]byte{0xE4, 0xBD, 'a'}, "\uFFFDa"},
		{[]byte{0xFF, 0xFE}, "\uFFFD\uFFFD"},
		{[]byte{0xF0, 0x9F, 0x98}, "\uFFFD"},
		{[]byte{0xED, 0xA0, 0x80}, "\uFFFD\uFFFD\uFFFD"}, // surrogate: E D then invalid
		{[]byte{0xC0, 0x80}, "\uFFFD\uFFFD"},
		{[]byte{0xE0, 0x80}, "\uFFFD\uFFFD"},
		{[]byte{0xF4, 0x90, 0x80, 0x80}, "\uFFFD\uFFFD\uFFFD\uFFFD"},
		{[]byte{'x', 0xF0, 0x9F, 0x98, 0x80}, "x😀"},
	}
	for _, tc := range tests {
		if got := lossyUTF8(tc.in); got != tc.want {
			t.Errorf("lossyUTF8(% x) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzLossyUTF8(f *testing.F) {
	for _, s := range []string{"abc", "\xe4\xbd", "\xff\xfe", "\xed\xa0\x80", "x\xf0\x9f\x98\x80"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got := lossyUTF8(b)
		if !utf8.ValidString(got) {
			t.Fatalf("invalid output %q", got)
		}
		if utf8.Valid(b) && got != string(b) {
			t.Fatalf("valid input changed: %q -> %q", b, got)
		}
		// Go's ToValidUTF8 collapses runs; the number of replacement
		// characters here is at least the number of runs.
		if strings.Count(got, "\uFFFD") < strings.Count(strings.ToValidUTF8(string(b), "\uFFFD"), "\uFFFD") {
			t.Fatalf("%q: fewer replacements than invalid runs", b)
		}
	})
}

func FuzzFromJSON(f *testing.F) {
	f.Add([]byte(tinyJSON))
	f.Add([]byte(`{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}`))
	f.Add([]byte(`{"model": {"vocab": {"a": -1}, "merges": ["a a"]}}`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, err := FromJSON(data)
		if err != nil {
			return
		}
		ids, err := tok.Encode("ab é word <s>", true)
		if err != nil {
			return
		}
		_, _ = tok.Decode(ids, false)
	})
}

// FuzzEncodeDecode checks, for each fixture tokenizer, that Encode and
// Decode never fail or panic, that the stream decoder agrees with Decode,
// and that llama3 (no normalizer, byte-level) round-trips exactly.
func FuzzEncodeDecode(f *testing.F) {
	toks := make([]*Tokenizer, len(fixtureNames))
	for i, name := range fixtureNames {
		toks[i], _ = loadFixture(f, name)
	}
	for _, s := range []string{"", " ", "Hello, world!", "<|im_start|>user\nhi<|im_end|>", "<s>[INST] x [/INST]",
		"e\u0301 \u00a0\u3000\u200b", "😀👨‍👩‍👧", "\x00\x01\x7f\u0085\u2028", "  a  \n\n\t", "12345678", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for i, tok := range toks {
			ids, err := tok.Encode(s, true)
			if err != nil {
				t.Fatalf("%s: encode %q: %v", fixtureNames[i], s, err)
			}
			for _, skip := range []bool{true, false} {
				dec, err := tok.Decode(ids, skip)
				if err != nil {
					t.Fatalf("%s: decode: %v", fixtureNames[i], err)
				}
				if st := streamAll(tok, ids, skip); st != dec {
					t.Fatalf("%s: %q: stream %q != decode %q", fixtureNames[i], s, st, dec)
				}
				if fixtureNames[i] == "llama3" && !skip && utf8.ValidString(s) && dec != s {
					t.Fatalf("llama3 round trip %q -> %q", s, dec)
				}
			}
		}
	})
}

// byteLevelReference is the ByteLevel pre-tokenizer as written before it
// mapped a whole input at once: each piece on its own.
func byteLevelReference(b byteLevelPre, in []piece) []piece {
	encode := func(s string) string {
		var sb strings.Builder
		for i := 0; i < len(s); i++ {
			sb.WriteString(byteChars[s[i]])
		}
		return sb.String()
	}
	var out []piece
	for _, p := range in {
		s := p.text
		if b.addPrefixSpace && !strings.HasPrefix(s, " ") {
			s = " " + s
		}
		if !b.useRegex {
			out = append(out, piece{text: encode(s), id: -1, atStart: p.atStart})
			continue
		}
		prev := 0
		emit := func(a, e int) {
			if a < e {
				out = append(out, piece{text: encode(s[a:e]), id: -1, atStart: p.atStart && a == 0})
			}
		}
		for _, r := range (&gptMatcher{}).findAll(s, nil) {
			emit(prev, r[0])
			emit(r[0], r[1])
			prev = r[1]
		}
		emit(prev, len(s))
	}
	return out
}

// TestByteLevelPreSplit: the ByteLevel pre-tokenizer, which maps all the
// pieces it is given into one string, gives the pieces (texts and start
// flags) of mapping each piece on its own, with and without its prefix
// space and regex.
func TestByteLevelPreSplit(t *testing.T) {
	inputs := [][]piece{
		{{text: "Hello world", id: -1, atStart: true}},
		{{text: " leading", id: -1}, {text: "two  spaces\n\nand\ttabs ", id: -1}},
		{{text: "It's 2017: déjà vu — 10,000 yards!", id: -1, atStart: true}, {text: "x", id: -1}},
		{{text: "日本語 テキスト 123", id: -1}, {text: "", id: -1}, {text: "   ", id: -1}},
		{},
	}
	for _, in := range inputs {
		for _, b := range []byteLevelPre{{}, {addPrefixSpace: true}, {useRegex: true}, {addPrefixSpace: true, useRegex: true}} {
			got := b.split(in, nil, new(scratch))
			if want := byteLevelReference(b, in); !slices.Equal(got, want) {
				t.Errorf("%+v on %+v:\n got %+v\nwant %+v", b, in, got, want)
			}
		}
	}
}

// FuzzByteLevelPre is TestByteLevelPreSplit on any text, split in two
// pieces at any byte.
func FuzzByteLevelPre(f *testing.F) {
	f.Add("Passage: Tom joined in 2017.\n\nQuestion: when?", 9)
	f.Add("  \u00e9\u0301 x\r\n", 1)
	f.Fuzz(func(t *testing.T, s string, cut int) {
		cut = min(max(cut, 0), len(s))
		in := []piece{{text: s[:cut], id: -1, atStart: true}, {text: s[cut:], id: -1}}
		for _, b := range []byteLevelPre{{}, {addPrefixSpace: true}, {useRegex: true}, {addPrefixSpace: true, useRegex: true}} {
			got := b.split(in, nil, new(scratch))
			if want := byteLevelReference(b, in); !slices.Equal(got, want) {
				t.Fatalf("%+v on %+v:\n got %+v\nwant %+v", b, in, got, want)
			}
		}
	})
}

// TestLoadBounds (issue 37, item 3): a tokenizer.json that is a FIFO, a
// link to /dev/zero, larger than MaxFileSize, or a gzip file that expands
// past it is refused, each before more than the bound is read.
func TestLoadBounds(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(syscall.Mkfifo(filepath.Join(dir, "fifo.json"), 0o644))
	must(os.Symlink("/dev/zero", filepath.Join(dir, "zero.json")))
	f, err := os.Create(filepath.Join(dir, "large.json"))
	must(err)
	must(f.Truncate(MaxFileSize + 1)) // sparse: no room taken
	must(f.Close())
	g, err := os.Create(filepath.Join(dir, "bomb.json.gz"))
	must(err)
	zw, _ := gzip.NewWriterLevel(g, gzip.BestSpeed)
	zero := make([]byte, 1<<20)
	for range MaxFileSize>>20 + 1 {
		_, err := zw.Write(zero)
		must(err)
	}
	must(zw.Close())
	must(g.Close())
	for name, want := range map[string]string{
		"fifo.json":    "named pipe (FIFO): refused",
		"zero.json":    "is a device: refused",
		"large.json":   "more than the 128 MiB tally reads",
		"bomb.json.gz": "more than 128 MiB uncompressed",
	} {
		done := make(chan error, 1)
		go func() {
			_, err := Load(filepath.Join(dir, name))
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Load(%s): %v, want %q", name, err, want)
			}
		case <-time.After(time.Minute):
			t.Fatalf("Load(%s) still running after a minute", name)
		}
	}
}

// TestCatastrophicRegex (issue 37, item 3): a tokenizer.json whose Split
// pre-tokenizer (or Replace normalizer) is a catastrophic regex hung
// every encoding, and so run and plan, for good; its first search past
// MatchTimeout fails the encoding with that reason, and every later
// encoding fails at once.
func TestCatastrophicRegex(t *testing.T) {
	for _, tc := range []struct{ name, old, new string }{
		{"Split", `"pre_tokenizer": null`, `"pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(a+)+$"}, "behavior": "Isolated", "invert": false}`},
		{"Replace", `{"type": "Replace", "pattern": {"String": " "}, "content": "▁"}`, `{"type": "Replace", "pattern": {"Regex": "(a|aa)+$"}, "content": "b"}`},
	} {
		tok, err := FromJSON([]byte(strings.Replace(tinyJSON, tc.old, tc.new, 1)))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for i := range 3 {
			done := make(chan error, 1)
			go func() {
				_, err := tok.Encode(strings.Repeat("a", 5000)+"!", false)
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "catastrophic backtracking") {
					t.Errorf("%s, encoding %d: %v, want the search bound", tc.name, i, err)
				}
			case <-time.After(time.Minute):
				t.Fatalf("%s: an encoding still running after a minute", tc.name)
			}
		}
	}
}
