package report

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"tally/generate"
	"tally/internal/atomicfile"
	"tally/scoring"
	"tally/tasks/lmeval"
)

// The lm-evaluation-harness layout, field for field as its own writer
// makes it (lm_eval/evaluator.py simple_evaluate and evaluate,
// lm_eval/evaluator_utils.py, lm_eval/loggers/evaluation_tracker.py
// save_results_aggregated and save_results_samples; release v0.4.9.2,
// commit ad3f4d0cad1cfcdb815f1e795f7947e49ed9f2e9, and the schema
// lm_eval/result_schema.py at commit
// 4e7e0d47f33bc71070c1d38394bafbb52b117163):
//
//	DIR/<model_name_sanitized>/results_<date_id>.json
//	DIR/<model_name_sanitized>/samples_<task>_<date_id>.jsonl
//
// date_id being datetime.isoformat() with ":" replaced by "-".
//
// A task is the tally task, under its own name. A stop setting is an
// lm-eval filter: lm-eval represents several post-processings of one
// generation as filters, and a stop setting is exactly that (the cut of
// the one raw continuation at the setting's first stop sequence). So the
// metric keys are "<metric>,<setting>" ("f1,nl", "f1,dot"), the samples
// file holds one line per (document, setting) with "filter" naming the
// setting, and the task's config lists one filter_list entry per setting
// ({"name": setting, "filter": [{"function": "tally_stop", "until":
// [...]}, {"function": "take_first"}]}). When a model's task was scored
// under several token budgets, the filter is "<setting>@<budget>".
// Metric names are the ones lm-eval's own task uses (scoring.LMEvalName:
// DROP's "drop.f1" is "f1"); tally's extra fields stay under the one key
// "tally".

// LMEvalFilter names a column's lm-eval filter: its stop setting, with
// "@budget" when the model's task was scored under several budgets.
func LMEvalFilter(c Column, manyBudgets bool) string {
	if manyBudgets {
		return fmt.Sprintf("%s@%d", c.Setting, c.Budget)
	}
	return c.Setting
}

var sanitizeModel = regexp.MustCompile(`["<>:/|\\?*\[\]]+`)

// SanitizeModelName is lm-eval's sanitize_model_name (lm_eval/utils.py),
// made safe as a folder name: control characters become "_", and a name
// that would be "", "." or ".." is prefixed with "_".
func SanitizeModelName(m string) string {
	return safeName(sanitizeModel.ReplaceAllString(m, "__"))
}

var unsafeTaskChars = regexp.MustCompile(`[^\p{L}\p{N}_\-.@+=,]`)

// SanitizeTaskName is a task name as the samples file name holds it:
// every character but letters, digits and _-.@+=, becomes "_" (no path
// separator), and "", "." and ".." are prefixed with "_", so that no task
// name leads a file out of its folder.
func SanitizeTaskName(t string) string {
	return safeName(unsafeTaskChars.ReplaceAllString(t, "_"))
}

// safeName replaces control characters and keeps a name from being a
// path of its own ("", ".", "..").
func safeName(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '/' || r == '\\' {
			return '_'
		}
		return r
	}, s)
	if s == "" || s == "." || s == ".." {
		s = "_" + s
	}
	return s
}

// LMEvalOptions are what lm-eval files say beyond the dataset.
type LMEvalOptions struct {
	// Version is tally's version.
	Version string
	// Start and End are when the evaluation started and ended (date,
	// total_evaluation_time_seconds); Now names the
	// files (date_id). Zero values are Now.
	Start, End, Now time.Time
	// Models holds, by fingerprint, what the model's run said of itself.
	Models map[string]LMEvalModel
}

// LMEvalModel is what a model's run says of itself in lm-eval's config.
type LMEvalModel struct {
	// Device and BatchSize are the --device and --concurrency given
	// (empty, 0: not given).
	Device    string
	BatchSize int
	// ChatTemplate is the chat template's source when the run prompted
	// through one that tally rendered (native models); "" when none, or
	// when a server applied its own.
	ChatTemplate string
	// Backend names the engine (gomlx, ollama, openai, imported).
	Backend string
}

// LMEvalSample is one line of samples_<task>_<date>.jsonl, as lm-eval
// writes it (arguments flattened to gen_args_N/arg_M, target a string,
// metric values as top-level keys). Tally adds the "tally" object, which
// lm-eval's readers ignore and tally import uses to restore the run
// exactly.
type LMEvalSample struct {
	DocID         int                       `json:"doc_id"`
	Doc           json.RawMessage           `json:"doc"`
	Target        string                    `json:"target"`
	Arguments     map[string]map[string]any `json:"arguments"`
	Resps         [][]string                `json:"resps"`
	FilteredResps []any                     `json:"filtered_resps"`
	Filter        string                    `json:"filter"`
	Metrics       []string                  `json:"metrics"`
	DocHash       string                    `json:"doc_hash"`
	PromptHash    string                    `json:"prompt_hash"`
	TargetHash    string                    `json:"target_hash"`
	Tally         *TallyExtra               `json:"tally,omitempty"`
	// MetricValues are the per-sample metric values: a float, or for a
	// corpus metric (bleu, chrf, ter) the [reference, prediction] pair
	// lm-eval's process_results gives.
	MetricValues map[string]any `json:"-"`
}

