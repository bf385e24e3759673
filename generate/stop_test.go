package generate

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// naiveStops is the reference the streaming matcher must equal: for every
// setting, scan every byte position of the whole text and take the first
// position where any sequence starts, the shortest sequence on a tie.
func naiveStops(text string, settings []StopSetting) map[string]Match {
	out := map[string]Match{}
	for _, s := range settings {
	pos:
		for i := 0; i <= len(text); i++ {
			var best *Match
			for _, q := range s.Seqs {
				if q != "" && len(text)-i >= len(q) && text[i:i+len(q)] == q {
					if best == nil || len(q) < len(best.Seq) {
						best = &Match{Seq: q, Offset: i}
					}
				}
			}
			if best != nil {
				out[s.Name] = *best
				break pos
			}
		}
	}
	return out
}

func feedAll(settings []StopSetting, pieces []string) (map[string]Match, []bool) {
	m := NewMatcher(settings)
	var done []bool
	for _, p := range pieces {
		done = append(done, m.Feed(p))
	}
	return m.Matches(), done
}

func TestMatcherTable(t *testing.T) {
	dot := StopSetting{"dot", []string{"."}}
	nl := StopSetting{"nl", []string{"\n"}}
	para := StopSetting{"para", []string{"\n\n", "Question:"}}
	tests := []struct {
		name     string
		settings []StopSetting
		pieces   []string
		want     map[string]Match
		doneAt   int // index of the piece after which every setting has stopped; -1 never
	}{
		{"single token stop", []StopSetting{dot}, []string{"12", ".", "5"}, map[string]Match{"dot": {".", 2}}, 1},
		{"float cut by dot", []StopSetting{dot, nl}, []string{"12", ".5", "\n", "Passage"},
			map[string]Match{"dot": {".", 2}, "nl": {"\n", 4}}, 2},
		{"stop spans tokens", []StopSetting{para}, []string{"ab", "\n", "\nQ"}, map[string]Match{"para": {"\n\n", 2}}, 2},
		{"long stop spans three tokens", []StopSetting{para}, []string{"x Que", "sti", "on: y"}, map[string]Match{"para": {"Question:", 2}}, 2},
		{"token holds several stops", []StopSetting{dot, nl}, []string{"ab", "c.\n.d"}, map[string]Match{"dot": {".", 3}, "nl": {"\n", 4}}, 1},
		{"earliest wins inside one setting", []StopSetting{{"s", []string{"b", "a"}}}, []string{"xxab"}, map[string]Match{"s": {"a", 2}}, 0},
		{"overlapping: same start, shorter wins", []StopSetting{{"s", []string{"\n\n", "\n"}}}, []string{"a\n\nb"}, map[string]Match{"s": {"\n", 1}}, 0},
		{"overlapping sequences", []StopSetting{{"s", []string{"aab", "ab"}}}, []string{"a", "a", "b"}, map[string]Match{"s": {"aab", 0}}, 2},
		{"multi-byte split across tokens", []StopSetting{{"s", []string{"é"}}}, []string{"caf", "\xc3", "\xa9!"}, map[string]Match{"s": {"é", 3}}, 2},
		{"multi-byte stop of CJK", []StopSetting{{"zh", []string{"。"}}}, []string{"你好", "\xe3\x80", "\x82再"}, map[string]Match{"zh": {"。", 6}}, 2},
		{"no match", []StopSetting{dot}, []string{"abc", "def"}, map[string]Match{}, -1},
		{"empty setting never stops", []StopSetting{{"none", nil}, dot}, []string{"a."}, map[string]Match{"dot": {".", 1}}, -1},
		{"partial prefix then mismatch", []StopSetting{para}, []string{"Quest", "ion? Question", ":"}, map[string]Match{"para": {"Question:", 10}}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, done := feedAll(tc.settings, tc.pieces)
			if len(got) != len(tc.want) {
				t.Fatalf("matches %v, want %v", got, tc.want)
			}
			for k, w := range tc.want {
				if got[k] != w {
					t.Errorf("setting %s: got %+v, want %+v", k, got[k], w)
				}
			}
			for i, d := range done {
				if d != (tc.doneAt >= 0 && i >= tc.doneAt) {
					t.Errorf("done after piece %d = %v, want done from piece %d", i, d, tc.doneAt)
				}
			}
			text := ""
			for _, p := range tc.pieces {
				text += p
			}
			if n := naiveStops(text, tc.settings); len(n) != len(got) {
				t.Errorf("naive reference disagrees: %v", n)
			}
		})
	}
}

