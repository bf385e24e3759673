package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"strconv"
	"strings"
)

// Every packed row of scores (packed.go) is sealed: its column of scores
// begins with sealMarker and the CRC-32C of the row, that is of its key's
// fields and digest joined as EachEntry reads them (gen_key, sample_id,
// task, budget, setting_key, digest, each followed by 0xFF) and of the
// packed scores that follow. A flipped bit anywhere in the row, its key,
// its digest or a value, breaks the seal, and a command that reads the
// row refuses it (a DamagedScoresError) rather than print a figure from
// it; `tally rescore` drops such rows and recomputes them from their
// generations. CRC-32C finds every error of up to 32 consecutive bits and
// misses a random one with a chance of 2^-32; it costs a few milliseconds
// for the 600,000 rows of a store of 2.4 million scores.
//
// A row written before rows were sealed begins with the flags of its
// first score, which never have the marker's bit: it is read as it is,
// checked against the key's rows of scores (legacyCheck), the copy of
// the same scores that every writer keeps in the same transaction. The
// first writing command of a tally that seals rows seals such rows once
// (sealLegacy), after the same check, and records that it did in the
// file's PRAGMA application_id (sealedAppID).

// sealMarker is the first byte of a sealed packed row (the flags of a
// packed score never have this bit).
const sealMarker = 0x80

// sealLen is the length of a seal: the marker and the CRC-32C.
const sealLen = 5

// castagnoli is CRC-32C's table (computed with the CPU's instruction
// where it has one).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// sealedAppID is the PRAGMA application_id of a SQLite store whose packed
// rows were sealed by sealLegacy ("tly1").
const sealedAppID = 0x746c7931

// appendPackedKey appends the fields of a packed row's key and its
// digest as EachEntry reads them: each followed by sep (0xFF on SQLite),
// the digest's too.
func appendPackedKey(dst []byte, k ScoreKey, digest string) []byte {
	const sep = 0xFF
	dst = append(append(dst, k.GenKey...), sep)
	dst = append(append(dst, k.SampleID...), sep)
	dst = append(append(dst, k.Task...), sep)
	dst = append(strconv.AppendInt(dst, int64(k.Budget), 10), sep)
	dst = append(append(dst, k.SettingKey...), sep)
	return append(append(dst, digest...), sep)
}

// sealSum is the checksum of a row whose key's fields (appendPackedKey,
// or as read: without the last separator, which it adds) are fields and
// whose packed scores are body.
func sealSum(fields []byte, withSep bool, body []byte) uint32 {
	c := crc32.Update(0, castagnoli, fields)
	if withSep {
		c = crc32.Update(c, castagnoli, []byte{0xFF})
	}
	return crc32.Update(c, castagnoli, body)
}

// sealPacked appends to dst the sealed row of key k (with digest) whose
// packed scores are body.
func sealPacked(dst []byte, k ScoreKey, digest string, body []byte) []byte {
	dst = append(dst, sealMarker, 0, 0, 0, 0)
	at := len(dst)
	dst = append(dst, body...)
	return seal(dst, at, k, digest)
}

// packSealed appends to dst the sealed packed row of key k's scores
// under its digest (packScores, sealed).
func packSealed(dst []byte, k ScoreKey, scores []Score, digest string) []byte {
	dst = append(dst, sealMarker, 0, 0, 0, 0)
	at := len(dst)
	dst = packScores(dst, scores, digest)
	return seal(dst, at, k, digest)
}

// seal writes into row[at-4:at] the checksum of key k's row whose
// packed scores are row[at:].
func seal(row []byte, at int, k ScoreKey, digest string) []byte {
	var fields [256]byte
	sum := sealSum(appendPackedKey(fields[:0], k, digest), false, row[at:])
	binary.LittleEndian.PutUint32(row[at-4:at], sum)
	return row
}

// errSeal is the error of a packed row whose seal does not hold.
var errSeal = errors.New("its checksum does not match what it holds: the row is damaged")

// openSealed checks a packed row as read, its key's fields and digest
// joined by 0xFF (as EachEntry reads them, without a last separator):
// the packed scores of a sealed row whose seal holds (sealed), or of a
// row from before seals (legacy, to be checked by legacyCheck); an error
// for a row whose seal is broken.
func openSealed(fields, row []byte) (body []byte, sealed bool, err error) {
	if len(row) == 0 || row[0]&sealMarker == 0 {
		return row, false, nil
	}
	if row[0] != sealMarker || len(row) < sealLen {
		return nil, false, errSeal
	}
	if sealSum(fields, true, row[sealLen:]) != binary.LittleEndian.Uint32(row[1:sealLen]) {
		return nil, false, errSeal
	}
	return row[sealLen:], true, nil
}

