package store

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
)

// A stored sample is sealed as packed scores and generations are
// (seal.go, genseal.go): its seal column holds three CRC-32Cs in
// hexadecimal, of its id and references, of its prompt, and of its
// metadata column, each checked by the reads that read what it covers (a
// read that cuts the metadata column short checks the first two only).
// A flipped bit in a sample's references, prompt or metadata, which a
// score's digest or a report reads, is named as damage rather than turned
// into another number (a reference read damaged would make a stored score
// look stale and be recomputed against it). The task column is not
// covered: a task's rows move under a variant's key (migration 7,
// AdoptLegacy) without being read. A sample written before samples were
// sealed has an empty seal, and is sealed by migration 7 as it is (there
// is no second copy to check it against).

// sampleSealLen is the length of a sample's seal: three CRC-32Cs in
// hexadecimal.
const sampleSealLen = 24

// sampleSeal is the seal of a sample's id, references, prompt and
// metadata column.
func sampleSeal(id string, refs []byte, prompt string, meta []byte) string {
	var b [12]byte
	h := crc32.New(castagnoli)
	h.Write([]byte(id))
	h.Write([]byte{0xFF})
	h.Write(refs)
	binary.BigEndian.PutUint32(b[0:], h.Sum32())
	binary.BigEndian.PutUint32(b[4:], crc32.Checksum([]byte(prompt), castagnoli))
	binary.BigEndian.PutUint32(b[8:], crc32.Checksum(meta, castagnoli))
	return hex.EncodeToString(b[:])
}

// errSampleSeal is the error of a sample whose seal does not hold.
var errSampleSeal = errors.New("its checksum does not match what it holds: the row is damaged")

// checkSampleSeal checks the parts of a sample's seal that cover what was
// read: its id and references always, its prompt when read (hasPrompt),
// its metadata when read whole (wholeMeta). An empty seal (a sample from
// before seals) is not checked.
func checkSampleSeal(seal, id string, refs []byte, prompt string, hasPrompt bool, meta []byte, wholeMeta bool) error {
	if seal == "" {
		return nil
	}
	if len(seal) != sampleSealLen {
		return errSampleSeal
	}
	want := sampleSeal(id, refs, prompt, meta)
	if seal[:8] != want[:8] || hasPrompt && seal[8:16] != want[8:16] || wholeMeta && seal[16:] != want[16:] {
		return errSampleSeal
	}
	return nil
}

// damagedSample is the DamagedError of a stored sample.
func (s *Store) damagedSample(task, id string) error {
	return &DamagedError{Store: s.Path(), What: fmt.Sprintf("the sample %s/%s", task, id), Why: errSampleSeal.Error()}
}

// sealSamples seals every sample of a store written before samples were
// sealed, as it is (migration 7's step).
func sealSamples(ctx context.Context, tx *txn) error {
	type row struct {
		task, id, seal string
	}
	var todo []row
	rows, err := tx.QueryContext(ctx, `SELECT task, id, prompt, refs, metadata FROM samples WHERE seal = ''`)
	if err != nil {
		return fmt.Errorf("seal samples: %w", err)
	}
	for rows.Next() {
		var r row
		var prompt, refs, meta []byte
		if err := rows.Scan(&r.task, &r.id, &prompt, &refs, &meta); err != nil {
			rows.Close()
			return fmt.Errorf("seal samples: %w", err)
		}
		r.seal = sampleSeal(r.id, refs, string(prompt), meta)
		todo = append(todo, r)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return fmt.Errorf("seal samples: %w", err)
	}
	for _, r := range todo {
		if _, err := tx.ExecContext(ctx, `UPDATE samples SET seal=? WHERE task=? AND id=?`, r.seal, r.task, r.id); err != nil {
			return fmt.Errorf("seal sample %s/%s: %w", r.task, r.id, err)
		}
	}
	return nil
}

// sealColumn is the samples' seal as a read selects it: an empty string on a store an
// earlier tally wrote and no command has migrated (it has no such column).
func (s *Store) sealColumn() string {
	if s.hasVariants() {
		return "seal"
	}
	return "''"
}
