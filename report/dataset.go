package report

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"tally/datasets"
	"tally/generate"
	"tally/store"
	"tally/tasks/lmeval"
	"tally/tasks/variant"
)

// Dataset is everything stored for a selection of models, tasks and stop
// settings: the figures every report shows and, when loaded in full, every
// sample behind them. Load reads one from the store alone; FromResults
// makes one from a run's results.
type Dataset struct {
	Title string
	Tasks []*TaskData
}

// Rows are the summary rows of every task, task by task.
func (d *Dataset) Rows() []Row {
	var rows []Row
	for _, td := range d.Tasks {
		rows = append(rows, td.Rows...)
	}
	return rows
}

// Column is one model's results under one stop setting and token budget.
type Column struct {
	Model       string `json:"model"`
	Fingerprint string `json:"fingerprint"`
	// Chat is set when the model was prompted through its chat template:
	// a chat run and a raw run of one model are two columns, never paired.
	Chat bool `json:"chat,omitempty"`
	// DType is the dtype the model's products were computed in (native
	// runs: --dtype as resolved); "" when the runs did not say.
	DType      string `json:"dtype,omitempty"`
	Setting    string `json:"setting"`
	SettingKey string `json:"setting_key"`
	Budget     int    `json:"budget"`
	// Label names the column in tables and charts: "model setting", with
	// the budget when a task was scored under several.
	Label string `json:"label"`
}

// Seqs are the column's stop sequences (none: it never stops).
func (c Column) Seqs() []string {
	if c.SettingKey == "" {
		return nil
	}
	return strings.Split(c.SettingKey, "\x00")
}

// TaskData is one task's columns, metrics, summary rows and samples.
type TaskData struct {
	// Task is the task as stored: its variant's key (tally/tasks/variant),
	// or the name an earlier tally stored it under.
	Task string
	// Label names the task for people: its name, and what sets its
	// variant apart when the dataset holds several of that name
	// (variant.Labels).
	Label string
	// Variant is the task's variant record (nil when none is known).
	Variant *variant.Record
	Columns []Column
	Metrics []string
	// Rows are the summary, one per (metric, column), as summarise makes
	// them for every output.
	Rows []Row
	// Samples are every (sample, model) pair that has a stored score or a
	// failed generation, by sample id then model (only when loaded in
	// full).
	Samples []*SampleData
	// Total is the number of samples of the task in its data (before
	// --limit or --samples), 0 when unknown; Limit is the --limit the
	// samples were selected with (0: none).
	Total, Limit int
	// Info is what the task's configuration says of itself, when known
	// (lm-eval files write it).
	Info *TaskInfo
}

// TaskInfo is a task's configuration as far as lm-eval files show it.
type TaskInfo struct {
	// Version is the task's version (nil: none).
	Version any
	// FewShot is the number of solved examples before each prompt;
	// FewShotSeparator joins them.
	FewShot          int
	FewShotSeparator string
	// Prompt and Target are the task's templates (doc_to_text,
	// doc_to_target), Data its data file.
	Prompt, Target, Data string
	// Metrics are the task's metric families as its config names them.
	Metrics []string
	// Description is the task's one-line description.
	Description string
	// LMEvalConfig, when set, is the task's lm-eval config as lm-eval's
	// TaskConfig.to_dict() gives it (a task read from an lm-eval YAML):
	// lm-eval files write it as the task's config, adding only what it
	// lacks.
	LMEvalConfig map[string]any
	// Filters maps the name of an lm-eval filter that the task's metric
	// keys name ("exact_match,strict-match") to its pipeline (filter_list's
	// "filter"), and OwnSetting is the stop setting that is the lm-eval
	// task's own generation (its until): under it the filter keeps its
	// name; under any other setting it is "FILTER@SETTING", after tally's
	// cut at the setting's sequences.
	Filters    map[string][]map[string]any
	OwnSetting string
	// LMEval is the lm-eval task the config was read from, when known:
	// lm-eval files write what it says of each request and filter
	// (generation kwargs, filtered responses) as lm-eval's writer does.
	LMEval *lmeval.Task
	// Unread says why a report of the store alone could not read an
	// lm-eval task's file again ("": read, or not an lm-eval task): its
	// lm-eval files then write the config and filters its stored fields
	// give, not everything lm-eval's writer would.
	Unread string
}

// SampleData is one sample as one model answered it.
type SampleData struct {
	ID          string
	Model       string
	Fingerprint string
	// Chat is set when the model was prompted through its chat template.
	Chat   bool
	Prompt string
	Refs   json.RawMessage
	// Metadata is the sample's own metadata (task-specific fields), and
	// Notes what the report shows of it beside (datasets.Sample.Notes: the
	// ones a view reads).
	Metadata json.RawMessage
	Notes    map[string]string
	// Doc is the dataset row the sample was made from, Target the task's
	// target rendered for it, Index its position in the task's data (-1:
	// unknown), as far as they are known.
	Doc    json.RawMessage
	Target *string
	Index  int
	// Text is the raw continuation (already cut when Imported).
	Text     string
	Finish   string
	Error    string
	Imported bool
	// PromptTokens is the prompt's length in tokens (0: unknown).
	PromptTokens int
	// FailReason says why the generation failed ("" when it did not):
	// generate.FailReason, the rule every output counts failures by.
	FailReason string
	// Under maps a column index (of TaskData.Columns) to what that setting
	// made of the continuation.
	Under map[int]*Scored
}

