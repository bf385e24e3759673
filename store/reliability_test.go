package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestFailedAttemptKeepsSuccess (issue 23, finding 1): a failed attempt
// (finish "error" or "context") never replaces a stored generation that
// succeeded, whichever write path stores it; a success replaces a failure,
// and a failure replaces a failure (the newest reason is kept).
func TestFailedAttemptKeepsSuccess(t *testing.T) { engines(t, testFailedAttemptKeepsSuccess) }

func testFailedAttemptKeepsSuccess(t *testing.T, newPath func() string) {
	ctx := context.Background()
	s := openAt(t, newPath())
	put := map[string]func(g Generation) error{
		"put":    func(g Generation) error { return s.PutGenerations(ctx, []Generation{g}, nil) },
		"commit": func(g Generation) error { return s.CommitGenerations(ctx, "owner", []Generation{g}, nil) },
		// A store copied in (tally import of an export).
		"copy": func(g Generation) error {
			src := openTemp(t)
			if err := src.PutGenerations(ctx, []Generation{g}, nil); err != nil {
				return err
			}
			_, err := src.Copy(ctx, s, "")
			return err
		},
	}
	for i, name := range []string{"put", "commit", "copy"} {
		write := put[name]
		good := gen(100 + i)
		good.Finish = "length"
		if err := write(good); err != nil {
			t.Fatal(err)
		}
		for _, finish := range []string{"error", "context"} {
			bad := good
			bad.Text, bad.IDs, bad.Offsets, bad.NTokens = good.Text+" more", nil, nil, 0
			bad.Finish, bad.Error = finish, "prompt (98 tokens) exceeds the model's context"
			if err := write(bad); err != nil {
				t.Fatal(err)
			}
			got := s.mustGeneration(t, good.Key)
			if got.Finish != "length" || got.Text != good.Text || got.NTokens != good.NTokens || got.Error != "" {
				t.Errorf("%s: a failed attempt (%s) replaced a stored success: %+v", name, finish, got)
			}
		}
		// A failure is replaced by the next attempt, failed or not.
		failed := gen(200 + i)
		failed.Finish, failed.Error = "error", "first"
		if err := write(failed); err != nil {
			t.Fatal(err)
		}
		failed.Error = "second"
		if err := write(failed); err != nil {
			t.Fatal(err)
		}
		if got := s.mustGeneration(t, failed.Key); got.Error != "second" {
			t.Errorf("%s: a failure was not replaced by a newer failure: %+v", name, got)
		}
		ok := gen(200 + i)
		if err := write(ok); err != nil {
			t.Fatal(err)
		}
		if got := s.mustGeneration(t, ok.Key); got.Finish != ok.Finish || got.Error != "" {
			t.Errorf("%s: a success did not replace a failure: %+v", name, got)
		}
		// A longer success replaces a shorter one (a continuation).
		longer := good
		longer.Text, longer.Continued, longer.Finish = good.Text+" and more", 1, "eos"
		if err := write(longer); err != nil {
			t.Fatal(err)
		}
		if got := s.mustGeneration(t, good.Key); got.Text != longer.Text || got.Finish != "eos" {
			t.Errorf("%s: a continuation did not replace the generation it extends: %+v", name, got)
		}
	}
}

// mustGeneration reads one stored generation.
func (s *Store) mustGeneration(t *testing.T, key string) Generation {
	t.Helper()
	got, err := s.Generations(context.Background(), "", []string{key})
	if err != nil {
		t.Fatal(err)
	}
	g, ok := got[key]
	if !ok {
		t.Fatalf("generation %s not stored", key)
	}
	return g
}

// TestRunLiveness (issue 23, finding 6): a run is recorded as running
// with a heartbeat, reads as dead once its heartbeat lapses (unless a live
// worker serves it), as running again when beaten, and as what it ended
// with once closed; EndStatus tells a signal from a failure.
func TestRunLiveness(t *testing.T) { engines(t, testRunLiveness) }

