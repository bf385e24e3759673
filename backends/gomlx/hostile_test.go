package gomlx

import (
	"bytes"
	"context"
	"encoding/binary"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"tally/backends"
	"tally/backends/tokenizer"
	"tally/internal/hostiletest"
)

// demoFolder writes the embedded demo model's files (config.json,
// model.safetensors, tokenizer.json) to a new folder.
func demoFolder(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"config.json", "model.safetensors", "tokenizer.json"} {
		data, err := demoFiles.ReadFile("demomodel/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHostileModelFolder (issue 37, item 3): a model folder's files are
// regular files, read within bounds: tokenizer.json as a link to
// /dev/zero grew without bound (8 GB in 66 s), a FIFO hung for good;
// links out of the folder are refused unless asked for, while the
// Hugging Face cache's own links (snapshots/REV/* into blobs/) load.
func TestHostileModelFolder(t *testing.T) {
	outside := t.TempDir()
	demoFolder(t, outside)
	tests := []struct {
		name   string
		mutate func(t *testing.T, dir string)
		follow bool
		err    string // "" when the model loads
	}{
		{"tokenizer.json a link to /dev/zero", func(t *testing.T, dir string) { relink(t, "/dev/zero", dir, "tokenizer.json") }, false, "is a device: refused"},
		{"tokenizer.json a link to /dev/zero, links followed", func(t *testing.T, dir string) { relink(t, "/dev/zero", dir, "tokenizer.json") }, true, "is a device: refused"},
		{"tokenizer.json a FIFO", func(t *testing.T, dir string) { fifo(t, dir, "tokenizer.json") }, false, "named pipe (FIFO): refused"},
		{"config.json a FIFO", func(t *testing.T, dir string) { fifo(t, dir, "config.json") }, false, "named pipe (FIFO): refused"},
		{"config.json a link to /proc", func(t *testing.T, dir string) { relink(t, "/proc/self/status", dir, "config.json") }, true, "a file of /proc"},
		{"model.safetensors a link to /dev/zero", func(t *testing.T, dir string) { relink(t, "/dev/zero", dir, "model.safetensors") }, false, "is a device: refused"},
		{"model.safetensors a FIFO", func(t *testing.T, dir string) { fifo(t, dir, "model.safetensors") }, false, "named pipe (FIFO): refused"},
		{"tokenizer.json past its bound", func(t *testing.T, dir string) { sparse(t, dir, "tokenizer.json", tokenizer.MaxFileSize+1) }, false, "more than the 128 MiB tally reads"},
		{"config.json past its bound", func(t *testing.T, dir string) { sparse(t, dir, "config.json", maxModelJSON+1) }, false, "more than the 64 MiB tally reads"},
		{"weights linked from outside", func(t *testing.T, dir string) {
			relink(t, filepath.Join(outside, "model.safetensors"), dir, "model.safetensors")
		}, false, "model.safetensors is a symbolic link to " + filepath.Join(outside, "model.safetensors")},
		{"tokenizer linked from outside", func(t *testing.T, dir string) {
			relink(t, filepath.Join(outside, "tokenizer.json"), dir, "tokenizer.json")
		}, false, "set TALLY_FOLLOW_SYMLINKS=1 to read it"},
		{"links from outside, followed as asked", func(t *testing.T, dir string) {
			relink(t, filepath.Join(outside, "model.safetensors"), dir, "model.safetensors")
			relink(t, filepath.Join(outside, "tokenizer.json"), dir, "tokenizer.json")
		}, true, ""},
		{"links inside the folder", func(t *testing.T, dir string) {
			os.Mkdir(filepath.Join(dir, "files"), 0o755)
			for _, f := range []string{"model.safetensors", "tokenizer.json"} {
				os.Rename(filepath.Join(dir, f), filepath.Join(dir, "files", f))
				relink(t, filepath.Join("files", f), dir, f)
			}
		}, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "model")
			demoFolder(t, dir)
			tc.mutate(t, dir)
			var m *Model
			var err error
			hostiletest.Bounded(t, hostiletest.Bytes, func() {
				m, err = Open(context.Background(), dir, Options{FingerprintCache: "-", FollowSymlinks: tc.follow})
			})
			if m != nil {
				m.Close()
			}
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Open: %v, want one line holding %q", err, tc.err)
			}
		})
	}
}

// TestHostileModelPath: a model path that is a FIFO (as a GGUF file or an
// Ollama blob would be named) is refused before it is opened.
func TestHostileModelPath(t *testing.T) {
	dir := t.TempDir()
	fifo(t, dir, "model.gguf")
	var err error
	hostiletest.Bounded(t, hostiletest.Bytes, func() {
		_, err = Open(context.Background(), filepath.Join(dir, "model.gguf"), Options{FingerprintCache: "-"})
	})
	if err == nil || !strings.Contains(err.Error(), "named pipe (FIFO): refused") {
		t.Fatalf("Open(FIFO): %v", err)
	}
}