// Scored is a sample's prediction and metric values under one column.
type Scored struct {
	Prediction string
	// metrics are the task's metrics (TaskData.Metrics) and values the
	// sample's value under each, where it has one: a few words from a
	// slab the task's samples share, where a map a sample was most of
	// what a task's samples held.
	metrics []string
	values  []scoredValue
	// Cut is the byte offset in Text where the setting's stop sequence
	// matched (-1: it did not cut), and Seq the sequence.
	Cut int
	Seq string
	// Failed is why the sample failed ("": scored); its values are 0.
	Failed string
}

// scoredValue is a Scored's value under one metric; ok says it has one.
type scoredValue struct {
	v  float64
	ok bool
}

// Value returns the sample's value under a metric, and whether it has
// one.
func (s *Scored) Value(metric string) (float64, bool) {
	if i := slices.Index(s.metrics, metric); i >= 0 && s.values[i].ok {
		return s.values[i].v, true
	}
	return 0, false
}

// Values yields each metric the sample has a value under, with the
// value, in the order of its task's metrics.
func (s *Scored) Values() iter.Seq2[string, float64] {
	return func(yield func(string, float64) bool) {
		for i, x := range s.values {
			if x.ok && !yield(s.metrics[i], x.v) {
				return
			}
		}
	}
}

// set gives the sample the value v under the task's metric mi.
func (s *Scored) set(mi int, v float64) { s.values[mi] = scoredValue{v, true} }

// scoredSlab hands out Scoreds and their values from a few large
// allocations, for a task's samples, which are dropped together.
type scoredSlab struct {
	metrics []string
	scored  []Scored
	values  []scoredValue
}

const slabLen = 1024

// next returns a new Scored with no values.
func (sl *scoredSlab) next(pred string, failed string) *Scored {
	if len(sl.scored) == 0 {
		sl.scored = make([]Scored, slabLen)
	}
	if len(sl.values) < len(sl.metrics) {
		sl.values = make([]scoredValue, slabLen*len(sl.metrics))
	}
	sc := &sl.scored[0]
	sl.scored = sl.scored[1:]
	n := len(sl.metrics)
	*sc = Scored{Prediction: pred, metrics: sl.metrics, values: sl.values[:n:n], Cut: -1, Failed: failed}
	sl.values = sl.values[n:]
	return sc
}

// Failed reports whether the generation failed (backend error, prompt
// beyond the context).
func (s *SampleData) Failed() bool { return s.FailReason != "" }

// Load reads a Dataset from the store: every stored score the filter
// selects, with its generation and sample. Models are named by their last
// run (imported outputs by their "imported:NAME" fingerprint).
func Load(ctx context.Context, st *store.Store, f store.Filter) (*Dataset, error) {
	return LoadWith(ctx, st, f, LoadOptions{})
}

// LoadSummary reads only what the summary rows need: each TaskData has its
// Columns, Metrics and Rows (the same as Load's) but no Samples, and no
// prompt or continuation is read, so text, Markdown and JSON reports of a
// large store hold a few numbers per score.
func LoadSummary(ctx context.Context, st *store.Store, f store.Filter) (*Dataset, error) {
	return LoadWith(ctx, st, f, LoadOptions{Summary: true})
}

// LoadOptions tune LoadWith.
type LoadOptions struct {
	// Summary reads what LoadSummary reads (no samples).
	Summary bool
	// Fix, when set, sees every stored score before it is used and
	// returns it, with its Value changed to replace a stale score by its
	// recomputation, or false to drop it.
	Fix func(store.Entry) (store.Entry, bool, error)
	// NoDataRows reads a sample with no metadata of its own without its
	// data row, rendered target and index in the task's data
	// (SampleData's Doc and Target nil, Index -1): the HTML page shows
	// none of them, and they are most of a stored sample's metadata
	// column.
	NoDataRows bool
}

// LoadWith is Load or LoadSummary with options.
func LoadWith(ctx context.Context, st *store.Store, f store.Filter, opt LoadOptions) (*Dataset, error) {
	return load(ctx, st, f, opt, nil)
}

// LoadEach is Load one task at a time: each task is handed to fn with its
// samples, which are then dropped, so that a report of a large store
// holds one task's prompts and continuations at a time (the figures of
// every task, and the generations' text, stay read). The Dataset returned
// has every task's figures, but no samples and no lists of changed
// samples (they were fn's to show).
func LoadEach(ctx context.Context, st *store.Store, f store.Filter, opt LoadOptions, fn func(*TaskData) error) (*Dataset, error) {
	opt.Summary = false
	return load(ctx, st, f, opt, fn)
}

// chunked is a list in chunks, so that a million appends copy nothing. A
// chunk grows as a slice does (so that a short list holds little spare
// room) up to 1<<chunkBits items, then the next one starts.
type chunked[T any] struct {
	chunks [][]T
	n      int
}

const chunkBits = 12

// add appends x and returns its position.
func (l *chunked[T]) add(x T) int32 {
	if l.n&(1<<chunkBits-1) == 0 {
		l.chunks = append(l.chunks, nil)
	}
	last := len(l.chunks) - 1
	c := l.chunks[last]
	if len(c) == cap(c) {
		grown := make([]T, len(c), min(max(2*cap(c), 64), 1<<chunkBits))
		copy(grown, c)
		c = grown
	}
	l.chunks[last] = append(c, x)
	l.n++
	return int32(l.n - 1)
}

// at is the item at position k.
func (l *chunked[T]) at(k int32) *T { return &l.chunks[k>>chunkBits][k&(1<<chunkBits-1)] }

