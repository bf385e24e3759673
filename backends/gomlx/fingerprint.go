package gomlx

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"tally/internal/atomicfile"
)

// Fingerprint implements backends.Backend:
// "gomlx:PRODUCTS:DEVICE:numerics-N:sha256:<hex>", the arithmetic the
// model computes in (see Arithmetic: the products' dtype, the device and
// kernels, NumericsVersion) and the digest covering config.json,
// tokenizer.json and every weight file, so that generations made under one
// arithmetic are never reused under another, with ":chat" appended when
// prompts go through the chat template. File digests are cached by (path,
// size, mtime) in Options.FingerprintCache.
func (m *Model) Fingerprint(ctx context.Context) (string, error) {
	chat := ""
	if m.chatMode() {
		// Chat and raw generations of one model are told apart by
		// their fingerprint, as the server backends do.
		chat = ":chat"
	}
	if m.fpExtra != "" {
		return fmt.Sprintf("%s:%s:%s%s", m.Name(), m.arith, m.fpExtra, chat), nil
	}
	sum, err := filesDigest(ctx, m.fpFiles, fingerprintCachePath(m.opts.FingerprintCache))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s:%s:sha256:%s%s", m.Name(), m.arith, sum, chat), nil
}

// fingerprintCachePath resolves the cache file; "" means none.
func fingerprintCachePath(opt string) string {
	switch opt {
	case "-":
		return ""
	case "":
		dir, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		return filepath.Join(dir, "tally", "fingerprints.json")
	default:
		return opt
	}
}

// filesDigest hashes each file (using and updating the cache) and then the
// list of (base name, digest) pairs.
func filesDigest(ctx context.Context, files []string, cachePath string) (string, error) {
	cache := map[string]string{}
	if cachePath != "" {
		if data, err := os.ReadFile(cachePath); err == nil {
			_ = json.Unmarshal(data, &cache) // a corrupt cache is rebuilt
			if cache == nil {
				cache = map[string]string{}
			}
		}
	}
	changed := false
	total := sha256.New()
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			return "", fmt.Errorf("fingerprint: %w", err)
		}
		abs, err := filepath.Abs(f)
		if err != nil {
			abs = f
		}
		key := abs + "|" + strconv.FormatInt(st.Size(), 10) + "|" + strconv.FormatInt(st.ModTime().UnixNano(), 10)
		sum, ok := cache[key]
		if !ok {
			if sum, err = fileSHA256(ctx, f); err != nil {
				return "", err
			}
			cache[key] = sum
			changed = true
		}
		fmt.Fprintf(total, "%s\x00%s\n", filepath.Base(f), sum)
	}
	if changed && cachePath != "" {
		if err := writeFileAtomic(cachePath, cache); err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(total.Sum(nil)), nil
}

// ctxReader stops a copy when its context is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

// Read reads from the file unless the context is done.
func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

func fileSHA256(ctx context.Context, path string) (string, error) {
	f, err := openRegular(path)
	if err != nil {
		return "", fmt.Errorf("fingerprint: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, ctxReader{ctx, f}); err != nil {
		return "", fmt.Errorf("fingerprint %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func writeFileAtomic(path string, v any) error {
	data, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return fmt.Errorf("encode fingerprint cache: %w", err)
	}
	if err := atomicfile.Write(path, ".fingerprints-*.json", data); err != nil {
		return fmt.Errorf("write fingerprint cache: %w", err)
	}
	return nil
}
