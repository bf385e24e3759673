package store

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
)

// This file holds how EachEntry turns score rows into Entries, and how it
// reads a SQLite store's scores on several cores while handing them over
// in storage order.

// entryCell is a score's cell (task, budget, metric, setting, setting
// key), numbered within one EachEntry call.
type entryCell struct {
	task, metric, setting, settingKey string
	budget, id                        int
}

// entryParser reads EachEntry's rows. The generation key and sample id
// come first, then the cell, the score's digest, and (folded: SQLite) its
// prediction last, whatever it holds: what lies between the first two and
// the digest (the cell) repeats for every score of the cell and is parsed
// once; consecutive rows mostly share their generation, sample, digest and
// prediction, which are then not copied again. One parser reads one
// sequence of rows.
type entryParser struct {
	sep    string
	folded bool
	fpOf   *genIndex
	cells  map[string]entryCell
	last   Entry
}

// parse returns the Entry of a row; ok is false for a score whose
// generation is gone (or not selected).
func (p *entryParser) parse(raw, predRaw []byte, value float64) (_ Entry, ok bool, err error) {
	var at [8]int // the first eight separators (unfolded: seven, and the end)
	want := len(at)
	if !p.folded {
		want, at[7] = 7, len(raw)
	}
	sep := p.sep[0]
	n, from := 0, 0
	for ; n < want; n++ {
		k := bytes.IndexByte(raw[from:], sep)
		if k < 0 {
			break
		}
		at[n] = from + k
		from = at[n] + 1
	}
	if n < want {
		return Entry{}, false, fmt.Errorf("read scores: malformed row %q", raw)
	}
	e := &p.last
	e.Value = value
	genKey, sampleID, cellRaw, digest, pred := raw[:at[0]], raw[at[0]+1:at[1]], raw[at[1]+1:at[6]], raw[at[6]+1:at[7]], predRaw
	if p.folded {
		pred = raw[at[7]+1:]
	}
	if string(digest) != e.Digest {
		e.Digest = string(digest)
	}
	if string(sampleID) != e.SampleID {
		e.SampleID = string(sampleID)
	}
	if string(pred) != e.Prediction {
		e.Prediction = string(pred)
	}
	c, found := p.cells[string(cellRaw)]
	if !found {
		if c, err = p.cell(cellRaw); err != nil {
			return Entry{}, false, err
		}
	}
	e.Task, e.Budget, e.Metric, e.Setting, e.SettingKey, e.Cell = c.task, c.budget, c.metric, c.setting, c.settingKey, c.id
	if e.GenKey == "" || e.GenKey != string(genKey) {
		e.GenKey = string(genKey)
		e.Fingerprint, e.Gen = p.fpOf.of(genKey)
	}
	return *e, e.Fingerprint != "", nil
}

// give parses one row and hands its entry to fn, unless the row is one
// the read skips.
func (p *entryParser) give(raw, predRaw []byte, value float64, fn func(Entry) error) error {
	e, ok, err := p.parse(raw, predRaw, value)
	if err != nil || !ok {
		return err
	}
	return fn(e)
}

// cell parses a cell's joined fields and numbers it.
func (p *entryParser) cell(raw []byte) (entryCell, error) {
	k := string(raw)
	parts := strings.SplitN(k, p.sep, 5)
	if len(parts) != 5 {
		return entryCell{}, fmt.Errorf("read scores: malformed cell %q", k)
	}
	b, err := strconv.Atoi(parts[1])
	if err != nil {
		return entryCell{}, fmt.Errorf("read scores: malformed cell %q", k)
	}
	if p.cells == nil {
		p.cells = map[string]entryCell{}
	}
	c := entryCell{task: parts[0], budget: b, metric: parts[2], setting: parts[3], settingKey: parts[4], id: len(p.cells)}
	p.cells[k] = c
	return c, nil
}

// entryRange is the number of rowids of the scores table one reader
// reads at a time: a range's rows are held until fn has seen those of
// every range before it (a few megabytes each).
const entryRange = 1 << 14

// rangeRows are the rows of one range as read: each row's two byte
// columns, one after the other in buf (the first ending at ends[2i], the
// second at ends[2i+1]), and its value. They hold no pointers, which the
// collector would scan.
type rangeRows struct {
	buf    []byte
	ends   []int
	values []float64
	// legacy are the rows (their places) of packed_scores from before
	// seals (scanSealed).
	legacy []int
	err    error
}

// add appends a row of two byte columns.
func (r *rangeRows) add(a, b []byte) { r.addValue(a, b, 0) }

// addValue appends a row of two byte columns and a value.
func (r *rangeRows) addValue(a, b []byte, v float64) {
	r.buf = append(r.buf, a...)
	r.ends = append(r.ends, len(r.buf))
	r.buf = append(r.buf, b...)
	r.ends = append(r.ends, len(r.buf))
	r.values = append(r.values, v)
}

