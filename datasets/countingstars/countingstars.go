// Package countingstars generates the Counting-Stars long-context test
// (nick7nlp/Counting-Stars, arXiv 2403.11802): M sentences "the little
// penguin counted k ★" sprinkled at evenly spaced depths of a haystack,
// then a question asking for every count as JSON.
//
// Reference: nick7nlp/Counting-Stars at 32e16f2c, gen_test_data.ipynb
// (get_context, get_stars, sentence_with_star, select_question and the
// main loop), reproduced exactly: the haystack cleaning, the star and
// question text (EN and ZH, acquisition = "multi-evidence-retrieval-
// searching" and reasoning), the length grid and the insertion arithmetic
// with its quirks (insertion k at piece/character k*step + step + len(star)
// * k, where len(star) is the current sentence's length). Version "v1"
// reproduces the first paper version's generator (test_data/
// gen_test_data.ipynb at b57b84b, which produced results/
// stone_gpt4_32_16.txt): ZH acquisition only, stars in ascending order, an
// older question and insertion k at character k*step + step of the string
// built so far.
//
// The original uses no randomness (random is imported but unused). Its
// English haystack concatenates the essays in glob order, which is the
// file system's; here the essays are taken in sorted order when Seed is 0
// and in an order shuffled by Seed otherwise. Seed has no effect on the
// Chinese haystack, which is one book.
package countingstars

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"tally/datasets"
	scorestars "tally/scoring/countingstars"
)

// Test types, as tally/scoring/countingstars names them.
const (
	// Acquisition is the original's "multi-evidence-retrieval-searching".
	Acquisition = "Acquisition"
	// Reasoning is the original's "multi-evidence-retrieval-reasoning".
	Reasoning = "Reasoning"
)

// TaskName is the Task of every generated sample.
const TaskName = "counting_stars"

// maxContextLength is the original's max_context_length.
const maxContextLength = 128000

// Options select one Counting-Stars test.
type Options struct {
	// Dir is the context_data directory (PaulGrahamEssays/,
	// The_Story_of_the_Stone.txt, a_stars.txt, r_stars.txt).
	Dir string
	// Lang is "EN" or "ZH".
	Lang string
	// TestType is Acquisition or Reasoning (the original's names
	// "multi-evidence-retrieval-searching" / "-reasoning" are accepted).
	TestType string
	// M is the number of stars: a key of a_stars.txt (32, 64, ..., 1024)
	// or fewer (the first M of the next key's list; the lists are
	// prefixes of each other).
	M int
	// Lengths are the haystack lengths (sky_size / context_size): pieces
	// of context.split(" ") for EN, characters for ZH. Nil means
	// DefaultLengths(Lang, Version, 32).
	Lengths []int
	// Seed shuffles the English essays (0: sorted order); see the package
	// comment.
	Seed uint64
	// Count, when set, counts each prompt's tokens into
	// Metadata["prompt_tokens"].
	Count func(string) int
	// Version is "" (the current generator) or "v1" (the first paper
	// version; ZH acquisition only, M <= 64).
	Version string
	// ScoringRule is the scoring version recorded in every sample's
	// metadata (key MetadataRule of tally/scoring/countingstars): "paper"
	// (the notebook of the published heatmaps) or "current"; "" is the
	// default, paper for Acquisition and current for Reasoning (the
	// paper-era notebook has none); see that package's Rule.
	ScoringRule string
}

// DefaultLengths is the original's length grid for n lengths:
// int(i*scalar) for i in range(interval, 128000+1, interval), interval =
// int(128000/n), scalar 0.8 (EN) or 0.7 (ZH); 0.725 for version v1.
func DefaultLengths(lang, version string, n int) ([]int, error) {
	if n <= 0 || n > maxContextLength {
		return nil, fmt.Errorf("counting-stars: number of lengths %d out of range", n)
	}
	var scalar float64
	switch {
	case version == "v1":
		scalar = 0.725
	case lang == "EN":
		scalar = 0.8
	case lang == "ZH":
		scalar = 0.7
	default:
		return nil, fmt.Errorf("counting-stars: unknown language %q (want EN or ZH)", lang)
	}
	interval := maxContextLength / n
	var out []int
	for i := interval; i <= maxContextLength; i += interval {
		out = append(out, int(float64(i)*scalar))
	}
	return out, nil
}

