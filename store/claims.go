package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// Claims let several processes share the generation work of one store. A
// process claims the generation keys it is about to run, under its owner
// id, for a lease; it renews the lease while it works and releases the
// claims once the generations are stored. A key claimed by another owner
// whose lease has not expired is left to that owner; a claim whose lease
// expired (its process died) is taken over.
//
// The SQL is plain (SELECT, INSERT, UPDATE, DELETE inside one transaction);
// in SQLite the transaction holds the write lock from its start
// (_txlock=immediate), which makes check-and-claim atomic across
// processes.

// ClaimResult is what Claim got.
type ClaimResult struct {
	// Claimed are the keys now held by the owner (including keys it held
	// already).
	Claimed []string
	// TakenOver counts the claimed keys whose previous owner's lease had
	// expired.
	TakenOver int
}

// nowMS is the SQL expression for the database's clock in Unix
// milliseconds. Leases and heartbeats are stamped and compared with it, never
// with a worker's own clock, so that workers on machines whose clocks
// disagree still agree on which leases have expired. (PostgreSQL's now() is
// the start of the transaction; SQLite's 'now' is that of the statement.)
func (e engine) nowMS() string {
	if e == postgresEngine {
		return `(EXTRACT(EPOCH FROM now())*1000)::BIGINT`
	}
	return `CAST(unixepoch('subsec')*1000 AS INTEGER)`
}

// Now returns the database's clock (see nowMS).
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	var ms int64
	if err := s.db.QueryRowContext(ctx, `SELECT `+s.db.eng.nowMS()).Scan(&ms); err != nil {
		return time.Time{}, fmt.Errorf("read the database clock: %w", err)
	}
	return time.UnixMilli(ms), nil
}

// Claim claims, for owner and for lease from now (by the database's clock),
// at most limit (all when limit <= 0) of the keys that are not held by
// another owner with an unexpired lease, in the order given.
func (s *Store) Claim(ctx context.Context, owner string, keys []string, limit int, lease time.Duration) (ClaimResult, error) {
	return s.claim(ctx, owner, keys, limit, lease, false)
}

// ClaimUnstored is Claim for keys that had no stored generation when the
// caller planned them: a key whose generation a peer has stored since is
// skipped, not claimed (the caller finds it when it looks at what peers
// stored), so that workers do not claim, look up and release each other's
// finished work.
func (s *Store) ClaimUnstored(ctx context.Context, owner string, keys []string, limit int, lease time.Duration) (ClaimResult, error) {
	return s.claim(ctx, owner, keys, limit, lease, true)
}

func (s *Store) claim(ctx context.Context, owner string, keys []string, limit int, lease time.Duration, unstored bool) (ClaimResult, error) {
	var res ClaimResult
	if len(keys) == 0 {
		return res, nil
	}
	uniq := uniqueKeys(keys)
	if limit <= 0 {
		limit = len(uniq)
	}
	var err error
	if s.db.eng == postgresEngine {
		res, err = s.pgClaim(ctx, owner, uniq, limit, lease, unstored)
	} else {
		res, err = s.sqliteClaim(ctx, owner, uniq, limit, lease, unstored)
	}
	if err != nil {
		return ClaimResult{}, fmt.Errorf("claim work: %w", err)
	}
	return res, nil
}

// pgClaimLock is the first half of the transaction-scoped advisory locks
// that claimers take on the keys they are about to claim (the second half
// is a hash of the key): a key another worker is claiming at this instant
// is skipped, as SELECT … FOR UPDATE SKIP LOCKED skips a locked row, rather
// than waited for.
const pgClaimLock int32 = 0x7a11

// pgClaim claims in one statement: the first limit keys that no live peer
// holds and no peer is claiming right now are upserted. Should two workers
// still race for a key (a hash collision of the lock), the upsert of the
// later one re-checks the row it waited for and skips it.
func (s *Store) pgClaim(ctx context.Context, owner string, keys []string, limit int, lease time.Duration, unstored bool) (ClaimResult, error) {
	var res ClaimResult
	q := s.db.eng.rebind(pgClaimSQL(unstored))
	err := s.db.retry(ctx, func() error {
		rows, err := s.db.DB.QueryContext(ctx, q, pgClaimArgs(owner, keys, limit, lease)...)
		if err != nil {
			return err
		}
		defer rows.Close()
		res, err = scanClaims(owner, rows.Next, rows.Scan)
		if err != nil {
			return err
		}
		return rows.Err()
	})
	return res, err
}

