package store

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"tally/internal/redact"
)

// This file holds the read-only queries that browse a store as a whole
// (tally ls, tally report with --store alone): what models, tasks and stop
// settings it holds, and every stored score joined with its generation.

// Cell is what the store holds for one (model, task, stop setting, budget).
type Cell struct {
	Fingerprint string `json:"fingerprint"`
	Task        string `json:"task"`
	Setting     string `json:"setting"`
	SettingKey  string `json:"setting_key"`
	Budget      int    `json:"budget"`
	// Scored is the number of samples with at least one score.
	Scored int `json:"scored"`
	// Metrics are the metric names stored, sorted.
	Metrics []string `json:"metrics"`
}

// TaskState counts one model's generations of one task.
type TaskState struct {
	Fingerprint string `json:"fingerprint"`
	Task        string `json:"task"`
	// Samples is the number of samples of the task in the store.
	Samples int `json:"samples"`
	// Generated is the number of stored generations; Failed of them ended
	// in an error (finish "error" or "context").
	Generated int `json:"generated"`
	Failed    int `json:"failed"`
	// Pending is Samples minus Generated (never negative).
	Pending int `json:"pending"`
	// Imported is the number of generations made elsewhere.
	Imported int `json:"imported"`
	// MaxBudget is the largest token budget a generation ran under.
	MaxBudget int `json:"max_budget"`
}

// Inventory is the whole store's contents, as tally ls shows it.
type Inventory struct {
	// Models maps a fingerprint to the model name its last run used (the
	// fingerprint itself for imported outputs).
	Models map[string]string `json:"models"`
	Tasks  []TaskState       `json:"tasks"`
	Cells  []Cell            `json:"cells"`
	// LastRun is the newest run of each fingerprint.
	LastRun map[string]Run `json:"last_run"`
	// Runs counts every recorded run by status (RunDead for those whose
	// process died before closing them).
	Runs map[string]int `json:"runs"`
}

