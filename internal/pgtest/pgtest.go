// Package pgtest gives tests a fresh PostgreSQL database on the server
// named by TALLY_TEST_POSTGRES (a superuser URL; scripts/postgres-server.sh
// starts a throwaway cluster and prints it, and .ci/run does so), and skips
// them, saying so, when none is set.
package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
)

// Env is the variable that names the test server.
const Env = "TALLY_TEST_POSTGRES"

// Available reports whether a test server is named.
func Available() bool { return os.Getenv(Env) != "" }

// NewDatabase creates an empty database for the test, drops it when the
// test ends, and returns its URL. It skips the test when no server is
// named.
func NewDatabase(tb testing.TB) string {
	tb.Helper()
	admin := os.Getenv(Env)
	if admin == "" {
		tb.Skip("no PostgreSQL server: set " + Env + " (scripts/postgres-server.sh starts one; .ci/run does)")
	}
	return newDatabase(tb, admin)
}

// newDatabase creates an empty database on the server of the superuser
// URL admin, drops it when the test ends, and returns its URL.
func newDatabase(tb testing.TB, admin string) string {
	tb.Helper()
	u, err := url.Parse(admin)
	if err != nil {
		tb.Fatalf("%s: %v", Env, err)
	}
	b := make([]byte, 6)
	rand.Read(b)
	name := "tally_t_" + hex.EncodeToString(b)
	db, err := sql.Open("pgx", admin)
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(context.Background(), "CREATE DATABASE "+name); err != nil {
		tb.Fatalf("create test database: %v", err)
	}
	tb.Cleanup(func() {
		db, err := sql.Open("pgx", admin)
		if err != nil {
			return
		}
		defer db.Close()
		db.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	u.Path = "/" + name
	return u.String()
}