// TallyExtra is what tally keeps beside an lm-eval sample line: enough to
// restore the sample, its raw generation and its scores exactly.
type TallyExtra struct {
	Task        string `json:"task"`
	SampleID    string `json:"sample_id"`
	Model       string `json:"model"`
	Fingerprint string `json:"fingerprint"`
	Chat        bool   `json:"chat,omitempty"`
	Setting     string `json:"setting"`
	// Seqs are the setting's stop sequences, Budget its token budget.
	Seqs   []string `json:"seqs"`
	Budget int      `json:"budget"`
	// Raw is the raw continuation (already cut when Imported).
	Raw          string `json:"raw"`
	Finish       string `json:"finish"`
	Error        string `json:"error,omitempty"`
	PromptTokens int    `json:"prompt_tokens,omitempty"`
	// Failed is why the sample failed ("": scored); it counts as 0.
	Failed   string `json:"failed,omitempty"`
	Imported bool   `json:"imported,omitempty"`
	// Metadata is the sample's own metadata, Notes its notes
	// (datasets.Sample.Notes).
	Metadata   json.RawMessage   `json:"metadata,omitempty"`
	Notes      map[string]string `json:"notes,omitempty"`
	References json.RawMessage   `json:"references"`
	// Scores are the sample's values under tally's metric names (null:
	// undefined); absent for a failed sample.
	Scores map[string]*float64 `json:"scores,omitempty"`
}

// MarshalJSON writes the line as lm-eval's save_results_samples does
// (json.dumps(sample, ensure_ascii=False): its members in lm-eval's order,
// ", " and ": " between them, floats as Python writes them), the metric
// values as top-level members after target_hash (example.update(metrics)),
// in the order of metrics, then tally's object.
func (s LMEvalSample) MarshalJSON() ([]byte, error) {
	o := newPyObject()
	o.set("doc_id", s.DocID).set("doc", s.Doc).set("target", s.Target)
	args := newPyObject()
	for _, k := range slices.Sorted(maps.Keys(s.Arguments)) {
		a := newPyObject()
		for _, ak := range slices.Sorted(maps.Keys(s.Arguments[k])) {
			a.set(ak, s.Arguments[k][ak])
		}
		args.set(k, a)
	}
	o.set("arguments", args).set("resps", s.Resps).set("filtered_resps", s.FilteredResps).set("filter", s.Filter).
		set("metrics", nonNil(s.Metrics)).set("doc_hash", s.DocHash).set("prompt_hash", s.PromptHash).set("target_hash", s.TargetHash)
	for _, m := range s.Metrics {
		if v, ok := s.MetricValues[m]; ok {
			o.set(m, v)
		}
	}
	for _, m := range slices.Sorted(maps.Keys(s.MetricValues)) {
		if _, ok := o.get(m); !ok {
			o.set(m, s.MetricValues[m])
		}
	}
	if s.Tally != nil {
		o.set("tally", s.Tally)
	}
	return pyEncode(o, false)
}

// marshalPy marshals as Python's json.dumps(ensure_ascii=False) does
// where it matters for hashes and readers: no HTML escaping of <, >, &.
func marshalPy(v any, indent bool) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func hashString(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// jsonFloat writes NaN as lm-eval does ("N/A").
func jsonFloat(v float64) any {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "N/A"
	}
	return v
}

// lmevalModel is one model's part of the files: its columns per task.
type lmevalModel struct {
	fp, name, dtype string
	chat            bool
	tasks           []*lmevalTask
}

type lmevalTask struct {
	td      *TaskData
	cols    []int    // column indices of this model
	metrics []string // tally metric keys written
	// groups are the lm-eval filters: per column, one for the plain
	// metrics (named after the stop setting) and one per lm-eval filter
	// the task's metric keys name ("exact_match,strict-match").
	groups []lmevalGroup
	// items are, for a metric a Python function aggregates, the samples
	// file's values by "METRIC,FILTER" (the file's filter name), in the
	// file's order: what the function aggregates.
	items map[string][]any
}

// lmevalGroup is one lm-eval filter of a model's task: a column and the
// metric keys scored under it.
type lmevalGroup struct {
	col     int    // column index
	part    string // the lm-eval filter a "METRIC,FILTER" key names, "" for plain keys
	filter  string // the filter's name in the files
	metrics []string
}

// splitKey splits a tally metric key into lm-eval's metric name and the
// lm-eval filter it names ("exact_match,strict-match", as a task read from
// an lm-eval YAML scores), or the key's lm-eval name and "".
func splitKey(key string) (metric, part string) {
	if i := strings.LastIndexByte(key, ','); i > 0 {
		// A metric a Python function aggregates is stored as a corpus
		// metric of its own name (lmeval.DeferredPrefix).
		return strings.TrimPrefix(key[:i], lmeval.DeferredPrefix), key[i+1:]
	}
	return scoring.LMEvalName(key), ""
}

// groupOf is the group of a column and metric key.
func (t *lmevalTask) groupOf(ci int, key string) *lmevalGroup {
	_, part := splitKey(key)
	for i := range t.groups {
		if g := &t.groups[i]; g.col == ci && g.part == part {
			return g
		}
	}
	return nil
}

