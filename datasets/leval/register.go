package leval

import "tally/datasets"

func init() {
	datasets.RegisterLoader(datasets.Loader{
		Name: "leval",
		Doc:  "an L-Eval task file, prompts built as L-Eval builds them (max_prompt_tokens, truncate)",
		Samples: func(req datasets.Request) ([]datasets.Sample, int, error) {
			l, err := Load(req.Path, Options{MaxPromptTokens: req.Fields.MaxPromptTokens, Truncate: req.Fields.Truncate, SkipBad: req.SkipBad})
			if err != nil {
				return nil, 0, err
			}
			return l.Samples, l.Skipped, nil
		},
	})
}
