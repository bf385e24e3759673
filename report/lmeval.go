package report

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"tally/scoring/stats"
)

// The lm-evaluation-harness layout, as lm_eval/loggers/evaluation_tracker.py
// (save_results_aggregated, save_results_samples) and lm_eval/evaluator.py
// write it: DIR/<model_name_sanitized>/results_<date_id>.json and
// samples_<task>_<date_id>.jsonl, date_id being datetime.isoformat() with
// ":" replaced by "-". Each (task, stop setting) is one lm-eval task named
// "task@setting"; metric keys are "<metric>,none" and
// "<metric>_stderr,none" (filter "none": the stop setting is the only
// post-processing).

// LMEvalTaskName names a column's lm-eval task: "task@setting", with
// "@budget" appended when a task was scored under several budgets.
func LMEvalTaskName(task string, c Column, manyBudgets bool) string {
	name := task + "@" + c.Setting
	if manyBudgets {
		name += fmt.Sprintf("@%d", c.Budget)
	}
	return name
}

var sanitizeModel = regexp.MustCompile(`["<>:/|\\?*\[\]]+`)

// SanitizeModelName is lm-eval's model_name_sanitized.
func SanitizeModelName(m string) string { return sanitizeModel.ReplaceAllString(m, "__") }

// LMEvalSample is one line of samples_<task>_<date>.jsonl. Tally adds the
// "tally" object (raw continuation, sample id, setting), which lm-eval's
// readers ignore and tally import uses to restore the run exactly.
type LMEvalSample struct {
	DocID         int                       `json:"doc_id"`
	Doc           map[string]any            `json:"doc"`
	Target        string                    `json:"target"`
	Arguments     map[string]map[string]any `json:"arguments"`
	Resps         [][]string                `json:"resps"`
	FilteredResps []string                  `json:"filtered_resps"`
	Filter        string                    `json:"filter"`
	Metrics       []string                  `json:"metrics"`
	DocHash       string                    `json:"doc_hash"`
	PromptHash    string                    `json:"prompt_hash"`
	TargetHash    string                    `json:"target_hash"`
	Tally         *TallyExtra               `json:"tally,omitempty"`
	MetricValues  map[string]float64        `json:"-"`
}

