"""sacrebleu's own code (the source tree of sacrebleu 2.6.0 from the
reference set, on sys.path) on the segments sacrebleu_test.go sends:
per segment the statistics BLEU, CHRF and TER compute with their defaults
(Metric._extract_corpus_statistics), per corpus (a list of segment
indices) corpus_bleu, corpus_chrf and corpus_ter as lm-eval calls them,
and math.exp / math.log of the numbers given.

Input (JSON on stdin): {"sacrebleu": DIR, "segments": [[hyp, [ref, ...]],
...], "corpora": [[i, ...], ...], "exp": [x, ...], "log": [x, ...]};
floats as float.hex() strings in and out."""
import json
import math
import sys

req = json.load(sys.stdin)
sys.path.insert(0, req["sacrebleu"])
import sacrebleu  # noqa: E402
from sacrebleu.metrics import BLEU, CHRF, TER  # noqa: E402

out = {"version": sacrebleu.__version__, "stats": {}, "corpora": []}
segs = req["segments"]
for name, metric in (("bleu", BLEU()), ("chrf", CHRF()), ("ter", TER())):
    rows = []
    for hyp, refs in segs:
        st = metric._extract_corpus_statistics([hyp], [[r] for r in refs])[0]
        rows.append([float(x).hex() for x in st])
    out["stats"][name] = rows
for idx in req["corpora"]:
    hyps = [segs[i][0] for i in idx]
    nref = len(segs[idx[0]][1])
    refs = [[segs[i][1][k] for i in idx] for k in range(nref)]
    out["corpora"].append({
        "bleu": sacrebleu.corpus_bleu(hyps, refs).score.hex(),
        "chrf": sacrebleu.corpus_chrf(hyps, refs).score.hex(),
        "ter": float(sacrebleu.corpus_ter(hyps, refs).score).hex(),
    })
out["exp"] = [math.exp(float.fromhex(x)).hex() for x in req["exp"]]
out["log"] = [math.log(float.fromhex(x)).hex() for x in req["log"]]
json.dump(out, sys.stdout)
