"""repr(ast.literal_eval(src)) for each source pyliteral_test.go sends
(JSON on stdin: {"sources": [...]}; null where literal_eval raises)."""
import ast
import json
import sys

out = []
for src in json.load(sys.stdin)["sources"]:
    try:
        out.append(repr(ast.literal_eval(src)))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        out.append(None)
json.dump({"python": sys.version.split()[0], "reprs": out}, sys.stdout)
