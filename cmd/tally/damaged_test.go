package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// damageCommands are the commands that print figures from a store, as
// the damaged-store tests run them on the small store of damagedStore.
var damageCommands = []struct {
	name string
	args []string
}{
	{"report", []string{"report", "--format", "json"}},
	{"compare", []string{"compare", "--model", "demo", "--tasks", "demo", "--limit", "4", "--format", "json"}},
	{"rescore", []string{"rescore", "--model", "demo", "--tasks", "demo", "--limit", "4", "--json"}},
	{"run", []string{"run", "--model", "demo", "--tasks", "demo", "--limit", "4", "--json"}},
}

// figuresOf is what a command's JSON output says of the scores: the
// output without the counts of what a rescore or run did (which a repair
// changes: what was recomputed, generated or reused).
func figuresOf(t *testing.T, out string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("bad JSON %q: %v", out, err)
	}
	if m, ok := v.(map[string]any); ok {
		for _, k := range []string{"recomputed", "rescored", "generations_new", "generations_continued", "generations_reused", "seconds",
			"tokens_generated", "prompt_tokens", "generated_tokens", "by_others", "run_id", "throughput"} {
			delete(m, k)
		}
		// Only the figures: scores and counts.
		v = map[string]any{"scores": m["scores"], "counts": m["counts"], "errors": m["errors"]}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// damagedStore makes a small store (the demo task's first four samples,
// then a stop setting more scored from them, whose packed rows end the
// file: 26 pages of 4 KiB) and returns it with each command's figures on
// it.
func damagedStore(t *testing.T) (string, map[string]string) {
	t.Helper()
	src := filepath.Join(t.TempDir(), "small.db")
	runTally(t, built, "demo", "--store", src, "--limit", "4")
	runTally(t, built, "demo", "--store", src, "--limit", "4", "--stop", "semi=;")
	good := map[string]string{}
	for _, c := range damageCommands {
		db := copyStoreFile(t, src, c.name+"-good.db")
		stdout, stderr, code := runStatus(t, append(c.args, "--store", db)...)
		if code != 0 {
			t.Fatalf("%s on the sound store: status %d\n%s", c.name, code, stderr)
		}
		good[c.name] = figuresOf(t, stdout)
	}
	return src, good
}

// copyStoreFile copies the store file src to a new file named name beside it.
func copyStoreFile(t *testing.T, src, name string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// checkDamaged runs every command (or the one named only) on a copy of
// src damaged by damage and
// checks that each prints the sound store's figures or refuses (status 1,
// one line naming the store).
func checkDamaged(t *testing.T, src string, good map[string]string, only, what string, damage func(b []byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	bad := damage(b)
	for _, c := range damageCommands {
		if only != "" && c.name != only {
			continue
		}
		db := filepath.Join(t.TempDir(), "d.db")
		if err := os.WriteFile(db, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, code := runStatus(t, append(c.args, "--store", db)...)
		msg := strings.TrimSpace(stderr)
		switch code {
		case 0:
			if got := figuresOf(t, stdout); got != good[c.name] {
				t.Errorf("%s: %s printed other figures than the sound store's:\n%s\nwant\n%s\n%s", what, c.name, got, good[c.name], msg)
			}
		case 1:
			last := msg[strings.LastIndex(msg, "\n")+1:]
			if !strings.Contains(last, "store "+db) || strings.Count(msg, "tally: ") != 1 {
				t.Errorf("%s: %s refused without one line naming the store: %q", what, c.name, msg)
			}
		default:
			t.Errorf("%s: %s: status %d\n%s", what, c.name, code, msg)
		}
	}
}

// TestDamagedStoreTruncated (issue 37, item 4): a small store cut at every
// page boundary, and by one byte (`truncate -s -1`), is refused with its
// name by each command that prints figures (report, compare, rescore,
// run: a subtest each), or gives the sound store's figures: never others.
// Before, one byte cut made report print another mean than compare and
// rescore (the last packed row's last byte read as zero).
func TestDamagedStoreTruncated(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	src, good := damagedStore(t)
	fi, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	const page = 4096
	for _, c := range damageCommands {
		t.Run(c.name, func(t *testing.T) {
			checkDamaged(t, src, good, c.name, "cut by one byte", func(b []byte) []byte { return b[:len(b)-1] })
			for n := fi.Size()/page - 1; n >= 1; n-- {
				checkDamaged(t, src, good, c.name, fmt.Sprintf("cut to %d pages", n), func(b []byte) []byte { return b[:n*page] })
			}
		})
	}
}

// TestDamagedStoreFlipped (issue 37, item 4): a small store with one bit
// flipped in the middle and at the end of the cells of every page that
// holds any (cellOffsets) is refused with its name by each command that
// prints figures (a subtest for each command and place), or gives the
// sound store's figures. Before, a flipped bit in a score, a generation's
// text or an index changed what report, compare or rescore printed, and
// each printed another number.
func TestDamagedStoreFlipped(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	src, good := damagedStore(t)
	fi, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	const page = 4096
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range damageCommands {
		for i, where := range []string{"middle", "end"} {
			t.Run(c.name+"/"+where, func(t *testing.T) {
				for p := range fi.Size() / page {
					offs := cellOffsets(b[p*page:(p+1)*page], p == 0)
					if len(offs) == 0 {
						continue
					}
					at := p*page + offs[i]
					checkDamaged(t, src, good, c.name, fmt.Sprintf("bit 4 of byte %d (page %d) flipped", at, p+1), func(b []byte) []byte {
						b[at] ^= 0x10
						return b
					})
				}
			})
		}
	}
}

// TestDamagedStoreHeaders (issue 37, item 4): a bit flipped in the header
// of every page (its type, its first free block, its cells' count) is
// refused by every command with the store's name, or changes nothing.
func TestDamagedStoreHeaders(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	src, good := damagedStore(t)
	fi, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	const page = 4096
	for p := range fi.Size() / page {
		at := p*page + 3
		if p == 0 {
			at = 100 + 3 // the first page's header follows the file's
		}
		for _, c := range []string{"report", "compare"} {
			checkDamaged(t, src, good, c, fmt.Sprintf("bit 4 of byte %d (page %d's header) flipped", at, p+1), func(b []byte) []byte {
				b[at] ^= 0x10
				return b
			})
		}
	}
}

// cellOffsets are the places in a SQLite page where a flipped bit damages
// what it holds: the middle and the end of its cells' content (none for a
// b-tree page without cells), or of the whole page for another (an
// overflow page).
func cellOffsets(page []byte, first bool) []int64 {
	n := int64(len(page))
	hdr := 0
	if first {
		hdr = 100
	}
	switch page[hdr] {
	case 2, 5, 10, 13: // interior and leaf pages of indexes and tables
		cells := int(page[hdr+3])<<8 | int(page[hdr+4])
		start := int64(page[hdr+5])<<8 | int64(page[hdr+6])
		if cells == 0 || start == 0 {
			return nil
		}
		return []int64{(start + n) / 2, n - 1}
	}
	return []int64{n / 2, n - 1}
}