// pgClaimSQL is the claim statement of pgClaim, whose arguments are
// pgClaimArgs.
func pgClaimSQL(unstored bool) string {
	now := postgresEngine.nowMS()
	skipStored := ""
	if unstored {
		skipStored = ` AND NOT EXISTS (SELECT 1 FROM generations g WHERE g.key = u.k)`
	}
	// The keys come in order from unnest; with no sort above the filter,
	// LIMIT pulls them one by one, so the advisory lock is tried on the
	// free keys up to the limit only (OFFSET 0 keeps the cheaper-looking
	// lock call from being evaluated before the claims check).
	return `WITH cand AS (
			SELECT f.k, f.ord FROM (
				SELECT u.k, u.ord FROM unnest(?::text[]) WITH ORDINALITY AS u(k, ord)
				WHERE NOT EXISTS (SELECT 1 FROM claims c WHERE c.gen_key = u.k AND c.owner <> ? AND c.expires_at > ` + now + `)` + skipStored + `
				OFFSET 0) AS f
			WHERE pg_try_advisory_xact_lock(?, hashtext(f.k))
			LIMIT ?),
		old AS (SELECT c.gen_key, c.owner FROM claims c JOIN cand ON c.gen_key = cand.k)
		INSERT INTO claims(gen_key, owner, expires_at)
		SELECT cand.k, ?, ` + now + ` + ? FROM cand ORDER BY cand.ord
		ON CONFLICT(gen_key) DO UPDATE SET owner=excluded.owner, expires_at=excluded.expires_at
		WHERE claims.owner=excluded.owner OR claims.expires_at <= ` + now + `
		RETURNING gen_key, COALESCE((SELECT old.owner FROM old WHERE old.gen_key = claims.gen_key), '')`
}

// pgClaimArgs are the arguments of pgClaimSQL.
func pgClaimArgs(owner string, keys []string, limit int, lease time.Duration) []any {
	return []any{keys, owner, pgClaimLock, limit, owner, lease.Milliseconds()}
}

// scanClaims reads the rows of pgClaimSQL.
func scanClaims(owner string, next func() bool, scan func(...any) error) (ClaimResult, error) {
	var res ClaimResult
	for next() {
		var k, prev string
		if err := scan(&k, &prev); err != nil {
			return ClaimResult{}, err
		}
		if prev != "" && prev != owner {
			res.TakenOver++
		}
		res.Claimed = append(res.Claimed, k)
	}
	return res, nil
}

// ClaimUnstoredRead is ClaimUnstored followed by a look at what is stored
// now (after the claim: a generation a peer stored while the claim ran is
// seen): it returns the stored generations of at least the claimed keys
// and of those the claim passed over (held or stored by peers), or of
// every key when none was claimed. On PostgreSQL both statements go to the
// server in one round trip, and every key is looked at.
func (s *Store) ClaimUnstoredRead(ctx context.Context, owner string, keys []string, limit int, lease time.Duration) (ClaimResult, map[string]Generation, error) {
	if s.db.eng == postgresEngine && len(keys) > 0 {
		res, gens, err := s.pgClaimRead(ctx, owner, keys, limit, lease)
		if err != nil {
			return ClaimResult{}, nil, fmt.Errorf("claim work: %w", err)
		}
		return res, gens, nil
	}
	res, err := s.ClaimUnstored(ctx, owner, keys, limit, lease)
	if err != nil {
		return res, nil, err
	}
	look := keys
	if len(res.Claimed) > 0 {
		look = append(PassedOver(keys, res.Claimed), res.Claimed...)
	}
	gens, err := s.Generations(ctx, "", look)
	return res, gens, err
}

// uniqueKeys returns keys without repeats, in first-seen order.
func uniqueKeys(keys []string) []string {
	uniq := make([]string, 0, len(keys))
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			uniq = append(uniq, k)
		}
	}
	return uniq
}

// PassedOver returns the keys, in order, that are not claimed but come
// before the last claimed one: those a claim of keys in this order skipped
// (held or stored by peers).
func PassedOver(keys, claimed []string) []string {
	mine := make(map[string]bool, len(claimed))
	for _, k := range claimed {
		mine[k] = true
	}
	last := -1
	for i, k := range keys {
		if mine[k] {
			last = i
		}
	}
	var out []string
	for _, k := range keys[:last+1] {
		if !mine[k] {
			out = append(out, k)
		}
	}
	return out
}