// openSealedKey is openSealed for a row of key k with digest.
func openSealedKey(k ScoreKey, digest string, row []byte) (body []byte, sealed bool, err error) {
	var buf [256]byte
	fields := appendPackedKey(buf[:0], k, digest)
	return openSealed(fields[:len(fields)-1], row)
}

// damagedScores is the DamagedError of the store's packed row of key k
// (as read), more the number of other damaged rows found with it.
func (s *Store) damagedScores(k ScoreKey, why string, more int) *DamagedError {
	what := fmt.Sprintf("the scores of %s/%s under stop setting %q, budget %d", k.Task, k.SampleID, strings.ReplaceAll(k.SettingKey, "\x00", ","), k.Budget)
	if more > 0 {
		what += fmt.Sprintf(" (and of %d more)", more)
	}
	return &DamagedError{Store: s.Path(), What: what, Why: why}
}

// packedKeyOf parses the key of a packed row's fields as EachEntry reads
// them (for messages: the fields of a damaged row may not parse).
func packedKeyOf(fields []byte) (k ScoreKey, digest string) {
	f, _ := splitFields(fields, 0xFF)
	k = ScoreKey{GenKey: string(f[0]), SampleID: string(f[1]), Task: string(f[2]), SettingKey: string(f[4])}
	k.Budget, _ = strconv.Atoi(string(f[3]))
	return k, string(f[5])
}

// legacyRow is a packed row from before seals, to be checked against its
// key's rows of scores.
type legacyRow struct {
	key    ScoreKey
	digest string
	packed []byte
}

// legacyCheck checks packed rows from before seals against the rows of
// scores of their keys, which hold the same scores: it returns the keys
// whose packed row and scores disagree (either may be the damaged one),
// and why the first does.
func legacyCheck(ctx context.Context, q schemaQuerier, rows []legacyRow) (bad []ScoreKey, why string, err error) {
	byKey := map[ScoreKey][]Score{}
	var genKeys []string
	seen := map[string]bool{}
	for _, r := range rows {
		if !seen[r.key.GenKey] {
			seen[r.key.GenKey] = true
			genKeys = append(genKeys, r.key.GenKey)
		}
	}
	const chunk = 500
	for i := 0; i < len(genKeys); i += chunk {
		part := genKeys[i:min(i+chunk, len(genKeys))]
		rs, err := q.QueryContext(ctx, `SELECT `+packedScoreCols+` FROM scores WHERE gen_key IN (`+placeholders(len(part))+`) ORDER BY rowid`, anys(part)...)
		if err != nil {
			return nil, "", fmt.Errorf("check the scores: %w", err)
		}
		for rs.Next() {
			x, err := scanPackedSource(rs)
			if err != nil {
				rs.Close()
				return nil, "", fmt.Errorf("check the scores: %w", err)
			}
			byKey[x.Key()] = append(byKey[x.Key()], x)
		}
		if err := errors.Join(rs.Err(), rs.Close()); err != nil {
			return nil, "", fmt.Errorf("check the scores: %w", err)
		}
	}
	for _, r := range rows {
		packed, err := unpackedScores(r.key, r.packed, r.digest)
		if err == nil && r.digest != rowDigestOf(orOne(packed)) {
			err = errors.New("its digest is not its scores'")
		}
		if err == nil {
			err = sameStored(packed, byKey[r.key])
		}
		if err != nil {
			if why == "" {
				why = err.Error()
			}
			bad = append(bad, r.key)
		}
	}
	return bad, why, nil
}

// orOne is scores, or one empty score when there is none (rowDigestOf
// needs one).
func orOne(scores []Score) []Score {
	if len(scores) == 0 {
		return []Score{{}}
	}
	return scores
}

