package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"

	"tally/internal/fsguard"
)

// This file holds what every command checks of a SQLite store before it
// reads or writes it: that the file (and its -wal and -shm files) is a
// regular file, that its schema is exactly the one tally's migrations
// make for its version (no table, view or trigger of anyone else's, and
// tally's tables with tally's columns), and, where that is cheap, that
// SQLite finds the file sound (integrity_check or quick_check).

// Bounds of the checks made when a SQLite store is opened, on the size of
// its file and WAL together: SQLite's integrity_check (every page, and
// every index against its table) up to integrityCheckMax, its quick_check
// (every page, not the indexes' contents) up to quickCheckMax; none above
// (there a command relies on the checks of what it reads: the checksum of
// every packed row of scores, and cell_size_check on every page read).
// Measured on a 2-core machine: quick_check reads 1.1 GB a second (1.4 s
// for the 1.5 GB store of 200,000 generations, 0.57 times that store's
// whole HTML report), integrity_check a quarter of that.
const (
	integrityCheckMax = 4 << 20
	quickCheckMax     = 32 << 20
)

// checkRegular refuses a store file, or a -wal or -shm file beside it,
// that is there but is not a regular file (a FIFO, which SQLite's open
// would wait on for good; a device; a socket), before anything opens it:
// the check `tally import` makes of its files (fsguard.Check).
func checkRegular(path string) error {
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Lstat(p)
		if err != nil {
			continue // not there: SQLite creates it, or the open says why
		}
		if p == path && fi.IsDir() {
			return fmt.Errorf("store %s is a directory, not a store file", path)
		}
		if err := fsguard.Check("", p, false); err != nil {
			return fmt.Errorf("store %s: %w", path, err)
		}
	}
	return nil
}

// schemaQuerier is what reading a SQLite schema needs: a *sql.DB, a
// *sql.Tx, a *conn or a *txn.
type schemaQuerier interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}

// schemaObject is one object of a SQLite schema (a table, view, trigger
// or index) as tally compares it: its kind and a description of its
// definition (a table's columns, flags and constraint indexes; an
// index's table, uniqueness and columns), not its SQL text.
type schemaObject struct {
	kind, desc string
}

// describeSchema describes every object of the schema q reads, by name
// (SQLite's own, named sqlite_…, excepted).
func describeSchema(ctx context.Context, q schemaQuerier) (map[string]schemaObject, error) {
	rows, err := q.QueryContext(ctx, `SELECT type, name, tbl_name FROM sqlite_master WHERE name NOT LIKE 'sqlite\_%' ESCAPE '\'`)
	if err != nil {
		return nil, fmt.Errorf("read the schema: %w", err)
	}
	type object struct{ kind, name, table string }
	var objects []object
	for rows.Next() {
		var o object
		if err := rows.Scan(&o.kind, &o.name, &o.table); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read the schema: %w", err)
		}
		objects = append(objects, o)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("read the schema: %w", err)
	}
	out := make(map[string]schemaObject, len(objects))
	for _, o := range objects {
		var desc strings.Builder
		var err error
		switch o.kind {
		case "table":
			err = describeTable(ctx, q, o.name, &desc)
		case "index":
			fmt.Fprintf(&desc, "on %s: ", o.table)
			err = describeIndex(ctx, q, o.table, o.name, &desc)
		}
		if err != nil {
			return nil, fmt.Errorf("read the schema of %s: %w", o.name, err)
		}
		out[o.name] = schemaObject{o.kind, desc.String()}
	}
	return out, nil
}

// describeTable writes a table's columns (name, type, NOT NULL, default,
// place in the primary key), whether it has rowids, and its constraint
// indexes (a PRIMARY KEY or UNIQUE clause's, which sqlite_master lists
// under SQLite's names).
func describeTable(ctx context.Context, q schemaQuerier, name string, w *strings.Builder) error {
	var wr, strict int
	if err := q.QueryRowContext(ctx, `SELECT wr, strict FROM pragma_table_list(?) WHERE schema='main'`, name).Scan(&wr, &strict); err != nil {
		return err
	}
	fmt.Fprintf(w, "without rowid %d, strict %d; columns:", wr, strict)
	if err := describeRows(ctx, q, w, `SELECT name, type, "notnull", COALESCE(dflt_value, 'NULL'), pk, hidden FROM pragma_table_xinfo(?) ORDER BY cid`, name); err != nil {
		return err
	}
	rows, err := q.QueryContext(ctx, `SELECT name, "unique", origin, partial FROM pragma_index_list(?) WHERE origin <> 'c' ORDER BY name`, name)
	if err != nil {
		return err
	}
	var constraints []string
	for rows.Next() {
		var idx, origin string
		var unique, partial int
		if err := rows.Scan(&idx, &unique, &origin, &partial); err != nil {
			rows.Close()
			return err
		}
		constraints = append(constraints, idx)
		fmt.Fprintf(w, "; %s index, unique %d, partial %d:", origin, unique, partial)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return err
	}
	for _, idx := range constraints {
		if err := describeIndex(ctx, q, name, idx, w); err != nil {
			return err
		}
	}
	return nil
}

