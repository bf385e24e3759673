package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"tally/tasks/variant"
)

// legacyRunDef is a run of an earlier tally: its flags, and the samples
// it generated (by id) with their prompts.
type legacyRunDef struct {
	config string
	gens   []string
	prompt func(id string) string
}

// threeShot and zeroShot are the prompts of a 3-shot and a 0-shot run.
func threeShot(id string) string { return "3-shot " + id }
func zeroShot(id string) string  { return "0-shot " + id }

// makeLegacyStore writes, at newPath, the store an earlier tally (schema
// 6: no variants, every task stored by name) leaves after the given runs
// of task "drop" over samples a, b, c (indexes 0, 1, 2): each run stores
// the prompts of the samples it selects (selected: by id; nil, all) and
// generates the ones listed, as the earlier tally did.
func makeLegacyStore(t *testing.T, path string, runs []legacyRunDef, selected [][]string) {
	t.Helper()
	ctx := context.Background()
	s := openAt(t, path)
	for i, r := range runs {
		var id int64
		if err := s.db.QueryRowContext(ctx, `INSERT INTO runs(started_at,command,config,version,host,backend,model,fingerprint,status)
			VALUES(?,?,?,?,?,?,?,?,?) RETURNING id`, fmt.Sprintf("2026-01-0%dT00:00:00Z", i+1), "run", r.config, "old", "h", "gomlx", "demo", "fp", RunDone).Scan(&id); err != nil {
			t.Fatal(err)
		}
		var samples []Sample
		for idx, sid := range []string{"a", "b", "c"} {
			if selected[i] != nil && !slices.Contains(selected[i], sid) {
				continue
			}
			samples = append(samples, Sample{Task: "drop", ID: sid, Prompt: r.prompt(sid), Refs: json.RawMessage(`[["x"]]`),
				Metadata: json.RawMessage(fmt.Sprintf(`{"metadata":null,"share_key":"","index":%d}`, idx))})
		}
		if err := s.PutSamples(ctx, samples); err != nil {
			t.Fatal(err)
		}
		for _, sid := range r.gens {
			g := gen(0)
			g.Key, g.Task, g.SampleID, g.RunID = "k-"+r.prompt(sid), "drop", sid, id
			sc := Score{GenKey: g.Key, Task: "drop", SampleID: sid, Setting: "dot", SettingKey: ".", Budget: 8, Metric: "em", Value: float64(i), Prediction: "p", Digest: "d"}
			if err := s.PutGenerations(ctx, []Generation{g}, []Score{sc}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, q := range []string{`DROP TABLE variants`, `DROP INDEX generations_fp_task`, `ALTER TABLE samples DROP COLUMN seal`} { // migration 7's
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	setSchemaVersion(t, s, variantsSchema-1)
	if s.db.eng == postgresEngine {
		setSchemaVersion(t, s, variantsSchemaPG-1)
	}
	s.Close()
}

// checkReadOnlyLegacy checks a read-only open of an earlier store that
// needs splitting: SQLite's reads an upgraded copy, telling so, and leaves
// the file as it was; PostgreSQL's is refused, naming tally upgrade.
func checkReadOnlyLegacy(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	before, _ := os.ReadFile(path)
	r, err := OpenReadOnly(ctx, path)
	if IsPostgres(path) {
		if err == nil || !strings.Contains(err.Error(), "tally upgrade") || !strings.Contains(err.Error(), "drop") {
			t.Fatalf("read-only open of an earlier PostgreSQL store mixing variants: %v, want a refusal naming tally upgrade", err)
		}
		return
	}
	if err != nil {
		t.Fatalf("read-only open of an earlier store mixing variants: %v", err)
	}
	recs, err := r.Variants(ctx)
	if r.Upgraded() == nil || !strings.Contains(r.Upgraded().Error(), "tally upgrade") || err != nil || len(recs) == 0 {
		t.Errorf("read-only open: upgraded %v, variants %v %v; want an upgraded copy, saying so", r.Upgraded(), recs, err)
	}
	dir := r.copyDir
	r.Close()
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("a read-only open changed the store file")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the upgraded copy %s is left after Close: %v", dir, err)
	}
}

// TestLegacyVariantsSplit (issue 33): a store an earlier tally wrote after
// a 3-shot run of all three samples and a 0-shot run of the first two is
// read by read-only opens through an upgraded copy (never mixing the two),
// and a writing open splits it: each variant under a key of its own with its generations
// and scores, each sample's stored prompt with the generation it was made
// for (c's is still the 3-shot one: the 0-shot run did not select c), and
// the prompts a later run replaced marked not stored, never given to the
// other variant's generations.
func TestLegacyVariantsSplit(t *testing.T) { engines(t, testLegacyVariantsSplit) }

func testLegacyVariantsSplit(t *testing.T, newPath func() string) {
	ctx := context.Background()
	path := newPath()
	makeLegacyStore(t, path, []legacyRunDef{
		{`{"tasks":["drop"],"set":[]}`, []string{"a", "b", "c"}, threeShot},
		{`{"tasks":["drop"],"set":["fewshot=0"],"limit":2}`, []string{"a", "b"}, zeroShot},
	}, [][]string{nil, {"a", "b"}})
	checkReadOnlyLegacy(t, path)
	s := openAt(t, path)
	recs, err := s.Variants(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("variants %v, want 2", recs)
	}
	var kThree, kZero string
	for k, r := range recs {
		if r.Spec.Legacy == nil || variant.Name(k) != "drop" || k == "drop" {
			t.Fatalf("variant %s: %+v", k, r)
		}
		if strings.Contains(r.Spec.Legacy.Config, "fewshot=0") {
			kZero = k
		} else {
			kThree = k
		}
	}
	if kZero == "" || kThree == "" || recs[kZero].Spec.Legacy.Prompts != true || recs[kThree].Spec.Legacy.Prompts != false {
		t.Fatalf("variants %+v", recs)
	}
	prompts := func(task string) map[string]string {
		got, err := s.Samples(ctx, task, "")
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for id, smp := range got {
			out[id] = smp.Prompt
		}
		return out
	}
	if got, want := prompts(kZero), map[string]string{"a": "0-shot a", "b": "0-shot b"}; !maps.Equal(got, want) {
		t.Errorf("0-shot variant's prompts %v, want %v", got, want)
	}
	if got, want := prompts(kThree), map[string]string{"a": "", "b": "", "c": "3-shot c"}; !maps.Equal(got, want) {
		t.Errorf("3-shot variant's prompts %v, want %v (a and b replaced: not stored)", got, want)
	}
	var entries []Entry
	if err := s.EachEntry(ctx, Filter{}, func(e Entry) error { entries = append(entries, e); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(entries) != 5 {
		t.Fatalf("%d scores, want 5", len(entries))
	}
	for _, e := range entries {
		want := kThree
		if e.Value == 1 {
			want = kZero
		}
		if e.Task != want || !strings.HasPrefix(e.GenKey, map[string]string{kThree: "k-3-shot", kZero: "k-0-shot"}[want]) {
			t.Errorf("score %+v under %s, want %s", e, e.Task, want)
		}
	}
	s.Close()
	if r, err := OpenReadOnly(ctx, path); err != nil {
		t.Errorf("read-only open after the split: %v", err)
	} else {
		r.Close()
	}
}

// TestLegacyOneVariant: an earlier tally's store whose task holds one
// variant is read as it is by read-only opens, and a writing open records
// the variant under the task's name, moving nothing.
func TestLegacyOneVariant(t *testing.T) { engines(t, testLegacyOneVariant) }

func testLegacyOneVariant(t *testing.T, newPath func() string) {
	ctx := context.Background()
	path := newPath()
	makeLegacyStore(t, path, []legacyRunDef{
		{`{"tasks":["drop"],"set":[]}`, []string{"a", "b"}, threeShot},
		{`{"tasks":["drop"],"set":[],"command":"rerun"}`, []string{"c"}, threeShot},
	}, [][]string{nil, nil})
	r, err := OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatalf("read-only open of a one-variant store: %v", err)
	}
	if recs, err := r.Variants(ctx); err != nil || len(recs) != 0 {
		t.Errorf("variants before the migration: %v %v", recs, err)
	}
	r.Close()
	s := openAt(t, path)
	recs, err := s.Variants(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rec, ok := recs["drop"]; len(recs) != 1 || !ok || rec.Spec.Legacy == nil || !rec.Spec.Legacy.Prompts {
		t.Fatalf("variants %+v, want drop alone, its prompts stored", recs)
	}
	tasks, err := s.Tasks(ctx)
	if err != nil || !slices.Equal(tasks, []string{"drop"}) {
		t.Errorf("tasks %v %v", tasks, err)
	}
}

// TestLegacyReplacedPrompts: when a later run given other settings stored
// the prompts of samples without generating them (interrupted), the
// earlier generations keep their scores but not those prompts.
func TestLegacyReplacedPrompts(t *testing.T) { engines(t, testLegacyReplacedPrompts) }

func testLegacyReplacedPrompts(t *testing.T, newPath func() string) {
	ctx := context.Background()
	path := newPath()
	makeLegacyStore(t, path, []legacyRunDef{
		{`{"tasks":["drop"],"set":[]}`, []string{"a", "b", "c"}, threeShot},
		{`{"tasks":["drop"],"set":["fewshot=0"],"samples":["b"]}`, nil, zeroShot},
	}, [][]string{nil, {"b"}})
	checkReadOnlyLegacy(t, path)
	s := openAt(t, path)
	got, err := s.Samples(ctx, "drop", "")
	if err != nil {
		t.Fatal(err)
	}
	if got["a"].Prompt != "3-shot a" || got["b"].Prompt != "" || got["c"].Prompt != "3-shot c" {
		t.Errorf("prompts %+v, want b's not stored", got)
	}
	recs, _ := s.Variants(ctx)
	if rec := recs["drop"]; rec.Spec.Legacy == nil || rec.Spec.Legacy.Prompts {
		t.Errorf("variant %+v, want its prompts marked as not all stored", rec)
	}
}

// TestVariantRecordSealed: a variant's record whose bytes changed (a bit
// flipped in its JSON, valid or not) is named as damage, never read.
func TestVariantRecordSealed(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	rec := variant.New(variant.Spec{Task: "drop", Fields: map[string]string{"fewshot": "3"}}, variant.Info{FewShot: 3})
	if err := s.PutVariants(ctx, []variant.Record{rec}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Variants(ctx); err != nil || got[rec.Key].Info.FewShot != 3 {
		t.Fatalf("Variants = %v, %v", got, err)
	}
	for _, tc := range []struct{ name, from, to string }{
		{"a number changed", `"fewshot":3`, `"fewshot":2`},
		{"JSON broken", `"fewshot":3`, `"fewshot"3`},
	} {
		if _, err := s.db.ExecContext(ctx, `UPDATE variants SET record=replace(record, ?, ?)`, tc.from, tc.to); err != nil {
			t.Fatal(err)
		}
		_, err := s.Variants(ctx)
		var d *DamagedError
		if !errors.As(err, &d) || !strings.Contains(err.Error(), s.Path()) {
			t.Errorf("%s: Variants error %v, want a DamagedError naming the store", tc.name, err)
		}
		if _, err := s.db.ExecContext(ctx, `UPDATE variants SET record=replace(record, ?, ?)`, tc.to, tc.from); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAdoptLegacy: an earlier tally's task becomes a variant key when the
// prompts it stores are the variant's (every shared id, at least one), and
// only then, and only while nothing is stored under the key.
func TestAdoptLegacy(t *testing.T) { engines(t, testAdoptLegacy) }

func testAdoptLegacy(t *testing.T, newPath func() string) {
	ctx := context.Background()
	path := newPath()
	makeLegacyStore(t, path, []legacyRunDef{{`{"tasks":["drop"],"set":[]}`, []string{"a", "b"}, threeShot}}, [][]string{nil})
	s := openAt(t, path)
	key := variant.New(variant.Spec{Task: "drop", Fields: map[string]string{"fewshot": "3"}}, variant.Info{}).Key
	for _, tc := range []struct {
		name    string
		prompts map[string]string
		want    bool
	}{
		{"another prompt", map[string]string{"a": "3-shot a", "b": "0-shot b"}, false},
		{"no sample shared", map[string]string{"z": "3-shot z"}, false},
		{"the same prompts", map[string]string{"a": "3-shot a", "d": "3-shot d"}, true},
		{"again", map[string]string{"a": "3-shot a"}, false},
	} {
		got, err := s.AdoptLegacy(ctx, "drop", key, func() map[string]string { return tc.prompts })
		if err != nil || got != tc.want {
			t.Fatalf("%s: adopted %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	tasks, err := s.Tasks(ctx)
	if err != nil || !slices.Equal(tasks, []string{key}) {
		t.Errorf("tasks after adoption %v %v, want %s alone", tasks, err, key)
	}
	var entries []Entry
	if err := s.EachEntry(ctx, Filter{}, func(e Entry) error { entries = append(entries, e); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 || entries[0].Task != key || entries[1].Task != key {
		t.Errorf("scores after adoption: %d, first %+v", len(entries), entries[0])
	}
	if recs, _ := s.Variants(ctx); len(recs) != 0 {
		t.Errorf("records after adoption %v, want the earlier task's gone", recs)
	}
}

// TestSampleSealed: a stored sample whose references, prompt or metadata
// changed under it is named as damage by every read that reads what
// changed, never handed over; a read that cuts the metadata short still
// checks the references.
func TestSampleSealed(t *testing.T) { engines(t, testSampleSealed) }

func testSampleSealed(t *testing.T, newPath func() string) {
	ctx := context.Background()
	s := openAt(t, newPath())
	sample := Sample{Task: "t", ID: "a", Prompt: "Q: 2+2?", Refs: json.RawMessage(`["4"]`), Metadata: json.RawMessage(`{"metadata":null,"share_key":"","doc":{"q":"2+2"}}`)}
	if err := s.PutSamples(ctx, []Sample{sample}); err != nil {
		t.Fatal(err)
	}
	const cut = `{"metadata":null,`
	reads := map[string]func() error{
		"Samples":      func() error { _, err := s.Samples(ctx, "t", ""); return err },
		"Samples, cut": func() error { _, err := s.Samples(ctx, "t", cut); return err },
		"Sample":       func() error { _, _, err := s.Sample(ctx, "t", "a"); return err },
		"EachScoringSample": func() error {
			return s.EachScoringSample(ctx, "t", "", func(string, []byte, []byte) error { return nil })
		},
		"EachScoringSample, cut": func() error {
			return s.EachScoringSample(ctx, "t", cut, func(string, []byte, []byte) error { return nil })
		},
	}
	for name, read := range reads {
		if err := read(); err != nil {
			t.Fatalf("%s of a sound sample: %v", name, err)
		}
	}
	for _, tc := range []struct {
		col, from, to string
		missedBy      []string // reads that do not read what changed
	}{
		{"refs", `["4"]`, `["5"]`, nil},
		{"prompt", `Q: 2+2?`, `Q: 2+3?`, []string{"EachScoringSample", "EachScoringSample, cut"}},
		{"metadata", `"q":"2+2"`, `"q":"2+3"`, []string{"Samples, cut", "EachScoringSample, cut"}},
	} {
		set := func(from, to string) {
			q := `UPDATE samples SET ` + tc.col + `=replace(` + tc.col + `, ?, ?)`
			if s.db.eng == postgresEngine && tc.col == "prompt" {
				q = `UPDATE samples SET prompt=convert_to(replace(convert_from(prompt, 'UTF8'), ?, ?), 'UTF8')`
			}
			if _, err := s.db.ExecContext(ctx, q, from, to); err != nil {
				t.Fatal(err)
			}
		}
		set(tc.from, tc.to)
		for name, read := range reads {
			err := read()
			var d *DamagedError
			switch missed := slices.Contains(tc.missedBy, name); {
			case missed && err != nil:
				t.Errorf("%s changed: %s, which does not read it, failed: %v", tc.col, name, err)
			case !missed && (!errors.As(err, &d) || !strings.Contains(err.Error(), s.Path())):
				t.Errorf("%s changed: %s gave %v, want a DamagedError naming the store", tc.col, name, err)
			}
		}
		set(tc.to, tc.from)
	}
}
