// Package tasks reads task configurations (YAML, in the spirit of
// lm-evaluation-harness: data file and format, prompt template, references,
// default stop settings, token budget, metrics), loads their samples and
// binds their metrics to the scoring packages. Built-in tasks are embedded.
// Loaders and metrics are found by name in the registries of
// tally/datasets and tally/scoring, filled by the benchmark packages that
// tally/benchmarks links in.
package tasks

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"tally/datasets"
	"tally/generate"
	"tally/tasks/lmeval"
)

//go:embed builtin
var builtinFS embed.FS

// Config is a task configuration.
type Config struct {
	// Task is the task's name.
	Task        string `yaml:"task"`
	Description string `yaml:"description"`
	// Loader is the data format, a loader registered by a datasets
	// package (tally/datasets.RegisterLoader): "jsonl" (one object per line), "drop"
	// (DROP's original JSON, Hugging Face rows, or an lm-evaluation-harness
	// sample log), "leval" (an L-Eval task file; prompts as L-Eval builds
	// them) or "counting-stars" (the generator, over a context_data
	// directory), "pairwise-judge" (AlpacaEval-style pairs: the judge's
	// prompts in both orders) or "3c3h-judge" (an AraGen answers file: the
	// judge's prompts). The last four build prompts themselves: no id or
	// prompt template.
	Loader string `yaml:"loader"`
	// Data is the data file: a path (relative to the YAML file) or
	// "embedded:NAME" for data built into tally. --data overrides it.
	Data string `yaml:"data"`
	// ID, Prompt and Target are Go text/templates over a row's fields.
	ID     string `yaml:"id"`
	Prompt string `yaml:"prompt"`
	Target string `yaml:"target"`
	// ShareKey is a template grouping samples that share a prefix.
	ShareKey string `yaml:"share_key"`
	// References names the row field holding the reference answer(s).
	References string `yaml:"references"`
	// FewShot is the number of solved examples put before each prompt,
	// drawn (seeded) from the other samples, preferring other share keys.
	FewShot          int    `yaml:"fewshot"`
	FewShotSeparator string `yaml:"fewshot_separator"`
	FewShotSeed      uint64 `yaml:"fewshot_seed"`
	// Stop is the default stop settings; CompareStop are extra settings
	// scored beside them by default (the same generation pass serves all).
	Stop        map[string][]string `yaml:"stop"`
	CompareStop map[string][]string `yaml:"compare_stop"`
	MaxTokens   int                 `yaml:"max_tokens"`
	Metrics     []string            `yaml:"metrics"`

	// L-Eval: the prompt bound in tokens (whitespace words by default) and
	// how a document that does not fit is cut (leval, head, tail, none).
	MaxPromptTokens int    `yaml:"max_prompt_tokens"`
	Truncate        string `yaml:"truncate"`
	// Counting-Stars: language (EN, ZH), test type (Acquisition,
	// Reasoning), number of stars and haystack lengths (empty: the
	// original's grid).
	Lang     string `yaml:"lang"`
	TestType string `yaml:"test_type"`
	Stars    int    `yaml:"stars"`
	Lengths  []int  `yaml:"lengths"`
	Seed     uint64 `yaml:"seed"`
	// ScoringRule is the Counting-Stars scoring version: "paper" (the
	// notebook of the published heatmaps), "current", or empty for the
	// default (paper for Acquisition, current for Reasoning); see
	// tally/scoring/countingstars Rule.
	ScoringRule string `yaml:"scoring_rule"`
	// Judge tasks: the 3C3H judge system prompt file (sp1.md or sp2.md),
	// and optionally the AraGen questions file the answers are joined with.
	SystemPrompt string `yaml:"system_prompt"`
	Questions    string `yaml:"questions"`
	// Chat prompts an instruct model through its chat template (the prompt
	// becomes the user's message); --chat forces it for every task.
	Chat bool `yaml:"chat"`

	dir string // directory of the YAML file, for relative data paths
	// lm is the task when the file is an lm-evaluation-harness task file.
	lm *lmeval.Task
}

// LMEval is the lm-evaluation-harness task the config was read from, nil
// for a tally task.
func (c *Config) LMEval() *lmeval.Task { return c.lm }

