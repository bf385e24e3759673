"""CPython's random.Random on the cases pyrandom_test.go sends (JSON on
stdin: {"cases": [{"seed": int, "ops": [[op, args...], ...]}]}); prints
each op's result in order. The one reference for tally/internal/pyrandom."""
import json
import random
import sys

out = []
for case in json.load(sys.stdin)["cases"]:
    r = random.Random(case["seed"])
    res = []
    for op in case["ops"]:
        if op[0] == "uint32":
            res.append(r.getrandbits(32))
        elif op[0] == "float":
            res.append(repr(r.random()))
        elif op[0] == "bits":
            res.append(r.getrandbits(op[1]))
        elif op[0] == "below":
            res.append(r.randrange(op[1]))
        elif op[0] == "sample":
            res.append(r.sample(range(op[1]), op[2]))
        elif op[0] == "shuffle":
            x = list(range(op[1]))
            r.shuffle(x)
            res.append(x)
    out.append(res)
json.dump({"python": sys.version.split()[0], "results": out}, sys.stdout)
