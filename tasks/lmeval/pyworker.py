"""tally's Python bridge worker (tally/tasks/lmeval, pybridge.go).

tally starts this script with the interpreter the user named (--python)
and runs the Python functions of an lm-eval task folder that tally has no
Go port of, called as lm-eval calls them. It is tally's own code: it
imports a task's module from its file, under the name lm-eval's YAML
loader gives it, and calls what the task file names.

Protocol: frames on stdin and stdout, each a 4-byte big-endian length and
that many bytes of UTF-8 JSON. tally sends one request at a time,
{"id": N, "op": OP, ...}, and reads one answer, {"id": N, "ok": VALUE} or
{"id": N, "error": "ONE LINE"}. Values are JSON; a float that is not
finite is {"\\u0000float": "nan" | "inf" | "-inf"}. What the task's code
prints goes to standard error, never into the protocol.

Ops:
  describe {module, name}      -> {handle, repr, source, kind, name}
  doc      {handle, doc}       -> fn(doc)
  docs     {handle, docs}      -> list(fn(Dataset(docs)))
  results  {handle, doc, results} -> fn(doc, results) (a dict)
  agg      {handle, items}     -> fn(items)
  call0    {handle}            -> fn() (a fewshot_config.samples function)
  registered_filter {name}     -> {handle}: lm-eval's registered filter
  filter   {handle, kwargs, custom, resps, docs} -> the filter's apply
  metric   {handle, kwargs, gold, result, multiple} -> {metric: value, ...}
"""
import importlib.util
import inspect
import json
import math
import numbers
import os
import random
import re
import struct
import sys
import traceback

FLOAT_KEY = "\u0000float"
# tally runs this script with "python3 -c": its frames are "<string>"'s.
WORKER_FILE = globals().get("__file__", "<string>")


def main():
    proto_in = os.fdopen(os.dup(0), "rb", buffering=0)
    proto_out = os.fdopen(os.dup(1), "wb", buffering=0)
    # The task's code may print or read: give it standard error and no
    # input, so that nothing it does touches the frames.
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    sys.dont_write_bytecode = True
    w = Worker()
    while True:
        req = read_frame(proto_in)
        if req is None:
            return
        rid = req.get("id")
        try:
            out = {"id": rid, "ok": to_wire(w.handle(req))}
        except BaseException as e:  # noqa: B902 - a task's error is the answer
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
            out = {"id": rid, "error": one_line(e)}
        write_frame(proto_out, out)


def read_frame(f):
    hdr = read_exact(f, 4)
    if hdr is None:
        return None
    (n,) = struct.unpack(">I", hdr)
    body = read_exact(f, n)
    if body is None:
        raise EOFError("tally closed the bridge inside a frame")
    return json.loads(body.decode("utf-8"), object_hook=from_wire)


def read_exact(f, n):
    buf = b""
    while len(buf) < n:
        chunk = f.read(n - len(buf))
        if not chunk:
            if buf == b"" and n > 0:
                return None
            return None
        buf += chunk
    return buf


def write_frame(f, obj):
    body = json.dumps(obj, ensure_ascii=False, allow_nan=False).encode("utf-8")
    f.write(struct.pack(">I", len(body)) + body)


def from_wire(d):
    if len(d) == 1 and FLOAT_KEY in d:
        return float(d[FLOAT_KEY])
    return d


def to_wire(v, depth=0):
    """A value as JSON can carry it, or TypeError naming what cannot."""
    if depth > 1000:
        raise TypeError("a value nested more than 1000 deep")
    if v is None or isinstance(v, (bool, str)):
        return v
    if type(v).__name__ == "bool_":  # numpy.bool_
        return bool(v)
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, numbers.Real):
        f = float(v)
        if math.isnan(f):
            return {FLOAT_KEY: "nan"}
        if math.isinf(f):
            return {FLOAT_KEY: "inf" if f > 0 else "-inf"}
        return f
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            if not isinstance(k, str):
                raise TypeError(f"a dict key {k!r} is not a str, which tally cannot keep")
            out[k] = to_wire(x, depth + 1)
        return out
    if isinstance(v, (list, tuple)):
        return [to_wire(x, depth + 1) for x in v]
    if hasattr(v, "tolist"):  # a NumPy array or scalar
        return to_wire(v.tolist(), depth + 1)
    raise TypeError(f"a value of type {type(v).__name__} cannot be given to tally")


ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+>")


