"""exact_match as lm-evaluation-harness computes it
(lm_eval/api/metrics.py exact_match_hf_evaluate, ported from Hugging Face
evaluate's metrics/exact_match): the project's own transcription of that
code path, NumPy included, for exactmatch_test.go. Input (JSON on stdin):
{"cases": [{"predictions": [...], "references": [...], "options": {...}}]}."""
import json
import re
import string
import sys

import numpy as np


def exact_match(predictions, references, regexes_to_ignore=None, ignore_case=False,
                ignore_punctuation=False, ignore_numbers=False):
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
        repl_table = string.punctuation.maketrans("", "", string.punctuation)
        predictions = np.char.translate(predictions, table=repl_table)
        references = np.char.translate(references, table=repl_table)
    if ignore_numbers:
        repl_table = string.digits.maketrans("", "", string.digits)
        predictions = np.char.translate(predictions, table=repl_table)
        references = np.char.translate(references, table=repl_table)
    score_list = predictions == references
    return float(np.mean(score_list))


out = [exact_match(c["predictions"], c["references"], **c["options"]) for c in json.load(sys.stdin)["cases"]]
json.dump({"python": sys.version.split()[0], "numpy": np.__version__, "scores": out}, sys.stdout)
