package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"tally/backends/imported"
	"tally/datasets"
	"tally/datasets/lmevallog"
	"tally/datasets/published"
	"tally/generate"
	"tally/report"
	"tally/rescore"
	"tally/store"
)

// samplesName matches lm-eval's samples_<task>_<date_id>.jsonl (date_id is
// datetime.isoformat() with ":" replaced by "-").
var samplesName = regexp.MustCompile(`^samples_(.+)_(\d{4}-\d{2}-\d{2}T[0-9.\-]+)\.jsonl(\.gz)?$`)

// publishedName matches the published prediction files a folder import
// picks up (explicit file arguments may have any name).
var publishedName = regexp.MustCompile(`(\.pred\.jsonl|^annotations\.json|^model_outputs\.json|_answers\.json|_judged\.json)(\.gz)?$`)

// sniffName is the names of files in a directory that are looked into
// for a layout known by content (published.Detect).
var sniffName = regexp.MustCompile(`\.(txt|jsonl|json)(\.gz)?$`)

// detected reports whether a file found in a directory, of a name no
// layout claims, is a published result file by its content.
func detected(path string) bool {
	if !sniffName.MatchString(filepath.Base(path)) {
		return false
	}
	_, ok := published.Detect(path)
	return ok
}

// lmevalFiles expands paths (files or directories, searched recursively)
// into lm-eval sample logs.
func lmevalFiles(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("import: %w", err)
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && (samplesName.MatchString(d.Name()) || publishedName.MatchString(d.Name()) || detected(path)) {
				out = append(out, path)
			}
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("import %s: %w", p, err)
		}
	}
	return out, nil
}

// importLMEval stores lm-eval sample logs: lines tally wrote (with their
// "tally" object) come back as they were, raw continuation, failures and
// scores included; lines of any other generate_until log become imported
// generations of model "imported:NAME" (NAME: model, else the log's
// folder), scored with the metric values the log holds under a stop
// setting named after the line's filter (its until sequences; "lm-eval"
// for logs that name no filter). The log's doc, target and doc_id are kept
// with the sample, so that lm-eval files written from the store give them
// back.
func importLMEval(ctx context.Context, st *store.Store, files []string, model string) (map[string]int, error) {
	counts := map[string]int{}
	runs := map[string]int64{}
	for _, path := range files {
		recs, err := lmevallog.ReadFile(path)
		if err != nil {
			return nil, err
		}
		logTask := filepath.Base(path)
		if m := samplesName.FindStringSubmatch(logTask); m != nil {
			logTask = m[1]
		} else {
			logTask = strings.TrimSuffix(strings.TrimSuffix(logTask, ".gz"), ".jsonl")
		}
		name := model
		if name == "" {
			name = filepath.Base(filepath.Dir(path))
		}
		var samples []store.Sample
		var gens []store.Generation
		var scores []store.Score
		seenSample, seenGen := map[[2]string]bool{}, map[string]bool{}
		filters := map[string]bool{}
		for _, r := range recs {
			filters[r.Filter] = true
		}
		for _, r := range recs {
			var tx report.TallyExtra
			if r.Tally != nil {
				if err := json.Unmarshal(r.Tally, &tx); err != nil {
					return nil, fmt.Errorf("%s line %d: field \"tally\": %w", path, r.Line, err)
				}
			} else {
				refs, _ := json.Marshal([]string{r.Target})
				setting, seqs := r.Filter, r.Until
				if setting == "" {
					setting = "lm-eval"
				}
				if len(filters) > 1 {
					// Settings are keyed by their sequences: filters
					// of one generation (one until) are told apart by
					// a sequence naming the filter, never found in the
					// (already cut) text.
					seqs = append(slices.Clone(seqs), "[lm-eval filter "+setting+"]")
				}
				tx = report.TallyExtra{Task: logTask, SampleID: fmt.Sprint(r.DocID), Model: imported.Prefix + name, Fingerprint: imported.Prefix + name,
					Setting: setting, Seqs: seqs, Budget: r.MaxGenToks, Raw: r.Response, Finish: "stop", Imported: true, References: refs}
			}
			if model != "" && r.Tally != nil {
				tx.Model = model
			}
			pred := r.Filtered
			if pred == "" && r.Tally == nil {
				pred = r.Response
			}
			key := generate.Key(tx.Fingerprint, nil, r.Prompt)
			if sk := [2]string{tx.Task, tx.SampleID}; !seenSample[sk] {
				seenSample[sk] = true
				samples = append(samples, importedSample(tx, r))
			}
			if !seenGen[key] {
				seenGen[key] = true
				gens = append(gens, store.Generation{Key: key, Fingerprint: tx.Fingerprint, Task: tx.Task, SampleID: tx.SampleID, Text: tx.Raw,
					Finish: tx.Finish, Error: tx.Error, PromptTokens: tx.PromptTokens, Imported: tx.Imported, Budget: tx.Budget, Stops: json.RawMessage(`{}`)})
			}
			setKey := generate.StopSetting{Seqs: tx.Seqs}.Key()
			values := r.Metrics
			if tx.Scores != nil {
				values = map[string]float64{}
				for m, v := range tx.Scores {
					values[m] = math.NaN()
					if v != nil {
						values[m] = *v
					}
				}
			}
			if tx.Failed == "" {
				for m, v := range values {
					scores = append(scores, store.Score{GenKey: key, Task: tx.Task, SampleID: tx.SampleID, Setting: tx.Setting, SettingKey: setKey,
						Budget: tx.Budget, Metric: m, Value: v, Prediction: pred})
				}
			}
			if _, ok := runs[tx.Fingerprint]; !ok {
				cfg, _ := json.Marshal(map[string]any{"command": "import", "files": files, "chat": tx.Chat})
				id, err := st.StartRun(ctx, store.Run{Command: "import", Config: cfg, Version: version(), Backend: "imported",
					Model: tx.Model, Fingerprint: tx.Fingerprint})
				if err != nil {
					return nil, err
				}
				runs[tx.Fingerprint] = id
			}
		}
		if err := st.PutSamples(ctx, samples); err != nil {
			return nil, err
		}
		if err := st.PutGenerations(ctx, gens, scores); err != nil {
			return nil, err
		}
		counts[path] = len(recs)
	}
	for _, id := range runs {
		if err := st.FinishRun(ctx, id, "done", 0, 0, 0, nil); err != nil {
			return nil, err
		}
	}
	return counts, nil
}

