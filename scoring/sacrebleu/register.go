package sacrebleu

import "tally/scoring"

// Reference names sacrebleu's code the metrics reproduce.
const Reference = "github.com/mjpost/sacrebleu sacrebleu/metrics/{bleu,chrf,ter,lib_ter}.py BLEU, CHRF, TER (defaults, as lm-evaluation-harness's lm_eval/api/metrics.py bleu, chrf and ter call corpus_bleu, corpus_chrf, corpus_ter) at " + Commit

func init() {
	scoring.RegisterCorpus(scoring.CorpusMetric{Name: "bleu", Stats: BLEUStatsLen, Sample: BLEUStats, Score: BLEUScore, HigherIsBetter: true, Reference: Reference})
	scoring.RegisterCorpus(scoring.CorpusMetric{Name: "chrf", Stats: CHRFStatsLen, Sample: CHRFStats, Score: CHRFScore, HigherIsBetter: true, Reference: Reference})
	scoring.RegisterCorpus(scoring.CorpusMetric{Name: "ter", Stats: TERStatsLen, Sample: TERStats, Score: TERScore, HigherIsBetter: false, Reference: Reference})
}