// TestHubCacheLinks: a model in the Hugging Face cache, whose snapshot's
// files are links into the repository's blobs/ (the cache's own layout),
// loads without TALLY_FOLLOW_SYMLINKS; a link from the snapshot to a file
// outside the repository folder does not.
func TestHubCacheLinks(t *testing.T) {
	hf := t.TempDir()
	t.Setenv("HF_HUB_CACHE", filepath.Join(hf, "hub"))
	repo := filepath.Join(hf, "hub", "models--acme--demo")
	snap := filepath.Join(repo, "snapshots", "rev1")
	blobs := filepath.Join(repo, "blobs")
	demoFolder(t, blobs)
	if err := os.MkdirAll(snap, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"config.json", "model.safetensors", "tokenizer.json"} {
		relink(t, filepath.Join("..", "..", "blobs", f), snap, f)
	}
	m, err := Open(context.Background(), "acme/demo", Options{FingerprintCache: "-"})
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	outside := t.TempDir()
	demoFolder(t, outside)
	relink(t, filepath.Join(outside, "tokenizer.json"), snap, "tokenizer.json")
	if _, err := Open(context.Background(), "acme/demo", Options{FingerprintCache: "-"}); err == nil || !strings.Contains(err.Error(), "outside "+repo) {
		t.Fatalf("a link out of the repository folder: %v", err)
	}
}

func relink(t *testing.T, target, dir, name string) {
	t.Helper()
	p := filepath.Join(dir, name)
	os.Remove(p)
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

func fifo(t *testing.T, dir, name string) {
	t.Helper()
	p := filepath.Join(dir, name)
	os.Remove(p)
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
}

// sparse makes name a file of size bytes that takes no room on disk.
func sparse(t *testing.T, dir, name string, size int64) {
	t.Helper()
	if err := os.Truncate(filepath.Join(dir, name), size); err != nil {
		t.Fatal(err)
	}
}

// ggufTensor is one tensor info of a GGUF file written by rawGGUF.
type ggufTensor struct {
	name   string
	dims   []uint64
	kind   uint32
	offset uint64
}

// rawGGUF writes a GGUF v3 file: the metadata (uint32, uint64 or string
// values), the tensor infos as given, padding to align, then dataLen
// zero bytes of tensor data.
func rawGGUF(t *testing.T, path string, kv map[string]any, ts []ggufTensor, align, dataLen int) {
	t.Helper()
	var b bytes.Buffer
	le := binary.LittleEndian
	str := func(s string) {
		binary.Write(&b, le, uint64(len(s)))
		b.WriteString(s)
	}
	b.WriteString("GGUF")
	binary.Write(&b, le, uint32(3))
	binary.Write(&b, le, uint64(len(ts)))
	binary.Write(&b, le, uint64(len(kv)))
	keys := slices.Sorted(maps.Keys(kv))
	for _, k := range keys {
		str(k)
		switch v := kv[k].(type) {
		case uint32:
			binary.Write(&b, le, uint32(4))
			binary.Write(&b, le, v)
		case uint64:
			binary.Write(&b, le, uint32(10))
			binary.Write(&b, le, v)
		case string:
			binary.Write(&b, le, uint32(8))
			str(v)
		}
	}
	for _, tn := range ts {
		str(tn.name)
		binary.Write(&b, le, uint32(len(tn.dims)))
		for _, d := range tn.dims {
			binary.Write(&b, le, d)
		}
		binary.Write(&b, le, tn.kind)
		binary.Write(&b, le, tn.offset)
	}
	for b.Len()%align != 0 {
		b.WriteByte(0)
	}
	b.Write(make([]byte, dataLen))
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestGGUFLayout (issue 37, item 3): a GGUF file's tensor offsets and
// alignment are checked before any tensor is read: an offset of 2^64-1,
// an unaligned, overlapping or duplicated tensor, general.alignment 3 —
// each loaded garbage weights and ran with exit 0.
func TestGGUFLayout(t *testing.T) {
	f32 := func(name string, n, offset uint64) ggufTensor { return ggufTensor{name, []uint64{n}, 0, offset} }
	arch := map[string]any{"general.architecture": "llama"}
	with := func(k string, v any) map[string]any { return map[string]any{"general.architecture": "llama", k: v} }
	tests := []struct {
		name    string
		kv      map[string]any
		ts      []ggufTensor
		align   int
		dataLen int
		err     string
	}{
		{"offset 2^64-1", arch, []ggufTensor{f32("a", 16, math.MaxUint64)}, 32, 64, "is not a multiple of the alignment"},
		{"offset 2^64-32", arch, []ggufTensor{f32("a", 16, math.MaxUint64&^31)}, 32, 64, "past the 64 bytes of tensor data"},
		{"offset past the end", arch, []ggufTensor{f32("a", 16, 64)}, 32, 64, "past the 64 bytes of tensor data"},
		{"unaligned", arch, []ggufTensor{f32("a", 4, 0), f32("b", 4, 20)}, 32, 64, "offset 20 is not a multiple of the alignment 32"},
		{"overlapping", arch, []ggufTensor{f32("a", 16, 0), f32("b", 16, 32)}, 32, 128, "tensors a and b overlap"},
		{"duplicated", arch, []ggufTensor{f32("a", 4, 0), f32("a", 4, 32)}, 32, 64, "tensor a appears twice"},
		{"alignment 3", with("general.alignment", uint32(3)), []ggufTensor{f32("a", 4, 0)}, 3, 64, "general.alignment 3 is not a power of two"},
		{"alignment 0", with("general.alignment", uint32(0)), []ggufTensor{f32("a", 4, 0)}, 1, 64, "malformed header"},
		{"alignment as uint64", with("general.alignment", uint64(64)), []ggufTensor{f32("a", 4, 0)}, 32, 64, "want a uint32"},
		{"shape that overflows", arch, []ggufTensor{{"a", []uint64{1 << 32, 1 << 32, 1 << 32}, 0, 0}}, 32, 64, "overflows"},
		{"a sound layout", arch, []ggufTensor{f32("a", 16, 0), f32("b", 4, 64)}, 32, 96, "metadata llama.embedding_length is missing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "m.gguf")
			rawGGUF(t, path, tc.kv, tc.ts, tc.align, tc.dataLen)
			var err error
			hostiletest.Bounded(t, hostiletest.Bytes, func() { _, _, err = ReadGGUF(path) })
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("ReadGGUF: %v, want an error holding %q", err, tc.err)
			}
		})
	}
}