// all yields every item in order.
func (l *chunked[T]) all() iter.Seq[*T] {
	return func(yield func(*T) bool) {
		for _, c := range l.chunks {
			for i := range c {
				if !yield(&c[i]) {
					return
				}
			}
		}
	}
}

// series is one (column, metric)'s stored scores in the order read; keys
// are its column's.
type series struct {
	chunked[point]
	keys *chunked[keyRow]
}

// point is one stored score: its value, and the key it scored (a row of
// its column's keys). It holds no pointer: the collector never scans a
// series, of millions of points. The value's bits are two words, so that
// a point is 12 bytes, not 16 (a float64 would align it to 8).
type point struct {
	row  int32
	bits [2]uint32
}

// keyRow is what the scores of one key (sample, generation, setting,
// budget) under a column share, held once for all the metrics' points:
// the sample (an index into its task's ids), the generation it scored (an
// index into the load's generations; -1: none) and the prediction (an
// index into its task's preds). At 2.4 million scores of 600,000 keys,
// points of 12 bytes and key rows hold 36 MB, where points that held the
// key held 48 MB.
type keyRow struct {
	idx, gen, pred int32
}

// newPoint is a point of value v for key row row.
func newPoint(row int32, v float64) point {
	b := math.Float64bits(v)
	return point{row, [2]uint32{uint32(b), uint32(b >> 32)}}
}

// val is the point's value.
func (p *point) val() float64 { return math.Float64frombits(uint64(p.bits[0]) | uint64(p.bits[1])<<32) }

// key is the key row of point p of the series.
func (s *series) key(p *point) *keyRow { return s.keys.at(p.row) }

// addScore appends the score v of a key (sample idx, generation gen,
// prediction pred), adding the key to the column's rows unless it is the
// last one there (a key's scores come together).
func (s *series) addScore(idx, gen, pred int32, v float64) {
	k := keyRow{idx, gen, pred}
	row := int32(s.keys.n - 1)
	if row < 0 || *s.keys.at(row) != k {
		row = s.keys.add(k)
	}
	s.add(newPoint(row, v))
}

// taskLoad is what load accumulates for one task.
type taskLoad struct {
	td      *TaskData
	colIdx  map[colKey]int
	ids     []string
	idIdx   map[string]int32
	metrics map[string]int
	series  map[[2]int]*series       // by (column, metric) index
	keys    map[int]*chunked[keyRow] // by column index, while read
	// preds are the predictions points refer to (preds[0] is "": failed
	// samples'); one for the scores of consecutive points that share it.
	preds   []string
	fails   map[int]map[int32]string
	budgets map[int]bool
}

func newTaskLoad(task string) *taskLoad {
	return &taskLoad{td: &TaskData{Task: task}, colIdx: map[colKey]int{}, idIdx: map[string]int32{},
		metrics: map[string]int{}, series: map[[2]int]*series{}, keys: map[int]*chunked[keyRow]{}, fails: map[int]map[int32]string{}, budgets: map[int]bool{},
		preds: []string{""}}
}

// pred returns the index of a prediction in the task's preds, adding it
// unless it is the last one added (several metrics score a prediction in
// a row).
func (tl *taskLoad) pred(s string) int32 {
	if last := len(tl.preds) - 1; tl.preds[last] == s {
		return int32(last)
	}
	tl.preds = append(tl.preds, s)
	return int32(len(tl.preds) - 1)
}

// sampleIndex returns the index of a sample id in the task's ids, adding
// it when new.
func (tl *taskLoad) sampleIndex(id string) int32 {
	i, ok := tl.idIdx[id]
	if !ok {
		i = int32(len(tl.ids))
		tl.idIdx[id] = i
		tl.ids = append(tl.ids, id)
	}
	return i
}

// column returns the index of a column, adding it when new.
func (tl *taskLoad) column(c Column) int {
	ck := colKey{c.Fingerprint, c.SettingKey, c.Budget}
	ci, ok := tl.colIdx[ck]
	if !ok {
		ci = len(tl.td.Columns)
		tl.colIdx[ck] = ci
		tl.td.Columns = append(tl.td.Columns, c)
		tl.budgets[c.Budget] = true
	}
	return ci
}

// metric returns the index of a metric, adding it when new.
func (tl *taskLoad) metric(m string) int {
	mi, ok := tl.metrics[m]
	if !ok {
		mi = len(tl.td.Metrics)
		tl.metrics[m] = mi
		tl.td.Metrics = append(tl.td.Metrics, m)
	}
	return mi
}

// seriesOf returns the series of a (column, metric), adding it when new.
func (tl *taskLoad) seriesOf(ci, mi int) *series {
	sr := tl.series[[2]int{ci, mi}]
	if sr == nil {
		keys := tl.keys[ci]
		if keys == nil {
			keys = &chunked[keyRow]{}
			tl.keys[ci] = keys
		}
		sr = &series{keys: keys}
		tl.series[[2]int{ci, mi}] = sr
	}
	return sr
}

// addFailed counts sample idx as failed (value 0 under every metric)
// under column ci, unless the column already has a value for it (a score
// from another generation of the sample wins).
func (tl *taskLoad) addFailed(ci int, idx int32, reason string, gen int32, has func(ci int, idx int32) bool) bool {
	if has(ci, idx) {
		return false
	}
	if tl.fails[ci] == nil {
		tl.fails[ci] = map[int32]string{}
	}
	tl.fails[ci][idx] = reason
	for _, m := range failedMetrics(tl.td.Metrics) {
		tl.seriesOf(ci, tl.metric(m)).addScore(idx, gen, 0, 0)
	}
	return true
}

