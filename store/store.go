// Package store is tally's results store: samples, runs, generations and
// scores in separate tables of one SQLite file (pure-Go driver, WAL mode,
// versioned migrations). It is the single source of truth for what was
// generated and scored; every write is transactional, so a process killed at
// any instant loses at most the work that had not been committed.
package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"tally/internal/redact"
)

// migrations are applied in order; PRAGMA user_version records how many
// have run. Never edit a released migration: append a new one.
var migrations = []string{
	`CREATE TABLE runs (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		started_at TEXT NOT NULL,
		finished_at TEXT,
		command TEXT NOT NULL,
		config TEXT NOT NULL,
		version TEXT NOT NULL,
		host TEXT NOT NULL,
		backend TEXT NOT NULL,
		model TEXT NOT NULL,
		fingerprint TEXT NOT NULL,
		status TEXT NOT NULL,
		generated_tokens INTEGER NOT NULL DEFAULT 0,
		prompt_tokens INTEGER NOT NULL DEFAULT 0,
		gen_seconds REAL NOT NULL DEFAULT 0,
		stats TEXT NOT NULL DEFAULT '{}'
	);
	CREATE TABLE samples (
		task TEXT NOT NULL,
		id TEXT NOT NULL,
		prompt TEXT NOT NULL,
		refs TEXT NOT NULL,
		metadata TEXT NOT NULL,
		PRIMARY KEY (task, id)
	);
	CREATE TABLE generations (
		key TEXT PRIMARY KEY,
		fingerprint TEXT NOT NULL,
		task TEXT NOT NULL,
		sample_id TEXT NOT NULL,
		prompt_tokens INTEGER NOT NULL,
		text TEXT NOT NULL,
		ids BLOB,
		offsets BLOB,
		n_tokens INTEGER NOT NULL,
		budget INTEGER NOT NULL,
		finish TEXT NOT NULL,
		stops TEXT NOT NULL,
		error TEXT NOT NULL DEFAULT '',
		continued INTEGER NOT NULL DEFAULT 0,
		imported INTEGER NOT NULL DEFAULT 0,
		gen_seconds REAL NOT NULL DEFAULT 0,
		run_id INTEGER,
		updated_at TEXT NOT NULL
	);
	CREATE INDEX generations_fp ON generations(fingerprint);
	CREATE TABLE scores (
		gen_key TEXT NOT NULL,
		task TEXT NOT NULL,
		sample_id TEXT NOT NULL,
		setting TEXT NOT NULL,
		setting_key TEXT NOT NULL,
		budget INTEGER NOT NULL,
		metric TEXT NOT NULL,
		value REAL,
		prediction TEXT NOT NULL,
		run_id INTEGER,
		PRIMARY KEY (gen_key, task, sample_id, setting_key, budget, metric)
	);`,
	// 2: scores record the digest of everything that produced them; claims
	// let several processes share the generation work of one store.
	`ALTER TABLE scores ADD COLUMN digest TEXT NOT NULL DEFAULT '';
	CREATE TABLE claims (
		gen_key TEXT PRIMARY KEY,
		owner TEXT NOT NULL,
		expires_at INTEGER NOT NULL
	);
	CREATE INDEX claims_owner ON claims(owner);`,
	// 3: workers register themselves (identity, host, heartbeat) so that
	// tally ls and plan show who holds the claims.
	`CREATE TABLE workers (
		id TEXT PRIMARY KEY,
		host TEXT NOT NULL,
		pid INTEGER NOT NULL,
		run_id INTEGER,
		model TEXT NOT NULL,
		fingerprint TEXT NOT NULL,
		status TEXT NOT NULL,
		lease_ms INTEGER NOT NULL,
		started_at INTEGER NOT NULL,
		heartbeat_at INTEGER NOT NULL,
		generated INTEGER NOT NULL DEFAULT 0
	);`,
	// 4: a run's process heartbeats its record while it runs, so that a
	// run whose process died is told from one still running.
	`ALTER TABLE runs ADD COLUMN heartbeat_at INTEGER;
	ALTER TABLE runs ADD COLUMN lease_ms INTEGER NOT NULL DEFAULT 0;`,
	// 5: the digest of each (generation, sample, setting, budget)'s
	// scores, one row where scores has one a metric, kept by every
	// writer of scores: a plan reads a quarter of the rows.
	`CREATE TABLE score_digests (
		gen_key TEXT NOT NULL,
		task TEXT NOT NULL,
		sample_id TEXT NOT NULL,
		setting_key TEXT NOT NULL,
		budget INTEGER NOT NULL,
		digest TEXT NOT NULL,
		PRIMARY KEY (gen_key, task, sample_id, setting_key, budget)
	) WITHOUT ROWID;
	` + fillScoreDigests,
	// 6: each key's scores packed in one row (packed.go), which reports
	// read: a quarter of the rows. Filled by fillPackedScores.
	`CREATE TABLE packed_scores (
		gen_key TEXT NOT NULL,
		task TEXT NOT NULL,
		sample_id TEXT NOT NULL,
		setting_key TEXT NOT NULL,
		budget INTEGER NOT NULL,
		digest TEXT NOT NULL,
		scores BLOB NOT NULL
	);`, // and, once filled, a unique index on the key
	// 7: each task variant's record (variants.go); filled, and an
	// earlier tally's tasks split, by splitLegacyTasks.
	variantsTable,
}

// migrationFill is the step, in Go, that fills what SQLite migration n
// added (nil: none).
func migrationFill(n int) func(context.Context, *txn) error {
	switch n {
	case packedScoresSchema:
		return fillPackedScores
	case variantsSchema:
		return splitLegacyTasks
	}
	return nil
}

// fillScoreDigests fills score_digests from the scores of a store that
// had none (migration 5 on either engine).
const fillScoreDigests = `INSERT INTO score_digests(gen_key,task,sample_id,setting_key,budget,digest)
	SELECT gen_key, task, sample_id, setting_key, budget, ` + keyDigest + ` FROM scores
	GROUP BY gen_key, task, sample_id, setting_key, budget;`

