"""Stand-in: RULER's modules build word lists from wonderwords at import
time; the reference cases read RULER's documents from files, never drawing
a word."""


class RandomWord:
    def __init__(self, *args, **kwargs):
        self._categories = {"nouns": ["noun"], "adjectives": ["adjective"], "verbs": ["verb"]}