// StarSentence is sentence_with_star: the sentence inserted for one star,
// with the wrong count r (reasoning only) and the correct count a.
func StarSentence(lang, testType string, r, a int) string {
	if lang == "ZH" {
		if testType == Acquisition {
			return "\n小企鹅数了" + strconv.Itoa(a) + "颗★\n"
		}
		return "\n小企鹅数了" + strconv.Itoa(r) + "颗★，但发现数错了，于是又数了一遍，这次数对了，是" + strconv.Itoa(a) + "颗★\n"
	}
	if testType == Acquisition {
		return "\nThe little penguin counted " + strconv.Itoa(a) + " ★\n"
	}
	return "\nThe little penguin counted " + strconv.Itoa(r) + " ★, but found that a mistake had been made, so the counting was done again, and this time " + strconv.Itoa(a) + " ★ was counted correctly.\n"
}

// Question is select_question: the retrieval question appended to the
// haystack. The answer format is {"little_penguin": [...]} (EN) or
// {"小企鹅": [...]} (ZH).
func Question(lang, testType, version string) string {
	if version == "v1" {
		return "\n\n\n\n在这个月光皎洁、云雾缭绕的夜晚，小企鹅正望向天空，全神贯注地数★。请帮助小企鹅收集所数★，例如：{\"小企鹅\":[x,x,x,...]}，不要求和，[x,x,x,...]中数字为小企鹅每次数★的颗数，仅以JSON格式输出结果，不需要输出任何解释。"
	}
	if lang == "ZH" {
		if testType == Acquisition {
			return "\n\n\n\n在这个月光皎洁、云雾缭绕的夜晚，小企鹅正望向天空，全神贯注地数★。请帮助小企鹅收集所数★的颗数，按照如下格式：{\"小企鹅\":[x,x,x,...]}，不要求和，[x,x,x,...]中数字为小企鹅每次数★的颗数，仅以JSON格式输出结果，不需要输出任何解释。"
		}
		return "\n\n\n\n在这个月光皎洁、云雾缭绕的夜晚，小企鹅正望向天空，全神贯注地数★。请帮助小企鹅收集所数★的正确颗数，按照如下格式：{\"小企鹅\":[x,x,x,...]}，不要求和，[x,x,x,...]中数字为小企鹅正确数★的颗数，仅以JSON格式输出结果，不需要输出任何解释。"
	}
	if testType == Acquisition {
		return "\n\n\n\nOn this moonlit and misty night, the little penguin is looking up at the sky and concentrating on counting ★. Please help the little penguin collect the number of ★, for example: {\"little_penguin\": [x, x, x,...]}. The summation is not required, and the numbers in [x, x, x,...] represent the counted number of ★ by the little penguin. Only output the results in JSON format without any explanation."
	}
	return "\n\n\n\nOn this moonlit and misty night, the little penguin is looking up at the sky and concentrating on counting ★. Please help the little penguin collect the correct number of ★, for example: {\"little_penguin\": [x, x, x,...]}. The summation is not required, and the numbers in [x, x, x,...] represent the correctly counted number of ★ by the little penguin. Only output the results in JSON format without any explanation."
}

func normTestType(t string) (string, error) {
	switch strings.ToLower(t) {
	case "acquisition", "multi-evidence-retrieval-searching":
		return Acquisition, nil
	case "reasoning", "multi-evidence-retrieval-reasoning":
		return Reasoning, nil
	}
	return "", fmt.Errorf("counting-stars: unknown test type %q (want Acquisition or Reasoning)", t)
}

// starsFor returns the first m counts of the smallest list with at least m.
func starsFor(all map[string][]int, m int, path string) ([]int, error) {
	if l, ok := all[strconv.Itoa(m)]; ok && len(l) >= m {
		return l[:m], nil
	}
	best := -1
	for k, l := range all {
		n, err := strconv.Atoi(k)
		if err != nil || len(l) < m || n < m {
			continue
		}
		if best < 0 || n < best {
			best = n
		}
	}
	if best < 0 {
		return nil, fmt.Errorf("counting-stars: %s: no list with %d stars", path, m)
	}
	return all[strconv.Itoa(best)][:m], nil
}