// keyDigest is the digest of a group of one key's score rows: theirs,
// or MixedDigest when they disagree.
const keyDigest = `CASE WHEN MIN(digest) = MAX(digest) THEN MIN(digest) ELSE '` + MixedDigest + `' END`

// maxOpenSQLite is how many connections a SQLite store opens at most
// (parallel reads; writes take the one write lock in turn).
const maxOpenSQLite = 4

// Store is an open results store.
type Store struct {
	db       *conn
	path     string
	readOnly bool
	// schema is the store's schema version when it was opened read-only
	// (0 when opened for writing: then it is always the newest).
	schema int
	// copyDir holds the upgraded copy of an earlier store that a
	// read-only open reads instead ("" when none), and Upgraded says what
	// made it one.
	copyDir  string
	upgraded *LegacyMixedError
}

// hasWorkers reports whether the store's schema has the workers table.
func (s *Store) hasWorkers() bool { return s.schema == 0 || s.schema >= workersSchema }

// Open opens (creating if needed) the SQLite store at path for reading and
// writing and applies any pending migrations. Migrations are serialised
// across processes: the version is read and the migrations applied inside
// one write-locked transaction, so processes that open a new store together
// migrate it once.
func Open(ctx context.Context, path string) (*Store, error) {
	if IsPostgres(path) {
		return openPostgres(ctx, path, false)
	}
	if err := checkFile(path); err != nil {
		return nil, err
	}
	if err := checkForeign(ctx, path); err != nil {
		return nil, err
	}
	// _txlock=immediate: every transaction takes the write lock when it
	// begins, so a transaction that reads before it writes never fails
	// with a busy snapshot; it waits (busy_timeout) for the lock instead.
	dsn := "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=cell_size_check(1)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(ON)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	db.SetMaxOpenConns(maxOpenSQLite)
	s := &Store{db: &conn{DB: db}, path: path}
	noteOpened(path)
	if err := s.migrateRetrying(ctx); err != nil {
		db.Close()
		var se *StorageError
		if errors.As(err, &se) {
			return nil, err // it names the store
		}
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	return s, nil
}

// ErrNoStore is returned (wrapped) by OpenReadOnly for a path where no
// store exists.
var ErrNoStore = errors.New("no store")

// OpenReadOnly opens an existing store for reading only: it never creates
// the file, never migrates it and never writes to it, so it works on a
// read-only file or directory. A store whose schema is older than this
// tally's is refused with a message saying which command upgrades it.
func OpenReadOnly(ctx context.Context, path string) (*Store, error) {
	if IsPostgres(path) {
		return openPostgres(ctx, path, true)
	}
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("store %s does not exist (%w; read-only commands never create one)", path, ErrNoStore)
	}
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("store %s is a directory, not a store file", path)
	}
	if err := checkRegular(path); err != nil {
		return nil, err
	}
	if err := checkForeign(ctx, path); err != nil {
		return nil, err
	}
	// mode=ro needs the WAL index (-shm) beside the file, which a
	// read-only directory cannot hold; immutable=1 then reads the file
	// alone (any writer on such a store would have to have left the WAL
	// checkpointed, as closing a store does).
	var lastErr error
	for _, params := range []string{"mode=ro", "mode=ro&immutable=1"} {
		dsn := "file:" + path + "?" + params + "&_pragma=busy_timeout(10000)&_pragma=query_only(1)&_pragma=cell_size_check(1)"
		db, err := sql.Open("sqlite", dsn)
		if err != nil {
			return nil, fmt.Errorf("open store %s: %w", path, err)
		}
		db.SetMaxOpenConns(maxOpenSQLite)
		var v int
		if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
			db.Close()
			lastErr = err
			continue
		}
		// A file that is not a store (or a store nothing was written to)
		// has version 0 and no tables.
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM sqlite_master").Scan(new(int)); err != nil {
			db.Close()
			lastErr = err
			continue
		}
		if err := checkReadOnlyVersion(v, len(migrations)); err != nil {
			db.Close()
			return nil, fmt.Errorf("open store %s: %w", path, err)
		}
		s := &Store{db: &conn{DB: db}, path: path, readOnly: true, schema: v}
		if !s.hasVariants() {
			if err := checkLegacyReadable(ctx, s.db, path); err != nil {
				db.Close()
				var mixed *LegacyMixedError
				if errors.As(err, &mixed) {
					return openUpgradedCopy(ctx, path, mixed)
				}
				return nil, err
			}
		}
		noteOpened(path)
		return s, nil
	}
	if p := problemFor(path, lastErr); p != "" {
		return nil, &StorageError{Store: path, Problem: p, Err: lastErr}
	}
	return nil, fmt.Errorf("open store %s read-only: %w", path, lastErr)
}

// readableSchema is the oldest schema version that read-only commands read
// as it is: the migrations after it only add the workers table, which
// readers of an older store treat as empty (no worker ever registered),
// and the runs' heartbeats, which they treat as never given.
const readableSchema = 2

// workersSchema is the schema version that added the workers table.
const workersSchema = 3

// runBeatSchema is the schema version that added the runs' heartbeats.
const runBeatSchema = 4

// scoreDigestsSchema is the schema version that added score_digests.
const scoreDigestsSchema = 5

// hasScoreDigests reports whether the store's schema has score_digests.
func (s *Store) hasScoreDigests() bool { return s.schema == 0 || s.schema >= scoreDigestsSchema }

// hasRunBeats reports whether the store's schema has the runs' heartbeat
// columns.
func (s *Store) hasRunBeats() bool { return s.schema == 0 || s.schema >= runBeatSchema }

// checkReadOnlyVersion says why a store of schema version v cannot be read
// by a binary that knows n migrations without migrating it (nil if it can).
func checkReadOnlyVersion(v, n int) error {
	switch {
	case v > n:
		return fmt.Errorf("schema version %d is newer than this tally (%d): upgrade tally", v, n)
	case v == 0:
		return fmt.Errorf("not a tally store (empty or no schema)")
	case v < readableSchema:
		return fmt.Errorf("schema version %d is older than this tally's (%d); a writing command (tally rescore with the same flags) upgrades it", v, n)
	}
	return nil
}