func testRunLiveness(t *testing.T, newPath func() string) {
	ctx := context.Background()
	s := openAt(t, newPath())
	id, err := s.StartRun(ctx, Run{Command: "run", Model: "m", Fingerprint: "fp", Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	status := func() string {
		t.Helper()
		runs, err := s.Runs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			if r.ID == id {
				return r.Status
			}
		}
		t.Fatalf("run %d not listed", id)
		return ""
	}
	if got := status(); got != RunRunning {
		t.Errorf("new run: %s", got)
	}
	lapse := func() {
		if _, err := s.db.ExecContext(ctx, `UPDATE runs SET heartbeat_at = heartbeat_at - 120000 WHERE id=?`, id); err != nil {
			t.Fatal(err)
		}
	}
	lapse()
	if got := status(); got != RunDead {
		t.Errorf("heartbeat lapsed: %s, want %s", got, RunDead)
	}
	if err := s.RegisterWorker(ctx, Worker{ID: "w", RunID: id, Lease: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if got := status(); got != RunRunning {
		t.Errorf("heartbeat lapsed, live worker: %s, want %s", got, RunRunning)
	}
	if err := s.EndWorker(ctx, "w", WorkerDone, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.BeatRun(ctx, id); err != nil {
		t.Fatal(err)
	}
	if got := status(); got != RunRunning {
		t.Errorf("beaten again: %s", got)
	}
	// A run recorded by an older tally has no heartbeat.
	if _, err := s.db.ExecContext(ctx, `UPDATE runs SET heartbeat_at = NULL WHERE id=?`, id); err != nil {
		t.Fatal(err)
	}
	if got := status(); got != RunDead {
		t.Errorf("no heartbeat, no live worker: %s, want %s", got, RunDead)
	}
	for _, st := range []string{RunFailed, RunInterrupted, RunDone} {
		if err := s.FinishRun(ctx, id, st, 0, 0, 0, nil); err != nil {
			t.Fatal(err)
		}
		if got := status(); got != st {
			t.Errorf("closed as %s: reads %s", st, got)
		}
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, RunDone},
		{context.Canceled, RunInterrupted},
		{fmt.Errorf("store generations: %w", errors.Join(errors.New("x"), context.Canceled)), RunInterrupted},
		{errors.New("database or disk is full (13)"), RunFailed},
	} {
		if got := EndStatus(tc.err); got != tc.want {
			t.Errorf("EndStatus(%v) = %s, want %s", tc.err, got, tc.want)
		}
	}
}

// TestStorageErrorsNamed (issue 23, finding 8): a write refused because
// the store became read-only under an open store is a StorageError that
// names the store and says it is read-only.
func TestStorageErrorsNamed(t *testing.T) { engines(t, testStorageErrorsNamed) }

func testStorageErrorsNamed(t *testing.T, newPath func() string) {
	ctx := context.Background()
	path := newPath()
	s := openAt(t, path)
	if s.Postgres() {
		// New connections to the database are read-only from now on.
		if _, err := s.db.ExecContext(ctx, `DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET default_transaction_read_only = on', current_database()); END $$`); err != nil {
			t.Fatal(err)
		}
		s.db.SetMaxIdleConns(0)
		s.db.SetMaxIdleConns(2)
	} else {
		s.db.SetMaxOpenConns(1)
		if _, err := s.db.ExecContext(ctx, `PRAGMA query_only = 1`); err != nil {
			t.Fatal(err)
		}
	}
	writes := map[string]func() error{
		"samples":     func() error { return s.PutSamples(ctx, []Sample{{Task: "t", ID: "1", Prompt: "p"}}) },
		"generations": func() error { return s.CommitGenerations(ctx, "o", []Generation{gen(1)}, nil) },
		"run":         func() error { _, err := s.StartRun(ctx, Run{Command: "run"}); return err },
	}
	for name, write := range writes {
		err := write()
		var se *StorageError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), "store "+s.Path()+" is read-only") {
			t.Errorf("%s on a read-only store: %v; want a StorageError naming store %s as read-only", name, err, s.Path())
		}
	}
}