def one_line(e):
    """The exception and where in the task's code it was raised, on one line."""
    msg = f"{type(e).__name__}: {e}".replace("\n", " ")
    tb = traceback.extract_tb(e.__traceback__)
    for fr in reversed(tb):
        if fr.filename != WORKER_FILE:
            msg += f" ({os.path.basename(fr.filename)}:{fr.lineno})"
            break
    return msg


def module_name(path):
    """The name lm-eval's YAML loader imports a module file under."""
    p = str(path)
    i = p.find("/lm_eval/tasks/")
    if i >= 0:
        rel = p[i + len("/lm_eval/tasks/"):]
        return "lm_eval.tasks." + rel.replace(".py", "").replace("/", ".")
    return os.path.splitext(p)[0]


class Docs:
    """A stand-in for datasets.Dataset where the datasets package is not
    installed: a list of rows with the methods task functions call."""

    def __init__(self, rows):
        self._rows = [dict(r) for r in rows]

    @classmethod
    def from_list(cls, rows):
        return cls(rows)

    @property
    def column_names(self):
        seen = {}
        for r in self._rows:
            for k in r:
                seen.setdefault(k, None)
        return list(seen)

    features = column_names

    def __len__(self):
        return len(self._rows)

    def __iter__(self):
        return (dict(r) for r in self._rows)

    def __getitem__(self, i):
        if isinstance(i, str):
            return [r.get(i) for r in self._rows]
        if isinstance(i, slice):
            rows = self._rows[i]
            return {k: [r.get(k) for r in rows] for k in self.column_names}
        return dict(self._rows[i])

    def to_list(self):
        return [dict(r) for r in self._rows]

    def map(self, fn, with_indices=False, remove_columns=None, batched=False, **kw):
        if batched:
            cols = self.column_names
            batch = {k: [r.get(k) for r in self._rows] for k in cols}
            upd = fn(batch, list(range(len(self._rows)))) if with_indices else fn(batch)
            merged = dict(batch)
            merged.update(upd or {})
            for c in _names(remove_columns):
                merged.pop(c, None)
            n = len(next(iter(merged.values()))) if merged else 0
            return Docs([{k: v[i] for k, v in merged.items()} for i in range(n)])
        out = []
        for i, r in enumerate(self._rows):
            upd = fn(dict(r), i) if with_indices else fn(dict(r))
            new = dict(r)
            new.update(upd or {})
            for c in _names(remove_columns):
                new.pop(c, None)
            out.append(new)
        return Docs(out)

    def filter(self, fn, with_indices=False, **kw):
        return Docs([r for i, r in enumerate(self._rows) if (fn(dict(r), i) if with_indices else fn(dict(r)))])

    def select(self, indices):
        return Docs([self._rows[i] for i in indices])

    def rename_column(self, old, new):
        return Docs([{(new if k == old else k): v for k, v in r.items()} for r in self._rows])

    def remove_columns(self, cols):
        cols = _names(cols)
        return Docs([{k: v for k, v in r.items() if k not in cols} for r in self._rows])

    def shuffle(self, *a, **kw):
        raise NotImplementedError("shuffle in tally's stand-in for datasets.Dataset (install datasets)")


def seed_globals():
    """Seed Python's and NumPy's global generators as lm-eval's
    simple_evaluate seeds them (random 0, NumPy 1234), before each
    process_docs: a function that shuffles with them (GPQA's) then gives
    the same documents whatever ran before it in this worker."""
    random.seed(0)
    np = sys.modules.get("numpy")
    if np is None:
        try:
            import numpy as np
        except ImportError:
            return
    np.random.seed(1234)


def _names(cols):
    if cols is None:
        return []
    return [cols] if isinstance(cols, str) else list(cols)


