package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"tally/internal/lmevalref"
	"tally/internal/pyref"
)

// refCase is one reference case: an lm-eval task file (its path under
// lm-eval's lm_eval/tasks), small data of the project's own and the
// scripted model's outputs (testdata/lmevalref/cases/NAME: data/ and
// outputs.json), and command-line arguments both harnesses take
// (--limit, --num_fewshot).
type refCase struct {
	name, task string
	args       []string
	// local: lm-eval reads the case's files in place of the task's
	// custom_dataset too (RULER synthesises its documents; tally reads
	// them from --data).
	local bool
	// python: tally runs the task's Python functions through its bridge
	// (--python, the harness's interpreter, lm-eval's source and the
	// stubs on PYTHONPATH), having no Go port of them.
	python bool
}

// refCases are the task files checked against lm-eval's own code, one or
// more per family tally loads.
var refCases = []refCase{
	{"gsm8k", "gsm8k/gsm8k.yaml", nil, false, false},
	{"gsm8k_cot_llama", "gsm8k/gsm8k-cot-llama.yaml", nil, false, false},
	{"gsm8k_platinum", "gsm8k_platinum/gsm8k-platinum-cot-llama.yaml", nil, false, false},
	{"llama3_gsm8k", "llama3/instruct/gsm8k/gsm8k.yaml", nil, false, false},
	{"gsm_plus", "gsm_plus/gsm_plus.yaml", []string{"--num_fewshot", "2"}, false, false},
	{"mgsm_bn", "mgsm/direct/mgsm_direct_bn.yaml", nil, false, false},
	{"mgsm_es", "spanish_bench/mgsm_direct_es_spanish_bench.yaml", nil, false, false},
	{"basque_mgsm", "basque_bench/mgsm_direct_eu.yaml", nil, false, false},
	{"catalan_mgsm", "catalan_bench/mgsm_direct_ca.yaml", nil, false, false},
	{"galician_mgsm", "galician_bench/mgsm_direct_gl.yaml", nil, false, false},
	{"afrimgsm_amh", "afrimgsm/direct/prompt_1/afrimgsm_amh.yaml", nil, false, false},
	{"arc_challenge_chat", "arc/arc_challenge_chat.yaml", []string{"--num_fewshot", "3"}, false, false}, // num_fewshot: 0 stays 0
	{"asdiv_cot_llama", "asdiv/asdiv-cot-llama.yaml", nil, false, false},
	{"babi", "babi/babi.yaml", nil, false, false},
	{"bbh_boolean_expressions", "bbh/cot_fewshot/boolean_expressions.yaml", nil, false, false},
	{"bigbench_anu", "bigbench/generate_until/abstract_narrative_understanding.yaml", nil, false, false},
	{"fld_default", "fld/fld_default.yaml", nil, false, false},
	{"jaqket_v2", "japanese_leaderboard/ja_leaderboard_jaqket_v2.yaml", nil, false, false},
	{"kbl_civil", "kbl/bar_exam/civil/kbl_bar_exam_em_civil_2012.yaml", nil, false, false},
	{"kmmlu_cot_hard", "kmmlu/cot_hard/kmmlu_cot_hard_accounting.yaml", nil, false, false},
	{"legalbench_abercrombie", "legalbench/abercrombie.yaml", []string{"--num_fewshot", "2"}, false, false},
	{"logieval", "logiqa2/logieval.yaml", nil, false, false},
	{"mmlu_redux", "mmlu-redux/generative/mmlu_abstract_algebra.yaml", nil, false, false},
	{"mmlu_redux_spanish", "mmlu-redux-spanish/generative/mmlu_abstract_algebra.yaml", nil, false, false},
	{"mmlu_flan_cot", "mmlu/flan_cot_fewshot/mmlu_abstract_algebra.yaml", nil, false, false},
	{"nq_open", "nq_open/nq_open.yaml", nil, false, false},
	{"triviaqa", "triviaqa/default.yaml", nil, false, false},
	{"turkishmmlu_cot", "turkishmmlu/config_cot/Biology.yaml", nil, false, false},
	{"celep2", "ulqa/celep2.yaml", nil, false, false},
	{"anagrams1", "unscramble/anagrams1.yaml", nil, false, false},
	{"acp_areach_bool", "acpbench/boolq_cot_2shot/act_reach.yaml", nil, false, false},
	// multi_choice_regex
	{"mmlu_flan_generative", "mmlu/flan_n_shot/generative/mmlu_abstract_algebra.yaml", []string{"--num_fewshot", "2"}, false, false},
	{"mmlu_flan_cot_zeroshot", "mmlu/flan_cot_zeroshot/mmlu_astronomy.yaml", nil, false, false},
	{"acp_areach_mcq", "acpbench/mcq_cot_2shot/act_reach.yaml", nil, false, false},
	// bleu, chrf, ter (sacrebleu)
	{"flores_kon_eng", "afrobench/flores/prompt_2/african-english/flores_kon_Latn-eng_Latn.yaml", nil, false, false},
	{"wmt16_en_de", "translation/wmt16_en-de.yaml", nil, false, false},
	{"noreval_tatoeba_eng_nob", "noreval/tatoeba/tatoeba_eng_nob/tatoeba_eng_nob_p0.yaml", nil, false, false},
	{"noreval_norsummarize_instruct", "noreval/norsummarize-instruct/norsummarize_instruct.yaml", nil, false, false},
	{"portuguese_flores_en_pt", "portuguese_bench/flores_pt/flores_en-pt.yaml", nil, false, false},
	{"noreval_ask_gec", "noreval/ask_gec/ask_gec_p0.yaml", nil, false, false}, // max_new_tokens
	// Python hooks with Go ports (tasks/lmeval/hooks_mmlu.go)
	{"mmlu_prox_de_biology", "mmlu_prox/de/mmlu_prox_de_biology.yaml", []string{"--num_fewshot", "2"}, false, false},
	{"mmlu_prox_ja_math", "mmlu_prox/ja/mmlu_prox_ja_math.yaml", []string{"--num_fewshot", "2"}, false, false},
	{"mmlu_pro_law", "mmlu_pro/mmlu_pro_law.yaml", []string{"--num_fewshot", "2"}, false, false},
	{"llama3_mmlu_pro_law", "llama3/instruct/mmlu_pro/mmlu_pro_law.yaml", []string{"--num_fewshot", "2"}, false, false},
	{"llama3_mmlu_de_anatomy", "llama3/instruct/mmlu_de/mmlu_de_anatomy.yaml", nil, false, false},
	// long-context suites (tasks/lmeval/hooks_longctx.go)
	{"longbench_qasper", "longbench/qasper.yaml", nil, false, false},
	{"longbench_trec", "longbench/trec.yaml", nil, false, false},
	{"longbench_passage_count", "longbench/passage_count.yaml", nil, false, false},
	{"longbench_passage_retrieval_en", "longbench/passage_retrieval_en.yaml", nil, false, false},
	{"longbench_passage_retrieval_zh", "longbench/passage_retrieval_zh.yaml", nil, false, false},
	{"longbench_lcc", "longbench/lcc.yaml", nil, false, false},
	{"babilong_qa1", "babilong/babilong_qa1.yaml", nil, false, false},
	{"ruler_niah_single_1", "ruler/niah_single_1.yaml", nil, true, false},
	{"ruler_qa_squad", "ruler/qa_squad.yaml", nil, true, false},
	// through the Python bridge (tasks/lmeval/pybridge.go: --python)
	{"bbh_cot_zeroshot_date", "bbh/cot_zeroshot/date_understanding.yaml", nil, false, true},
	{"bbh_zeroshot_sports", "bbh/zeroshot/sports_understanding.yaml", nil, false, true},
	{"mlqa_en_de", "mlqa/mlqa_en_de.yaml", nil, false, true},
	{"mlqa_zh_zh", "mlqa/mlqa_zh_zh.yaml", nil, false, true},
	{"mafand_amh_en", "afrobench/mafand/prompt_1/african-english/mafand_amh-en.yaml", nil, false, true},
	{"hendrycks_math_algebra", "hendrycks_math/hendrycks_math_algebra.yaml", nil, false, true},
	{"french_bench_fquadv2", "french_bench/french_bench_fquadv2.yaml", nil, false, true}, // metric functions
	{"infinitebench_passkey", "infinitebench/infinitebench_passkey.yaml", nil, false, true},
	{"infinitebench_longbook_choice", "infinitebench/infinitebench_longbook_choice_en.yaml", nil, false, true},
	{"infinitebench_qa_chn", "infinitebench/infinitebench_longbook_qa_chn.yaml", nil, false, true},
	{"noridiom_nob", "noreval/noridiom/nob/noridiom_nob_p0.yaml", nil, false, true}, // a dotted lm_eval.tasks path, NumPy values
	{"hrm8k_math", "hrm8k/default/hrm8k_math.yaml", nil, false, true},
	{"mmlu_pro_plus_law", "mmlu-pro-plus/mmlu_pro_plus_law.yaml", []string{"--num_fewshot", "2"}, false, true}, // partials
	{"afriqa_bem", "afrobench/afriqa/prompt_2/afriqa_bem.yaml", nil, false, true},                              // f1's aggregation function
	{"masakhaner_am", "afrobench/masakhaner/prompt_1/masakhaner_am.yaml", nil, false, true},                    // lm-eval's format_span, span_f1_agg
	// IFEval: process_results through the bridge (langdetect and
	// immutabledict installed; nltk is the harness's stand-in, so the
	// case's instructions are those no nltk tokenizer or langdetect
	// decides), agg_inst_level_acc a Go port (hooks_ifeval.go).
	{"ifeval", "ifeval/ifeval.yaml", nil, false, true},
}

