package countingstars

import "tally/datasets"

func init() {
	datasets.RegisterLoader(datasets.Loader{
		Name: "counting-stars",
		Doc:  "the Counting-Stars generator over a context_data directory (lang, test_type, stars, lengths, seed, scoring_rule)",
		Samples: func(req datasets.Request) ([]datasets.Sample, int, error) {
			f := req.Fields
			s, err := Generate(Options{Dir: req.Path, Lang: f.Lang, TestType: f.TestType, M: f.Stars, Lengths: f.Lengths, Seed: f.Seed, ScoringRule: f.ScoringRule})
			return s, 0, err
		},
	})
}