// Builtin lists the built-in task names.
func Builtin() []string {
	ents, _ := builtinFS.ReadDir("builtin")
	var out []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Resolve returns the configuration of a built-in task name or a YAML file.
func Resolve(spec string) (*Config, error) { return ResolveWith(spec, nil) }

// ResolveWith is Resolve with top-level fields overridden (KEY=VALUE, the
// value read as YAML: --set max_prompt_tokens=4000 --set lang=ZH).
func ResolveWith(spec string, set map[string]string) (*Config, error) {
	var data []byte
	var dir string
	if strings.HasSuffix(spec, ".yaml") || strings.HasSuffix(spec, ".yml") {
		b, err := lmeval.ReadTaskFile(spec)
		if err != nil {
			return nil, err
		}
		data, dir = b, filepath.Dir(spec)
		if lmeval.IsGroupFile(data) {
			return nil, fmt.Errorf("%s is an lm-eval group: its tasks are resolved with ResolveAll", spec)
		}
		if lmeval.IsTaskFile(data) {
			return resolveLMEval(spec, set)
		}
	} else {
		b, err := builtinFS.ReadFile("builtin/" + spec + ".yaml")
		if err != nil {
			return nil, fmt.Errorf("unknown task %q (built in: %s; or a path to a .yaml file)", spec, strings.Join(Builtin(), ", "))
		}
		data = b
	}
	if len(set) > 0 {
		if err := checkSet(set); err != nil {
			return nil, err
		}
		var err error
		if data, err = setFields(data, set); err != nil {
			return nil, fmt.Errorf("read task %s: %w", spec, err)
		}
	}
	var c Config
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("read task %s: %w", spec, err)
	}
	c.dir = dir
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("task %s: %w", spec, err)
	}
	return &c, nil
}

// ResolveAll is ResolveWith for a spec that may name several tasks: an
// lm-evaluation-harness group file gives every task of the group (found
// under its folder); any other spec gives its one config.
func ResolveAll(spec string, set map[string]string) ([]*Config, error) {
	if strings.HasSuffix(spec, ".yaml") || strings.HasSuffix(spec, ".yml") {
		if b, err := lmeval.ReadTaskFile(spec); err == nil && lmeval.IsGroupFile(b) {
			ts, err := lmeval.LoadGroup(spec, set)
			if err != nil {
				return nil, err
			}
			out := make([]*Config, len(ts))
			for i, t := range ts {
				out[i] = lmevalConfig(spec, t)
			}
			return out, nil
		}
	}
	c, err := ResolveWith(spec, set)
	if err != nil {
		return nil, err
	}
	return []*Config{c}, nil
}

// resolveLMEval reads an lm-evaluation-harness task file (tally/tasks/lmeval):
// its until becomes the default stop setting "until", its max_gen_toks
// the token budget, and each filter pipeline and metric a score
// "METRIC,FILTER".
func resolveLMEval(path string, set map[string]string) (*Config, error) {
	t, err := lmeval.Load(path, set)
	if err != nil {
		return nil, err
	}
	return lmevalConfig(path, t), nil
}

func lmevalConfig(path string, t *lmeval.Task) *Config {
	return &Config{Task: t.Name(), Description: t.Description(), Loader: lmeval.FormatName,
		Stop: map[string][]string{lmeval.UntilSetting: t.Until()}, MaxTokens: t.MaxGenToks(), Metrics: t.ScoreKeys(),
		dir: filepath.Dir(path), lm: t}
}

// SettingsWith returns the stop settings a run scores: the task's own
// when stops is empty; otherwise stops, which replace a tally task's
// settings and are scored beside an lm-eval task's "until" (a stop
// setting named "until" replaces it).
func (c *Config) SettingsWith(stops []generate.StopSetting) []generate.StopSetting {
	if len(stops) == 0 {
		return c.Settings()
	}
	if c.lm == nil {
		return stops
	}
	out := append([]generate.StopSetting(nil), stops...)
	for _, s := range stops {
		if s.Name == lmeval.UntilSetting {
			return out
		}
	}
	return append(c.Settings(), out...)
}

