// Package importer reads the files `tally import` takes into one store
// batch: lm-evaluation-harness sample logs (as tally or lm-eval wrote
// them) and published result files (L-Eval, Counting-Stars, AlpacaEval,
// AraGen), found in the folders given without reading anything but
// regular files inside them.
package importer

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"tally/backends/imported"
	"tally/datasets"
	"tally/datasets/lmevallog"
	"tally/datasets/published"
	"tally/generate"
	"tally/internal/fsguard"
	"tally/report"
	"tally/rescore"
	"tally/store"
	"tally/tasks/variant"
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

// Files expands paths (files or directories, searched recursively) into
// lm-eval sample logs and published result files. Only regular files
// are read: a FIFO, a device or a socket is refused, and so is a symbolic
// link in a directory that leads out of it, unless followOut (a file named
// as an argument may be a link to any regular file).
func Files(paths []string, followOut bool) ([]string, error) {
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("import: %w", err)
		}
		if !st.IsDir() {
			if err := fsguard.Check("", p, true); err != nil {
				return nil, fmt.Errorf("import: %w", err)
			}
			out = append(out, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			name := d.Name()
			known := samplesName.MatchString(name) || publishedName.MatchString(name)
			if !known && !sniffName.MatchString(name) {
				return nil
			}
			// Vetted before anything opens it (opening a FIFO blocks).
			if err := fsguard.Check(p, path, followOut); err != nil {
				return err
			}
			if known || detected(path) {
				out = append(out, path)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("import %s: %w", p, err)
		}
	}
	return out, nil
}

// Collect reads files (as Files lists them) into one batch, for
// Store.Apply to write all of it or nothing: lm-eval sample logs
// (samples_<task>_<date>.jsonl) as collectLMEval reads them, every other
// file as a published result file (collectPublished). model, when not
// "", names the model the files' generations are imported as; version is
// the tally version recorded with the import's runs. It returns the
// records read per file.
func Collect(files []string, model, version string) (store.Batch, map[string]int, error) {
	var logs, others []string
	for _, p := range files {
		if samplesName.MatchString(filepath.Base(p)) {
			logs = append(logs, p)
		} else {
			others = append(others, p)
		}
	}
	var b store.Batch
	counts, err := collectLMEval(logs, model, version, &b)
	if err != nil {
		return store.Batch{}, nil, err
	}
	if err := collectPublished(others, model, version, counts, &b); err != nil {
		return store.Batch{}, nil, err
	}
	return b, counts, nil
}

