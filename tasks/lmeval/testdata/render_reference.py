"""Renders templates as lm-evaluation-harness's lm_eval/utils.py
apply_template does (a jinja2 Environment with BaseLoader, StrictUndefined
and keep_trailing_newline=True), for jinja_test.go. Input (JSON on stdin):
{"cases": [{"template": str, "doc": {...}}]}; output: each rendering, or
the exception's class name."""
import json
import re
import sys

import jinja2
from jinja2 import BaseLoader, Environment, StrictUndefined


def regex_replace(string, pattern, repl, count: int = 0):
    return re.sub(pattern, repl, string, count=count)


env = Environment(loader=BaseLoader, undefined=StrictUndefined, keep_trailing_newline=True)
env.filters["regex_replace"] = regex_replace

out = []
for c in json.load(sys.stdin)["cases"]:
    try:
        out.append({"out": env.from_string(c["template"]).render(**c["doc"])})
    except Exception as e:  # the reference's error, by class
        out.append({"error": type(e).__name__})
json.dump({"python": sys.version.split()[0], "jinja2": jinja2.__version__, "results": out}, sys.stdout)
