package tasks

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"tally/datasets"
	"tally/tasks/lmeval"
	"tally/tasks/variant"
)

// FileDigest is a file a load read: where it was and the SHA-256 of its
// bytes (of its files' digests, for a folder or several files).
type FileDigest struct {
	Path   string
	SHA256 string
}

// VariantOptions are what a command adds to a task's config in making
// its variant.
type VariantOptions struct {
	// Chat is set when prompts go through the model's chat template.
	Chat bool
	// TaskSpec is the --tasks entry the config came from and Set the
	// --set overrides it was resolved with (recorded, so that a report of
	// the store alone can resolve the variant's scoring again).
	TaskSpec string
	Set      map[string]string
}

// notVariant are the config fields that do not make a variant: the stop
// settings, the budget and the metrics are what one variant is scored
// under; the data and other files enter by their digests; chat by what
// the command decided.
var notVariant = map[string]bool{"stop": true, "compare_stop": true, "max_tokens": true, "metrics": true, "data": true,
	"chat": true, "system_prompt": true, "questions": true}

// Variant is the variant of the task (tally/tasks/variant) whose samples
// l holds: the config's fields after --set, the digests of the files l
// read, and chat.
func (c *Config) Variant(l Loaded, opt VariantOptions) variant.Record {
	spec := variant.Spec{Task: c.Task, Fields: map[string]string{}, Files: map[string]string{}, Chat: opt.Chat}
	info := variant.Info{TaskSpec: opt.TaskSpec, Set: opt.Set, Paths: map[string]string{}, FewShot: c.FewShot}
	for name, f := range l.Files {
		spec.Files[name], info.Paths[name] = f.SHA256, f.Path
	}
	if c.lm != nil {
		spec.Fields = variant.LMEvalFields(c.lm.ConfigDict())
		if seed := c.lm.FewshotSeed(); seed != lmeval.DefaultFewshotSeed {
			spec.Fields["fewshot_seed"] = fmt.Sprint(seed)
		}
		info.FewShot, info.Version = c.lm.NumFewshot(), c.lm.Version()
		// The Python the bridge runs for it (lmeval.UsePython): each
		// folder's .py files by digest, so a changed utils.py is another
		// variant.
		for dir, d := range c.lm.PythonModules() {
			spec.Files[dir] = d
		}
		return variant.New(spec, info)
	}
	v := reflect.ValueOf(*c)
	for i := range v.NumField() {
		f := v.Type().Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || !f.IsExported() || notVariant[name] || v.Field(i).IsZero() {
			continue
		}
		b, _ := json.Marshal(v.Field(i).Interface()) // strings, numbers and lists of them
		spec.Fields[name] = string(b)
	}
	return variant.New(spec, info)
}

// Keyed puts every sample of l under the variant's key.
func Keyed(l Loaded, rec variant.Record) {
	for i := range l.Samples {
		l.Samples[i].Task = rec.Key
	}
}

// loadFiles digests what a load read beside its data: a judge task's
// system prompt and questions files.
func (c *Config) loadFiles(files map[string]FileDigest) error {
	for name, p := range map[string]string{"system_prompt": c.SystemPrompt, "questions": c.Questions} {
		if p == "" {
			continue
		}
		d, err := digestPath(c.resolvePath(p))
		if err != nil {
			return fmt.Errorf("task %s: field %s: %w", c.Task, name, err)
		}
		files[name] = FileDigest{c.resolvePath(p), d}
	}
	return nil
}

// requestDigest is the digest of a request's data: its embedded bytes, or
// the file or folder at its path (known, when already computed); for data
// that cannot be read twice (a pipe: --data /dev/stdin, <(zcat …)), the
// digest of what the load made of it (loaded: every sample's id, prompt,
// references and metadata), "samples:" and hexadecimal digits.
func requestDigest(req datasets.Request, known []byte, loaded []datasets.Sample) (FileDigest, error) {
	if known != nil {
		return FileDigest{req.Path, hex.EncodeToString(known)}, nil
	}
	if req.Data != nil {
		sum := sha256.Sum256(req.Data)
		return FileDigest{req.Path, hex.EncodeToString(sum[:])}, nil
	}
	if st, err := os.Stat(req.Path); err == nil && !st.Mode().IsRegular() && !st.IsDir() {
		return FileDigest{req.Path, "samples:" + samplesDigest(loaded)}, nil
	}
	d, err := digestPath(req.Path)
	if err != nil {
		return FileDigest{}, fmt.Errorf("task %s: data: %w", req.Task, err)
	}
	return FileDigest{req.Path, d}, nil
}

// samplesDigest is the SHA-256 of samples' ids, prompts, references and
// metadata, in order.
func samplesDigest(samples []datasets.Sample) string {
	h := sha256.New()
	for _, s := range samples {
		meta, _ := json.Marshal(s.Metadata)
		for _, part := range [][]byte{[]byte(s.ID), []byte(s.Prompt), s.References, meta} {
			fmt.Fprintf(h, "%d:", len(part))
			h.Write(part)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// digestFiles is the digest of several files read in turn: of their
// digests, in order.
func digestFiles(paths []string) (string, error) {
	h := sha256.New()
	for _, p := range paths {
		d, err := digestPath(p)
		if err != nil {
			return "", err
		}
		io.WriteString(h, d)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// digestPath is the SHA-256 of a regular file's bytes, or of a folder's
// regular files (each one's path inside it and digest, in path order).
func digestPath(p string) (string, error) {
	st, err := os.Stat(p)
	if err != nil {
		return "", err
	}
	if st.Mode().IsRegular() {
		return digestFile(p)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("%s is not a regular file or a folder", p)
	}
	h := sha256.New()
	err = filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(p, q)
		fd, err := digestFile(q)
		if err != nil {
			return err
		}
		io.WriteString(h, filepath.ToSlash(rel)+"\x00"+fd+"\x00")
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// digestFile is the SHA-256 of a file's bytes.
func digestFile(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
