package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// A SQLite store (schema 6) keeps, beside the scores table's row per
// metric, one row per (generation, sample, setting, budget) in
// packed_scores holding all of that key's scores packed in one column:
// what EachEntry reads, a quarter of the rows, where SQLite's cost is per
// row (2.4 million scores: 1.8 s to read as scores, 0.34 s as packed
// rows, one core). Every writer of a SQLite store's scores keeps it in
// the same transaction: putScores (a key's row replaced by its new
// scores), DeleteScores, Copy (refreshKeyDigests packs what the
// destination then holds) and the migration that adds it (packed from the
// scores). A key's row is deleted and inserted again whenever its scores
// are written, so that the rows' order (rowid) is the order in which the
// keys' scores were last written, as the scores table's is.
//
// The packed form is each score in turn: a flags byte; the metric; the
// setting name when it differs from the previous score's (always for the
// first), the prediction likewise; the digest when it differs from the
// row's (the key's digest, MixedDigest when its scores disagree); and the
// value's IEEE 754 bits (8 bytes, little-endian) unless the value is NULL
// (stored for NaN and ±Inf, as in scores). Strings are a uvarint length
// and their bytes. PostgreSQL stores read the scores table, as before.

// packedScoresSchema is the SQLite schema version that added
// packed_scores.
const packedScoresSchema = 6

// hasPackedScores reports whether the store keeps packed_scores (SQLite,
// schema 6 or later).
func (s *Store) hasPackedScores() bool {
	return s.db.eng != postgresEngine && (s.schema == 0 || s.schema >= packedScoresSchema)
}

// Flags of a packed score.
const (
	packedSetting    = 1 << iota // the setting name follows the metric
	packedPrediction             // the prediction follows
	packedDigest                 // the score's own digest follows
	packedNull                   // no value: NULL
)

// packScores appends to dst the packed form of one key's scores, in
// order, under the key's digest rowDigest.
func packScores(dst []byte, scores []Score, rowDigest string) []byte {
	for i, x := range scores {
		var flags byte
		if i == 0 || x.Setting != scores[i-1].Setting {
			flags |= packedSetting
		}
		if i == 0 || x.Prediction != scores[i-1].Prediction {
			flags |= packedPrediction
		}
		if x.Digest != rowDigest {
			flags |= packedDigest
		}
		if math.IsNaN(x.Value) || math.IsInf(x.Value, 0) {
			flags |= packedNull
		}
		dst = append(dst, flags)
		dst = appendPackedString(dst, x.Metric)
		if flags&packedSetting != 0 {
			dst = appendPackedString(dst, x.Setting)
		}
		if flags&packedPrediction != 0 {
			dst = appendPackedString(dst, x.Prediction)
		}
		if flags&packedDigest != 0 {
			dst = appendPackedString(dst, x.Digest)
		}
		if flags&packedNull == 0 {
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(x.Value))
		}
	}
	return dst
}

func appendPackedString(dst []byte, s string) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(s))), s...)
}

// packedScore is one score of a packed row as read: its byte fields point
// into the row (valid until the next row), the setting and prediction
// carried over from the score before when they repeat it, the digest the
// row's unless the score has its own.
type packedScore struct {
	metric, setting, prediction, digest []byte
	value                               float64
	null                                bool
}

// errPacked is the error of a packed row that does not parse.
var errPacked = errors.New("malformed packed scores")

// unpackScores calls fn with each score of a packed row in turn (the same
// packedScore, updated).
func unpackScores(b, rowDigest []byte, fn func(*packedScore) error) error {
	var r packedReader
	r.reset(b, rowDigest)
	for {
		ok, err := r.next()
		if err != nil || !ok {
			return err
		}
		if err := fn(&r.score); err != nil {
			return err
		}
	}
}

// packedReader reads the scores of a packed row one at a time (next),
// into score.
type packedReader struct {
	b, rowDigest []byte
	first        bool
	score        packedScore
}

// reset starts reading packed row b, whose digest is rowDigest.
func (r *packedReader) reset(b, rowDigest []byte) {
	r.b, r.rowDigest, r.first = b, rowDigest, true
}