// pgClaimRead sends the claim statement of pgClaim and a read of the
// keys' stored generations in one pipeline: the read, a statement of its
// own, sees what peers committed while the claim ran (READ COMMITTED takes
// a snapshot per statement).
func (s *Store) pgClaimRead(ctx context.Context, owner string, keys []string, limit int, lease time.Duration) (ClaimResult, map[string]Generation, error) {
	uniq := uniqueKeys(keys)
	want := make(map[string]bool, len(uniq))
	for _, k := range uniq {
		want[k] = true
	}
	if limit <= 0 {
		limit = len(uniq)
	}
	claimQ := s.db.eng.rebind(pgClaimSQL(true))
	readQ := `SELECT ` + generationCols + ` FROM generations WHERE key IN (SELECT unnest($1::text[]))`
	var res ClaimResult
	var gens map[string]Generation
	err := s.db.retry(ctx, func() error {
		c, err := s.db.DB.Conn(ctx)
		if err != nil {
			return err
		}
		defer c.Close()
		return c.Raw(func(dc any) error {
			pc, ok := dc.(*stdlib.Conn)
			if !ok {
				return fmt.Errorf("not a pgx connection: %T", dc)
			}
			var b pgx.Batch
			b.Queue(claimQ, pgClaimArgs(owner, uniq, limit, lease)...)
			b.Queue(readQ, uniq)
			br := pc.Conn().SendBatch(ctx, &b)
			defer br.Close()
			rows, err := br.Query()
			if err != nil {
				return err
			}
			res, err = scanClaims(owner, rows.Next, rows.Scan)
			rows.Close()
			if err == nil {
				err = rows.Err()
			}
			if err != nil {
				return err
			}
			rows, err = br.Query()
			if err != nil {
				return err
			}
			gens = map[string]Generation{}
			for rows.Next() {
				g, ok, err := scanGeneration(rows.Scan, want)
				if err != nil {
					rows.Close()
					return fmt.Errorf("read generations: %w", err)
				}
				if ok {
					gens[g.Key] = g
				}
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return fmt.Errorf("read generations: %w", err)
			}
			return br.Close()
		})
	})
	return res, gens, err
}

// sqliteClaim claims key by key inside one transaction, which holds
// SQLite's write lock from its start (check-and-claim is atomic across
// processes).
func (s *Store) sqliteClaim(ctx context.Context, owner string, keys []string, limit int, lease time.Duration, unstored bool) (ClaimResult, error) {
	var res ClaimResult
	err := s.tx(ctx, func(tx *txn) error {
		res = ClaimResult{}
		var now int64
		if err := tx.QueryRowContext(ctx, `SELECT `+tx.eng.nowMS()).Scan(&now); err != nil {
			return fmt.Errorf("read the database clock: %w", err)
		}
		exp := now + lease.Milliseconds()
		sel, err := tx.PrepareContext(ctx, `SELECT owner, expires_at FROM claims WHERE gen_key=?`)
		if err != nil {
			return err
		}
		defer sel.Close()
		// One upsert that takes a free, own or expired claim and leaves a
		// live peer's alone.
		up, err := tx.PrepareContext(ctx, `INSERT INTO claims(gen_key, owner, expires_at) VALUES(?,?,?)
			ON CONFLICT(gen_key) DO UPDATE SET owner=excluded.owner, expires_at=excluded.expires_at
			WHERE claims.owner=excluded.owner OR claims.expires_at <= ?`)
		if err != nil {
			return err
		}
		defer up.Close()
		stored, err := tx.PrepareContext(ctx, `SELECT 1 FROM generations WHERE key=?`)
		if err != nil {
			return err
		}
		defer stored.Close()
		for _, k := range keys {
			if len(res.Claimed) >= limit {
				break
			}
			if unstored {
				switch err := stored.QueryRowContext(ctx, k).Scan(new(int)); {
				case err == nil:
					continue // a peer stored it
				case !errors.Is(err, sql.ErrNoRows):
					return fmt.Errorf("look up generation %s: %w", k, err)
				}
			}
			var cur string
			var curExp int64
			switch err := sel.QueryRowContext(ctx, k).Scan(&cur, &curExp); {
			case errors.Is(err, sql.ErrNoRows):
			case err != nil:
				return fmt.Errorf("read claim %s: %w", k, err)
			case cur != owner && curExp > now:
				continue // held by a live peer
			}
			r, err := up.ExecContext(ctx, k, owner, exp, now)
			if err != nil {
				return fmt.Errorf("claim %s: %w", k, err)
			}
			if n, err := r.RowsAffected(); err == nil && n == 0 {
				continue
			}
			if cur != "" && cur != owner {
				res.TakenOver++
			}
			res.Claimed = append(res.Claimed, k)
		}
		return nil
	})
	return res, err
}

