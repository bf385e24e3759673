package store

import (
	"context"
	"fmt"
	"sort"
	"time"
)

// Worker statuses.
const (
	// WorkerWorking: the worker is doing (or waiting for) the run's model
	// work; it heartbeats while it does.
	WorkerWorking = "working"
	// WorkerDone: the worker saw the run complete and left.
	WorkerDone = "done"
	// WorkerStopped: the worker left early (interrupted or failed).
	WorkerStopped = "stopped"
)

// Worker is a process that does model work on the store, as it registered
// itself, with the claims it holds now.
type Worker struct {
	// ID is the worker's claim owner id (unique per process).
	ID          string `json:"id"`
	Host        string `json:"host"`
	PID         int    `json:"pid"`
	RunID       int64  `json:"run_id"`
	Model       string `json:"model"`
	Fingerprint string `json:"fingerprint"`
	// Status is WorkerWorking, WorkerDone or WorkerStopped ("" for a
	// claim owner that never registered).
	Status string `json:"status"`
	// Lease is how long its claims hold without a heartbeat.
	Lease time.Duration `json:"lease_ns"`
	// StartedAt and Heartbeat are by the database's clock.
	StartedAt time.Time `json:"started_at"`
	Heartbeat time.Time `json:"heartbeat"`
	// Generated counts the generations it stored (set when it leaves).
	Generated int `json:"generated"`
	// Claims is the number of claims it holds (live or expired);
	// LeaseExpiry is when the latest of them expires (zero without claims).
	Claims      int       `json:"claims"`
	LeaseExpiry time.Time `json:"lease_expiry"`
	// Live: working, with a heartbeat within its lease.
	Live bool `json:"live"`
}

// RegisterWorker records a worker (by w.ID) as working, started and
// heartbeating now by the database's clock.
func (s *Store) RegisterWorker(ctx context.Context, w Worker) error {
	now := s.db.eng.nowMS()
	_, err := s.db.ExecContext(ctx, `INSERT INTO workers(id,host,pid,run_id,model,fingerprint,status,lease_ms,started_at,heartbeat_at)
		VALUES(?,?,?,?,?,?,?,?,`+now+`,`+now+`)
		ON CONFLICT(id) DO UPDATE SET host=excluded.host, pid=excluded.pid, run_id=excluded.run_id, model=excluded.model,
		fingerprint=excluded.fingerprint, status=excluded.status, lease_ms=excluded.lease_ms, heartbeat_at=excluded.heartbeat_at`,
		w.ID, w.Host, w.PID, w.RunID, w.Model, w.Fingerprint, WorkerWorking, w.Lease.Milliseconds())
	if err != nil {
		return fmt.Errorf("register worker %s: %w", w.ID, s.named(err))
	}
	return nil
}

// EndWorker records that a worker left, with its status and the number of
// generations it stored.
func (s *Store) EndWorker(ctx context.Context, id, status string, generated int) error {
	_, err := s.db.ExecContext(ctx, `UPDATE workers SET status=?, generated=?, heartbeat_at=`+s.db.eng.nowMS()+` WHERE id=?`, status, generated, id)
	if err != nil {
		return fmt.Errorf("record the end of worker %s: %w", id, s.named(err))
	}
	return nil
}

// WorkerView is what Workers returns: the workers that are live or hold
// claims, counts of the others, and the database's clock they were read by.
type WorkerView struct {
	// Now is the database's clock when read.
	Now time.Time `json:"now"`
	// Active lists live workers and any (dead, or never registered)
	// owner of claims, live ones first, then by id.
	Active []Worker `json:"active"`
	// Finished counts workers that left (done or stopped) holding no
	// claims; Dead counts workers whose heartbeat lapsed without claims.
	Finished int `json:"finished"`
	Dead     int `json:"dead"`
	// Claimed is the number of claims held, LiveClaims those unexpired.
	Claimed    int `json:"claims"`
	LiveClaims int `json:"live_claims"`
}

// Workers reads the registered workers and the claims, for tally ls and
// plan. With fingerprint set, only workers of that model (and owners of
// claims on its generations) are listed.
func (s *Store) Workers(ctx context.Context, fingerprint string) (WorkerView, error) {
	v := WorkerView{Active: []Worker{}}
	now, err := s.Now(ctx)
	if err != nil {
		return v, err
	}
	v.Now = now
	if !s.hasWorkers() {
		// An older store read as it is has no workers table (and its
		// claims name no registered worker): nothing to show.
		return v, nil
	}
	nowMS := now.UnixMilli()
	byID := map[string]*Worker{}
	q := `SELECT id,host,pid,COALESCE(run_id,0),model,fingerprint,status,lease_ms,started_at,heartbeat_at,generated FROM workers`
	var args []any
	if fingerprint != "" {
		q += ` WHERE fingerprint=?`
		args = append(args, fingerprint)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return v, fmt.Errorf("read workers: %w", err)
	}
	for rows.Next() {
		var w Worker
		var lease, started, beat int64
		if err := rows.Scan(&w.ID, &w.Host, &w.PID, &w.RunID, &w.Model, &w.Fingerprint, &w.Status, &lease, &started, &beat, &w.Generated); err != nil {
			rows.Close()
			return v, fmt.Errorf("read workers: %w", err)
		}
		w.Lease, w.StartedAt, w.Heartbeat = time.Duration(lease)*time.Millisecond, time.UnixMilli(started), time.UnixMilli(beat)
		w.Live = w.Status == WorkerWorking && beat+lease > nowMS
		byID[w.ID] = &w
	}
	if err := rows.Close(); err != nil {
		return v, fmt.Errorf("read workers: %w", err)
	}
	cq := `SELECT c.owner, COUNT(*), MAX(c.expires_at), SUM(CASE WHEN c.expires_at > ? THEN 1 ELSE 0 END) FROM claims c`
	cargs := []any{nowMS}
	if fingerprint != "" {
		// Claims name generations not stored yet: a model's claims are
		// those of its workers.
		cq += ` WHERE c.owner IN (SELECT id FROM workers WHERE fingerprint=?)`
		cargs = append(cargs, fingerprint)
	}
	cq += ` GROUP BY c.owner`
	crows, err := s.db.QueryContext(ctx, cq, cargs...)
	if err != nil {
		return v, fmt.Errorf("read claims: %w", err)
	}
	for crows.Next() {
		var owner string
		var n, live int
		var exp int64
		if err := crows.Scan(&owner, &n, &exp, &live); err != nil {
			crows.Close()
			return v, fmt.Errorf("read claims: %w", err)
		}
		w := byID[owner]
		if w == nil {
			w = &Worker{ID: owner}
			byID[owner] = w
		}
		w.Claims, w.LeaseExpiry = n, time.UnixMilli(exp)
		v.Claimed += n
		v.LiveClaims += live
	}
	if err := crows.Close(); err != nil {
		return v, fmt.Errorf("read claims: %w", err)
	}
	for _, w := range byID {
		switch {
		case w.Live || w.Claims > 0:
			v.Active = append(v.Active, *w)
		case w.Status == WorkerWorking:
			v.Dead++
		default:
			v.Finished++
		}
	}
	sort.Slice(v.Active, func(i, j int) bool {
		a, b := v.Active[i], v.Active[j]
		if a.Live != b.Live {
			return a.Live
		}
		return a.ID < b.ID
	})
	return v, nil
}
