"""str.lower(), str.upper() and str.isspace() over every code point, the
code points whose category starts with "P" (lm-eval's MultiChoiceRegexFilter's
punctuation table, range(sys.maxunicode)), and
lower() and upper() of the strings pystr_test.go sends (JSON on stdin:
{"strings": [...]}). Code points whose mapping is themselves are left out."""
import json
import sys
import unicodedata

req = json.load(sys.stdin)
lower, upper = {}, {}
for c in range(0x110000):
    if 0xD800 <= c <= 0xDFFF:
        continue
    ch = chr(c)
    if ch.lower() != ch:
        lower[c] = ch.lower()
    if ch.upper() != ch:
        upper[c] = ch.upper()
json.dump({
    "python": sys.version.split()[0],
    "unicode": unicodedata.unidata_version,
    "lower": lower,
    "upper": upper,
    "punct": [c for c in range(sys.maxunicode) if unicodedata.category(chr(c)).startswith("P")],
    "unassigned": [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF and unicodedata.category(chr(c)) == "Cn"],
    "strings": [[s.lower(), s.upper(), s.strip()] for s in req["strings"]],
}, sys.stdout)