// Renew extends the lease of every claim the owner holds to lease from now
// (by the database's clock) and records a heartbeat for the owner's worker
// entry, if it registered one.
func (s *Store) Renew(ctx context.Context, owner string, lease time.Duration) error {
	now := s.db.eng.nowMS()
	err := s.tx(ctx, func(tx *txn) error {
		if _, err := tx.ExecContext(ctx, `UPDATE claims SET expires_at=`+now+`+? WHERE owner=?`, lease.Milliseconds(), owner); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE workers SET heartbeat_at=`+now+`, lease_ms=? WHERE id=?`, lease.Milliseconds(), owner)
		return err
	})
	if err != nil {
		return fmt.Errorf("renew claims: %w", err)
	}
	return nil
}

// Release drops the owner's claims on the given keys (all of its claims
// when keys is nil).
func (s *Store) Release(ctx context.Context, owner string, keys []string) error {
	if keys == nil {
		if _, err := s.db.ExecContext(ctx, `DELETE FROM claims WHERE owner=?`, owner); err != nil {
			return fmt.Errorf("release claims: %w", s.named(err))
		}
		return nil
	}
	if s.db.eng == postgresEngine {
		_, err := s.db.ExecContext(ctx, `DELETE FROM claims WHERE owner=? AND gen_key IN (SELECT unnest(?::text[]))`, owner, keys)
		if err != nil {
			return fmt.Errorf("release claims: %w", s.named(err))
		}
		return nil
	}
	return s.tx(ctx, func(tx *txn) error { return releaseIn(ctx, tx, owner, keys) })
}

// releaseIn drops the owner's claims on keys inside a transaction.
func releaseIn(ctx context.Context, tx *txn, owner string, keys []string) error {
	if tx.eng == postgresEngine {
		if _, err := tx.ExecContext(ctx, `DELETE FROM claims WHERE owner=? AND gen_key IN (SELECT unnest(?::text[]))`, owner, keys); err != nil {
			return fmt.Errorf("release claims: %w", err)
		}
		return nil
	}
	const chunk = 500
	for i := 0; i < len(keys); i += chunk {
		part := keys[i:min(i+chunk, len(keys))]
		args := append([]any{owner}, anys(part)...)
		if _, err := tx.ExecContext(ctx, `DELETE FROM claims WHERE owner=? AND gen_key IN (`+placeholders(len(part))+`)`, args...); err != nil {
			return fmt.Errorf("release claims: %w", err)
		}
	}
	return nil
}

// PruneClaims deletes the claims whose lease has expired (their owners
// died, possibly between claiming a generation a peer had stored and
// releasing it): an expired claim binds no one, so this changes nothing
// but what tally ls shows.
func (s *Store) PruneClaims(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM claims WHERE expires_at <= `+s.db.eng.nowMS()); err != nil {
		return fmt.Errorf("prune expired claims: %w", s.named(err))
	}
	return nil
}

// Claimants returns the owners of the unexpired claims on the given keys,
// by key.
func (s *Store) Claimants(ctx context.Context, keys []string) (map[string]string, error) {
	out := map[string]string{}
	const chunk = 500
	for i := 0; i < len(keys); i += chunk {
		part := keys[i:min(i+chunk, len(keys))]
		rows, err := s.db.QueryContext(ctx, `SELECT gen_key, owner FROM claims WHERE expires_at > `+s.db.eng.nowMS()+
			` AND gen_key IN (`+placeholders(len(part))+`)`, anys(part)...)
		if err != nil {
			return nil, fmt.Errorf("read claims: %w", err)
		}
		for rows.Next() {
			var k, owner string
			if err := rows.Scan(&k, &owner); err != nil {
				rows.Close()
				return nil, fmt.Errorf("read claims: %w", err)
			}
			out[k] = owner
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("read claims: %w", err)
		}
	}
	return out, nil
}
