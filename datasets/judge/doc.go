// Package judge turns judge-scored benchmarks into ordinary tally samples
// and parses the judge's answers into scores.
//
// The judge is an ordinary tally model: its prompts are samples made here,
// its outputs are stored as its generations, and the parsers are pure
// functions applied at scoring time (so a parser fix needs no judge run).
//
// Pairwise (AlpacaEval): LoadPairs reads annotations.json(.gz) or JSON
// lines; PairwiseSamples makes both orders of each pair with a
// PairTemplate (AlpacaEvalTemplate is the alpaca_eval_gpt4 annotator's
// prompt); ParsePreference reads a judge answer as that annotator's
// ranking_parser does and returns AlpacaEval's preference for the model,
// for tally/scoring/winrate and tally/scoring/judge.
//
// 3C3H (AraGen): LoadThreeC3H joins task entries with a model's answers;
// ThreeC3HSamples assembles jury.py's judge prompt around a given system
// prompt (sp1.md or sp2.md); ScoreThreeC3H extracts and weights the scores
// with tally/scoring/threec3h.
package judge