// refRules are the fields compared by presence and kind only: what
// lm-eval's files take from the machine, the clock, its install and the
// model (its name and arguments: "scripted" there, tally's model here).
var refRules = lmevalref.Rules{
	// A Python function's repr ("<function f at 0x7f...>") shows where
	// it was in memory; tally writes 0x0.
	Addresses: true,
	Env: []string{
		"date", "total_evaluation_time_seconds",
		"git_hash", "upper_git_hash", "pretty_env_info", "transformers_version", "lm_eval_version",
		"model_source", "model_name", "model_name_sanitized",
		"config/model", "config/model_args", "config/batch_size", "config/device",
		"configs/*/metadata/pretrained",
	},
	// model_dtype is what an HF model adds (HFLM.get_model_info).
	Extra: []string{"tally", "*/tally", "config/model_dtype"},
}

// TestLMEvalReference runs each reference case through lm-eval's own code
// (testdata/lmevalref/harness.py: its command line, task loading,
// samplers, filters, metrics and EvaluationTracker, on the case's data
// with a scripted model) and through tally (an OpenAI-compatible server
// that answers each of lm-eval's prompts with the same output), then
// compares every field of the two results files and of every samples file
// line (refRules: the environment's fields by presence and kind).
func TestLMEvalReference(t *testing.T) {
	root := lmevalref.LMEval(t)
	tasks := filepath.Join(root, "lm_eval", "tasks")
	work := t.TempDir()
	missing := missingModules(t)
	var cases []lmevalref.Case
	var run []refCase
	for _, rc := range refCases {
		if missing[rc.name] != "" {
			continue
		}
		run = append(run, rc)
		dir := filepath.Join("..", "..", "testdata", "lmevalref", "cases", rc.name)
		outputs := map[string]any{}
		b, err := os.ReadFile(filepath.Join(dir, "outputs.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &outputs); err != nil {
			t.Fatalf("%s: %v", rc.name, err)
		}
		data, _ := filepath.Abs(filepath.Join(dir, "data"))
		cases = append(cases, lmevalref.Case{Name: rc.name, Task: filepath.Join(tasks, rc.task), Data: data, Outputs: outputs,
			Out: filepath.Join(work, rc.name, "lm-eval"), Args: rc.args, LocalDataset: rc.local})
	}
	script, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "lmevalref", "harness.py"))
	results := lmevalref.Harness(t, script, cases)
	for _, rc := range refCases {
		if why := missing[rc.name]; why != "" {
			t.Run(rc.name, func(t *testing.T) { t.Skip(why) })
		}
	}
	for i, rc := range run {
		t.Run(rc.name, func(t *testing.T) {
			res := results[i]
			if !res.OK {
				t.Fatalf("lm-eval failed:\n%s\n%s", res.Error, res.Stdout)
			}
			compareRefCase(t, cases[i], rc, filepath.Join(work, rc.name))
		})
	}
}

