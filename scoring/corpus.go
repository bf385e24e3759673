package scoring

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"

	"tally/internal/pyrandom"
	"tally/scoring/stats"
)

// CorpusMetric is a metric of a whole set of predictions that is a
// function of the sum of per-sample statistics (sacrebleu's corpus BLEU,
// chrF and TER): each sample's statistics are stored as scores of their
// own (CorpusStatKey), and reports score any selection of samples from
// their sums.
type CorpusMetric struct {
	// Name is the metric's name ("bleu").
	Name string
	// Stats is the length of a sample's statistics.
	Stats int
	// Sample computes a prediction's statistics against its references.
	Sample func(pred string, refs []string) []float64
	// Score scores summed statistics.
	Score func(sum []float64) float64
	// HigherIsBetter says which way the metric improves.
	HigherIsBetter bool
	// Reference names the implementation reproduced.
	Reference string
}

var (
	corpusMu sync.RWMutex
	corpus   = map[string]CorpusMetric{}
)

// RegisterCorpus registers a corpus metric (from its package's init).
func RegisterCorpus(m CorpusMetric) {
	corpusMu.Lock()
	defer corpusMu.Unlock()
	if _, dup := corpus[m.Name]; dup {
		panic("scoring: corpus metric " + m.Name + " registered twice")
	}
	corpus[m.Name] = m
}

// DeferredPrefix starts the name of a corpus metric that stands for a
// metric aggregated elsewhere (an lm-eval task's Python aggregation
// function, run where lm-eval's files are written: tally/tasks/lmeval's
// bridge): each sample stores one statistic, 1, and the score of any
// selection is undefined, so that tally's tables show such a metric as
// n/a, never a number they did not compute. Every name with the prefix
// is such a metric, registered or not.
const DeferredPrefix = "py:"

// Corpus returns a registered corpus metric (or the deferred metric of a
// name with DeferredPrefix).
func Corpus(name string) (CorpusMetric, bool) {
	corpusMu.RLock()
	defer corpusMu.RUnlock()
	m, ok := corpus[name]
	if !ok && strings.HasPrefix(name, DeferredPrefix) && len(name) > len(DeferredPrefix) {
		return CorpusMetric{Name: name, Stats: 1, HigherIsBetter: true,
			Reference: "aggregated where lm-eval's files are written (an lm-eval task's Python aggregation function)",
			Sample:    func(string, []string) []float64 { return []float64{1} },
			Score:     func([]float64) float64 { return math.NaN() }}, true
	}
	return m, ok
}

// CorpusStatKey names a sample's i-th statistic of a corpus metric under
// a score key's suffix (",FILTER" for an lm-eval task, or ""):
// "bleu#3,none".
func CorpusStatKey(name string, i int, suffix string) string {
	return name + "#" + strconv.Itoa(i) + suffix
}

// ParseCorpusStatKey reads a CorpusStatKey back: the corpus metric's score
// key ("bleu,none"), the statistic's index, whether it is one of a
// registered corpus metric's.
func ParseCorpusStatKey(key string) (scoreKey string, i int, ok bool) {
	h := strings.IndexByte(key, '#')
	if h <= 0 {
		return "", 0, false
	}
	rest := key[h+1:]
	end := strings.IndexByte(rest, ',')
	if end < 0 {
		end = len(rest)
	}
	n, err := strconv.Atoi(rest[:end])
	if err != nil || n < 0 {
		return "", 0, false
	}
	m, found := Corpus(key[:h])
	if !found || n >= m.Stats {
		return "", 0, false
	}
	return key[:h] + rest[end:], n, true
}

// CorpusName is the corpus metric a score key ("bleu,none", "bleu") names.
func CorpusName(scoreKey string) (CorpusMetric, bool) {
	name := scoreKey
	if i := strings.IndexByte(name, ','); i >= 0 {
		name = name[:i]
	}
	return Corpus(name)
}

// CorpusStderrIters is the number of bootstrap resamples lm-evaluation-
// harness draws for bleu, chrf and ter (evaluator_utils.py
// _compute_task_aggregations: min(bootstrap_iters, 100)).
const CorpusStderrIters = 100

// CorpusFigures scores a corpus metric over samples' statistics (in the
// samples' order): the score of their sum, and lm-evaluation-harness's
// bootstrap standard error of it (lm_eval/api/metrics.py bootstrap_stderr
// with iters 100: chunks of min(1000, iters) resamples, chunk i drawn with
// random.Random(i).choices(xs, k=len(xs)); sample_stddev of the scores; NaN
// below two samples, where lm-eval writes "N/A"), with the 2.5th and
// 97.5th percentiles of the resampled scores as an interval.
func CorpusFigures(m CorpusMetric, samples [][]float64) (score, stderr, low, high float64, err error) {
	for i, s := range samples {
		if len(s) != m.Stats {
			return 0, 0, 0, 0, fmt.Errorf("%s: sample %d has %d statistics, want %d", m.Name, i, len(s), m.Stats)
		}
	}
	nan := math.NaN()
	if len(samples) == 0 {
		return nan, nan, nan, nan, nil
	}
	sum := func(idx []int) []float64 {
		out := make([]float64, m.Stats)
		for _, i := range idx {
			for k, v := range samples[i] {
				out[k] += v
			}
		}
		return out
	}
	all := make([]int, len(samples))
	for i := range all {
		all[i] = i
	}
	score = m.Score(sum(all))
	if len(samples) < 2 {
		return score, nan, nan, nan, nil
	}
	res := BootstrapLMEval(len(samples), CorpusStderrIters, func(idx []int) float64 { return m.Score(sum(idx)) })
	lo, hi := stats.Percentile(res, 2.5), stats.Percentile(res, 97.5)
	return score, stats.SampleStddev(res), lo, hi, nil
}

// BootstrapLMEval draws lm-evaluation-harness's bootstrap resamples of n
// items (lm_eval/api/metrics.py _bootstrap_internal and
// _bootstrap_internal_no_mp, which draw alike): iters//min(1000, iters)
// chunks of min(1000, iters) resamples, chunk i from random.Random(i),
// each resample the indices random.choices(range(n), k=n) takes
// (floor(random() * n) each); f scores a resample.
func BootstrapLMEval(n, iters int, f func(idx []int) float64) []float64 {
	chunk := min(1000, iters)
	var out []float64
	idx := make([]int, n)
	for c := 0; c < iters/chunk; c++ {
		rnd := pyrandom.New(int64(c))
		for range chunk {
			for k := range idx {
				idx[k] = int(math.Floor(rnd.Float64() * float64(n)))
			}
			out = append(out, f(idx))
		}
	}
	return out
}