// sameStored says how a key's scores as packed differ from its rows of
// scores (nil when they hold the same scores: metric, setting,
// prediction, digest and value, NULL for NULL).
func sameStored(packed, rows []Score) error {
	if len(packed) != len(rows) {
		return fmt.Errorf("its packed row holds %d scores and its rows of scores %d", len(packed), len(rows))
	}
	byMetric := make(map[string]Score, len(rows))
	for _, x := range rows {
		byMetric[x.Metric] = x
	}
	for _, p := range packed {
		x, ok := byMetric[p.Metric]
		switch {
		case !ok:
			return fmt.Errorf("its packed row holds metric %q, its rows of scores do not", p.Metric)
		case x.Setting != p.Setting || x.Prediction != p.Prediction || x.Digest != p.Digest:
			return fmt.Errorf("its packed row and its rows of scores differ in metric %q", p.Metric)
		case math.IsNaN(x.Value) != math.IsNaN(p.Value) || !math.IsNaN(x.Value) && math.Float64bits(x.Value) != math.Float64bits(p.Value):
			return fmt.Errorf("its packed row and its rows of scores differ in the value of metric %q", p.Metric)
		}
	}
	return nil
}

// sealLegacy seals, once, the packed rows of a store written before rows
// were sealed (a writing open, in its transaction): each row is first
// checked against its key's rows of scores (legacyCheck); a row that
// disagrees is dropped with the key's scores and digest, which the
// command (rescore, run) then computes again from the generation. Rows
// are read, checked and sealed sealBatch at a time (what is held is one
// batch). It returns the number of keys dropped.
func sealLegacy(ctx context.Context, tx *txn) (dropped int, err error) {
	if tx.eng == postgresEngine {
		return 0, nil
	}
	var id int64
	if err := tx.QueryRowContext(ctx, `PRAGMA application_id`).Scan(&id); err != nil {
		return 0, fmt.Errorf("seal the packed scores: %w", err)
	}
	if id == sealedAppID {
		return 0, nil
	}
	var has int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE name='packed_scores'`).Scan(&has); err != nil || has == 0 {
		return 0, err
	}
	put, err := tx.PrepareContext(ctx, `UPDATE packed_scores SET scores=? WHERE rowid=?`)
	if err != nil {
		return 0, err
	}
	defer put.Close()
	var buf []byte
	for after := int64(-1 << 63); ; {
		legacy, rowids, err := legacyBatch(ctx, tx, after)
		if err != nil {
			return dropped, err
		}
		if len(rowids) == 0 {
			break
		}
		after = rowids[len(rowids)-1]
		bad, _, err := legacyCheck(ctx, tx, legacy)
		if err != nil {
			return dropped, err
		}
		drop := map[ScoreKey]bool{}
		for _, k := range bad {
			drop[k] = true
		}
		for i, r := range legacy {
			if drop[r.key] {
				if _, err := tx.ExecContext(ctx, `DELETE FROM packed_scores WHERE rowid=?`, rowids[i]); err != nil {
					return dropped, fmt.Errorf("drop the damaged scores of %s/%s: %w", r.key.Task, r.key.SampleID, err)
				}
				if err := deleteKeyScores(ctx, tx, r.key); err != nil {
					return dropped, err
				}
				continue
			}
			buf = sealPacked(buf[:0], r.key, r.digest, r.packed)
			if _, err := put.ExecContext(ctx, buf, rowids[i]); err != nil {
				return dropped, fmt.Errorf("seal the packed scores of %s/%s: %w", r.key.Task, r.key.SampleID, err)
			}
		}
		dropped += len(drop)
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA application_id = %d`, sealedAppID)); err != nil {
		return dropped, fmt.Errorf("seal the packed scores: %w", err)
	}
	return dropped, nil
}

// sealBatch is how many packed rows sealLegacy reads, checks and seals
// at a time.
const sealBatch = 4096

// legacyBatch reads the next sealBatch packed rows from before seals
// after rowid after, and their rowids.
func legacyBatch(ctx context.Context, tx *txn, after int64) ([]legacyRow, []int64, error) {
	rows, err := tx.QueryContext(ctx, `SELECT rowid, gen_key, task, sample_id, setting_key, budget, digest, scores FROM packed_scores
		WHERE rowid > ? AND substr(scores, 1, 1) <> x'80' ORDER BY rowid LIMIT ?`, after, sealBatch)
	if err != nil {
		return nil, nil, fmt.Errorf("seal the packed scores: %w", err)
	}
	defer rows.Close()
	var legacy []legacyRow
	var rowids []int64
	for rows.Next() {
		var r legacyRow
		var rowid int64
		if err := rows.Scan(&rowid, &r.key.GenKey, &r.key.Task, &r.key.SampleID, &r.key.SettingKey, &r.key.Budget, &r.digest, &r.packed); err != nil {
			return nil, nil, fmt.Errorf("seal the packed scores: %w", err)
		}
		legacy, rowids = append(legacy, r), append(rowids, rowid)
	}
	return legacy, rowids, rows.Err()
}