// refNeeds are the Python modules a case's task imports beyond the
// harness's (lmevalref.Modules), with their Debian packages.
var refNeeds = map[string][][2]string{
	"ifeval": {{"langdetect", "python3-langdetect"}, {"immutabledict", "python3-immutabledict"}},
}

// missingModules says, for each case whose modules the harness's python3
// lacks, what is missing (one line: the case is skipped).
func missingModules(t *testing.T) map[string]string {
	py := pyref.Python(t, lmevalref.Modules...)
	out := map[string]string{}
	for name, mods := range refNeeds {
		var lacks, pkgs []string
		for _, m := range mods {
			if exec.Command(py, "-c", "import "+m[0]).Run() != nil {
				lacks, pkgs = append(lacks, m[0]), append(pkgs, m[1])
			}
		}
		if len(lacks) > 0 {
			out[name] = fmt.Sprintf("%s: %s cannot import %s (apt-get install -y %s)", name, py, strings.Join(lacks, ", "), strings.Join(pkgs, " "))
		}
	}
	return out
}

// scriptedServer answers each prompt lm-eval's model was given with that
// document's output (uncut: tally cuts at its stop sequences), and any
// other prompt with an error naming it.
func scriptedServer(t *testing.T, byPrompt map[string]string) (*httptest.Server, *[]string) {
	var mu sync.Mutex
	var unknown []string
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"object":"list","data":[{"id":"scripted","object":"model","created":1,"owned_by":"test"}]}`)
	})
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Prompt string `json:"prompt"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		text, ok := byPrompt[req.Prompt]
		if !ok {
			mu.Lock()
			unknown = append(unknown, req.Prompt)
			mu.Unlock()
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":{"message":"a prompt lm-eval did not give its model"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		// In pieces of at most 7 bytes, as a server streams tokens (whole
		// UTF-8 characters each).
		for len(text) > 0 {
			n := min(7, len(text))
			for n < len(text) && !utf8Start(text[n]) {
				n++
			}
			b, _ := json.Marshal(text[:n])
			fmt.Fprintf(w, "data: {\"choices\":[{\"text\":%s,\"finish_reason\":null}]}\n\n", b)
			text = text[n:]
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"\",\"finish_reason\":\"stop\"}]}\n\n")
		fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":3}}\n\ndata: [DONE]\n\n")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, &unknown
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// outputOf is the scripted model's output for a task's document.
func outputOf(outputs map[string]any, task string, docID int) (string, bool) {
	if m, ok := outputs[task].(map[string]any); ok {
		s, ok := m[fmt.Sprint(docID)].(string)
		return s, ok
	}
	if l, ok := outputs["*"].([]any); ok && len(l) > 0 {
		s, ok := l[docID%len(l)].(string)
		return s, ok
	}
	return "", false
}

