package main

import (
	"database/sql"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Issue 33: runs that asked different prompts are never mixed. These tests
// follow the README's walk-through with a 3-shot run and a 0-shot run of
// one task on one store, as a new user would.

// variantData writes the demo's DROP-format questions and long ones whose
// passages (the demo's first, repeated 30 times) put some 3-shot prompts
// past the demo model's context, and returns the file.
func variantData(t *testing.T, dir string, long int) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "tasks", "builtin", "demo.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r map[string]any
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	out := slices.Clone(rows)
	for i := range long {
		r := map[string]any{}
		for k, v := range rows[i] {
			r[k] = v
		}
		r["query_id"], r["section_id"] = "long-"+string(rune('a'+i)), "long-"+string(rune('a'+i))
		r["passage"] = strings.Repeat(rows[i]["passage"].(string)+" ", 30)
		out = append(out, r)
	}
	var lines []string
	for _, r := range out {
		l, _ := json.Marshal(r)
		lines = append(lines, string(l))
	}
	p := filepath.Join(dir, "questions.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// variantRun is what a run's --json says of its figures.
type variantRun struct {
	Scores map[string]map[string]map[string]float64 `json:"scores"`
	Counts map[string]map[string]struct {
		Scored int `json:"n_scored"`
		Failed int `json:"n_failed"`
	} `json:"counts"`
	Reused int `json:"generations_reused"`
}

// reportRow is a row of report --json.
type reportRow struct {
	Task, Variant, Metric, Stop, Setting string
	N                                    int
	Failed                               int `json:"n_failed"`
	FailedSamples                        []struct {
		SampleID string `json:"sample_id"`
	} `json:"failed_samples"`
	Mean struct{ Estimate, Low, High float64 }
}

func reportRows(t *testing.T, args ...string) []reportRow {
	t.Helper()
	var rows []reportRow
	if err := json.Unmarshal([]byte(runJSON(t, append(args, "--format", "json")...)), &rows); err != nil {
		t.Fatal(err)
	}
	return rows
}

// lmevalPairs reads the (prompt, raw continuation, filter) triples of the
// samples files under dir, and the results files' n-shot of task.
func lmevalPairs(t *testing.T, dir, task string) (map[[3]string]bool, []int) {
	t.Helper()
	pairs := map[[3]string]bool{}
	samples, _ := filepath.Glob(filepath.Join(dir, "*", "samples_"+task+"_*.jsonl"))
	for _, f := range samples {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var line struct {
				Arguments map[string]map[string]any `json:"arguments"`
				Filter    string                    `json:"filter"`
				Tally     struct{ Raw string }      `json:"tally"`
			}
			if err := json.Unmarshal([]byte(l), &line); err != nil {
				t.Fatal(err)
			}
			prompt, _ := line.Arguments["gen_args_0"]["arg_0"].(string)
			pairs[[3]string{prompt, line.Tally.Raw, line.Filter}] = true
		}
	}
	var nshot []int
	results, _ := filepath.Glob(filepath.Join(dir, "*", "results_*.json"))
	for _, f := range results {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			NShot   map[string]int            `json:"n-shot"`
			Configs map[string]map[string]any `json:"configs"`
		}
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		if n, ok := r.NShot[task]; ok {
			if c := r.Configs[task]["num_fewshot"]; c != float64(n) {
				t.Errorf("%s: n-shot %d, configs num_fewshot %v", f, n, c)
			}
			nshot = append(nshot, n)
		}
	}
	slices.Sort(nshot)
	return pairs, nshot
}

// checkRowsMatch checks that report rows of one task label give a run's
// figures: n, failed and every mean.
func checkRowsMatch(t *testing.T, rows []reportRow, label string, run variantRun, n int) {
	t.Helper()
	found := 0
	for _, r := range rows {
		if r.Task != label {
			continue
		}
		found++
		c := run.Counts["drop"][r.Stop]
		if want := run.Scores["drop"][r.Stop][r.Metric]; math.Abs(r.Mean.Estimate-want) > 1e-12 || r.N != n || r.Failed != c.Failed || len(r.FailedSamples) != c.Failed {
			t.Errorf("%s %s %s: mean %v n %d failed %d (%d listed), want the run's %v, n %d, failed %d", label, r.Stop, r.Metric,
				r.Mean.Estimate, r.N, r.Failed, len(r.FailedSamples), want, n, c.Failed)
		}
	}
	if found == 0 {
		t.Errorf("no rows labelled %q", label)
	}
}

