package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// pgMigrations are migrations rendered for PostgreSQL: the same tables,
// columns and keys as the SQLite migrations of the same index, with
// PostgreSQL's types (BIGINT for integers, which hold Unix milliseconds;
// DOUBLE PRECISION for reals; BYTEA for blobs and for model text — prompts,
// continuations, predictions — which may hold NUL bytes that PostgreSQL's
// TEXT refuses; BIGSERIAL for run ids).
// Never edit a released migration: append a new one to both lists.
var pgMigrations = []string{
	`CREATE TABLE runs (
		id BIGSERIAL PRIMARY KEY,
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
		generated_tokens BIGINT NOT NULL DEFAULT 0,
		prompt_tokens BIGINT NOT NULL DEFAULT 0,
		gen_seconds DOUBLE PRECISION NOT NULL DEFAULT 0,
		stats TEXT NOT NULL DEFAULT '{}'
	);
	CREATE TABLE samples (
		task TEXT NOT NULL,
		id TEXT NOT NULL,
		prompt BYTEA NOT NULL,
		refs TEXT NOT NULL,
		metadata TEXT NOT NULL,
		PRIMARY KEY (task, id)
	);
	CREATE TABLE generations (
		key TEXT PRIMARY KEY,
		fingerprint TEXT NOT NULL,
		task TEXT NOT NULL,
		sample_id TEXT NOT NULL,
		prompt_tokens BIGINT NOT NULL,
		text BYTEA NOT NULL,
		ids BYTEA,
		offsets BYTEA,
		n_tokens BIGINT NOT NULL,
		budget BIGINT NOT NULL,
		finish TEXT NOT NULL,
		stops TEXT NOT NULL,
		error TEXT NOT NULL DEFAULT '',
		continued BIGINT NOT NULL DEFAULT 0,
		imported BIGINT NOT NULL DEFAULT 0,
		gen_seconds DOUBLE PRECISION NOT NULL DEFAULT 0,
		run_id BIGINT,
		updated_at TEXT NOT NULL
	);
	CREATE INDEX generations_fp ON generations(fingerprint);
	CREATE TABLE scores (
		gen_key TEXT NOT NULL,
		task TEXT NOT NULL,
		sample_id TEXT NOT NULL,
		setting TEXT NOT NULL,
		setting_key TEXT NOT NULL,
		budget BIGINT NOT NULL,
		metric TEXT NOT NULL,
		value DOUBLE PRECISION,
		prediction BYTEA NOT NULL,
		run_id BIGINT,
		PRIMARY KEY (gen_key, task, sample_id, setting_key, budget, metric)
	);`,
	`ALTER TABLE scores ADD COLUMN digest TEXT NOT NULL DEFAULT '';
	CREATE TABLE claims (
		gen_key TEXT PRIMARY KEY,
		owner TEXT NOT NULL,
		expires_at BIGINT NOT NULL
	);
	CREATE INDEX claims_owner ON claims(owner);`,
	`CREATE TABLE workers (
		id TEXT PRIMARY KEY,
		host TEXT NOT NULL,
		pid BIGINT NOT NULL,
		run_id BIGINT,
		model TEXT NOT NULL,
		fingerprint TEXT NOT NULL,
		status TEXT NOT NULL,
		lease_ms BIGINT NOT NULL,
		started_at BIGINT NOT NULL,
		heartbeat_at BIGINT NOT NULL,
		generated BIGINT NOT NULL DEFAULT 0
	);`,
	`ALTER TABLE runs ADD COLUMN heartbeat_at BIGINT;
	ALTER TABLE runs ADD COLUMN lease_ms BIGINT NOT NULL DEFAULT 0;`,
	`CREATE TABLE score_digests (
		gen_key TEXT NOT NULL,
		task TEXT NOT NULL,
		sample_id TEXT NOT NULL,
		setting_key TEXT NOT NULL,
		budget BIGINT NOT NULL,
		digest TEXT NOT NULL,
		PRIMARY KEY (gen_key, task, sample_id, setting_key, budget)
	);
	` + fillScoreDigests,
	variantsTable, // filled by splitLegacyTasks (pgMigrationFill)
}

