package importer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"tally/datasets/lmevallog"
	"tally/internal/fsguard"
)

// resultsMax bounds the results file read beside a samples log (lm-eval's
// are kilobytes: a figure per task, metric and filter, and the configs).
const resultsMax = 64 << 20

// lmevalResults is what checkCounts reads of an lm-eval results file.
type lmevalResults struct {
	NSamples map[string]struct {
		Effective *int `json:"effective"`
	} `json:"n-samples"`
	Configs map[string]struct {
		FilterList []struct {
			Name string `json:"name"`
		} `json:"filter_list"`
	} `json:"configs"`
	// Tally is what tally writes beside lm-eval's fields: per task and
	// filter the samples its file holds (a stop setting a sample has no
	// score under has no line of it).
	Tally struct {
		Tasks map[string]struct {
			Filters map[string]struct {
				Samples *int `json:"samples"`
			} `json:"filters"`
		} `json:"tasks"`
	} `json:"tally"`
}

// declaredCounts are the samples a results file declares of a task's
// samples log: under each of its filters, n (every filter, as lm-eval
// writes them: filters lists them, or none when the file does not), or
// as perFilter says (tally's files).
type declaredCounts struct {
	n         int
	filters   []string
	perFilter map[string]int
}

// declared reads the results file of the same run beside an lm-eval
// samples log (results_<date>.json in the log's folder, the log's date
// id) and returns what it declares of task's samples; ok is false when no
// such file lies beside the log or it declares no count for the task.
// The file is vetted as the log was (fsguard.Check, links out of the
// folder refused) and read to a bound.
func declared(log, task, dateID string) (d declaredCounts, ok bool, err error) {
	dir := filepath.Dir(log)
	path := filepath.Join(dir, "results_"+dateID+".json")
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return d, false, nil
	}
	if err := fsguard.Check(dir, path, false); err != nil {
		return d, false, fmt.Errorf("import: %w", err)
	}
	f, err := os.Open(path)
	if err != nil {
		return d, false, fmt.Errorf("import: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, resultsMax+1))
	if err != nil {
		return d, false, fmt.Errorf("import: read %s: %w", path, err)
	}
	if len(b) > resultsMax {
		return d, false, fmt.Errorf("import: %s: larger than %d MiB, the most tally reads of a results file", path, resultsMax>>20)
	}
	var r lmevalResults
	if err := json.Unmarshal(b, &r); err != nil {
		return d, false, fmt.Errorf("import: %s: %w", path, err)
	}
	c, found := r.NSamples[task]
	if !found || c.Effective == nil {
		return d, false, nil
	}
	d.n = *c.Effective
	for _, fl := range r.Configs[task].FilterList {
		d.filters = append(d.filters, fl.Name)
	}
	for name, fl := range r.Tally.Tasks[task].Filters {
		if fl.Samples != nil {
			if d.perFilter == nil {
				d.perFilter = map[string]int{}
			}
			d.perFilter[name] = *fl.Samples
		}
	}
	return d, true, nil
}

// checkCounts refuses a samples log whose lines do not hold the samples
// its results file declares under each filter (declaredCounts): a log cut
// short at a line boundary, or one that is not the run its results
// describe.
func checkCounts(log, results string, recs []lmevallog.Record, d declaredCounts) error {
	docs := map[string]map[int]bool{}
	for _, r := range recs {
		if docs[r.Filter] == nil {
			docs[r.Filter] = map[int]bool{}
		}
		docs[r.Filter][r.DocID] = true
	}
	want := d.perFilter
	if want == nil {
		filters := d.filters
		if len(filters) == 0 {
			for f := range docs {
				filters = append(filters, f)
			}
			if len(filters) == 0 {
				filters = []string{""}
			}
		}
		want = map[string]int{}
		for _, f := range filters {
			want[f] = d.n
		}
	}
	for _, f := range slices.Sorted(maps.Keys(want)) {
		if got := len(docs[f]); got != want[f] {
			return fmt.Errorf("import: %s holds %d samples under filter %q, but %s declares %d: "+
				"the log is cut short, or is not the run its results describe; nothing imported", log, got, f, results, want[f])
		}
	}
	return nil
}

// CheckLog refuses an lm-eval samples log (samples_<task>_<date>.jsonl)
// read as recs when the results file of its run, beside it, declares
// another number of samples than it holds under one of its filters
// (checkCounts); a log of another name, or with no results file beside
// it, has nothing to be checked against.
func CheckLog(path string, recs []lmevallog.Record) error {
	m := samplesName.FindStringSubmatch(filepath.Base(path))
	if m == nil {
		return nil
	}
	d, ok, err := declared(path, m[1], m[2])
	if err != nil || !ok {
		return err
	}
	return checkCounts(path, filepath.Join(filepath.Dir(path), "results_"+m[2]+".json"), recs, d)
}