// describeIndex writes an index's columns (name, order, collation) and
// whether it is unique.
func describeIndex(ctx context.Context, q schemaQuerier, table, name string, w *strings.Builder) error {
	var unique int
	if err := q.QueryRowContext(ctx, `SELECT "unique" FROM pragma_index_list(?) WHERE name=?`, table, name).Scan(&unique); err != nil {
		return err
	}
	fmt.Fprintf(w, " unique %d:", unique)
	return describeRows(ctx, q, w, `SELECT COALESCE(name, cid), "desc", coll, key FROM pragma_index_xinfo(?) ORDER BY seqno`, name)
}

// describeRows writes each row of a query of one argument as its values
// in brackets.
func describeRows(ctx context.Context, q schemaQuerier, w *strings.Builder, query string, arg string) error {
	rows, err := q.QueryContext(ctx, query, arg)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		w.WriteString(" [")
		for i, v := range vals {
			if i > 0 {
				w.WriteByte(' ')
			}
			fmt.Fprintf(w, "%q", v.String)
		}
		w.WriteByte(']')
	}
	return rows.Err()
}

// expectedSchemas caches, by schema version, the schema tally's
// migrations make (expectedSchema).
var expectedSchemas struct {
	sync.Mutex
	m map[int]map[string]schemaObject
}

// expectedSchema is the schema tally's first v migrations make: they are
// applied (with their steps in Go) to an empty database in memory, and
// what that holds described.
func expectedSchema(ctx context.Context, v int) (map[string]schemaObject, error) {
	expectedSchemas.Lock()
	defer expectedSchemas.Unlock()
	if s, ok := expectedSchemas.m[v]; ok {
		return s, nil
	}
	db, err := sql.Open("sqlite", "file::memory:")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // one connection: one database in memory
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	t := &txn{Tx: tx, eng: sqliteEngine}
	for i := range v {
		if _, err := t.ExecContext(ctx, migrations[i]); err != nil {
			return nil, fmt.Errorf("schema version %d: migration %d: %w", v, i+1, err)
		}
		if fill := migrationFill(i + 1); fill != nil {
			if err := fill(ctx, t); err != nil {
				return nil, fmt.Errorf("schema version %d: migration %d: %w", v, i+1, err)
			}
		}
	}
	s, err := describeSchema(ctx, t)
	if err != nil {
		return nil, err
	}
	if expectedSchemas.m == nil {
		expectedSchemas.m = map[int]map[string]schemaObject{}
	}
	expectedSchemas.m[v] = s
	return s, nil
}

// verifySchema says why the SQLite database q reads, whose PRAGMA
// user_version is v, is not a tally store (nil when it is one, or holds
// nothing at all): it holds a table, view or trigger tally's migrations do
// not make, or a table or index of tally's name that is not tally's, or
// lacks one of tally's; or it holds objects under version 0, which a tally
// store never does. Indexes of one's own on tally's tables are allowed.
func verifySchema(ctx context.Context, q schemaQuerier, v int) error {
	got, err := describeSchema(ctx, q)
	if err != nil {
		return err
	}
	if v == 0 {
		if len(got) == 0 {
			return nil // a new store
		}
		return notTallyStore("it holds tables or other objects but no tally schema version (" + listNames(slices.Collect(maps.Keys(got))) + ")")
	}
	if v > len(migrations) {
		return nil // newer than this tally: said by the caller
	}
	want, err := expectedSchema(ctx, v)
	if err != nil {
		return err
	}
	var tables, triggers, differ, missing []string
	for name, o := range got {
		w, ok := want[name]
		switch {
		case !ok && o.kind == "trigger":
			triggers = append(triggers, name)
		case !ok && o.kind == "index":
			// an index of one's own: it changes no row
		case !ok:
			tables = append(tables, name)
		case w != o:
			differ = append(differ, name)
		}
	}
	for name := range want {
		if _, ok := got[name]; !ok {
			missing = append(missing, name)
		}
	}
	var why []string
	if len(tables) > 0 {
		why = append(why, "it holds tables tally does not make ("+listNames(tables)+")")
	}
	if len(triggers) > 0 {
		why = append(why, "it holds triggers tally does not make ("+listNames(triggers)+"), which would run on tally's writes")
	}
	if len(differ) > 0 {
		why = append(why, "its "+listNames(differ)+" are not as tally makes them (other columns or indexes)")
	}
	if len(missing) > 0 {
		why = append(why, fmt.Sprintf("it lacks tally's %s (of schema version %d)", listNames(missing), v))
	}
	if len(why) == 0 {
		return nil
	}
	return notTallyStore(strings.Join(why, "; "))
}

