// Package lmevalcli understands the command-line habits of
// lm-evaluation-harness users: its flag spellings (--num_fewshot,
// --output_path, --model hf --model_args pretrained=…) either work as
// aliases of tally's flags or fail with one line naming tally's spelling.
//
// The table Flags is the single source: the flag normaliser, the
// unknown-flag messages and the README's "Coming from lm-eval" table (checked
// by a test) all follow it.
package lmevalcli

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// Flag is one of lm-evaluation-harness's flags and what tally makes of it.
type Flag struct {
	// LMEval is lm-eval's spelling, without the dashes (num_fewshot).
	LMEval string
	// Tally is the tally flag it is an alias of, without the dashes; ""
	// when tally refuses it.
	Tally string
	// Note says, in one line, what tally does instead: why a refused flag
	// has no equivalent and which flags to use, or how an alias differs.
	Note string
}

// Flags lists the lm-eval flags tally knows, in the README table's order.
var Flags = []Flag{
	{"model", "model", "takes the model itself: a directory, org/name, a .gguf file, ollama:NAME, openai:NAME; lm-eval's `--model hf --model_args pretrained=X` works too, and a model type tally has no backend for (vllm, sglang, …) is refused"},
	{"model_args", "model-args", "pretrained=, base_url=, model= (local-completions), num_concurrent=, device= map onto --model, --base-url, --concurrency, --device; other keys are refused, naming tally's flags"},
	{"tasks", "tasks", "built-in names or YAML paths; `--tasks list` (or `tally tasks list`) lists them"},
	{"num_fewshot", "fewshot", "solved examples before each prompt (the task's own default otherwise)"},
	{"batch_size", "concurrency", "requests in flight (native backend: the batch); auto is tally's own choice (the native engine's batch of up to 8 that its memory plan fits; 4 for a server, or OLLAMA_NUM_PARALLEL)"},
	{"output_path", "output-path", "results_*.json and samples_<task>_*.jsonl under DIR/<model>/, each stop setting an lm-eval filter (f1,nl)"},
	{"log_samples", "log-samples", "accepted and changes nothing: the samples files are always written with --output-path"},
	{"apply_chat_template", "chat", "prompts through the model's chat template"},
	{"limit", "limit", "N samples of each task, or below 1 a fraction of each task's samples, ceil(total × limit) as in lm-eval"},
	{"device", "device", "cpu (default), cuda or xla for the native backend"},
	{"gen_kwargs", "", "tally decodes greedily; set the token budget with --max-tokens N and stop sequences with --stop NAME=SEQ"},
	{"seed", "", "tally decodes greedily, so there is no sampling seed; the few-shot draw's seed is --set fewshot_seed=N"},
	{"include_path", "", "pass a task YAML by path: --tasks path/to/task.yaml"},
	{"use_cache", "", "every generation is kept in --store PATH (default ./tally.db) and reused by the next run"},
}

// lookup returns lm-eval's flag spelled name (underscores or dashes).
func lookup(name string) (Flag, bool) {
	name = strings.ReplaceAll(name, "-", "_")
	for _, f := range Flags {
		if f.LMEval == name {
			return f, true
		}
	}
	return Flag{}, false
}

// Normalize is a pflag normalisation function: an lm-eval spelling becomes
// the tally flag it is an alias of, and any other underscore a dash
// (--max_tokens is --max-tokens).
func Normalize(_ *pflag.FlagSet, name string) pflag.NormalizedName {
	if f, ok := lookup(name); ok && f.Tally != "" {
		return pflag.NormalizedName(f.Tally)
	}
	return pflag.NormalizedName(strings.ReplaceAll(name, "_", "-"))
}

