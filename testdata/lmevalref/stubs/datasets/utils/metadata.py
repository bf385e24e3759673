"""Stand-in: lm-eval's EvaluationTracker imports MetadataConfigs for Hub
dataset cards, which a reference run never writes."""


class MetadataConfigs(dict):
    pass