// ReadOnly reports whether the store was opened with OpenReadOnly.
func (s *Store) ReadOnly() bool { return s.readOnly }

// Path is where the store lives: its file, or its PostgreSQL URL with
// any password removed.
func (s *Store) Path() string { return Redact(s.path) }

// Postgres reports whether the store is a PostgreSQL database.
func (s *Store) Postgres() bool { return s.db.eng == postgresEngine }

// Close closes the store (and removes the upgraded copy a read-only open
// read, if any).
func (s *Store) Close() error {
	err := s.db.Close()
	if s.copyDir != "" {
		os.RemoveAll(s.copyDir)
	}
	return err
}

// migrateRetrying runs migrate, retrying while another process holds the
// store in a way the busy timeout does not wait for (SQLite reports
// SQLITE_BUSY at once while a new file is switched to WAL mode).
func (s *Store) migrateRetrying(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	wait := 5 * time.Millisecond
	for {
		err := s.migrate(ctx)
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 200*time.Millisecond)
	}
}

// isBusy reports whether err is SQLite's "database is locked".
func isBusy(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "SQLITE_BUSY") || strings.Contains(msg, "database is locked")
}

// migrate applies the pending migrations inside one write-locked
// transaction, re-reading the version once the lock is held, so concurrent
// openers serialise and each migration runs once.
func (s *Store) migrate(ctx context.Context) error {
	return s.tx(ctx, func(tx *txn) error {
		var v int
		if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		if v > len(migrations) {
			return fmt.Errorf("schema version %d is newer than this tally (%d): upgrade tally", v, len(migrations))
		}
		if err := verifySchema(ctx, tx, v); err != nil {
			return err
		}
		for i := v; i < len(migrations); i++ {
			if _, err := tx.ExecContext(ctx, migrations[i]); err != nil {
				return fmt.Errorf("migration %d: %w", i+1, err)
			}
			if fill := migrationFill(i + 1); fill != nil {
				if err := fill(ctx, tx); err != nil {
					return fmt.Errorf("migration %d: %w", i+1, err)
				}
			}
		}
		if v < len(migrations) {
			if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", len(migrations))); err != nil {
				return fmt.Errorf("record schema version %d: %w", len(migrations), err)
			}
		}
		_, err := sealLegacy(ctx, tx)
		return err
	})
}

