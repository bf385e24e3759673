"""Stand-in for a recent typing_extensions, which Debian's 4.4 is not:
lm-eval uses `deprecated` (4.5) and TypedDict's `extra_items` (PEP 728),
for annotations only. Here TypedDict classes are plain dicts, the
functional form included, and `deprecated` marks nothing."""
from typing import *  # noqa: F401,F403
from typing import NotRequired  # noqa: F401


class _TypedDictMeta(type):
    def __new__(mcls, name, bases, ns, **kwargs):
        ns = dict(ns)
        ns.setdefault("__class_getitem__", classmethod(lambda cls, item: cls))
        return super().__new__(mcls, name, (dict,), ns)

    def __init__(cls, name, bases, ns, **kwargs):
        super().__init__(name, (dict,), ns)

    def __call__(cls, *args, **kwargs):
        if cls is TypedDict:  # TypedDict("Name", {field: type}, total=...)
            return _TypedDictMeta(args[0], (), {})
        return dict(*args, **kwargs)


class TypedDict(metaclass=_TypedDictMeta):
    pass


def deprecated(msg, *, category=DeprecationWarning, stacklevel=1):
    def wrap(obj):
        return obj

    return wrap
