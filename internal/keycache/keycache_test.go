package keycache

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// digest and key make the i-th test entry.
func digest(i int) [32]byte { return sha256.Sum256([]byte(fmt.Sprint("prompt ", i))) }

func key(i int) string {
	s := sha256.Sum256([]byte(fmt.Sprint("key ", i)))
	return hex.EncodeToString(s[:])
}

// TestRoundTrip: what one process puts, the next one gets, under the
// same identity only; a process that adds nothing leaves the file alone.
func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	c := Open(dir, "fp-a", "fp-a|exe")
	if _, ok := c.Get(digest(1)); ok {
		t.Fatal("an empty cache has an entry")
	}
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() { c.Put(digest(i), Entry{Key: key(i), Tokens: i * 7}) })
	}
	wg.Wait()
	if e, ok := c.Get(digest(5)); !ok || e.Key != key(5) || e.Tokens != 35 {
		t.Fatalf("entry put in this process: %+v %v", e, ok)
	}
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	again := Open(dir, "fp-a", "fp-a|exe")
	for i := range 100 {
		if e, ok := again.Get(digest(i)); !ok || e.Key != key(i) || e.Tokens != i*7 {
			t.Fatalf("entry %d after reopening: %+v %v", i, e, ok)
		}
	}
	if _, ok := Open(dir, "fp-a", "fp-a|exe2").Get(digest(1)); ok {
		t.Error("another identity (another executable) reads the entries")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	st, _ := os.Stat(files[0])
	if err := again.Save(); err != nil {
		t.Fatal(err)
	}
	if st2, _ := os.Stat(files[0]); len(files) != 1 || !st2.ModTime().Equal(st.ModTime()) {
		t.Errorf("files %v: a save with nothing added rewrote the file", files)
	}
}

// TestUnusableFiles: a damaged, truncated, foreign or unreadable file is
// an empty cache (never an error, never a wrong entry), and the next save
// replaces it.
func TestUnusableFiles(t *testing.T) {
	for name, damage := range map[string]func([]byte) []byte{
		"flipped byte": func(b []byte) []byte { b[len(b)/2] ^= 1; return b },
		"truncated":    func(b []byte) []byte { return b[:len(b)-10] },
		"empty":        func([]byte) []byte { return nil },
		"other format": func(b []byte) []byte { return append([]byte("tally-keycache-0\n"), b[17:]...) },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			c := Open(dir, "n", "id")
			c.Put(digest(1), Entry{Key: key(1), Tokens: 3})
			if err := c.Save(); err != nil {
				t.Fatal(err)
			}
			data, _ := os.ReadFile(c.path)
			if err := os.WriteFile(c.path, damage(data), 0o600); err != nil {
				t.Fatal(err)
			}
			d := Open(dir, "n", "id")
			if _, ok := d.Get(digest(1)); ok {
				t.Fatal("a damaged file gave an entry")
			}
			d.Put(digest(2), Entry{Key: key(2), Tokens: 4})
			if err := d.Save(); err != nil {
				t.Fatal(err)
			}
			if e, ok := Open(dir, "n", "id").Get(digest(2)); !ok || e.Tokens != 4 {
				t.Errorf("the file saved over a damaged one: %+v %v", e, ok)
			}
		})
	}
	if _, ok := Open("", "n", "id").Get(digest(1)); ok {
		t.Error("no directory keeps entries")
	}
	if err := Open("", "n", "id").Save(); err != nil {
		t.Error(err)
	}
}

// TestPutRefusesMalformed: only SHA-256 keys in hex and counts that fit
// are kept.
func TestPutRefusesMalformed(t *testing.T) {
	c := Open(t.TempDir(), "n", "id")
	for i, e := range []Entry{{Key: "abc", Tokens: 1}, {Key: key(1)[:62] + "zz", Tokens: 1}, {Key: key(1) + "00", Tokens: 1}, {Key: key(1), Tokens: -1}} {
		c.Put(digest(i), e)
		if _, ok := c.Get(digest(i)); ok {
			t.Errorf("kept %+v", e)
		}
	}
}

// TestBound: a save that would pass the bound keeps what this process
// read or added, and drops the rest.
func TestBound(t *testing.T) {
	dir := t.TempDir()
	c := Open(dir, "n", "id")
	c.max = 10
	for i := range 8 {
		c.Put(digest(i), Entry{Key: key(i), Tokens: i})
	}
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	d := Open(dir, "n", "id")
	d.max = 10
	d.Get(digest(0))
	d.Get(digest(1))
	for i := 8; i < 12; i++ {
		d.Put(digest(i), Entry{Key: key(i), Tokens: i})
	}
	if err := d.Save(); err != nil {
		t.Fatal(err)
	}
	e := Open(dir, "n", "id")
	for i := range 12 {
		_, ok := e.Get(digest(i))
		if want := i < 2 || i >= 8; ok != want {
			t.Errorf("entry %d kept: %v, want %v", i, ok, want)
		}
	}
}

// BenchmarkGet: a file of 200,000 entries opened and each entry asked
// for once, on two cores, as a plan's items are keyed.
func BenchmarkGet(b *testing.B) {
	dir := b.TempDir()
	c := Open(dir, "m", "id")
	const n = 200000
	for i := range n {
		d := digest(i)
		c.Put(d, Entry{Key: hex.EncodeToString(d[:]), Tokens: i})
	}
	if err := c.Save(); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		c := Open(dir, "m", "id")
		var wg sync.WaitGroup
		for w := range 2 {
			wg.Go(func() {
				for i := w; i < n; i += 2 {
					if _, ok := c.Get(digest(i)); !ok {
						b.Error("missing")
						return
					}
				}
			})
		}
		wg.Wait()
	}
}