def dataset_of(rows):
    try:
        import datasets  # noqa: F401

        return datasets.Dataset.from_list(rows)
    except ImportError:
        return Docs(rows)


def rows_of(ds):
    if isinstance(ds, list):
        return ds
    if hasattr(ds, "to_list"):
        return ds.to_list()
    return [dict(r) for r in ds]


class Worker:
    def __init__(self):
        self.fns = []
        self.handles = {}
        self.modules = {}

    def handle(self, req):
        op = req.get("op")
        if op == "describe":
            return self.describe(req["module"], req["name"])
        if op == "registered_filter":
            return self.registered_filter(req["name"])
        fn = self.fns[req["handle"]]
        if op == "doc":
            return fn(req["doc"])
        if op == "docs":
            seed_globals()
            return rows_of(fn(dataset_of(req["docs"])))
        if op == "results":
            out = fn(req["doc"], req["results"])
            if not isinstance(out, dict):
                raise TypeError(f"process_results gave {type(out).__name__}, not a dict")
            return out
        if op == "agg":
            return fn(req["items"])
        if op == "call0":
            return fn()
        if op == "filter":
            kwargs = req.get("kwargs") or {}
            if req.get("custom"):
                return fn(req["resps"], req["docs"])
            return fn(**kwargs).apply(req["resps"], req["docs"])
        if op == "metric":
            return self.metric(fn, req)
        raise ValueError(f"unknown op {op!r}")

    def load(self, path):
        mod = self.modules.get(path)
        if mod is None:
            spec = importlib.util.spec_from_file_location(module_name(path), path)
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot load {path}")
            mod = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = mod
            try:
                spec.loader.exec_module(mod)
            except BaseException:
                sys.modules.pop(spec.name, None)
                raise
            self.modules[path] = mod
        return mod

    def describe(self, path, name):
        key = (path, name)
        if key not in self.handles:
            fn = getattr(self.load(path), name)
            if not callable(fn):
                raise TypeError(f"{name} is not callable")
            self.handles[key] = len(self.fns)
            self.fns.append(fn)
        fn = self.fns[self.handles[key]]
        try:
            source = inspect.getsource(fn)
        except (TypeError, OSError):
            source = None
        kind = "class" if inspect.isclass(fn) else "function"
        return {
            "handle": self.handles[key],
            "repr": ADDRESS.sub(" at 0x0>", str(fn)),
            "source": source,
            "kind": kind,
            "name": getattr(fn, "__name__", name),
        }

    def registered_filter(self, name):
        """A filter of lm-eval's registry by name (its own, or one a task
        module imported before registered), as build_filter_ensemble
        finds it."""
        key = ("<registry>", name)
        if key not in self.handles:
            import lm_eval.filters  # noqa: F401 - registers lm-eval's own filters
            from lm_eval.api.registry import get_filter

            self.handles[key] = len(self.fns)
            self.fns.append(get_filter(name))
        return {"handle": self.handles[key]}

    def metric(self, fn, req):
        """One metric function on a filtered response, as lm-eval's
        ConfigurableTask.process_results calls a metric for generate_until:
        keyword references/predictions lists (else, on TypeError, the pair),
        a list of golds scored each and 1.0 when any scores."""
        name = getattr(fn, "__name__", "metric")
        kwargs = req.get("kwargs") or {}
        gold, result = req["gold"], req["result"]
        call = getattr(fn, "__call__", fn)

        def one(g):
            try:
                score = call(references=[g], predictions=[result], **kwargs)
            except TypeError:
                score = call([g, result])
            return score

        if req.get("multiple"):
            golds = gold if isinstance(gold, list) else [gold]
            scores = []
            for g in golds:
                s = one(g)
                if isinstance(s, dict):
                    s = s[name]
                scores.append(s)
            return {name: 1.0 if any(scores) else 0.0}
        if type(gold) is not type(result) and not isinstance(result, list):
            gold = type(result)(gold)
        score = one(gold)
        if isinstance(score, dict):
            return dict(score)
        return {name: score}


if __name__ == "__main__":
    main()
