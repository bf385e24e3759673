package countingstars

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"tally/internal/sharedtest"
	"testing"
)

// sharedData returns ../shared/data/<rel> next to the module root; a
// missing file fails the test.
func sharedData(t testing.TB, rel string) string {
	t.Helper()
	return sharedtest.Path(t, "data", rel)
}

func contextDir(t testing.TB) string {
	return sharedData(t, filepath.Join("counting_stars", "context_data"))
}

// TestReproducesOriginal compares with the original generator: the
// gen_test_data.ipynb cell at 32e16f2c, run unchanged on these files
// except that the essays were globbed in sorted order (the original's
// glob order is the file system's), M = 32, n = 32. The digests are
// SHA-256 over each line's "question" followed by a NUL byte.
func TestReproducesOriginal(t *testing.T) {
	tests := []struct {
		lang, testType string
		first          int
		sha            string
	}{
		{"EN", Acquisition, 3200, "3123be7697462b9009c333acc30a664a5195552c662360bc42cfdcacaa29832d"},
		{"EN", Reasoning, 3200, "7ff062dbc653fafb73fc3ca67ca52b6649ef941c45c8b5b3a749ca58a815d30c"},
		{"ZH", Acquisition, 2800, "11d5699a8ab59a72986497be17ae0b8422852ab43b872a9312663c68b573fbb6"},
		{"ZH", Reasoning, 2800, "b72c61b89446870a10c28dcdbaade5366c489ecf104f084be3a0fc016c01ae4d"},
	}
	for _, tc := range tests {
		t.Run(tc.lang+"/"+tc.testType, func(t *testing.T) {
			got, err := Generate(Options{Dir: contextDir(t), Lang: tc.lang, TestType: tc.testType, M: 32})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 32 {
				t.Fatalf("%d samples, want 32", len(got))
			}
			h := sha256.New()
			for _, s := range got {
				h.Write([]byte(s.Prompt))
				h.Write([]byte{0})
			}
			if sum := hex.EncodeToString(h.Sum(nil)); sum != tc.sha {
				t.Fatalf("prompts digest %s, want %s", sum, tc.sha)
			}
			s := got[0]
			if s.ID != tc.lang+"-"+tc.testType+"-32-"+itoa(tc.first) || s.Task != TaskName {
				t.Fatalf("id %q task %q", s.ID, s.Task)
			}
			rule := map[string]string{Acquisition: "paper", Reasoning: "current"}[tc.testType] // the default rules
			want := map[string]any{"lang": tc.lang, "test_type": tc.testType, "m": 32, "context_size": tc.first, "scoring_rule": rule}
			if !reflect.DeepEqual(s.Metadata, want) {
				t.Fatalf("metadata %v, want %v", s.Metadata, want)
			}
			var refs []int
			if err := json.Unmarshal(s.References, &refs); err != nil || len(refs) != 32 || refs[0] != 15 || refs[31] != 29 {
				t.Fatalf("references %s: %v", s.References, err)
			}
			for _, s := range got {
				if n := strings.Count(s.Prompt, "★") - strings.Count(Question(tc.lang, tc.testType, ""), "★"); n != 32*map[string]int{Acquisition: 1, Reasoning: 2}[tc.testType] {
					t.Fatalf("%s: %d stars in the haystack", s.ID, n)
				}
			}
		})
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestV1ResultFile regenerates the prompts of a real result file (ZH, M =
// 32, 16 lengths, first paper version) and requires them byte for byte.
func TestV1ResultFile(t *testing.T) {
	f, err := os.Open(sharedData(t, "counting_stars/results/stone_gpt4_32_16.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type rec struct {
		Question  string `json:"question"`
		Retrieval string `json:"retrieval_question"`
		Reference []int  `json:"reference_counting_results"`
		SkySize   int    `json:"sky_size"`
	}
	var recs []rec
	var sizes []int
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var r rec
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
		sizes = append(sizes, r.SkySize)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	def, err := DefaultLengths("ZH", "v1", 16)
	if err != nil || !reflect.DeepEqual(def, sizes) {
		t.Fatalf("v1 grid %v, file %v (%v)", def, sizes, err)
	}
	got, err := Generate(Options{Dir: contextDir(t), Lang: "ZH", TestType: Acquisition, M: 32, Lengths: sizes, Version: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(recs) || len(recs) != 16 {
		t.Fatalf("%d samples for %d lines", len(got), len(recs))
	}
	for i, r := range recs {
		if r.Retrieval != Question("ZH", Acquisition, "v1") {
			t.Fatalf("line %d: retrieval question differs", i+1)
		}
		var refs []int
		if err := json.Unmarshal(got[i].References, &refs); err != nil || !reflect.DeepEqual(refs, r.Reference) {
			t.Fatalf("line %d: references %s, want %v", i+1, got[i].References, r.Reference)
		}
		if got[i].Prompt != r.Question {
			p, q := []rune(got[i].Prompt), []rune(r.Question)
			j := 0
			for j < len(p) && j < len(q) && p[j] == q[j] {
				j++
			}
			t.Fatalf("line %d: prompt differs at character %d of %d/%d", i+1, j, len(p), len(q))
		}
	}
}

// TestGoldenSmall checks the insertion arithmetic by hand on tiny
// haystacks.
func TestGoldenSmall(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "PaulGrahamEssays"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "PaulGrahamEssays", "b.txt"), []byte("e f\r\ng h"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "PaulGrahamEssays", "a.txt"), []byte("a b c d "), 0o644))
	must(os.WriteFile(filepath.Join(dir, "The_Story_of_the_Stone.txt"), []byte("\ufeff甲乙, ab\r\n  丙丁------------戊\\\r\n己庚辛壬癸\u3000\n"), 0o644))
	// v1 takes sorted(a_stars['64']).
	v1 := "[117, 15"
	for i := 200; i < 262; i++ {
		v1 += ", " + itoa(i)
	}
	must(os.WriteFile(filepath.Join(dir, "a_stars.txt"), []byte("{'4': [15, 117, 1, 2], '2': [15, 117], '64': "+v1+"]}"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "r_stars.txt"), []byte("{'2': [16, 116]}"), 0o644))

	en, err := HaystackEN(dir, 0)
	must(err)
	if en != "a b c d e f g h" {
		t.Fatalf("EN haystack %q", en)
	}
	zh, err := HaystackZH(dir)
	must(err)
	if zh != "\ufeff甲乙丙丁戊\\己庚辛壬癸" {
		t.Fatalf("ZH haystack %q", zh)
	}
	s0, s1 := "\nThe little penguin counted 15 ★\n", "\nThe little penguin counted 117 ★\n"
	z0, z1 := "\n小企鹅数了15颗★\n", "\n小企鹅数了117颗★\n"
	tests := []struct {
		name string
		opts Options
		want string
	}{
		// step 4: the 4th space becomes star 0; star 1 goes to piece
		// 6*1+4+4 = 14 of 12, past the end.
		{"EN", Options{Lang: "EN", TestType: Acquisition, M: 2, Lengths: []int{8}}, "a b c d" + s0 + "e f g h" + s1},
		{"EN cut", Options{Lang: "EN", TestType: Acquisition, M: 2, Lengths: []int{4}}, "a b" + s0 + "c d" + s1},
		// step 5: star 0 at character 5; star 1 at 5+5+11 = 21, the end.
		{"ZH", Options{Lang: "ZH", TestType: Acquisition, M: 2, Lengths: []int{10}}, "\ufeff甲乙丙丁" + z0 + "戊\\己庚辛" + z1},
		// v1: star 1 at character 5+5 of the string built so far, inside
		// star 0 (the bug b57b84b still had).
		{"ZH v1", Options{Lang: "ZH", TestType: Acquisition, M: 2, Lengths: []int{10}, Version: "v1"}, "\ufeff甲乙丙丁\n小企鹅数" + z1 + "了15颗★\n戊\\己庚辛"},
		{"ZH reasoning", Options{Lang: "ZH", TestType: Reasoning, M: 1, Lengths: []int{2}}, "\ufeff甲\n小企鹅数了16颗★，但发现数错了，于是又数了一遍，这次数对了，是15颗★\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Dir = dir
			got, err := Generate(tc.opts)
			must(err)
			want := tc.want + Question(tc.opts.Lang, tc.opts.TestType, tc.opts.Version)
			if got[0].Prompt != want {
				t.Fatalf("prompt\n got %q\nwant %q", got[0].Prompt, want)
			}
		})
	}
	// M = 3 is not a key: the first 3 of the '4' list.
	got, err := Generate(Options{Dir: dir, Lang: "EN", TestType: Acquisition, M: 3, Lengths: []int{6}})
	must(err)
	if string(got[0].References) != "[15, 117, 1]" {
		t.Fatalf("references %s", got[0].References)
	}
}

func TestSeed(t *testing.T) {
	dir := contextDir(t)
	gen := func(lang string, seed uint64) string {
		got, err := Generate(Options{Dir: dir, Lang: lang, TestType: Acquisition, M: 32, Lengths: []int{4000}, Seed: seed, Count: func(s string) int { return len(s) }})
		if err != nil {
			t.Fatal(err)
		}
		if got[0].Metadata["prompt_tokens"] != len(got[0].Prompt) {
			t.Fatal("prompt_tokens not recorded")
		}
		return got[0].Prompt
	}
	if gen("EN", 7) != gen("EN", 7) {
		t.Fatal("same seed, different prompts")
	}
	if gen("EN", 7) == gen("EN", 8) || gen("EN", 0) == gen("EN", 7) {
		t.Fatal("different seeds, same EN prompt")
	}
	if gen("ZH", 7) != gen("ZH", 8) {
		t.Fatal("the seed changed the ZH haystack")
	}
}

func TestBadOptions(t *testing.T) {
	dir := contextDir(t)
	tests := []struct {
		name   string
		opts   Options
		errSub string
	}{
		{"language", Options{Dir: dir, Lang: "FR", TestType: Acquisition, M: 32}, "unknown language"},
		{"test type", Options{Dir: dir, Lang: "EN", TestType: "Counting", M: 32}, "unknown test type"},
		{"m zero", Options{Dir: dir, Lang: "EN", TestType: Acquisition}, "must be positive"},
		{"m too large", Options{Dir: dir, Lang: "EN", TestType: Acquisition, M: 2048, Lengths: []int{4096}}, "no list with 2048 stars"},
		{"short length", Options{Dir: dir, Lang: "ZH", TestType: Acquisition, M: 32, Lengths: []int{31}}, "shorter than M"},
		{"missing dir", Options{Dir: filepath.Join(dir, "nope"), Lang: "ZH", TestType: Acquisition, M: 32}, "no such file"},
		{"v1 EN", Options{Dir: dir, Lang: "EN", TestType: Acquisition, M: 32, Version: "v1"}, "version v1"},
		{"version", Options{Dir: dir, Lang: "EN", TestType: Acquisition, M: 32, Version: "v9"}, "unknown version"},
		{"scoring rule", Options{Dir: dir, Lang: "EN", TestType: Acquisition, M: 32, ScoringRule: "v1"}, "unknown scoring rule"},
		{"paper-era reasoning", Options{Dir: dir, Lang: "EN", TestType: Reasoning, M: 32, ScoringRule: "paper"}, "no Reasoning"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Generate(tc.opts); err == nil || !strings.Contains(err.Error(), tc.errSub) {
				t.Fatalf("error %v, want containing %q", err, tc.errSub)
			}
		})
	}
}

// TestScoringRule: the task's scoring rule is recorded in every sample's
// metadata, where the metric reads it.
func TestScoringRule(t *testing.T) {
	for _, rule := range []string{"paper", "current"} {
		got, err := Generate(Options{Dir: contextDir(t), Lang: "ZH", TestType: Acquisition, M: 4, Lengths: []int{100}, ScoringRule: rule})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Metadata["scoring_rule"] != rule {
			t.Errorf("rule %s: metadata %v", rule, got[0].Metadata)
		}
	}
}

func TestParseStars(t *testing.T) {
	tests := []struct {
		name, in string
		want     map[string][]int
		errSub   string
	}{
		{"python", "{'32': [15, 117], '64': [1]}\n", map[string][]int{"32": {15, 117}, "64": {1}}, ""},
		{"json and trailing commas", `{"1": [3,], 2: [],}`, map[string][]int{"1": {3}, "2": {}}, ""},
		{"empty", "{}", map[string][]int{}, ""},
		{"not a dict", "[1]", nil, "offset 0"},
		{"unterminated list", "{'1': [1, 2", nil, "unterminated list"},
		{"bad number", "{'1': [1, x]}", nil, `offset 10: want an integer, got 'x'`},
		{"duplicate", "{'1': [], '1': []}", nil, "duplicate key"},
		{"trailing", "{} x", nil, "after the dict"},
		{"overflow", "{'1': [99999999999999999999]}", nil, "out of range"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseStars([]byte(tc.in))
			if tc.errSub != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errSub) {
					t.Fatalf("error %v, want containing %q", err, tc.errSub)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	// The real files: six lists, each a prefix of the next; r = a ± 1.
	a, err := LoadStars(filepath.Join(contextDir(t), "a_stars.txt"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := LoadStars(filepath.Join(contextDir(t), "r_stars.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"32", "64", "128", "256", "512", "1024"} {
		if len(a[k]) != len(r[k]) || itoa(len(a[k])) != k {
			t.Fatalf("key %s: %d and %d counts", k, len(a[k]), len(r[k]))
		}
		for i := range a[k] {
			if d := a[k][i] - r[k][i]; d != 1 && d != -1 {
				t.Fatalf("key %s item %d: a %d r %d", k, i, a[k][i], r[k][i])
			}
		}
	}
}

func FuzzParseStars(f *testing.F) {
	f.Add("{'32': [15, 117, 42], '64': [1, 2]}")
	f.Add(`{"1": [3,], 2: [],}`)
	f.Add("{'1': [1, 2")
	f.Add("{-5: [+3, -0]}")
	f.Fuzz(func(t *testing.T, in string) {
		m, err := ParseStars([]byte(in))
		if err != nil {
			return
		}
		// Whatever parses must parse the same again once written back as a
		// Python literal (keys with a quote, backslash or newline cannot be).
		var b strings.Builder
		b.WriteString("{")
		for k, v := range m {
			if strings.ContainsAny(k, "'\\\n") {
				return
			}
			b.WriteString("'" + k + "': [")
			for i, x := range v {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString(itoa(x))
			}
			b.WriteString("], ")
		}
		b.WriteString("}")
		back, err := ParseStars([]byte(b.String()))
		if err != nil {
			t.Fatalf("re-parse %q: %v", b.String(), err)
		}
		if !reflect.DeepEqual(back, m) {
			t.Fatalf("round trip changed %v to %v", m, back)
		}
	})
}

// BenchmarkGenerate measures generation of the default 32-length grid with
// M = 32 (MB/s of prompt text; samples/s reported).
func BenchmarkGenerate(b *testing.B) {
	for _, lang := range []string{"EN", "ZH"} {
		b.Run(lang, func(b *testing.B) {
			dir := contextDir(b)
			n, bytes := 0, 0
			for b.Loop() {
				got, err := Generate(Options{Dir: dir, Lang: lang, TestType: Reasoning, M: 32})
				if err != nil {
					b.Fatal(err)
				}
				n += len(got)
				for _, s := range got {
					bytes += len(s.Prompt)
				}
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "samples/s")
			b.ReportMetric(float64(bytes)/1e6/b.Elapsed().Seconds(), "prompt-MB/s")
		})
	}
}
