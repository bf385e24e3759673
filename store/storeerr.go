package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// StorageError is a store operation that failed because of where the store
// lives (its disk is full, it is read-only, it cannot be read or written):
// its message names the store and says what is wrong with it.
type StorageError struct {
	// Store is the store's location as printed (Store.Path).
	Store string
	// Problem says what is wrong, e.g. "is full (no space left on its disk)".
	Problem string
	Err     error
}

// Error names the store and its problem, then the engine's error.
func (e *StorageError) Error() string {
	return fmt.Sprintf("store %s %s: %v", e.Store, e.Problem, e.Err)
}

// Unwrap returns the engine's error.
func (e *StorageError) Unwrap() error { return e.Err }

// storageProblem says what an engine's error means for the store's
// storage ("" for an error that is not about it).
func storageProblem(err error) string {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_FULL:
			return "is full (no space left on its disk)"
		case sqlite3.SQLITE_READONLY:
			return "is read-only (its file, its directory or its file system)"
		case sqlite3.SQLITE_IOERR:
			return "could not be read or written (I/O error)"
		case sqlite3.SQLITE_CANTOPEN:
			return "cannot be opened (its directory must exist and be writable, for the store and its -wal and -shm files)"
		case sqlite3.SQLITE_NOTADB:
			return "is not a SQLite database"
		case sqlite3.SQLITE_CORRUPT:
			return "is damaged (the SQLite file is corrupt)"
		}
		return ""
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "53100":
			return "is full (the database server's disk is full)"
		case pe.Code == "25006":
			return "is read-only (a read-only server or transaction)"
		case pe.Code == "42501":
			return "refuses this user's writes (permission denied)"
		case strings.HasPrefix(pe.Code, "58"):
			return "could not be read or written (the server's I/O error)"
		}
	}
	return ""
}

// named returns err naming the store when it is about the store's storage
// (a StorageError; unchanged otherwise, and when it already is one).
func (s *Store) named(err error) error {
	if err == nil {
		return nil
	}
	var se *StorageError
	if errors.As(err, &se) {
		return err
	}
	p := storageProblem(err)
	if p == "" {
		return err
	}
	return &StorageError{Store: s.Path(), Problem: p, Err: err}
}

// checkFile says why path cannot hold a SQLite store before SQLite is
// asked to open it for writing (nil when it may): a directory, a file that
// cannot be written, or a file in a directory that does not exist.
func checkFile(path string) error {
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return fmt.Errorf("store %s is a directory, not a store file", path)
	case err == nil:
		f, err := os.OpenFile(path, os.O_WRONLY, 0) // writes nothing
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
			return &StorageError{Store: path, Problem: "is read-only (its file, its directory or its file system); read-only commands (ls, report, plan, compare) read it", Err: err}
		}
		if err == nil {
			f.Close()
		}
	case errors.Is(err, os.ErrNotExist):
		dir := filepath.Dir(path)
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("store %s: its directory %s does not exist", path, dir)
		}
	}
	return nil
}

// tallyTables are the tables tally's SQLite migrations make.
var tallyTables = []string{"runs", "samples", "generations", "scores", "claims", "workers", "score_digests", "packed_scores", "variants"}

// foreignTables lists, sorted, the tables and views of a SQLite store that
// tally does not make (SQLite's own excepted).
func foreignTables(ctx context.Context, tx *txn) ([]string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type IN ('table','view') AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, fmt.Errorf("list tables: %w", err)
		}
		if !slices.Contains(tallyTables, name) {
			out = append(out, name)
		}
	}
	return out, rows.Err()
}

// checkForeign refuses, before the file is opened for writing (which
// would switch it to WAL mode), an existing SQLite file that holds tables
// tally does not make. A file it cannot read this way is left to the open
// that follows to report.
func checkForeign(ctx context.Context, path string) error {
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		return nil
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		return nil
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil
	}
	defer tx.Rollback()
	other, err := foreignTables(ctx, &txn{Tx: tx})
	if err != nil || len(other) == 0 {
		return nil
	}
	return fmt.Errorf("open store %s: %w", path, errForeign(other))
}

// errForeign is why a writing command refuses a SQLite file holding other
// tables than tally's.
func errForeign(tables []string) error {
	list := tables
	if len(list) > 5 {
		list = append(slices.Clone(list[:5]), fmt.Sprintf("… %d in all", len(tables)))
	}
	return fmt.Errorf("not a tally store: it holds tables tally does not make (%s); tally never writes into another application's database: name a new file", strings.Join(list, ", "))
}