// nanWeights overwrites, in the demo model written to dir, the given
// tensor's bytes (all of them, or the row of one token for the
// embedding) with 0xFF: NaN in F32, F16 and BF16 alike.
func nanWeights(t *testing.T, dir, tensor string, row int) {
	t.Helper()
	path := filepath.Join(dir, "model.safetensors")
	infos, err := ReadSafetensorsHeader(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range infos {
		if tensor != "" && info.Name != tensor {
			continue
		}
		start, end := info.Offset, info.Offset+info.Length
		if row >= 0 {
			rowLen := info.Length / int64(info.Shape[0])
			start, end = info.Offset+int64(row)*rowLen, info.Offset+int64(row+1)*rowLen
		}
		for i := start; i < end; i++ {
			data[i] = 0xFF
		}
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestNonFiniteLogits (issue 37, item 3): a model whose logits are not
// finite fails the request with that reason, where it took a token from
// NaN and stored empty outputs as successes; at the first token (the
// prefill's logits) or later (a decode step's), and only the request
// whose logits they are: its batch's others generate what they generate
// alone.
func TestNonFiniteLogits(t *testing.T) {
	ctx := context.Background()
	open := func(t *testing.T, mutate func(dir string)) *Model {
		dir := filepath.Join(t.TempDir(), "model")
		demoFolder(t, dir)
		mutate(dir)
		m, err := Open(ctx, dir, Options{FingerprintCache: "-", MaxBatch: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	req := func(i int, ids ...int) backends.Request {
		return backends.Request{Index: i, PromptIDs: ids, MaxTokens: 6}
	}
	failed := func(t *testing.T, ev backends.Event, afterTokens int, ids []int) {
		t.Helper()
		if ev.Finish != backends.FinishError || ev.Err == nil || !strings.Contains(ev.Err.Error(), "logits are not finite") {
			t.Errorf("request %d: finish %q, %v; want an error of non-finite logits", ev.Index, ev.Finish, ev.Err)
		}
		if len(ids) != afterTokens {
			t.Errorf("request %d: %d tokens before the failure, want %d", ev.Index, len(ids), afterTokens)
		}
	}

	t.Run("all weights NaN", func(t *testing.T) {
		m := open(t, func(dir string) { nanWeights(t, dir, "", -1) })
		ids, final := collect(t, m, []backends.Request{req(0, 5, 6, 7), req(1, 8, 9), req(2, 10)}, nil)
		for i := range 3 {
			failed(t, final[i], 0, ids[i])
		}
	})

	healthy := open(t, func(string) {})
	alone, _ := collect(t, healthy, []backends.Request{req(0, 5, 6, 7)}, nil)
	if len(alone[0]) < 2 {
		t.Fatalf("the healthy model generated %v", alone[0])
	}

	t.Run("one token's embedding NaN, in a prompt", func(t *testing.T) {
		m := open(t, func(dir string) { nanWeights(t, dir, "model.embed_tokens.weight", 9) })
		ids, final := collect(t, m, []backends.Request{req(0, 5, 6, 7), req(1, 8, 9)}, nil)
		failed(t, final[1], 0, ids[1])
		if !slices.Equal(ids[0], alone[0]) || final[0].Err != nil {
			t.Errorf("the other request of the batch: %v, %v; alone %v", ids[0], final[0].Err, alone[0])
		}
	})

	t.Run("the generated token's embedding NaN", func(t *testing.T) {
		first := alone[0][0]
		m := open(t, func(dir string) { nanWeights(t, dir, "model.embed_tokens.weight", first) })
		ids, final := collect(t, m, []backends.Request{req(0, 5, 6, 7)}, nil)
		failed(t, final[0], 1, ids[0])
	})
}