// next reads the next score into r.score; ok is false at the row's end.
func (r *packedReader) next() (ok bool, err error) {
	b, p := r.b, &r.score
	if len(b) == 0 {
		return false, nil
	}
	flags := b[0]
	b = b[1:]
	if flags&^(packedSetting|packedPrediction|packedDigest|packedNull) != 0 || r.first && flags&(packedSetting|packedPrediction) != packedSetting|packedPrediction {
		return false, errPacked
	}
	if p.metric, b, ok = cutPackedString(b); !ok {
		return false, errPacked
	}
	if flags&packedSetting != 0 {
		if p.setting, b, ok = cutPackedString(b); !ok {
			return false, errPacked
		}
	}
	if flags&packedPrediction != 0 {
		if p.prediction, b, ok = cutPackedString(b); !ok {
			return false, errPacked
		}
	}
	p.digest = r.rowDigest
	if flags&packedDigest != 0 {
		if p.digest, b, ok = cutPackedString(b); !ok {
			return false, errPacked
		}
	}
	p.null, p.value = flags&packedNull != 0, 0
	if !p.null {
		if len(b) < 8 {
			return false, errPacked
		}
		p.value, b = math.Float64frombits(binary.LittleEndian.Uint64(b)), b[8:]
	}
	r.b, r.first = b, false
	return true, nil
}

func cutPackedString(b []byte) (s, rest []byte, ok bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, nil, false
	}
	return b[k : k+int(n)], b[k+int(n):], true
}

// packedStatements are the statements that replace a key's packed row.
type packedStatements struct {
	del, put *sql.Stmt
}

func preparePacked(ctx context.Context, tx *txn) (*packedStatements, error) {
	del, err := tx.PrepareContext(ctx, `DELETE FROM packed_scores WHERE gen_key=? AND task=? AND sample_id=? AND setting_key=? AND budget=?`)
	if err != nil {
		return nil, err
	}
	// OR REPLACE deletes the key's row and inserts it again, at the end.
	put, err := tx.PrepareContext(ctx, `INSERT OR REPLACE INTO packed_scores(gen_key,task,sample_id,setting_key,budget,digest,scores) VALUES(?,?,?,?,?,?,?)`)
	if err != nil {
		del.Close()
		return nil, err
	}
	return &packedStatements{del, put}, nil
}

func (p *packedStatements) Close() { p.del.Close(); p.put.Close() }

// replace deletes key k's packed row and, when it has scores, inserts it
// again (at the end of the table) with them.
func (p *packedStatements) replace(ctx context.Context, k ScoreKey, scores []Score, buf []byte) ([]byte, error) {
	if len(scores) == 0 {
		if _, err := p.del.ExecContext(ctx, k.GenKey, k.Task, k.SampleID, k.SettingKey, k.Budget); err != nil {
			return buf, fmt.Errorf("delete the packed scores of %s/%s: %w", k.Task, k.SampleID, err)
		}
		return buf, nil
	}
	digest := rowDigestOf(scores)
	buf = packSealed(buf[:0], k, scores, digest)
	if _, err := p.put.ExecContext(ctx, k.GenKey, k.Task, k.SampleID, k.SettingKey, k.Budget, digest, buf); err != nil {
		return buf, fmt.Errorf("store the packed scores of %s/%s: %w", k.Task, k.SampleID, err)
	}
	return buf, nil
}

// putPackedScores replaces the packed rows of the keys of scores grouped
// by key (keyScores), which replace every score of their keys (putScores).
func putPackedScores(ctx context.Context, tx *txn, groups [][]Score) error {
	p, err := preparePacked(ctx, tx)
	if err != nil {
		return err
	}
	defer p.Close()
	var buf []byte
	for _, ks := range groups {
		if buf, err = p.replace(ctx, ks[0].Key(), ks, buf); err != nil {
			return err
		}
	}
	return nil
}

// packedScoreCols are the columns of scores a packed row is made of, as
// scanPackedSource reads them.
const packedScoreCols = `gen_key,task,sample_id,setting_key,budget,metric,setting,value,prediction,digest`

