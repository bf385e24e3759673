package lmeval

import (
	"fmt"
	"strings"

	"tally/internal/pystr"
)

// Ports of RULER's Python modules (lm-eval 4e7e0d47,
// lm_eval/tasks/ruler): its scoring (common_utils.py process_results,
// process_results_part, aggregate_metrics) and its custom_dataset
// functions.
//
// RULER's documents are synthesised by those functions: needles, keys and
// values drawn with Python's random and NumPy, haystacks of Paul Graham's
// essays (downloaded) or repeated text, word lists from the wonderwords
// package, sentences split with nltk, SQuAD and HotpotQA downloaded, and
// every context cut to the task's length in the model's own tokens (its
// Hugging Face tokenizer). tally does not synthesise them: the port of
// each custom_dataset function reads the documents it would make from
// --data (the split "test"), as generated once, for the model's tokenizer
// and the lengths wanted, by lm-eval's own function (docs/lm-eval-tasks.md
// shows the three lines of Python). The scoring is then lm-eval's.

func init() {
	registerHookModule(&hookModule{where: "ruler/common_utils.py", defs: map[string]hookDef{
		"process_results":      rulerResults(false),
		"process_results_part": rulerResults(true),
		"aggregate_metrics":    rulerAggregate,
	}}, "118b53890754ad5c2c6b29dc8a080889265e05ae0a6af5d0c764a8bd12db2933")
	supplied := func(names ...string) map[string]hookDef {
		out := map[string]hookDef{}
		for _, n := range names {
			out[n] = rulerSupplied
		}
		return out
	}
	registerHookModule(&hookModule{where: "ruler/niah_utils.py", defs: supplied("niah_single_1", "niah_single_2", "niah_single_3",
		"niah_multikey_1", "niah_multikey_2", "niah_multikey_3", "niah_multivalue", "niah_multiquery")},
		"e553493ff4c85eea196b57898ca514b0b147e6bad5734296b1025e408c0167d7")
	registerHookModule(&hookModule{where: "ruler/vt_utils.py", defs: supplied("get_vt_dataset")},
		"c4d4fc72ba81deeae317c8e380d96aaca770264648c3c22409e587f78d42d781")
	registerHookModule(&hookModule{where: "ruler/cwe_utils.py", defs: supplied("get_cw_dataset")},
		"ee110629024189e962783cc7b9658e52ac63c3b6286d6c70634799df0a83ef64")
	registerHookModule(&hookModule{where: "ruler/fwe_utils.py", defs: supplied("fwe_download")},
		"1e0a094499a2eae9f84ae363d2c58e59cbcca687c775a1fd36e5c77e7321444d")
	registerHookModule(&hookModule{where: "ruler/qa_utils.py", defs: supplied("get_squad", "get_hotpotqa")},
		"b38c4fdc0f20d80141f472efaf67ade7e1c6c7134db806d97ec9956f937c5fe5")
}

// rulerSupplied stands for a RULER custom_dataset function: its
// documents, already made, are --data's split "test" (the top level of
// its folder: RULER's tasks name no dataset configuration).
func rulerSupplied(m *pyModule, kw *Map) (*pyHook, error) {
	if kw.Len() > 0 {
		return nil, fmt.Errorf("takes no keyword arguments here")
	}
	return &pyHook{dataset: func(*Map) (datasetSpec, error) {
		return datasetSpec{name: "", splits: []string{"test"}}, nil
	}}, nil
}

// rulerResults ports process_results (string_match_all) and
// process_results_part (string_match_part), which agree on one
// prediction: -1.0 under each of
// DEFAULT_SEQ_LENGTHS (read from the module), then under the document's
// max_length the share of doc["outputs"] found in the prediction (stripped,
// control characters made newlines, stripped again), case-insensitively
// (part: the same, as max over the one prediction).
func rulerResults(_ bool) hookDef {
	return func(m *pyModule, kw *Map) (*pyHook, error) {
		if kw.Len() > 0 {
			return nil, fmt.Errorf("takes no keyword arguments here")
		}
		lv, err := moduleLiteral(m.src, "DEFAULT_SEQ_LENGTHS")
		if err != nil {
			return nil, err
		}
		lengths, ok := lv.([]any)
		if !ok {
			return nil, fmt.Errorf("DEFAULT_SEQ_LENGTHS is not a list")
		}
		return &pyHook{results: func(doc *Map, results []any) (*Map, error) {
			out := NewMap()
			for _, l := range lengths {
				out.Set(pyStr(l), -1.0)
			}
			ml, ok := doc.Get("max_length")
			if !ok {
				return nil, fmt.Errorf("the document has no \"max_length\" (KeyError)")
			}
			pred, ok := results[0].(string)
			if !ok {
				return nil, fmt.Errorf("the response %s is not a str", pyStr(results[0]))
			}
			p, err := babilongControl.Sub("\n", pystr.Strip(pred))
			if err != nil {
				return nil, err
			}
			p = pystr.Lower(pystr.Strip(p))
			ov, ok := doc.Get("outputs")
			if !ok {
				return nil, fmt.Errorf("the document has no \"outputs\" (KeyError)")
			}
			refs, ok := ov.([]any)
			if !ok {
				return nil, fmt.Errorf("outputs %s is not a list", pyStr(ov))
			}
			if len(refs) == 0 {
				return nil, fmt.Errorf("outputs is empty (ZeroDivisionError)")
			}
			sum := 0.0
			for _, r := range refs {
				s, ok := r.(string)
				if !ok {
					return nil, fmt.Errorf("output %s is not a str", pyStr(r))
				}
				if strings.Contains(p, pystr.Lower(s)) {
					sum += 1.0
				}
			}
			// string_match_all's sum([x]) / len(preds) and
			// string_match_part's max([x]) / len(preds) are both x for
			// the one prediction.
			out.Set(pyStr(ml), sum/float64(len(refs)))
			return out, nil
		}}, nil
	}
}

// rulerAggregate ports aggregate_metrics: the mean of the values other
// than -1 (-1 when there are none, where tally has no value and so no
// figure).
func rulerAggregate(m *pyModule, kw *Map) (*pyHook, error) {
	if kw.Len() > 0 {
		return nil, fmt.Errorf("takes no keyword arguments here")
	}
	return &pyHook{aggregation: true, meanSkipping: -1}, nil
}
