"""A stand-in for Hugging Face `evaluate`, which Debian does not ship:
task modules import it at the top (french_bench/utils.py) for metrics the
reference cases do not run; loading one is an error."""


def load(path, *args, **kwargs):
    raise RuntimeError(f"evaluate stub: evaluate.load({path!r}) is not available in the reference harness")
