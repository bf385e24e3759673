package store

import (
	"context"
	"database/sql"
	"net/url"
	"strings"
)

// The store speaks to two SQL engines through database/sql: SQLite (the
// embedded default: modernc.org/sqlite, pure Go) and PostgreSQL (the shared
// store for runs sharded over machines: github.com/jackc/pgx/v5/stdlib). The
// SQL is written once, with "?" placeholders; for PostgreSQL they are
// rewritten to "$1, $2, …" as each statement is issued. Only the schema
// (types) and the bookkeeping of the schema version differ by engine.

// engine names a SQL engine.
type engine int

const (
	sqliteEngine engine = iota
	postgresEngine
)

// IsPostgres reports whether a --store value names a PostgreSQL store
// (a postgres:// or postgresql:// URL) rather than a SQLite file.
func IsPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// Redact returns a store location fit to print: a PostgreSQL URL without
// its password; a file path unchanged.
func Redact(dsn string) string {
	if !IsPostgres(dsn) {
		return dsn
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "postgres://…"
	}
	return u.Redacted()
}

// conn is a database handle that rewrites placeholders for its engine.
type conn struct {
	*sql.DB
	eng engine
}

// rebind rewrites "?" placeholders (outside quoted strings) to "$n" for
// PostgreSQL.
func (e engine) rebind(q string) string {
	if e != postgresEngine || !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 16)
	n := 0
	quoted := false
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '\'':
			quoted = !quoted
			b.WriteByte(c)
		case c == '?' && !quoted:
			n++
			b.WriteByte('$')
			b.WriteString(itoa(n))
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// QueryContext runs a query with the engine's placeholders.
func (c *conn) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return c.DB.QueryContext(ctx, c.eng.rebind(q), args...)
}

// QueryRowContext runs a one-row query with the engine's placeholders.
func (c *conn) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return c.DB.QueryRowContext(ctx, c.eng.rebind(q), args...)
}

// ExecContext runs a statement with the engine's placeholders.
func (c *conn) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return c.DB.ExecContext(ctx, c.eng.rebind(q), args...)
}

// BeginTx starts a transaction whose statements use the engine's
// placeholders.
func (c *conn) BeginTx(ctx context.Context, opts *sql.TxOptions) (*txn, error) {
	tx, err := c.DB.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &txn{Tx: tx, eng: c.eng}, nil
}

// txn is a transaction that rewrites placeholders for its engine.
type txn struct {
	*sql.Tx
	eng engine
}

// QueryContext runs a query in the transaction.
func (t *txn) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return t.Tx.QueryContext(ctx, t.eng.rebind(q), args...)
}

// QueryRowContext runs a one-row query in the transaction.
func (t *txn) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return t.Tx.QueryRowContext(ctx, t.eng.rebind(q), args...)
}

// ExecContext runs a statement in the transaction.
func (t *txn) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return t.Tx.ExecContext(ctx, t.eng.rebind(q), args...)
}

// PrepareContext prepares a statement in the transaction.
func (t *txn) PrepareContext(ctx context.Context, q string) (*sql.Stmt, error) {
	return t.Tx.PrepareContext(ctx, t.eng.rebind(q))
}