// deleteKeyScores deletes a key's rows of scores, score_digests and
// packed_scores (SQLite).
func deleteKeyScores(ctx context.Context, tx *txn, k ScoreKey) error {
	for _, table := range []string{"scores", "score_digests", "packed_scores"} {
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE gen_key=? AND task=? AND sample_id=? AND setting_key=? AND budget=?`,
			k.GenKey, k.Task, k.SampleID, k.SettingKey, k.Budget); err != nil {
			return fmt.Errorf("drop the damaged scores of %s/%s: %w", k.Task, k.SampleID, err)
		}
	}
	return nil
}

// packedScoresFor is ScoresFor on a store that keeps packed_scores: each
// key's packed row read (the key's scores as EachEntry reads them, their
// runs not kept there: RunID 0), its seal checked, a row from before
// seals checked against the key's rows of scores. A damaged row is a
// *DamagedError.
func (s *Store) packedScoresFor(ctx context.Context, genKeys []string) ([]Score, error) {
	var out []Score
	var legacy []legacyRow
	const sep = "\xff"
	for in, args := range s.keyChunks(`SELECT concat_ws(?, gen_key, sample_id, task, budget, setting_key, digest), scores FROM packed_scores WHERE gen_key`, genKeys) {
		rows, err := s.db.QueryContext(ctx, in, append([]any{sep}, args...)...)
		if err != nil {
			return nil, fmt.Errorf("read scores: %w", err)
		}
		var fields, row sql.RawBytes
		for rows.Next() {
			if err := rows.Scan(&fields, &row); err != nil {
				rows.Close()
				return nil, fmt.Errorf("read scores: %w", err)
			}
			k, digest := packedKeyOf(fields)
			body, sealed, err := openSealed(fields, row)
			if err == nil && !sealed {
				legacy = append(legacy, legacyRow{k, digest, bytes.Clone(row)})
			}
			var scores []Score
			if err == nil {
				scores, err = unpackedScores(k, body, digest)
			}
			if err != nil {
				rows.Close()
				return nil, s.damagedScores(k, err.Error(), 0)
			}
			out = append(out, scores...)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return nil, fmt.Errorf("read scores: %w", err)
		}
	}
	if len(legacy) > 0 {
		bad, why, err := legacyCheck(ctx, s.db, legacy)
		if err != nil {
			return nil, err
		}
		if len(bad) > 0 {
			return nil, s.damagedScores(bad[0], why, len(bad)-1)
		}
	}
	return out, nil
}

// resealPacked seals every packed row again from what it holds now,
// whether its seal held or not: for a migration that rewrites the
// columns a seal covers (a key's task, sample, setting, budget or
// digest) with SQL, which breaks every seal it touches. It is no check:
// run it only on rows the migration itself wrote.
func resealPacked(ctx context.Context, tx *txn) error {
	put, err := tx.PrepareContext(ctx, `UPDATE packed_scores SET scores=? WHERE rowid=?`)
	if err != nil {
		return err
	}
	defer put.Close()
	var buf []byte
	for after := int64(-1 << 63); ; {
		rows, err := tx.QueryContext(ctx, `SELECT rowid, gen_key, task, sample_id, setting_key, budget, digest, scores FROM packed_scores
			WHERE rowid > ? ORDER BY rowid LIMIT ?`, after, sealBatch)
		if err != nil {
			return fmt.Errorf("reseal the packed scores: %w", err)
		}
		var batch []legacyRow
		var rowids []int64
		for rows.Next() {
			var r legacyRow
			var rowid int64
			if err := rows.Scan(&rowid, &r.key.GenKey, &r.key.Task, &r.key.SampleID, &r.key.SettingKey, &r.key.Budget, &r.digest, &r.packed); err != nil {
				rows.Close()
				return fmt.Errorf("reseal the packed scores: %w", err)
			}
			batch, rowids = append(batch, r), append(rowids, rowid)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return fmt.Errorf("reseal the packed scores: %w", err)
		}
		if len(batch) == 0 {
			return nil
		}
		after = rowids[len(rowids)-1]
		for i, r := range batch {
			body := r.packed
			if len(body) >= sealLen && body[0] == sealMarker {
				body = body[sealLen:]
			}
			buf = sealPacked(buf[:0], r.key, r.digest, body)
			if _, err := put.ExecContext(ctx, buf, rowids[i]); err != nil {
				return fmt.Errorf("reseal the packed scores of %s/%s: %w", r.key.Task, r.key.SampleID, err)
			}
		}
	}
}