// scanPackedSource reads a scores row of packedScoreCols (and of more
// columns after them, into more).
func scanPackedSource(rows *sql.Rows, more ...any) (Score, error) {
	var x Score
	var v sql.NullFloat64
	if err := rows.Scan(append([]any{&x.GenKey, &x.Task, &x.SampleID, &x.SettingKey, &x.Budget, &x.Metric, &x.Setting, &v, &x.Prediction, &x.Digest}, more...)...); err != nil {
		return Score{}, err
	}
	x.Value = math.NaN()
	if v.Valid {
		x.Value = v.Float64
	}
	return x, nil
}

// refreshPackedScores packs again, from the scores stored for them, the
// rows of keys whose scores a write merged with those stored (Copy), and
// sets their score_digests rows (refreshKeyDigests on SQLite), deleting
// both for a key left with no scores.
func refreshPackedScores(ctx context.Context, tx *txn, keys []ScoreKey) error {
	p, err := preparePacked(ctx, tx)
	if err != nil {
		return err
	}
	defer p.Close()
	get, err := tx.PrepareContext(ctx, `SELECT `+packedScoreCols+` FROM scores
		WHERE gen_key=? AND task=? AND sample_id=? AND setting_key=? AND budget=? ORDER BY rowid`)
	if err != nil {
		return err
	}
	defer get.Close()
	noDigest, err := tx.PrepareContext(ctx, `DELETE FROM score_digests WHERE gen_key=? AND task=? AND sample_id=? AND setting_key=? AND budget=?`)
	if err != nil {
		return err
	}
	defer noDigest.Close()
	var buf []byte
	var digests [][]Score
	for _, k := range keys {
		rows, err := get.QueryContext(ctx, k.GenKey, k.Task, k.SampleID, k.SettingKey, k.Budget)
		if err != nil {
			return fmt.Errorf("read the scores of %s/%s: %w", k.Task, k.SampleID, err)
		}
		var scores []Score
		for rows.Next() {
			x, err := scanPackedSource(rows)
			if err != nil {
				rows.Close()
				return fmt.Errorf("read the scores of %s/%s: %w", k.Task, k.SampleID, err)
			}
			scores = append(scores, x)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read the scores of %s/%s: %w", k.Task, k.SampleID, err)
		}
		if len(scores) > 0 {
			digests = append(digests, scores)
		} else if _, err := noDigest.ExecContext(ctx, k.GenKey, k.Task, k.SampleID, k.SettingKey, k.Budget); err != nil {
			return fmt.Errorf("delete the digest of the scores of %s/%s: %w", k.Task, k.SampleID, err)
		}
		if buf, err = p.replace(ctx, k, scores, buf); err != nil {
			return err
		}
	}
	return putKeyDigests(ctx, tx, keyDigests(digests))
}

// fillPackedScores packs the scores of a store that had no packed_scores
// (migration 6), then indexes the rows by key: each key's scores in the
// order written, its row given the rowid of its last score, so that the
// rows come in the order the keys' scores were last written. The scores
// are read once in rowid order; a key's scores are consecutive unless a
// copy merged some, whose row is then read back and packed again with
// the scores that follow.
func fillPackedScores(ctx context.Context, tx *txn) error {
	rows, err := tx.QueryContext(ctx, `SELECT `+packedScoreCols+`, rowid FROM scores ORDER BY rowid`)
	if err != nil {
		return fmt.Errorf("pack the scores: %w", err)
	}
	defer rows.Close()
	put, err := tx.PrepareContext(ctx, `INSERT INTO packed_scores(rowid,gen_key,task,sample_id,setting_key,budget,digest,scores) VALUES(?,?,?,?,?,?,?,?)`)
	if err != nil {
		return fmt.Errorf("pack the scores: %w", err)
	}
	defer put.Close()
	// packedAt is each key's row so far, by the SHA-256 of the key.
	packedAt := map[[32]byte]int64{}
	var group []Score
	var last int64
	var buf []byte
	flush := func() error {
		if len(group) == 0 {
			return nil
		}
		k := group[0].Key()
		h := sha256.Sum256(fmt.Appendf(nil, "%q %q %q %q %d", k.GenKey, k.Task, k.SampleID, k.SettingKey, k.Budget))
		if at, ok := packedAt[h]; ok {
			earlier, err := readPackedRow(ctx, tx, k, at)
			if err != nil {
				return err
			}
			group = append(earlier, group...)
		}
		digest := rowDigestOf(group)
		buf = packSealed(buf[:0], k, group, digest)
		if _, err := put.ExecContext(ctx, last, k.GenKey, k.Task, k.SampleID, k.SettingKey, k.Budget, digest, buf); err != nil {
			return fmt.Errorf("pack the scores of %s/%s: %w", k.Task, k.SampleID, err)
		}
		packedAt[h] = last
		group = group[:0]
		return nil
	}
	for rows.Next() {
		var rowid int64
		x, err := scanPackedSource(rows, &rowid)
		if err != nil {
			return fmt.Errorf("pack the scores: %w", err)
		}
		if len(group) > 0 && x.Key() != group[0].Key() {
			if err := flush(); err != nil {
				return err
			}
		}
		group, last = append(group, x), rowid
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("pack the scores: %w", err)
	}
	if err := flush(); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `CREATE UNIQUE INDEX packed_scores_key ON packed_scores(gen_key, task, sample_id, setting_key, budget)`); err != nil {
		return fmt.Errorf("index the packed scores: %w", err)
	}
	return nil
}

