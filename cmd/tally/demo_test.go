package main

import (
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"tally/tasks"
)

// TestDemoStory runs `tally demo` and checks, on the scores it stored, the
// three effects of the leaderboard's DROP stop-word finding that the
// embedded model is trained to show, and the summary under the table:
// under "\n" most answers are right; "." cuts the decimal answers; with
// no stop, drop scores the run-on answers 0 and drop-fixed credits them.
func TestDemoStory(t *testing.T) {
	db := filepath.Join(t.TempDir(), "d.db")
	out := tallyOut(t, "demo", "--store", db)
	t.Log(out)
	for _, want := range []string{"What this shows", `stop "." (dot): cut 1`, "run-on number answers 0", "drop-fixed, which splits on any whitespace, credited"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	cfg, err := tasks.Resolve("demo")
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := cfg.Load(tasks.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	decimal := map[string]bool{}
	for _, s := range loaded.Samples {
		var answers [][]string
		if err := json.Unmarshal(s.References, &answers); err != nil {
			t.Fatal(err)
		}
		if a := answers[0][0]; strings.Contains(a, ".") {
			if _, err := strconv.ParseFloat(a, 64); err == nil {
				decimal[s.ID] = true
			}
		}
	}
	if len(decimal) < 5 || len(decimal) == len(loaded.Samples) {
		t.Fatalf("%d decimal answers among %d questions", len(decimal), len(loaded.Samples))
	}
	sdb, err := sql.Open("sqlite", "file:"+db+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	rows, err := sdb.Query(`SELECT sample_id, setting, metric, value, prediction FROM scores`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	type key struct{ id, set, metric string }
	val, pred := map[key]float64{}, map[key]string{}
	for rows.Next() {
		var k key
		var v float64
		var p []byte
		if err := rows.Scan(&k.id, &k.set, &k.metric, &v, &p); err != nil {
			t.Fatal(err)
		}
		val[k], pred[k] = v, string(p)
	}
	mean := func(set, metric string, onlyDecimal bool) float64 {
		sum, n := 0.0, 0
		for _, s := range loaded.Samples {
			if onlyDecimal && !decimal[s.ID] {
				continue
			}
			sum += val[key{s.ID, set, metric}]
			n++
		}
		return sum / float64(n)
	}
	if f1 := mean("nl", "drop.f1", false); f1 < 0.85 {
		t.Errorf(`under "\n" drop F1 is %.3f, want ≥ 0.85`, f1)
	}
	if nl, dot := mean("nl", "drop.f1", true), mean("dot", "drop.f1", true); nl-dot < 0.5 {
		t.Errorf(`decimal answers: drop F1 %.3f under "\n", %.3f under ".": want "." at least 0.5 lower`, nl, dot)
	}
	// With no stop, every answer runs on into the next passage; drop reads
	// a number followed by "\n\nPassage:" as a word, not a number, so it
	// scores the number answers 0, and drop-fixed credits them. (The
	// invented next passage may happen to repeat the answer's number, which
	// drop then credits: hence "most".)
	ranOn, numbers, zeroed, credited := 0, 0, 0, 0
	for _, s := range loaded.Samples {
		k := key{s.ID, "none", "drop.f1"}
		if !strings.Contains(pred[k], "\n\nPassage") {
			continue
		}
		ranOn++
		var answers [][]string
		_ = json.Unmarshal(s.References, &answers)
		if _, err := strconv.ParseFloat(answers[0][0], 64); err != nil {
			continue
		}
		numbers++
		if val[k] == 0 {
			zeroed++
		}
		if val[key{s.ID, "none", "drop-fixed.f1"}] > 0 {
			credited++
		}
	}
	if ranOn < len(loaded.Samples)*9/10 || numbers < 10 || zeroed < numbers*8/10 || credited < numbers*9/10 {
		t.Errorf("no stop: %d of %d answers ran on; of the %d number answers drop scored %d 0, drop-fixed credited %d",
			ranOn, len(loaded.Samples), numbers, zeroed, credited)
	}
}
