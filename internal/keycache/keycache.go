// Package keycache keeps, between runs, what a plan derives from a
// prompt's token ids — its generation key and its token count — under a
// digest of everything those ids depend on (backends.PromptDigester), so
// that an unchanged prompt is not tokenised again.
//
// A cache belongs to one identity (the model's fingerprint and the tally
// executable that encodes): it lives in one file, named by a digest of a
// name (the fingerprint: one file a model, whatever tally wrote it), which
// holds the identity itself and a checksum. A file of
// another identity, a damaged or truncated file, or one that cannot be
// read is ignored (the cache starts empty); the file is replaced whole
// (a new file renamed over it) when entries were added, so a reader never
// sees half of one. Anything wrong with the cache costs tokenisation,
// never a wrong key.
package keycache

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"

	"tally/internal/atomicfile"
)

// magic starts every cache file (its format's version).
const magic = "tally-keycache-1\n"

// MaxEntries bounds a cache file: 2 million entries, 136 MB. When a save
// would exceed it, the entries this process neither read nor added are
// dropped.
const MaxEntries = 2 << 20

// entrySize is the size of one entry in a file: its digest, the key's 32
// bytes and the token count.
const entrySize = 32 + 32 + 4

// Entry is what is kept of one prompt: its generation key (a SHA-256 in
// hex) and its token count.
type Entry struct {
	Key    string
	Tokens int
}

// value is an Entry as kept: the key's bytes.
type value struct {
	key    [32]byte
	tokens uint32
	at     uint32 // the entry's place in the file it was read from
}

// Cache is the cache of one identity. Get and Put are safe for concurrent
// use.
type Cache struct {
	path, identity string
	max            int
	old            map[[32]byte]value // read from the file; never written
	// used has a bit for each entry of old (by its place, value.at),
	// set once Get returned it; set without a lock, every core asking.
	used  []atomic.Uint64
	mu    sync.Mutex
	added map[[32]byte]value
}

// Open reads the cache of identity kept in dir under name (an empty one
// when there is none, it is another identity's, or it is not usable; dir
// "" keeps nothing). Saving replaces the file of name, whatever identity
// it held.
func Open(dir, name, identity string) *Cache {
	c := &Cache{identity: identity, max: MaxEntries, added: map[[32]byte]value{}}
	if dir == "" {
		return c
	}
	sum := sha256.Sum256([]byte(name))
	c.path = filepath.Join(dir, hex.EncodeToString(sum[:16])+".keys")
	c.old = c.read()
	places := 0
	for _, v := range c.old {
		places = max(places, int(v.at)+1)
	}
	c.used = make([]atomic.Uint64, (places+63)/64)
	return c
}

// DefaultDir is where tally keeps its caches: tally/prompt-keys under the
// user's cache directory ("" when there is none).
func DefaultDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "tally", "prompt-keys")
}

// ExecutableIdentity names the running executable by its path, size and
// modification time: a rebuilt or upgraded tally (whose tokeniser may
// encode differently) has another ("" when it cannot tell).
func ExecutableIdentity() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	st, err := os.Stat(exe)
	if err != nil {
		return ""
	}
	return exe + "|" + strconv.FormatInt(st.Size(), 10) + "|" + strconv.FormatInt(st.ModTime().UnixNano(), 10)
}

// read loads the file, or nothing when it is absent or not usable.
func (c *Cache) read() map[[32]byte]value {
	data, err := os.ReadFile(c.path)
	if err != nil {
		return nil
	}
	entries, err := decode(data, c.identity)
	if err != nil {
		return nil
	}
	return entries
}

// decode reads a cache file's contents, checking its format, identity and
// checksum.
func decode(data []byte, identity string) (map[[32]byte]value, error) {
	if len(data) < sha256.Size {
		return nil, errors.New("short file")
	}
	body, sum := data[:len(data)-sha256.Size], data[len(data)-sha256.Size:]
	if s := sha256.Sum256(body); !bytes.Equal(s[:], sum) {
		return nil, errors.New("checksum mismatch")
	}
	head := magic + strconv.Itoa(len(identity)) + "\n" + identity
	if !bytes.HasPrefix(body, []byte(head)) || len(body) < len(head)+8 {
		return nil, errors.New("another format or identity")
	}
	body = body[len(head):]
	n := binary.LittleEndian.Uint64(body)
	body = body[8:]
	if n > MaxEntries || uint64(len(body)) != n*entrySize {
		return nil, errors.New("bad entry count")
	}
	out := make(map[[32]byte]value, n)
	for i := uint32(0); len(body) > 0; body, i = body[entrySize:], i+1 {
		var d [32]byte
		var v value
		copy(d[:], body)
		copy(v.key[:], body[32:])
		v.tokens, v.at = binary.LittleEndian.Uint32(body[64:]), i
		out[d] = v
	}
	return out, nil
}

// Get returns the entry kept under digest d.
func (c *Cache) Get(d [32]byte) (Entry, bool) {
	v, ok := c.old[d]
	if ok {
		c.used[v.at/64].Or(1 << (v.at % 64))
	} else {
		c.mu.Lock()
		v, ok = c.added[d]
		c.mu.Unlock()
	}
	if !ok {
		return Entry{}, false
	}
	return Entry{Key: hex.EncodeToString(v.key[:]), Tokens: int(v.tokens)}, true
}

// Put keeps e under digest d (an entry whose key is not a SHA-256 in hex,
// or whose count does not fit, is not kept).
func (c *Cache) Put(d [32]byte, e Entry) {
	var v value
	if len(e.Key) != 64 || e.Tokens < 0 || e.Tokens > math.MaxUint32 {
		return
	}
	if _, err := hex.Decode(v.key[:], []byte(e.Key)); err != nil {
		return
	}
	v.tokens = uint32(e.Tokens)
	c.mu.Lock()
	c.added[d] = v
	c.mu.Unlock()
}

// Save writes the cache when entries were added: those read (all of
// them, or only those Get returned when all would exceed the bound) and
// those added.
func (c *Cache) Save() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.path == "" || len(c.added) == 0 {
		return nil
	}
	keep := func(d [32]byte) bool { _, dup := c.added[d]; return !dup }
	if len(c.old)+len(c.added) > c.max {
		keep = func(d [32]byte) bool {
			_, dup := c.added[d]
			v := c.old[d]
			return !dup && c.used[v.at/64].Load()&(1<<(v.at%64)) != 0
		}
	}
	var body bytes.Buffer
	body.WriteString(magic + strconv.Itoa(len(c.identity)) + "\n" + c.identity)
	var n uint64
	countAt := body.Len()
	body.Write(make([]byte, 8))
	write := func(d [32]byte, v value) {
		if n >= uint64(c.max) {
			return
		}
		body.Write(d[:])
		body.Write(v.key[:])
		body.Write(binary.LittleEndian.AppendUint32(nil, v.tokens))
		n++
	}
	for d, v := range c.added {
		write(d, v)
	}
	for d, v := range c.old {
		if keep(d) {
			write(d, v)
		}
	}
	data := body.Bytes()
	binary.LittleEndian.PutUint64(data[countAt:], n)
	sum := sha256.Sum256(data)
	data = append(data, sum[:]...)
	if err := atomicfile.Write(c.path, ".keys-*", data); err != nil {
		return fmt.Errorf("write key cache: %w", err)
	}
	return nil
}