// readPackedRow reads back, and deletes, the packed row at rowid of key
// k (fillPackedScores), as its scores.
func readPackedRow(ctx context.Context, tx *txn, k ScoreKey, rowid int64) ([]Score, error) {
	var digest string
	var packed []byte
	err := tx.QueryRowContext(ctx, `SELECT digest, scores FROM packed_scores WHERE rowid=?`, rowid).Scan(&digest, &packed)
	var out []Score
	if err == nil {
		out, err = unpackedScores(k, packed, digest)
	}
	if err == nil {
		_, err = tx.ExecContext(ctx, `DELETE FROM packed_scores WHERE rowid=?`, rowid)
	}
	if err != nil {
		return nil, fmt.Errorf("pack the scores of %s/%s: %w", k.Task, k.SampleID, err)
	}
	return out, nil
}

// unpackedScores is key k's packed row (under its digest) as its scores,
// a NULL value NaN; the row's seal, when it has one, is checked.
func unpackedScores(k ScoreKey, packed []byte, digest string) ([]Score, error) {
	var out []Score
	packed, _, err := openSealedKey(k, digest, packed)
	if err != nil {
		return nil, err
	}
	err = unpackScores(packed, []byte(digest), func(p *packedScore) error {
		x := Score{GenKey: k.GenKey, Task: k.Task, SampleID: k.SampleID, SettingKey: k.SettingKey, Budget: k.Budget, Metric: string(p.metric),
			Setting: string(p.setting), Prediction: string(p.prediction), Digest: string(p.digest), Value: p.value}
		if p.null {
			x.Value = math.NaN()
		}
		out = append(out, x)
		return nil
	})
	return out, err
}

// eachPackedEntry is EachEntry on a SQLite store that keeps
// packed_scores: its rows read in ranges on several cores (inRangesOrdered)
// and unpacked into entries, in storage order.
func (s *Store) eachPackedEntry(ctx context.Context, f Filter, fpOf *genIndex, fn func(Entry) error) error {
	sep := s.fieldSep()
	q := `SELECT concat_ws(?, gen_key, sample_id, task, budget, setting_key, digest), scores FROM packed_scores`
	conds, args := entryConds(f, false, sep) // settings: by each score's name
	settings := map[string]bool{}
	for _, x := range f.Settings {
		settings[x] = true
	}
	p := packedParser{sep: sep[0], fpOf: fpOf, settings: settings}
	return s.inRangesOrdered(ctx, "packed_scores", "read scores", q, conds, args, s.scanSealed, func(r *rangeRows) error {
		if err := s.checkLegacyRows(ctx, r); err != nil {
			return err
		}
		return r.each(func(raw, packed []byte, _ float64) error { return p.give(raw, packed, fn) })
	})
}