// setFields replaces the value of each named top-level field of the YAML
// document (adding the field when it is absent) with the value read as
// YAML, and leaves every other node as it was parsed: styles, quoting and
// escapes such as "\n" survive.
func setFields(data []byte, set map[string]string) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("the task config is not a YAML mapping")
	}
	root := doc.Content[0]
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := set[k]
		var vdoc yaml.Node
		if err := yaml.Unmarshal([]byte(v), &vdoc); err != nil {
			return nil, fmt.Errorf("--set %s=%s: %w", k, v, err)
		}
		val := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
		if len(vdoc.Content) == 1 {
			val = vdoc.Content[0]
		}
		replaced := false
		for i := 0; i+1 < len(root.Content); i += 2 {
			if root.Content[i].Value == k {
				root.Content[i+1] = val
				replaced = true
			}
		}
		if !replaced {
			root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k}, val)
		}
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return nil, fmt.Errorf("write task config: %w", err)
	}
	return out, nil
}

func (c *Config) validate() error {
	switch {
	case c.Task == "":
		return fmt.Errorf("field task is empty")
	}
	l, ok := datasets.LookupLoader(c.Loader)
	switch {
	case !ok:
		return fmt.Errorf("field loader: %q is not one of %s", c.Loader, strings.Join(datasets.LoaderNames(), ", "))
	case c.Prompt == "" && l.Rows != nil:
		return fmt.Errorf("field prompt is empty")
	case c.ID == "" && l.Rows != nil:
		return fmt.Errorf("field id is empty")
	case c.MaxTokens <= 0:
		return fmt.Errorf("field max_tokens must be positive")
	case len(c.Metrics) == 0:
		return fmt.Errorf("field metrics is empty")
	case c.FewShot < 0:
		return fmt.Errorf("field fewshot: %d, want 0 or more examples", c.FewShot)
	case c.FewShot > 0 && (l.Rows == nil || c.Target == ""):
		return fmt.Errorf("fewshot %d: the %s loader's prompts take no few-shot examples (only tasks with a prompt and a target template do)", c.FewShot, c.Loader)
	}
	for _, m := range c.Metrics {
		if _, ok := lookupMetric(m); !ok {
			return fmt.Errorf("unknown metric %q (known: %s)", m, strings.Join(MetricNames(), ", "))
		}
	}
	for _, t := range []string{c.ID, c.Prompt, c.Target, c.ShareKey} {
		if _, err := parseRowTemplate("", t); err != nil {
			return fmt.Errorf("template %q: %w", t, err)
		}
	}
	return nil
}

// Settings returns the task's default stop settings followed by its compare
// settings, sorted by name within each group.
func (c *Config) Settings() []generate.StopSetting {
	var out []generate.StopSetting
	for _, m := range []map[string][]string{c.Stop, c.CompareStop} {
		names := make([]string, 0, len(m))
		for n := range m {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			out = append(out, generate.StopSetting{Name: n, Seqs: m[n]})
		}
	}
	return out
}

// LoadOptions select and locate a task's samples.
type LoadOptions struct {
	// Data overrides the config's data file.
	Data string
	// Limit keeps the first N samples (0: all).
	Limit int
	// LimitFraction, in (0, 1), keeps the first ceil(n × LimitFraction)
	// of a task's n samples, as lm-evaluation-harness reads a --limit below
	// 1 (0: Limit applies).
	LimitFraction float64
	// IDs keeps only these sample ids (empty: all).
	IDs []string
	// SkipBad skips malformed lines, counting them, instead of failing.
	SkipBad bool
	// NoDocs leaves each sample's Doc (the data row as reports write it)
	// and Notes out: a caller that writes no report (a plan) saves writing
	// every row again and holding it.
	NoDocs bool
	// CacheDir is where a task whose loader reads only its data file keeps
	// what it rendered between runs (loadcache.go); "": nowhere.
	CacheDir string
}

// Loaded is a task's samples and what loading skipped.
type Loaded struct {
	Samples []datasets.Sample
	Skipped int
	// Total is the number of samples in the data, before LoadOptions
	// selected some.
	Total int
	// Files are the files the load read, by what they are ("data", or
	// the config field naming the file), with their digests: they make
	// the task's variant (Config.Variant).
	Files map[string]FileDigest
}