func TestParseStop(t *testing.T) {
	tests := []struct {
		in      string
		want    StopSetting
		wantErr bool
	}{
		{"dot=.", StopSetting{"dot", []string{"."}}, false},
		{`nl=\n`, StopSetting{"nl", []string{"\n"}}, false},
		{`both=.,\n`, StopSetting{"both", []string{".", "\n"}}, false},
		{`comma=\,`, StopSetting{"comma", []string{","}}, false},
		{`tab=\t,\\`, StopSetting{"tab", []string{"\t", `\`}}, false},
		{`u=\u3002`, StopSetting{"u", []string{"。"}}, false},
		{`q=\n\nQuestion:`, StopSetting{"q", []string{"\n\nQuestion:"}}, false},
		{`none=`, StopSetting{"none", nil}, false},
		{`bad=\x`, StopSetting{}, true},
		{`bad=\u12`, StopSetting{}, true},
		{`bad=\u12zz`, StopSetting{}, true},
		{`bad=\`, StopSetting{}, true},
		{`=.`, StopSetting{}, true},
		{`noequals`, StopSetting{}, true},
		// Finding 2 of issue 11: a spec yielding an empty sequence.
		{`comma=,`, StopSetting{}, true},
		{`a=.,`, StopSetting{}, true},
		{`a=,.`, StopSetting{}, true},
		{`a=.,,\n`, StopSetting{}, true},
		{`a=,,`, StopSetting{}, true},
		{`a=\,,\,`, StopSetting{"a", []string{",", ","}}, false},
	}
	for _, tc := range tests {
		got, err := ParseStop(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("ParseStop(%q) error = %v, wantErr %v", tc.in, err, tc.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		if got.Name != tc.want.Name || len(got.Seqs) != len(tc.want.Seqs) {
			t.Errorf("ParseStop(%q) = %#v, want %#v", tc.in, got, tc.want)
			continue
		}
		for i := range got.Seqs {
			if got.Seqs[i] != tc.want.Seqs[i] {
				t.Errorf("ParseStop(%q) = %#v, want %#v", tc.in, got, tc.want)
			}
		}
		// Escape round-trips.
		back, err := ParseStop(got.String())
		if err != nil || back.Key() != got.Key() {
			t.Errorf("round trip of %q via %q: %v %v", tc.in, got.String(), back, err)
		}
	}
}

// splitRandomly cuts text into pieces at random byte positions (so
// multi-byte characters are split too).
func splitRandomly(r *rand.Rand, text string) []string {
	var pieces []string
	for len(text) > 0 {
		n := 1 + r.IntN(min(len(text), 6))
		pieces = append(pieces, text[:n])
		text = text[n:]
	}
	return pieces
}

func FuzzMatcher(f *testing.F) {
	f.Add("12.5\n\nPassage: x", ".", "\n", "\n\nPassage", uint64(1))
	f.Add("aaab", "aab", "ab", "b", uint64(2))
	f.Add("日本語。テスト", "。", "語。", "ト", uint64(3))
	f.Add("", ".", "", "x", uint64(4))
	f.Fuzz(func(t *testing.T, text, s1, s2, s3 string, seed uint64) {
		settings := []StopSetting{{"a", []string{s1}}, {"b", []string{s2, s3}}, {"c", []string{s1, s2, s3}}}
		r := rand.New(rand.NewPCG(seed, 7))
		pieces := splitRandomly(r, text)
		got, _ := feedAll(settings, pieces)
		want := naiveStops(text, settings)
		if len(got) != len(want) {
			t.Fatalf("text %q pieces %q: got %v want %v", text, pieces, got, want)
		}
		for k, w := range want {
			if got[k] != w {
				t.Fatalf("text %q pieces %q setting %s: got %+v want %+v", text, pieces, k, got[k], w)
			}
			if m, ok := FindStop(text, settingByName(settings, k).Seqs); !ok || m != w {
				t.Fatalf("FindStop disagrees: %+v vs %+v", m, w)
			}
		}
		_ = utf8.ValidString(text)
	})
}

func settingByName(ss []StopSetting, name string) StopSetting {
	for _, s := range ss {
		if s.Name == name {
			return s
		}
	}
	return StopSetting{}
}

func FuzzParseStop(f *testing.F) {
	for _, s := range []string{`a=.`, `b=\n,\t`, `c=\u00e9`, `d=\`, `e=\q`, `f=,,`, `g=,`, `h=`, `i=\,`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, arg string) {
		s, err := ParseStop(arg)
		if err != nil {
			return
		}
		if rest := arg[strings.Index(arg, "=")+1:]; rest != "" && len(s.Seqs) == 0 {
			t.Fatalf("%q parsed to no stop; only NAME= means no stop", arg)
		}
		for _, q := range s.Seqs {
			if q == "" {
				t.Fatalf("%q parsed to an empty sequence: %#v", arg, s)
			}
		}
		back, err := ParseStop(s.String())
		if err != nil {
			t.Fatalf("re-parse of %q (from %q): %v", s.String(), arg, err)
		}
		if back.Key() != s.Key() || back.Name != s.Name {
			t.Fatalf("round trip %q -> %#v -> %q -> %#v", arg, s, s.String(), back)
		}
	})
}
