package lmeval

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"tally/internal/pyre"
	"tally/internal/pystr"
)

// Ports of the Python modules of lm-eval's MMLU-Pro, MMLU-ProX and
// llama3 instruct MMLU task folders (lm-eval 4e7e0d47, lm_eval/tasks/...):
// few-shot and prompt formatting, and process_docs filters by subject.

func init() {
	// mmlu_prox/{af,ar,...,zu}/utils.py: one file in every language folder.
	registerHookModule(&hookModule{where: "mmlu_prox/<lang>/utils.py", defs: map[string]hookDef{
		"format_cot_example": mmluProxFormat,
		"process_docs":       processDocsBy("subject", "category", ""),
	}}, "cfb27b5b32d75fccf7745e19b4b96668856b5a7c44e7e7a4533854e19e6ac5e1")
	// mmlu_pro/utils.py
	registerHookModule(&hookModule{where: "mmlu_pro/utils.py", defs: map[string]hookDef{
		"format_cot_example": mmluProFormat,
		"format_cot_target":  mmluProTarget,
		"process_docs":       processDocsBy("subject", "category", ""),
	}}, "d47eae06ecf1e9535b033394de62185327a1dca977cb29049003699adeb92801")
	// llama3/instruct/mmlu_pro/utils.py
	registerHookModule(&hookModule{where: "llama3/instruct/mmlu_pro/utils.py", defs: map[string]hookDef{
		"fewshot_to_text": llamaMMLUProFewshot,
		"process_docs":    processDocsBy("subject", "category", ""),
	}}, "888465171665585c62815c028558b7c88984ec68fc0ec70a1eb55c4a93b632b9")
	// llama3/instruct/mmlu_{de,es,fr,hi,it,pt,th}/utils.py: the rows of
	// the Llama 3.1 evals' details whose subtask_name is
	// "mmlu_<lang>_chat.<subtask>".
	registerHookModule(&hookModule{where: "llama3/instruct/mmlu_<lang>/utils.py", defs: map[string]hookDef{
		"process_docs": processDocsBy("subtask", "subtask_name", `example\["subtask_name"\] == f"([^"{}]*)\{subtask\}"`),
	}},
		"dda88dd84883bc5ca021dbc243d852c0676d861c334b29bf727ceae28042f8ec", // mmlu_de
		"158bc3053efb54cf56fa8e65004a547d4e33df5352ed214822d6a5830a76e71a", // mmlu_es
		"22cd22866cf35c164df9b64dce59f448e6c8a44899f12bbdd2de9297203171f4", // mmlu_fr
		"58142960109ac3c7dfec0167bffe1a4cda5b773bc01b5530d61f959f740f41a5", // mmlu_hi
		"9e11710d3d95fe8debee8835db50993a0dbb8ebad966aac54a473eb9514a775c", // mmlu_it
		"50e74c808630015bbdc7bda1e2de4bcc7a52a863f58c14b7b01a621c6939aed8", // mmlu_pt
		"eae32645e56c57e8a8b963e95b14d1a4b66277b5514a04f33e0a3bbb39267856", // mmlu_th
	)
}

// processDocsBy ports "def process_docs(dataset, ARG): return
// dataset.filter(lambda x: x[COLUMN] == ARG)" called through a partial
// giving ARG; with prefix set (a regular expression over the function's
// source whose group is the f-string's literal part), the value compared
// is that prefix followed by ARG.
func processDocsBy(arg, column, prefix string) hookDef {
	return func(m *pyModule, kw *Map) (*pyHook, error) {
		v, err := kwString(kw, arg)
		if err != nil {
			return nil, err
		}
		if prefix != "" {
			g := regexp.MustCompile(prefix).FindStringSubmatch(defSource(m.src, "process_docs"))
			if g == nil {
				return nil, fmt.Errorf("process_docs: its filter is not the one ported")
			}
			v = g[1] + v
		}
		return &pyHook{docs: filterDocs(column, v)}, nil
	}
}

// mmluProxLangLibs is lm_eval/tasks/mmlu_prox/lang_libs.py, whose
// LANG_LIBS the module imports (its digest checked too).
const mmluProxLangLibs = "582a892b4e8419c16384552b369d7ba828418c57768ccdd82d61172116b3da55"