// readFiles reads the results file and the samples files (by task) under
// an output folder.
func readFiles(t *testing.T, out string) (*lmevalref.Value, map[string][]*lmevalref.Value) {
	t.Helper()
	res, _ := filepath.Glob(filepath.Join(out, "*", "results_*.json"))
	if len(res) != 1 {
		t.Fatalf("results files under %s: %v", out, res)
	}
	b, err := os.ReadFile(res[0])
	if err != nil {
		t.Fatal(err)
	}
	results, err := lmevalref.Parse(b)
	if err != nil {
		t.Fatalf("%s: %v", res[0], err)
	}
	samples := map[string][]*lmevalref.Value{}
	files, _ := filepath.Glob(filepath.Join(out, "*", "samples_*.jsonl"))
	for _, f := range files {
		base := filepath.Base(f)
		task := strings.TrimPrefix(base[:strings.LastIndexByte(base, '_')], "samples_")
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 1<<26)
		for sc.Scan() {
			v, err := lmevalref.Parse(sc.Bytes())
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			samples[task] = append(samples[task], v)
		}
		fh.Close()
	}
	return results, samples
}

func compareRefCase(t *testing.T, c lmevalref.Case, rc refCase, dir string) {
	want, wantSamples := readFiles(t, c.Out)
	byPrompt := map[string]string{}
	for task, lines := range wantSamples {
		for _, l := range lines {
			var id int
			fmt.Sscan(l.Obj["doc_id"].Text, &id)
			prompt := l.Obj["arguments"].Obj["gen_args_0"].Obj["arg_0"].Text
			text, ok := outputOf(c.Outputs, task, id)
			if !ok {
				t.Fatalf("no output for %s document %d", task, id)
			}
			byPrompt[prompt] = text
		}
	}
	srv, unknown := scriptedServer(t, byPrompt)
	out := filepath.Join(dir, "tally")
	args := []string{"run", "--model", "openai:scripted", "--base-url", srv.URL + "/v1", "--tasks", c.Task, "--data", c.Data,
		"--store", filepath.Join(dir, "tally.db"), "--output-path", out}
	args = append(args, rc.args...)
	cmd := exec.Command(built, args...)
	if rc.python {
		// The bridge's worker imports the task's module as lm-eval does:
		// lm-eval's source and the harness's stubs (datasets) on its path.
		// lm_eval/__init__.py reads its version from the package's
		// metadata, which an install writes: a dist-info says what the
		// harness's patched importlib.metadata.version says.
		stubs, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "lmevalref", "stubs"))
		meta := filepath.Join(dir, "site")
		info := filepath.Join(meta, "lm_eval-0.4.9.2+4e7e0d47.dist-info")
		if err := os.MkdirAll(info, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(info, "METADATA"), []byte("Metadata-Version: 2.1\nName: lm_eval\nVersion: 0.4.9.2+4e7e0d47\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		// The harness's nltk stand-in says 3.9.1, which IFEval's
		// instructions_util asserts at import.
		nltkInfo := filepath.Join(meta, "nltk-3.9.1.dist-info")
		if err := os.MkdirAll(nltkInfo, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(nltkInfo, "METADATA"), []byte("Metadata-Version: 2.1\nName: nltk\nVersion: 3.9.1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd.Args = append(cmd.Args, "--python", pyref.Python(t, lmevalref.Modules...))
		cmd.Env = append(os.Environ(), "PYTHONPATH="+strings.Join([]string{lmevalref.LMEval(t), lmevalref.Sacrebleu(t), stubs, meta}, string(os.PathListSeparator)))
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("tally %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	for _, p := range *unknown {
		t.Errorf("tally's prompt is not one lm-eval built:\n%q", p)
	}
	got, gotSamples := readFiles(t, out)
	report := func(what string, diffs []string) {
		const most = 30
		for i, d := range diffs {
			if i == most {
				t.Errorf("%s: … and %d more", what, len(diffs)-most)
				break
			}
			t.Errorf("%s: %s", what, d)
		}
	}
	report("results", lmevalref.Diff(want, got, refRules))
	var tasks []string
	for task := range wantSamples {
		tasks = append(tasks, task)
	}
	sort.Strings(tasks)
	for _, task := range tasks {
		w, g := wantSamples[task], gotSamples[task]
		if len(w) != len(g) {
			t.Errorf("samples of %s: %d lines, lm-eval %d", task, len(g), len(w))
			continue
		}
		for i := range w {
			report(fmt.Sprintf("samples_%s line %d", task, i+1), lmevalref.Diff(w[i], g[i], refRules))
		}
	}
	for task := range gotSamples {
		if _, ok := wantSamples[task]; !ok {
			t.Errorf("samples file of %s, which lm-eval does not write", task)
		}
	}
}
