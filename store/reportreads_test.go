package store

import (
	"context"
	"strings"
	"testing"
)

// TestReportReadsRedactErrors: an error stored unredacted (by a tally
// older than redaction on write) is masked by the reads `tally report`
// makes of a store, FailedGenerations and EachGeneration, as it is by
// Generations.
func TestReportReadsRedactErrors(t *testing.T) { engines(t, testReportReadsRedactErrors) }

func testReportReadsRedactErrors(t *testing.T, newPath func() string) {
	ctx := context.Background()
	s := openAt(t, newPath())
	const secret = "sk-proj-0123456789abcdefABCDEF"
	g := gen(1)
	g.Finish, g.Error = "error", "HTTP 401"
	if err := s.PutGenerations(ctx, []Generation{g}, nil); err != nil {
		t.Fatal(err)
	}
	// What an older tally wrote: the server's message as it came.
	if _, err := s.db.ExecContext(ctx, `UPDATE generations SET error=? WHERE key=?`, "Incorrect API key provided: "+secret, g.Key); err != nil {
		t.Fatal(err)
	}
	reads := map[string]string{}
	failed, err := s.FailedGenerations(ctx, Filter{})
	if err != nil || len(failed) != 1 {
		t.Fatalf("FailedGenerations: %v %v", failed, err)
	}
	reads["FailedGenerations"] = failed[0].Error
	if err := s.EachGeneration(ctx, Filter{}, func(g Generation) error {
		reads["EachGeneration"] = g.Error
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Generations(ctx, "", []string{g.Key})
	if err != nil {
		t.Fatal(err)
	}
	reads["Generations"] = got[g.Key].Error
	for read, e := range reads {
		if strings.Contains(e, secret) || !strings.Contains(e, "Incorrect API key provided") {
			t.Errorf("%s: error %q, want the key masked", read, e)
		}
	}
}
