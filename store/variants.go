package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"tally/tasks/variant"
)

// A task's samples, generations and scores are stored under its variant's
// key (tally/tasks/variant: "NAME#HEX"), and the variants table keeps each
// key's record (what makes the variant and what it was made from), so
// that reports of the store alone label and describe every variant.
//
// An earlier tally stored a task by its name alone, with one prompt per
// task and sample id: a second run of the task with other settings (a
// --fewshot 0 after the default 3 shots) replaced the stored prompts of
// the samples it selected while both runs' generations and scores stayed.
// Migration 7 tells a task's generations apart by what their runs were
// given (--data, --set and --chat: legacyKey) and pairs each sample's
// stored prompt with the generation it was made for: the sample's newest
// generation, unless a later run given other settings named the task and
// selected the sample (its --limit and --samples, the sample's index in
// the data), which replaced the prompt. A task whose generations came
// from runs given the same settings, and none of whose prompts a later
// run replaced, is one variant and stays as it was. A task with
// generations of several settings is split: each gets a key of its own
// (variant.Spec.Legacy records the settings), its generations and scores
// moved there, its samples copied with their stored prompts where those
// were made for its generations, and with none (marked not stored) where
// not: what they were is not stored, reports say so, and lm-eval files,
// which pair each prompt with its response, leave such a variant out;
// its scores are shown as stored, never recomputed. A read-only command
// never migrates: it reads an earlier store as it is unless a task of it
// needs splitting; then it reads a copy it upgrades in a temporary folder
// (SQLite: the store itself is left as it is; Store.Upgraded says so), or
// refuses, naming the command that splits it (PostgreSQL).

// variantsSchema is the schema version that added the variants table.
const variantsSchema = 7

// variantsSchemaPG is the PostgreSQL schema version that added it.
const variantsSchemaPG = 6

// variantsTable is the migration that adds the variants table (either
// engine: its columns are TEXT), and an index of each model's generations
// by task (a plan reads some of a task's generations to estimate where
// its requests stop: store.Continuations).
const variantsTable = `CREATE TABLE variants (
		task TEXT PRIMARY KEY,
		name TEXT NOT NULL,
		record TEXT NOT NULL
	);
	CREATE INDEX generations_fp_task ON generations(fingerprint, task);
	ALTER TABLE samples ADD COLUMN seal TEXT NOT NULL DEFAULT '';`

// hasVariants reports whether the store's schema has the variants table.
func (s *Store) hasVariants() bool {
	if s.schema == 0 {
		return true
	}
	if s.db.eng == postgresEngine {
		return s.schema >= variantsSchemaPG
	}
	return s.schema >= variantsSchema
}

// PutVariants records the variants of the tasks a command stores (the
// newest record of a key replaces the one stored: its identity is the
// same, where its files were may not be).
func (s *Store) PutVariants(ctx context.Context, recs []variant.Record) error {
	if len(recs) == 0 {
		return nil
	}
	return s.tx(ctx, func(tx *txn) error { return putVariants(ctx, tx, recs) })
}