// Load reads and renders the task's samples.
func (c *Config) Load(opt LoadOptions) (Loaded, error) {
	path := c.Data
	if opt.Data != "" {
		path = opt.Data
	}
	if c.lm != nil {
		return c.loadLMEval(path, opt)
	}
	if path == "" {
		return Loaded{}, fmt.Errorf("task %s: no data file: pass --data PATH", c.Task)
	}
	l, _ := datasets.LookupLoader(c.Loader) // validated when the config was read
	req, err := c.request(path, opt.SkipBad)
	if err != nil {
		return Loaded{}, err
	}
	files := map[string]FileDigest{}
	if err := c.loadFiles(files); err != nil {
		return Loaded{}, err
	}
	if l.Samples != nil {
		samples, skipped, err := l.Samples(req)
		if err != nil {
			return Loaded{}, fmt.Errorf("task %s: %w", c.Task, err)
		}
		if files["data"], err = requestDigest(req, nil, samples); err != nil {
			return Loaded{}, err
		}
		// Every sample is put under the config's task name; the
		// benchmark's own sub-task stays in the metadata.
		for i := range samples {
			samples[i].Task = c.Task
			samples[i].Index = &i
		}
		return Loaded{Samples: selectSamples(samples, opt), Skipped: skipped, Total: len(samples), Files: files}, nil
	}
	identity, kept, digest, keep := c.loadCacheKey(l, req, opt)
	var r renderedLoad
	var ok bool
	if keep {
		r, ok = readLoadCache(kept, identity, c.Task)
	}
	if !ok {
		if r, err = c.renderRows(l, req, path, opt.NoDocs); err != nil {
			return Loaded{}, err
		}
		// Kept only when the data did not change while it was read.
		if after, same := dataDigest(req); keep && same && bytes.Equal(after, digest) {
			writeLoadCache(kept, identity, r)
		}
	}
	if files["data"], err = requestDigest(req, digest, r.samples); err != nil {
		return Loaded{}, err
	}
	return Loaded{Samples: selectSamples(r.samples, opt), Skipped: r.skipped, Total: len(r.samples), Files: files}, nil
}

// loadLMEval is Load for a task read from an lm-eval task file.
func (c *Config) loadLMEval(path string, opt LoadOptions) (Loaded, error) {
	loaded, err := c.lm.Load(path, opt.SkipBad)
	if err != nil {
		return Loaded{}, err
	}
	samples := selectSamples(loaded.Samples, opt)
	if opt.NoDocs && !c.lm.ScoresDocs() {
		for i := range samples {
			samples[i].Doc = nil
		}
	}
	d, err := digestFiles(loaded.Files)
	if err != nil {
		return Loaded{}, fmt.Errorf("task %s: data: %w", c.Task, err)
	}
	return Loaded{Samples: samples, Skipped: loaded.Skipped, Total: len(loaded.Samples), Files: map[string]FileDigest{"data": {path, d}}}, nil
}

// renderRows reads a row loader's rows and renders the task's samples
// from them (templates, few-shot examples), in the data's order.
func (c *Config) renderRows(l datasets.Loader, req datasets.Request, path string, noDocs bool) (renderedLoad, error) {
	read, err := l.Rows(req)
	if err != nil {
		return renderedLoad{}, fmt.Errorf("task %s: %w", c.Task, err)
	}
	rows, refs, notes, skipped := read.Rows, read.Refs, read.Notes, read.Skipped
	if len(rows) == 0 {
		return renderedLoad{}, fmt.Errorf("task %s: %s has no samples", c.Task, path)
	}
	tmpl := func(name, t string) *rowTemplate {
		rt, _ := parseRowTemplate(name, t) // validated when the config was read
		return rt
	}
	idT, promptT, targetT, shareT := tmpl("id", c.ID), tmpl("prompt", c.Prompt), tmpl("target", c.Target), tmpl("share_key", c.ShareKey)
	render := func(t *rowTemplate, row map[string]any, i int) (string, error) {
		s, err := t.render(row)
		if err != nil {
			return "", fmt.Errorf("task %s: %s row %d: %w", c.Task, path, i+1, err)
		}
		return s, nil
	}
	samples := make([]datasets.Sample, len(rows))
	targets := make([]string, len(rows))
	seen := map[string]int{}
	for i, row := range rows {
		s := datasets.Sample{Task: c.Task, References: refs[i]}
		if s.ID, err = render(idT, row, i); err != nil {
			return renderedLoad{}, err
		}
		if j, dup := seen[s.ID]; dup {
			return renderedLoad{}, fmt.Errorf("task %s: %s rows %d and %d: duplicate id %q", c.Task, path, j+1, i+1, s.ID)
		}
		seen[s.ID] = i
		if v, ok := row[datasets.VerbatimPrompt].(string); ok {
			s.Prompt = v
		} else if s.Prompt, err = render(promptT, row, i); err != nil {
			return renderedLoad{}, err
		}
		if c.ShareKey != "" {
			if s.ShareKey, err = render(shareT, row, i); err != nil {
				return renderedLoad{}, err
			}
		}
		if c.Target != "" {
			if targets[i], err = render(targetT, row, i); err != nil {
				return renderedLoad{}, err
			}
			s.Target = &targets[i]
		}
		s.Index = &i
		if !noDocs {
			s.Doc = docOf(row)
		}
		if notes != nil && !noDocs {
			s.Notes = notes[i] // shown beside the data row, kept with it
		}
		samples[i] = s
	}
	if _, logged := rows[0][datasets.VerbatimPrompt]; c.FewShot > 0 && !logged {
		addFewShot(samples, targets, c.FewShot, c.FewShotSeparator, c.FewShotSeed)
	}
	return renderedLoad{samples: samples, skipped: skipped}, nil
}

