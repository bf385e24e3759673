# Reference for the lm-eval writer test: lm-eval's doc_hash of each
# document line of a JSON Lines data file (json.loads keeps the file's
# member order), as lm_eval/evaluator.py computes it: the SHA-256 of
# json.dumps(doc, indent=2, ensure_ascii=False).
import hashlib, json, sys

lines = json.load(sys.stdin)
json.dump([hashlib.sha256(json.dumps(json.loads(l), indent=2, ensure_ascii=False).encode("utf-8")).hexdigest() for l in lines], sys.stdout)