func putVariants(ctx context.Context, tx *txn, recs []variant.Record) error {
	for _, r := range recs {
		b, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("store variant %s: %w", r.Key, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO variants(task,name,record) VALUES(?,?,?)
			ON CONFLICT(task) DO UPDATE SET name=excluded.name, record=excluded.record`, r.Key, r.Spec.Task, sealRecord(r.Key, b)); err != nil {
			return fmt.Errorf("store variant %s: %w", r.Key, err)
		}
	}
	return nil
}

// A variant's record is sealed as its scores are (seal.go): the record
// column holds the record's JSON, a newline and the first 16 hexadecimal
// digits of the SHA-256 of its key and its JSON, so that a damaged record
// (which labels a task and says what made it) is named, never read.

// sealRecord is the record column of key's record b.
func sealRecord(key string, b []byte) string {
	return string(b) + "\n" + recordSum(key, b)
}

// recordSum is the seal of key's record b.
func recordSum(key string, b []byte) string {
	h := sha256.New()
	h.Write([]byte(key))
	h.Write([]byte{0})
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// openRecord reads key's record column, checking its seal and, for a
// variant of a run, that its key is its spec's.
func openRecord(key, col string) (variant.Record, error) {
	i := strings.LastIndexByte(col, '\n')
	if i < 0 || col[i+1:] != recordSum(key, []byte(col[:i])) {
		return variant.Record{}, errSeal
	}
	var r variant.Record
	if err := json.Unmarshal([]byte(col[:i]), &r); err != nil {
		return variant.Record{}, err
	}
	if r.Spec.Legacy == nil && r.Spec.Key() != key {
		return variant.Record{}, fmt.Errorf("its key is not its spec's (%s)", r.Spec.Key())
	}
	r.Key = key
	return r, nil
}

// Variants reads every stored variant's record by its key (none for a
// store an earlier tally wrote and no command has migrated).
func (s *Store) Variants(ctx context.Context) (map[string]variant.Record, error) {
	out := map[string]variant.Record{}
	if !s.hasVariants() {
		return out, nil
	}
	rows, err := s.db.QueryContext(ctx, `SELECT task, record FROM variants`)
	if err != nil {
		return nil, fmt.Errorf("read variants: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var key, rec string
		if err := rows.Scan(&key, &rec); err != nil {
			return nil, fmt.Errorf("read variants: %w", err)
		}
		r, err := openRecord(key, rec)
		if err != nil {
			return nil, &DamagedError{Store: s.Path(), What: "the record of task variant " + key, Why: err.Error()}
		}
		out[key] = r
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read variants: %w", err)
	}
	return out, nil
}

// queryer is what reading a store's legacy tasks needs: a connection or a
// transaction.
type queryer interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}

// legacyRun is what a run of an earlier tally was given that decides the
// prompts it stored.
type legacyRun struct {
	id int64
	// group is its legacy key (legacyKey), tasks its --tasks entries,
	// limit and samples its --limit and --samples.
	group   string
	tasks   []string
	limit   int
	samples []string
}

// covers reports whether the run selected the sample of id and index in
// its task's data (-1: unknown, taken as selected).
func (r legacyRun) covers(id string, index int) bool {
	if len(r.samples) > 0 && !slices.Contains(r.samples, id) {
		return false
	}
	return r.limit <= 0 || index < 0 || index < r.limit
}

// legacyGen is a generation of an earlier tally's task.
type legacyGen struct {
	key, id string
	run     int64 // -1: no run recorded
	group   string
}

// legacyTask is one task an earlier tally stored by name.
type legacyTask struct {
	name string
	gens []legacyGen
	// groups are its generations' runs' legacy keys, sorted.
	groups []string
	// paired maps a sample id to the group its stored prompt was made
	// under: that of its newest generation's run, unless a later run
	// given other settings named the task and selected the sample (it
	// replaced the prompt); ambiguous lists the sample ids with
	// generations whose stored prompt pairs with none of them.
	paired    map[string]string
	ambiguous []string
}

// needsSplit reports whether the task must be split or have prompts
// marked not stored before it can be read as one variant.
func (t *legacyTask) needsSplit() bool { return len(t.groups) > 1 || len(t.ambiguous) > 0 }

// legacyTasks reads the tasks of a store an earlier tally wrote (every
// task: none had a variant key), each with its generations and which
// generations its stored prompts were made for.
func legacyTasks(ctx context.Context, q queryer) ([]*legacyTask, error) {
	runs, err := legacyRuns(ctx, q)
	if err != nil {
		return nil, err
	}
	byID := map[int64]legacyRun{}
	for _, r := range runs {
		byID[r.id] = r
	}
	byName := map[string]*legacyTask{}
	var tasks []*legacyTask
	rows, err := q.QueryContext(ctx, `SELECT task, key, sample_id, run_id FROM generations ORDER BY task, key`)
	if err != nil {
		return nil, fmt.Errorf("read generations: %w", err)
	}
	for rows.Next() {
		var task string
		var g legacyGen
		var run sql.NullInt64
		if err := rows.Scan(&task, &g.key, &g.id, &run); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read generations: %w", err)
		}
		g.run, g.group = -1, legacyKey(variant.LegacyConfig{})
		if r, ok := byID[run.Int64]; run.Valid && ok {
			g.run, g.group = r.id, r.group
		}
		t := byName[task]
		if t == nil {
			t = &legacyTask{name: task, paired: map[string]string{}}
			byName[task] = t
			tasks = append(tasks, t)
		}
		t.gens = append(t.gens, g)
		if !slices.Contains(t.groups, g.group) {
			t.groups = append(t.groups, g.group)
		}
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("read generations: %w", err)
	}
	index, err := legacyIndexes(ctx, q)
	if err != nil {
		return nil, err
	}
	for _, t := range tasks {
		slices.Sort(t.groups)
		t.pair(runs, index[t.name])
	}
	slices.SortFunc(tasks, func(a, b *legacyTask) int { return strings.Compare(a.name, b.name) })
	return tasks, nil
}

// pair finds, per sample, the group its stored prompt was made under.
func (t *legacyTask) pair(runs []legacyRun, index map[string]int) {
	// specs are the task specs of the runs that made the task's
	// generations: a run given one of them (or the task's name) named
	// the task.
	specs := map[string]bool{t.name: true}
	newest := map[string]legacyGen{}
	for _, g := range t.gens {
		for _, r := range runs {
			if r.id == g.run {
				for _, s := range r.tasks {
					specs[s] = true
				}
			}
		}
		if n, ok := newest[g.id]; !ok || g.run > n.run {
			newest[g.id] = g
		}
	}
	var naming []legacyRun
	for _, r := range runs {
		if slices.ContainsFunc(r.tasks, func(s string) bool { return specs[s] }) {
			naming = append(naming, r)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(newest)) {
		g := newest[id]
		idx, ok := index[id]
		if !ok {
			idx = -1
		}
		replaced := slices.ContainsFunc(naming, func(r legacyRun) bool { return r.id > g.run && r.group != g.group && r.covers(id, idx) })
		if replaced {
			t.ambiguous = append(t.ambiguous, id)
		} else {
			t.paired[id] = g.group
		}
	}
}

// legacyRuns reads every run's prompt-shaping flags, oldest first.
func legacyRuns(ctx context.Context, q queryer) ([]legacyRun, error) {
	rows, err := q.QueryContext(ctx, `SELECT id, config FROM runs ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("read runs: %w", err)
	}
	defer rows.Close()
	var out []legacyRun
	for rows.Next() {
		var id int64
		var cfg string
		if err := rows.Scan(&id, &cfg); err != nil {
			return nil, fmt.Errorf("read runs: %w", err)
		}
		c, _ := variant.ParseLegacyConfig([]byte(cfg)) // an unreadable config groups as none
		var sel struct {
			Limit   int      `json:"limit"`
			Samples []string `json:"samples"`
		}
		_ = json.Unmarshal([]byte(cfg), &sel)
		out = append(out, legacyRun{id: id, group: legacyKey(c), tasks: c.Tasks, limit: sel.Limit, samples: sel.Samples})
	}
	return out, rows.Err()
}

// legacyIndexes reads each stored sample's index in its task's data
// (datasets.Stored's "index"), by task and id, where it is stored.
func legacyIndexes(ctx context.Context, q queryer) (map[string]map[string]int, error) {
	rows, err := q.QueryContext(ctx, `SELECT task, id, metadata FROM samples`)
	if err != nil {
		return nil, fmt.Errorf("read samples: %w", err)
	}
	defer rows.Close()
	out := map[string]map[string]int{}
	for rows.Next() {
		var task, id, meta string
		if err := rows.Scan(&task, &id, &meta); err != nil {
			return nil, fmt.Errorf("read samples: %w", err)
		}
		var st struct {
			Index *int `json:"index"`
		}
		if json.Unmarshal([]byte(meta), &st) != nil || st.Index == nil {
			continue
		}
		if out[task] == nil {
			out[task] = map[string]int{}
		}
		out[task][id] = *st.Index
	}
	return out, rows.Err()
}

// legacyKey is the part of a run's config that shapes a task's prompts:
// its --data, --set and --chat. Its task specs are left out: which of a
// run's several tasks a generation came from is not recorded, and one
// task run alone or beside others is the same variant (two task files of
// one task name run with the same flags are not told apart).
func legacyKey(c variant.LegacyConfig) string {
	c.Tasks = nil
	return c.String()
}

// LegacyMixedError says that a store an earlier tally wrote holds several
// variants of a task under one name (or prompts a later run replaced): it
// is read through an upgraded copy (SQLite) or refused (PostgreSQL) until
// a writing command splits it.
type LegacyMixedError struct {
	Where string
	// Tasks describes each such task.
	Tasks []string
}

func (e *LegacyMixedError) Error() string {
	return fmt.Sprintf("store %s was written by an earlier tally, which kept one prompt per task and sample id, and holds generations "+
		"made for other prompts under one task name: %s. Read-only commands never write; `tally upgrade --store %s` splits each such task "+
		"by the settings its runs were given (each sample's stored prompt stays with the generation it was made for; the other "+
		"generations keep their scores, their prompts marked not stored)", e.Where, strings.Join(e.Tasks, "; "), e.Where)
}

// checkLegacyReadable returns a LegacyMixedError for a store an earlier
// tally wrote that holds several variants of a task under one name (it
// needs splitting, which only a writing command does), nil when its every
// task is one variant.
func checkLegacyReadable(ctx context.Context, q queryer, where string) error {
	tasks, err := legacyTasks(ctx, q)
	if err != nil {
		return fmt.Errorf("open store %s: %w", where, err)
	}
	var mixed []string
	for _, t := range tasks {
		if t.needsSplit() {
			mixed = append(mixed, fmt.Sprintf("%s (generations of %d settings, %d samples whose prompt a later run replaced)", t.name, len(t.groups), len(t.ambiguous)))
		}
	}
	if len(mixed) == 0 {
		return nil
	}
	return &LegacyMixedError{Where: where, Tasks: mixed}
}

// openUpgradedCopy opens, for reading, an upgraded copy of the SQLite
// store at path (its file and write-ahead log copied to a temporary
// folder, then migrated there): what a read-only command reads of an
// earlier store that needs splitting, leaving the store itself as it is.
func openUpgradedCopy(ctx context.Context, path string, why *LegacyMixedError) (*Store, error) {
	dir, err := os.MkdirTemp("", "tally-upgraded-*")
	if err != nil {
		return nil, fmt.Errorf("open store %s: copy it to upgrade: %w", path, err)
	}
	copyPath := filepath.Join(dir, "store.db")
	for _, suffix := range []string{"", "-wal"} {
		if err := copyFile(path+suffix, copyPath+suffix); err != nil && !(suffix != "" && errors.Is(err, os.ErrNotExist)) {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("open store %s: copy it to upgrade: %w", path, err)
		}
	}
	s, err := Open(ctx, copyPath)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("open store %s: upgrade a copy: %w", path, err)
	}
	s.path, s.readOnly, s.copyDir, s.upgraded = path, true, dir, why
	return s, nil
}

