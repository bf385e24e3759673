package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"tally/internal/redact"
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

// IsPostgres reports whether a --store value names a PostgreSQL store: a
// postgres:// or postgresql:// URL, or a key=value connection string
// ("host=… dbname=… password=…") — never a SQLite file, whose name would
// then hold the password.
func IsPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") || isKeywordDSN(dsn)
}

// pgKeyword reports whether k is one of libpq's connection keywords: a
// string of key=value pairs naming at least one of them (and only
// identifiers) is a connection string.
func pgKeyword(k string) bool {
	switch k {
	case "host", "hostaddr", "port", "dbname", "user", "password", "passfile", "service", "sslmode", "sslcert", "sslkey",
		"sslrootcert", "sslpassword", "connect_timeout", "application_name", "target_session_attrs", "options":
		return true
	}
	return false
}

// isKeywordDSN reports whether s parses as libpq key=value pairs (values
// bare or single-quoted with backslash escapes) of which at least one key
// is a libpq keyword.
func isKeywordDSN(s string) bool {
	known := false
	for s = strings.TrimLeft(s, " \t\n"); s != ""; s = strings.TrimLeft(s, " \t\n") {
		i := strings.IndexFunc(s, func(r rune) bool { return !(r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') })
		if i <= 0 {
			return false
		}
		key := s[:i]
		s = strings.TrimLeft(s[i:], " \t")
		if !strings.HasPrefix(s, "=") {
			return false
		}
		s = strings.TrimLeft(s[1:], " \t")
		if strings.HasPrefix(s, "'") {
			j, esc := 1, false
			for ; j < len(s) && (esc || s[j] != '\''); j++ {
				esc = !esc && s[j] == '\\'
			}
			if j == len(s) {
				return false // unterminated quote
			}
			s = s[j+1:]
		} else if j := strings.IndexAny(s, " \t\n"); j >= 0 {
			s = s[j:]
		} else {
			s = ""
		}
		known = known || pgKeyword(key)
	}
	return known
}

// Redact returns a store location (or any message naming one) fit to
// print: passwords in PostgreSQL URLs and connection strings masked
// (redact.String, the one redaction every message goes through); a file
// path unchanged.
func Redact(dsn string) string { return redact.String(dsn) }

// text is the argument that stores model text (a prompt, a continuation,
// a prediction): a string for SQLite, bytes for PostgreSQL, whose columns
// for it are BYTEA (TEXT cannot hold a NUL byte, which a model may emit).
// Either reads back into a string.
func (e engine) text(s string) any {
	if e == postgresEngine {
		return []byte(s)
	}
	return s
}

// conn is a database handle that rewrites placeholders for its engine and,
// for PostgreSQL, waits out a lost server for up to lostFor.
type conn struct {
	*sql.DB
	eng engine
	// where is the store's location, redacted, for messages.
	where string
	// lostFor bounds how long a lost server is waited for, counted from
	// the first failure of the outage (PostgreSQL only).
	lostFor time.Duration
	// lostAt is when the current outage began (Unix nanoseconds; 0 while
	// the server answers), shared by every operation: once lostFor has
	// passed, each operation tries once and fails, rather than wait anew.
	lostAt atomic.Int64
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
	var rows *sql.Rows
	err := c.retry(ctx, func() (err error) {
		rows, err = c.DB.QueryContext(ctx, c.eng.rebind(q), args...)
		return err
	})
	return rows, err
}

// QueryRowContext runs a one-row query with the engine's placeholders.
func (c *conn) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	var row *sql.Row
	c.retry(ctx, func() error {
		row = c.DB.QueryRowContext(ctx, c.eng.rebind(q), args...)
		return row.Err()
	})
	return row
}

// ExecContext runs a statement with the engine's placeholders.
func (c *conn) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	var res sql.Result
	err := c.retry(ctx, func() (err error) {
		res, err = c.DB.ExecContext(ctx, c.eng.rebind(q), args...)
		return err
	})
	return res, err
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

// DefaultLostFor is how long a PostgreSQL store waits out a lost server (a
// restart, a fail-over) before it gives up: counted from the first failed
// operation, for all operations together. WaitEnv overrides it.
const DefaultLostFor = 2 * time.Minute

// WaitEnv is the environment variable that sets how long a PostgreSQL
// store waits out a lost server (a Go duration: 30s, 10m).
const WaitEnv = "TALLY_STORE_WAIT"

// waitFromEnv reads WaitEnv (DefaultLostFor when unset).
func waitFromEnv() (time.Duration, error) {
	v := os.Getenv(WaitEnv)
	if v == "" {
		return DefaultLostFor, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s=%q: want a duration such as 30s or 5m", WaitEnv, v)
	}
	return d, nil
}

// transient reports whether a PostgreSQL error is the server or the
// connection going away (or a serialisation conflict), so that the
// operation may be run again on a new connection.
func transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case strings.HasPrefix(pe.Code, "08"), // connection exception
			strings.HasPrefix(pe.Code, "57P"),      // admin shutdown, crash shutdown, cannot connect now
			pe.Code == "40001", pe.Code == "40P01": // serialisation failure, deadlock
			return true
		}
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	msg := err.Error()
	for _, s := range []string{"conn closed", "connection refused", "connection reset", "broken pipe", "unexpected EOF", "server closed", "failed to connect", "driver: bad connection"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// retry runs f, and for PostgreSQL runs it again with back-off while it
// fails transiently, until ctx is done or the server has been lost for
// lostFor (counted from the outage's first failure, across operations).
// Every statement the store issues is an upsert, a delete or a read, so
// running one again is safe.
func (c *conn) retry(ctx context.Context, f func() error) error {
	err := f()
	if c.eng != postgresEngine {
		return err
	}
	if !transient(err) {
		if err == nil {
			c.lostAt.Store(0)
		}
		return err
	}
	now := time.Now().UnixNano()
	c.lostAt.CompareAndSwap(0, now)
	since := c.lostAt.Load()
	if since == 0 {
		since = now
	}
	deadline := time.Unix(0, since).Add(c.lostFor)
	wait := 50 * time.Millisecond
	for transient(err) {
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("store %s: no answer from the server for %s: giving up (%s sets how long to wait): %w",
				c.where, time.Since(time.Unix(0, since)).Round(time.Second), WaitEnv, err)
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(min(wait, left)):
		}
		wait = min(2*wait, 2*time.Second)
		err = f()
	}
	if err == nil {
		c.lostAt.Store(0)
	}
	return err
}
