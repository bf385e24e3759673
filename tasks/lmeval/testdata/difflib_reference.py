"""Python's difflib.SequenceMatcher(None, a, b).ratio() (autojunk on), the
backend fuzzywuzzy's fuzz.ratio uses without python-Levenshtein, on the
pairs hooks_longctx_test.go sends (JSON on stdin: [[a, b], ...]); ratios
as float.hex()."""
import difflib
import json
import sys

pairs = json.load(sys.stdin)
json.dump([difflib.SequenceMatcher(None, a, b).ratio().hex() for a, b in pairs], sys.stdout)