// copyFile copies a regular file.
func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

// Upgraded says, for a store a read-only command reads through an
// upgraded copy (an earlier tally's, holding several variants of a task
// under one name), why it does; nil otherwise.
func (s *Store) Upgraded() *LegacyMixedError { return s.upgraded }

// splitLegacyTasks is migration 7's step: it records a variant for every
// task of an earlier store, and splits a task that holds several (or
// marks the prompts a later run replaced as not stored); and it seals
// every sample.
func splitLegacyTasks(ctx context.Context, tx *txn) (err error) {
	tasks, err := legacyTasks(ctx, tx)
	if err != nil {
		return err
	}
	// Samples are sealed first (sampleseal.go), so that a variant's
	// copies of them carry their seals; the prompts cleared below are
	// sealed again at the end.
	if err := sealSamples(ctx, tx); err != nil {
		return err
	}
	defer func() {
		if err == nil {
			err = sealSamples(ctx, tx)
		}
	}()
	for _, t := range tasks {
		var recs []variant.Record
		switch {
		case !t.needsSplit():
			recs = append(recs, variant.Record{Key: t.name, Spec: variant.Spec{Task: t.name, Legacy: &variant.Legacy{Config: t.groups[0], Prompts: true}}})
		case len(t.groups) == 1:
			if err := clearPrompts(ctx, tx, t.name, t.ambiguous); err != nil {
				return fmt.Errorf("split task %s: %w", t.name, err)
			}
			recs = append(recs, variant.Record{Key: t.name, Spec: variant.Spec{Task: t.name, Legacy: &variant.Legacy{Config: t.groups[0]}}})
		default:
			for _, g := range t.groups {
				rec, err := moveLegacyGroup(ctx, tx, t, g)
				if err != nil {
					return fmt.Errorf("split task %s: %w", t.name, err)
				}
				recs = append(recs, rec)
			}
		}
		if err := putVariants(ctx, tx, recs); err != nil {
			return err
		}
	}
	return nil
}

