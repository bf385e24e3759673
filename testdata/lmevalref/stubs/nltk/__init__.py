"""Stand-in: RULER's prepare_niah imports nltk (and checks its version
and punkt_tab data) at import time; the reference cases read RULER's
documents from files, never splitting a sentence."""


class _Data:
    @staticmethod
    def find(name):
        return name


data = _Data()


def download(*args, **kwargs):
    return True


def sent_tokenize(text, *args, **kwargs):
    raise RuntimeError("nltk stub: no sentence splitting in the reference harness")
