package pyre

import (
	"strings"
	"testing"
)

// BenchmarkLMEvalFilters runs lm-eval's most used filter patterns over a
// 4,000-character model output (a chain of thought with numbers and a
// final answer), as a filter pipeline does once per sample and setting.
func BenchmarkLMEvalFilters(b *testing.B) {
	text := strings.Repeat("Step: 12 + 30 = 42, so we carry $1,250.50 forward.\n", 75) + "So the answer is 42.\n#### 42"
	for _, p := range []string{`#### (\-?[0-9\.\,]+)`, `(-?[$0-9.,]{2,})|(-?[0-9]+)`, `(?<=the answer is )(.*)(?=.)`, `^(.*?)\s*$`} {
		re := MustCompile(p)
		// The baseline tries every position, as before the first-character
		// set existed.
		base := *re
		base.first = firstSet{any: true, nullable: true}
		for _, v := range []struct {
			name string
			re   *Regexp
		}{{"skip", re}, {"every-position", &base}} {
			b.Run(v.name+"/"+p, func(b *testing.B) {
				b.SetBytes(int64(len(text)))
				for b.Loop() {
					if _, err := v.re.FindAll(text); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
