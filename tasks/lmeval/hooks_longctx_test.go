package lmeval

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"tally/internal/pyref"
)

// TestSequenceRatioAgainstDifflib compares sequenceRatio with Python's
// difflib on short and long strings (long ones past 200 characters, where
// autojunk drops popular characters), and fuzzRatio's rules.
func TestSequenceRatioAgainstDifflib(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	gen := func(n int, alphabet string) string {
		a := []rune(alphabet)
		var b strings.Builder
		for range n {
			b.WriteRune(a[rng.IntN(len(a))])
		}
		return b.String()
	}
	pairs := [][2]string{{"", ""}, {"a", ""}, {"abc", "abc"}, {"return a + b", "return a+b"}, {"naïve café", "naive cafe"}}
	for range 200 {
		n := 1 + rng.IntN(40)
		if rng.IntN(4) == 0 {
			n = 200 + rng.IntN(200)
		}
		x := gen(n, "ab cdé(x)=1")
		y := []rune(x)
		for range rng.IntN(10) {
			y[rng.IntN(len(y))] = []rune("zab ")[rng.IntN(4)]
		}
		pairs = append(pairs, [2]string{x, string(y)}, [2]string{x, gen(n, "abc d")})
	}
	var want []string
	pyref.Run(t, "testdata/difflib_reference.py", pairs, &want)
	for i, p := range pairs {
		w, _ := strconv.ParseFloat(want[i], 64)
		if got := sequenceRatio([]rune(p[0]), []rune(p[1])); got != w {
			t.Errorf("ratio(%q, %q) = %v, difflib %v", p[0], p[1], got, w)
		}
	}
	for _, c := range []struct {
		a, b string
		want int
	}{{"", "", 100}, {"x", "", 0}, {"", "x", 0}, {"abcd", "abcd", 100}, {"abcd", "abce", 75}} {
		if got := fuzzRatio(c.a, c.b); got != c.want {
			t.Errorf("fuzzRatio(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
