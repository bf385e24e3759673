package sacrebleu

import (
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"tally/internal/lmevalref"
	"tally/internal/pyref"
)

func TestMain(m *testing.M) {
	code := m.Run()
	lmevalref.Cleanup()
	os.Exit(code)
}

// handSegments are segments that exercise the tokenisers and the corner
// cases: punctuation and numbers as 13a splits them, entities, dashes,
// Unicode white space and letters, CJK, empty and white-space-only lines,
// repeated words, multiple references, shifts.
var handSegments = [][2]any{
	{"the cat sat on the mat", []string{"the cat is on the mat"}},
	{"The cat sat on the mat.", []string{"There is a cat on the mat."}},
	{"It costs $3.50, or 1,000 yen (approx.) - cheap!", []string{"It costs $3.50 - about 1,000 yen."}},
	{"A&amp;B &lt;tag&gt; &quot;quoted&quot; <skipped> x-\ny", []string{"A&B <tag> \"quoted\" xy"}},
	{"2-3 years, 4.5 % and 7,8", []string{"2 - 3 years , 4.5% and 7, 8"}},
	{"", []string{"a reference"}},
	{"a hypothesis", []string{""}},
	{"   \t  ", []string{"   "}},
	{"naïve café — «quoted» «é»", []string{"naive cafe - \"quoted\""}},
	{"東京は日本の首都である。", []string{"東京は日本の首都です。"}},
	{"the the the the the the the", []string{"the cat", "the the dog"}},
	{"on the mat sat the cat", []string{"the cat sat on the mat", "a cat was sitting on the mat"}},
	{"b c d e f g a", []string{"a b c d e f g"}},
	{"Ünïcode\u00a0spaces\u2003and\u3000ideographic", []string{"Ünïcode spaces and ideographic"}},
	{"trailing spaces   ", []string{"trailing spaces\n"}},
	{"x\u001cy\u001fz", []string{"x y z"}},
	{"Hello, World!!", []string{"hello , world !!"}},
	{"he said: 'it's 5:30'", []string{"He said: \"It's 5:30\""}},
}

// randomSegments are sentences drawn from a small vocabulary, the
// hypothesis a noisy, reordered copy of a reference (TER's shifts).
func randomSegments(n int) [][2]any {
	rng := rand.New(rand.NewPCG(7, 11))
	vocab := strings.Fields("the a cat dog sat ran on under mat house big small red . , ! ? 3.5 1,000 - ( ) it is was and or but")
	sent := func(k int) []string {
		w := make([]string, k)
		for i := range w {
			w[i] = vocab[rng.IntN(len(vocab))]
		}
		return w
	}
	var out [][2]any
	for range n {
		ref := sent(3 + rng.IntN(25))
		hyp := append([]string(nil), ref...)
		for range rng.IntN(6) {
			switch rng.IntN(4) {
			case 0:
				hyp[rng.IntN(len(hyp))] = vocab[rng.IntN(len(vocab))]
			case 1:
				if len(hyp) > 1 {
					i := rng.IntN(len(hyp))
					hyp = append(hyp[:i], hyp[i+1:]...)
				}
			case 2:
				i, j := rng.IntN(len(hyp)), rng.IntN(len(hyp))
				hyp[i], hyp[j] = hyp[j], hyp[i]
			case 3:
				k := rng.IntN(len(hyp))
				blk := append([]string(nil), hyp[k:min(len(hyp), k+3)]...)
				rest := append(append([]string(nil), hyp[:k]...), hyp[min(len(hyp), k+3):]...)
				at := rng.IntN(len(rest) + 1)
				hyp = append(append(append([]string(nil), rest[:at]...), blk...), rest[at:]...)
			}
		}
		refs := []string{strings.Join(ref, " ")}
		if rng.IntN(3) == 0 {
			refs = append(refs, strings.Join(sent(3+rng.IntN(10)), " "))
		}
		out = append(out, [2]any{strings.Join(hyp, " "), refs})
	}
	return out
}

func hexes(xs []float64) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = strconv.FormatFloat(x, 'x', -1, 64)
	}
	return out
}

func unhex(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return f
}