// WriteLMEval writes the dataset in lm-eval's layout under dir: per model
// (fingerprint), one results file and one samples file per task, every
// file created through one os.Root on dir (no name leaves it, no symlink
// is followed out of it). It returns the paths written.
func WriteLMEval(dir string, ds *Dataset, opt LMEvalOptions) ([]string, error) {
	if opt.Now.IsZero() {
		opt.Now = time.Now()
	}
	if opt.Start.IsZero() {
		opt.Start = opt.Now
	}
	if opt.End.IsZero() {
		opt.End = opt.Now
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("write lm-eval files: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("write lm-eval files: %w", err)
	}
	defer root.Close()
	models := lmevalLayers(lmevalModels(ds))
	// Models (and a model's variants of one task) that share a folder get
	// distinct date ids (a microsecond apart), so that no file of one
	// replaces another's.
	folders := map[string]int{}
	var written []string
	for _, m := range models {
		folder := SanitizeModelName(m.name)
		now := opt.Now.Add(time.Duration(folders[folder]) * time.Microsecond)
		folders[folder]++
		paths, err := writeModel(root, dir, folder, now, m, opt)
		written = append(written, paths...)
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

// lmevalLayers splits each model's files into as many results files as
// it has variants of one task: lm-eval's results file holds a task once,
// and lm-eval names a task run with other settings as another run (its
// own date id). A model's first variant of each task goes in its first
// file, its second in its second, and so on, in the dataset's order.
func lmevalLayers(models []*lmevalModel) []*lmevalModel {
	var out []*lmevalModel
	for _, m := range models {
		var layers []*lmevalModel
		for _, t := range m.tasks {
			i := 0
			for i < len(layers) && slices.ContainsFunc(layers[i].tasks, func(o *lmevalTask) bool { return o.td.Name() == t.td.Name() }) {
				i++
			}
			if i == len(layers) {
				l := *m
				l.tasks = nil
				layers = append(layers, &l)
			}
			layers[i].tasks = append(layers[i].tasks, t)
		}
		out = append(out, layers...)
	}
	return out
}

// lmevalModels groups the dataset's columns by model fingerprint. A task
// whose prompts the store does not hold (TaskData.PromptsLost) has no
// lm-eval files: lm-eval's lines pair each prompt with its response.
func lmevalModels(ds *Dataset) []*lmevalModel {
	var out []*lmevalModel
	byFP := map[string]*lmevalModel{}
	for _, td := range ds.Tasks {
		if td.PromptsLost() {
			continue
		}
		perModel := map[string]*lmevalTask{}
		for ci, c := range td.Columns {
			m := byFP[c.Fingerprint]
			if m == nil {
				m = &lmevalModel{fp: c.Fingerprint, name: c.Model, chat: c.Chat, dtype: c.DType}
				byFP[c.Fingerprint] = m
				out = append(out, m)
			}
			t := perModel[c.Fingerprint]
			if t == nil {
				t = &lmevalTask{td: td}
				perModel[c.Fingerprint] = t
				m.tasks = append(m.tasks, t)
			}
			t.cols = append(t.cols, ci)
		}
		for _, t := range perModel {
			budgets := map[int]bool{}
			for _, ci := range t.cols {
				budgets[td.Columns[ci].Budget] = true
			}
			for _, m := range td.Metrics {
				if _, _, stat := scoring.ParseCorpusStatKey(m); stat {
					continue // a corpus metric's statistic, written as the metric
				}
				if m != generate.Unscorable && m != generate.NoneScored {
					t.metrics = append(t.metrics, m)
				}
			}
			if td.Info != nil && td.Info.LMEval != nil {
				// lm-eval's order: its filters as filter_list lists them,
				// each with the metrics as metric_list lists them.
				slices.SortStableFunc(t.metrics, func(a, b string) int {
					return cmp.Compare(lmevalRank(td.Info.LMEval, a), lmevalRank(td.Info.LMEval, b))
				})
			}
			own := ""
			if td.Info != nil {
				own = td.Info.OwnSetting
			}
			seen := map[string]int{}
			for _, ci := range t.cols {
				c := td.Columns[ci]
				var parts []string
				for _, m := range t.metrics {
					if _, part := splitKey(m); !slices.Contains(parts, part) {
						parts = append(parts, part)
					}
				}
				if len(parts) == 0 {
					parts = []string{""}
				}
				for _, part := range parts {
					f := LMEvalFilter(c, len(budgets) > 1)
					if part != "" {
						f = part
						if c.Setting != own || len(budgets) > 1 {
							f = part + "@" + LMEvalFilter(c, len(budgets) > 1)
						}
					}
					if seen[f]++; seen[f] > 1 {
						f += "#" + strconv.Itoa(seen[f])
					}
					g := lmevalGroup{col: ci, part: part, filter: f}
					for _, m := range t.metrics {
						if _, p := splitKey(m); p == part {
							g.metrics = append(g.metrics, m)
						}
					}
					t.groups = append(t.groups, g)
				}
			}
		}
	}
	return out
}

// customAggregation reports whether an lm-eval task aggregates a metric
// with a function of its own (RULER's aggregate_metrics), not mean or a
// corpus metric's.
func customAggregation(lm *lmeval.Task, metric string) bool {
	for _, m := range lm.Metrics() {
		if m.Name == metric {
			_, corpus := scoring.Corpus(m.Name)
			// bleu, chrf, ter aggregate as themselves (with a bootstrap
			// stderr); a corpus metric under a function of the task's
			// (IFEval's agg_inst_level_acc) has none.
			return m.Aggregation != "mean" && !(corpus && m.Aggregation == m.Name)
		}
	}
	return false
}

// lmevalRank orders a "METRIC,FILTER" key of an lm-eval task as lm-eval
// writes its keys: by the filter's place in filter_list, then the
// metric's in metric_list (keys it does not name last).
func lmevalRank(lm *lmeval.Task, key string) int {
	metric, part := splitKey(key)
	fi, mi := slices.Index(lm.Filters(), part), slices.IndexFunc(lm.Metrics(), func(m lmeval.Metric) bool { return m.Name == metric })
	if fi < 0 {
		fi = len(lm.Filters())
	}
	if mi < 0 {
		mi = len(lm.Metrics())
	}
	return fi*(len(lm.Metrics())+1) + mi
}

// writeModel writes one model's samples files and results file, its
// members in the order lm-eval 4e7e0d47's writer puts them
// (EvalAcc._to_eval_results, simple_evaluate, add_env_info,
// EvaluationTracker.save_results_aggregated with the GeneralConfigTracker
// dataclass), floats as Python writes them.
func writeModel(root *os.Root, dir, folder string, now time.Time, m *lmevalModel, opt LMEvalOptions) ([]string, error) {
	if err := root.MkdirAll(folder, 0o755); err != nil {
		return nil, fmt.Errorf("write lm-eval files: %w", err)
	}
	dateID := strings.ReplaceAll(now.Format("2006-01-02T15:04:05.000000"), ":", "-")
	results, configs, versions, nshot, hib, nsamples, groups, hashes := newPyObject(), newPyObject(), newPyObject(),
		newPyObject(), newPyObject(), newPyObject(), newPyObject(), newPyObject()
	tallyTasks := map[string]any{}
	var written []string
	variants := map[string]any{}
	fewshotSeed := int64(lmeval.DefaultFewshotSeed)
	for _, t := range m.tasks {
		td := t.td
		task := td.Name() // a results file holds one variant of a task (lmevalLayers)
		if td.Variant != nil {
			variants[td.Task] = td.Variant
		}
		lm := (*lmeval.Task)(nil)
		if td.Info != nil {
			lm = td.Info.LMEval
		}
		if lm != nil {
			fewshotSeed = lm.FewshotSeed()
		}
		name := filepath.Join(folder, "samples_"+SanitizeTaskName(task)+"_"+dateID+".jsonl")
		hash, n, lastLen, lines, err := writeSamples(root, name, m, t)
		if err != nil {
			return written, err
		}
		written = append(written, filepath.Join(dir, name))
		hashes.set(task, hash)
		alias := task
		if lm != nil && lm.Alias() != "" {
			alias = lm.Alias()
		}
		res := newPyObject().set("name", task).set("alias", alias)
		taskHib := newPyObject()
		if lm != nil {
			for _, mt := range lm.Metrics() {
				taskHib.set(mt.Name, mt.HigherIsBetter)
			}
		}
		sampleLen := 0
		failed := map[string]int{}
		values := map[string]any{}
		for _, r := range td.Rows {
			for _, ci := range t.cols {
				c := td.Columns[ci]
				if r.Setting != c.Label || r.Model != c.Model {
					continue
				}
				sampleLen = max(sampleLen, r.N)
				g := t.groupOf(ci, r.Metric)
				if g == nil || !slices.Contains(t.metrics, r.Metric) {
					for _, g := range t.groups {
						if g.col == ci {
							failed[g.filter] = max(failed[g.filter], r.Failed)
						}
					}
					continue
				}
				failed[g.filter] = max(failed[g.filter], r.Failed)
				lmName, _ := splitKey(r.Metric)
				values[lmName+","+g.filter] = jsonFloat(float64(r.Mean.Estimate))
				values[lmName+"_stderr,"+g.filter] = jsonFloat(float64(r.Stderr))
				if lm != nil && customAggregation(lm, lmName) {
					// stderr_for_metric has none for an aggregation of the
					// task's own.
					values[lmName+"_stderr,"+g.filter] = "N/A"
				}
				if _, ok := taskHib.get(lmName); !ok {
					taskHib.set(lmName, true)
				}
			}
		}
		if lm != nil {
			sampleLen = lastLen // lm-eval's: the last metric's count
			// A metric a Python function aggregates (the bridge): the
			// function on the samples file's values, as lm-eval
			// aggregates them; its stderr, as lm-eval's for a function of
			// the task's, N/A.
			for _, g := range t.groups {
				for _, mk := range g.metrics {
					lmName, _ := splitKey(mk)
					key := lmName + "," + g.filter
					v, ok, err := lm.Aggregate(lmName, t.items[key])
					if !ok {
						continue
					}
					if err != nil {
						return written, fmt.Errorf("task %s: %s: %w", task, key, err)
					}
					if f, isFloat := v.(float64); isFloat {
						v = jsonFloat(f)
					}
					values[key], values[lmName+"_stderr,"+g.filter] = v, "N/A"
				}
			}
		}
		res.set("sample_len", sampleLen)
		// lm-eval's order: filter by filter, each metric then its stderr.
		for _, g := range t.groups {
			for _, mk := range g.metrics {
				lmName, _ := splitKey(mk)
				for _, k := range []string{lmName + "," + g.filter, lmName + "_stderr," + g.filter} {
					if v, ok := values[k]; ok {
						res.set(k, v)
					}
				}
			}
		}
		results.set(task, res)
		hib.set(task, taskHib)
		// lm-eval's task.VERSION: metadata.version, else ConfigurableTask's
		// "Yaml" (a tally task, configured by YAML too, the same).
		var version any = "Yaml"
		fewshot := 0
		if td.Info != nil {
			if td.Info.Version != nil {
				version = td.Info.Version
			}
			fewshot = td.Info.FewShot
		}
		versions.set(task, version)
		nshot.set(task, fewshot)
		original := td.Total
		if original < n {
			original = n
		}
		effective := n
		if lm != nil {
			effective = sampleLen // lm-eval's effective is its sample_len
		}
		nsamples.set(task, newPyObject().set("original", original).set("effective", effective))
		configs.set(task, taskConfig(t, m))
		metricNames := map[string]string{}
		for _, mk := range t.metrics {
			lmName, _ := splitKey(mk)
			metricNames[lmName] = mk
		}
		filters := map[string]any{}
		for _, g := range t.groups {
			c := td.Columns[g.col]
			filters[g.filter] = map[string]any{"setting": c.Setting, "seqs": nonNil(c.Seqs()), "budget": c.Budget, "lm_eval_filter": g.part,
				"samples": lines[g.filter]} // what an import checks the file against
		}
		tallyTasks[task] = map[string]any{"metrics": metricNames, "filters": filters, "failed": failed, "variant": td.Task, "label": td.label()}
	}
	mo := opt.Models[m.fp]
	var limit any
	for _, t := range m.tasks {
		if t.td.Limit > 0 {
			limit = pyFloat(t.td.Limit) // lm-eval's --limit is a float
		}
	}
	var batch any
	if mo.BatchSize > 0 {
		batch = mo.BatchSize
	}
	var device any
	if mo.Device != "" {
		device = mo.Device
	}
	var tmpl, tmplSHA any
	if mo.ChatTemplate != "" {
		tmpl, tmplSHA = mo.ChatTemplate, hashString(mo.ChatTemplate)
	}
	// configs, versions, n-shot and higher_is_better by task name, as
	// lm-eval sorts them; results and n-samples in the tasks' order.
	sortObj := func(o *pyObject) *pyObject { slices.Sort(o.keys); return o }
	out := newPyObject()
	out.set("results", results)
	out.set("group_subtasks", groups)
	out.set("configs", sortObj(configs))
	out.set("versions", sortObj(versions))
	out.set("n-shot", sortObj(nshot))
	out.set("higher_is_better", sortObj(hib))
	out.set("n-samples", nsamples)
	config := newPyObject().set("model", "tally").set("model_args", newPyObject().set("pretrained", m.name))
	// model_dtype is what an HF model's get_model_info adds (null when
	// tally does not know it: a server's model).
	var dtype any
	if m.dtype != "" {
		dtype = m.dtype
	}
	config.set("model_dtype", dtype)
	// The seeds are lm-eval's command line's defaults (tally draws no
	// random numbers but the few-shot sampler's, whose seed is its own).
	config.set("batch_size", batch).set("batch_sizes", []int{}).set("device", device).set("use_cache", nil).
		set("limit", limit).set("bootstrap_iters", 100000).set("gen_kwargs", newPyObject()).
		set("random_seed", 0).set("numpy_seed", 1234).set("torch_seed", 1234).set("fewshot_seed", fewshotSeed)
	out.set("config", config)
	out.set("git_hash", nil)
	out.set("date", pyFloat(unixSeconds(opt.Start)))
	out.set("pretty_env_info", "N/A (torch not installed)")
	out.set("transformers_version", "N/A")
	out.set("lm_eval_version", "N/A (written by tally "+opt.Version+")")
	out.set("upper_git_hash", nil)
	out.set("task_hashes", hashes)
	out.set("model_source", "tally")
	out.set("model_name", m.name)
	out.set("model_name_sanitized", SanitizeModelName(m.name))
	out.set("system_instruction", nil).set("system_instruction_sha", nil)
	// lm-eval's command line leaves fewshot_as_multiturn None without a
	// chat template; tally's chat prompts put the shots in one message.
	var multiturn any
	if m.chat {
		multiturn = false
	}
	out.set("fewshot_as_multiturn", multiturn)
	out.set("chat_template", tmpl).set("chat_template_sha", tmplSHA)
	out.set("total_evaluation_time_seconds", strconv.FormatFloat(opt.End.Sub(opt.Start).Seconds(), 'f', -1, 64))
	out.set("tally", map[string]any{"version": opt.Version, "fingerprint": m.fp, "chat": m.chat, "backend": mo.Backend, "tasks": tallyTasks, "variants": variants})
	b, err := pyEncode(out, true)
	if err != nil {
		return written, fmt.Errorf("write lm-eval results: %w", err)
	}
	name := filepath.Join(folder, "results_"+dateID+".json")
	if err := atomicfile.WriteIn(root, name, b); err != nil { // whole or not at all
		return written, fmt.Errorf("write lm-eval results: %w", err)
	}
	return append(written, filepath.Join(dir, name)), nil
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// taskConfig is configs[task]: lm-eval's TaskConfig.to_dict() fields.
// A task read from an lm-eval task file writes lm-eval's own
// (lmeval.Task.ToDict, its metadata with the model's arguments as
// lm-eval merges them and config_source "inline", as for a task file
// given on lm-eval's command line); its filter_list gains an entry per
// other stop setting (FILTER@SETTING, tally's cut before the pipeline).
// A tally task writes its own values under the same fields.
func taskConfig(t *lmevalTask, m *lmevalModel) any {
	td := t.td
	info := td.Info
	if info == nil {
		info = &TaskInfo{}
	}
	if info.LMEval != nil {
		cfg := info.LMEval.ToDict(runtimeMeta(m.name), lmeval.ConfigSourceInline)
		var extra []any
		for _, g := range t.groups {
			c := td.Columns[g.col]
			if g.part != "" && c.Setting == info.OwnSetting && g.filter == g.part {
				continue // one of the task's own filters, as the file lists it
			}
			pipeline := []any{map[string]any{"function": "tally_stop", "until": nonNil(c.Seqs()), "max_gen_toks": c.Budget}}
			if own, ok := info.Filters[g.part]; ok && g.part != "" {
				for _, f := range own {
					pipeline = append(pipeline, f)
				}
			} else {
				pipeline = append(pipeline, map[string]any{"function": "take_first"})
			}
			extra = append(extra, newPyObject().set("name", g.filter).set("filter", pipeline))
		}
		if len(extra) > 0 {
			var list []any
			if fl, ok := cfg.Get("filter_list"); ok {
				list, _ = fl.([]any)
			}
			list = append(list, extra...)
			if _, ok := cfg.Get("filter_list"); !ok {
				cfg.Set("filter_list", list)
				// filter_list's place in TaskConfig's order.
				moveBefore(cfg, "filter_list", "should_decontaminate")
			} else {
				cfg.Set("filter_list", list)
			}
		}
		return cfg
	}
	cfg := map[string]any{}
	for k, v := range info.LMEvalConfig {
		cfg[k] = v
	}
	set := func(k string, v any) {
		if _, ok := cfg[k]; !ok {
			cfg[k] = v
		}
	}
	set("task", td.Name())
	if info.Data != "" {
		set("dataset_path", info.Data)
	}
	if info.Prompt != "" {
		set("doc_to_text", info.Prompt)
	}
	if info.Target != "" {
		set("doc_to_target", info.Target)
	}
	set("unsafe_code", false)
	set("description", "")
	if info.LMEvalConfig != nil {
		set("target_delimiter", " ") // lm-eval's TaskConfig default
	} else {
		set("target_delimiter", "") // tally's target template holds its own space
	}
	sep := info.FewShotSeparator
	if sep == "" {
		sep = "\n\n"
	}
	set("fewshot_delimiter", sep)
	set("num_fewshot", info.FewShot)
	metricList := []map[string]any{}
	seenMetric := map[string]bool{}
	for _, mk := range t.metrics {
		if lmName, _ := splitKey(mk); !seenMetric[lmName] {
			seenMetric[lmName] = true
			metricList = append(metricList, map[string]any{"metric": lmName, "aggregation": "mean", "higher_is_better": true})
		}
	}
	set("metric_list", metricList)
	set("output_type", "generate_until")
	maxBudget := 0
	for _, ci := range t.cols {
		maxBudget = max(maxBudget, td.Columns[ci].Budget)
	}
	// filter_list names every filter the files use: a stop setting's cut
	// (tally_stop), then the lm-eval filter pipeline its metric keys
	// name, if any (the task's own setting is the lm-eval task's own
	// generation: no cut of tally's before its pipeline).
	var filterList []map[string]any
	for _, g := range t.groups {
		c := td.Columns[g.col]
		var pipeline []map[string]any
		if g.part == "" || c.Setting != info.OwnSetting {
			pipeline = append(pipeline, map[string]any{"function": "tally_stop", "until": nonNil(c.Seqs()), "max_gen_toks": c.Budget})
		}
		if own, ok := info.Filters[g.part]; ok && g.part != "" {
			pipeline = append(pipeline, own...)
		} else {
			pipeline = append(pipeline, map[string]any{"function": "take_first"})
		}
		filterList = append(filterList, map[string]any{"name": g.filter, "filter": pipeline})
	}
	cfg["filter_list"] = filterList
	set("generation_kwargs", map[string]any{"until": sharedSeqs(td, t.cols), "max_gen_toks": maxBudget, "do_sample": false, "temperature": 0.0})
	set("repeats", 1)
	set("should_decontaminate", false)
	if info.Version != nil {
		set("metadata", map[string]any{"version": info.Version})
	}
	// In TaskConfig's field order, as lm-eval writes a config.
	out := newPyObject()
	for _, k := range lmeval.TaskConfigFields() {
		if v, ok := cfg[k]; ok {
			out.set(k, v)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		if _, ok := out.get(k); !ok {
			out.set(k, cfg[k])
		}
	}
	return out
}

// runtimeMeta is what lm-eval's command line merges into every task's
// metadata: its model arguments (tally's model as pretrained).
func runtimeMeta(model string) *lmeval.Map {
	m := lmeval.NewMap()
	m.Set("pretrained", model)
	return m
}

// moveBefore moves key to just before other in m (when both are there).
func moveBefore(m *lmeval.Map, key, other string) {
	i, j := slices.Index(m.Keys, key), slices.Index(m.Keys, other)
	if i < 0 || j < 0 {
		return
	}
	keys := slices.Delete(slices.Clone(m.Keys), i, i+1)
	j = slices.Index(keys, other)
	m.Keys = slices.Insert(keys, j, key)
}

// sharedSeqs are the stop sequences every one of the columns has: the
// only ones a generation serving them all may stop on (lm-eval's until).
func sharedSeqs(td *TaskData, cols []int) []string {
	out := []string{}
	if len(cols) == 0 {
		return out
	}
	for _, q := range td.Columns[cols[0]].Seqs() {
		all := true
		for _, ci := range cols[1:] {
			all = all && slices.Contains(td.Columns[ci].Seqs(), q)
		}
		if all {
			out = append(out, q)
		}
	}
	return out
}

// writeSamples writes a model's samples file of a task: per filter (in
// column order), one line per sample in document order, as lm-eval
// iterates; it returns lm-eval's task hash (the hash of every line's
// doc, prompt and target hashes, in order), the number of documents and
// the lines written per filter.
//
// lastLen is lm-eval's sample_len: the number of values of the
// (metric, filter) its lines name last for the first time (evaluator_utils
// _compute_task_aggregations keeps the last one's count), which for a
// task whose process_results leaves a metric out of some lines is not the
// number of documents.
func writeSamples(root *os.Root, name string, m *lmevalModel, t *lmevalTask) (hash string, n, lastLen int, lines map[string]int, err error) {
	f, err := atomicfile.CreateIn(root, name) // whole or not at all
	if err != nil {
		return "", 0, 0, nil, fmt.Errorf("write lm-eval samples: %w", err)
	}
	w := bufio.NewWriter(f)
	td := t.td
	var samples []*SampleData
	for _, sd := range td.Samples {
		if sd.Fingerprint == m.fp {
			samples = append(samples, sd)
		}
	}
	docIDs := docIndices(samples)
	order := make([]int, len(samples))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(docIDs[a], docIDs[b]) })
	maxBudget := 0
	for _, ci := range t.cols {
		maxBudget = max(maxBudget, td.Columns[ci].Budget)
	}
	// Each request's generation kwargs: an lm-eval task's own, as its
	// requests carry them (arguments' arg_1); for a tally task, what the
	// one generation serving every setting ran under.
	until := sharedSeqs(td, t.cols)
	var kwargs any = newPyObject().set("until", until).set("max_gen_toks", maxBudget).set("do_sample", false).set("temperature", 0.0)
	if td.Info != nil && td.Info.LMEval != nil {
		kwargs = td.Info.LMEval.GenerationKwargs()
	}
	var hashes strings.Builder
	docs := map[int]bool{}
	lines = map[string]int{}
	counts := map[string]int{}
	last := ""
	var werr error
	for gi := range t.groups {
		g := &t.groups[gi]
		for _, i := range order {
			sd := samples[i]
			sc := sd.Under[g.col]
			if sc == nil {
				continue
			}
			docs[i] = true
			lines[g.filter]++
			line := lmevalLine(docIDs[i], td, g, sd, sc, kwargs, response(td, sd, sc, until))
			hashes.WriteString(line.DocHash + line.PromptHash + line.TargetHash)
			for _, mk := range line.Metrics {
				k := mk + "," + line.Filter
				if counts[k] == 0 {
					last = k
				}
				counts[k]++
				if td.Info != nil && td.Info.LMEval != nil && td.Info.LMEval.PythonAggregated(mk) {
					if t.items == nil {
						t.items = map[string][]any{}
					}
					t.items[k] = append(t.items[k], line.MetricValues[mk])
				}
			}
			b, err := line.MarshalJSON() // as written: json.Marshal would compact it
			if err != nil {
				werr = fmt.Errorf("write lm-eval sample %s: %w", sd.ID, err)
				break
			}
			w.Write(b)
			w.WriteByte('\n')
		}
	}
	if werr = errors.Join(werr, w.Flush()); werr != nil {
		f.Abort()
		return "", 0, 0, nil, fmt.Errorf("write %s: %w", name, werr)
	}
	if err := f.Commit(); err != nil {
		return "", 0, 0, nil, err
	}
	return hashString(hashes.String()), len(docs), counts[last], lines, nil
}

// docIndices are the samples' document indices (lm-eval's doc_id): their
// indices in the task's data when every one is known, else their ids when
// every id is a number, else the rank of each id among the samples' (ids
// numerically when they are numbers). Distinct samples get distinct ids
// (a model's samples have distinct ids).
func docIndices(samples []*SampleData) []int {
	out := make([]int, len(samples))
	indexed, numeric := true, true
	seen := map[int]bool{}
	for i, sd := range samples {
		indexed = indexed && sd.Index >= 0 && !seen[sd.Index]
		seen[sd.Index] = true
		n, err := strconv.Atoi(sd.ID)
		numeric = numeric && err == nil && n >= 0
		out[i] = n
	}
	switch {
	case indexed:
		for i, sd := range samples {
			out[i] = sd.Index
		}
	case numeric:
	default:
		order := make([]int, len(samples))
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int { return compareIDs(samples[a].ID, samples[b].ID) })
		for r, i := range order {
			out[i] = r
		}
	}
	return out
}

// targetText is lm-eval's target (str(doc_to_target(doc))): the target
// the task rendered, else the first gold answer (a list of spans joined
// by ", ", as tally's DROP target is), else the references as JSON.
func targetText(sd *SampleData) string {
	if sd.Target != nil {
		return *sd.Target
	}
	var s string
	if json.Unmarshal(sd.Refs, &s) == nil {
		return s
	}
	var list []string
	if json.Unmarshal(sd.Refs, &list) == nil && len(list) > 0 {
		return list[0]
	}
	var spans [][]string
	if json.Unmarshal(sd.Refs, &spans) == nil && len(spans) > 0 {
		return strings.Join(spans[0], ", ")
	}
	return string(sd.Refs)
}

// docOf is lm-eval's doc: the data row the sample was made from, else
// (a sample stored by an older tally, or built by a loader of its own)
// the sample's metadata with its id and references.
func docOf(sd *SampleData) json.RawMessage {
	if len(sd.Doc) > 0 && sd.Doc[0] == '{' {
		return sd.Doc
	}
	doc := map[string]any{}
	_ = json.Unmarshal(sd.Metadata, &doc)
	if doc == nil {
		doc = map[string]any{}
	}
	doc["id"] = sd.ID
	var refs any
	_ = json.Unmarshal(sd.Refs, &refs)
	doc["references"] = refs
	b, _ := marshalPy(doc, false)
	return b
}

// response is what lm-eval's model returned for a sample's request (a
// samples file line's resps): for a task read from an lm-eval task file,
// the continuation cut at the line's stop setting (at its own until, for
// its own setting: what its filters take); for a tally task, the one
// generation serving every setting, cut only at the sequences they share
// (the request's until) — each setting's cut is its filtered_resps.
func response(td *TaskData, sd *SampleData, sc *Scored, until []string) string {
	if td.Info != nil && td.Info.LMEval != nil {
		return sc.Prediction
	}
	if m, ok := generate.FindStop(sd.Text, until); ok && !sd.Imported {
		return sd.Text[:m.Offset]
	}
	return sd.Text
}

func lmevalLine(docID int, td *TaskData, g *lmevalGroup, sd *SampleData, sc *Scored, kwargs any, resp string) LMEvalSample {
	c := td.Columns[g.col]
	doc := docOf(sd)
	target := targetText(sd)
	// lm-eval hashes json.dumps(doc, indent=2, ensure_ascii=False), the
	// document's members in their order.
	docJSON, err := pyDumpsIndent(doc)
	if err != nil {
		docJSON = string(doc)
	}
	filtered := sc.Prediction
	var filteredVal any = filtered
	if td.Info != nil && td.Info.LMEval != nil && g.part != "" && sc.Failed == "" {
		// The lm-eval filter's output on what the line's setting made of
		// the continuation, as lm-eval's samples file writes it: a str
		// after take_first, else the list of the document's responses.
		if v, err := td.Info.LMEval.FilteredValue(g.part, sc.Prediction, sd.Doc); err == nil {
			filtered, filteredVal = lmeval.PyStr(v), sanitizeList(v)
		}
	}
	line := LMEvalSample{
		DocID: docID, Doc: doc, Target: target,
		Arguments: map[string]map[string]any{"gen_args_0": {"arg_0": sd.Prompt, "arg_1": kwargs}},
		Resps:     [][]string{{resp}}, FilteredResps: []any{filteredVal}, Filter: g.filter, Metrics: []string{},
		DocHash: hashString(docJSON), PromptHash: hashString(sd.Prompt), TargetHash: hashString(target),
		MetricValues: map[string]any{},
		Tally: &TallyExtra{Task: td.Task, SampleID: sd.ID, Model: c.Model, Fingerprint: c.Fingerprint, Chat: c.Chat, Setting: c.Setting,
			Seqs: nonNil(c.Seqs()), Budget: c.Budget, Raw: sd.Text, Finish: sd.Finish, Error: sd.Error, PromptTokens: sd.PromptTokens,
			Failed: sc.Failed, Imported: sd.Imported, Metadata: sd.Metadata, Notes: sd.Notes, References: sd.Refs},
	}
	if sc.Failed == "" {
		line.Tally.Scores = map[string]*float64{}
		for m, v := range sc.Values() {
			if finite(v) {
				line.Tally.Scores[m] = &v
			} else {
				line.Tally.Scores[m] = nil
			}
		}
	}
	if td.Info != nil && td.Info.LMEval != nil && g.part != "" && sc.Failed == "" {
		// A process_results function's values, ints and floats as it
		// gives them (lm-eval writes an int 0 as 0).
		if vals, err := td.Info.LMEval.ResultValues(g.part, sc.Prediction, sd.Doc); err == nil && vals != nil {
			for _, k := range vals.Keys {
				line.Metrics = append(line.Metrics, k)
				line.MetricValues[k] = vals.Vals[k]
			}
			return line
		}
	}
	var pyVals *lmeval.Map
	if td.Info != nil && td.Info.LMEval != nil && g.part != "" && sc.Failed == "" {
		// A metric function's values (the Python bridge), ints and floats
		// as it gives them.
		var md map[string]any
		_ = json.Unmarshal(sd.Metadata, &md)
		multi, _ := md[lmeval.MetaMultipleTarget].(bool)
		pyVals, _ = td.Info.LMEval.PythonMetricValues(g.part, sc.Prediction, sd.Doc, sd.Refs, multi)
	}
	for _, m := range g.metrics {
		lm, _ := splitKey(m)
		if v, ok := pyVals.Get(lm); ok {
			line.Metrics = append(line.Metrics, lm)
			line.MetricValues[lm] = v
			continue
		}
		if _, corpus := scoring.CorpusName(m); corpus {
			// lm-eval's per-sample value of bleu, chrf and ter: the pair
			// its aggregation scores, [gold, result].
			line.Metrics = append(line.Metrics, lm)
			line.MetricValues[lm] = []any{target, filtered}
			continue
		}
		v, ok := sc.Value(m)
		if !ok && sc.Failed != "" {
			v, ok = 0, true
		}
		if !ok {
			continue
		}
		line.Metrics = append(line.Metrics, lm)
		if finite(v) {
			line.MetricValues[lm] = v
		}
	}
	return line
}

func nonNil(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}

// sanitizeList is lm-eval's sanitize_list (lm_eval/utils.py), which its
// EvaluationTracker applies to resps and filtered_resps: lists kept,
// recursively, every other value its str().
func sanitizeList(v any) any {
	if l, ok := v.([]any); ok {
		out := make([]any, len(l))
		for i, e := range l {
			out[i] = sanitizeList(e)
		}
		return out
	}
	return lmeval.PyStr(v)
}