// docOf is a data row as reports show it (lm-eval's "doc"): its fields,
// without the ones tally adds for itself.
func docOf(row map[string]any) json.RawMessage {
	doc := make(map[string]any, len(row))
	for k, v := range row {
		if k != datasets.VerbatimPrompt {
			doc[k] = v
		}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil
	}
	return b
}

// addFewShot prefixes each prompt with n solved examples drawn with a
// seeded generator from the other samples, preferring ones with another
// share key (another passage), in a fixed order per sample. Draws are by
// rejection, so a task of N samples costs O(N·n), not O(N²).
func addFewShot(samples []datasets.Sample, targets []string, n int, sep string, seed uint64) {
	base := make([]string, len(samples))
	for i := range samples {
		base[i] = samples[i].Prompt
	}
	for i := range samples {
		r := rand.New(rand.NewPCG(seed, uint64(i)))
		chosen := map[int]bool{}
		var shots []int
		// Prefer other share keys; after many misses (few other keys
		// left), accept any other sample.
		for tries := 0; len(shots) < min(n, len(samples)-1); tries++ {
			j := r.IntN(len(samples))
			if j == i || chosen[j] {
				continue
			}
			same := samples[j].ShareKey != "" && samples[j].ShareKey == samples[i].ShareKey
			if same && tries < 64*n {
				continue
			}
			chosen[j] = true
			shots = append(shots, j)
		}
		parts := make([]string, 0, len(shots)+1)
		for _, j := range shots {
			parts = append(parts, base[j]+targets[j])
		}
		parts = append(parts, base[i])
		samples[i].Prompt = strings.Join(parts, sep)
	}
}

func selectSamples(samples []datasets.Sample, opt LoadOptions) []datasets.Sample {
	if len(opt.IDs) > 0 {
		want := map[string]bool{}
		for _, id := range opt.IDs {
			want[id] = true
		}
		var out []datasets.Sample
		for _, s := range samples {
			if want[s.ID] {
				out = append(out, s)
			}
		}
		samples = out
	}
	if opt.Limit > 0 && len(samples) > opt.Limit {
		samples = samples[:opt.Limit]
	}
	if f := opt.LimitFraction; f > 0 && f < 1 {
		samples = samples[:min(len(samples), int(math.Ceil(float64(len(samples))*f)))]
	}
	return samples
}

// request is what the task's loader gets: the data path resolved (or the
// embedded data) and the loader's config fields.
func (c *Config) request(path string, skipBad bool) (datasets.Request, error) {
	req := datasets.Request{Task: c.Task, Path: c.resolvePath(path), SkipBad: skipBad, Resolve: c.resolvePath,
		Fields: datasets.Fields{References: c.References, MaxPromptTokens: c.MaxPromptTokens, Truncate: c.Truncate,
			Lang: c.Lang, TestType: c.TestType, Stars: c.Stars, Lengths: c.Lengths, Seed: c.Seed, ScoringRule: c.ScoringRule,
			SystemPrompt: c.SystemPrompt, Questions: c.Questions}}
	if name, ok := strings.CutPrefix(path, "embedded:"); ok {
		b, err := builtinFS.ReadFile("builtin/" + name)
		if err != nil {
			return datasets.Request{}, fmt.Errorf("task %s: no embedded data %q", c.Task, name)
		}
		req.Path, req.Data = path, b
	}
	return req, nil
}

func (c *Config) resolvePath(p string) string {
	if c.dir == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(c.dir, p)
}