// TestAgainstSacrebleu compares every segment's BLEU, chrF and TER
// statistics and corpus scores (single and two references; the whole set,
// halves, resamples) with sacrebleu 2.6.0's own code, bit for bit, and
// exp and log with Python's math on the arguments BLEU takes.
func TestAgainstSacrebleu(t *testing.T) {
	segs := append(append([][2]any{}, handSegments...), randomSegments(300)...)
	var corpora [][]int
	one, two := []int{}, []int{}
	for i, s := range segs {
		if len(s[1].([]string)) == 1 {
			one = append(one, i)
		} else {
			two = append(two, i)
		}
	}
	corpora = append(corpora, one, two, one[:len(one)/2], one[len(one)/2:], []int{0}, []int{5}, []int{6})
	rng := rand.New(rand.NewPCG(3, 5))
	for range 20 {
		var c []int
		for range len(one) {
			c = append(c, one[rng.IntN(len(one))])
		}
		corpora = append(corpora, c)
	}
	var exps, logs []float64
	for range 2000 {
		exps = append(exps, -20+25*rng.Float64())
		logs = append(logs, 1e-6+100*rng.Float64())
	}
	var ref struct {
		Version string                `json:"version"`
		Stats   map[string][][]string `json:"stats"`
		Corpora []map[string]string   `json:"corpora"`
		Exp     []string              `json:"exp"`
		Log     []string              `json:"log"`
	}
	in := map[string]any{"sacrebleu": lmevalref.Sacrebleu(t), "segments": segs, "corpora": corpora, "exp": hexes(exps), "log": hexes(logs)}
	pyref.Run(t, "testdata/reference.py", in, &ref, "portalocker", "tabulate", "colorama", "lxml", "regex", "numpy")
	if ref.Version != "2.6.0" {
		t.Fatalf("sacrebleu %s, want 2.6.0", ref.Version)
	}
	funcs := map[string]func(string, []string) []float64{"bleu": BLEUStats, "chrf": CHRFStats, "ter": TERStats}
	stats := map[string][][]float64{}
	for name, f := range funcs {
		for i, s := range segs {
			got := f(s[0].(string), s[1].([]string))
			stats[name] = append(stats[name], got)
			want := ref.Stats[name][i]
			if len(want) != len(got) {
				t.Errorf("%s %q: %d statistics, sacrebleu %d", name, s[0], len(got), len(want))
				continue
			}
			for k := range want {
				if w := unhex(t, want[k]); got[k] != w {
					t.Errorf("%s %q %v: statistic %d = %v, sacrebleu %v", name, s[0], s[1], k, got[k], w)
				}
			}
		}
	}
	scores := map[string]func([]float64) float64{"bleu": BLEUScore, "chrf": CHRFScore, "ter": TERScore}
	for ci, c := range corpora {
		for name, score := range scores {
			var st [][]float64
			for _, i := range c {
				st = append(st, stats[name][i])
			}
			got, want := score(Sum(st)), unhex(t, ref.Corpora[ci][name])
			if got != want {
				t.Errorf("corpus %d (%d segments): %s %v, sacrebleu %v", ci, len(c), name, got, want)
			}
		}
	}
	bad := [2]int{}
	for i, x := range exps {
		if crExp(x) != unhex(t, ref.Exp[i]) {
			bad[0]++
		}
	}
	for i, x := range logs {
		if crLog(x) != unhex(t, ref.Log[i]) {
			bad[1]++
		}
	}
	// Python's math.exp and math.log are the C library's: on glibc
	// correctly rounded but for rare arguments.
	t.Logf("exp differs from this Python's on %d of %d arguments, log on %d of %d", bad[0], len(exps), bad[1], len(logs))
	if bad[0] > len(exps)/200 || bad[1] > len(logs)/200 {
		t.Errorf("exp differs on %d, log on %d of %d arguments: more than the C library's rare misroundings", bad[0], bad[1], len(exps))
	}
}

// TestScoresKnown: sacrebleu's README figures (its corpus_bleu, corpus_chrf
// and corpus_ter of one sentence), without Python.
func TestScoresKnown(t *testing.T) {
	hyp, refs := "the cat sat on the mat", []string{"the cat is on the mat"}
	for _, c := range []struct {
		name string
		got  float64
		want float64
	}{
		{"bleu", BLEUScore(BLEUStats(hyp, refs)), 37.99178428257963},
		{"chrf", CHRFScore(CHRFStats(hyp, refs)), 64.5779420625287},
		{"ter", TERScore(TERStats(hyp, refs)), 16.666666666666664},
	} {
		if c.got != c.want || math.IsNaN(c.got) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}
