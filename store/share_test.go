package store

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestReadOnly checks finding 5 of issue 11: read-only opening never
// creates a store, works on a read-only file and directory, and never
// writes (not even the schema version).
func TestReadOnly(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	missing := filepath.Join(dir, "typo.db")
	_, err := OpenReadOnly(ctx, missing)
	if err == nil || !errors.Is(err, ErrNoStore) || !strings.Contains(err.Error(), missing) {
		t.Fatalf("missing store: %v", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("read-only open created %s", missing)
	}

	sub := filepath.Join(dir, "ro")
	os.Mkdir(sub, 0o755)
	path := filepath.Join(sub, "t.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	g := gen(1)
	if err := s.PutGenerations(ctx, []Generation{g}, []Score{{GenKey: g.Key, Task: "t", SampleID: "1", SettingKey: ".", Budget: 8, Metric: "em", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	os.Chmod(path, 0o444)
	os.Chmod(sub, 0o555)
	t.Cleanup(func() { os.Chmod(sub, 0o755); os.Chmod(path, 0o644) })
	if f, err := os.Create(filepath.Join(sub, "probe")); err == nil {
		// root ignores the modes: the checks below still show that
		// nothing is written.
		f.Close()
		os.Remove(f.Name())
		t.Log("permissions not enforced for this user; checking that nothing is written")
	}
	before, _ := os.ReadFile(path)
	r, err := OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatalf("read-only store: %v", err)
	}
	defer r.Close()
	got, err := r.ScoresFor(ctx, []string{g.Key})
	if err != nil || len(got) != 1 || got[0].Value != 1 {
		t.Fatalf("read %v %v", got, err)
	}
	if err := r.PutScores(ctx, got); err == nil {
		t.Error("a read-only store accepted a write")
	}
	r.Close()
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Error("a read-only open changed the store file")
	}
}

// TestReadOnlyOlderSchema: a read-only open of a store with an older
// schema says so, names the command that upgrades it, and leaves it as it
// was.
func TestReadOnlyOlderSchema(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "t.db")
	storeAtVersion(t, path, 1)
	_, err := OpenReadOnly(ctx, path)
	if err == nil || !strings.Contains(err.Error(), "older") {
		t.Fatalf("older schema: %v", err)
	}
}

// TestReadOnlyReadableOlderSchema: a store of schema 2 (before the workers
// table) is read as it is by read-only commands, with no worker listed,
// and left unchanged.
func TestReadOnlyReadableOlderSchema(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "t.db")
	storeAtVersion(t, path, 2)
	before, _ := os.ReadFile(path)
	r, err := OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatalf("schema 2 read-only: %v", err)
	}
	v, err := r.Workers(ctx, "")
	if err != nil || len(v.Active) != 0 {
		t.Errorf("workers of a schema-2 store: %+v %v", v, err)
	}
	r.Close()
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Error("a read-only open changed the store file")
	}
}

// TestConcurrentMigrations checks finding 6 of issue 11: many openers of a
// new store at once all succeed and migrate it once.
func TestConcurrentMigrations(t *testing.T) { engines(t, testConcurrentMigrations) }

func testConcurrentMigrations(t *testing.T, newPath func() string) {
	ctx := context.Background()
	path := newPath()
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Open(ctx, path)
			if err == nil {
				s.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("opener %d: %v", i, err)
		}
	}
}

// TestClaims: a key held by a live owner is not claimed by another; an
// expired claim is taken over; release frees it.
func TestClaims(t *testing.T) {
	engines(t, func(t *testing.T, newPath func() string) { testClaims(t, openAt(t, newPath())) })
}

