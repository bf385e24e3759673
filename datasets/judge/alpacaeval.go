package judge

import (
	"strings"

	"tally/internal/pyliteral"
)

// PairTemplate is a pairwise judge prompt: the system and user turns of an
// AlpacaEval annotator's chat prompt, with the placeholders {instruction},
// {output_1} and {output_2} in User.
type PairTemplate struct {
	// Name is the annotator the template comes from.
	Name string
	// System is the system turn's text.
	System string
	// User is the user turn's text, with the placeholders.
	User string
}

// alpacaEvalSystem and alpacaEvalUser are the turns of
// src/alpaca_eval/evaluators_configs/alpaca_eval_gpt4/alpaca_eval.txt
// (tatsu-lab/alpaca_eval commit cd543a149df89434d8a54582c0151c0b945c3d20),
// each stripped as utils.prompt_to_chatml strips message contents.
const alpacaEvalSystem = `You are a helpful assistant, that ranks models by the quality of their answers.`

const alpacaEvalUser = `I want you to create a leaderboard of different of large-language models. To do so, I will give you the instructions (prompts) given to the models, and the responses of two models. Please rank the models based on which responses would be preferred by humans. All inputs and outputs should be python dictionaries.

Here is the prompt:
{
    "instruction": """{instruction}""",
}

Here are the outputs of the models:
[
    {
        "model": "model_1",
        "answer": """{output_1}"""
    },
    {
        "model": "model_2",
        "answer": """{output_2}"""
    }
]

Now please rank the models by the quality of their answers, so that the model with rank 1 has the best output. Then return a list of the model names and ranks, i.e., produce the following output:
[
    {'model': <model-name>, 'rank': <model-rank>},
    {'model': <model-name>, 'rank': <model-rank>}
]

Your response must be a valid Python dictionary and should contain nothing else because we will directly execute it in Python. Please provide the ranking that the majority of humans would give.`

// AlpacaEvalTemplate returns the prompt of AlpacaEval 1's alpaca_eval_gpt4
// annotator (tatsu-lab/alpaca_eval commit
// cd543a149df89434d8a54582c0151c0b945c3d20,
// src/alpaca_eval/evaluators_configs/alpaca_eval_gpt4/alpaca_eval.txt and
// configs.yaml: fn_completion_parser ranking_parser, 100 tokens,
// temperature 0). The judge is asked for a Python list ranking
// "model_1" (the output shown first) and "model_2"; ParsePreference reads
// it.
func AlpacaEvalTemplate() PairTemplate {
	return PairTemplate{Name: "alpaca_eval_gpt4", System: alpacaEvalSystem, User: alpacaEvalUser}
}

// Prompt fills the template and flattens the two chat turns into one plain
// prompt: the system text, a blank line, then the user text (no role
// markers, no trailing newline), for a judge run as an ordinary tally
// model. Placeholders are filled as alpaca_eval's utils.make_prompts does:
// {instruction}, then {output_1}, then {output_2}, each replacing only its
// first occurrence in the text built so far (so a placeholder inside an
// earlier value is the one replaced, as upstream). Unlike upstream, which
// splits the filled ChatML text at <|im_start|>/<|im_end|>, texts holding
// those markers are kept whole.
func (t PairTemplate) Prompt(instruction, first, second string) string {
	u := strings.Replace(t.User, "{instruction}", instruction, 1)
	u = strings.Replace(u, "{output_1}", first, 1)
	u = strings.Replace(u, "{output_2}", second, 1)
	if t.System == "" {
		return u
	}
	return t.System + "\n\n" + u
}

// ParsePreference reads an alpaca_eval_gpt4 judge answer as
// ranking_parser (alpaca_eval src/alpaca_eval/completion_parsers.py) does:
// the whole answer must be a Python literal (ast.literal_eval, CPython
// 3.11) that is a list or tuple of dicts, each with a "model" key; the
// first whose "model" is "model_1" gives "rank", which must equal 1 or 2
// (1.0, True and 1+0j count, as Python's == says). Rank 1 means the
// output shown first is better.
//
// order is the sample's order: "ab" (baseline shown first) or "ba" (model
// shown first). The result is in AlpacaEval's coding relative to the
// model (1 = baseline wins, 2 = model wins), the swap undone as
// alpaca_eval's 3 - x does. ok is false when nothing parses (AlpacaEval
// records NaN) or order is neither "ab" nor "ba". AlpacaEval gives 1.5
// without asking the judge when both outputs are identical; see
// PairReference.Identical.
func ParsePreference(judgeOutput, order string) (pref float64, ok bool) {
	if order != "ab" && order != "ba" {
		return 0, false
	}
	rank, ok := rankingParser(judgeOutput)
	if !ok {
		return 0, false
	}
	if order == "ba" {
		return 3 - rank, true
	}
	return rank, true
}

// rankingParser is ranking_parser with model_1_name "model_1".
func rankingParser(completion string) (float64, bool) {
	if completion == "" {
		return 0, false // ValueError: the completion is empty
	}
	v, err := pyliteral.Eval(completion)
	if err != nil {
		return 0, false
	}
	// [c for c in ordered_completions if c["model"] == model_1_name][0]:
	// iterating anything but a list or tuple of dicts holding "model"
	// raises (str, bytes, set and dict members are never dicts).
	if v.Kind != pyliteral.List && v.Kind != pyliteral.Tuple {
		return 0, false
	}
	var match *pyliteral.Value
	for i := range v.Items {
		c := &v.Items[i]
		if c.Kind != pyliteral.Dict {
			return 0, false
		}
		m, found := dictGet(c, "model")
		if !found {
			return 0, false
		}
		if match == nil && m.Kind == pyliteral.Str && m.Str == "model_1" {
			match = c
		}
	}
	if match == nil {
		return 0, false
	}
	rank, found := dictGet(match, "rank")
	if !found {
		return 0, false
	}
	for _, want := range []float64{1, 2} {
		if pyEqualsInt(rank, want) {
			return want, true
		}
	}
	return 0, false
}

// dictGet looks a str key up in a decoded dict (the last duplicate wins,
// as in a Python dict display).
func dictGet(d *pyliteral.Value, key string) (pyliteral.Value, bool) {
	for i := len(d.Items) - 1; i >= 0; i-- {
		if k := d.Items[i]; k.Kind == pyliteral.Str && k.Str == key {
			return d.Vals[i], true
		}
	}
	return pyliteral.Value{}, false
}

// pyEqualsInt is Python's v == n for a small int n.
func pyEqualsInt(v pyliteral.Value, n float64) bool {
	switch v.Kind {
	case pyliteral.Bool:
		return v.Bool && n == 1 || !v.Bool && n == 0
	case pyliteral.Int:
		return v.Int.IsInt64() && float64(v.Int.Int64()) == n
	case pyliteral.Float:
		return v.Float == n
	case pyliteral.Complex:
		return v.Imag == 0 && v.Float == n
	}
	return false
}