// Sample is a stored benchmark sample.
type Sample struct {
	Task     string          `json:"task"`
	ID       string          `json:"id"`
	Prompt   string          `json:"prompt"`
	Refs     json.RawMessage `json:"references"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// PutSamples inserts or replaces samples in one transaction.
func (s *Store) PutSamples(ctx context.Context, samples []Sample) error {
	return s.tx(ctx, func(tx *txn) error { return putSamples(ctx, tx, samples) })
}

// AddSamples inserts the samples not stored yet, in one transaction, and
// leaves those stored as they are (a command that loads samples without
// their data rows keeps the rows stored).
func (s *Store) AddSamples(ctx context.Context, samples []Sample) error {
	return s.tx(ctx, func(tx *txn) error { return writeSamples(ctx, tx, samples, `DO NOTHING`) })
}

func putSamples(ctx context.Context, tx *txn, samples []Sample) error {
	return writeSamples(ctx, tx, samples, `DO UPDATE SET prompt=excluded.prompt, refs=excluded.refs, metadata=excluded.metadata, seal=excluded.seal`)
}

// writeSamples inserts samples, doing onConflict with a stored one.
func writeSamples(ctx context.Context, tx *txn, samples []Sample, onConflict string) error {
	if len(samples) == 0 {
		return nil
	}
	st, err := tx.PrepareContext(ctx, `INSERT INTO samples(task,id,prompt,refs,metadata,seal) VALUES(?,?,?,?,?,?)
		ON CONFLICT(task,id) `+onConflict)
	if err != nil {
		return err
	}
	defer st.Close()
	for _, x := range samples {
		refs, meta := nullJSON(x.Refs), nullJSON(x.Metadata)
		seal := sampleSeal(x.ID, []byte(refs), x.Prompt, []byte(meta))
		if _, err := st.ExecContext(ctx, x.Task, x.ID, tx.eng.text(x.Prompt), refs, meta, seal); err != nil {
			return fmt.Errorf("store sample %s/%s: %w", x.Task, x.ID, err)
		}
	}
	return nil
}

// Samples returns the stored samples of a task, by id. A metadata column
// that begins with cut (when it is not "") is returned as cut alone, the
// rest of it not read (see EachScoringSample).
func (s *Store) Samples(ctx context.Context, task, cut string) (map[string]Sample, error) {
	md, args := metadataCut(cut)
	rows, err := s.db.QueryContext(ctx, `SELECT id,prompt,refs,`+md+`,`+s.sealColumn()+` FROM samples WHERE task=?`, append(args, task)...)
	if err != nil {
		return nil, fmt.Errorf("read samples of %s: %w", task, err)
	}
	defer rows.Close()
	out := map[string]Sample{}
	x := Sample{Task: task} // scanned into in place: one allocation, not one a row
	var refs, meta, seal string
	for rows.Next() {
		if err := rows.Scan(&x.ID, &x.Prompt, &refs, &meta, &seal); err != nil {
			return nil, fmt.Errorf("read samples of %s: %w", task, err)
		}
		if checkSampleSeal(seal, x.ID, []byte(refs), x.Prompt, true, []byte(meta), cut == "" || meta != cut) != nil {
			return nil, s.damagedSample(task, x.ID)
		}
		x.Refs, x.Metadata = json.RawMessage(refs), json.RawMessage(meta)
		out[x.ID] = x
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read samples of %s: %w", task, err)
	}
	return out, nil
}

// EachScoringSample calls fn with each stored sample of a task as a
// score's digest reads it: its id, references and metadata, without its
// prompt. A metadata column that begins with cut is handed over as cut
// alone, the rest of it not read: datasets.Stored begins the column of a
// sample with no metadata of its own with a prefix that says so, and puts
// the sample's data row after it, most of the column's bytes, which no
// digest reads. refs and metadata are fn's only until it returns.
func (s *Store) EachScoringSample(ctx context.Context, task, cut string, fn func(id string, refs, metadata []byte) error) error {
	md, args := metadataCut(cut)
	rows, err := s.db.QueryContext(ctx, `SELECT id,refs,`+md+`,`+s.sealColumn()+` FROM samples WHERE task=?`, append(args, task)...)
	if err != nil {
		return fmt.Errorf("read samples of %s: %w", task, err)
	}
	defer rows.Close()
	var id, seal string
	var refs, meta sql.RawBytes
	for rows.Next() {
		if err := rows.Scan(&id, &refs, &meta, &seal); err != nil {
			return fmt.Errorf("read samples of %s: %w", task, err)
		}
		if checkSampleSeal(seal, id, refs, "", false, meta, cut == "" || string(meta) != cut) != nil {
			return s.damagedSample(task, id)
		}
		if err := fn(id, refs, meta); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read samples of %s: %w", task, err)
	}
	return nil
}

// metadataCut is the expression that reads the metadata column cut after
// cut (whole when cut is ""), and its arguments.
func metadataCut(cut string) (string, []any) {
	if cut == "" {
		return "metadata", nil
	}
	return "CASE WHEN substr(metadata,1,?)=? THEN ? ELSE metadata END", []any{utf8.RuneCountInString(cut), cut, cut}
}

// Sample returns one stored sample; ok is false when it is not stored.
func (s *Store) Sample(ctx context.Context, task, id string) (x Sample, ok bool, err error) {
	var refs, meta, seal string
	x = Sample{Task: task, ID: id}
	err = s.db.QueryRowContext(ctx, `SELECT prompt,refs,metadata,`+s.sealColumn()+` FROM samples WHERE task=? AND id=?`, task, id).Scan(&x.Prompt, &refs, &meta, &seal)
	if errors.Is(err, sql.ErrNoRows) {
		return Sample{}, false, nil
	}
	if err != nil {
		return Sample{}, false, fmt.Errorf("read sample %s/%s: %w", task, id, err)
	}
	if checkSampleSeal(seal, id, []byte(refs), x.Prompt, true, []byte(meta), true) != nil {
		return Sample{}, false, s.damagedSample(task, id)
	}
	x.Refs, x.Metadata = json.RawMessage(refs), json.RawMessage(meta)
	return x, true, nil
}

// Generation is one stored raw continuation. It is keyed by model
// fingerprint, exact prompt and decoding parameters, never by stop settings
// or token budget: a new setting or a longer budget finds it and extends it.
type Generation struct {
	Key          string
	Fingerprint  string
	Task         string
	SampleID     string
	PromptTokens int
	// Text is the raw continuation, never truncated by a stop sequence.
	Text string
	// IDs are the generated token ids (empty when the backend does not
	// report them).
	IDs []int
	// Offsets[i] is the byte offset in Text where token i's text starts.
	Offsets []int
	// NTokens is the number of generated tokens (len(IDs) when known).
	NTokens int
	// Budget is the token budget the generation ran under.
	Budget int
	// Finish is why it ended: eos, stop, length, context or error.
	Finish string
	// Stops records the stop settings active when it ended, and where each
	// matched, as JSON.
	Stops json.RawMessage
	// Error is the failure text for Finish "error" or "context".
	Error string
	// Continued counts how many times it was extended from stored ids.
	Continued int
	// Imported marks a record made elsewhere (already truncated text).
	Imported   bool
	GenSeconds float64
	RunID      int64
}

// Score is one metric value of one sample under one stop setting and budget.
type Score struct {
	GenKey     string
	Task       string
	SampleID   string
	Setting    string // display name
	SettingKey string // canonical sequences
	Budget     int
	Metric     string
	Value      float64 // NaN for an undefined value (stored as NULL)
	Prediction string  // the truncated text that was scored
	RunID      int64
	// Digest identifies everything that produced the value (references,
	// metadata, metrics and their versions, task scoring fields, stop
	// setting, budget, prediction): a score whose digest differs from the
	// current one is stale and is recomputed before it is shown.
	Digest string
}

// Key is the (generation, sample, setting, budget) the score belongs to.
func (x Score) Key() ScoreKey {
	return ScoreKey{GenKey: x.GenKey, Task: x.Task, SampleID: x.SampleID, SettingKey: x.SettingKey, Budget: x.Budget}
}

// failedFinishes are the finish reasons of a failed attempt, as an SQL
// list.
const failedFinishes = `('error','context')`

// keepsSuccess is the condition under which a generation replaces the one
// stored under its key: a failed attempt (finish "error" or "context")
// never replaces a stored generation that succeeded, so a retry, a
// continuation or a longer budget that fails loses nothing; anything else
// replaces it (a continuation, a success after a failure, the newest
// failure after a failure).
const keepsSuccess = `(excluded.finish NOT IN ` + failedFinishes + ` OR generations.finish IN ` + failedFinishes + `)`

// PutGenerations writes generations (insert or replace by key; a failed
// attempt never replaces a stored success) and their scores in one
// transaction: a record and its scores land together or not at all.
func (s *Store) PutGenerations(ctx context.Context, gens []Generation, scores []Score) error {
	return s.CommitGenerations(ctx, "", gens, scores)
}

// CommitGenerations is PutGenerations that also releases, in the same
// transaction, owner's claims on the generations' keys (none when owner is
// ""): a worker's finished work and the end of its claims on it land
// together.
func (s *Store) CommitGenerations(ctx context.Context, owner string, gens []Generation, scores []Score) error {
	now := time.Now().UTC().Format(time.RFC3339Nano)
	gens = redactErrors(gens)
	release := func(tx *txn) error {
		if owner == "" || len(gens) == 0 {
			return nil
		}
		keys := make([]string, len(gens))
		for i, g := range gens {
			keys[i] = g.Key
		}
		return releaseIn(ctx, tx, owner, keys)
	}
	if s.db.eng == postgresEngine && len(gens) > 0 {
		return s.pgCommit(ctx, owner, gens, scores, now)
	}
	return s.tx(ctx, func(tx *txn) error {
		if err := release(tx); err != nil {
			return err
		}
		if err := putGenerations(ctx, tx, gens, now); err != nil {
			return err
		}
		return putScores(ctx, tx, scores)
	})
}

// putGenerations upserts generations by key in tx (stamped updated_at now).
func putGenerations(ctx context.Context, tx *txn, gens []Generation, now string) error {
	if len(gens) == 0 {
		return nil
	}
	if tx.eng == postgresEngine {
		if _, err := tx.ExecContext(ctx, pgGenerationsSQL, pgGenerationArgs(gens, now)...); err != nil {
			return fmt.Errorf("store %d generations: %w", len(gens), err)
		}
		return nil
	}
	gst, err := tx.PrepareContext(ctx, `INSERT INTO generations
		(key,fingerprint,task,sample_id,prompt_tokens,text,ids,offsets,n_tokens,budget,finish,stops,error,continued,imported,gen_seconds,run_id,updated_at)
		VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)
		ON CONFLICT(key) DO UPDATE SET prompt_tokens=excluded.prompt_tokens, text=excluded.text, ids=excluded.ids,
		offsets=excluded.offsets, n_tokens=excluded.n_tokens, budget=excluded.budget, finish=excluded.finish,
		stops=excluded.stops, error=excluded.error, continued=excluded.continued, imported=excluded.imported,
		gen_seconds=excluded.gen_seconds, run_id=excluded.run_id, updated_at=excluded.updated_at
		WHERE `+keepsSuccess)
	if err != nil {
		return err
	}
	defer gst.Close()
	for _, g := range gens {
		ids, offs := packInts(g.IDs), packInts(g.Offsets)
		if _, err := gst.ExecContext(ctx, g.Key, g.Fingerprint, g.Task, g.SampleID, g.PromptTokens, tx.eng.text(g.Text),
			ids, offs, g.NTokens, g.Budget, g.Finish, sealedStops(&g, ids, offs), g.Error,
			g.Continued, boolInt(g.Imported), g.GenSeconds, g.RunID, now); err != nil {
			return fmt.Errorf("store generation of %s/%s: %w", g.Task, g.SampleID, err)
		}
	}
	return nil
}

// PutScores writes scores in one transaction. The scores of each
// (generation, sample, setting, budget) present replace every score stored
// for it, so a metric the task no longer names disappears.
func (s *Store) PutScores(ctx context.Context, scores []Score) error {
	return s.tx(ctx, func(tx *txn) error { return putScores(ctx, tx, scores) })
}

func putScores(ctx context.Context, tx *txn, scores []Score) error {
	if len(scores) == 0 {
		return nil
	}
	if tx.eng == postgresEngine {
		return pgPutScores(ctx, tx, scores)
	}
	del, err := tx.PrepareContext(ctx, `DELETE FROM scores WHERE gen_key=? AND task=? AND sample_id=? AND setting_key=? AND budget=?`)
	if err != nil {
		return err
	}
	defer del.Close()
	seen := map[ScoreKey]bool{}
	for _, x := range scores {
		k := x.Key()
		if seen[k] {
			continue
		}
		seen[k] = true
		if _, err := del.ExecContext(ctx, k.GenKey, k.Task, k.SampleID, k.SettingKey, k.Budget); err != nil {
			return fmt.Errorf("replace scores of %s/%s: %w", k.Task, k.SampleID, err)
		}
	}
	st, err := tx.PrepareContext(ctx, `INSERT INTO scores(gen_key,task,sample_id,setting,setting_key,budget,metric,value,prediction,run_id,digest)
		VALUES(?,?,?,?,?,?,?,?,?,?,?)
		ON CONFLICT(gen_key,task,sample_id,setting_key,budget,metric) DO UPDATE SET setting=excluded.setting,
		value=excluded.value, prediction=excluded.prediction, run_id=excluded.run_id, digest=excluded.digest`)
	if err != nil {
		return err
	}
	defer st.Close()
	for _, x := range scores {
		var v any = x.Value
		if math.IsNaN(x.Value) || math.IsInf(x.Value, 0) {
			v = nil
		}
		if _, err := st.ExecContext(ctx, x.GenKey, x.Task, x.SampleID, x.Setting, x.SettingKey, x.Budget, x.Metric,
			v, tx.eng.text(x.Prediction), x.RunID, x.Digest); err != nil {
			return fmt.Errorf("store score %s of %s/%s: %w", x.Metric, x.Task, x.SampleID, err)
		}
	}
	groups := keyScores(scores)
	if err := putKeyDigests(ctx, tx, keyDigests(groups)); err != nil {
		return err
	}
	return putPackedScores(ctx, tx, groups)
}

// keyDigestRow is one key's row of score_digests.
type keyDigestRow struct {
	ScoreKey
	digest string
}

// keyDigests returns the score_digests rows of scores grouped by key
// (keyScores): one a key, in the groups' order.
func keyDigests(groups [][]Score) []keyDigestRow {
	out := make([]keyDigestRow, len(groups))
	for i, g := range groups {
		out[i] = keyDigestRow{g[0].Key(), rowDigestOf(g)}
	}
	return out
}

// keyScores groups scores that replace every score of their keys
// (putScores) by key, in the order of each key's first score; a metric
// given twice for a key keeps its first place and its last score, as the
// scores table's upsert does.
func keyScores(scores []Score) [][]Score {
	at := map[ScoreKey]int{}
	var out [][]Score
	for _, x := range scores {
		k := x.Key()
		i, ok := at[k]
		if !ok {
			at[k] = len(out)
			out = append(out, []Score{x})
			continue
		}
		replaced := false
		for j := range out[i] {
			if out[i][j].Metric == x.Metric {
				out[i][j], replaced = x, true
				break
			}
		}
		if !replaced {
			out[i] = append(out[i], x)
		}
	}
	return out
}

// rowDigestOf is the digest of a key's scores: theirs, or MixedDigest
// when they disagree (keyDigest's, in Go).
func rowDigestOf(scores []Score) string {
	for _, x := range scores[1:] {
		if x.Digest != scores[0].Digest {
			return MixedDigest
		}
	}
	return scores[0].Digest
}

// putKeyDigests upserts rows of score_digests.
func putKeyDigests(ctx context.Context, tx *txn, rows []keyDigestRow) error {
	if len(rows) == 0 {
		return nil
	}
	if tx.eng == postgresEngine {
		if _, err := tx.ExecContext(ctx, pgKeyDigestsSQL, pgKeyDigestArgs(rows)...); err != nil {
			return fmt.Errorf("store digests of %d scores: %w", len(rows), err)
		}
		return nil
	}
	st, err := tx.PrepareContext(ctx, `INSERT INTO score_digests(gen_key,task,sample_id,setting_key,budget,digest) VALUES(?,?,?,?,?,?)
		ON CONFLICT(gen_key,task,sample_id,setting_key,budget) DO UPDATE SET digest=excluded.digest`)
	if err != nil {
		return err
	}
	defer st.Close()
	for _, r := range rows {
		if _, err := st.ExecContext(ctx, r.GenKey, r.Task, r.SampleID, r.SettingKey, r.Budget, r.digest); err != nil {
			return fmt.Errorf("store digest of the scores of %s/%s: %w", r.Task, r.SampleID, err)
		}
	}
	return nil
}

// refreshKeyDigests sets the score_digests rows of keys from the scores
// stored for them (after a write that merges scores with those stored:
// Copy), deleting those of keys left with none; and, on SQLite, their
// packed rows, in the order of keys, from the same read of each key's
// scores (refreshPackedScores).
func refreshKeyDigests(ctx context.Context, tx *txn, keys []ScoreKey) error {
	if tx.eng != postgresEngine {
		return refreshPackedScores(ctx, tx, keys)
	}
	del, err := tx.PrepareContext(ctx, `DELETE FROM score_digests WHERE gen_key=? AND task=? AND sample_id=? AND setting_key=? AND budget=?`)
	if err != nil {
		return err
	}
	defer del.Close()
	put, err := tx.PrepareContext(ctx, `INSERT INTO score_digests(gen_key,task,sample_id,setting_key,budget,digest)
		SELECT gen_key, task, sample_id, setting_key, budget, `+keyDigest+` FROM scores
		WHERE gen_key=? AND task=? AND sample_id=? AND setting_key=? AND budget=?
		GROUP BY gen_key, task, sample_id, setting_key, budget`)
	if err != nil {
		return err
	}
	defer put.Close()
	for _, k := range keys {
		args := []any{k.GenKey, k.Task, k.SampleID, k.SettingKey, k.Budget}
		if _, err := del.ExecContext(ctx, args...); err != nil {
			return fmt.Errorf("refresh the digest of the scores of %s/%s: %w", k.Task, k.SampleID, err)
		}
		if _, err := put.ExecContext(ctx, args...); err != nil {
			return fmt.Errorf("refresh the digest of the scores of %s/%s: %w", k.Task, k.SampleID, err)
		}
	}
	return nil
}

// DeleteScores removes every score stored for the given keys (a sample
// that no longer has anything to score under a setting).
func (s *Store) DeleteScores(ctx context.Context, keys []ScoreKey) error {
	if len(keys) == 0 {
		return nil
	}
	return s.tx(ctx, func(tx *txn) error {
		for _, k := range keys {
			tables := []string{"scores", "score_digests", "packed_scores"}
			if tx.eng == postgresEngine {
				tables = tables[:2]
			}
			for _, table := range tables {
				if _, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE gen_key=? AND task=? AND sample_id=? AND setting_key=? AND budget=?`,
					k.GenKey, k.Task, k.SampleID, k.SettingKey, k.Budget); err != nil {
					return fmt.Errorf("delete scores of %s/%s: %w", k.Task, k.SampleID, err)
				}
			}
		}
		return nil
	})
}