// presence returns a function telling whether a column already has a value
// for a sample, built once from the series read so far.
func (tl *taskLoad) presence() func(ci int, idx int32) bool {
	var has map[int]map[int32]bool
	return func(ci int, idx int32) bool {
		if has == nil {
			has = map[int]map[int32]bool{}
			for k, sr := range tl.series {
				h := has[k[0]]
				if h == nil {
					h = map[int32]bool{}
					has[k[0]] = h
				}
				for p := range sr.all() {
					h[sr.key(p).idx] = true
				}
			}
		}
		return has[ci][idx]
	}
}

type colKey struct {
	fp, key string
	budget  int
}

// recordedSettings are the stop settings a generation record says were
// active when it ended.
func recordedSettings(stops json.RawMessage) []generate.StopSetting {
	var rec struct {
		Settings []generate.StopSetting `json:"settings"`
	}
	_ = json.Unmarshal(stops, &rec)
	return rec.Settings
}

// load reads the scores the filter selects (and, unless opt.Summary, what
// the samples show of their generations), counts the failed generations,
// and finishes each task: handed to each in turn with its samples (and
// then dropped), or, when each is nil, all kept.
func load(ctx context.Context, st *store.Store, f store.Filter, opt LoadOptions, each func(*TaskData) error) (*Dataset, error) {
	names, err := modelNames(ctx, st)
	if err != nil {
		return nil, err
	}
	recs, err := st.Variants(ctx)
	if err != nil {
		return nil, err
	}
	l := newLoader(!opt.Summary, names)
	failed := readFailed(ctx, st, f) // beside the scores
	err = l.readScores(ctx, st, f, opt.Fix)
	gens, ferr := failed()
	if err = cmp.Or(err, ferr); err != nil {
		return nil, err
	}
	addFailures(f, gens, names, l.taskOf, l.failedGen)
	for _, tl := range l.byTask {
		// Every sample is numbered and every series made: what follows
		// reads ids, and a task's key rows go with its series.
		tl.idIdx, tl.keys = nil, nil
	}
	labelTasks(l.ds.Tasks, recs)
	slices.SortFunc(l.ds.Tasks, func(a, b *TaskData) int {
		return cmp.Or(cmp.Compare(a.Name(), b.Name()), cmp.Compare(a.label(), b.label()), cmp.Compare(a.Task, b.Task))
	})
	cut := "" // the metadata column read whole, or up to what shows no metadata
	if opt.NoDataRows {
		cut = datasets.StoredNoMetadata
	}
	if each != nil {
		return l.ds, eachTask(ctx, st, l.ds, l.byTask, l.gens, cut, each)
	}
	for _, td := range l.ds.Tasks {
		tl := l.byTask[td.Task]
		finishStoreTask(tl)
		if l.full {
			if err := readSamples(ctx, st, tl, l.gens, cut); err != nil {
				return nil, err
			}
		}
	}
	return l.ds, nil
}

// readFailed reads the failed generations the filter selects (which have
// no scores) on a goroutine of its own; the function it returns waits for
// them.
func readFailed(ctx context.Context, st *store.Store, f store.Filter) func() ([]store.Generation, error) {
	type read struct {
		gens []store.Generation
		err  error
	}
	done := make(chan read, 1)
	go func() {
		var r read
		r.gens, r.err = st.FailedGenerations(ctx, store.Filter{Fingerprints: f.Fingerprints, Tasks: f.Tasks})
		done <- r
	}()
	return func() ([]store.Generation, error) {
		r := <-done
		return r.gens, r.err
	}
}

// loader is what load accumulates: the tasks read so far and, for a full
// load, what the samples show of each generation.
type loader struct {
	full   bool
	names  map[string]modelInfo
	ds     *Dataset
	byTask map[string]*taskLoad
	gens   *loadedGens
	// failed numbers the failed generations by key (addFailures meets
	// them by key).
	failed map[string]int32
	// add's place: the task of the last score, the slot of each store
	// cell per fingerprint (the column, metric and series its scores go
	// to), and the last sample's index.
	tl      *taskLoad
	slotsOf map[string][]*slot
	slots   []*slot
	lastFP  string
	lastID  string
	lastIdx int32
}

// slot is where a store cell's scores go.
type slot struct {
	tl     *taskLoad
	ci, mi int
	sr     *series
}

func newLoader(full bool, names map[string]modelInfo) *loader {
	return &loader{full: full, names: names, ds: &Dataset{}, byTask: map[string]*taskLoad{}, gens: &loadedGens{texts: newGenTexts()},
		failed: map[string]int32{}, slotsOf: map[string][]*slot{}, lastIdx: -1}
}

// taskOf returns a task's load, adding it when new.
func (l *loader) taskOf(task string) *taskLoad {
	tl := l.byTask[task]
	if tl == nil {
		tl = newTaskLoad(task)
		l.byTask[task] = tl
		l.ds.Tasks = append(l.ds.Tasks, tl.td)
	}
	return tl
}

// readScores reads every score the filter selects into its task's series,
// each first seen by fix (when set); a full load reads the generations
// first (keepGen). add's slots, which point at every series, go with it,
// so that a task's series go once the task is written.
func (l *loader) readScores(ctx context.Context, st *store.Store, f store.Filter, fix func(store.Entry) (store.Entry, bool, error)) error {
	defer func() { l.slotsOf, l.slots, l.tl = nil, nil, nil }()
	scores := func(fn func(store.Entry) error) error { return st.EachEntry(ctx, f, fn) }
	if l.full {
		scores = func(fn func(store.Entry) error) error { return st.EachEntryAndGeneration(ctx, f, l.keepGen, fn) }
	}
	keep := l.add
	if fix != nil {
		keep = func(e store.Entry) error {
			e, ok, err := fix(e)
			if err != nil || !ok {
				return err
			}
			return l.add(e)
		}
	}
	return eachEntryPipelined(ctx, scores, keep)
}