// TallyExtra is what tally keeps beside an lm-eval sample line.
type TallyExtra struct {
	Task        string          `json:"task"`
	SampleID    string          `json:"sample_id"`
	Model       string          `json:"model"`
	Fingerprint string          `json:"fingerprint"`
	Setting     string          `json:"setting"`
	Seqs        []string        `json:"seqs"`
	Budget      int             `json:"budget"`
	Raw         string          `json:"raw"`
	Finish      string          `json:"finish"`
	Error       string          `json:"error,omitempty"`
	Imported    bool            `json:"imported,omitempty"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
	References  json.RawMessage `json:"references"`
}

// MarshalJSON writes the metric values as top-level keys, as lm-eval does
// (example.update(metrics)).
func (s LMEvalSample) MarshalJSON() ([]byte, error) {
	type plain LMEvalSample
	b, err := json.Marshal(plain(s))
	if err != nil {
		return nil, err
	}
	if len(s.MetricValues) == 0 {
		return b, nil
	}
	extra, err := json.Marshal(s.MetricValues)
	if err != nil {
		return nil, err
	}
	return append(append(b[:len(b)-1], ','), extra[1:]...), nil
}

func hashString(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// stderr is lm-eval's mean_stderr: the sample standard deviation (n-1)
// over sqrt(n); NaN for fewer than two values.
func stderr(xs []float64) float64 { return stats.MeanStderr(xs) }

// jsonFloat writes NaN as lm-eval does ("N/A").
func jsonFloat(v float64) any {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "N/A"
	}
	return v
}

// WriteLMEval writes the dataset in lm-eval's layout under dir, one
// results file and one samples file per task per model, and returns the
// paths written. version is tally's version, written as lm-eval writes its
// own.
func WriteLMEval(dir string, ds *Dataset, version string, now time.Time) ([]string, error) {
	dateID := strings.ReplaceAll(now.Format("2006-01-02T15:04:05.000000"), ":", "-")
	type modelOut struct {
		results, configs, versions, nshot, hib, nsamples, groups map[string]any
		fingerprint, dtype                                       string
	}
	models := map[string]*modelOut{}
	var written []string
	for _, td := range ds.Tasks {
		budgets := map[int]bool{}
		for _, c := range td.Columns {
			budgets[c.Budget] = true
		}
		for ci, c := range td.Columns {
			mo := models[c.Model]
			if mo == nil {
				mo = &modelOut{results: map[string]any{}, configs: map[string]any{}, versions: map[string]any{}, nshot: map[string]any{},
					hib: map[string]any{}, nsamples: map[string]any{}, groups: map[string]any{}, fingerprint: c.Fingerprint, dtype: c.DType}
				models[c.Model] = mo
			}
			name := LMEvalTaskName(td.Task, c, len(budgets) > 1)
			mdir := filepath.Join(dir, SanitizeModelName(c.Model))
			if err := os.MkdirAll(mdir, 0o755); err != nil {
				return nil, fmt.Errorf("write lm-eval files: %w", err)
			}
			path := filepath.Join(mdir, "samples_"+name+"_"+dateID+".jsonl")
			f, err := os.Create(path)
			if err != nil {
				return nil, fmt.Errorf("write lm-eval samples: %w", err)
			}
			w := bufio.NewWriter(f)
			vals := map[string][]float64{}
			n := 0
			for _, sd := range td.Samples {
				sc := sd.Under[ci]
				if sc == nil || sd.Fingerprint != c.Fingerprint {
					continue
				}
				line := lmevalLine(n, td.Task, c, sd, sc, td.Metrics)
				for m, v := range sc.Values {
					vals[m] = append(vals[m], v)
				}
				b, err := json.Marshal(line)
				if err != nil {
					f.Close()
					return nil, fmt.Errorf("write lm-eval sample %s: %w", sd.ID, err)
				}
				w.Write(b)
				w.WriteByte('\n')
				n++
			}
			if err := w.Flush(); err != nil {
				f.Close()
				return nil, fmt.Errorf("write %s: %w", path, err)
			}
			if err := f.Close(); err != nil {
				return nil, fmt.Errorf("write %s: %w", path, err)
			}
			written = append(written, path)
			res := map[string]any{"alias": name}
			hib := map[string]any{}
			for _, m := range td.Metrics {
				xs, ok := vals[m]
				if !ok {
					continue
				}
				mean := math.NaN()
				if len(xs) > 0 {
					var s float64
					for _, x := range xs {
						s += x
					}
					mean = s / float64(len(xs))
				}
				res[m+",none"] = jsonFloat(mean)
				res[m+"_stderr,none"] = jsonFloat(stderr(xs))
				hib[m] = true
			}
			mo.results[name] = res
			mo.groups[name] = []string{}
			mo.hib[name] = hib
			mo.versions[name] = "tally-" + version
			mo.nshot[name] = 0
			mo.nsamples[name] = map[string]int{"original": n, "effective": n}
			metricList := []map[string]any{}
			for m := range hib {
				metricList = append(metricList, map[string]any{"metric": m, "aggregation": "mean", "higher_is_better": true})
			}
			slices.SortFunc(metricList, func(a, b map[string]any) int { return strings.Compare(a["metric"].(string), b["metric"].(string)) })
			mo.configs[name] = map[string]any{"task": name, "tag": []string{td.Task}, "output_type": "generate_until",
				"generation_kwargs": map[string]any{"until": nonNil(c.Seqs()), "max_gen_toks": c.Budget, "do_sample": false},
				"metric_list":       metricList, "repeats": 1, "num_fewshot": 0,
				"metadata": map[string]any{"version": "tally-" + version, "tally_task": td.Task, "stop_setting": c.Setting}}
		}
	}
	names := make([]string, 0, len(models))
	for m := range models {
		names = append(names, m)
	}
	slices.Sort(names)
	for _, m := range names {
		mo := models[m]
		var dtype any // lm-eval's model_dtype: null when unknown
		if mo.dtype != "" {
			dtype = mo.dtype
		}
		out := map[string]any{
			"results": mo.results, "group_subtasks": mo.groups, "configs": mo.configs, "versions": mo.versions,
			"n-shot": mo.nshot, "higher_is_better": mo.hib, "n-samples": mo.nsamples,
			"config": map[string]any{"model": "tally", "model_args": "pretrained=" + m, "model_num_parameters": nil, "model_dtype": dtype,
				"batch_size": nil, "device": nil, "use_cache": nil, "limit": nil, "bootstrap_iters": 0, "gen_kwargs": nil,
				"random_seed": nil, "numpy_seed": nil, "torch_seed": nil, "fewshot_seed": nil},
			"git_hash": nil, "date": float64(now.UnixNano()) / 1e9, "model_source": "tally", "model_name": m,
			"model_name_sanitized": SanitizeModelName(m), "tally_fingerprint": mo.fingerprint, "tally_version": version,
		}
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("write lm-eval results: %w", err)
		}
		path := filepath.Join(dir, SanitizeModelName(m), "results_"+dateID+".json")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return nil, fmt.Errorf("write lm-eval results: %w", err)
		}
		written = append(written, path)
	}
	return written, nil
}

func nonNil(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}

func lmevalLine(docID int, task string, c Column, sd *SampleData, sc *Scored, metrics []string) LMEvalSample {
	var doc map[string]any
	if err := json.Unmarshal(sd.Metadata, &doc); err != nil || doc == nil {
		doc = map[string]any{}
	}
	doc["id"] = sd.ID
	var refs any
	_ = json.Unmarshal(sd.Refs, &refs)
	doc["references"] = refs
	target := string(sd.Refs)
	docJSON, _ := json.MarshalIndent(doc, "", "  ")
	line := LMEvalSample{
		DocID: docID, Doc: doc, Target: target,
		Arguments: map[string]map[string]any{"gen_args_0": {"arg_0": sd.Prompt,
			"arg_1": map[string]any{"until": nonNil(c.Seqs()), "max_gen_toks": c.Budget, "do_sample": false}}},
		Resps: [][]string{{sc.Prediction}}, FilteredResps: []string{sc.Prediction}, Filter: "none",
		DocHash: hashString(string(docJSON)), PromptHash: hashString(sd.Prompt), TargetHash: hashString(target),
		MetricValues: map[string]float64{},
		Tally: &TallyExtra{Task: task, SampleID: sd.ID, Model: c.Model, Fingerprint: c.Fingerprint, Setting: c.Setting, Seqs: nonNil(c.Seqs()),
			Budget: c.Budget, Raw: sd.Text, Finish: sd.Finish, Error: sd.Error, Imported: sd.Imported, Metadata: sd.Metadata, References: sd.Refs},
	}
	for _, m := range metrics {
		if v, ok := sc.Values[m]; ok {
			line.Metrics = append(line.Metrics, m)
			if finite(v) {
				line.MetricValues[m] = v
			}
		}
	}
	return line
}