// issueRuns makes the issue's two runs in dir: a 3-shot then a 0-shot run
// of drop over 16 of the demo's questions on one store, their lm-eval
// files under oA and oB. It returns the store, the flags they share and
// what each printed.
func issueRuns(t *testing.T, dir string) (db string, common []string, three, zero variantRun) {
	t.Helper()
	data := variantData(t, dir, 0)
	db = filepath.Join(dir, "s.db")
	common = []string{"--model", "demo", "--tasks", "drop", "--data", data, "--limit", "16", "--store", db}
	runJSONInto(t, &three, 0, append([]string{"run", "--output-path", filepath.Join(dir, "oA")}, common...)...)
	runJSONInto(t, &zero, 0, append([]string{"run", "--output-path", filepath.Join(dir, "oB"), "--fewshot", "0"}, common...)...)
	return db, common, three, zero
}

// TestVariantsNeverMixed: the issue's sequence (a 3-shot run, then a
// 0-shot run, of 16 questions on one store): the store-only report has a
// row per variant, labelled by what sets them apart, each with its run's
// n and means; its lm-eval files hold one results file per variant, and
// every (prompt, response) pair they hold is one a run made; ls, compare
// and plan keep them apart too.
func TestVariantsNeverMixed(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	dir := t.TempDir()
	db, common, three, zero := issueRuns(t, dir)
	if three.Scores["drop"]["nl"]["drop.f1"] == zero.Scores["drop"]["nl"]["drop.f1"] {
		t.Fatalf("the two runs score alike (%v): the test cannot tell them apart", three.Scores)
	}
	rows := reportRows(t, "report", "--store", db)
	var labels []string
	for _, r := range rows {
		if !slices.Contains(labels, r.Task) {
			labels = append(labels, r.Task)
		}
		if !strings.HasPrefix(r.Variant, "drop#") {
			t.Errorf("row %+v: variant %q", r, r.Variant)
		}
		if strings.HasPrefix(r.Setting, "demo nl") && r.Setting != `demo nl=\n` {
			t.Errorf("setting label %q, want the setting with its sequences", r.Setting)
		}
	}
	slices.Sort(labels)
	if !slices.Equal(labels, []string{"drop (0-shot)", "drop (3-shot)"}) {
		t.Fatalf("store-only report tasks %v, want drop (0-shot) and drop (3-shot)", labels)
	}
	checkRowsMatch(t, rows, "drop (3-shot)", three, 16)
	checkRowsMatch(t, rows, "drop (0-shot)", zero, 16)

	runJSON(t, "report", "--store", db, "--output-path", filepath.Join(dir, "oR"))
	a, _ := lmevalPairs(t, filepath.Join(dir, "oA"), "drop")
	b, _ := lmevalPairs(t, filepath.Join(dir, "oB"), "drop")
	r, nshot := lmevalPairs(t, filepath.Join(dir, "oR"), "drop")
	if len(r) != len(a)+len(b) || !slices.Equal(nshot, []int{0, 3}) {
		t.Errorf("report's lm-eval files: %d pairs (runs: %d + %d), results n-shot %v, want one file per variant, 0 and 3", len(r), len(a), len(b), nshot)
	}
	for p := range r {
		if !a[p] && !b[p] {
			t.Errorf("report's lm-eval files pair a prompt with a response no run made: %q → %q (%s)", tail(p[0]), p[1], p[2])
		}
	}

	var inv struct {
		Tasks  []struct{ Task string }
		Labels map[string]string
	}
	if err := json.Unmarshal([]byte(runJSON(t, "ls", "--store", db, "--json")), &inv); err != nil {
		t.Fatal(err)
	}
	var lsLabels []string
	for _, tk := range inv.Tasks {
		lsLabels = append(lsLabels, inv.Labels[tk.Task])
	}
	slices.Sort(lsLabels)
	if !slices.Equal(lsLabels, []string{"drop (0-shot)", "drop (3-shot)"}) {
		t.Errorf("ls tasks %v", lsLabels)
	}
	// compare and report with flags select one variant: the 0-shot run's.
	for _, cmd := range []string{"compare", "report"} {
		rows := reportRows(t, append([]string{cmd, "--fewshot", "0"}, common...)...)
		checkRowsMatch(t, rows, "drop", zero, 16)
	}
	var plan struct {
		Counts map[string]int `json:"counts"`
	}
	runJSONInto(t, &plan, 0, append([]string{"plan", "--fewshot", "0"}, common...)...)
	if plan.Counts["complete"] != 32 || plan.Counts["missing"] != 0 {
		t.Errorf("plan of the 0-shot run again: %v, want every pair complete", plan.Counts)
	}
}