// importedSample is the stored sample of an lm-eval log line: its prompt
// and references, its metadata (tally's, when tally wrote the line), and
// the log's doc, target and doc_id.
func importedSample(tx report.TallyExtra, r lmevallog.Record) store.Sample {
	var meta map[string]any
	_ = json.Unmarshal(tx.Metadata, &meta)
	docID, target := r.DocID, r.Target
	s := datasets.Sample{Task: tx.Task, ID: tx.SampleID, Prompt: r.Prompt, References: tx.References, Metadata: meta,
		Doc: r.Doc, Target: &target, Index: &docID}
	return rescore.ToStore(s)
}

// importFiles is tally import with file arguments.
func importFiles(cmd *cobra.Command, f *runFlags, args []string) error {
	ctx := cmd.Context()
	files, err := lmevalFiles(args)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("import: no samples_<task>_<date>.jsonl files in %s", strings.Join(args, " "))
	}
	st, err := store.Open(ctx, f.storePath)
	if err != nil {
		return err
	}
	defer st.Close()
	name, _ := strings.CutPrefix(f.model, imported.Prefix)
	var logs, others []string
	for _, p := range files {
		if samplesName.MatchString(filepath.Base(p)) {
			logs = append(logs, p)
		} else {
			others = append(others, p)
		}
	}
	counts, err := importLMEval(ctx, st, logs, name)
	if err != nil {
		return err
	}
	if err := importPublished(ctx, st, others, name, counts); err != nil {
		return err
	}
	if f.json {
		return writeJSON(cmd.OutOrStdout(), map[string]any{"imported": counts})
	}
	for _, p := range files {
		fmt.Fprintf(cmd.OutOrStdout(), "imported %d samples from %s\n", counts[p], p)
	}
	return nil
}

// importPublished stores published prediction files (L-Eval, Counting-Stars,
// AlpacaEval) as imported generations of "imported:MODEL" (MODEL: the
// file's own model name unless model is given), scored under the setting
// "published" by the benchmark's scorer.
func importPublished(ctx context.Context, st *store.Store, files []string, model string, counts map[string]int) error {
	runs := map[string]int64{}
	for _, path := range files {
		_, recs, err := published.Read(path)
		if err != nil {
			return err
		}
		var samples []store.Sample
		var gens []store.Generation
		var scores []store.Score
		for _, r := range recs {
			name := r.Model
			if model != "" {
				name = model
			}
			if name == "" {
				name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
			}
			fp := imported.Prefix + name
			if _, ok := runs[fp]; !ok {
				cfg, _ := json.Marshal(map[string]any{"command": "import", "files": files})
				id, err := st.StartRun(ctx, store.Run{Command: "import", Config: cfg, Version: version(), Backend: "imported", Model: fp, Fingerprint: fp})
				if err != nil {
					return err
				}
				runs[fp] = id
			}
			meta, _ := json.Marshal(r.Metadata)
			key := generate.Key(fp, nil, r.Task+"\x00"+r.ID+"\x00"+r.Prompt)
			samples = append(samples, store.Sample{Task: r.Task, ID: r.ID, Prompt: r.Prompt, Refs: r.Refs, Metadata: meta})
			gens = append(gens, store.Generation{Key: key, Fingerprint: fp, Task: r.Task, SampleID: r.ID, Text: r.Prediction,
				Finish: "stop", Imported: true, Stops: json.RawMessage(`{}`)})
			for m, v := range r.Scores {
				scores = append(scores, store.Score{GenKey: key, Task: r.Task, SampleID: r.ID, Setting: "published", Metric: m, Value: v, Prediction: r.Prediction})
			}
		}
		if err := st.PutSamples(ctx, samples); err != nil {
			return err
		}
		if err := st.PutGenerations(ctx, gens, scores); err != nil {
			return err
		}
		counts[path] = len(recs)
	}
	for _, id := range runs {
		if err := st.FinishRun(ctx, id, "done", 0, 0, 0, nil); err != nil {
			return err
		}
	}
	return nil
}