func testClaims(t *testing.T, s *Store) {
	ctx := context.Background()
	keys := []string{"a", "b", "c"}
	r, err := s.Claim(ctx, "p1", keys[:2], 0, time.Hour)
	if err != nil || len(r.Claimed) != 2 || r.TakenOver != 0 {
		t.Fatalf("p1 claim %+v %v", r, err)
	}
	r, err = s.Claim(ctx, "p2", keys, 0, time.Hour)
	if err != nil || len(r.Claimed) != 1 || r.Claimed[0] != "c" {
		t.Fatalf("p2 claim %+v %v", r, err)
	}
	// p1 "dies": its lease is made to lapse.
	if err := s.Renew(ctx, "p1", -time.Second); err != nil {
		t.Fatal(err)
	}
	r, err = s.Claim(ctx, "p2", keys, 0, time.Hour)
	if err != nil || len(r.Claimed) != 3 || r.TakenOver != 2 {
		t.Fatalf("take over %+v %v", r, err)
	}
	if err := s.Release(ctx, "p2", []string{"a"}); err != nil {
		t.Fatal(err)
	}
	who, _ := s.Claimants(ctx, keys)
	if who["a"] != "" || who["b"] != "p2" {
		t.Fatalf("claimants %v", who)
	}
	s.Release(ctx, "p2", nil)
	if n, _ := s.Counts(ctx); n["claims"] != 0 {
		t.Fatalf("claims left %v", n)
	}
}

// TestScoresReplaceAndDigest: writing the scores of a (sample, setting)
// replaces all of its stored scores (a dropped metric disappears), digests
// round-trip, and NaN is stored as NULL and read back as NaN.
func TestScoresReplaceAndDigest(t *testing.T) {
	engines(t, func(t *testing.T, newPath func() string) { testScoresReplaceAndDigest(t, openAt(t, newPath())) })
}

func testScoresReplaceAndDigest(t *testing.T, s *Store) {
	ctx := context.Background()
	g := gen(1)
	base := Score{GenKey: g.Key, Task: "t", SampleID: "1", SettingKey: ".", Budget: 8, Digest: "d1"}
	em, f1 := base, base
	em.Metric, em.Value = "em", 1
	f1.Metric, f1.Value = "f1", math.NaN()
	if err := s.PutGenerations(ctx, []Generation{g}, []Score{em, f1}); err != nil {
		t.Fatal(err)
	}
	d, _ := s.ScoreDigests(ctx, "", []string{g.Key})
	if dg, _ := d.Get(base.Key()); dg != "d1" {
		t.Fatalf("digests %v", d)
	}
	got, _ := s.ScoresFor(ctx, []string{g.Key})
	for _, x := range got {
		if x.Metric == "f1" && !math.IsNaN(x.Value) {
			t.Errorf("NaN read back as %v", x.Value)
		}
	}
	em.Digest = "d2"
	if err := s.PutScores(ctx, []Score{em}); err != nil {
		t.Fatal(err)
	}
	got, _ = s.ScoresFor(ctx, []string{g.Key})
	if len(got) != 1 || got[0].Metric != "em" || got[0].Digest != "d2" {
		t.Fatalf("after replace %+v", got)
	}
}

// TestWorkersAndClaims: claims are stamped by the database's clock, a
// registered worker and the claims it holds are listed, a peer's live
// claims are left alone and its expired ones taken over, on both engines.
func TestWorkersAndClaims(t *testing.T) { engines(t, testWorkersAndClaims) }

