package store

import (
	"context"
	"testing"
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