// FlagError turns pflag's "unknown flag" into one line that says what to
// type: an lm-eval spelling gets tally's spelling; another name gets "did
// you mean" with the closest of the command's flags (fs, which may be nil),
// as a mistyped command does. cmd is the command path ("tally report").
// Other errors are returned as they are.
func FlagError(cmd string, fs *pflag.FlagSet, err error) error {
	var ive *pflag.InvalidValueError
	if errors.As(err, &ive) {
		return invalidValue(ive)
	}
	var ne *pflag.NotExistError
	if !errors.As(err, &ne) {
		return err
	}
	name := ne.GetSpecifiedName()
	f, ok := lookup(name)
	switch {
	case !ok:
		if name == "" {
			return err
		}
		if near := Suggest(fs, name); len(near) > 0 {
			return fmt.Errorf("unknown flag --%s for `%s`: did you mean --%s? (`%s --help` lists its flags)", name, cmd, strings.Join(near, " or --"), cmd)
		}
		return fmt.Errorf("unknown flag --%s for `%s` (`%s --help` lists its flags)", name, cmd, cmd)
	case f.Tally == "":
		return fmt.Errorf("--%s is lm-eval's flag: %s", name, f.Note)
	default:
		return fmt.Errorf("--%s is lm-eval's spelling of tally's --%s, which `%s` does not take (see `%s --help`)", name, f.Tally, cmd, cmd)
	}
}

// invalidValue is pflag's "invalid argument" as one line in tally's words,
// "--limit x: want …", a number's parse error said as what is wanted
// rather than strconv's words.
func invalidValue(e *pflag.InvalidValueError) error {
	fl, cause := e.GetFlag(), e.Unwrap()
	var ne *strconv.NumError
	if errors.As(cause, &ne) {
		switch fl.Value.Type() {
		case "bool":
			cause = errors.New("want true or false")
		case "float32", "float64":
			cause = errors.New("want a number")
		default:
			cause = errors.New("want a whole number")
		}
		if errors.Is(ne.Err, strconv.ErrRange) {
			cause = errors.New("out of range")
		}
	}
	return fmt.Errorf("--%s %s: %w", fl.Name, e.GetValue(), cause)
}

