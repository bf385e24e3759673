"""Stand-in: lm-eval's W&B logger imports pandas at module level and uses
it only when logging to W&B, which a reference run never does."""


class DataFrame:
    pass