// keepGen keeps what the samples show of generation n (numbered as the
// points refer to them), and the failed ones' numbers by key.
func (l *loader) keepGen(n int32, g store.Generation) error {
	if generate.FailReason(&g) != "" {
		g.Text = "" // a failed sample shows no continuation
		l.failed[g.Key] = n
	}
	if int(n) != len(l.gens.infos) {
		return fmt.Errorf("read generations: generation %d handed over as %d", len(l.gens.infos), n)
	}
	l.gens.infos = append(l.gens.infos, l.gens.texts.info(&g))
	return nil
}

// failedGen is the number of a failed generation (-1: not a full load),
// kept now when it was stored since the generations were read.
func (l *loader) failedGen(g *store.Generation) int32 {
	if !l.full {
		return -1
	}
	n, ok := l.failed[g.Key]
	if !ok {
		n = int32(len(l.gens.infos))
		l.gens.infos = append(l.gens.infos, l.gens.texts.info(g))
	}
	return n
}

// add adds a score to its task's series.
func (l *loader) add(e store.Entry) error {
	if e.Fingerprint != l.lastFP || l.slots == nil {
		l.slots, l.lastFP = l.slotsOf[e.Fingerprint], e.Fingerprint
	}
	var sl *slot
	if e.Cell < len(l.slots) && l.slots[e.Cell] != nil {
		sl = l.slots[e.Cell]
		if sl.tl != l.tl {
			l.tl, l.lastIdx = sl.tl, -1
		}
	} else {
		if l.tl == nil || l.tl.td.Task != e.Task {
			l.lastIdx = -1
			l.tl = l.taskOf(e.Task)
		}
		tl := l.tl
		m, chat := modelName(l.names, e.Fingerprint)
		ci := tl.column(Column{Model: m, Fingerprint: e.Fingerprint, Chat: chat, DType: l.names[e.Fingerprint].dtype, Setting: e.Setting,
			SettingKey: e.SettingKey, Budget: e.Budget})
		mi := tl.metric(e.Metric)
		for len(l.slots) <= e.Cell {
			l.slots = append(l.slots, nil)
		}
		sl = &slot{tl, ci, mi, tl.seriesOf(ci, mi)}
		l.slots[e.Cell] = sl
		l.slotsOf[e.Fingerprint] = l.slots
	}
	if e.SampleID != l.lastID || l.lastIdx < 0 {
		l.lastID, l.lastIdx = e.SampleID, l.tl.sampleIndex(e.SampleID)
	}
	gen := int32(-1)
	if l.full {
		gen = e.Gen
	}
	sl.sr.addScore(l.lastIdx, gen, l.tl.pred(e.Prediction), e.Value)
	return nil
}

// eachEntryPipelined is each (a store's EachEntry) with fn called on a goroutine of
// its own, in batches, in order: the store's reader parses the next
// scores while fn checks and keeps the last ones. Each side is about half
// of what one goroutine did (2.4 million scores: 0.36 s of CPU parsing,
// 0.77 s checking and keeping them). A failure of fn ends the read.
func eachEntryPipelined(ctx context.Context, each func(func(store.Entry) error) error, fn func(store.Entry) error) error {
	const batchLen = 256
	batches := make(chan []store.Entry, 4)
	free := make(chan []store.Entry, cap(batches)+2)
	failed := make(chan struct{})
	fnErr := make(chan error, 1)
	go func() {
		var err error
		for b := range batches {
			for i := 0; err == nil && i < len(b); i++ {
				if err = fn(b[i]); err != nil {
					close(failed)
				}
			}
			select {
			case free <- b[:0]:
			default:
			}
		}
		fnErr <- err
	}()
	batch := make([]store.Entry, 0, batchLen)
	send := func() error {
		select {
		case batches <- batch:
		case <-failed:
			return errFnFailed
		case <-ctx.Done():
			return ctx.Err()
		}
		select {
		case batch = <-free:
		default:
			batch = make([]store.Entry, 0, batchLen)
		}
		return nil
	}
	err := each(func(e store.Entry) error {
		batch = append(batch, e)
		if len(batch) < batchLen {
			return nil
		}
		return send()
	})
	if err == nil && len(batch) > 0 {
		err = send()
	}
	close(batches)
	if e := <-fnErr; e != nil {
		return e
	}
	return err
}

// errFnFailed ends a read whose consumer failed (with its own error).
var errFnFailed = errors.New("consumer failed")