// TestVariantsFailedApart: with questions whose 3-shot prompts exceed the
// demo's context, each variant's report rows count its own failures and
// list them; the HTML page's failed filter shows the 3-shot variant's
// failed samples, none of them scored (in Chromium, where it is present).
func TestVariantsFailedApart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	dir := t.TempDir()
	data := variantData(t, dir, 5)
	db := filepath.Join(dir, "s.db")
	common := []string{"--model", "demo", "--tasks", "drop", "--data", data, "--store", db}
	var three, zero variantRun
	runJSONInto(t, &three, ExitFailed, append([]string{"run"}, common...)...)
	runJSONInto(t, &zero, 0, append([]string{"run", "--fewshot", "0"}, common...)...)
	failed := three.Counts["drop"]["nl"].Failed
	if failed == 0 || zero.Counts["drop"]["nl"].Failed != 0 {
		t.Fatalf("failed: 3-shot %d, 0-shot %d; want some 3-shot prompts past the context and no 0-shot one", failed, zero.Counts["drop"]["nl"].Failed)
	}
	rows := reportRows(t, "report", "--store", db)
	checkRowsMatch(t, rows, "drop (3-shot)", three, 45)
	checkRowsMatch(t, rows, "drop (0-shot)", zero, 45)
	bin := chromiumBin()
	if bin == "" {
		t.Log("HTML page not opened: no chromium on PATH (apt-get install chromium; .ci/run installs it)")
		return
	}
	page := filepath.Join(dir, "report.html")
	if err := os.WriteFile(page, []byte(runJSON(t, "report", "--store", db, "--format", "html")), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, append(chromiumFlags(t), "--dump-dom", "file://"+page+"#failed&open")...).Output()
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	d := string(out)
	total := regexp.MustCompile(`data-total="(\d+)"`).FindStringSubmatch(d)
	if total == nil || total[1] != strconv.Itoa(failed) || strings.Count(d, `data-failed="1"`) != failed ||
		strings.Contains(d, `data-failed="0"`) {
		t.Errorf("failed filter: %v, %d failed shown; want the 3-shot variant's %d failed samples and nothing else", total, strings.Count(d, `data-failed="1"`), failed)
	}
	for _, label := range []string{"drop (3-shot)", "drop (0-shot)"} {
		if !strings.Contains(d, label) {
			t.Errorf("page does not name %q", label)
		}
	}
}

// TestOldStoreVariants: a store an earlier tally left after the issue's
// two runs (one prompt per task and sample id: the 0-shot run's; both
// runs' generations and scores under the task's name) is reported apart,
// as it is (through an upgraded copy, the file left unchanged) and once
// `tally upgrade` split it: a row per variant, each with its run's
// figures; its lm-eval files pair only stored prompts with the
// generations made for them.
func TestOldStoreVariants(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	dir := t.TempDir()
	db, _, three, zero := issueRuns(t, dir)
	makeEarlierStore(t, db)
	before, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	// Read as it is (through an upgraded copy), then upgraded: the same rows.
	_, stderr, code := runStatus(t, "report", "--store", db, "--format", "json")
	if code != 0 || !strings.Contains(stderr, "tally upgrade") {
		t.Fatalf("report of an earlier store holding two variants under one name: status %d\n%s", code, stderr)
	}
	asIs := reportRows(t, "report", "--store", db)
	if after, _ := os.ReadFile(db); string(after) != string(before) {
		t.Error("report changed the earlier store")
	}
	up := runJSON(t, "upgrade", "--store", db)
	if !strings.Contains(up, "migrated from schema 6") || !strings.Contains(up, "not stored") {
		t.Errorf("upgrade said:\n%s", up)
	}
	rows := reportRows(t, "report", "--store", db)
	if a, b := mustJSON(t, asIs), mustJSON(t, rows); a != b {
		t.Errorf("report before the upgrade\n%s\nafter\n%s", a, b)
	}
	var zeroLabel, threeLabel string
	for _, r := range rows {
		switch {
		case strings.Contains(r.Task, "fewshot=0"):
			zeroLabel = r.Task
		case strings.Contains(r.Task, "not stored"):
			threeLabel = r.Task
		default:
			t.Errorf("row of task %q", r.Task)
		}
	}
	checkRowsMatch(t, rows, zeroLabel, zero, 16)
	checkRowsMatch(t, rows, threeLabel, three, 16)
	runJSON(t, "report", "--store", db, "--output-path", filepath.Join(dir, "oR"))
	b, _ := lmevalPairs(t, filepath.Join(dir, "oB"), "drop")
	r, _ := lmevalPairs(t, filepath.Join(dir, "oR"), "drop")
	if len(r) != len(b) {
		t.Errorf("lm-eval files of the upgraded store: %d pairs, want the 0-shot variant's %d (the 3-shot one's prompts are not stored)", len(r), len(b))
	}
	for p := range r {
		if !b[p] {
			t.Errorf("lm-eval files pair a prompt with a response made for another: %q → %q", tail(p[0]), p[1])
		}
	}
}

