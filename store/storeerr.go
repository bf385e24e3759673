package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
			return problemCorrupt
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

// problemCorrupt is storageProblem's word for SQLite's SQLITE_CORRUPT,
// which problemFor makes damagedProblem.
const problemCorrupt = "is damaged (the SQLite file is corrupt)"

// problemFor is storageProblem for the store at path, a damaged file's
// naming the command that says what is lost.
func problemFor(path string, err error) string {
	p := storageProblem(err)
	if p == problemCorrupt {
		return damagedProblem(path)
	}
	return p
}

// named returns err naming the store when it is about the store's storage
// (a StorageError; unchanged otherwise, and when it already is one).
func (s *Store) named(err error) error {
	if err == nil {
		return nil
	}
	var se *StorageError
	var de *DamagedError
	if errors.As(err, &se) || errors.As(err, &de) {
		return err
	}
	if dg := (*errDamagedGeneration)(nil); errors.As(err, &dg) {
		return &DamagedError{Store: s.Path(), What: dg.what(),
			Why: "its seal does not match what it holds: the row is damaged"}
	}
	p := problemFor(s.Path(), err)
	if p == "" {
		return err
	}
	return &StorageError{Store: s.Path(), Problem: p, Err: err}
}

// checkFile says why path cannot hold a SQLite store before SQLite is
// asked to open it for writing (nil when it may): a directory, a file that
// cannot be written, or a file in a directory that does not exist.
func checkFile(path string) error {
	if err := checkRegular(path); err != nil {
		return err // a FIFO would hold the opens below for good
	}
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

// checkForeign refuses, before the file is opened for writing (which
// would switch it to WAL mode) or for reading, an existing SQLite file
// that is not a tally store (verifySchema: another application's tables,
// triggers, or tables that only bear tally's names), and a store that a
// check on open finds damaged (checkOnOpen). It reads the file alone
// (immutable) when no WAL lies beside it, so that it leaves none there.
// A file it cannot read this way for another reason than damage is left
// to the open that follows to report.
func checkForeign(ctx context.Context, path string) error {
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		return nil
	}
	db, err := sql.Open("sqlite", aloneDSN(path))
	if err != nil {
		return nil
	}
	defer db.Close()
	named := func(err error) error {
		if p := problemFor(path, err); p != "" {
			return &StorageError{Store: path, Problem: p, Err: err}
		}
		return nil
	}
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return named(err)
	}
	defer tx.Rollback()
	var v int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return named(err)
	}
	if err := verifySchema(ctx, tx, v); err != nil {
		if p := problemFor(path, err); p != "" {
			return &StorageError{Store: path, Problem: p, Err: err}
		}
		return fmt.Errorf("open store %s: %w", path, err)
	}
	if err := checkOnOpen(ctx, tx, path); err != nil {
		if p := problemFor(path, err); p != "" {
			return &StorageError{Store: path, Problem: p, Err: err}
		}
		return err
	}
	return nil
}