// eachTask hands each task, with its samples, to fn in order, reading the
// next task's samples while fn works on one; once fn is done with a task,
// its samples, what they were read from and its lists of changed samples
// go.
func eachTask(ctx context.Context, st *store.Store, ds *Dataset, byTask map[string]*taskLoad, gens *loadedGens, cut string, fn func(*TaskData) error) error {
	type read struct {
		td  *TaskData
		err error
	}
	next := make(chan read) // unbuffered: at most one task read ahead
	done := make(chan struct{})
	go func() {
		defer close(next)
		for _, td := range ds.Tasks {
			tl := byTask[td.Task]
			finishStoreTask(tl)
			err := readSamples(ctx, st, tl, gens, cut)
			select {
			case next <- read{td, err}:
			case <-done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		close(done)
		for range next {
		}
	}()
	for r := range next {
		if r.err != nil {
			return r.err
		}
		if err := fn(r.td); err != nil {
			return err
		}
		tl := byTask[r.td.Task]
		r.td.Samples, tl.series, tl.preds = nil, nil, nil
		for i := range r.td.Rows {
			r.td.Rows[i].Changed = nil
		}
	}
	return nil
}

// addFailures counts every failed generation (failed) as a failed sample
// (value 0 under every metric) under the columns of its model and task:
// every stored column (a failed generation answers no setting and no
// budget), or, when none of the task was scored, the stop settings its
// record names at its budget. A failed generation of a sample that
// another generation scored under a column is not counted there.
func addFailures(f store.Filter, failed []store.Generation, names map[string]modelInfo, taskOf func(string) *taskLoad,
	genOf func(*store.Generation) int32) {
	slices.SortFunc(failed, func(a, b store.Generation) int {
		return cmp.Or(cmp.Compare(a.Task, b.Task), cmp.Compare(a.Fingerprint, b.Fingerprint), compareIDs(a.SampleID, b.SampleID), cmp.Compare(a.Key, b.Key))
	})
	wanted := func(setting string) bool { return len(f.Settings) == 0 || slices.Contains(f.Settings, setting) }
	presence := map[*taskLoad]func(int, int32) bool{}
	for i := range failed {
		g := &failed[i]
		reason := generate.FailReason(g)
		tl := taskOf(g.Task)
		if presence[tl] == nil {
			presence[tl] = tl.presence()
		}
		var cols []int
		for ci, c := range tl.td.Columns {
			if c.Fingerprint == g.Fingerprint {
				cols = append(cols, ci)
			}
		}
		if len(cols) == 0 {
			m, chat := modelName(names, g.Fingerprint)
			for _, set := range recordedSettings(g.Stops) {
				if wanted(set.Name) {
					cols = append(cols, tl.column(Column{Model: m, Fingerprint: g.Fingerprint, Chat: chat, DType: names[g.Fingerprint].dtype,
						Setting: set.Name, SettingKey: set.Key(), Budget: g.Budget}))
				}
			}
		}
		idx := tl.sampleIndex(g.SampleID)
		gen := genOf(g)
		for _, ci := range cols {
			tl.addFailed(ci, idx, reason, gen, presence[tl])
		}
	}
}

// loadedGens are the generations a load's points refer to (genInfo).
type loadedGens struct {
	infos []genInfo
	texts *genTexts
}

// readSamples builds a task's samples (one per sample and model) from its
// series: each column's prediction and values, the generation's text and
// how it ended, and the stored sample's prompt, references, metadata and
// data row (none for a sample whose metadata column is cut short: see
// store.Samples).
func readSamples(ctx context.Context, st *store.Store, tl *taskLoad, gens *loadedGens, cut string) error {
	td := tl.td
	stored, err := st.Samples(ctx, td.Task, cut)
	if err != nil {
		return err
	}
	td.Total = len(stored)
	// bySample is each sample's SampleData per model fingerprint, by the
	// sample's index: a series is one column's (one fingerprint's), so a
	// point finds its sample without hashing.
	bySample := map[string][]*SampleData{}
	slab := scoredSlab{metrics: td.Metrics}
	for k, sr := range tl.series {
		ci, mi := k[0], k[1]
		c := td.Columns[ci]
		row := bySample[c.Fingerprint]
		if row == nil {
			row = make([]*SampleData, len(tl.ids))
			bySample[c.Fingerprint] = row
		}
		for p := range sr.all() {
			k := sr.key(p)
			sd := row[k.idx]
			if sd == nil {
				sd = &SampleData{ID: tl.ids[k.idx], Model: c.Model, Chat: c.Chat, Fingerprint: c.Fingerprint, Index: -1, Under: map[int]*Scored{}}
				row[k.idx] = sd
				td.Samples = append(td.Samples, sd)
			}
			if sd.Finish == "" && k.gen >= 0 && int(k.gen) < len(gens.infos) {
				g := &gens.infos[k.gen]
				sd.Text, sd.Finish, sd.Error = gens.texts.text(g), gens.texts.finish(g), gens.texts.errText(g)
				sd.Imported, sd.PromptTokens = g.imported, int(g.promptTokens)
				sd.FailReason = generate.FailReason(&store.Generation{Finish: sd.Finish, Error: sd.Error, PromptTokens: sd.PromptTokens})
			}
			sc := sd.Under[ci]
			if sc == nil {
				sc = slab.next(tl.preds[k.pred], tl.fails[ci][k.idx])
				sd.Under[ci] = sc
			}
			sc.set(mi, p.val())
		}
	}
	// The DROP view shows each sample's gold answer type, a note of the
	// sample's: read alone, the rest of the column left.
	var answerTypes map[string]string
	if isDROP(td) {
		if answerTypes, err = st.SampleNotes(ctx, td.Task, dropAnswerType); err != nil {
			return err
		}
	}
	var rank map[string]int                   // made when a sample's index is not stored
	seqs := make([][]string, len(td.Columns)) // split once, not per sample
	for ci, c := range td.Columns {
		seqs[ci] = c.Seqs()
	}
	for _, sd := range td.Samples {
		for ci, sc := range sd.Under {
			if sc.Failed == "" && !sd.Imported {
				if m, ok := generate.FindStop(sd.Text, seqs[ci]); ok {
					sc.Cut, sc.Seq = m.Offset, m.Seq
				}
			}
		}
		if s, ok := stored[sd.ID]; ok {
			sd.Prompt, sd.Refs = s.Prompt, s.Refs
			if sd.Prompt == "" && td.Variant != nil && td.Variant.Spec.Legacy != nil {
				sd.Prompt = NotStoredPrompt
			}
			if at, ok := answerTypes[sd.ID]; ok {
				sd.Notes = map[string]string{dropAnswerType: at}
			}
			if cut != "" && string(s.Metadata) == cut {
				continue // no metadata, and no data row, target or index read
			}
			sd.Metadata, sd.Doc, sd.Target, sd.Index = storedSample(s.Metadata)
			if sd.Index < 0 {
				if rank == nil {
					rank = storedRanks(stored)
				}
				sd.Index = rank[sd.ID]
			}
		}
	}
	slices.SortFunc(td.Samples, func(a, b *SampleData) int {
		return cmp.Or(compareIDs(a.ID, b.ID), cmp.Compare(a.Model, b.Model), cmp.Compare(a.Fingerprint, b.Fingerprint))
	})
	return nil
}

// finishStoreTask orders a task loaded from the store and summarises it:
// metrics sorted; columns by model, fingerprint, setting name and budget
// (indices in samples, series and failures remapped), each paired with
// its model's first column.
func finishStoreTask(tl *taskLoad) {
	td := tl.td
	oldMetrics := td.Metrics
	td.Metrics = slices.Clone(oldMetrics)
	slices.Sort(td.Metrics)
	metricNew := make([]int, len(oldMetrics))
	for oi, m := range oldMetrics {
		metricNew[oi], _ = slices.BinarySearch(td.Metrics, m)
	}
	order := make([]int, len(td.Columns))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		x, y := td.Columns[a], td.Columns[b]
		return cmp.Or(cmp.Compare(x.Model, y.Model), cmp.Compare(boolInt(x.Chat), boolInt(y.Chat)), cmp.Compare(x.Fingerprint, y.Fingerprint),
			cmp.Compare(x.Setting, y.Setting), cmp.Compare(x.Budget, y.Budget))
	})
	newIdx := make([]int, len(order))
	cols := make([]Column, len(order))
	base := make([]int, len(order))
	for ni, oi := range order {
		newIdx[oi] = ni
		cols[ni] = td.Columns[oi]
		cols[ni].Label = ModelLabel(cols[ni].Model, cols[ni].Chat) + " " + settingLabel(cols[ni], len(tl.budgets) > 1)
		base[ni] = ni
		if ni > 0 && cols[ni-1].Fingerprint == cols[ni].Fingerprint {
			base[ni] = base[ni-1]
		}
	}
	for ni := range base {
		if base[ni] == ni {
			base[ni] = -1
		}
	}
	td.Columns = cols
	ser := make(map[[2]int]*series, len(tl.series))
	for k, sr := range tl.series {
		ser[[2]int{newIdx[k[0]], metricNew[k[1]]}] = sr
	}
	fails := make(map[int]map[int32]string, len(tl.fails))
	for ci, m := range tl.fails {
		fails[newIdx[ci]] = m
	}
	tl.series, tl.fails = ser, fails
	td.Rows = summarise(figures{td: td, ids: tl.ids, preds: tl.preds, ser: ser, fails: fails, base: base})
}

