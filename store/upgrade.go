package store

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"os"
	"slices"

	"tally/tasks/variant"
)

// Upgraded is what Upgrade did.
type Upgraded struct {
	// From and To are the schema versions before and after (From is 0
	// for a PostgreSQL store, whose version is not read first).
	From int `json:"from"`
	To   int `json:"to"`
	// Legacy are the variants recovered from an earlier tally's tasks
	// (variant.Spec.Legacy), by key, and Generations the generations each
	// holds.
	Legacy      []variant.Record `json:"legacy"`
	Generations map[string]int   `json:"generations"`
}

// Upgrade migrates the store at path to this tally's schema (as any
// writing command does when it opens a store) and says what it did:
// notably how migration 7 split the tasks an earlier tally stored by name
// (variants.go).
func Upgrade(ctx context.Context, path string) (Upgraded, error) {
	var up Upgraded
	if !IsPostgres(path) {
		if _, err := os.Stat(path); err != nil {
			return up, fmt.Errorf("upgrade store %s: %w", path, err)
		}
		db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(10000)")
		if err != nil {
			return up, fmt.Errorf("upgrade store %s: %w", path, err)
		}
		err = db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&up.From)
		db.Close()
		if err != nil {
			return up, fmt.Errorf("upgrade store %s: %w", path, err)
		}
	}
	s, err := Open(ctx, path)
	if err != nil {
		return up, err
	}
	defer s.Close()
	up.To = len(migrations)
	if s.Postgres() {
		up.To = len(pgMigrations)
	}
	recs, err := s.Variants(ctx)
	if err != nil {
		return up, err
	}
	for _, k := range slices.Sorted(maps.Keys(recs)) {
		if recs[k].Spec.Legacy != nil {
			up.Legacy = append(up.Legacy, recs[k])
		}
	}
	up.Generations = map[string]int{}
	rows, err := s.db.QueryContext(ctx, `SELECT task, COUNT(*) FROM generations GROUP BY task`)
	if err != nil {
		return up, fmt.Errorf("count generations: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var task string
		var n int
		if err := rows.Scan(&task, &n); err != nil {
			return up, fmt.Errorf("count generations: %w", err)
		}
		up.Generations[task] = n
	}
	return up, rows.Err()
}
