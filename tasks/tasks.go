// Package tasks reads task configurations (YAML, in the spirit of
// lm-evaluation-harness: data file and format, prompt template, references,
// default stop settings, token budget, metrics), loads their samples and
// binds their metrics to the scoring packages. Built-in tasks are embedded.
package tasks

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/template"

	"gopkg.in/yaml.v3"

	"tally/datasets"
	"tally/datasets/countingstars"
	"tally/datasets/drop"
	"tally/datasets/jsonl"
	"tally/datasets/judge"
	"tally/datasets/leval"
	"tally/datasets/lmevallog"
	"tally/generate"
	scoredrop "tally/scoring/drop"
)

//go:embed builtin
var builtinFS embed.FS

// Config is a task configuration.
type Config struct {
	// Task is the task's name.
	Task        string `yaml:"task"`
	Description string `yaml:"description"`
	// Loader is the data format: "jsonl" (one object per line), "drop"
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
	// Judge tasks: the 3C3H judge system prompt file (sp1.md or sp2.md),
	// and optionally the AraGen questions file the answers are joined with.
	SystemPrompt string `yaml:"system_prompt"`
	Questions    string `yaml:"questions"`
	// Chat prompts an instruct model through its chat template (the prompt
	// becomes the user's message); --chat forces it for every task.
	Chat bool `yaml:"chat"`

	dir string // directory of the YAML file, for relative data paths
}

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
		b, err := os.ReadFile(spec)
		if err != nil {
			return nil, fmt.Errorf("read task %s: %w", spec, err)
		}
		data, dir = b, filepath.Dir(spec)
	} else {
		b, err := builtinFS.ReadFile("builtin/" + spec + ".yaml")
		if err != nil {
			return nil, fmt.Errorf("unknown task %q (built in: %s; or a path to a .yaml file)", spec, strings.Join(Builtin(), ", "))
		}
		data = b
	}
	if len(set) > 0 {
		var m map[string]any
		if err := yaml.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("read task %s: %w", spec, err)
		}
		for k, v := range set {
			var val any
			if err := yaml.Unmarshal([]byte(v), &val); err != nil {
				return nil, fmt.Errorf("--set %s=%s: %w", k, v, err)
			}
			m[k] = val
		}
		var err error
		if data, err = yaml.Marshal(m); err != nil {
			return nil, err
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

func (c *Config) validate() error {
	switch {
	case c.Task == "":
		return fmt.Errorf("field task is empty")
	case c.Loader != "jsonl" && c.Loader != "drop" && !c.generates():
		return fmt.Errorf("field loader: %q is not one of jsonl, drop, leval, counting-stars, pairwise-judge, 3c3h-judge", c.Loader)
	case c.Prompt == "" && !c.generates():
		return fmt.Errorf("field prompt is empty")
	case c.ID == "" && !c.generates():
		return fmt.Errorf("field id is empty")
	case c.MaxTokens <= 0:
		return fmt.Errorf("field max_tokens must be positive")
	case len(c.Metrics) == 0:
		return fmt.Errorf("field metrics is empty")
	}
	for _, m := range c.Metrics {
		if _, ok := lookupMetric(m); !ok {
			return fmt.Errorf("unknown metric %q (known: %s)", m, strings.Join(MetricNames(), ", "))
		}
	}
	for _, t := range []string{c.ID, c.Prompt, c.Target, c.ShareKey} {
		if _, err := template.New("").Option("missingkey=error").Parse(t); err != nil {
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
	// IDs keeps only these sample ids (empty: all).
	IDs []string
	// SkipBad skips malformed lines, counting them, instead of failing.
	SkipBad bool
}

// Loaded is a task's samples and what loading skipped.
type Loaded struct {
	Samples []datasets.Sample
	Skipped int
}

// Load reads and renders the task's samples.
func (c *Config) Load(opt LoadOptions) (Loaded, error) {
	path := c.Data
	if opt.Data != "" {
		path = opt.Data
	}
	if path == "" {
		return Loaded{}, fmt.Errorf("task %s: no data file: pass --data PATH", c.Task)
	}
	if c.generates() {
		samples, skipped, err := c.generated(c.resolvePath(path), opt.SkipBad)
		if err != nil {
			return Loaded{}, fmt.Errorf("task %s: %w", c.Task, err)
		}
		return Loaded{Samples: selectSamples(samples, opt), Skipped: skipped}, nil
	}
	rows, refs, skipped, err := c.rows(path, opt.SkipBad)
	if err != nil {
		return Loaded{}, err
	}
	tmpl := func(name, t string) (*template.Template, error) {
		return template.New(name).Option("missingkey=error").Parse(t)
	}
	idT, _ := tmpl("id", c.ID)
	promptT, _ := tmpl("prompt", c.Prompt)
	targetT, _ := tmpl("target", c.Target)
	shareT, _ := tmpl("share_key", c.ShareKey)
	render := func(t *template.Template, row map[string]any, i int) (string, error) {
		var b strings.Builder
		if err := t.Execute(&b, row); err != nil {
			return "", fmt.Errorf("task %s: %s row %d: %w", c.Task, path, i+1, err)
		}
		return b.String(), nil
	}
	samples := make([]datasets.Sample, len(rows))
	targets := make([]string, len(rows))
	seen := map[string]int{}
	for i, row := range rows {
		s := datasets.Sample{Task: c.Task, References: refs[i]}
		if s.ID, err = render(idT, row, i); err != nil {
			return Loaded{}, err
		}
		if j, dup := seen[s.ID]; dup {
			return Loaded{}, fmt.Errorf("task %s: %s rows %d and %d: duplicate id %q", c.Task, path, j+1, i+1, s.ID)
		}
		seen[s.ID] = i
		if v, ok := row[verbatimPrompt].(string); ok {
			s.Prompt = v
		} else if s.Prompt, err = render(promptT, row, i); err != nil {
			return Loaded{}, err
		}
		if c.ShareKey != "" {
			if s.ShareKey, err = render(shareT, row, i); err != nil {
				return Loaded{}, err
			}
		}
		if c.Target != "" {
			if targets[i], err = render(targetT, row, i); err != nil {
				return Loaded{}, err
			}
		}
		samples[i] = s
	}
	if _, logged := rows[0][verbatimPrompt]; c.FewShot > 0 && !logged {
		addFewShot(samples, targets, c.FewShot, c.FewShotSeparator, c.FewShotSeed)
	}
	samples = selectSamples(samples, opt)
	return Loaded{Samples: samples, Skipped: skipped}, nil
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
	return samples
}

// rows reads the data file into template rows and JSON references.
func (c *Config) rows(path string, skipBad bool) ([]map[string]any, []json.RawMessage, int, error) {
	switch c.Loader {
	case "drop":
		if isLog(c.resolvePath(path)) {
			return c.logRows(c.resolvePath(path))
		}
		qs, err := drop.Load(c.resolvePath(path))
		if err != nil {
			return nil, nil, 0, fmt.Errorf("task %s: %w", c.Task, err)
		}
		rows := make([]map[string]any, len(qs))
		refs := make([]json.RawMessage, len(qs))
		for i, q := range qs {
			answers, err := scoredrop.Answers(q.Doc())
			if err != nil {
				return nil, nil, 0, fmt.Errorf("task %s: %s question %s: %w", c.Task, path, q.QueryID, err)
			}
			target := ""
			if len(answers) > 0 {
				target = strings.Join(answers[0], ", ")
			}
			rows[i] = map[string]any{"section_id": q.SectionID, "query_id": q.QueryID, "passage": q.Passage,
				"question": q.Question, "target": target}
			refs[i], _ = json.Marshal(answers)
		}
		return rows, refs, 0, nil
	default:
		var res jsonl.Result
		var err error
		if name, ok := strings.CutPrefix(path, "embedded:"); ok {
			b, rerr := builtinFS.ReadFile("builtin/" + name)
			if rerr != nil {
				return nil, nil, 0, fmt.Errorf("task %s: no embedded data %q", c.Task, name)
			}
			res, err = jsonl.Read(bytes.NewReader(b), path, skipBad)
		} else {
			res, err = jsonl.ReadFile(c.resolvePath(path), skipBad)
		}
		if err != nil {
			return nil, nil, 0, fmt.Errorf("task %s: %w", c.Task, err)
		}
		rows := make([]map[string]any, len(res.Rows))
		refs := make([]json.RawMessage, len(res.Rows))
		for i, row := range res.Rows {
			rows[i] = row
			if c.References == "" {
				refs[i] = json.RawMessage("[]")
				continue
			}
			v, ok := row[c.References]
			if !ok {
				err := fmt.Errorf("task %s: %s line %d: field %q missing", c.Task, path, res.Lines[i], c.References)
				if !skipBad {
					return nil, nil, 0, err
				}
				res.Skipped++
				rows[i] = nil
				continue
			}
			list, err := stringList(v)
			if err != nil {
				return nil, nil, 0, fmt.Errorf("task %s: %s line %d: field %q: %w", c.Task, path, res.Lines[i], c.References, err)
			}
			refs[i], _ = json.Marshal(list)
		}
		// Drop the rows skipped for a missing reference.
		var keptRows []map[string]any
		var keptRefs []json.RawMessage
		for i := range rows {
			if rows[i] != nil {
				keptRows, keptRefs = append(keptRows, rows[i]), append(keptRefs, refs[i])
			}
		}
		return keptRows, keptRefs, res.Skipped, nil
	}
}

// generates reports whether the loader builds samples itself.
func (c *Config) generates() bool {
	switch c.Loader {
	case "leval", "counting-stars", "pairwise-judge", "3c3h-judge":
		return true
	}
	return false
}

// generated loads samples whose prompts the benchmark's own loader builds.
// Every sample is put under the config's task name; the benchmark's own
// sub-task stays in the metadata.
func (c *Config) generated(path string, skipBad bool) ([]datasets.Sample, int, error) {
	var samples []datasets.Sample
	skipped := 0
	switch c.Loader {
	case "leval":
		l, err := leval.Load(path, leval.Options{MaxPromptTokens: c.MaxPromptTokens, Truncate: c.Truncate, SkipBad: skipBad})
		if err != nil {
			return nil, 0, err
		}
		samples, skipped = l.Samples, l.Skipped
	case "counting-stars":
		var err error
		samples, err = countingstars.Generate(countingstars.Options{Dir: path, Lang: c.Lang, TestType: c.TestType, M: c.Stars, Lengths: c.Lengths, Seed: c.Seed})
		if err != nil {
			return nil, 0, err
		}
	case "pairwise-judge":
		pairs, err := judge.LoadPairs(path)
		if err != nil {
			return nil, 0, err
		}
		samples = judge.PairwiseSamples(c.Task, pairs, judge.AlpacaEvalTemplate())
	case "3c3h-judge":
		if c.SystemPrompt == "" {
			return nil, 0, fmt.Errorf("field system_prompt: the judge system prompt file is needed (e.g. --set system_prompt=sp2.md)")
		}
		sys, err := os.ReadFile(c.resolvePath(c.SystemPrompt))
		if err != nil {
			return nil, 0, fmt.Errorf("read judge system prompt: %w", err)
		}
		q := c.Questions
		if q != "" {
			q = c.resolvePath(q)
		}
		entries, err := judge.LoadThreeC3H(q, path)
		if err != nil {
			return nil, 0, err
		}
		samples = judge.ThreeC3HSamples(c.Task, entries, string(sys))
	}
	for i := range samples {
		samples[i].Task = c.Task
	}
	return samples, skipped, nil
}

// verbatimPrompt is the row key under which a prompt is taken as it is
// (from an lm-evaluation-harness sample log), with no template or shots.
const verbatimPrompt = "__prompt"

// isLog reports whether path is an lm-evaluation-harness sample log.
func isLog(path string) bool {
	if !strings.HasSuffix(path, ".jsonl") && !strings.HasSuffix(path, ".jsonl.gz") {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return false
		}
		defer gz.Close()
		r = gz
	}
	line, _ := bufio.NewReaderSize(r, 1<<20).ReadBytes('\n')
	var row map[string]any
	return json.Unmarshal(line, &row) == nil && lmevallog.IsLog(row)
}

// logRows reads an lm-evaluation-harness DROP sample log: each doc is a
// Hugging Face EleutherAI/drop row, and the logged prompt is kept verbatim.
func (c *Config) logRows(path string) ([]map[string]any, []json.RawMessage, int, error) {
	recs, err := lmevallog.ReadFile(path)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("task %s: %w", c.Task, err)
	}
	rows := make([]map[string]any, len(recs))
	refs := make([]json.RawMessage, len(recs))
	for i, r := range recs {
		var row map[string]any
		if err := json.Unmarshal(r.Doc, &row); err != nil {
			return nil, nil, 0, fmt.Errorf("task %s: %s line %d: field \"doc\": %w", c.Task, path, r.Line, err)
		}
		answers, err := scoredrop.Answers(r.Doc)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("task %s: %s line %d: %w", c.Task, path, r.Line, err)
		}
		row[verbatimPrompt] = r.Prompt
		row["target"] = ""
		rows[i] = row
		refs[i], _ = json.Marshal(answers)
	}
	return rows, refs, 0, nil
}

func (c *Config) resolvePath(p string) string {
	if c.dir == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(c.dir, p)
}

func stringList(v any) ([]string, error) {
	switch x := v.(type) {
	case string:
		return []string{x}, nil
	case []any:
		out := make([]string, len(x))
		for i, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("element %d is %T, want a string", i, e)
			}
			out[i] = s
		}
		return out, nil
	case json.Number:
		return []string{x.String()}, nil
	}
	return nil, fmt.Errorf("is %T, want a string or a list of strings", v)
}