// mmluProxFormat ports mmlu_prox's format_cot_example(example,
// including_answer=True): the language's "Question:" line, the question,
// its "Options:" line, "X. option" for each of option_0..option_9 that is
// not None, then the worked answer (cot_content with the language's
// "A: Let's think step by step." made its "Answer: ...") and a blank
// line, or the "Answer: Let's think step by step." line alone. The
// language is the module's folder's name (basename(dirname(__file__))),
// its strings LANG_LIBS[lang].
func mmluProxFormat(m *pyModule, kw *Map) (*pyHook, error) {
	withAnswer, err := kwBool(kw, "including_answer", true)
	if err != nil {
		return nil, err
	}
	libs := filepath.Join(filepath.Dir(filepath.Dir(m.path)), "lang_libs.py")
	lm, digest, err := readModule(libs)
	if err != nil {
		return nil, fmt.Errorf("mmlu_prox's lang_libs.py: %w", err)
	}
	if digest != mmluProxLangLibs {
		return nil, fmt.Errorf("%w: mmlu_prox's lang_libs.py is not the one tally has a port of (SHA-256 %s…)", errNoPort, digest[:12])
	}
	all, err := moduleLiteral(lm.src, "LANG_LIBS")
	if err != nil {
		return nil, err
	}
	lang := filepath.Base(filepath.Dir(m.path))
	entry, _ := all.(*Map).Get(lang)
	list, ok := entry.([]any)
	if !ok || len(list) < 5 {
		return nil, fmt.Errorf("LANG_LIBS has no %q (KeyError)", lang)
	}
	libStr := make([]string, 5)
	for i := range libStr {
		if libStr[i], ok = list[i].(string); !ok {
			return nil, fmt.Errorf("LANG_LIBS[%q][%d] is not a str", lang, i)
		}
	}
	choices := "ABCDEFGHIJKLMNOP"
	return &pyHook{doc: func(doc *Map) (any, error) {
		q, err := docStr(doc, "question")
		if err != nil {
			return nil, err
		}
		var b strings.Builder
		b.WriteString(libStr[0] + "\n" + q + "\n" + libStr[1] + "\n")
		for i := range 10 { // max_opt_num
			opt, ok := doc.Get(fmt.Sprintf("option_%d", i))
			if !ok {
				return nil, fmt.Errorf("the document has no %q (KeyError)", fmt.Sprintf("option_%d", i))
			}
			if opt != nil {
				fmt.Fprintf(&b, "%c. %s\n", choices[i], pyStr(opt))
			}
		}
		if withAnswer {
			cot, err := docStr(doc, "cot_content")
			if err != nil {
				return nil, err
			}
			b.WriteString(strings.ReplaceAll(cot, libStr[4], libStr[2]) + "\n\n")
		} else {
			b.WriteString(libStr[2])
		}
		return b.String(), nil
	}}, nil
}

// mmluProFormat ports mmlu_pro's format_cot_example(example,
// including_answer=True): "Question:", the question, "Options:", "X.
// option" (stripped) for the first ten options, then the worked answer
// (cot_content, "A: Let's think step by step." made "Answer: ...") and a
// blank line, or "Answer: Let's think step by step.".
func mmluProFormat(m *pyModule, kw *Map) (*pyHook, error) {
	withAnswer, err := kwBool(kw, "including_answer", true)
	if err != nil {
		return nil, err
	}
	return &pyHook{doc: func(doc *Map) (any, error) {
		q, err := docStr(doc, "question")
		if err != nil {
			return nil, err
		}
		ov, ok := doc.Get("options")
		if !ok {
			return nil, fmt.Errorf("the document has no \"options\" (KeyError)")
		}
		opts, ok := ov.([]any)
		if !ok {
			return nil, fmt.Errorf("options %s is not a list", pyStr(ov))
		}
		var b strings.Builder
		b.WriteString("Question:\n" + q + "\nOptions:\n")
		for i, o := range opts {
			if i >= 10 {
				break
			}
			s, ok := o.(string)
			if !ok {
				return nil, fmt.Errorf("option %s has no strip() (not a str)", pyStr(o))
			}
			fmt.Fprintf(&b, "%c. %s\n", "ABCDEFGHIJ"[i], pystr.Strip(s))
		}
		if withAnswer {
			cot, err := docStr(doc, "cot_content")
			if err != nil {
				return nil, err
			}
			b.WriteString(strings.ReplaceAll(cot, "A: Let's think step by step.", "Answer: Let's think step by step.") + "\n\n")
		} else {
			b.WriteString("Answer: Let's think step by step.")
		}
		return b.String(), nil
	}}, nil
}

// mmluProTarget ports mmlu_pro's format_cot_target: cot_content without
// "A: Let's think step by step. ".
func mmluProTarget(m *pyModule, kw *Map) (*pyHook, error) {
	if _, err := kwBool(kw, "including_answer", true); err != nil {
		return nil, err
	}
	return &pyHook{doc: func(doc *Map) (any, error) {
		cot, err := docStr(doc, "cot_content")
		if err != nil {
			return nil, err
		}
		return strings.ReplaceAll(cot, "A: Let's think step by step. ", ""), nil
	}}, nil
}

var llamaBestAnswer = pyre.MustCompile(`The answer is \(([A-Z])\)\.`)

// llamaMMLUProFewshot ports llama3/instruct/mmlu_pro's fewshot_to_text:
// cot_content without its "A: Let's think step by step." prefix,
// stripped, "The answer is (X)." made "The best answer is X.".
func llamaMMLUProFewshot(m *pyModule, kw *Map) (*pyHook, error) {
	if kw.Len() > 0 {
		return nil, fmt.Errorf("fewshot_to_text takes no keyword arguments")
	}
	return &pyHook{doc: func(doc *Map) (any, error) {
		cot, err := docStr(doc, "cot_content")
		if err != nil {
			return nil, err
		}
		text := pystr.Strip(strings.TrimPrefix(cot, "A: Let's think step by step."))
		return llamaBestAnswer.Sub(`The best answer is \1.`, text)
	}}, nil
}
