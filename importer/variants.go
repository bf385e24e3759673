package importer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"tally/datasets/lmevallog"
	"tally/datasets/published"
	"tally/store"
	"tally/tasks/variant"
)

// Imported samples are stored under a task variant's key as run samples
// are (tally/tasks/variant), so that two imports of one task made with
// other prompts (lm-eval run at --num_fewshot 0 and 5) are two variants,
// never one. A line tally wrote names its variant's key (its "tally"
// object's task), and the results file beside it the variant's record; any
// other log's variant is its task and the config its results file records
// for it (lm-eval's configs[task], which made its prompts whatever samples
// were chosen), or, with no results file, the SHA-256 of its prompts. A
// published prediction file's variant is its task and prompts.

// importedPrompts is the field of an imported variant's spec: the digest
// of the prompts it was made with.
const importedPrompts = "imported prompts"

// promptsVariant is the variant of an imported task whose prompts, by
// sample, are prompts: its name and their digest.
func promptsVariant(task string, prompts map[string]string, fewshot int) variant.Record {
	h := sha256.New()
	ids := make([]string, 0, len(prompts))
	for id := range prompts {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		fmt.Fprintf(h, "%d:%s%d:%s", len(id), id, len(prompts[id]), prompts[id])
	}
	digest, _ := json.Marshal(hex.EncodeToString(h.Sum(nil)))
	return variant.New(variant.Spec{Task: task, Fields: map[string]string{importedPrompts: string(digest)}}, variant.Info{FewShot: fewshot})
}

// logVariant is the variant of the lines of an lm-eval log of task that
// tally did not key (lm-eval's own, or an earlier tally's): its task and
// prompts, with the n-shot the results file beside it gives.
func logVariant(path, task string, recs []lmevallog.Record) variant.Record {
	prompts := map[string]string{}
	for _, r := range recs {
		prompts[strconv.Itoa(r.DocID)] = r.Prompt
	}
	res, ok := resultsOf(path)
	nshot := 0
	if ok {
		_ = json.Unmarshal(res.NShot[task], &nshot)
	}
	if cfg, found := res.Configs[task]; ok && found && len(cfg) > 0 {
		// The task's config, as lm-eval records it: what made the prompts
		// (whatever samples --limit chose).
		fields := variant.LMEvalFields(cfg)
		fields["imported from"] = `"lm-eval"`
		return variant.New(variant.Spec{Task: task, Fields: fields}, variant.Info{FewShot: nshot})
	}
	return promptsVariant(task, prompts, nshot)
}

// results is what the importer reads of an lm-eval results file.
type results struct {
	NShot   map[string]json.RawMessage `json:"n-shot"`
	Configs map[string]map[string]any  `json:"configs"`
	Tally   struct {
		Variants map[string]variant.Record `json:"variants"`
	} `json:"tally"`
}

// resultsOf reads the results file of a samples file
// (samples_<task>_<date>.jsonl beside results_<date>.json), if there is
// one that reads.
func resultsOf(samplesPath string) (results, bool) {
	m := samplesName.FindStringSubmatch(filepath.Base(samplesPath))
	if m == nil {
		return results{}, false
	}
	p := filepath.Join(filepath.Dir(samplesPath), "results_"+m[2]+".json")
	if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() || st.Size() > maxResultsFile {
		return results{}, false
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return results{}, false
	}
	var r results
	if json.Unmarshal(b, &r) != nil {
		return results{}, false
	}
	return r, true
}

// maxResultsFile bounds the results file read beside a samples file.
const maxResultsFile = 64 << 20

// publishedVariants adds the variant of each task of a published file's
// records to b and returns their keys by task: its name and its prompts.
func publishedVariants(recs []published.Record, b *store.Batch) map[string]string {
	byTask := map[string]map[string]string{}
	for _, r := range recs {
		if byTask[r.Task] == nil {
			byTask[r.Task] = map[string]string{}
		}
		byTask[r.Task][r.ID] = r.Prompt
	}
	keys := map[string]string{}
	for _, task := range slices.Sorted(maps.Keys(byTask)) {
		rec := promptsVariant(task, byTask[task], 0)
		keys[task] = rec.Key
		b.Variants = append(b.Variants, rec)
	}
	return keys
}