// Generate builds one sample per length: the haystack cut to that length
// with the M star sentences inserted, then the retrieval question.
// References are the M correct counts (a JSON list of ints).
func Generate(opts Options) ([]datasets.Sample, error) {
	if opts.Lang != "EN" && opts.Lang != "ZH" {
		return nil, fmt.Errorf("counting-stars: unknown language %q (want EN or ZH)", opts.Lang)
	}
	testType, err := normTestType(opts.TestType)
	if err != nil {
		return nil, err
	}
	v1 := false
	switch opts.Version {
	case "", "v2":
	case "v1":
		if opts.Lang != "ZH" || testType != Acquisition || opts.M > 64 {
			return nil, fmt.Errorf("counting-stars: version v1 is ZH Acquisition with at most 64 stars")
		}
		v1 = true
	default:
		return nil, fmt.Errorf("counting-stars: unknown version %q (want v1 or empty)", opts.Version)
	}
	rule, err := scorestars.ResolveRule(opts.ScoringRule, testType)
	if err != nil {
		return nil, err
	}
	if opts.M <= 0 {
		return nil, fmt.Errorf("counting-stars: M %d must be positive", opts.M)
	}
	lengths := opts.Lengths
	if lengths == nil {
		if lengths, err = DefaultLengths(opts.Lang, opts.Version, 32); err != nil {
			return nil, err
		}
	}
	for _, j := range lengths {
		// range(0, j, int(j/m)) needs a positive step.
		if j < opts.M {
			return nil, fmt.Errorf("counting-stars: length %d is shorter than M = %d", j, opts.M)
		}
	}
	aPath := filepath.Join(opts.Dir, "a_stars.txt")
	aAll, err := LoadStars(aPath)
	if err != nil {
		return nil, err
	}
	var a, r []int
	if v1 {
		// v1's constant list is sorted(a_stars["64"]).
		l, err := starsFor(aAll, 64, aPath)
		if err != nil {
			return nil, err
		}
		a = slices.Sorted(slices.Values(l))[:opts.M]
	} else {
		if a, err = starsFor(aAll, opts.M, aPath); err != nil {
			return nil, err
		}
		if testType == Reasoning {
			rPath := filepath.Join(opts.Dir, "r_stars.txt")
			rAll, err := LoadStars(rPath)
			if err != nil {
				return nil, err
			}
			if r, err = starsFor(rAll, opts.M, rPath); err != nil {
				return nil, err
			}
		}
	}
	sentences := make([]string, opts.M)
	for i := range sentences {
		ri := 0
		if r != nil {
			ri = r[i]
		}
		sentences[i] = StarSentence(opts.Lang, testType, ri, a[i])
	}
	refs := []byte("[")
	for i, x := range a {
		if i > 0 {
			refs = append(refs, ", "...)
		}
		refs = strconv.AppendInt(refs, int64(x), 10)
	}
	refs = append(refs, ']')
	question := Question(opts.Lang, testType, opts.Version)

	var ctx string
	var ctxRunes []rune
	if opts.Lang == "EN" {
		if ctx, err = HaystackEN(opts.Dir, opts.Seed); err != nil {
			return nil, err
		}
	} else {
		if ctx, err = HaystackZH(opts.Dir); err != nil {
			return nil, err
		}
		ctxRunes = []rune(ctx)
	}
	out := make([]datasets.Sample, 0, len(lengths))
	for _, j := range lengths {
		var body string
		if opts.Lang == "EN" {
			body = sprinkleEN(ctx, j, sentences)
		} else {
			body = sprinkleZH(ctxRunes, j, sentences, v1)
		}
		prompt := body + question
		md := map[string]any{
			"lang":         opts.Lang,
			"test_type":    testType,
			"m":            opts.M,
			"context_size": j,

			scorestars.MetadataRule: string(rule),
		}
		if opts.Version != "" {
			md["version"] = opts.Version
		}
		if opts.Count != nil {
			md["prompt_tokens"] = opts.Count(prompt)
		}
		out = append(out, datasets.Sample{
			Task:       TaskName,
			ID:         fmt.Sprintf("%s-%s-%d-%d", opts.Lang, testType, opts.M, j),
			Prompt:     prompt,
			References: refs,
			Metadata:   md,
		})
	}
	return out, nil
}