// TestEarlierStoreAdopted: an earlier tally's store of one variant of a
// task, run again with the same flags by this tally, keeps one task: the
// earlier task's rows become the run's variant (its generations reused,
// its figures the same), where a run with other prompts keeps the two
// apart.
func TestEarlierStoreAdopted(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	dir := t.TempDir()
	data := variantData(t, dir, 0)
	db := filepath.Join(dir, "s.db")
	common := []string{"--model", "demo", "--tasks", "drop", "--data", data, "--limit", "16", "--store", db}
	var first, again, zero variantRun
	runJSONInto(t, &first, 0, append([]string{"run"}, common...)...)
	makeEarlierStore(t, db)
	stdout, stderr, code := runStatus(t, append([]string{"run", "--json"}, common...)...)
	if code != 0 || !strings.Contains(stderr, "is now stored as this run's variant") || json.Unmarshal([]byte(stdout), &again) != nil {
		t.Fatalf("run again on the earlier store: status %d\n%s", code, stderr)
	}
	if again.Reused != 16 || mustJSON(t, again.Scores) != mustJSON(t, first.Scores) {
		t.Errorf("run again: %d reused, scores %v; want 16 and the first run's %v", again.Reused, again.Scores, first.Scores)
	}
	rows := reportRows(t, "report", "--store", db)
	checkRowsMatch(t, rows, "drop", first, 16)
	for _, r := range rows {
		if r.Task != "drop" {
			t.Errorf("row of task %q: the earlier task was not adopted", r.Task)
		}
	}
	runJSONInto(t, &zero, 0, append([]string{"run", "--fewshot", "0"}, common...)...)
	var labels []string
	for _, r := range reportRows(t, "report", "--store", db) {
		if !slices.Contains(labels, r.Task) {
			labels = append(labels, r.Task)
		}
	}
	slices.Sort(labels)
	if !slices.Equal(labels, []string{"drop (0-shot)", "drop (3-shot)"}) {
		t.Errorf("after a 0-shot run: tasks %v", labels)
	}
}

// makeEarlierStore turns a store of the issue's two runs into the one an
// earlier tally (schema 6) left: every task under its name, one prompt per
// task and sample id (the last run's), no variants table.
func makeEarlierStore(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var last string
	if err := db.QueryRow(`SELECT task FROM generations WHERE run_id=(SELECT MAX(id) FROM runs WHERE command='run') LIMIT 1`).Scan(&last); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`DELETE FROM samples WHERE task<>'` + last + `'`,
		`UPDATE samples SET task='drop'`, `UPDATE generations SET task='drop'`, `UPDATE scores SET task='drop'`,
		`UPDATE score_digests SET task='drop'`, `UPDATE packed_scores SET task='drop'`,
		// An earlier tally's packed rows carry no seal (seal.go: a seal is a
		// 5-byte head), and its store no mark of having sealed them.
		`UPDATE packed_scores SET scores = substr(scores, 6)`, `PRAGMA application_id = 0`,
		`DROP TABLE variants`, `DROP INDEX generations_fp_task`, `ALTER TABLE samples DROP COLUMN seal`, `PRAGMA user_version = 6`, `PRAGMA wal_checkpoint(TRUNCATE)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// tail abbreviates a prompt for messages.
func tail(s string) string {
	if len(s) > 60 {
		return "…" + s[len(s)-60:]
	}
	return s
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDropAnswerTypes (issue 33): the HTML report's DROP view types the
// demo's answers as DROP's gold does: its year answers (the gold's date
// fields) are dates, not numbers.
func TestDropAnswerTypes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	db := filepath.Join(t.TempDir(), "d.db")
	runJSON(t, "demo", "--store", db)
	page := runJSON(t, "report", "--store", db, "--format", "html")
	row := regexp.MustCompile(`<th>number</th><th>date</th><th>span</th></tr>\s*<tr><td><code>[^<]*</code></td><td class="n">[^<]*<small>\(n=(\d+)\)</small></td><td class="n">[^<]*<small>\(n=(\d+)\)</small></td>`).FindStringSubmatch(page)
	if row == nil {
		t.Fatal("no DROP answer-type table in the page")
	}
	if row[2] == "0" {
		t.Errorf("DROP view: number n=%s, date n=%s; want the demo's year answers typed as dates", row[1], row[2])
	}
}