// scanSealed reads a packed row (its key's fields joined, and its column
// of scores) into a range's rows, its seal checked and cut off; a row
// from before seals is kept whole and its place noted (r.legacy), for
// checkLegacyRows.
func (s *Store) scanSealed(rows *sql.Rows, out *rangeRows) error {
	var fields, row sql.RawBytes
	if err := rows.Scan(&fields, &row); err != nil {
		return err
	}
	body, sealed, err := openSealed(fields, row)
	if err != nil {
		k, _ := packedKeyOf(fields)
		return s.damagedScores(k, err.Error(), 0)
	}
	if !sealed {
		out.legacy = append(out.legacy, len(out.values))
	}
	out.add(fields, body)
	return nil
}

// checkLegacyRows checks the rows of a range that are from before seals
// against their keys' rows of scores (legacyCheck).
func (s *Store) checkLegacyRows(ctx context.Context, r *rangeRows) error {
	if len(r.legacy) == 0 {
		return nil
	}
	rows := make([]legacyRow, 0, len(r.legacy))
	for _, i := range r.legacy {
		start := 0
		if i > 0 {
			start = r.ends[2*i-1]
		}
		fields, packed := r.buf[start:r.ends[2*i]], r.buf[r.ends[2*i]:r.ends[2*i+1]]
		k, digest := packedKeyOf(fields)
		rows = append(rows, legacyRow{k, digest, packed})
	}
	bad, why, err := legacyCheck(ctx, s.db, rows)
	if err != nil {
		return err
	}
	if len(bad) > 0 {
		return s.damagedScores(bad[0], why, len(bad)-1)
	}
	return nil
}

// packedParser turns packed rows into Entries, as entryParser does rows of
// scores: strings that repeat from one entry to the next are not copied
// again, and cells are numbered as met.
type packedParser struct {
	sep      byte
	fpOf     *genIndex
	settings map[string]bool // the settings selected (all when empty)
	cells    map[string]entryCell
	cellKey  []byte
	rd       packedReader
	last     Entry
}

// give hands fn the entries of a packed row (none when its generation is
// not selected).
func (p *packedParser) give(raw, packed []byte, fn func(Entry) error) error {
	f, ok := splitFields(raw, p.sep)
	if !ok {
		return fmt.Errorf("read scores: malformed row %q", raw)
	}
	genKey, sampleID, task, budget, settingKey, digest := f[0], f[1], f[2], f[3], f[4], f[5]
	e := &p.last
	if e.GenKey == "" || e.GenKey != string(genKey) {
		e.GenKey = string(genKey)
		e.Fingerprint, e.Gen = p.fpOf.of(genKey)
	}
	if e.Fingerprint == "" {
		return nil
	}
	if string(sampleID) != e.SampleID {
		e.SampleID = string(sampleID)
	}
	p.rd.reset(packed, digest)
	for {
		ok, err := p.rd.next()
		if err != nil {
			return fmt.Errorf("read scores of %s/%s: %w", task, sampleID, err)
		}
		if !ok {
			return nil
		}
		x := &p.rd.score
		if len(p.settings) > 0 && !p.settings[string(x.setting)] {
			continue
		}
		p.cellKey = p.cellKey[:0]
		for _, part := range [][]byte{task, budget, settingKey, x.metric} {
			p.cellKey = append(append(p.cellKey, part...), p.sep)
		}
		p.cellKey = append(p.cellKey, x.setting...)
		c, found := p.cells[string(p.cellKey)]
		if !found {
			b, err := strconv.Atoi(string(budget))
			if err != nil {
				return fmt.Errorf("read scores: malformed row %q", raw)
			}
			if p.cells == nil {
				p.cells = map[string]entryCell{}
			}
			c = entryCell{task: string(task), budget: b, metric: string(x.metric), setting: string(x.setting), settingKey: string(settingKey), id: len(p.cells)}
			p.cells[string(p.cellKey)] = c
		}
		e.Task, e.Budget, e.Metric, e.Setting, e.SettingKey, e.Cell = c.task, c.budget, c.metric, c.setting, c.settingKey, c.id
		if string(x.digest) != e.Digest {
			e.Digest = string(x.digest)
		}
		if string(x.prediction) != e.Prediction {
			e.Prediction = string(x.prediction)
		}
		e.Value = x.value // NULL reads as 0, as COALESCE(value,0) does
		if err := fn(*e); err != nil {
			return err
		}
	}
}