// clearPrompts marks the stored prompts of a task's samples ids as not
// stored (empty).
func clearPrompts(ctx context.Context, tx *txn, task string, ids []string) error {
	for lo := 0; lo < len(ids); lo += 500 {
		part := ids[lo:min(lo+500, len(ids))]
		if _, err := tx.ExecContext(ctx, `UPDATE samples SET prompt=?, seal='' WHERE task=? AND id IN (`+placeholders(len(part))+`)`,
			append([]any{tx.eng.text(""), task}, anys(part)...)...); err != nil {
			return fmt.Errorf("mark prompts not stored: %w", err)
		}
	}
	return nil
}

// moveLegacyGroup moves the generations of one group of a task, with
// their scores, to a key of its own, and gives it their samples: with
// their stored prompt where it was made for the group's generation,
// else with none.
func moveLegacyGroup(ctx context.Context, tx *txn, t *legacyTask, group string) (variant.Record, error) {
	var keys, ids, own []string
	for _, g := range t.gens {
		if g.group != group {
			continue
		}
		keys = append(keys, g.key)
		if !slices.Contains(ids, g.id) {
			ids = append(ids, g.id)
			if t.paired[g.id] == group {
				own = append(own, g.id)
			}
		}
	}
	rec := variant.New(variant.Spec{Task: t.name, Legacy: &variant.Legacy{Config: group, Prompts: len(own) == len(ids)}}, variant.Info{})
	for lo := 0; lo < len(keys); lo += 500 {
		part := keys[lo:min(lo+500, len(keys))]
		in := placeholders(len(part))
		if _, err := tx.ExecContext(ctx, `UPDATE generations SET task=? WHERE key IN (`+in+`)`, append([]any{rec.Key}, anys(part)...)...); err != nil {
			return rec, fmt.Errorf("move generations: %w", err)
		}
		for _, tb := range []string{"scores", "score_digests"} {
			if _, err := tx.ExecContext(ctx, `UPDATE `+tb+` SET task=? WHERE task=? AND gen_key IN (`+in+`)`,
				append([]any{rec.Key, t.name}, anys(part)...)...); err != nil {
				return rec, fmt.Errorf("move %s: %w", tb, err)
			}
		}
		if tx.eng != postgresEngine {
			if err := movePacked(ctx, tx, t.name, rec.Key, part); err != nil {
				return rec, err
			}
		}
	}
	for lo := 0; lo < len(ids); lo += 500 {
		part := ids[lo:min(lo+500, len(ids))]
		if _, err := tx.ExecContext(ctx, `INSERT INTO samples(task,id,prompt,refs,metadata,seal) SELECT ?, id, prompt, refs, metadata, seal FROM samples
			WHERE task=? AND id IN (`+placeholders(len(part))+`) ON CONFLICT(task,id) DO NOTHING`,
			append([]any{rec.Key, t.name}, anys(part)...)...); err != nil {
			return rec, fmt.Errorf("copy samples: %w", err)
		}
	}
	var lost []string
	for _, id := range ids {
		if !slices.Contains(own, id) {
			lost = append(lost, id)
		}
	}
	return rec, clearPrompts(ctx, tx, rec.Key, lost)
}

