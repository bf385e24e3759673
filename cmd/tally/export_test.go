package main

import (
	"path/filepath"
	"strings"
	"testing"

	"tally/internal/pgtest"
)

// TestExportImportRoundTrip: a run moved SQLite → PostgreSQL → SQLite
// (tally export, then tally import --from) reports and lists exactly as the
// original; copying again adds nothing. Without a PostgreSQL server the
// middle store is a SQLite file (and the test says so).
func TestExportImportRoundTrip(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db")
	mid := filepath.Join(dir, "mid.db")
	if pgtest.Available() {
		mid = pgtest.NewDatabase(t)
	} else {
		t.Log("no PostgreSQL server (" + pgtest.Env + "): the middle store is a SQLite file")
	}
	runTally(t, built, "demo", "--store", a, "--max-tokens", "24", "--stop", "dot=.", "--stop", "nl=\\n", "--json")
	runTally(t, built, "export", "--store", a, "--to", mid)
	if _, out := runTally(t, built, "export", "--store", a, "--to", mid); !strings.Contains(out, "copied 0 runs") {
		t.Errorf("second export: %s", out)
	}
	runTally(t, built, "import", "--from", mid, "--store", b)
	for _, args := range [][]string{{"report", "--store"}, {"ls", "--store"}} {
		_, want := runTally(t, built, append(args, a)...)
		_, got := runTally(t, built, append(args, b)...)
		want = strings.ReplaceAll(want, a, "STORE")
		got = strings.ReplaceAll(got, b, "STORE")
		if got != want || len(want) < 100 {
			t.Errorf("tally %s after the round trip:\n%s\nwant\n%s", strings.Join(args, " "), got, want)
		}
	}
	if n, m := storeCounts(t, a), storeCounts(t, b); n["generations"] != m["generations"] || n["scores"] != m["scores"] ||
		n["samples"] != m["samples"] || n["runs"] != m["runs"] {
		t.Errorf("counts %v, want %v", m, n)
	}
}