// scanThreshold is the number of keys above which reads scan a model's rows
// once instead of looking keys up in chunks.
const scanThreshold = 2000

// eachKeyed runs query for the given keys and calls row for each result:
// by chunked IN lookups for few keys, or, for many, by one scan of the
// model's rows (filtered by scan, whose single argument is the fingerprint)
// keeping only the keys asked for.
func (s *Store) eachKeyed(ctx context.Context, fingerprint string, keys []string, cols, in, scan string, row func(*sql.Rows) (string, error)) error {
	if fingerprint != "" && len(keys) > scanThreshold {
		want := make(map[string]bool, len(keys))
		for _, k := range keys {
			want[k] = true
		}
		rows, err := s.db.QueryContext(ctx, "SELECT "+cols+" "+scan, fingerprint)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if _, err := row(rows); err != nil {
				return err
			}
		}
		return rows.Err()
	}
	for in, args := range s.keyChunks(in, keys) {
		rows, err := s.db.QueryContext(ctx, "SELECT "+cols+" "+in, args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			if _, err := row(rows); err != nil {
				rows.Close()
				return err
			}
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if err := rows.Err(); err != nil {
			return err
		}
	}
	return nil
}

// keyChunks splits keys into the parts a lookup by key reads at once, each
// as the condition `in IN (…)` naming its keys (in: a query's text up to a
// key column) and that condition's arguments: 500 keys a part on SQLite,
// all of them on PostgreSQL (one statement text for any number of keys: a
// prepared statement reused, not one per length of an IN list).
func (s *Store) keyChunks(in string, keys []string) iter.Seq2[string, []any] {
	return func(yield func(string, []any) bool) {
		if s.db.eng == postgresEngine {
			if len(keys) > 0 {
				yield(in+" IN (SELECT unnest(?::text[]))", []any{keys})
			}
			return
		}
		const chunk = 500
		for i := 0; i < len(keys); i += chunk {
			part := keys[i:min(i+chunk, len(keys))]
			if !yield(in+" IN ("+placeholders(len(part))+")", anys(part)) {
				return
			}
		}
	}
}