// Models maps every fingerprint with stored generations or runs to the
// model name its newest run used (the fingerprint itself when no run names
// it, as for imported outputs): Inventory's Models without counting
// anything.
func (s *Store) Models(ctx context.Context) (map[string]string, error) {
	runs, err := s.Runs(ctx)
	if err != nil {
		return nil, err
	}
	models := map[string]string{}
	for _, r := range runs { // newest first
		if _, ok := models[r.Fingerprint]; !ok {
			models[r.Fingerprint] = r.Model
		}
	}
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT fingerprint FROM generations`)
	if err != nil {
		return nil, fmt.Errorf("list fingerprints: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var fp string
		if err := rows.Scan(&fp); err != nil {
			return nil, fmt.Errorf("list fingerprints: %w", err)
		}
		if _, ok := models[fp]; !ok {
			models[fp] = fp
		}
	}
	return models, rows.Err()
}

// Inventory reads what the store holds: per model and task the generation
// counts, per model, task, setting and budget the scored samples and
// metrics, and each model's last run.
func (s *Store) Inventory(ctx context.Context) (*Inventory, error) {
	inv := &Inventory{Models: map[string]string{}, LastRun: map[string]Run{}, Runs: map[string]int{}}
	runs, err := s.Runs(ctx)
	if err != nil {
		return nil, err
	}
	for _, r := range runs { // newest first
		inv.Runs[r.Status]++
		if _, ok := inv.LastRun[r.Fingerprint]; !ok {
			inv.LastRun[r.Fingerprint] = r
			inv.Models[r.Fingerprint] = r.Model
		}
	}
	nSamples := map[string]int{}
	rows, err := s.db.QueryContext(ctx, `SELECT task, COUNT(*) FROM samples GROUP BY task`)
	if err != nil {
		return nil, fmt.Errorf("count samples: %w", err)
	}
	for rows.Next() {
		var t string
		var n int
		if err := rows.Scan(&t, &n); err != nil {
			rows.Close()
			return nil, err
		}
		nSamples[t] = n
	}
	rows.Close()
	// One pass over the generations, one joined column a row, counts them
	// per model and task and maps every generation key to its model.
	fieldSep := s.fieldSep()
	rows, err = s.db.QueryContext(ctx, `SELECT concat_ws(?, key, task, finish, imported, budget, fingerprint) FROM generations`, fieldSep)
	if err != nil {
		return nil, fmt.Errorf("count generations: %w", err)
	}
	type fpTask struct{ fp, task string }
	states := map[fpTask]*TaskState{}
	in := make(interner).of
	fpOf := map[string]string{}
	var raw sql.RawBytes
	for rows.Next() {
		if err := rows.Scan(&raw); err != nil {
			rows.Close()
			return nil, fmt.Errorf("count generations: %w", err)
		}
		parts := bytes.SplitN(raw, []byte(fieldSep), 6)
		if len(parts) != 6 {
			rows.Close()
			return nil, fmt.Errorf("count generations: malformed row %q", raw)
		}
		imported, err1 := strconv.Atoi(string(parts[3]))
		budget, err2 := strconv.Atoi(string(parts[4]))
		if err1 != nil || err2 != nil {
			rows.Close()
			return nil, fmt.Errorf("count generations: malformed row %q", raw)
		}
		fp, task := in(parts[5]), in(parts[1])
		fpOf[string(parts[0])] = fp
		t := states[fpTask{fp, task}]
		if t == nil {
			t = &TaskState{Fingerprint: fp, Task: task}
			states[fpTask{fp, task}] = t
		}
		t.Generated++
		if f := string(parts[2]); f == "error" || f == "context" {
			t.Failed++
		}
		t.Imported += imported
		t.MaxBudget = max(t.MaxBudget, budget)
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("count generations: %w", err)
	}
	for _, t := range states {
		t.Samples = nSamples[t.Task]
		t.Pending = max(t.Samples-t.Generated, 0)
		if _, ok := inv.Models[t.Fingerprint]; !ok {
			inv.Models[t.Fingerprint] = t.Fingerprint
		}
		inv.Tasks = append(inv.Tasks, *t)
	}
	slices.SortFunc(inv.Tasks, func(a, b TaskState) int {
		return cmp.Or(cmp.Compare(a.Fingerprint, b.Fingerprint), cmp.Compare(a.Task, b.Task))
	})
	// A million scores cross the driver, whose cost is per column: each
	// comes as one column, its generation key (a hexadecimal digest)
	// joined to its cell's names (parsed once per cell); a cell's scored
	// samples are the most rows any one of its metrics has (the primary key
	// makes a (generation, sample, setting, budget, metric) row unique).
	type cellKey struct {
		fp, task, settingKey string
		budget               int
	}
	type acc struct {
		setting string
		metrics map[string]int
	}
	type named struct {
		task, setting, settingKey, metric string
		budget                            int
	}
	var names []named
	nameIdx := map[string]int{}
	counts := map[[2]int]int{} // (fingerprint, cell name) → rows
	fpIdx := map[string]int{}
	var fpList []string
	rows, err = s.db.QueryContext(ctx, `SELECT concat_ws(?, gen_key, task, budget, metric, setting, setting_key) FROM scores`, fieldSep)
	if err != nil {
		return nil, fmt.Errorf("read scores: %w", err)
	}
	defer rows.Close()
	lastKey, lastFP := "", -1
	for rows.Next() {
		if err := rows.Scan(&raw); err != nil {
			return nil, fmt.Errorf("read scores: %w", err)
		}
		g := bytes.IndexByte(raw, fieldSep[0])
		if g < 0 {
			return nil, fmt.Errorf("read scores: malformed row %q", raw)
		}
		if lastFP < 0 || string(raw[:g]) != lastKey {
			lastKey = string(raw[:g])
			fp, ok := fpOf[lastKey]
			if !ok {
				lastFP = -2 // a score whose generation is gone
			} else if lastFP, ok = fpIdx[fp]; !ok {
				lastFP = len(fpList)
				fpIdx[fp] = lastFP
				fpList = append(fpList, fp)
			}
		}
		if lastFP == -2 {
			continue
		}
		ni, ok := nameIdx[string(raw[g+1:])]
		if !ok {
			k := string(raw[g+1:])
			parts := strings.SplitN(k, fieldSep, 5)
			if len(parts) != 5 {
				return nil, fmt.Errorf("read scores: malformed cell %q", k)
			}
			b, err := strconv.Atoi(parts[1])
			if err != nil {
				return nil, fmt.Errorf("read scores: malformed cell %q", k)
			}
			ni = len(names)
			nameIdx[k] = ni
			names = append(names, named{task: parts[0], budget: b, metric: parts[2], setting: parts[3], settingKey: parts[4]})
		}
		counts[[2]int{lastFP, ni}]++
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read scores: %w", err)
	}
	cells := map[cellKey]*acc{}
	var order []cellKey
	for k, n := range counts {
		nm := names[k[1]]
		ck := cellKey{fpList[k[0]], nm.task, nm.settingKey, nm.budget}
		a := cells[ck]
		if a == nil {
			a = &acc{setting: nm.setting, metrics: map[string]int{}}
			cells[ck] = a
			order = append(order, ck)
		}
		// Several names for one setting key: the first in name order.
		a.setting = min(a.setting, nm.setting)
		a.metrics[nm.metric] += n
	}
	for _, k := range order {
		a := cells[k]
		c := Cell{Fingerprint: k.fp, Task: k.task, Setting: a.setting, SettingKey: k.settingKey, Budget: k.budget}
		for m, n := range a.metrics {
			c.Metrics = append(c.Metrics, m)
			c.Scored = max(c.Scored, n)
		}
		sortStrings(c.Metrics)
		inv.Cells = append(inv.Cells, c)
	}
	sortCells(inv.Cells)
	return inv, nil
}

// keyFingerprints numbers every generation (only those of the given
// fingerprints, when there are any) with its model fingerprint.
func (s *Store) keyFingerprints(ctx context.Context, only []string) (*genIndex, error) {
	fieldSep := s.fieldSep()
	q, args := `SELECT concat_ws(?, key, finish, `+s.sealTail()+`, fingerprint) FROM generations`, []any{fieldSep}
	if len(only) > 0 {
		q += " WHERE fingerprint IN (" + placeholders(len(only)) + ")"
		args = append(args, anys(only)...)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read generation keys: %w", err)
	}
	defer rows.Close()
	out := newGenIndex()
	var raw sql.RawBytes
	for rows.Next() {
		if err := rows.Scan(&raw); err != nil {
			return nil, fmt.Errorf("read generation keys: %w", err)
		}
		// The key is hexadecimal, the finish and the seal's tail hold no
		// separator; the fingerprint is the rest.
		f, ok := splitN(raw, fieldSep[0], 4)
		if !ok {
			return nil, fmt.Errorf("read generation keys: malformed row %q", raw)
		}
		if err := s.checkShown(f[0], f[3], f[1], f[2]); err != nil {
			return nil, err
		}
		out.add(f[0], f[3])
	}
	return out, rows.Err()
}

// genIndex numbers generations by key, from 0 in the order added, each
// with its model's fingerprint: a key that spells a SHA-256 in lower-case
// hexadecimal (as generate.Key makes them) by its 32 bytes, any other by
// its text. A map of 200,000 keys is then a third of the size, and holds
// no pointer per key for the collector to follow.
type genIndex struct {
	digests map[[32]byte]genRef
	other   map[string]genRef
	n       int32
	fps     []string
	fpIdx   map[string]int32
}

// genRef is a generation's number and its fingerprint's index.
type genRef struct{ n, fp int32 }

func newGenIndex() *genIndex {
	return &genIndex{digests: map[[32]byte]genRef{}, other: map[string]genRef{}, fpIdx: map[string]int32{}}
}

// add numbers the generation of a key and its model's fingerprint, and
// returns its number.
func (m *genIndex) add(key, fp []byte) int32 {
	fi, ok := m.fpIdx[string(fp)]
	if !ok {
		fi = int32(len(m.fps))
		m.fps = append(m.fps, string(fp))
		m.fpIdx[string(fp)] = fi
	}
	r := genRef{m.n, fi}
	m.n++
	if d, ok := hexDigest(key); ok {
		m.digests[d] = r
	} else {
		m.other[string(key)] = r
	}
	return r.n
}

// of is the fingerprint and number of a generation key ("" and -1: not
// numbered).
func (m *genIndex) of(key []byte) (string, int32) {
	var r genRef
	var ok bool
	if d, isHex := hexDigest(key); isHex {
		r, ok = m.digests[d]
	} else {
		r, ok = m.other[string(key)]
	}
	if !ok {
		return "", -1
	}
	return m.fps[r.fp], r.n
}

// hexDigest is the 32 bytes a key of 64 lower-case hexadecimal digits
// spells (one spelling a digest: upper case is another key).
func hexDigest(key []byte) (d [32]byte, ok bool) {
	if len(key) != 64 {
		return d, false
	}
	for i := range d {
		hi, ok1 := lowerHex(key[2*i])
		lo, ok2 := lowerHex(key[2*i+1])
		if !ok1 || !ok2 {
			return d, false
		}
		d[i] = hi<<4 | lo
	}
	return d, true
}

func lowerHex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// Entry is one stored score with the model that made its generation.
type Entry struct {
	Fingerprint string
	// Cell numbers the score's (task, setting, setting key, budget,
	// metric) within one EachEntry call, from 0, so that a caller can
	// index what it keeps per cell instead of hashing the names.
	Cell int
	// Gen numbers the score's generation within one EachEntry call, from
	// 0 (EachEntryAndGeneration: the number it handed the generation
	// over with).
	Gen int32
	Score
}

// Filter narrows what ReadEntries and ReadGenerationsOf return; empty
// fields match everything.
type Filter struct {
	// Fingerprints are model fingerprints.
	Fingerprints []string
	Tasks        []string
	// Settings are stop setting names.
	Settings []string
}

func (f Filter) where(alias string) (string, []any) {
	var conds []string
	var args []any
	add := func(col string, vals []string) {
		if len(vals) == 0 {
			return
		}
		conds = append(conds, alias+col+" IN ("+placeholders(len(vals))+")")
		args = append(args, anys(vals)...)
	}
	add("fingerprint", f.Fingerprints)
	add("task", f.Tasks)
	return strings.Join(conds, " AND "), args
}

// fieldSep is the byte that separates the fields EachEntry has the engine
// join into one column: for SQLite 0xFF, which no UTF-8 text holds (sample
// ids, like every name, come from JSON or the command line); PostgreSQL
// refuses invalid UTF-8, so it gets U+001F, which no id or name holds in
// practice. Generation keys and digests are hexadecimal.
func (s *Store) fieldSep() string {
	if s.db.eng == postgresEngine {
		return "\x1f"
	}
	return "\xff"
}

// EachEntry calls fn with every stored score the filter selects, with its
// model's fingerprint and digest (RunID is not read), without holding
// them all (entries share their strings); fn is called from one goroutine
// at a time. A SQLite store's scores come in storage (rowid) order, read
// in ranges on several cores (inRangesOrdered): from packed_scores, one
// row a (generation, sample, setting, budget), where the store keeps it
// (packed.go), else from scores; PostgreSQL's in the order the server
// reads them.
//
// A million scores cross the driver here, whose cost is per column, so a
// score's identifiers (generation key, sample id, task, budget, metric,
// setting, setting key, digest) come joined in one column (concat_ws,
// which both engines have: one copy, where || copies at every step) and the
// fingerprint is resolved from the generation key in Go rather than by a
// join.
func (s *Store) EachEntry(ctx context.Context, f Filter, fn func(Entry) error) error {
	fpOf, err := s.keyFingerprints(ctx, f.Fingerprints)
	if err != nil {
		return err
	}
	return s.eachEntryOf(ctx, f, fpOf, fn)
}

// EachEntryAndGeneration is EachEntry that first calls gen with every
// generation the filter selects (its Settings are ignored) and its
// number, from 0 in the order read, which the entries of its scores carry
// (Entry.Gen). A generation comes with what a report shows of it: its key,
// text, how it ended (finish, the error redacted), its prompt's length and
// whether it was imported, not its model, task, sample, budget, stop
// record or token ids (FailedGenerations reads those of the failed ones).
// One read of the generations numbers them and resolves the entries'
// fingerprints, and the caller keeps no map of generation keys.
func (s *Store) EachEntryAndGeneration(ctx context.Context, f Filter, gen func(n int32, g Generation) error, fn func(Entry) error) error {
	fpOf, err := s.generationIndex(ctx, f, gen)
	if err != nil {
		return err
	}
	return s.eachEntryOf(ctx, f, fpOf, fn)
}

// eachEntryOf is EachEntry with the generations numbered by fpOf.
func (s *Store) eachEntryOf(ctx context.Context, f Filter, fpOf *genIndex, fn func(Entry) error) error {
	if s.hasPackedScores() {
		return s.eachPackedEntry(ctx, f, fpOf, fn)
	}
	fieldSep := s.fieldSep()
	// SQLite joins the prediction too (last: it may hold anything), one
	// column fewer; PostgreSQL keeps predictions as bytes, which it would
	// join as hex.
	folded := s.db.eng != postgresEngine
	q := `SELECT concat_ws(?, gen_key, sample_id, task, budget, metric, setting, setting_key, digest, prediction),
		COALESCE(value,0), '' FROM scores`
	if !folded {
		q = `SELECT concat_ws(?, gen_key, sample_id, task, budget, metric, setting, setting_key, digest),
		COALESCE(value,0), prediction FROM scores`
	}
	conds, args := entryConds(f, true, fieldSep)
	p := entryParser{sep: fieldSep, folded: folded, fpOf: fpOf}
	if folded {
		return s.eachEntryInRanges(ctx, q, conds, args, &p, fn)
	}
	if len(conds) > 0 {
		q += " WHERE " + strings.Join(conds, " AND ")
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("read scores: %w", err)
	}
	defer rows.Close()
	var raw, predRaw sql.RawBytes
	var value float64
	for rows.Next() {
		if err := rows.Scan(&raw, &value, &predRaw); err != nil {
			return fmt.Errorf("read scores: %w", err)
		}
		if err := p.give(raw, predRaw, value, fn); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read scores: %w", err)
	}
	return nil
}

// entryConds are the conditions (ANDed) by which a read of scores or
// packed_scores selects the filter's fingerprints, tasks and (withSettings:
// scores has a row a setting name) settings, and their arguments after
// sep, the query's first.
func entryConds(f Filter, withSettings bool, sep string) (conds []string, args []any) {
	args = []any{sep}
	if len(f.Fingerprints) > 0 {
		conds = append(conds, "gen_key IN (SELECT key FROM generations WHERE fingerprint IN ("+placeholders(len(f.Fingerprints))+"))")
		args = append(args, anys(f.Fingerprints)...)
	}
	if len(f.Tasks) > 0 {
		conds = append(conds, "task IN ("+placeholders(len(f.Tasks))+")")
		args = append(args, anys(f.Tasks)...)
	}
	if withSettings && len(f.Settings) > 0 {
		conds = append(conds, "setting IN ("+placeholders(len(f.Settings))+")")
		args = append(args, anys(f.Settings)...)
	}
	return conds, args
}

// ReadGenerationsOf returns the generations the filter selects (its
// Settings are ignored), by key, without token ids and offsets.
func (s *Store) ReadGenerationsOf(ctx context.Context, f Filter) (map[string]Generation, error) {
	q := `SELECT key,fingerprint,task,sample_id,prompt_tokens,text,n_tokens,budget,finish,stops,error,continued,imported,gen_seconds,COALESCE(run_id,0) FROM generations`
	where, args := f.where("")
	if where != "" {
		q += " WHERE " + where
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read generations: %w", err)
	}
	defer rows.Close()
	out := map[string]Generation{}
	for rows.Next() {
		var g Generation
		var stops string
		if err := rows.Scan(&g.Key, &g.Fingerprint, &g.Task, &g.SampleID, &g.PromptTokens, &g.Text, &g.NTokens, &g.Budget,
			&g.Finish, &stops, &g.Error, &g.Continued, &g.Imported, &g.GenSeconds, &g.RunID); err != nil {
			return nil, fmt.Errorf("read generations: %w", err)
		}
		if g.Stops, err = s.shownStops(&g, stops); err != nil {
			return nil, err
		}
		g.Error = redact.String(g.Error)
		out[g.Key] = g
	}
	return out, rows.Err()
}

// Tasks lists the tasks that have stored samples, sorted.
func (s *Store) Tasks(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT task FROM samples ORDER BY task`)
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// RunStarted is a run's start time, or the zero time; a helper for callers
// that print runs.
func RunStarted(r Run) string {
	if r.StartedAt.IsZero() {
		return ""
	}
	return r.StartedAt.UTC().Format(time.RFC3339)
}

func sortStrings(xs []string) { slices.Sort(xs) }

func sortCells(cs []Cell) {
	slices.SortFunc(cs, func(a, b Cell) int {
		return cmp.Or(cmp.Compare(a.Fingerprint, b.Fingerprint), cmp.Compare(a.Task, b.Task),
			cmp.Compare(a.Setting, b.Setting), cmp.Compare(a.Budget, b.Budget))
	})
}
