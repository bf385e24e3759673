"""Python's re on the cases pyre_test.go sends: for each pattern, the
compile error or, for each text, every match of finditer (start, end and
the groups, None for a group that did not participate) and re.sub with
the template "<\\g<0>>". With {"classes": true} it also lists the code
points \\d, \\s and \\w match and those unassigned in Python's Unicode
database. The one reference for tally/internal/pyre."""
import json
import re
import sys
import unicodedata
import warnings

warnings.simplefilter("ignore")
req = json.load(sys.stdin)
out = {"python": sys.version.split()[0], "unicode": unicodedata.unidata_version, "cases": []}
for case in req.get("cases", []):
    try:
        pat = re.compile(case["pattern"])
    except (re.error, OverflowError, ValueError) as e:
        out["cases"].append({"error": str(e)})
        continue
    res = []
    for text in case["texts"]:
        ms = [[m.start(), m.end(), list(m.groups())] for m in pat.finditer(text)]
        try:
            sub = pat.sub(case["repl"], text)
        except (re.error, IndexError) as e:
            sub = None
        res.append({"matches": ms, "sub": sub})
    out["cases"].append({"error": None, "results": res})

out["escapes"] = [re.escape(s) for s in req.get("escapes", [])]

if req.get("classes"):
    def ranges(pred):
        rs, start = [], None
        for c in range(0x110000):
            if pred(c):
                if start is None:
                    start = c
            elif start is not None:
                rs.append([start, c - 1])
                start = None
        if start is not None:
            rs.append([start, 0x10FFFF])
        return rs
    out["classes"] = {
        "d": ranges(lambda c: re.match(r"\d", chr(c)) is not None),
        "s": ranges(lambda c: re.match(r"\s", chr(c)) is not None),
        "w": ranges(lambda c: re.match(r"\w", chr(c)) is not None),
        "isspace": ranges(lambda c: chr(c).isspace()),
        "unassigned": ranges(lambda c: unicodedata.category(chr(c)) == "Cn"),
    }
json.dump(out, sys.stdout)