// Generations returns the stored generations with the given keys, by key.
// Keys not stored are absent from the map. With the model's fingerprint
// (may be empty), a large set of keys is read by one scan of its rows.
func (s *Store) Generations(ctx context.Context, fingerprint string, keys []string) (map[string]Generation, error) {
	out := make(map[string]Generation, len(keys))
	want := make(map[string]bool, len(keys))
	for _, k := range keys {
		want[k] = true
	}
	if fingerprint != "" && len(keys) > scanThreshold {
		return s.scanGenerations(ctx, fingerprint, want)
	}
	err := s.eachKeyed(ctx, fingerprint, keys, generationCols, "FROM generations WHERE key", "FROM generations WHERE fingerprint=?", func(rows *sql.Rows) (string, error) {
		g, ok, err := scanGeneration(rows.Scan, want)
		if err != nil {
			return "", err
		}
		if ok {
			out[g.Key] = g
		}
		return g.Key, nil
	})
	if err != nil {
		return nil, s.named(fmt.Errorf("read generations: %w", err))
	}
	return out, nil
}

// generationCols are the columns scanGeneration reads.
const generationCols = `key,fingerprint,task,sample_id,prompt_tokens,text,ids,offsets,n_tokens,budget,finish,stops,error,continued,imported,gen_seconds,COALESCE(run_id,0)`

