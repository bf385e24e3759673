package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Run statuses. A run is recorded as RunRunning when it starts and closed
// with RunDone, RunFailed or RunInterrupted when it ends; a run whose
// process died before closing it (killed, or its machine lost) reads as
// RunDead once its heartbeat lapses. RunDead is never stored.
const (
	RunRunning     = "running"
	RunDone        = "done"
	RunFailed      = "failed"
	RunInterrupted = "interrupted"
	RunDead        = "dead"
)

// RunLease is how long a running run's record holds without a heartbeat
// when the run names no lease of its own; its process heartbeats it every
// third of the lease (KeepRunAlive).
const RunLease = 30 * time.Second

// Run is one invocation of a command that does model work.
type Run struct {
	ID          int64
	StartedAt   time.Time
	Command     string
	Config      json.RawMessage
	Version     string
	Host        string
	Backend     string
	Model       string
	Fingerprint string
	// Status is how the run ended (RunDone, RunFailed, RunInterrupted),
	// RunRunning while its process heartbeats it, or RunDead when its
	// process died before closing it.
	Status string
	// Generated and prompt tokens and the seconds spent generating, for
	// throughput estimates.
	GeneratedTokens, PromptTokens int
	GenSeconds                    float64
	Stats                         json.RawMessage
	// Lease is how long the run's record holds without a heartbeat
	// (StartRun's default: RunLease).
	Lease time.Duration
	// Heartbeat is when its process last said it was alive, by the
	// database's clock (zero when never: a run recorded by an older tally).
	Heartbeat time.Time
}

// EndStatus is the status a run that ended with err is closed with:
// RunDone (nil), RunInterrupted (cancelled: a signal) or RunFailed
// (anything else: a full disk, a store made read-only, a lost server).
func EndStatus(err error) string {
	switch {
	case err == nil:
		return RunDone
	case errors.Is(err, context.Canceled):
		return RunInterrupted
	}
	return RunFailed
}

// StartRun records the start of a run (RunRunning, with its first
// heartbeat) and returns its id.
func (s *Store) StartRun(ctx context.Context, r Run) (int64, error) {
	if r.Lease <= 0 {
		r.Lease = RunLease
	}
	var id int64
	err := s.db.QueryRowContext(ctx, `INSERT INTO runs(started_at,command,config,version,host,backend,model,fingerprint,status,heartbeat_at,lease_ms)
		VALUES(?,?,?,?,?,?,?,?,?,`+s.db.eng.nowMS()+`,?) RETURNING id`, time.Now().UTC().Format(time.RFC3339Nano), r.Command, nullJSON(r.Config),
		r.Version, r.Host, r.Backend, r.Model, r.Fingerprint, RunRunning, r.Lease.Milliseconds()).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("record run: %w", s.named(err))
	}
	return id, nil
}

// BeatRun records that run id's process is alive.
func (s *Store) BeatRun(ctx context.Context, id int64) error {
	if _, err := s.db.ExecContext(ctx, `UPDATE runs SET heartbeat_at=`+s.db.eng.nowMS()+` WHERE id=? AND status=?`, id, RunRunning); err != nil {
		return fmt.Errorf("heartbeat run %d: %w", id, s.named(err))
	}
	return nil
}

// KeepRunAlive heartbeats run id (BeatRun) every third of lease
// (RunLease when 0) until stop is called; stop waits for a heartbeat in
// flight. A failed heartbeat is tried again at the next tick.
func (s *Store) KeepRunAlive(id int64, lease time.Duration) (stop func()) {
	if lease <= 0 {
		lease = RunLease
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(lease / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.BeatRun(ctx, id)
			}
		}
	}()
	return func() {
		cancel()
		wg.Wait()
	}
}

// FinishRun closes a run's record: how it ended (RunDone, RunFailed,
// RunInterrupted; see EndStatus) and what it measured.
func (s *Store) FinishRun(ctx context.Context, id int64, status string, genTokens, promptTokens int, genSeconds float64, stats json.RawMessage) error {
	_, err := s.db.ExecContext(ctx, `UPDATE runs SET finished_at=?, status=?, generated_tokens=?, prompt_tokens=?, gen_seconds=?, stats=? WHERE id=?`,
		time.Now().UTC().Format(time.RFC3339Nano), status, genTokens, promptTokens, genSeconds, nullJSON(stats), id)
	if err != nil {
		return fmt.Errorf("finish run %d: %w", id, s.named(err))
	}
	return nil
}

// Runs lists the recorded runs, newest first. A run recorded as running
// whose heartbeat lapsed (older than its lease, by the database's clock)
// and that no live worker serves reads as RunDead; one recorded by an
// older tally (no heartbeat) is alive only while a live worker serves it.
func (s *Store) Runs(ctx context.Context) ([]Run, error) {
	beat := `NULL, 0`
	if s.hasRunBeats() {
		beat = `heartbeat_at, lease_ms`
	}
	rows, err := s.db.QueryContext(ctx, `SELECT id,started_at,command,config,version,host,backend,model,fingerprint,status,generated_tokens,prompt_tokens,gen_seconds,stats,`+
		beat+` FROM runs ORDER BY id DESC`)
	if err != nil {
		return nil, fmt.Errorf("read runs: %w", err)
	}
	defer rows.Close()
	var out []Run
	running := false
	for rows.Next() {
		var r Run
		var started, cfg, stats string
		var hb sql.NullInt64
		var lease int64
		if err := rows.Scan(&r.ID, &started, &r.Command, &cfg, &r.Version, &r.Host, &r.Backend, &r.Model, &r.Fingerprint, &r.Status,
			&r.GeneratedTokens, &r.PromptTokens, &r.GenSeconds, &stats, &hb, &lease); err != nil {
			return nil, fmt.Errorf("read runs: %w", err)
		}
		r.StartedAt, _ = time.Parse(time.RFC3339Nano, started)
		r.Config, r.Stats = json.RawMessage(cfg), json.RawMessage(stats)
		r.Lease = time.Duration(lease) * time.Millisecond
		if hb.Valid {
			r.Heartbeat = time.UnixMilli(hb.Int64)
		}
		running = running || r.Status == RunRunning
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read runs: %w", err)
	}
	rows.Close()
	if running {
		if err := s.markDead(ctx, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// markDead sets the status of the running runs whose process died to
// RunDead (see Runs).
func (s *Store) markDead(ctx context.Context, runs []Run) error {
	now, err := s.Now(ctx)
	if err != nil {
		return err
	}
	served := map[int64]bool{}
	if s.hasWorkers() {
		rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT run_id FROM workers WHERE status=? AND heartbeat_at + lease_ms > ? AND run_id IS NOT NULL`,
			WorkerWorking, now.UnixMilli())
		if err != nil {
			return fmt.Errorf("read live workers: %w", err)
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return fmt.Errorf("read live workers: %w", err)
			}
			served[id] = true
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("read live workers: %w", err)
		}
	}
	for i := range runs {
		r := &runs[i]
		if r.Status != RunRunning || served[r.ID] {
			continue
		}
		if r.Heartbeat.IsZero() || !r.Heartbeat.Add(r.Lease).After(now) {
			r.Status = RunDead
		}
	}
	return nil
}
