package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
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
}

// Inventory reads what the store holds: per model and task the generation
// counts, per model, task, setting and budget the scored samples and
// metrics, and each model's last run.
func (s *Store) Inventory(ctx context.Context) (*Inventory, error) {
	inv := &Inventory{Models: map[string]string{}, LastRun: map[string]Run{}}
	runs, err := s.Runs(ctx)
	if err != nil {
		return nil, err
	}
	for _, r := range runs { // newest first
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
	rows, err = s.db.QueryContext(ctx, `SELECT fingerprint, task, COUNT(*),
		SUM(CASE WHEN finish IN ('error','context') THEN 1 ELSE 0 END), SUM(imported), MAX(budget)
		FROM generations GROUP BY fingerprint, task ORDER BY fingerprint, task`)
	if err != nil {
		return nil, fmt.Errorf("count generations: %w", err)
	}
	for rows.Next() {
		var t TaskState
		if err := rows.Scan(&t.Fingerprint, &t.Task, &t.Generated, &t.Failed, &t.Imported, &t.MaxBudget); err != nil {
			rows.Close()
			return nil, err
		}
		t.Samples = nSamples[t.Task]
		t.Pending = max(t.Samples-t.Generated, 0)
		if _, ok := inv.Models[t.Fingerprint]; !ok {
			inv.Models[t.Fingerprint] = t.Fingerprint
		}
		inv.Tasks = append(inv.Tasks, t)
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	// Scores carry their task and setting; their generation's key names the
	// model, so resolve keys to fingerprints once.
	fpOf, err := s.keyFingerprints(ctx)
	if err != nil {
		return nil, err
	}
	// Rows are scanned as raw bytes and strings interned, so a million
	// scores cost few allocations; a cell's scored samples are the most
	// rows any one of its metrics has (the primary key makes a (generation,
	// sample, setting, budget, metric) row unique).
	type cellKey struct {
		fp, task, settingKey string
		budget               int
	}
	type acc struct {
		setting string
		metrics map[string]int
	}
	intern := map[string]string{}
	in := func(b sql.RawBytes) string {
		if x, ok := intern[string(b)]; ok {
			return x
		}
		x := string(b)
		intern[x] = x
		return x
	}
	cells := map[cellKey]*acc{}
	var order []cellKey
	rows, err = s.db.QueryContext(ctx, `SELECT gen_key, task, setting, setting_key, budget, metric FROM scores`)
	if err != nil {
		return nil, fmt.Errorf("read scores: %w", err)
	}
	defer rows.Close()
	var genKey, task, setting, settingKey, metric sql.RawBytes
	var budget int
	for rows.Next() {
		if err := rows.Scan(&genKey, &task, &setting, &settingKey, &budget, &metric); err != nil {
			return nil, err
		}
		k := cellKey{fpOf[string(genKey)], in(task), in(settingKey), budget}
		a := cells[k]
		if a == nil {
			a = &acc{setting: in(setting), metrics: map[string]int{}}
			cells[k] = a
			order = append(order, k)
		}
		a.metrics[in(metric)]++
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read scores: %w", err)
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

// keyFingerprints maps every generation key to its model fingerprint.
func (s *Store) keyFingerprints(ctx context.Context) (map[string]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT key, fingerprint FROM generations`)
	if err != nil {
		return nil, fmt.Errorf("read generation keys: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	fps := map[string]string{} // intern fingerprints
	var k string
	var raw sql.RawBytes
	for rows.Next() {
		if err := rows.Scan(&k, &raw); err != nil {
			return nil, err
		}
		fp, ok := fps[string(raw)]
		if !ok {
			fp = string(raw)
			fps[fp] = fp
		}
		out[k] = fp
	}
	return out, rows.Err()
}

// Entry is one stored score with the model that made its generation.
type Entry struct {
	Fingerprint string
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

// EachEntry calls fn with every stored score the filter selects, with its
// model's fingerprint, in no particular order, without holding them all.
func (s *Store) EachEntry(ctx context.Context, f Filter, fn func(Entry) error) error {
	q := `SELECT g.fingerprint, s.gen_key, s.task, s.sample_id, s.setting, s.setting_key, s.budget, s.metric,
		COALESCE(s.value,0), s.prediction, COALESCE(s.run_id,0)
		FROM scores s JOIN generations g ON g.key = s.gen_key`
	where, args := f.where("g.")
	where = strings.ReplaceAll(where, "g.task", "s.task")
	if len(f.Settings) > 0 {
		if where != "" {
			where += " AND "
		}
		where += "s.setting IN (" + placeholders(len(f.Settings)) + ")"
		args = append(args, anys(f.Settings)...)
	}
	if where != "" {
		q += " WHERE " + where
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("read scores: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var e Entry
		if err := rows.Scan(&e.Fingerprint, &e.GenKey, &e.Task, &e.SampleID, &e.Setting, &e.SettingKey, &e.Budget, &e.Metric,
			&e.Value, &e.Prediction, &e.RunID); err != nil {
			return fmt.Errorf("read scores: %w", err)
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read scores: %w", err)
	}
	return nil
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
		g.Stops = json.RawMessage(stops)
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