// scanGeneration reads a row of generationCols with scan; ok says
// whether its key is wanted (only then is the rest decoded).
func scanGeneration(scan func(dest ...any) error, want map[string]bool) (g Generation, ok bool, err error) {
	var text, ids, offs, stops []byte
	var imported int
	if err := scan(&g.Key, &g.Fingerprint, &g.Task, &g.SampleID, &g.PromptTokens, &text, &ids, &offs,
		&g.NTokens, &g.Budget, &g.Finish, &stops, &g.Error, &g.Continued, &imported, &g.GenSeconds, &g.RunID); err != nil {
		return Generation{}, false, err
	}
	if !want[g.Key] {
		return g, false, nil
	}
	if stops, ok = openStops(&g, text, ids, offs, stops, imported); !ok {
		return Generation{}, false, &errDamagedGeneration{g.Key, g.Task, g.SampleID}
	}
	g.Text, g.Imported, g.Error = string(text), imported != 0, redact.String(g.Error)
	g.IDs, g.Offsets, g.Stops = unpackInts(ids), unpackInts(offs), stops
	return g, true, nil
}

// ScoreKey identifies the scores of one sample under one setting and budget.
type ScoreKey struct {
	GenKey, Task, SampleID, SettingKey string
	Budget                             int
}

// MixedDigest is what ScoreDigests reports for a key whose stored scores
// carry different digests (never equal to a current digest).
const MixedDigest = "mixed"

// ScoreDigests returns, for each (generation, sample, setting, budget) that
// has scores, the digest they were computed under (MixedDigest when they
// disagree), restricted to the given generation keys (read by one scan of
// the model's rows when there are many).
func (s *Store) ScoreDigests(ctx context.Context, fingerprint string, genKeys []string) (*Digests, error) {
	want := make(map[string]bool, len(genKeys))
	for _, k := range genKeys {
		want[k] = true
	}
	if s.hasScoreDigests() {
		out, err := s.keyDigests(ctx, fingerprint, genKeys, want)
		if err != nil {
			return nil, fmt.Errorf("read scores: %w", err)
		}
		return out, nil
	}
	if fingerprint != "" && len(genKeys) > scanThreshold {
		out, err := s.scanScoreDigests(ctx, fingerprint, want)
		if err != nil {
			return nil, fmt.Errorf("read scores: %w", err)
		}
		return out, nil
	}
	out := newDigests()
	err := s.eachKeyed(ctx, fingerprint, genKeys, "s.gen_key,s.task,s.sample_id,s.setting_key,s.budget,s.digest",
		"FROM scores s WHERE s.gen_key", "FROM scores s JOIN generations g ON g.key = s.gen_key WHERE g.fingerprint=?",
		func(rows *sql.Rows) (string, error) {
			var k ScoreKey
			var d string
			if err := rows.Scan(&k.GenKey, &k.Task, &k.SampleID, &k.SettingKey, &k.Budget, &d); err != nil {
				return "", err
			}
			if want[k.GenKey] {
				out.add(k, d)
			}
			return k.GenKey, nil
		})
	if err != nil {
		return nil, fmt.Errorf("read scores: %w", err)
	}
	return out, nil
}

// Digests holds the digests of stored scores (ScoreDigests), by
// generation: a plan of many samples looks each one's up by its key once.
type Digests struct {
	byGen map[string][]digestEntry
	n     int
}

// digestEntry is the digest of one (sample, setting, budget) of a
// generation.
type digestEntry struct {
	task, sampleID, settingKey string
	budget                     int
	digest                     string
}

func newDigests() *Digests { return &Digests{byGen: map[string][]digestEntry{}} }

// Get returns the digest of the scores of k (MixedDigest when they
// disagree); ok is false when k has none.
func (d *Digests) Get(k ScoreKey) (digest string, ok bool) {
	return d.Gen(k.GenKey).Get(k.Task, k.SampleID, k.SettingKey, k.Budget)
}

// Gen returns the digests of the scores of one generation: a plan looks
// its item's generation up once, then each setting's digest in it.
func (d *Digests) Gen(genKey string) GenDigests { return d.byGen[genKey] }

// GenDigests are the digests of one generation's scores (Digests.Gen).
type GenDigests []digestEntry

// Get returns the digest of the generation's scores of a sample under a
// setting and budget, as Digests.Get does.
func (g GenDigests) Get(task, sampleID, settingKey string, budget int) (digest string, ok bool) {
	for _, e := range g {
		if e.task == task && e.sampleID == sampleID && e.settingKey == settingKey && e.budget == budget {
			return e.digest, true
		}
	}
	return "", false
}

