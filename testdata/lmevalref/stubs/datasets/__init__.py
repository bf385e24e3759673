"""A stand-in for Hugging Face `datasets`, which Debian does not ship: just
what lm-evaluation-harness touches when a reference harness replaces
ConfigurableTask.download with a reader of local JSON Lines files. A
Dataset is a list of rows (dicts, their keys in the file's order); its
features are the columns in order of first appearance, as the Hub's JSON
builder infers them for rows that share their keys."""

__version__ = "4.0.0"


class DownloadMode:
    REUSE_DATASET_IF_EXISTS = "reuse_dataset_if_exists"
    REUSE_CACHE_IF_EXISTS = "reuse_cache_if_exists"
    FORCE_REDOWNLOAD = "force_redownload"


class _Features(dict):
    pass


class Dataset:
    def __init__(self, rows):
        self._rows = [dict(r) for r in rows]

    @classmethod
    def from_list(cls, rows):
        return cls(rows)

    @property
    def features(self):
        f = _Features()
        for r in self._rows:
            for k in r:
                f.setdefault(k, None)
        return f

    @property
    def column_names(self):
        return list(self.features)

    def __len__(self):
        return len(self._rows)

    def __iter__(self):
        return iter(dict(r) for r in self._rows)

    def __getitem__(self, i):
        if isinstance(i, str):
            return [r.get(i) for r in self._rows]
        if isinstance(i, slice):
            rows = self._rows[i]
            return {k: [r.get(k) for r in rows] for k in self.features}
        return dict(self._rows[i])

    def to_list(self):
        return [dict(r) for r in self._rows]

    def filter(self, fn, with_indices=False, **kw):
        if with_indices:
            return Dataset([r for i, r in enumerate(self._rows) if fn(dict(r), i)])
        return Dataset([r for r in self._rows if fn(dict(r))])

    def map(self, fn, with_indices=False, remove_columns=None, batched=False, **kw):
        if batched:
            raise NotImplementedError("batched map in the datasets stub")
        out = []
        for i, r in enumerate(self._rows):
            row = dict(r)
            upd = fn(row, i) if with_indices else fn(row)
            if upd is None:
                upd = {}
            new = dict(r)
            new.update(upd)
            for c in remove_columns or []:
                new.pop(c, None)
            out.append(new)
        return Dataset(out)

    def select(self, indices):
        return Dataset([self._rows[i] for i in indices])

    def rename_column(self, old, new):
        return Dataset([{(new if k == old else k): v for k, v in r.items()} for r in self._rows])

    def remove_columns(self, cols):
        cols = [cols] if isinstance(cols, str) else cols
        return Dataset([{k: v for k, v in r.items() if k not in cols} for r in self._rows])


class DatasetDict(dict):
    pass


# The reference harness's data folder: load_dataset reads
# DATA/[NAME/]SPLIT.jsonl there (a task's own loading code, such as
# BabiLong's custom_dataset, calls it).
local_root = None


def _read(path):
    import json
    with open(path, encoding="utf-8") as fh:
        return Dataset([json.loads(l) for l in fh if l.strip()])


def load_dataset(path=None, name=None, split=None, **kwargs):
    import os
    if local_root is None:
        raise RuntimeError("datasets stub: no downloads in the reference harness")
    root = local_root
    if name and os.path.isdir(os.path.join(root, name)):
        root = os.path.join(root, name)
    if split is not None:
        return _read(os.path.join(root, split + ".jsonl"))
    return DatasetDict({f[:-6]: _read(os.path.join(root, f)) for f in sorted(os.listdir(root)) if f.endswith(".jsonl")})


class config:
    HF_DATASETS_TRUST_REMOTE_CODE = False
