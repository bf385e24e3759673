package tasks

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash/crc32"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"tally/datasets"
	"tally/internal/atomicfile"
	"tally/internal/keycache"
)

// A task whose loader reads nothing but its data file (datasets.Loader's
// OnlyData), of at least a mebibyte, keeps what loading rendered (its samples before LoadOptions
// select some) between runs, in the user's cache folder: a plan of twenty
// tasks of 10,000 DROP rows spent most of its time reading their JSON and
// rendering their prompts (1.8 of 5.3 s of CPU), which an unchanged task
// then does not do again.
//
// What was kept is used only under the same identity: the running
// executable (keycache.ExecutableIdentity: a rebuilt tally loads
// again), the task's config as a whole, the data file's path and the
// SHA-256 of its bytes, and the load options that shape what is rendered.
// A file of another identity, a damaged or truncated one (a CRC-32C
// checks it), or one that cannot be read is ignored and replaced (a new
// file renamed over it, so a reader never sees half of one). Anything
// wrong with a kept load costs loading, never a wrong sample.

// loadCacheMagic starts every kept load (its format's version).
const loadCacheMagic = "tally-task-samples-2\n"

// DefaultLoadCacheDir is where tasks keep their loads: the user's cache
// folder's tally/task-samples ("" when there is none).
func DefaultLoadCacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "tally", "task-samples")
}

// renderedLoad is what a task's data renders to, before LoadOptions
// select samples.
type renderedLoad struct {
	samples []datasets.Sample
	skipped int
}

// loadCacheKey is the identity of a load of c from req under opt, the
// file it is kept in, and the SHA-256 of the data; ok is false when it
// cannot be kept (no cache folder, a loader that reads more than its data
// file, an executable that cannot be told, or data that cannot be read).
func (c *Config) loadCacheKey(l datasets.Loader, req datasets.Request, opt LoadOptions) (identity, file string, data []byte, ok bool) {
	exe := keycache.ExecutableIdentity()
	if opt.CacheDir == "" || !l.OnlyData || c.lm != nil || exe == "" || dataSize(req) < minKeptData {
		return "", "", nil, false
	}
	data, ok = dataDigest(req)
	cfg, err := json.Marshal(c) // every exported field, maps in key order
	if !ok || err != nil {
		return "", "", nil, false
	}
	var opts [2]byte
	if opt.SkipBad {
		opts[0] = 1
	}
	if opt.NoDocs {
		opts[1] = 1
	}
	id := sha256.New()
	for _, part := range [][]byte{[]byte(exe), cfg, []byte(req.Path), data, opts[:]} {
		id.Write(binary.AppendUvarint(nil, uint64(len(part))))
		id.Write(part)
	}
	name := sha256.Sum256([]byte(c.Task + "\x00" + req.Path + "\x00" + string(opts[:])))
	return hex.EncodeToString(id.Sum(nil)), filepath.Join(opt.CacheDir, hex.EncodeToString(name[:16])), data, true
}

// minKeptData is the size of the smallest data whose load is kept: a
// smaller one loads in a few milliseconds, and a folder of many small
// tasks' loads (a test suite's temporary files) would keep growing.
const minKeptData = 1 << 20

