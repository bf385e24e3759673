# Reference for report's pyDumpsIndent: each input text is read with
# Python's json.loads and written back with json.dumps(indent=2,
# ensure_ascii=False), as lm-eval's doc_hash hashes a document.
import json, sys

texts = json.load(sys.stdin)
json.dump([json.dumps(json.loads(t), indent=2, ensure_ascii=False) for t in texts], sys.stdout)
