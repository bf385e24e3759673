package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
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

// Claim claims, for owner and for lease from now, at most limit (all when
// limit <= 0) of the keys that are not held by another owner with an
// unexpired lease, in the order given.
func (s *Store) Claim(ctx context.Context, owner string, keys []string, limit int, lease time.Duration) (ClaimResult, error) {
	var res ClaimResult
	if len(keys) == 0 {
		return res, nil
	}
	now := time.Now()
	exp := now.Add(lease).UnixMilli()
	err := s.tx(ctx, func(tx *txn) error {
		sel, err := tx.PrepareContext(ctx, `SELECT owner, expires_at FROM claims WHERE gen_key=?`)
		if err != nil {
			return err
		}
		defer sel.Close()
		// One upsert that takes a free, own or expired claim and leaves a
		// live peer's alone (the same statement works in PostgreSQL).
		up, err := tx.PrepareContext(ctx, `INSERT INTO claims(gen_key, owner, expires_at) VALUES(?,?,?)
			ON CONFLICT(gen_key) DO UPDATE SET owner=excluded.owner, expires_at=excluded.expires_at
			WHERE claims.owner=excluded.owner OR claims.expires_at <= ?`)
		if err != nil {
			return err
		}
		defer up.Close()
		seen := map[string]bool{}
		for _, k := range keys {
			if seen[k] {
				continue
			}
			seen[k] = true
			if limit > 0 && len(res.Claimed) >= limit {
				break
			}
			var cur string
			var curExp int64
			switch err := sel.QueryRowContext(ctx, k).Scan(&cur, &curExp); {
			case errors.Is(err, sql.ErrNoRows):
			case err != nil:
				return fmt.Errorf("read claim %s: %w", k, err)
			case cur != owner && curExp > now.UnixMilli():
				continue // held by a live peer
			}
			r, err := up.ExecContext(ctx, k, owner, exp, now.UnixMilli())
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
	if err != nil {
		return ClaimResult{}, fmt.Errorf("claim work: %w", err)
	}
	return res, nil
}

// Renew extends the lease of every claim the owner holds to lease from now.
func (s *Store) Renew(ctx context.Context, owner string, lease time.Duration) error {
	_, err := s.db.ExecContext(ctx, `UPDATE claims SET expires_at=? WHERE owner=?`, time.Now().Add(lease).UnixMilli(), owner)
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
			return fmt.Errorf("release claims: %w", err)
		}
		return nil
	}
	return s.tx(ctx, func(tx *txn) error {
		const chunk = 500
		for i := 0; i < len(keys); i += chunk {
			part := keys[i:min(i+chunk, len(keys))]
			args := append([]any{owner}, anys(part)...)
			if _, err := tx.ExecContext(ctx, `DELETE FROM claims WHERE owner=? AND gen_key IN (`+placeholders(len(part))+`)`, args...); err != nil {
				return fmt.Errorf("release claims: %w", err)
			}
		}
		return nil
	})
}

// Claimants returns the owners of the unexpired claims on the given keys,
// by key (for tests and diagnostics).
func (s *Store) Claimants(ctx context.Context, keys []string) (map[string]string, error) {
	out := map[string]string{}
	now := time.Now().UnixMilli()
	for _, k := range keys {
		var owner string
		var exp int64
		err := s.db.QueryRowContext(ctx, `SELECT owner, expires_at FROM claims WHERE gen_key=?`, k).Scan(&owner, &exp)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read claim %s: %w", k, err)
		}
		if exp > now {
			out[k] = owner
		}
	}
	return out, nil
}