// dataSize is the size of a request's data (0 when it cannot be told).
func dataSize(req datasets.Request) int64 {
	if req.Data != nil {
		return int64(len(req.Data))
	}
	st, err := os.Stat(req.Path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// dataDigest is the SHA-256 of a request's data: its embedded bytes, or
// the regular file at its path (ok is false for anything else).
func dataDigest(req datasets.Request) (_ []byte, ok bool) {
	h := sha256.New()
	if req.Data != nil {
		h.Write(req.Data)
		return h.Sum(nil), true
	}
	f, err := os.Open(req.Path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, false
	}
	if _, err := io.Copy(h, f); err != nil {
		return nil, false
	}
	return h.Sum(nil), true
}

// readLoadCache returns the load kept in file under identity, if any.
func readLoadCache(file, identity, task string) (renderedLoad, bool) {
	data, err := os.ReadFile(file)
	if err != nil {
		return renderedLoad{}, false
	}
	r, err := decodeLoad(data, identity, task)
	if err != nil {
		return renderedLoad{}, false
	}
	return r, true
}

// writeLoadCache keeps a load in file under identity (best effort: a
// load that cannot be kept is loaded again next time). Samples with
// metadata (which no row loader sets) are not kept.
func writeLoadCache(file, identity string, r renderedLoad) {
	for _, s := range r.samples {
		if s.Metadata != nil {
			return
		}
	}
	atomicfile.Write(file, ".tmp-*", encodeLoad(identity, r))
}

// Flags of a kept sample.
const (
	keptTarget = 1 << iota // a rendered target follows
	keptDoc                // a doc follows
	keptIndex              // an index follows
	keptRefs               // references follow (none: nil)
	keptNotes              // notes follow: their number, then keys and values
)

// encodeLoad is a kept load's file: the magic, the identity, the number
// of samples and of records skipped, each sample (flags, id, prompt,
// share key, then the references, target, doc and index it has), and the
// CRC-32C of all that. Strings are a uvarint length and their bytes.
func encodeLoad(identity string, r renderedLoad) []byte {
	b := []byte(loadCacheMagic)
	str := func(s string) { b = append(binary.AppendUvarint(b, uint64(len(s))), s...) }
	raw := func(s []byte) { b = append(binary.AppendUvarint(b, uint64(len(s))), s...) }
	str(identity)
	b = binary.AppendUvarint(b, uint64(len(r.samples)))
	b = binary.AppendUvarint(b, uint64(r.skipped))
	for _, s := range r.samples {
		var flags byte
		if s.Target != nil {
			flags |= keptTarget
		}
		if s.Doc != nil {
			flags |= keptDoc
		}
		if s.Index != nil {
			flags |= keptIndex
		}
		if s.References != nil {
			flags |= keptRefs
		}
		if s.Notes != nil {
			flags |= keptNotes
		}
		b = append(b, flags)
		str(s.ID)
		str(s.Prompt)
		str(s.ShareKey)
		if s.References != nil {
			raw(s.References)
		}
		if s.Target != nil {
			str(*s.Target)
		}
		if s.Doc != nil {
			raw(s.Doc)
		}
		if s.Index != nil {
			b = binary.AppendUvarint(b, uint64(*s.Index))
		}
		if s.Notes != nil {
			b = binary.AppendUvarint(b, uint64(len(s.Notes)))
			for _, k := range slices.Sorted(maps.Keys(s.Notes)) {
				str(k)
				str(s.Notes[k])
			}
		}
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var errKept = errors.New("not a usable kept load")

// decodeLoad reads a kept load's file, checking its format, identity and
// checksum. The samples' strings are substrings of one string holding the
// file (one copy of it); references and docs are copied each.
func decodeLoad(data []byte, identity, task string) (renderedLoad, error) {
	if len(data) < len(loadCacheMagic)+4 || !bytes.HasPrefix(data, []byte(loadCacheMagic)) {
		return renderedLoad{}, errKept
	}
	body := data[:len(data)-4]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(data[len(data)-4:]) {
		return renderedLoad{}, errKept
	}
	all := string(body)
	at := len(loadCacheMagic)
	fail := false
	uvarint := func() int {
		n, k := binary.Uvarint(body[at:])
		if k <= 0 || n > uint64(len(body)) {
			fail = true
			return 0
		}
		at += k
		return int(n)
	}
	str := func() string {
		n := uvarint()
		if fail || n > len(body)-at {
			fail = true
			return ""
		}
		at += n
		return all[at-n : at]
	}
	raw := func() []byte {
		n := uvarint()
		if fail || n > len(body)-at {
			fail = true
			return nil
		}
		at += n
		return bytes.Clone(body[at-n : at])
	}
	if str() != identity || fail {
		return renderedLoad{}, errKept
	}
	n, skipped := uvarint(), uvarint()
	if fail || n > len(body) {
		return renderedLoad{}, errKept
	}
	r := renderedLoad{samples: make([]datasets.Sample, n), skipped: skipped}
	var targets []string
	indices := make([]int, n)
	for i := range r.samples {
		if at >= len(body) {
			return renderedLoad{}, errKept
		}
		flags := body[at]
		at++
		s := &r.samples[i]
		s.Task, s.ID, s.Prompt, s.ShareKey = task, str(), str(), str()
		if flags&keptRefs != 0 {
			s.References = raw()
		}
		if flags&keptTarget != 0 {
			if targets == nil {
				targets = make([]string, n)
			}
			targets[i] = str()
			s.Target = &targets[i]
		}
		if flags&keptDoc != 0 {
			s.Doc = raw()
		}
		if flags&keptIndex != 0 {
			indices[i] = uvarint()
			s.Index = &indices[i]
		}
		if flags&keptNotes != 0 {
			m := uvarint()
			if fail || m > len(body)-at {
				return renderedLoad{}, errKept
			}
			s.Notes = make(map[string]string, m)
			for range m {
				k := str()
				s.Notes[k] = str()
			}
		}
		if fail {
			return renderedLoad{}, errKept
		}
	}
	if at != len(body) {
		return renderedLoad{}, errKept
	}
	return r, nil
}
