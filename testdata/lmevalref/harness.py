"""A reference harness that runs lm-evaluation-harness's own code on small
local data, for tally's tests (cmd/tally TestLMEvalReference).

Each case runs lm-eval's command line in this process (lm_eval._cli
HarnessCLI: `lm-eval run --model tally-scripted --tasks TASK.yaml
--output_path OUT --log_samples ...`), so that its TaskManager, task
loading, prompt building, samplers, filters, metrics, aggregation and its
EvaluationTracker's files are lm-eval's. Three things are replaced, and
nothing else:

- ConfigurableTask.download reads the case's JSON Lines files
  (DATA/[DATASET_NAME/]SPLIT.jsonl) instead of the Hub: `datasets` is not
  installed (stubs/datasets stands in for the little lm-eval touches);
- the model is ScriptedLM, registered as "tally-scripted": for each
  generate_until request it returns the case's fixed output for that task
  and document, cut where a server cuts at the request's stop sequences
  (at the earliest occurrence of any of them), as the continuation a model
  returns;
- Debian's typing_extensions lacks `deprecated` (stubs/typing_extensions);
  pandas, pytablewriter, transformers, rouge, wonderwords, nltk and scipy
  are imported by code the cases do not run (stubs/), and
  `datasets.load_dataset` reads the case's files (a task's own
  custom_dataset calls it); a case with "local_dataset" reads its files in
  place of the task's custom_dataset (RULER's, which synthesises its
  documents with the model's tokenizer: tally reads such documents from
  --data).

sacrebleu is imported from its source tree (the test extracts it and adds
its version.py), as lm-eval's bleu, chrf and ter call it.

Input (JSON on stdin): {"lm_eval": DIR holding lm_eval/, "sacrebleu": DIR
holding sacrebleu/ or "", "cases": [{"name", "task": YAML, "data": DIR,
"outputs": {TASK: {DOC_ID: TEXT}}, "out": DIR, "args": [extra CLI
arguments], "metadata": {...} or null, "local_dataset": bool}]}. Output (JSON on stdout): per
case, "ok" or "error" (the exception, with its traceback), and the
requests the model saw ([task, doc_id, prompt, gen_kwargs]).
"""
import contextlib
import io
import json
import os
import sys
import traceback

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    spec = json.load(sys.stdin)
    sys.path.insert(0, os.path.join(HERE, "stubs"))
    if spec.get("sacrebleu"):
        sys.path.insert(0, spec["sacrebleu"])
    sys.path.insert(0, spec["lm_eval"])
    os.environ["DISABLE_MULTIPROC"] = "1"  # bootstrap in-process (the same draws)
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

    import importlib.metadata as md

    real_version = md.version

    def version(name):
        if name in ("lm_eval", "lm-eval"):
            return "0.4.9.2+4e7e0d47"
        if name == "nltk":
            return "3.9.1"  # stubs/nltk, which RULER's prepare_niah checks
        return real_version(name)

    md.version = version

    import lm_eval.api.task as task_mod
    from lm_eval.api.model import LM
    from lm_eval.api.registry import register_model

    import datasets

    # fuzzywuzzy's fuzz.ratio with its pure-Python backend (difflib), as
    # `pip install fuzzywuzzy` gives it without python-Levenshtein.
    sys.modules["Levenshtein"] = None

    state = {"data": None, "outputs": {}, "requests": [], "local": False}

    def download(self, dataset_kwargs=None, **kwargs):
        if callable(self.config.custom_dataset) and not state["local"]:
            self.dataset = self.config.custom_dataset(
                **(self.config.metadata or {}), **(self.config.dataset_kwargs or {})
            )
            return
        root = state["data"]
        name = self.DATASET_NAME
        if name and os.path.isdir(os.path.join(root, name)):
            root = os.path.join(root, name)
        self.dataset = {}
        for f in sorted(os.listdir(root)):
            if f.endswith(".jsonl"):
                with open(os.path.join(root, f), encoding="utf-8") as fh:
                    rows = [json.loads(l) for l in fh if l.strip()]
                self.dataset[f[: -len(".jsonl")]] = datasets.Dataset(rows)

    task_mod.ConfigurableTask.download = download

    # lm-eval's task index of its whole tasks folder, built by its own
    # TaskIndex.build once for every case rather than once a case (seconds).
    from lm_eval.tasks import _index

    built = {}
    build = _index.TaskIndex.build

    def build_once(paths, **kw):
        key = (tuple(str(p) for p in paths), tuple(sorted(kw.items())))
        if key not in built:
            built[key] = build(paths, **kw)
        return dict(built[key])

    _index.TaskIndex.build = staticmethod(build_once)

    @register_model("tally-scripted")
    class ScriptedLM(LM):
        def __init__(self, **kwargs):
            super().__init__()

        @classmethod
        def create_from_arg_string(cls, arg_string, additional_config=None):
            return cls()

        @classmethod
        def create_from_arg_obj(cls, arg_dict, additional_config=None):
            return cls()

        def generate_until(self, requests, disable_tqdm=False):
            out = []
            for r in requests:
                ctx, kw = r.args
                outs = state["outputs"]
                if r.task_name in outs:
                    text = outs[r.task_name][str(r.doc_id)]
                else:
                    text = outs["*"][r.doc_id % len(outs["*"])]
                until = kw.get("until") or []
                if isinstance(until, str):
                    until = [until]
                cut = len(text)
                for s in until:
                    if s:
                        i = text.find(s)
                        if i >= 0:
                            cut = min(cut, i)
                state["requests"].append([r.task_name, r.doc_id, ctx, kw])
                out.append(text[:cut])
            return out

        def loglikelihood(self, requests, disable_tqdm=False):
            raise NotImplementedError("the scripted model generates only")

        def loglikelihood_rolling(self, requests, disable_tqdm=False):
            raise NotImplementedError("the scripted model generates only")

    from lm_eval._cli import HarnessCLI

    report = []
    for case in spec["cases"]:
        state["data"] = case["data"]
        state["local"] = bool(case.get("local_dataset"))
        datasets.local_root = case["data"]
        state["outputs"] = case["outputs"]
        state["requests"] = []
        argv = ["lm-eval", "run", "--model", "tally-scripted", "--model_args", "pretrained=scripted",
                "--tasks", case["task"], "--output_path", case["out"], "--log_samples", "--device", "cpu"]
        argv += case.get("args") or []
        if case.get("metadata") is not None:
            argv += ["--metadata", json.dumps(case["metadata"])]
        res = {"name": case["name"]}
        log = io.StringIO()
        old = sys.argv
        try:
            sys.argv = argv
            with contextlib.redirect_stdout(log):
                cli = HarnessCLI()
                cli.execute(cli.parse_args())
            res["ok"] = True
        except BaseException as e:  # noqa: BLE001 (SystemExit from argparse too)
            res["ok"] = False
            res["error"] = "".join(traceback.format_exception(e))
        finally:
            sys.argv = old
        res["stdout"] = log.getvalue()
        res["requests"] = state["requests"]
        report.append(res)
    json.dump({"cases": report}, sys.stdout)


if __name__ == "__main__":
    main()
