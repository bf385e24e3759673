package store

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
	"unsafe"
)

// A generation that a SQLite store holds is sealed too: its stop record
// (the stops column, a JSON object) ends with a member "seal" of sixteen
// hexadecimal digits, two CRC-32Cs: the first of what a report reads of
// every generation (key, model fingerprint, finish), the second of every
// field a plan, a comparison or a rescore reads (key, fingerprint, prompt
// tokens, text, token ids and offsets, tokens, budget, finish, the stop
// record without its seal, error, continued, imported). A command that
// reads a generation checks the seal of what it reads and refuses a
// generation whose seal does not hold (a *DamagedError), rather than
// score or count it. Readers of the stop record (json.Unmarshal) ignore
// the member, and every reader of the store hands the record on without
// it. The seal leaves out the task and sample id, which the upsert of a
// generation keeps from the row it replaces (two tasks may share a
// prompt, and so a generation), and the run, time and seconds, which a
// copy into another store may change. A generation written by an earlier
// tally, or whose record is not an object (an import's null), has no
// seal, and is read as it is.

// genSealTail is the length of the seal's member at the end of a stop
// record: `"seal":"` (8 bytes), 16 hexadecimal digits, `"}`.
const genSealTail = 8 + 16 + 2

// genFields are the fields of a generation row that its seal covers, as
// stored (text, ids and offsets as bytes, the error before redaction).
type genFields struct {
	key, fingerprint              string
	promptTokens, nTokens, budget int
	text, ids, offsets            []byte
	finish, stops, errText        string
	continued, imported           int
}

// genSums are the two checksums of a generation's seal: of what a report
// reads (key, fingerprint, finish) and of everything.
func genSums(g *genFields) (shown, all uint32) {
	var b, nb [20]byte
	part := func(c uint32, p []byte) uint32 {
		return crc32.Update(crc32.Update(c, castagnoli, binary.AppendUvarint(b[:0], uint64(len(p)))), castagnoli, p)
	}
	str := func(c uint32, s string) uint32 { return part(c, unsafe.Slice(unsafe.StringData(s), len(s))) }
	num := func(c uint32, n int) uint32 { return part(c, strconv.AppendInt(nb[:0], int64(n), 10)) }
	shown = str(str(str(0, g.key), g.fingerprint), g.finish)
	all = str(str(0, g.key), g.fingerprint)
	all = num(all, g.promptTokens)
	all = part(all, g.text)
	all = part(all, g.ids)
	all = part(all, g.offsets)
	all = num(num(all, g.nTokens), g.budget)
	all = str(str(all, g.finish), g.stops)
	all = str(all, g.errText)
	all = num(num(all, g.continued), g.imported)
	return shown, all
}

// sealStops returns the stop record g.stops with g's seal as its last
// member (g.stops as it is when it is not a JSON object).
func sealStops(g *genFields) string {
	s := g.stops
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
		return s
	}
	shown, all := genSums(g)
	var b strings.Builder
	b.Grow(len(s) + genSealTail + 1)
	b.WriteString(s[:len(s)-1])
	if strings.TrimSpace(s[1:len(s)-1]) != "" {
		b.WriteByte(',')
	}
	fmt.Fprintf(&b, `"seal":"%08x%08x"}`, shown, all)
	return b.String()
}

// splitSeal parses a stop record as stored: the record without its seal,
// and the seal's two sums (sealed false: the record has none).
func splitSeal(stored string) (stops string, shown, all uint32, sealed bool) {
	n := len(stored)
	if n < genSealTail+1 || !strings.HasSuffix(stored, `"}`) || stored[n-genSealTail:n-genSealTail+8] != `"seal":"` {
		return stored, 0, 0, false
	}
	var sums [8]byte
	if _, err := hex.Decode(sums[:], []byte(stored[n-18:n-2])); err != nil {
		return stored, 0, 0, false
	}
	head := stored[:n-genSealTail]
	switch {
	case head == "{":
		stops = "{}"
	case strings.HasSuffix(head, ","):
		stops = head[:len(head)-1] + "}"
	default:
		return stored, 0, 0, false
	}
	return stops, binary.BigEndian.Uint32(sums[:4]), binary.BigEndian.Uint32(sums[4:]), true
}

// sealShownOK reports whether the seal at the end of a stop record as
// stored (or its last genSealTail bytes) holds for what a report reads
// of the generation; true for a record with no seal.
func sealShownOK(tail, key, fingerprint, finish string) bool {
	n := len(tail)
	if n < genSealTail || !strings.HasSuffix(tail, `"}`) || tail[n-genSealTail:n-genSealTail+8] != `"seal":"` {
		return true
	}
	var sums [4]byte
	if _, err := hex.Decode(sums[:], []byte(tail[n-18:n-10])); err != nil {
		return true
	}
	shown, _ := genSums(&genFields{key: key, fingerprint: fingerprint, finish: finish})
	return shown == binary.BigEndian.Uint32(sums[:])
}