func testWorkersAndClaims(t *testing.T, newPath func() string) {
	ctx := context.Background()
	s, err := Open(ctx, newPath())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now, err := s.Now(ctx)
	if err != nil || now.Sub(time.Now()).Abs() > time.Minute {
		t.Fatalf("database clock %v (%v), local %v", now, err, time.Now())
	}
	keys := []string{"a", "b", "c", "d", "e", "a"}
	for _, w := range []Worker{{ID: "w1", Host: "h1", PID: 1, Model: "m", Fingerprint: "fp", Lease: time.Minute},
		{ID: "w2", Host: "h2", PID: 2, Model: "m", Fingerprint: "fp", Lease: 40 * time.Millisecond}} {
		if err := s.RegisterWorker(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	r1, err := s.Claim(ctx, "w1", keys, 2, time.Minute)
	if err != nil || !reflect.DeepEqual(r1.Claimed, []string{"a", "b"}) {
		t.Fatalf("w1 claimed %v (%v), want a b", r1.Claimed, err)
	}
	r2, err := s.Claim(ctx, "w2", keys, 0, 40*time.Millisecond)
	if err != nil || !reflect.DeepEqual(r2.Claimed, []string{"c", "d", "e"}) {
		t.Fatalf("w2 claimed %v (%v), want c d e", r2.Claimed, err)
	}
	v, err := s.Workers(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Active) != 2 || v.Claimed != 5 || v.Active[0].ID != "w1" || v.Active[0].Claims != 2 || !v.Active[0].Live ||
		v.Active[0].Host != "h1" || v.Active[0].LeaseExpiry.Before(v.Now) {
		t.Errorf("workers %+v", v)
	}
	time.Sleep(80 * time.Millisecond) // w2's lease and heartbeat lapse
	r3, err := s.Claim(ctx, "w3", keys, 0, time.Minute)
	if err != nil || !reflect.DeepEqual(r3.Claimed, []string{"c", "d", "e"}) || r3.TakenOver != 3 {
		t.Fatalf("w3 claimed %+v (%v), want c d e taken over", r3, err)
	}
	if err := s.Renew(ctx, "w1", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, "w1", nil); err != nil {
		t.Fatal(err)
	}
	if err := s.EndWorker(ctx, "w1", WorkerDone, 2); err != nil {
		t.Fatal(err)
	}
	v, err = s.Workers(ctx, "fp")
	if err != nil {
		t.Fatal(err)
	}
	// w1 left, w2 died (no claims left), w3 never registered (not of fp).
	if len(v.Active) != 0 || v.Finished != 1 || v.Dead != 1 {
		t.Errorf("after: %+v", v)
	}
	v, _ = s.Workers(ctx, "")
	if len(v.Active) != 1 || v.Active[0].ID != "w3" || v.Active[0].Claims != 3 || v.Active[0].Live {
		t.Errorf("unfiltered after: %+v", v)
	}
}

// TestClaimUnstored: ClaimUnstored skips a key whose generation is stored
// (a peer finished it), Claim does not, on both engines.
func TestClaimUnstored(t *testing.T) { engines(t, testClaimUnstored) }

func testClaimUnstored(t *testing.T, newPath func() string) {
	ctx := context.Background()
	s, err := Open(ctx, newPath())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	g := gen(1)
	if err := s.PutGenerations(ctx, []Generation{g}, nil); err != nil {
		t.Fatal(err)
	}
	r, err := s.ClaimUnstored(ctx, "w", []string{g.Key, "other"}, 0, time.Minute)
	if err != nil || !reflect.DeepEqual(r.Claimed, []string{"other"}) {
		t.Errorf("ClaimUnstored: %v %v, want only the unstored key", r.Claimed, err)
	}
	r, err = s.Claim(ctx, "w", []string{g.Key}, 0, time.Minute)
	if err != nil || !reflect.DeepEqual(r.Claimed, []string{g.Key}) {
		t.Errorf("Claim: %v %v, want the stored key too", r.Claimed, err)
	}
}

// TestCommitReplacesScores: committing a generation with its scores
// replaces every score stored for its (sample, setting, budget) — a metric
// no longer given disappears — and releases the owner's claim, on both
// engines.
func TestCommitReplacesScores(t *testing.T) { engines(t, testCommitReplacesScores) }

func testCommitReplacesScores(t *testing.T, newPath func() string) {
	ctx := context.Background()
	s, err := Open(ctx, newPath())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	g := gen(1)
	sc := func(metric string, v float64) Score {
		return Score{GenKey: g.Key, Task: "t", SampleID: "1", Setting: "dot", SettingKey: ".", Budget: 8, Metric: metric, Value: v, Prediction: "12"}
	}
	if err := s.PutGenerations(ctx, []Generation{g}, []Score{sc("em", 1), sc("f1", 0.5)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(ctx, "w", []string{g.Key}, 0, time.Minute); err != nil {
		t.Fatal(err)
	}
	g.Text = "13"
	if err := s.CommitGenerations(ctx, "w", []Generation{g, g}, []Score{sc("f1", 0.25), sc("len", math.NaN()), sc("len", 2)}); err != nil {
		t.Fatal(err)
	}
	got, err := s.ScoresFor(ctx, []string{g.Key})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]float64{}
	for _, x := range got {
		m[x.Metric] = x.Value
	}
	if len(m) != 2 || m["f1"] != 0.25 || m["len"] != 2 {
		t.Errorf("scores after commit: %v, want f1 0.25 and len 2 only", m)
	}
	gs, _ := s.Generations(ctx, "", []string{g.Key})
	if gs[g.Key].Text != "13" {
		t.Errorf("generation %+v", gs[g.Key])
	}
	if who, _ := s.Claimants(ctx, []string{g.Key}); len(who) != 0 {
		t.Errorf("claims after commit: %v", who)
	}
}

func TestPassedOver(t *testing.T) {
	for _, c := range []struct {
		name    string
		keys    []string
		claimed []string
		want    []string
	}{
		{"none claimed", []string{"a", "b"}, nil, nil},
		{"first claimed", []string{"a", "b", "c"}, []string{"a"}, nil},
		{"gaps before the last claim", []string{"a", "b", "c", "d", "e"}, []string{"b", "d"}, []string{"a", "c"}},
		{"all claimed", []string{"a", "b"}, []string{"a", "b"}, nil},
	} {
		if got := PassedOver(c.keys, c.claimed); strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%s: PassedOver = %q, want %q", c.name, got, c.want)
		}
	}
}

// TestClaimUnstoredRead: ClaimUnstoredRead claims the unstored keys, passes
// over the stored ones and reads them (with the whole generation), and
// reads every key's generation when nothing could be claimed, on both
// engines.
func TestClaimUnstoredRead(t *testing.T) { engines(t, testClaimUnstoredRead) }

func testClaimUnstoredRead(t *testing.T, newPath func() string) {
	ctx := context.Background()
	s, err := Open(ctx, newPath())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	g1, g2 := gen(1), gen(2)
	if err := s.PutGenerations(ctx, []Generation{g1, g2}, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name        string
		keys        []string
		limit       int
		wantClaimed []string
		wantRead    []string
	}{
		{"stored keys passed over are read", []string{g1.Key, "a", g2.Key, "b"}, 0, []string{"a", "b"}, []string{g1.Key, g2.Key}},
		{"nothing to claim: every key is read", []string{g1.Key, g2.Key}, 0, nil, []string{g1.Key, g2.Key}},
		{"own claims are kept", []string{"a", g1.Key}, 1, []string{"a"}, nil},
	} {
		r, got, err := s.ClaimUnstoredRead(ctx, "w", c.keys, c.limit, time.Minute)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if strings.Join(r.Claimed, ",") != strings.Join(c.wantClaimed, ",") {
			t.Errorf("%s: claimed %q, want %q", c.name, r.Claimed, c.wantClaimed)
		}
		for _, k := range c.wantRead {
			want := g1
			if k == g2.Key {
				want = g2
			}
			if !reflect.DeepEqual(got[k], want) {
				t.Errorf("%s: read %+v for %s, want %+v", c.name, got[k], k, want)
			}
		}
		for k := range got {
			if k == "a" || k == "b" {
				t.Errorf("%s: read %s, which is not stored", c.name, k)
			}
		}
	}
	if _, _, err := s.ClaimUnstoredRead(ctx, "w", nil, 0, time.Minute); err != nil {
		t.Errorf("no keys: %v", err)
	}
}
