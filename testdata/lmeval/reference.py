"""The project's own transcription of what lm-evaluation-harness (commit
4e7e0d47f33bc71070c1d38394bafbb52b117163) does with a generate_until task
file, for tally's tests: load the YAML with its includes (PyYAML, the
!function tag recorded), apply TaskConfig's defaults, render doc_to_text,
doc_to_target, description and gen_prefix with jinja2 in lm-eval's
environment, draw the shots (random.Random(seed).sample, or first_n),
build the prompt as fewshot_context and build_qa_turn do (plain text), and
score predictions through the filter pipelines and exact_match
(evaluate's code path, with NumPy) as process_results does.

Input (JSON on stdin): {"tasks": [{"yaml": PATH, "splits": {SPLIT: FILE},
"predictions": [[str, ...] per document], "set": {KEY: VALUE}, "seed":
int}]}. Output: per task, the prompts, the targets and, per document and
prediction, the scores keyed "METRIC,FILTER" (or an error's class name).
"""
import ast
import json
import os
import random
import re
import string
import sys

import jinja2
import numpy as np
import yaml


def load_yaml(path, seen=None):
    path = os.path.abspath(path)
    seen = set() if seen is None else seen
    if path in seen:
        raise ValueError("include cycle")
    seen.add(path)

    class Loader(yaml.CSafeLoader if getattr(yaml, "__with_libyaml__", False) else yaml.FullLoader):
        pass

    yaml.add_constructor("!function", lambda l, n: ("!function", l.construct_scalar(n)), Loader=Loader)
    with open(path, "rb") as f:
        cfg = yaml.load(f, Loader=Loader)
    if "include" not in cfg:
        return cfg
    includes = cfg.pop("include")
    merged = {}
    for inc in includes if isinstance(includes, list) else [includes]:
        inc_cfg = load_yaml(os.path.join(os.path.dirname(path), inc), seen)
        inc_cfg.pop("task_list", None)
        merged.update(inc_cfg)
    merged.update(cfg)
    return merged


def regex_replace(s, pattern, repl, count=0):
    return re.sub(pattern, repl, s, count=count)