// movePacked moves the packed rows of scores of generations keys from
// task to key: a sealed row whose seal holds is sealed again under its
// new key (the seal covers the task); a row from before seals is moved
// as it is (sealLegacy checks and seals it after the migrations); a row
// whose seal is broken is moved broken, and is reported as damaged.
func movePacked(ctx context.Context, tx *txn, task, key string, keys []string) error {
	rows, err := tx.QueryContext(ctx, `SELECT rowid, gen_key, sample_id, setting_key, budget, digest, scores FROM packed_scores
		WHERE task=? AND gen_key IN (`+placeholders(len(keys))+`)`, append([]any{task}, anys(keys)...)...)
	if err != nil {
		return fmt.Errorf("move packed_scores: %w", err)
	}
	type moved struct {
		rowid int64
		row   []byte
	}
	var out []moved
	for rows.Next() {
		var m moved
		var k ScoreKey
		var digest string
		if err := rows.Scan(&m.rowid, &k.GenKey, &k.SampleID, &k.SettingKey, &k.Budget, &digest, &m.row); err != nil {
			rows.Close()
			return fmt.Errorf("move packed_scores: %w", err)
		}
		k.Task = task
		if body, sealed, err := openSealedKey(k, digest, m.row); err == nil && sealed {
			k.Task = key
			m.row = sealPacked(nil, k, digest, body)
		}
		out = append(out, m)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return fmt.Errorf("move packed_scores: %w", err)
	}
	for _, m := range out {
		if _, err := tx.ExecContext(ctx, `UPDATE packed_scores SET task=?, scores=? WHERE rowid=?`, key, m.row, m.rowid); err != nil {
			return fmt.Errorf("move packed_scores: %w", err)
		}
	}
	return nil
}