// collectLMEval reads lm-eval sample logs into b: lines tally wrote (with
// their "tally" object) come back as they were, raw continuation, failures
// and scores included; lines of any other generate_until log become
// imported generations of model "imported:NAME" (NAME: model, else the
// log's folder), scored with the metric values the log holds under a stop
// setting named after the line's filter (its until sequences; "lm-eval"
// for logs that name no filter). The log's doc, target and doc_id are kept
// with the sample, so that lm-eval files written from the store give them
// back. It returns the lines read per file.
func collectLMEval(files []string, model, version string, b *store.Batch) (map[string]int, error) {
	counts := map[string]int{}
	runs := map[string]bool{}
	// A sample, generation or score is in the batch once, however many
	// lines (one per filter) or files hold it.
	seenSample, seenGen, seenScore := map[[2]string]bool{}, map[string]bool{}, map[store.ScoreKey]map[string]bool{}
	seenVariant := map[string]bool{}
	for _, path := range files {
		recs, err := lmevallog.ReadFile(path)
		if err != nil {
			return nil, err
		}
		// The results file of the same run says how many samples the
		// log holds: a log cut short is refused.
		if err := CheckLog(path, recs); err != nil {
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
		filters := map[string]bool{}
		for _, r := range recs {
			filters[r.Filter] = true
		}
		res, _ := resultsOf(path)
		var unkeyed *variant.Record // the file's variant, for lines tally did not key
		keyOf := func(task string) string {
			if variant.Name(task) != task { // a variant's key, as tally wrote it
				if rec, ok := res.Tally.Variants[task]; ok && !seenVariant[task] {
					seenVariant[task] = true
					b.Variants = append(b.Variants, rec)
				}
				return task
			}
			if unkeyed == nil {
				rec := logVariant(path, task, recs)
				unkeyed = &rec
				if !seenVariant[rec.Key] {
					seenVariant[rec.Key] = true
					b.Variants = append(b.Variants, rec)
				}
			}
			return unkeyed.Key
		}
		for _, r := range recs {
			var tx report.TallyExtra
			if r.Tally != nil {
				if err := json.Unmarshal(r.Tally, &tx); err != nil {
					return nil, fmt.Errorf("%s line %d: field \"tally\": %w", path, r.Line, err)
				}
				tx.Task = keyOf(tx.Task)
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
					seqs = append(slices.Clone(seqs), generate.FilterMarker(setting))
				}
				tx = report.TallyExtra{Task: keyOf(logTask), SampleID: fmt.Sprint(r.DocID), Model: imported.Prefix + name, Fingerprint: imported.Prefix + name,
					Setting: setting, Seqs: seqs, Budget: r.MaxGenToks, Raw: r.Response, Finish: "stop", Imported: true, References: refs}
			}
			if model != "" && r.Tally != nil {
				tx.Model = model
			}
			if err := generate.CheckSettingName(tx.Setting); err != nil {
				return nil, fmt.Errorf("import: %s line %d: %w", path, r.Line, err)
			}
			pred := r.Filtered
			if pred == "" && r.Tally == nil {
				pred = r.Response
			}
			key := generate.Key(tx.Fingerprint, nil, r.Prompt)
			if sk := [2]string{tx.Task, tx.SampleID}; !seenSample[sk] {
				seenSample[sk] = true
				b.Samples = append(b.Samples, importedSample(tx, r))
			}
			if !seenGen[key] {
				seenGen[key] = true
				b.Generations = append(b.Generations, store.Generation{Key: key, Fingerprint: tx.Fingerprint, Task: tx.Task, SampleID: tx.SampleID,
					Text: tx.Raw, Finish: tx.Finish, Error: tx.Error, PromptTokens: tx.PromptTokens, Imported: tx.Imported, Budget: tx.Budget,
					Stops: json.RawMessage(`{}`)})
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
				sk := store.ScoreKey{GenKey: key, Task: tx.Task, SampleID: tx.SampleID, SettingKey: setKey, Budget: tx.Budget}
				if seenScore[sk] == nil {
					seenScore[sk] = map[string]bool{}
				}
				for m, v := range values {
					if seenScore[sk][m] {
						continue
					}
					seenScore[sk][m] = true
					b.Scores = append(b.Scores, store.Score{GenKey: key, Task: tx.Task, SampleID: tx.SampleID, Setting: tx.Setting, SettingKey: setKey,
						Budget: tx.Budget, Metric: m, Value: v, Prediction: pred})
				}
			}
			if !runs[tx.Fingerprint] {
				runs[tx.Fingerprint] = true
				cfg, _ := json.Marshal(map[string]any{"command": "import", "files": files, "chat": tx.Chat})
				b.Runs = append(b.Runs, store.Run{Command: "import", Config: cfg, Version: version, Backend: "imported",
					Model: tx.Model, Fingerprint: tx.Fingerprint})
			}
		}
		counts[path] = len(recs)
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
		Doc: r.Doc, Target: &target, Index: &docID, Notes: tx.Notes}
	return rescore.ToStore(s)
}

// collectPublished reads published prediction files (L-Eval,
// Counting-Stars, AlpacaEval) into b as imported generations of
// "imported:MODEL" (MODEL: the file's own model name unless model is
// given), scored under the setting "published" by the benchmark's scorer,
// and counts their records.
func collectPublished(files []string, model, version string, counts map[string]int, b *store.Batch) error {
	runs := map[string]bool{}
	for _, path := range files {
		_, recs, err := published.Read(path)
		if err != nil {
			return err
		}
		var samples []store.Sample
		var gens []store.Generation
		var scores []store.Score
		keys := publishedVariants(recs, b)
		for _, r := range recs {
			name := r.Model
			if model != "" {
				name = model
			}
			if name == "" {
				name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
			}
			fp := imported.Prefix + name
			if !runs[fp] {
				runs[fp] = true
				cfg, _ := json.Marshal(map[string]any{"command": "import", "files": files})
				b.Runs = append(b.Runs, store.Run{Command: "import", Config: cfg, Version: version, Backend: "imported", Model: fp, Fingerprint: fp})
			}
			meta, _ := json.Marshal(r.Metadata)
			key := generate.Key(fp, nil, r.Task+"\x00"+r.ID+"\x00"+r.Prompt)
			task := keys[r.Task]
			samples = append(samples, store.Sample{Task: task, ID: r.ID, Prompt: r.Prompt, Refs: r.Refs, Metadata: meta})
			gens = append(gens, store.Generation{Key: key, Fingerprint: fp, Task: task, SampleID: r.ID, Text: r.Prediction,
				Finish: "stop", Imported: true, Stops: json.RawMessage(`{}`)})
			for m, v := range r.Scores {
				scores = append(scores, store.Score{GenKey: key, Task: task, SampleID: r.ID, Setting: "published", Metric: m, Value: v, Prediction: r.Prediction})
			}
		}
		b.Samples, b.Generations, b.Scores = append(b.Samples, samples...), append(b.Generations, gens...), append(b.Scores, scores...)
		counts[path] = len(recs)
	}
	return nil
}