// notTallyStore is the error of a SQLite file that is not a tally store,
// saying why.
func notTallyStore(why string) error {
	return fmt.Errorf("not a tally store: %s; tally never writes into another application's database: name a new file", why)
}

// listNames lists names sorted, the first five and how many in all.
func listNames(names []string) string {
	names = slices.Sorted(slices.Values(names))
	if len(names) > 5 {
		names = append(names[:5:5], fmt.Sprintf("… %d in all", len(names)))
	}
	return strings.Join(names, ", ")
}

// storeSize is the size of a SQLite store's file and WAL together.
func storeSize(path string) int64 {
	var n int64
	for _, p := range []string{path, path + "-wal"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
	}
	return n
}

// checkOnOpen runs SQLite's integrity_check or quick_check on a store
// that is small enough (integrityCheckMax, quickCheckMax), and says
// what it found wrong, naming the store.
func checkOnOpen(ctx context.Context, q schemaQuerier, path string) error {
	size := storeSize(path)
	pragma := ""
	switch {
	case size <= integrityCheckMax:
		pragma = "integrity_check"
	case size <= quickCheckMax:
		pragma = "quick_check"
	default:
		return nil
	}
	problems, err := sqliteCheck(ctx, q, pragma, 5)
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		return damaged(path, pragma+": "+strings.Join(problems, "; "))
	}
	return nil
}

// sqliteCheck runs PRAGMA pragma (integrity_check or quick_check), at
// most max problems, and returns what it found wrong (none: the file is
// sound).
func sqliteCheck(ctx context.Context, q schemaQuerier, pragma string, max int) ([]string, error) {
	rows, err := q.QueryContext(ctx, fmt.Sprintf("PRAGMA %s(%d)", pragma, max))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		for _, line := range strings.Split(s, "\n") {
			if line != "ok" && line != "" && !strings.HasPrefix(line, "*** in database") {
				out = append(out, line)
			}
		}
	}
	return out, rows.Err()
}

// damaged is the error of a damaged store: what is wrong, and the command
// that says what is lost.
func damaged(path, what string) error {
	return &StorageError{Store: path, Problem: damagedProblem(path), Err: errors.New(what)}
}

// damagedProblem says that the store at path is damaged and how to learn
// more.
func damagedProblem(path string) string {
	return "is damaged (`tally check --store " + path + "` says what is lost)"
}

// opened are the SQLite stores this process opened (Explain).
var opened struct {
	sync.Mutex
	paths []string
}

// noteOpened records that this process opened the SQLite store at path.
func noteOpened(path string) {
	opened.Lock()
	defer opened.Unlock()
	if !slices.Contains(opened.paths, path) {
		opened.paths = append(opened.paths, path)
	}
}

// Explain returns err naming the store it is about when it is SQLite's
// finding that a store's file is damaged (SQLITE_CORRUPT) or no database
// (SQLITE_NOTADB) and it names no store yet (a read in the middle of a
// command, which a store's reads do not all wrap): the SQLite store this
// process opened, or each of them when it opened several. Any other error
// is returned as it is.
func Explain(err error) error {
	if err == nil {
		return nil
	}
	var se *StorageError
	var de *DamagedError
	if errors.As(err, &se) || errors.As(err, &de) {
		return err
	}
	p := storageProblem(err)
	if p != problemCorrupt && p != "is not a SQLite database" {
		return err
	}
	opened.Lock()
	paths := slices.Clone(opened.paths)
	opened.Unlock()
	switch len(paths) {
	case 0:
		return err
	case 1:
		return &StorageError{Store: paths[0], Problem: problemFor(paths[0], err), Err: err}
	}
	return &StorageError{Store: strings.Join(paths, " or "), Problem: p + " (`tally check --store PATH` says what is lost)", Err: err}
}

// aloneDSN is the data source of a read-only look at the SQLite file at
// path that leaves nothing beside it: the file read alone (immutable)
// when no WAL lies beside it, else with its WAL (whose index, -shm, SQLite
// then needs).
func aloneDSN(path string) string {
	params := "mode=ro"
	if _, err := os.Lstat(path + "-wal"); errors.Is(err, fs.ErrNotExist) {
		params += "&immutable=1"
	}
	return "file:" + path + "?" + params + "&_pragma=busy_timeout(10000)&_pragma=query_only(1)&_pragma=cell_size_check(1)"
}