// AdoptLegacy makes an earlier tally's task, stored by its name as one
// variant with its prompts (variant.Spec.Legacy), the variant key: when
// the prompts it stores are the ones given (prompts, called only when
// there is such a task: by sample id, as the variant key makes them; every
// id both hold has the same prompt, and they share at least one) and
// nothing is stored under key yet, its
// samples, generations and scores move to key, and its record goes. A
// store upgraded from an earlier tally so keeps one task per variant
// after its next run, rather than the earlier task beside the run's. It
// reports whether it moved anything.
func (s *Store) AdoptLegacy(ctx context.Context, name, key string, prompts func() map[string]string) (bool, error) {
	adopted := false
	err := s.tx(ctx, func(tx *txn) error {
		adopted = false
		var rec string
		if err := tx.QueryRowContext(ctx, `SELECT record FROM variants WHERE task=?`, name).Scan(&rec); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return nil
			}
			return fmt.Errorf("adopt %s: %w", name, err)
		}
		r, err := openRecord(name, rec)
		if err != nil || r.Spec.Legacy == nil || !r.Spec.Legacy.Prompts {
			return nil // damaged records are named by the reads that meet them
		}
		var taken int
		if err := tx.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM samples WHERE task=?) + (SELECT COUNT(*) FROM scores WHERE task=?)`,
			key, key).Scan(&taken); err != nil || taken > 0 {
			return err
		}
		same, err := legacyPromptsMatch(ctx, tx, name, prompts())
		if err != nil || !same {
			return err
		}
		if err := moveTask(ctx, tx, name, key); err != nil {
			return fmt.Errorf("adopt %s as %s: %w", name, key, err)
		}
		adopted = true
		return nil
	})
	return adopted, err
}

// legacyPromptsMatch reports whether the prompts stored for task agree
// with prompts wherever both have a sample, and they share one.
func legacyPromptsMatch(ctx context.Context, tx *txn, task string, prompts map[string]string) (bool, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id, prompt FROM samples WHERE task=?`, task)
	if err != nil {
		return false, fmt.Errorf("read samples of %s: %w", task, err)
	}
	defer rows.Close()
	shared := 0
	for rows.Next() {
		var id, prompt string
		if err := rows.Scan(&id, &prompt); err != nil {
			return false, fmt.Errorf("read samples of %s: %w", task, err)
		}
		if p, ok := prompts[id]; ok {
			if p != prompt {
				return false, nil
			}
			shared++
		}
	}
	return shared > 0, rows.Err()
}

// moveTask moves every row of task to key: samples, generations, scores
// (packed rows sealed again), and drops task's record.
func moveTask(ctx context.Context, tx *txn, task, key string) error {
	for _, tb := range []string{"samples", "generations", "scores", "score_digests"} {
		if _, err := tx.ExecContext(ctx, `UPDATE `+tb+` SET task=? WHERE task=?`, key, task); err != nil {
			return fmt.Errorf("move %s: %w", tb, err)
		}
	}
	if tx.eng != postgresEngine {
		var keys []string
		rows, err := tx.QueryContext(ctx, `SELECT DISTINCT gen_key FROM packed_scores WHERE task=?`, task)
		if err != nil {
			return fmt.Errorf("move packed_scores: %w", err)
		}
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				rows.Close()
				return fmt.Errorf("move packed_scores: %w", err)
			}
			keys = append(keys, k)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return fmt.Errorf("move packed_scores: %w", err)
		}
		for lo := 0; lo < len(keys); lo += 500 {
			if err := movePacked(ctx, tx, task, key, keys[lo:min(lo+500, len(keys))]); err != nil {
				return err
			}
		}
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM variants WHERE task=?`, task)
	return err
}
