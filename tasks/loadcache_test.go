package tasks

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"tally/datasets"
)

// dropTaskFile writes a DROP task (Hugging Face rows, two few-shot
// examples) of n questions in dir and returns its config.
func dropTaskFile(t *testing.T, dir string, n int) *Config {
	t.Helper()
	var rows strings.Builder
	for i := range n {
		fmt.Fprintf(&rows, `{"section_id":"s%d","query_id":"q%d","passage":"Ann ran %d.5 miles. Ünïcode \u2028 ok.","question":"How far did Ann run?",`+
			`"answer":{"number":"%d.5","date":{"day":"","month":"","year":""},"spans":[]},"validated_answers":{"number":["%d.5"],"date":[{"day":"","month":"","year":""}],"spans":[[]]}}`+"\n",
			i%7, i, i, i, i)
	}
	if err := os.WriteFile(filepath.Join(dir, "rows.jsonl"), []byte(rows.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	yaml := `task: cached
loader: drop
data: rows.jsonl
id: "{{.query_id}}"
prompt: "Passage: {{.passage}}\nQuestion: {{.question}}\nAnswer:"
target: " {{.target}}"
share_key: "{{.section_id}}"
fewshot: 2
fewshot_separator: "\n\n"
fewshot_seed: 7
max_tokens: 12
metrics: [drop]
`
	p := filepath.Join(dir, "cached.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Resolve(p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestLoadCache: a task whose loader reads only its data file (of a
// mebibyte or more) loads the
// same samples from what an earlier load kept as from its data, with and
// without docs and under every selection; what was kept is used (a kept
// load doctored under the same identity is what loads) and only under
// the same identity: a changed data file, config or load option, or a
// damaged, truncated or foreign file, loads from the data again.
func TestLoadCache(t *testing.T) {
	dir, cache := t.TempDir(), t.TempDir()
	// Data of less than a mebibyte is not kept.
	small := dropTaskFile(t, t.TempDir(), 50)
	if _, err := small.Load(LoadOptions{CacheDir: cache}); err != nil {
		t.Fatal(err)
	}
	if files, _ := filepath.Glob(filepath.Join(cache, "*")); len(files) != 0 {
		t.Fatalf("a small task's load kept: %v", files)
	}
	c := dropTaskFile(t, dir, 4000) // 1.3 MB
	for _, opt := range []LoadOptions{{}, {NoDocs: true}, {Limit: 5}, {IDs: []string{"q3", "q4000", "q40"}, NoDocs: true}} {
		want, err := c.Load(opt)
		if err != nil {
			t.Fatal(err)
		}
		opt.CacheDir = cache
		for _, pass := range []string{"first (kept)", "second (from what was kept)"} {
			got, err := c.Load(opt)
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("%+v, %s: %v; differs from a load without a cache: %v", opt, pass, err, !reflect.DeepEqual(got, want))
			}
		}
	}
	files, _ := filepath.Glob(filepath.Join(cache, "*"))
	if len(files) != 2 {
		t.Fatalf("kept %d files (%v), want one with docs and one without", len(files), files)
	}

	opt := LoadOptions{NoDocs: true, CacheDir: cache}
	identity, file, _, ok := c.loadCacheKey(mustLoader(t, c), mustRequest(t, c), opt)
	if !ok {
		t.Fatal("not cacheable")
	}
	kept, ok := readLoadCache(file, identity, c.Task)
	if !ok {
		t.Fatal("nothing kept")
	}
	kept.samples[0].Prompt = "doctored"
	writeLoadCache(file, identity, kept)
	if got, _ := c.Load(opt); len(got.Samples) == 0 || got.Samples[0].Prompt != "doctored" {
		t.Fatalf("a kept load under the same identity was not used: %q", got.Samples[0].Prompt)
	}

	fresh := func(c *Config, opt LoadOptions) Loaded {
		t.Helper()
		opt.CacheDir = ""
		l, err := c.Load(opt)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	check := func(what string, c *Config, opt LoadOptions) {
		t.Helper()
		got, err := c.Load(opt)
		if err != nil || !reflect.DeepEqual(got, fresh(c, opt)) {
			t.Errorf("%s: not what the data loads (%v)", what, err)
		}
	}
	// The data changes (one byte, same size).
	data := filepath.Join(dir, "rows.jsonl")
	b, _ := os.ReadFile(data)
	os.WriteFile(data, []byte(strings.Replace(string(b), "Ann ran 0.5", "Ann ran 9.5", 1)), 0o644)
	check("changed data", c, opt)
	writeLoadCache(file, identity, kept) // doctored, under the old data's identity
	check("changed data, doctored file kept", c, opt)
	// The config changes.
	other := *c
	other.Prompt = "Q: {{.question}}\nA:"
	check("changed prompt template", &other, opt)
	other = *c
	other.FewShotSeed = 8
	check("changed few-shot seed", &other, opt)
	check("skipping bad lines", c, LoadOptions{NoDocs: true, SkipBad: true, CacheDir: cache})
	// Damaged files.
	identity, file, _, _ = c.loadCacheKey(mustLoader(t, c), mustRequest(t, c), opt)
	c.Load(opt)
	good, _ := os.ReadFile(file)
	for name, damaged := range map[string][]byte{
		"truncated": good[:len(good)/2],
		"flipped":   append(append([]byte{}, good[:len(good)/2]...), append([]byte{good[len(good)/2] ^ 1}, good[len(good)/2+1:]...)...),
		"empty":     {},
		"foreign":   []byte("not a kept load at all"),
	} {
		os.WriteFile(file, damaged, 0o644)
		check(name, c, opt)
	}
	// No cache folder, or one that cannot be written: loads as ever.
	check("no cache", c, LoadOptions{NoDocs: true})
	check("cache folder unwritable", c, LoadOptions{NoDocs: true, CacheDir: filepath.Join(data, "under-a-file")})
}

func mustLoader(t *testing.T, c *Config) (l datasets.Loader) {
	t.Helper()
	l, ok := datasets.LookupLoader(c.Loader)
	if !ok {
		t.Fatalf("no loader %s", c.Loader)
	}
	return l
}

func mustRequest(t *testing.T, c *Config) datasets.Request {
	t.Helper()
	req, err := c.request(c.Data, false)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// FuzzDecodeLoad: no file makes decodeLoad panic, and a kept load reads
// back as written.
func FuzzDecodeLoad(f *testing.F) {
	target, idx := " t", 3
	f.Add(encodeLoad("id", renderedLoad{samples: []datasets.Sample{{ID: "a", Prompt: "p", References: []byte(`[["1"]]`), Target: &target, Index: &idx}}, skipped: 1}), "id")
	f.Add([]byte(loadCacheMagic), "")
	f.Fuzz(func(t *testing.T, data []byte, identity string) {
		r, err := decodeLoad(data, identity, "t")
		if err != nil {
			return
		}
		again, err := decodeLoad(encodeLoad(identity, r), identity, "t")
		if err != nil || !reflect.DeepEqual(again, r) {
			t.Fatalf("kept load reads back %+v, %v; want %+v", again, err, r)
		}
	})
}