// sprinkleEN is the original's EN branch:
//
//	ctx = " ".join(context.split(" ")[:j])
//	for k in range(0, j, int(j/m)):
//	    p = len(star.split(" "))*indicator + k + int(j/m)
//	    ctx = " ".join(ctx.split(" ")[:p]) + star + " ".join(ctx.split(" ")[p:])
//
// Joining the first p pieces and the rest around star replaces the p-th
// separating space with star (or prepends/appends it at the ends).
func sprinkleEN(context string, j int, stars []string) string {
	ctx := prefixPieces(context, j)
	step := j / len(stars)
	for ind, star := range stars {
		k := ind * step
		p := (strings.Count(star, " ")+1)*ind + k + step
		if p <= 0 {
			ctx = star + ctx
			continue
		}
		at := nthSpace(ctx, p)
		if at < 0 {
			ctx += star
			continue
		}
		ctx = ctx[:at] + star + ctx[at+1:]
	}
	return ctx
}

// prefixPieces is " ".join(s.split(" ")[:n]).
func prefixPieces(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if at := nthSpace(s, n); at >= 0 {
		return s[:at]
	}
	return s
}

// nthSpace returns the byte offset of the n-th (1-based) ASCII space in s,
// or -1.
func nthSpace(s string, n int) int {
	off := 0
	for ; n > 0; n-- {
		i := strings.IndexByte(s[off:], ' ')
		if i < 0 {
			return -1
		}
		off += i + 1
	}
	return off - 1
}

// sprinkleZH is the original's ZH branch, on characters:
//
//	ctx = context[:j]
//	for k in range(0, j, int(j/m)):
//	    p = k + int(j/m) + len(star)*indicator   # v1: k + int(j/m)
//	    ctx = ctx[:p] + star + ctx[p:]
func sprinkleZH(context []rune, j int, stars []string, v1 bool) string {
	if j > len(context) {
		j = len(context)
	}
	total := j
	runes := make([][]rune, len(stars))
	for i, s := range stars {
		runes[i] = []rune(s)
		total += len(runes[i])
	}
	ctx := make([]rune, j, total)
	copy(ctx, context[:j])
	step := j / len(stars)
	for ind, star := range runes {
		p := ind*step + step
		if !v1 {
			p += len(star) * ind
		}
		p = min(p, len(ctx))
		ctx = slices.Insert(ctx, p, star...)
	}
	return string(ctx)
}

// HaystackEN is get_context("EN"): the essays of PaulGrahamEssays/*.txt
// read in text mode (universal newlines), each "\n" replaced by a space,
// concatenated with nothing between them. The essays come in sorted order
// (Seed 0) or shuffled by seed.
func HaystackEN(dir string, seed uint64) (string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "PaulGrahamEssays", "*.txt"))
	if err != nil {
		return "", fmt.Errorf("counting-stars: list essays: %w", err)
	}
	if len(files) == 0 {
		return "", fmt.Errorf("counting-stars: no essays in %s", filepath.Join(dir, "PaulGrahamEssays"))
	}
	slices.Sort(files)
	if seed != 0 {
		rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		rng.Shuffle(len(files), func(i, j int) { files[i], files[j] = files[j], files[i] })
	}
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("counting-stars: read essay: %w", err)
		}
		b.WriteString(strings.ReplaceAll(universalNewlines(string(data)), "\n", " "))
	}
	return b.String(), nil
}

// HaystackZH is get_context("ZH"): The_Story_of_the_Stone.txt read by
// lines (universal newlines); each line stripped of Python whitespace,
// "------------" and ASCII spaces removed; then every ASCII punctuation
// character but the backslash (the original's regex class escapes "]"
// with it) and every ASCII letter removed.
func HaystackZH(dir string) (string, error) {
	path := filepath.Join(dir, "The_Story_of_the_Stone.txt")
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("counting-stars: read haystack: %w", err)
	}
	var b strings.Builder
	b.Grow(len(data))
	for line := range strings.SplitSeq(universalNewlines(string(data)), "\n") {
		line = strings.TrimFunc(line, pyIsSpace)
		line = strings.ReplaceAll(line, "------------", " ")
		for _, c := range line {
			if c == ' ' || c < 128 && (dropPunct(c) || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
				continue
			}
			b.WriteRune(c)
		}
	}
	return b.String(), nil
}

func dropPunct(c rune) bool {
	return c != '\\' && strings.ContainsRune("!\"#$%&'()*+,-./:;<=>?@[]^_`{|}~", c)
}

// pyIsSpace is Python's str.isspace for one character.
func pyIsSpace(r rune) bool {
	return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f
}

// universalNewlines is Python's text-mode newline translation.
func universalNewlines(s string) string {
	if !strings.Contains(s, "\r") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}