// Suggest returns the flags of fs (hidden ones left out) that name is
// probably a misspelling of: those it is a prefix of, or that a prefix of
// it is (--task for --tasks, --tasks-list for --tasks), or within two
// edits of it; the nearest first.
func Suggest(fs *pflag.FlagSet, name string) []string {
	if fs == nil {
		return nil
	}
	name = strings.ToLower(strings.ReplaceAll(name, "_", "-"))
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	fs.VisitAll(func(fl *pflag.Flag) {
		if fl.Hidden || fl.Name == name {
			return
		}
		d := editDistance(name, fl.Name)
		prefix := len(name) >= 3 && (strings.HasPrefix(fl.Name, name) || strings.HasPrefix(name, fl.Name))
		if d <= 2 || prefix {
			if prefix {
				d = min(d, 1)
			}
			cs = append(cs, cand{fl.Name, d})
		}
	})
	slices.SortStableFunc(cs, func(a, b cand) int { return a.d - b.d })
	var out []string
	for _, c := range cs {
		if c.d == cs[0].d {
			out = append(out, c.name)
		}
	}
	return out
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// ModelForms is what tally's --model takes, in one line: every command's
// --model help and every message about a model that is none say it.
const ModelForms = "a Hugging Face model directory (config.json, *.safetensors, tokenizer.json), org/name in the Hugging Face cache, " +
	"a .gguf file, an Ollama manifest (~/.ollama/models/manifests/…), ollama:NAME (an Ollama server), " +
	"openai:NAME (an OpenAI-compatible server: vLLM, SGLang, llama.cpp, TGI), imported:NAME (outputs stored by tally import) or demo"

// modelTypes are lm-eval's --model values that tally reads: the kind of
// model, whose identity is in --model_args.
var modelTypes = []string{"hf", "hf-auto", "huggingface", "local-completions", "local-chat-completions",
	"openai-completions", "openai-chat-completions"}

// otherTypes are lm-eval's other --model values: backends tally does not
// have. A model served by vLLM, SGLang or llama.cpp's server is reached
// through its OpenAI-compatible API (openai:NAME --base-url URL).
var otherTypes = []string{"vllm", "vllm-vlm", "sglang", "sglang-generate", "gguf", "ggml", "hf-multimodal", "mamba_ssm",
	"textsynth", "anthropic-completions", "anthropic-chat", "anthropic-chat-completions", "openvino", "neuronx", "ipex",
	"habana", "watsonx_llm", "nemo_lm", "steered", "dummy", "hf-audiolm-qwen", "winml"}

// serverTypes are the model types that name a served model (model=NAME)
// on an OpenAI-compatible server; the chat ones prompt through its template.
var serverTypes = map[string]bool{"local-completions": false, "openai-completions": false,
	"local-chat-completions": true, "openai-chat-completions": true}

// modelArgKeys map --model_args keys onto tally flags ("model" is
// handled by the model type).
var modelArgKeys = map[string]string{"pretrained": "model", "base_url": "base-url", "num_concurrent": "concurrency",
	"batch_size": "concurrency", "device": "device", "dtype": "dtype"}

// ApplyModelArgs reads --model and --model-args (lm-eval's --model_args)
// from a parsed flag set and sets the tally flags they name: --model hf
// --model_args pretrained=/m,device=cuda is --model /m --device cuda, and
// --model local-completions --model_args model=NAME,base_url=URL is
// --model openai:NAME --base-url URL (the /completions endpoint trimmed to
// the API root). A key maps only onto a flag the command has; others are
// refused with tally's spelling. Without --model_args, an lm-eval model
// type as --model is refused with what tally's --model takes, unless a
// file of that name exists; so is, with or without it, a model type tally
// has no backend for (vllm, sglang, …). Flag sets without --model-args
// are left alone.
func ApplyModelArgs(fs *pflag.FlagSet) error {
	argsFlag, modelFlag := fs.Lookup("model-args"), fs.Lookup("model")
	if argsFlag == nil || modelFlag == nil {
		return nil
	}
	model := modelFlag.Value.String()
	isType, isOther := slices.Contains(modelTypes, model), slices.Contains(otherTypes, model)
	if isType || isOther {
		if _, err := os.Stat(model); err == nil {
			isType, isOther = false, false // a model directory that happens to be called so
		}
	}
	if isOther {
		return fmt.Errorf("--model %s is lm-eval's model type for a backend tally does not have (a model a vLLM, SGLang or llama.cpp server serves is "+
			"--model openai:NAME --base-url URL); tally's --model takes %s", model, ModelForms)
	}
	if !argsFlag.Changed {
		if isType {
			return fmt.Errorf("--model %s is lm-eval's model type; tally's --model takes the model itself: %s; or add --model_args pretrained=PATH", model, ModelForms)
		}
		return nil
	}
	if !isType && modelFlag.Changed {
		return fmt.Errorf("--model %s with --model_args: give the model once (--model PATH, or --model hf --model_args pretrained=PATH); "+
			"lm-eval's model types tally reads are %s", model, strings.Join(modelTypes, ", "))
	}
	set := map[string]string{}
	for _, kv := range strings.Split(argsFlag.Value.String(), ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return fmt.Errorf("--model_args %q: want KEY=VALUE[,KEY=VALUE…]", kv)
		}
		flag, err := modelArgFlag(fs, model, k)
		if err != nil {
			return err
		}
		switch flag {
		case "model":
			if chat, served := serverTypes[model]; served {
				v = "openai:" + v
				if chat {
					set["chat"] = "true"
				}
			}
		case "base-url":
			v = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(v, "/"), "/completions"), "/chat")
		}
		set[flag] = v
	}
	if _, ok := set["model"]; !ok {
		return errors.New("--model_args names no model: add pretrained=PATH (or model=NAME for a server)")
	}
	for _, flag := range slices.Sorted(maps.Keys(set)) {
		if fl := fs.Lookup(flag); flag != "model" && fl.Changed && fl.Value.String() != set[flag] {
			return fmt.Errorf("--model_args gives %s=%s but --%s is %s: give it once", flag, set[flag], flag, fl.Value.String())
		}
		if err := fs.Set(flag, set[flag]); err != nil {
			return fmt.Errorf("--model_args: --%s %s: %w", flag, set[flag], err)
		}
	}
	return nil
}

// modelArgFlag is the tally flag a --model_args key sets on this flag set.
func modelArgFlag(fs *pflag.FlagSet, modelType, key string) (string, error) {
	flag, ok := modelArgKeys[key]
	if key == "model" {
		if _, served := serverTypes[modelType]; served {
			flag, ok = "model", true
		}
	}
	if ok && fs.Lookup(flag) != nil {
		return flag, nil
	}
	return "", fmt.Errorf("--model_args %s: tally has no such setting; its model flags are --model, --base-url, --device, --concurrency, --chat (see `tally run --help`)", key)
}
