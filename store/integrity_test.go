package store

import (
	"context"
	"database/sql"
	"testing"
)

// storeAtVersion makes at path a SQLite store of schema version v, as a
// tally that knew v migrations made it.
func storeAtVersion(t *testing.T, path string, v int) {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	x := &txn{Tx: tx, eng: sqliteEngine}
	for i := range v {
		if _, err := x.ExecContext(ctx, migrations[i]); err != nil {
			t.Fatal(err)
		}
		if fill := migrationFill(i + 1); fill != nil {
			if err := fill(ctx, x); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := x.ExecContext(ctx, "PRAGMA user_version = "+itoa(v)); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// unseal removes the seal of a stored generation, as a tally from before
// seals wrote it.
func unseal(t *testing.T, s *Store, key string) {
	t.Helper()
	ctx := context.Background()
	var stored string
	if err := s.db.QueryRowContext(ctx, `SELECT stops FROM generations WHERE key=?`, key).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	stops, _, _, _ := splitSeal(stored)
	if _, err := s.db.ExecContext(ctx, `UPDATE generations SET stops=? WHERE key=?`, stops, key); err != nil {
		t.Fatal(err)
	}
}