env = jinja2.Environment(loader=jinja2.BaseLoader, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
env.filters["regex_replace"] = regex_replace


def apply_template(template, doc):
    return env.from_string(template).render(**doc)


def maybe_delimit(prefix, suffix, delimiter=" "):
    if not prefix:
        return suffix or ""
    if not suffix:
        return prefix or ""
    return prefix + suffix if (prefix[-1].isspace() or suffix[0].isspace()) else prefix + delimiter + suffix


def requires_delimiter(prefix, suffix):
    if prefix == "":
        return False
    return not (prefix[-1].isspace() or suffix[0].isspace())


class Task:
    def __init__(self, cfg, docs_by_split, seed):
        for k in ("tag", "group", "task_list"):
            cfg.pop(k, None)
        self.cfg = cfg
        self.target_delimiter = cfg.get("target_delimiter", " ")
        self.fewshot_delimiter = cfg.get("fewshot_delimiter", "\n\n")
        gk = cfg.get("generation_kwargs")
        self.num_fewshot = cfg.get("num_fewshot") or 0
        fs = dict(cfg.get("fewshot_config") or {})
        self.fs = {"sampler": "default", "split": cfg.get("fewshot_split"), "samples": None,
                   "doc_to_text": cfg.get("doc_to_text"), "doc_to_target": cfg.get("doc_to_target"),
                   "gen_prefix": cfg.get("gen_prefix"), "fewshot_delimiter": self.fewshot_delimiter,
                   "target_delimiter": self.target_delimiter}
        self.fs.update(fs)
        self.test_split = cfg.get("test_split")
        self.eval_split = self.test_split or cfg.get("validation_split")
        self.docs = docs_by_split[self.eval_split]
        self.features = []
        for d in self.docs:
            for k in d:
                if k not in self.features:
                    self.features.append(k)
        if self.fs["split"] is not None:
            self.pool = docs_by_split[self.fs["split"]]
        elif self.fs["samples"] is not None:
            self.pool = self.fs["samples"]
        elif cfg.get("training_split"):
            self.pool = docs_by_split.get(cfg["training_split"])
        elif cfg.get("validation_split"):
            self.pool = docs_by_split.get(cfg["validation_split"])
        else:
            self.pool = self.docs
        self.rnd = random.Random(seed)
        self.filters = cfg.get("filter_list") or [{"name": "none", "filter": [{"function": "take_first"}]}]
        self.metrics = cfg.get("metric_list") or [{"metric": "exact_match"}]
        first = self.doc_to_target(self.docs[0])
        self.multiple_target = len(first) if isinstance(first, list) else 0

    def doc_to_text(self, doc, spec=None):
        spec = self.cfg.get("doc_to_text") if spec is None else spec
        if spec in self.features:
            return doc[spec]
        return apply_template(spec, doc)

    def doc_to_target(self, doc, spec=None):
        spec = self.cfg.get("doc_to_target") if spec is None else spec
        if isinstance(spec, (int, list)):
            return spec
        if spec in self.features:
            return doc[spec]
        s = apply_template(spec, doc)
        if len(s) >= 2 and s[0] == "[" and s[-1] == "]":
            try:
                return ast.literal_eval(s)
            except (SyntaxError, ValueError):
                return s
        return s

    def resolve_field(self, doc, field):
        if field:
            return doc[field] if field in doc else apply_template(field, doc)

    def doc_to_prefix(self, doc):
        gp = self.cfg.get("gen_prefix")
        if gp is not None:
            return doc[gp] if gp in self.features else apply_template(gp, doc)
        return None

    def sample(self, doc):
        n = self.num_fewshot
        eval_doc = doc if self.fs["split"] == self.test_split else None
        pool = list(self.pool)
        if self.fs["sampler"] == "first_n":
            p = [x for x in pool if x != eval_doc] if eval_doc is not None else pool
            assert n <= len(p)
            return p[:n]
        if eval_doc is None:
            return self.rnd.sample(pool, n)
        return [x for x in self.rnd.sample(pool, n + 1) if x != eval_doc][:n]

    def qa_turn(self, q, a=None, gen_prefix=None, tgt_delim=" ", few_delim="\n\n"):
        assert isinstance(q, str)
        has_answer = a is not None and a != ""
        out = q + (tgt_delim if has_answer and not gen_prefix else
                   tgt_delim if gen_prefix and requires_delimiter(q, gen_prefix) else "")
        if has_answer:
            text = a[0] if isinstance(a, list) else a
            assert isinstance(text, str)
            out += maybe_delimit(gen_prefix, text, " ") + few_delim
        elif gen_prefix:
            out += gen_prefix
        return out

    def prompt(self, doc):
        desc = self.resolve_field(doc, self.cfg.get("description")) or ""
        out = maybe_delimit(None, desc, self.fewshot_delimiter)
        if self.num_fewshot > 0:
            for fs in self.sample(doc):
                out += self.qa_turn(self.doc_to_text(fs, self.fs["doc_to_text"]), self.doc_to_target(fs, self.fs["doc_to_target"]),
                                    self.resolve_field(fs, self.fs["gen_prefix"]), self.fs["target_delimiter"], self.fs["fewshot_delimiter"])
        return out + self.qa_turn(self.doc_to_text(doc), None, self.doc_to_prefix(doc), self.target_delimiter, "")


def regex_filter(resps, regex_pattern=r"#### (\-?[0-9\.\,]+)", group_select=0, fallback="[invalid]"):
    regex = re.compile(regex_pattern)
    out = []
    for inst in resps:
        filtered = []
        for resp in inst:
            if not isinstance(resp, str):
                resp = ""
            match = regex.findall(resp)
            if match:
                match = match[group_select]
                if isinstance(match, tuple):
                    match = [m for m in match if m]
                    match = match[0] if match else fallback
                match = match.strip()
            else:
                match = fallback
            filtered.append(match)
        out.append(filtered)
    return out


def apply_filter(fn, resps, kw):
    if fn == "regex":
        return regex_filter(resps, **kw)
    if fn == "take_first":
        return [r[0] for r in resps]
    if fn == "remove_whitespace":
        return [[r.strip() for r in inst] for inst in resps]
    if fn == "lowercase":
        return [[r.lower() for r in inst] for inst in resps]
    if fn == "uppercase":
        return [[r.upper() for r in inst] for inst in resps]
    if fn == "map":
        m, d = kw.get("mapping_dict") or {}, kw.get("default_value")
        return [[m.get(r, d) for r in inst] for inst in resps]
    raise ValueError(fn)


def exact_match(predictions, references, regexes_to_ignore=None, ignore_case=False, ignore_punctuation=False, ignore_numbers=False):
    if regexes_to_ignore is not None:
        for s in regexes_to_ignore:
            predictions = np.array([re.sub(s, "", x) for x in predictions])
            references = np.array([re.sub(s, "", x) for x in references])
    else:
        predictions = np.asarray(predictions)
        references = np.asarray(references)
    if ignore_case:
        predictions = np.char.lower(predictions)
        references = np.char.lower(references)
    if ignore_punctuation:
        table = string.punctuation.maketrans("", "", string.punctuation)
        predictions = np.char.translate(predictions, table=table)
        references = np.char.translate(references, table=table)
    if ignore_numbers:
        table = string.digits.maketrans("", "", string.digits)
        predictions = np.char.translate(predictions, table=table)
        references = np.char.translate(references, table=table)
    return float(np.mean(predictions == references))


def score(task, doc, pred):
    out = {}
    for f in task.filters:
        resps = [[pred]]
        for step in f["filter"]:
            kw = {k: v for k, v in step.items() if k != "function"}
            resps = apply_filter(step["function"], resps, kw)
        result = resps[0]
        gold = task.doc_to_target(doc)
        if task.multiple_target:
            gold = list(gold) if isinstance(gold, list) else gold
        elif type(gold) is not type(result) and not isinstance(result, list):
            gold = type(result)(gold)
        for m in task.metrics:
            kw = {k: v for k, v in m.items() if k not in ("metric", "aggregation", "higher_is_better", "hf_evaluate")}
            if task.multiple_target:
                if not isinstance(gold, list):
                    gold = [gold]
                s = exact_match(references=gold, predictions=[result for _ in gold], **kw)
                v = 1.0 if s > 0.0 else 0.0
            else:
                v = exact_match(references=[gold], predictions=[result], **kw)
            out[m["metric"] + "," + f["name"]] = v
    return out


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


results = []
for t in json.load(sys.stdin)["tasks"]:
    cfg = load_yaml(t["yaml"])
    for k, v in (t.get("set") or {}).items():
        cfg[k] = yaml.safe_load(v)
    docs = {split: read_jsonl(path) for split, path in t["splits"].items()}
    task = Task(cfg, docs, t.get("seed", 1234))
    prompts = [task.prompt(d) for d in task.docs]
    targets = [task.doc_to_target(d) for d in task.docs]
    scores = []
    for d, preds in zip(task.docs, t.get("predictions") or [[] for _ in task.docs]):
        row = []
        for p in preds:
            try:
                row.append(score(task, d, p))
            except Exception as e:
                row.append({"error": type(e).__name__})
        scores.append(row)
    results.append({"prompts": prompts, "targets": targets, "scores": scores})
json.dump({"python": sys.version.split()[0], "results": results}, sys.stdout)
