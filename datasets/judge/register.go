package judge

import (
	"fmt"
	"os"

	"tally/datasets"
)

func init() {
	datasets.RegisterLoader(datasets.Loader{
		Name: "pairwise-judge",
		Doc:  "AlpacaEval-style pairs: the judge's prompts in both orders",
		Samples: func(req datasets.Request) ([]datasets.Sample, int, error) {
			pairs, err := LoadPairs(req.Path)
			if err != nil {
				return nil, 0, err
			}
			return PairwiseSamples(req.Task, pairs, AlpacaEvalTemplate()), 0, nil
		},
	})
	datasets.RegisterLoader(datasets.Loader{
		Name: "3c3h-judge",
		Doc:  "an AraGen answers file (optionally joined with its questions file): the 3C3H judge's prompts (system_prompt)",
		Samples: func(req datasets.Request) ([]datasets.Sample, int, error) {
			if req.Fields.SystemPrompt == "" {
				return nil, 0, fmt.Errorf("field system_prompt: the judge system prompt file is needed (e.g. --set system_prompt=sp2.md)")
			}
			sys, err := os.ReadFile(req.Resolve(req.Fields.SystemPrompt))
			if err != nil {
				return nil, 0, fmt.Errorf("read judge system prompt: %w", err)
			}
			q := req.Fields.Questions
			if q != "" {
				q = req.Resolve(q)
			}
			entries, err := LoadThreeC3H(q, req.Path)
			if err != nil {
				return nil, 0, err
			}
			return ThreeC3HSamples(req.Task, entries, string(sys)), 0, nil
		},
	})
}
