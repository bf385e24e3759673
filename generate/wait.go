package generate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"tally/store"
)

// WaitProgress is an optional extension of Progress: a Progress that also
// implements it is told, while the process waits for work that other
// processes claimed, what it waits for (at most every WaitNoteEvery).
type WaitProgress interface {
	Progress
	Waiting(w Wait)
}

// WaitNoteEvery is how often a waiting process tells its WaitProgress
// again what it waits for.
const WaitNoteEvery = 5 * time.Second

// Wait is what a process waits for: generations of its run that other
// processes claimed.
type Wait struct {
	// Generations is the number of the run's generations left, all
	// claimed by others.
	Generations int
	// Holders are the owners of those claims, the ones known to have
	// stopped first.
	Holders []Holder
	// Now is the database's clock when the claims were read.
	Now time.Time
}

// Holder is a claim owner a process waits for.
type Holder struct {
	// ID is the owner id; Host and PID where it registered as a worker.
	ID   string
	Host string
	PID  int
	// Claims counts the waited-for generations it holds.
	Claims int
	// LeaseEnd is when its last claim expires unless renewed (by the
	// database's clock); Heartbeat is its last renewal (zero if unknown).
	LeaseEnd, Heartbeat time.Time
	// Stopped: it ran on this host and its process is gone, so its claims
	// are taken over at LeaseEnd.
	Stopped bool
}

// String is the line a waiting process prints.
func (w Wait) String() string {
	var parts []string
	for i, h := range w.Holders {
		if i == 2 {
			parts = append(parts, fmt.Sprintf("and %d more", len(w.Holders)-i))
			break
		}
		parts = append(parts, h.describe(w.Now))
	}
	return fmt.Sprintf("waiting for %d generations claimed by other processes: %s", w.Generations, strings.Join(parts, "; "))
}

// describe says who h is and when its claims can be taken over.
func (h Holder) describe(now time.Time) string {
	end := "its lease end is unknown"
	if !h.LeaseEnd.IsZero() {
		end = fmt.Sprintf("its lease ends at %s (in %s)", h.LeaseEnd.Local().Format("15:04:05"), max(h.LeaseEnd.Sub(now), 0).Round(time.Second))
	}
	who := fmt.Sprintf("%d by %s", h.Claims, h.ID)
	switch {
	case h.Stopped:
		return fmt.Sprintf("%s (pid %d on this host, no longer running): %s, then this process takes them over", who, h.PID, end)
	case !h.Heartbeat.IsZero():
		return fmt.Sprintf("%s (host %s, last heartbeat %s ago): if it stopped, %s", who, h.Host, max(now.Sub(h.Heartbeat), 0).Round(time.Second), end)
	}
	return fmt.Sprintf("%s: if it stopped, %s", who, end)
}

// waitFor reads who holds the claims on the pending items' keys.
func waitFor(ctx context.Context, st *store.Store, pending []*Item) (Wait, error) {
	keys := make([]string, 0, len(pending))
	seen := map[string]bool{}
	for _, it := range pending {
		if !seen[it.Key] {
			seen[it.Key] = true
			keys = append(keys, it.Key)
		}
	}
	owners, err := st.Claimants(ctx, keys)
	if err != nil {
		return Wait{}, err
	}
	view, err := st.Workers(ctx, "")
	if err != nil {
		return Wait{}, err
	}
	w := Wait{Generations: len(keys), Now: view.Now}
	byID := map[string]*Holder{}
	for _, owner := range owners {
		h := byID[owner]
		if h == nil {
			h = &Holder{ID: owner}
			byID[owner] = h
		}
		h.Claims++
	}
	host, _ := os.Hostname()
	for _, wk := range view.Active {
		h := byID[wk.ID]
		if h == nil {
			continue
		}
		h.Host, h.PID, h.LeaseEnd = wk.Host, wk.PID, wk.LeaseExpiry
		if !wk.Heartbeat.IsZero() && wk.Heartbeat.Unix() > 0 {
			h.Heartbeat = wk.Heartbeat
		}
		h.Stopped = wk.Host == host && wk.PID > 0 && wk.PID != os.Getpid() && processGone(wk.PID)
	}
	for _, h := range byID {
		w.Holders = append(w.Holders, *h)
	}
	sort.Slice(w.Holders, func(i, j int) bool {
		a, b := w.Holders[i], w.Holders[j]
		if a.Stopped != b.Stopped {
			return a.Stopped
		}
		return a.ID < b.ID
	})
	return w, nil
}

// processGone reports whether no process with this pid runs on this host
// (false where that cannot be told).
func processGone(pid int) bool {
	if runtime.GOOS == "windows" {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err != nil && !errors.Is(err, syscall.EPERM)
}