// Len is the number of keys with scores.
func (d *Digests) Len() int { return d.n }

// All returns every key's digest.
func (d *Digests) All() map[ScoreKey]string {
	out := make(map[ScoreKey]string, d.n)
	for gen, es := range d.byGen {
		for _, e := range es {
			out[ScoreKey{GenKey: gen, Task: e.task, SampleID: e.sampleID, SettingKey: e.settingKey, Budget: e.budget}] = e.digest
		}
	}
	return out
}

// add records digest dg for k (MixedDigest when k has another).
func (d *Digests) add(k ScoreKey, dg string) {
	es, n := addEntry(d.byGen[k.GenKey], digestEntry{task: k.Task, sampleID: k.SampleID, settingKey: k.SettingKey, budget: k.Budget, digest: dg})
	d.byGen[k.GenKey] = es
	d.n += n
}

// addEntry adds e to the entries of one generation, or marks the entry of
// its key MixedDigest when that has another digest; n is 1 when e's key
// is new.
func addEntry(es []digestEntry, e digestEntry) (_ []digestEntry, n int) {
	for i := range es {
		x := &es[i]
		if x.task == e.task && x.sampleID == e.sampleID && x.settingKey == e.settingKey && x.budget == e.budget {
			if x.digest != e.digest {
				x.digest = MixedDigest
			}
			return es, 0
		}
	}
	return append(es, e), 1
}

// merge adds the digests of o (a part of the same read) to d.
func (d *Digests) merge(o *Digests) {
	for gen, es := range o.byGen {
		mine, ok := d.byGen[gen]
		if !ok {
			d.byGen[gen] = es
			d.n += len(es)
			continue
		}
		for _, e := range es {
			var n int
			mine, n = addEntry(mine, e)
			d.n += n
		}
		d.byGen[gen] = mine
	}
}

// ScoresFor returns the stored scores of the given generation keys. An
// undefined value (stored as NULL) reads as NaN. A SQLite store's are
// read from its packed rows, checked (packedScoresFor: RunID is not
// read); rows found damaged are a *DamagedScoresError, returned with the
// scores of the others.
func (s *Store) ScoresFor(ctx context.Context, genKeys []string) ([]Score, error) {
	if s.hasPackedScores() {
		return s.packedScoresFor(ctx, genKeys)
	}
	var out []Score
	const chunk = 500
	for i := 0; i < len(genKeys); i += chunk {
		part := genKeys[i:min(i+chunk, len(genKeys))]
		rows, err := s.db.QueryContext(ctx, `SELECT gen_key,task,sample_id,setting,setting_key,budget,metric,value,prediction,COALESCE(run_id,0),digest
			FROM scores WHERE gen_key IN (`+placeholders(len(part))+`)`, anys(part)...)
		if err != nil {
			return nil, fmt.Errorf("read scores: %w", err)
		}
		for rows.Next() {
			var x Score
			var v sql.NullFloat64
			if err := rows.Scan(&x.GenKey, &x.Task, &x.SampleID, &x.Setting, &x.SettingKey, &x.Budget, &x.Metric, &v, &x.Prediction, &x.RunID, &x.Digest); err != nil {
				rows.Close()
				return nil, err
			}
			x.Value = math.NaN()
			if v.Valid {
				x.Value = v.Float64
			}
			out = append(out, x)
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Counts returns the number of rows in each table, for checks and tests.
func (s *Store) Counts(ctx context.Context) (map[string]int, error) {
	out := map[string]int{}
	for _, t := range []string{"runs", "samples", "generations", "scores", "claims", "workers"} {
		var n int
		if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+t).Scan(&n); err != nil {
			return nil, fmt.Errorf("count %s: %w", t, err)
		}
		out[t] = n
	}
	return out, nil
}

// Throughput returns generated tokens per second measured over earlier runs
// of a model fingerprint, and whether any were measured (a positive, finite
// rate whenever ok).
func (s *Store) Throughput(ctx context.Context, fingerprint string) (float64, bool, error) {
	var tok sql.NullInt64
	var secs sql.NullFloat64
	err := s.db.QueryRowContext(ctx, `SELECT SUM(generated_tokens), SUM(gen_seconds) FROM runs WHERE fingerprint=? AND gen_seconds > 0 AND generated_tokens > 0`, fingerprint).Scan(&tok, &secs)
	if err != nil {
		return 0, false, fmt.Errorf("read throughput: %w", err)
	}
	if !tok.Valid || !secs.Valid || secs.Float64 <= 0 || tok.Int64 <= 0 {
		return 0, false, nil
	}
	return float64(tok.Int64) / secs.Float64, true, nil
}

// tx runs f in one transaction; for PostgreSQL, a transaction cut off by a
// lost connection or server is run again from its start.
func (s *Store) tx(ctx context.Context, f func(*txn) error) error {
	return s.named(s.db.retry(ctx, func() error { return s.tx1(ctx, f) }))
}

func (s *Store) tx1(ctx context.Context, f func(*txn) error) error {
	tx, err := s.db.DB.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	t := &txn{Tx: tx, eng: s.db.eng}
	if err := f(t); err != nil {
		return errors.Join(err, tx.Rollback())
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func nullJSON(b json.RawMessage) string {
	if len(b) == 0 {
		return "null"
	}
	return string(b)
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

func anys(xs []string) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// packInts stores non-negative ints as little-endian uint32s.
func packInts(xs []int) []byte {
	if xs == nil {
		return nil
	}
	b := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
	}
	return b
}

func unpackInts(b []byte) []int {
	if len(b) == 0 {
		return nil
	}
	out := make([]int, len(b)/4)
	for i := range out {
		out[i] = int(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// CountSamples is the number of samples stored under a task.
func (s *Store) CountSamples(ctx context.Context, task string) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM samples WHERE task=?`, task).Scan(&n); err != nil {
		return 0, fmt.Errorf("count samples of %s: %w", task, err)
	}
	return n, nil
}
