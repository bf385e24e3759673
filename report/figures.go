package report

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"strconv"

	"tally/generate"
	"tally/scoring"
	"tally/scoring/stats"
)

// figures is what summarise needs of one task, whichever way it was read
// (from the store by Load, or from a run's results by FromResults): per
// (column, metric) the series of per-sample values, the failed samples of
// each column, and the column each column is paired with.
type figures struct {
	td  *TaskData
	ids []string
	// preds are the predictions the series' points refer to.
	preds []string
	ser   map[[2]int]*series
	// fails maps a column to its failed samples (index into ids) and why
	// they failed; a failed sample is in every metric's series with value 0.
	fails map[int]map[int32]string
	// base is, per column, the column its paired difference is taken
	// against (-1: none).
	base []int
}

// summarise makes the task's summary rows, the one computation of n,
// failed and means behind every output: per metric and column the mean
// with its 95% interval (failed samples count as 0 and are listed), and,
// for a column with a base column, the paired difference against it. A
// column's mean sums its samples in sample order (ids numerically when
// they are numbers); pairs go in the order of their ids as strings. A
// column with no value under any metric still gets one row per metric
// (n 0, no mean), so that a selected setting never silently disappears.
func summarise(f figures) []Row {
	td, ids := f.td, f.ids
	byNum := make([]int32, len(ids))
	byStr := make([]int32, len(ids))
	for i := range ids {
		byNum[i], byStr[i] = int32(i), int32(i)
	}
	slices.SortStableFunc(byNum, func(a, b int32) int { return compareIDs(ids[a], ids[b]) })
	slices.SortFunc(byStr, func(a, b int32) int { return cmp.Compare(ids[a], ids[b]) })
	// at returns, per sample index, the series position holding its
	// value (the last one read), or -1.
	at := func(sr *series) []int32 {
		pos := make([]int32, len(ids))
		for i := range pos {
			pos[i] = -1
		}
		if sr == nil {
			return pos
		}
		k := int32(0)
		for p := range sr.all() {
			pos[sr.key(p).idx] = k
			k++
		}
		return pos
	}
	empty := make([]bool, len(td.Columns))
	for ci := range td.Columns {
		empty[ci] = true
		for mi := range td.Metrics {
			if sr := f.ser[[2]int{ci, mi}]; sr != nil && sr.n > 0 {
				empty[ci] = false
			}
		}
	}
	var rows []Row
	pairs := make([]float64, 2*len(ids)) // pairColumns' room, reused
	corpus := corpusKeys(td.Metrics)
	for mi, m := range td.Metrics {
		if _, _, stat := scoring.ParseCorpusStatKey(m); stat {
			continue // a corpus metric's statistic: its row is the metric's
		}
		if _, ok := corpus[m]; ok {
			continue
		}
		positions := make([][]int32, len(td.Columns))
		posOf := func(ci int) []int32 {
			if positions[ci] == nil {
				positions[ci] = at(f.ser[[2]int{ci, mi}])
			}
			return positions[ci]
		}
		for ci, c := range td.Columns {
			sr := f.ser[[2]int{ci, mi}]
			if (sr == nil || sr.n == 0) && !empty[ci] {
				continue
			}
			pos := posOf(ci)
			row := Row{Task: td.label(), Variant: td.Task, Metric: m, Setting: c.Label, Model: c.Model, Chat: c.Chat, Stop: c.Setting, Seqs: nonNil(c.Seqs()), Budget: c.Budget}
			vals := pairs[:0:len(ids)] // the room pairColumns takes later
			fails := f.fails[ci]
			for _, id := range byNum {
				k := pos[id]
				if k < 0 {
					continue
				}
				vals = append(vals, sr.at(k).val())
				if why, ok := fails[id]; ok {
					row.FailedSamples = append(row.FailedSamples, FailedSample{ids[id], why})
				}
			}
			row.N, row.Failed = len(vals), len(row.FailedSamples)
			row.Scored = row.N - row.Failed
			row.Mean = interval(stats.BoundedMeanInterval(vals, Level))
			row.Stderr = generate.Mean(stats.MeanStderr(vals))
			if len(vals) == 0 {
				nan := generate.Mean(math.NaN())
				row.Mean = Interval{nan, nan, nan}
			}
			if b := f.base[ci]; b >= 0 && b != ci {
				row.Against = td.Columns[b].Label
				row.Diff, row.Changed = pairColumns(ids, f.preds, byStr, f.ser[[2]int{b, mi}], posOf(b), sr, pos, pairs)
			}
			rows = append(rows, row)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(corpus)) {
		if !slices.Contains(td.Metrics, key) {
			td.Metrics = append(td.Metrics, key)
		}
		for ci := range td.Columns {
			if row, ok := corpusRow(f, ci, key, corpus[key], byNum, at); ok {
				rows = append(rows, row)
			}
		}
	}
	return rows
}

// corpusKeys groups the statistics of corpus metrics among a task's
// metrics (scoring.CorpusStatKey: "bleu#3,none") by the corpus metric's
// score key ("bleu,none"): per statistic, the metric's index.
func corpusKeys(metrics []string) map[string][]int {
	out := map[string][]int{}
	for mi, m := range metrics {
		key, i, ok := scoring.ParseCorpusStatKey(m)
		if !ok {
			continue
		}
		cm, _ := scoring.CorpusName(key)
		if out[key] == nil {
			out[key] = make([]int, cm.Stats)
			for k := range out[key] {
				out[key][k] = -1
			}
		}
		out[key][i] = mi
	}
	return out
}

// corpusRow is a column's row of a corpus metric (BLEU, chrF, TER): its
// score over the samples scored, in sample order, as the metric scores a
// corpus from the sum of the samples' statistics, with lm-eval's
// bootstrap standard error and the resamples' 2.5th and 97.5th
// percentiles as its interval (scoring.CorpusFigures). A failed sample,
// which has no statistics, is counted in n and listed, and takes no part
// in the score (it has no prediction to score). No row when the column
// has no statistics of the metric.
func corpusRow(f figures, ci int, key string, stat []int, byNum []int32, at func(*series) []int32) (Row, bool) {
	td, ids := f.td, f.ids
	cm, _ := scoring.CorpusName(key)
	pos := make([][]int32, len(stat))
	srs := make([]*series, len(stat))
	for k, mi := range stat {
		if mi < 0 {
			return Row{}, false
		}
		srs[k] = f.ser[[2]int{ci, mi}]
		if srs[k] == nil || srs[k].n == 0 {
			return Row{}, false
		}
		pos[k] = at(srs[k])
	}
	c := td.Columns[ci]
	row := Row{Task: td.label(), Variant: td.Task, Metric: key, Setting: c.Label, Model: c.Model, Chat: c.Chat, Stop: c.Setting, Seqs: nonNil(c.Seqs()), Budget: c.Budget}
	var samples [][]float64
	fails := f.fails[ci]
	for _, id := range byNum {
		if why, ok := fails[id]; ok {
			row.FailedSamples = append(row.FailedSamples, FailedSample{ids[id], why})
			row.N++
			continue
		}
		v := make([]float64, len(stat))
		complete := true
		for k := range stat {
			p := pos[k][id]
			if p < 0 {
				complete = false
				break
			}
			v[k] = srs[k].at(p).val()
		}
		if complete {
			samples = append(samples, v)
			row.N++
		}
	}
	row.Failed = len(row.FailedSamples)
	row.Scored = row.N - row.Failed
	score, stderr, lo, hi, err := scoring.CorpusFigures(cm, samples)
	if err != nil {
		score, stderr, lo, hi = math.NaN(), math.NaN(), math.NaN(), math.NaN()
	}
	row.Mean = Interval{generate.Mean(score), generate.Mean(lo), generate.Mean(hi)}
	row.Stderr = generate.Mean(stderr)
	return row, true
}

// pairColumns pairs a column's values with its base column's by sample
// and returns the paired difference (this minus base) and the samples
// whose value changed. room holds the pairs (twice the samples).
func pairColumns(ids, preds []string, byStr []int32, first *series, firstAt []int32, this *series, thisAt []int32, room []float64) (*Interval, []Changed) {
	a, b := room[:0:len(ids)], room[len(ids):len(ids)]
	changed := 0
	for _, id := range byStr {
		k, j := firstAt[id], thisAt[id]
		if k < 0 || j < 0 {
			continue
		}
		x, y := first.at(k).val(), this.at(j).val()
		a, b = append(a, x), append(b, y)
		if x != y {
			changed++
		}
	}
	var ch []Changed
	if changed > 0 {
		ch = make([]Changed, 0, changed)
		for _, id := range byStr {
			k, j := firstAt[id], thisAt[id]
			if k < 0 || j < 0 {
				continue
			}
			if x, y := first.at(k), this.at(j); x.val() != y.val() {
				ch = append(ch, Changed{ids[id], generate.Mean(x.val()), generate.Mean(y.val()), preds[first.key(x).pred], preds[this.key(y).pred]})
			}
		}
	}
	return pairedInterval(a, b), ch
}

// compareIDs orders sample ids numerically when both are numbers.
func compareIDs(a, b string) int {
	x, okx := atoi(a)
	y, oky := atoi(b)
	if okx && oky {
		return cmp.Compare(x, y)
	}
	return cmp.Compare(a, b)
}

// atoi is strconv.Atoi without the error it makes of a string that is not
// a number (a sort of many non-numeric ids made one for every comparison).
func atoi(s string) (int, bool) {
	if s == "" || s[0] != '+' && s[0] != '-' && (s[0] < '0' || s[0] > '9') {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// failedMetrics are the metrics a failed sample counts 0 under: the
// task's metrics but the unscorable count, or generate.NoneScored when no
// sample of the task was scored.
func failedMetrics(metrics []string) []string {
	var out []string
	for _, m := range metrics {
		if m != generate.Unscorable {
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		out = []string{generate.NoneScored}
	}
	return out
}