// settingLabel names a column's stop setting with its sequences, as
// --stop takes it ("nl=\n"), and its token budget when the task was
// scored under several ("nl=\n 64 tokens").
func settingLabel(c Column, budget bool) string {
	l := generate.StopSetting{Name: c.Setting, Seqs: c.Seqs()}.Shown()
	if budget {
		l += fmt.Sprintf(" %d tokens", c.Budget)
	}
	return l
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ModelLabel names a model in reports: its name, with "(chat)" when it was
// prompted through its chat template, so that a chat run and a raw run of
// one model never look alike.
func ModelLabel(model string, chat bool) string {
	if chat {
		return model + " (chat)"
	}
	return model
}

// modelInfo is what the store's runs say of a fingerprint's model.
type modelInfo struct {
	name, dtype string
	chat        bool
}

// modelNames maps each fingerprint to the model name its newest run used,
// the dtype that run's products were computed in (its config's "dtype":
// native runs), and whether its runs prompted it through its chat
// template. A name that fingerprints of several dtypes share (one model
// run at several --dtype) becomes "NAME (DTYPE)" for each, so that their
// columns and lm-eval folders stay apart.
func modelNames(ctx context.Context, st *store.Store) (map[string]modelInfo, error) {
	runs, err := st.Runs(ctx)
	if err != nil {
		return nil, err
	}
	names := map[string]modelInfo{}
	for _, r := range runs { // newest first
		mi, ok := names[r.Fingerprint]
		if !ok {
			mi.name = r.Model
			var cfg struct {
				DType string `json:"dtype"`
			}
			if json.Unmarshal(r.Config, &cfg) == nil {
				mi.dtype = cfg.DType
			}
		}
		mi.chat = mi.chat || RunChat(r.Config)
		names[r.Fingerprint] = mi
	}
	kinds := map[string]map[string]bool{} // name → its fingerprints' dtypes
	for _, mi := range names {
		if kinds[mi.name] == nil {
			kinds[mi.name] = map[string]bool{}
		}
		kinds[mi.name][mi.dtype] = true
	}
	for fp, mi := range names {
		if len(kinds[mi.name]) > 1 && mi.dtype != "" {
			mi.name += " (" + mi.dtype + ")"
			names[fp] = mi
		}
	}
	return names, nil
}

// modelName is the name of a fingerprint's model (the fingerprint when no
// run names it) and whether it is a chat run.
func modelName(names map[string]modelInfo, fp string) (string, bool) {
	mi := names[fp]
	if mi.name == "" {
		mi.name = fp
	}
	return mi.name, mi.chat || IsChatFingerprint(fp)
}

// storedRanks is, for samples stored without their index in the task's
// data (by an older tally), the rank of each id among the task's stored
// samples (ids numerically when they are numbers).
func storedRanks(samples map[string]store.Sample) map[string]int {
	ids := make([]string, 0, len(samples))
	for id := range samples {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, compareIDs)
	rank := make(map[string]int, len(ids))
	for i, id := range ids {
		rank[id] = i
	}
	return rank
}

// storedSample reads what a stored sample's metadata column holds
// (datasets.Stored): the sample's metadata, and its data row, rendered
// target and index when they were stored (index -1: unknown). Metadata
// stored in another form (a bare object) is the sample's metadata whole.
func storedSample(raw json.RawMessage) (meta, doc json.RawMessage, target *string, index int) {
	if meta, doc, target, index, ok := storedSampleAsWritten(raw); ok {
		return meta, doc, target, index
	}
	return decodeStoredSample(raw)
}

// decodeStoredSample is storedSample, by a json.Decoder.
func decodeStoredSample(raw json.RawMessage) (meta, doc json.RawMessage, target *string, index int) {
	var st struct {
		Metadata json.RawMessage `json:"metadata"`
		ShareKey string          `json:"share_key"`
		Index    *int            `json:"index"`
		Doc      json.RawMessage `json:"doc"`
		Target   *string         `json:"target"`
		Notes    json.RawMessage `json:"notes"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return raw, nil, nil, -1
	}
	index = -1
	if st.Index != nil {
		index = *st.Index
	}
	if len(st.Metadata) == 0 {
		st.Metadata = json.RawMessage("null")
	}
	return st.Metadata, st.Doc, st.Target, index
}

// storedSampleAsWritten is storedSample for a column in the form ToStore
// writes it (json.Marshal of datasets.Stored: its members in order, no
// spaces, metadata an object or null, the data row an object, strings
// without escapes), read without a json.Decoder's reflection and copies
// (issue 23: 200,000 samples); ok is false for any other form, which
// storedSample then decodes. meta and doc are parts of raw.
func storedSampleAsWritten(raw []byte) (meta, doc json.RawMessage, target *string, index int, ok bool) {
	rest, ok := bytes.CutPrefix(raw, []byte(`{"metadata":`))
	if !ok {
		return nil, nil, nil, 0, false
	}
	if r, isNull := bytes.CutPrefix(rest, []byte("null")); isNull {
		meta, rest = rest[:4], r
	} else if meta, rest, ok = cutObject(rest); !ok {
		return nil, nil, nil, 0, false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"share_key":`)); !ok {
		return nil, nil, nil, 0, false
	}
	if _, rest, ok = cutPlainString(rest); !ok {
		return nil, nil, nil, 0, false
	}
	index = -1
	if r, found := bytes.CutPrefix(rest, []byte(`,"index":`)); found {
		n := 0
		for n < len(r) && (r[n] == '-' || '0' <= r[n] && r[n] <= '9') {
			n++
		}
		digits := bytes.TrimPrefix(r[:n], []byte("-"))
		i, err := strconv.Atoi(string(r[:n]))
		if err != nil || len(digits) == 0 || digits[0] == '-' || digits[0] == '0' && len(digits) > 1 {
			return nil, nil, nil, 0, false // not one of JSON's integers, or beyond an int
		}
		index, rest = i, r[n:]
	}
	if r, found := bytes.CutPrefix(rest, []byte(`,"doc":`)); found {
		if doc, rest, ok = cutObject(r); !ok {
			return nil, nil, nil, 0, false
		}
	}
	if r, found := bytes.CutPrefix(rest, []byte(`,"target":`)); found {
		t, r, ok := cutPlainString(r)
		if !ok {
			return nil, nil, nil, 0, false
		}
		ts := string(t)
		target, rest = &ts, r
	}
	if r, found := bytes.CutPrefix(rest, []byte(`,"notes":`)); found {
		// The sample's notes: read by the report that shows them
		// (SampleNotes), not here.
		if _, rest, ok = cutObject(r); !ok {
			return nil, nil, nil, 0, false
		}
	}
	if string(rest) != "}" {
		return nil, nil, nil, 0, false
	}
	return meta, doc, target, index, true
}

// cutObject cuts the JSON object b begins with from the rest of b; ok is
// false unless b begins with a valid object.
func cutObject(b []byte) (obj, rest []byte, ok bool) {
	if len(b) == 0 || b[0] != '{' {
		return nil, nil, false
	}
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				if !json.Valid(b[:i+1]) {
					return nil, nil, false
				}
				return b[:i+1], b[i+1:], true
			}
		}
	}
	return nil, nil, false
}

// cutPlainString cuts the JSON string b begins with from the rest of b,
// and returns its text; ok is false unless the string is one whose text
// is its bytes: no escape, no control character, valid UTF-8.
func cutPlainString(b []byte) (text, rest []byte, ok bool) {
	if len(b) == 0 || b[0] != '"' {
		return nil, nil, false
	}
	for i := 1; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			if !utf8.Valid(b[1:i]) {
				return nil, nil, false
			}
			return b[1:i], b[i+1:], true
		case c == '\\' || c < 0x20:
			return nil, nil, false
		}
	}
	return nil, nil, false
}