// DamagedError is a read's finding that a row of the store is damaged:
// it fails its seal (a generation's, a packed row of scores') or disagrees
// with the other copy of what it holds. It names the store and the row
// as read (what is damaged may be what names it).
type DamagedError struct {
	// Store is the store as printed (Store.Path).
	Store string
	// What names the row: "the generation of TASK/ID".
	What string
	// Why says what is wrong with it.
	Why string
}

// Error names the store, the row and what to do.
func (e *DamagedError) Error() string {
	return fmt.Sprintf("store %s %s: %s: %s; nothing is shown or scored from it", e.Store, damagedProblem(e.Store), e.What, e.Why)
}

// sealedStops is the stop record a SQLite store keeps for g, whose token
// ids and offsets are stored as ids and offsets: g's, sealed.
func sealedStops(g *Generation, ids, offsets []byte) string {
	return sealStops(&genFields{key: g.Key, fingerprint: g.Fingerprint, promptTokens: g.PromptTokens, nTokens: g.NTokens, budget: g.Budget,
		text: unsafe.Slice(unsafe.StringData(g.Text), len(g.Text)), ids: ids, offsets: offsets, finish: g.Finish, stops: nullJSON(g.Stops),
		errText: g.Error, continued: g.Continued, imported: boolInt(g.Imported)})
}

// openStops checks the seal of a generation row as read (text, token ids
// and offsets as stored; g's other fields scanned, its error not yet
// redacted) and returns its stop record without the seal, cut from
// stored in place; ok is false when the seal does not hold.
func openStops(g *Generation, text, ids, offsets, stored []byte, imported int) (stops []byte, ok bool) {
	n := len(stored)
	_, _, all, sealed := splitSeal(unsafe.String(unsafe.SliceData(stored), n))
	if !sealed {
		return stored, true
	}
	// The record without its seal: `{…,"seal":"…"}` is `{…}`, and
	// `{"seal":"…"}` is `{}`.
	head := n - genSealTail
	if stored[head-1] == ',' {
		head--
	}
	stored[head] = '}'
	stops = stored[:head+1]
	_, got := genSums(&genFields{key: g.Key, fingerprint: g.Fingerprint, promptTokens: g.PromptTokens, nTokens: g.NTokens, budget: g.Budget,
		text: text, ids: ids, offsets: offsets, finish: g.Finish, stops: unsafe.String(unsafe.SliceData(stops), len(stops)),
		errText: g.Error, continued: g.Continued, imported: imported})
	return stops, got == all
}

// errDamagedGeneration is scanGeneration's error for a generation whose
// seal does not hold; its reader names the store (named).
type errDamagedGeneration struct{ key, task, sampleID string }

func (e *errDamagedGeneration) Error() string {
	return e.what() + ": its seal does not match what it holds: the row is damaged"
}

// what names the generation.
func (e *errDamagedGeneration) what() string {
	if e.task == "" {
		return "the generation of key " + e.key
	}
	return fmt.Sprintf("the generation of %s/%s (key %s)", e.task, e.sampleID, e.key)
}

// shownStops checks, of a generation row read without its token ids and
// offsets, the part of its seal that covers what a report reads (key,
// fingerprint, finish), and returns its stop record without the seal.
func (s *Store) shownStops(g *Generation, stored string) (json.RawMessage, error) {
	if !sealShownOK(stored, g.Key, g.Fingerprint, g.Finish) {
		return nil, s.named(&errDamagedGeneration{g.Key, g.Task, g.SampleID})
	}
	stops, _, _, _ := splitSeal(stored)
	return json.RawMessage(stops), nil
}

// sealTail is the SQL expression of the end of a generation's stop
// record where its seal lies (what checkShown reads).
func (s *Store) sealTail() string {
	if s.db.eng == postgresEngine {
		return "right(stops, " + strconv.Itoa(genSealTail) + ")"
	}
	return "substr(stops, -" + strconv.Itoa(genSealTail) + ")"
}

// checkShown checks the part of a generation's seal that covers what a
// report reads of it (key, fingerprint, finish), given the end of its
// stop record (sealTail).
func (s *Store) checkShown(key, fingerprint, finish, tail []byte) error {
	str := func(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) } // read only during the call
	if !sealShownOK(str(tail), str(key), str(fingerprint), str(finish)) {
		return s.named(&errDamagedGeneration{key: string(key)})
	}
	return nil
}

// splitN splits raw into n fields joined by sep, the last holding the
// rest, without allocating (n at most 8).
func splitN(raw []byte, sep byte, n int) (parts [8][]byte, ok bool) {
	for i := range n - 1 {
		k := bytes.IndexByte(raw, sep)
		if k < 0 {
			return parts, false
		}
		parts[i], raw = raw[:k], raw[k+1:]
	}
	parts[n-1] = raw
	return parts, true
}
