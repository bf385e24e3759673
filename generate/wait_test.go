package generate

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"tally/store"
)

// waitRecorder records the waits reported, and whether each came before
// any token was generated.
type waitRecorder struct {
	mu     sync.Mutex
	waits  []Wait
	tokens int
	early  int // waits reported before the first token
}

func (r *waitRecorder) Start(int)   {}
func (r *waitRecorder) SampleDone() {}
func (r *waitRecorder) Finish()     {}
func (r *waitRecorder) Tokens(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tokens += n
}
func (r *waitRecorder) Waiting(w Wait) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.waits = append(r.waits, w)
	if r.tokens == 0 {
		r.early++
	}
}

// TestWaitingOnDeadPeerSaysSo is item 4 of issue 26: after an interrupted
// run, the next one waited on the dead process's claims showing only an
// ETA, and said it took them over afterwards. While it waits, it now says
// whose claims it waits for, that the process is gone, and when the lease
// ends.
func TestWaitingOnDeadPeerSaysSo(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	be := &fakeModel{slots: 2}
	p, err := MakePlan(ctx, st, be, []*Job{newJob(6, 8, dot)})
	if err != nil {
		t.Fatal(err)
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Skipf("no `true` to run: %v", err)
	}
	host, _ := os.Hostname()
	const dead = "old-run/1/dead"
	lease := 1500 * time.Millisecond
	if err := st.RegisterWorker(ctx, store.Worker{ID: dead, Host: host, PID: gone.Process.Pid, Fingerprint: p.Fingerprint, Lease: lease}); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, it := range p.Items {
		keys = append(keys, it.Key)
	}
	claimed, err := st.Claim(ctx, dead, keys, 0, lease)
	if err != nil || len(claimed.Claimed) != len(keys) {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	var rec waitRecorder
	sum, err := Execute(ctx, st, be, p, Options{Progress: &rec, Poll: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if sum.ClaimsTakenOver != len(keys) {
		t.Errorf("took over %d claims, want %d", sum.ClaimsTakenOver, len(keys))
	}
	if rec.early == 0 || len(rec.waits) == 0 {
		t.Fatalf("no wait reported before the dead process's claims were taken over (%d waits)", len(rec.waits))
	}
	w := rec.waits[0]
	if w.Generations != len(keys) || len(w.Holders) != 1 {
		t.Fatalf("wait %+v, want %d generations held by one owner", w, len(keys))
	}
	h := w.Holders[0]
	if h.ID != dead || !h.Stopped || h.Claims != len(keys) || h.LeaseEnd.IsZero() || h.LeaseEnd.Sub(w.Now) > lease {
		t.Errorf("holder %+v (now %v), want %s stopped, %d claims, lease ending within %v", h, w.Now, dead, len(keys), lease)
	}
	line := w.String()
	for _, want := range []string{"waiting for 6 generations", dead, "no longer running", "its lease ends at", "takes them over"} {
		if !strings.Contains(line, want) || strings.Contains(line, "\n") {
			t.Errorf("line %q lacks %q", line, want)
		}
	}
}

// TestWaitLine: what a waiting process prints for live, stopped and
// unknown holders.
func TestWaitLine(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.Local)
	w := Wait{Generations: 40, Now: now, Holders: []Holder{
		{ID: "a/1/x", PID: 1, Claims: 16, LeaseEnd: now.Add(27 * time.Second), Stopped: true},
		{ID: "gpu-1/7/y", Host: "h2", Claims: 20, LeaseEnd: now.Add(25 * time.Second), Heartbeat: now.Add(-5 * time.Second)},
		{ID: "z", Claims: 4},
	}}
	got := w.String()
	for _, want := range []string{
		"waiting for 40 generations claimed by other processes: 16 by a/1/x (pid 1 on this host, no longer running): its lease ends at 03:04:32 (in 27s), then this process takes them over",
		"; 20 by gpu-1/7/y (host h2, last heartbeat 5s ago): if it stopped, its lease ends at 03:04:30 (in 25s)",
		"; and 1 more",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("%q\nlacks %q", got, want)
		}
	}
}