// pgMigrationFill is the step, in Go, that fills what PostgreSQL
// migration n added (nil: none).
func pgMigrationFill(n int) func(context.Context, *txn) error {
	if n == variantsSchemaPG {
		return splitLegacyTasks
	}
	return nil
}

// pgLockID is the advisory lock that serialises migrations across every
// process opening the same PostgreSQL database.
const pgLockID = 0x7a11_5c4e

// openPostgres opens the PostgreSQL store at dsn. A writable store is
// migrated under an advisory lock (concurrent openers migrate it once); a
// read-only one is opened with read-only transactions and must already
// hold this tally's schema.
func openPostgres(ctx context.Context, dsn string, readOnly bool) (*Store, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", Redact(dsn), err)
	}
	if readOnly {
		cfg.RuntimeParams["default_transaction_read_only"] = "on"
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 10 * time.Second
	}
	wait, err := waitFromEnv()
	if err != nil {
		return nil, err
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(8)
	db.SetConnMaxIdleTime(time.Minute)
	s := &Store{db: &conn{DB: db, eng: postgresEngine, where: Redact(dsn), lostFor: wait}, path: dsn, readOnly: readOnly}
	if err := pingRetrying(ctx, db, min(wait, 30*time.Second)); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", Redact(dsn), err)
	}
	if readOnly {
		v, err := s.pgVersion(ctx, s.db)
		if err == nil {
			err = checkReadOnlyVersion(v, len(pgMigrations))
		}
		s.schema = v
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("open store %s: %w", Redact(dsn), err)
		}
		if !s.hasVariants() {
			if err := checkLegacyReadable(ctx, s.db, Redact(dsn)); err != nil {
				db.Close()
				return nil, err
			}
		}
		return s, nil
	}
	if err := s.tx(ctx, s.pgMigrate); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", Redact(dsn), err)
	}
	return s, nil
}

// pingRetrying waits (with back-off, up to bound) for the server to
// accept connections: a worker started beside its database, or while it
// restarts, waits rather than fails.
func pingRetrying(ctx context.Context, db *sql.DB, bound time.Duration) error {
	deadline := time.Now().Add(bound)
	wait := 50 * time.Millisecond
	for {
		err := db.PingContext(ctx)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// querier is what reading the schema version needs.
type querier interface {
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}

// pgVersion reads the schema version (0 for a database tally never
// migrated).
func (s *Store) pgVersion(ctx context.Context, q querier) (int, error) {
	var exists bool
	if err := q.QueryRowContext(ctx, `SELECT to_regclass('tally_schema') IS NOT NULL`).Scan(&exists); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	if !exists {
		return 0, nil
	}
	var v int
	if err := q.QueryRowContext(ctx, `SELECT version FROM tally_schema`).Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

// pgMigrate applies the pending migrations in one transaction holding the
// migration advisory lock, re-reading the version once it holds it.
func (s *Store) pgMigrate(tx *txn) error {
	ctx := context.Background()
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(?)`, int64(pgLockID)); err != nil {
		return fmt.Errorf("lock schema: %w", err)
	}
	v, err := s.pgVersion(ctx, tx)
	if err != nil {
		return err
	}
	if v > len(pgMigrations) {
		return fmt.Errorf("schema version %d is newer than this tally (%d): upgrade tally", v, len(pgMigrations))
	}
	if v == 0 {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE tally_schema (version INTEGER NOT NULL); INSERT INTO tally_schema VALUES (0)`); err != nil {
			return fmt.Errorf("create schema version table: %w", err)
		}
	}
	for i := v; i < len(pgMigrations); i++ {
		if _, err := tx.ExecContext(ctx, pgMigrations[i]); err != nil {
			return fmt.Errorf("migration %d: %w", i+1, err)
		}
		if fill := pgMigrationFill(i + 1); fill != nil {
			if err := fill(ctx, tx); err != nil {
				return fmt.Errorf("migration %d: %w", i+1, err)
			}
		}
	}
	if v < len(pgMigrations) {
		if _, err := tx.ExecContext(ctx, `UPDATE tally_schema SET version = ?`, len(pgMigrations)); err != nil {
			return fmt.Errorf("record schema version %d: %w", len(pgMigrations), err)
		}
	}
	return nil
}