// scanPair reads a row of two byte columns into a range's rows.
func scanPair(rows *sql.Rows, out *rangeRows) error {
	var a, b sql.RawBytes
	if err := rows.Scan(&a, &b); err != nil {
		return err
	}
	out.add(a, b)
	return nil
}

// each calls fn with every row in turn.
func (r *rangeRows) each(fn func(a, b []byte, v float64) error) error {
	start := 0
	for k, v := range r.values {
		mid, end := r.ends[2*k], r.ends[2*k+1]
		if err := fn(r.buf[start:mid], r.buf[mid:end], v); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// eachEntryInRanges is EachEntry on a SQLite store without packed_scores
// (its rows are folded: one column and the value), read by inRangesOrdered.
func (s *Store) eachEntryInRanges(ctx context.Context, q string, conds []string, args []any, p *entryParser, fn func(Entry) error) error {
	scan := func(rows *sql.Rows, out *rangeRows) error {
		var raw, predRaw sql.RawBytes
		var value float64
		if err := rows.Scan(&raw, &value, &predRaw); err != nil {
			return err
		}
		out.addValue(raw, nil, value)
		return nil
	}
	return s.inRangesOrdered(ctx, "scores", "read scores", q, conds, args, scan, func(r *rangeRows) error {
		return r.each(func(raw, _ []byte, v float64) error { return p.give(raw, nil, v, fn) })
	})
}

// inRangesOrdered reads a SQLite table in ranges of entryRange rowids,
// each in rowid order, by one reader a core (a connection each, leaving
// one of the store's for use), a few ranges ahead of use, which gets
// every range's rows in turn: the order of one scan of the table, with
// the driver's work (most of a scan's) on every core while use works. q
// is the query without its WHERE clause (its first argument args[0]),
// conds its conditions (ANDed, their arguments the rest of args); scan
// reads a row into a range's rows; what names the read in its errors.
func (s *Store) inRangesOrdered(ctx context.Context, table, what, q string, conds []string, args []any,
	scan func(*sql.Rows, *rangeRows) error, use func(*rangeRows) error) error {
	var lo, hi sql.NullInt64
	if err := s.db.QueryRowContext(ctx, rowidBounds(table)).Scan(&lo, &hi); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if !lo.Valid {
		return nil // no rows
	}
	q += " WHERE " + strings.Join(append([]string{"rowid >= ? AND rowid < ?"}, conds...), " AND ") + " ORDER BY rowid"
	read := func(ctx context.Context, from int64, out *rangeRows) {
		out.buf, out.ends, out.values, out.legacy = out.buf[:0], out.ends[:0], out.values[:0], out.legacy[:0]
		rows, err := s.db.QueryContext(ctx, q, append([]any{args[0], from, from + entryRange}, args[1:]...)...)
		if err != nil {
			out.err = fmt.Errorf("%s: %w", what, err)
			return
		}
		defer rows.Close()
		for rows.Next() {
			if err := scan(rows, out); err != nil {
				out.err = fmt.Errorf("%s: %w", what, err)
				return
			}
		}
		if err := rows.Err(); err != nil {
			out.err = fmt.Errorf("%s: %w", what, err)
		}
	}
	ranges := int((hi.Int64-lo.Int64)/entryRange) + 1
	readers := min(runtime.GOMAXPROCS(0), maxOpenSQLite-1, ranges)
	// Range i is read into slots[i%len(slots)]: a reader takes the next
	// range once fn is done with the one that used its slot before, so
	// that at most len(slots) ranges are held, and each slot's buffers
	// are reused.
	slots := make([]rangeRows, 2*max(readers, 1))
	ready := make([]chan struct{}, len(slots)) // a range read into the slot
	free := make(chan struct{}, len(slots))    // a slot fn is done with
	for i := range slots {
		ready[i] = make(chan struct{}, 1)
		free <- struct{}{}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }() // readers end at fn's error too
	var mu sync.Mutex
	nextRange := 0
	for range readers {
		wg.Go(func() {
			for {
				// Ranges are taken in order, each once a slot is free:
				// the slots taken and not yet freed are those of the
				// ranges fn has not finished, consecutive, so range i's
				// slot is free.
				mu.Lock()
				select {
				case <-free:
				case <-ctx.Done():
					mu.Unlock()
					return
				}
				i := nextRange
				nextRange++
				mu.Unlock()
				if i >= ranges {
					return
				}
				read(ctx, lo.Int64+int64(i)*entryRange, &slots[i%len(slots)])
				ready[i%len(slots)] <- struct{}{}
			}
		})
	}
	for i := range ranges {
		r := &slots[i%len(slots)]
		select {
		case <-ready[i%len(slots)]:
		case <-ctx.Done():
			return ctx.Err()
		}
		if r.err != nil {
			return r.err
		}
		if err := ctx.Err(); err != nil { // a range read ahead is not used
			return err
		}
		if err := use(r); err != nil {
			return err
		}
		free <- struct{}{}
	}
	return nil
}
