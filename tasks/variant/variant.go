// Package variant names the variants of a task. Everything that shapes a
// task's prompts or their scoring — its config after --set (templates,
// few-shot count and seed, description, loader fields), the data and other
// files it reads (by their SHA-256), and whether prompts go through the
// model's chat template — makes one variant; the stop settings, the token
// budget and the metrics are what one variant is scored under, not what
// makes it. A variant is stored under its key, "NAME#HEX" (the task's name
// and twelve hexadecimal digits of the SHA-256 of its Spec), so that two
// variants of one task are two tasks in every table of the store, every
// report and every file: no report can join a prompt with a generation
// made for another prompt.
//
// Labels names variants for people: a task's name alone when it is the
// only variant of that name in view, and otherwise the name followed by
// what sets it apart from the others ("drop (0-shot)", "drop (3-shot)").
package variant

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Sep separates a task's name from its variant's digest in a key.
const Sep = "#"

// Spec is what makes a variant: its identity. Every field enters the key.
type Spec struct {
	// Task is the task's name.
	Task string `json:"task"`
	// Fields are the task config's fields that shape prompts or scoring,
	// each as canonical JSON, by field name; a field at its zero value is
	// left out (so a field added to tally later keeps every key).
	Fields map[string]string `json:"fields,omitempty"`
	// Files are the SHA-256 digests of the files the task reads, by what
	// they are ("data", or the config field that names the file).
	Files map[string]string `json:"files,omitempty"`
	// Chat is set when prompts go through the model's chat template.
	Chat bool `json:"chat,omitempty"`
	// Legacy, when set, says the variant was recovered from a store an
	// earlier tally wrote (which kept one prompt per task and sample id):
	// what its runs were given (Legacy.Config) is all that is known of it.
	Legacy *Legacy `json:"legacy,omitempty"`
}

// Legacy is what is known of a variant recovered from an earlier store.
type Legacy struct {
	// Config is the prompt-shaping part of the runs' flags that made the
	// variant's generations (their task specs, data, --set and chat), as
	// canonical JSON; "" when no run recorded them.
	Config string `json:"config,omitempty"`
	// Prompts says whether the store holds the variant's prompts: false
	// when a later run with other settings replaced them (an earlier
	// tally kept one prompt per task and sample id), so its samples show
	// no prompt and its scores are shown as stored.
	Prompts bool `json:"prompts"`
}

// Info is what a variant was made from, beside its identity: where its
// files were, and how to resolve its config again. None of it enters the
// key (a data file moved elsewhere is the same variant).
type Info struct {
	// TaskSpec is the --tasks entry the task came from (a built-in name
	// or a task file's path) and Set the --set overrides it was resolved
	// with (--fewshot as fewshot).
	TaskSpec string            `json:"task_spec,omitempty"`
	Set      map[string]string `json:"set,omitempty"`
	// Paths are the paths of the files whose digests Spec.Files holds, by
	// the same names.
	Paths map[string]string `json:"paths,omitempty"`
	// FewShot is the number of solved examples before each prompt.
	FewShot int `json:"fewshot"`
	// Version is the task's version (lm-eval's metadata.version; nil:
	// none).
	Version any `json:"version,omitempty"`
}

// Record is a variant as the store keeps it: key, identity and origin.
type Record struct {
	Key  string `json:"key"`
	Spec Spec   `json:"spec"`
	Info Info   `json:"info"`
}

// New makes the record of a spec, its key computed.
func New(spec Spec, info Info) Record { return Record{Key: spec.Key(), Spec: spec, Info: info} }

// Key is the variant's key: the task's name, Sep, and the first twelve
// hexadecimal digits of the SHA-256 of the spec's canonical JSON.
func (s Spec) Key() string {
	b, _ := json.Marshal(s) // strings, maps and bools: maps in key order
	sum := sha256.Sum256(b)
	return s.Task + Sep + hex.EncodeToString(sum[:6])
}

// Name is the task name of a stored task key: the key up to its last
// Sep, or the key itself for a task an earlier tally stored by name.
func Name(key string) string {
	if i := strings.LastIndex(key, Sep); i > 0 && isDigest(key[i+1:]) {
		return key[:i]
	}
	return key
}

// isDigest reports whether s is a key's digest part.
func isDigest(s string) bool {
	if len(s) != 12 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// Labels names each key for people: its task's name when no other key of
// the same name is among keys, and otherwise the name followed, in
// parentheses, by what sets its variant apart from the others of that
// name (records gives each key's variant; a key without one is an earlier
// tally's task, "earlier tally"). The labels of one name are distinct.
func Labels(keys []string, records map[string]Record) map[string]string {
	out := make(map[string]string, len(keys))
	byName := map[string][]string{}
	for _, k := range keys {
		n := Name(k)
		if !slices.Contains(byName[n], k) {
			byName[n] = append(byName[n], k)
		}
	}
	for name, ks := range byName {
		if len(ks) == 1 {
			out[ks[0]] = name
			continue
		}
		slices.Sort(ks)
		parts := differences(ks, records)
		seen := map[string]int{}
		for i, k := range ks {
			l := name + " (" + strings.Join(parts[i], ", ") + ")"
			seen[l]++
			out[k] = l
		}
		for _, k := range ks {
			if seen[out[k]] > 1 { // nothing told them apart that a label shows
				out[k] = strings.TrimSuffix(out[k], ")") + ", " + Sep + k[len(k)-min(len(k), 12):] + ")"
			}
		}
	}
	return out
}

// dimension is one thing variants may differ in, as a label shows it.
type dimension struct {
	name string
	show func(Record, bool) string
}

// differences lists, per key, how its variant shows in each dimension in
// which the keys' variants differ.
func differences(keys []string, records map[string]Record) [][]string {
	recs := make([]Record, len(keys))
	known := make([]bool, len(keys))
	for i, k := range keys {
		recs[i], known[i] = records[k]
	}
	dims := []dimension{
		{"legacy", func(r Record, ok bool) string {
			switch {
			case !ok:
				return "earlier tally"
			case r.Spec.Legacy == nil:
				return ""
			case r.Spec.Legacy.Prompts:
				return "earlier tally"
			}
			return "earlier tally, prompts not stored"
		}},
		{"legacy set", legacyFlag(func(c LegacyConfig) string {
			if len(c.Set) == 0 {
				return "no --set"
			}
			return "--set " + strings.Join(c.Set, " --set ")
		})},
		{"legacy data", legacyFlag(func(c LegacyConfig) string {
			if c.Data == "" {
				return "no --data"
			}
			return "--data " + filepath.Base(c.Data)
		})},
		{"legacy chat", legacyFlag(func(c LegacyConfig) string {
			if c.Chat {
				return "--chat"
			}
			return "no --chat"
		})},
		{"fewshot", func(r Record, ok bool) string {
			if !ok || r.Spec.Legacy != nil {
				return ""
			}
			return strconv.Itoa(r.Info.FewShot) + "-shot"
		}},
		{"chat", func(r Record, ok bool) string {
			if !ok || r.Spec.Legacy != nil {
				return ""
			}
			if r.Spec.Chat {
				return "chat"
			}
			return "no chat"
		}},
	}
	for _, f := range sortedKeys(recs, func(r Record) map[string]string { return r.Spec.Fields }) {
		if f == "fewshot" || f == "num_fewshot" {
			continue
		}
		dims = append(dims, dimension{f, func(r Record, ok bool) string { return showField(f, r.Spec.Fields[f]) }})
	}
	for _, f := range sortedKeys(recs, func(r Record) map[string]string { return r.Spec.Files }) {
		dims = append(dims, dimension{"file " + f, func(r Record, ok bool) string {
			d := r.Spec.Files[f]
			if d == "" {
				return "no " + f
			}
			base := filepath.Base(r.Info.Paths[f])
			if base == "." || base == "" || base == "/" {
				return f + " " + d[:min(8, len(d))]
			}
			return f + " " + base + " " + d[:min(8, len(d))]
		}})
	}
	out := make([][]string, len(keys))
	for _, d := range dims {
		vals := make([]string, len(keys))
		differ := false
		for i := range keys {
			vals[i] = d.show(recs[i], known[i])
			differ = differ || vals[i] != vals[0]
		}
		if !differ {
			continue
		}
		for i, v := range vals {
			if v != "" {
				out[i] = append(out[i], v)
			}
		}
	}
	for i := range out {
		if len(out[i]) == 0 {
			out[i] = []string{"task defaults"}
		}
	}
	return out
}

// sortedKeys is the union of the keys of one map of each record, sorted.
func sortedKeys(recs []Record, m func(Record) map[string]string) []string {
	var out []string
	for _, r := range recs {
		for k := range m(r) {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return out
}

// maxShown is the longest field value a label shows whole.
const maxShown = 24

// showField is how a label shows a config field's value (canonical JSON):
// field=value for a short value on one line, else the field and the first
// digits of the value's SHA-256 ("prompt #3f2a9c1b").
func showField(name, value string) string {
	if value == "" {
		return "no " + name
	}
	v := value
	var s string
	if json.Unmarshal([]byte(value), &s) == nil {
		v = strconv.Quote(s)
		if isPlain(s) {
			v = s
		}
	}
	if utf8.RuneCountInString(v) <= maxShown && !strings.ContainsAny(v, "\n\r") {
		return name + "=" + v
	}
	sum := sha256.Sum256([]byte(value))
	return name + " " + Sep + hex.EncodeToString(sum[:4])
}

// isPlain reports whether a string value reads unambiguously unquoted.
func isPlain(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r == '.' || r == '-' || r == '_' || r == '/' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// legacyFlag is a dimension of a legacy variant's runs' flags (an
// earlier tally's: variant.Spec.Legacy.Config), as show gives it; "" for
// any other variant.
func legacyFlag(show func(LegacyConfig) string) func(Record, bool) string {
	return func(r Record, ok bool) string {
		if !ok || r.Spec.Legacy == nil {
			return ""
		}
		var c LegacyConfig
		if r.Spec.Legacy.Config == "" || json.Unmarshal([]byte(r.Spec.Legacy.Config), &c) != nil {
			return "runs unknown"
		}
		return show(c)
	}
}

// LegacyConfig is the prompt-shaping part of the flags an earlier tally
// recorded with a run: what Legacy.Config holds.
type LegacyConfig struct {
	Tasks []string `json:"tasks,omitempty"`
	Data  string   `json:"data,omitempty"`
	Set   []string `json:"set,omitempty"`
	Chat  bool     `json:"chat,omitempty"`
}

// String is the config's canonical JSON.
func (c LegacyConfig) String() string {
	b, _ := json.Marshal(c)
	return string(b)
}

// ParseLegacyConfig reads the prompt-shaping part of a run's stored
// flags (the config column of the store's runs), its --set entries sorted
// (their order does not matter).
func ParseLegacyConfig(runConfig []byte) (LegacyConfig, error) {
	var c LegacyConfig
	if err := json.Unmarshal(runConfig, &c); err != nil {
		return LegacyConfig{}, fmt.Errorf("read run config: %w", err)
	}
	slices.Sort(c.Set)
	return c, nil
}

// LMEvalFields are the fields of an lm-eval task config (TaskConfig's
// to_dict(), as JSON decodes it) that make a variant, each as canonical
// JSON: every field but metric_list, and generation_kwargs without until
// and max_gen_toks (the stop setting and the budget).
func LMEvalFields(cfg map[string]any) map[string]string {
	out := map[string]string{}
	for k, v := range cfg {
		switch k {
		case "metric_list":
			continue
		case "generation_kwargs":
			m, ok := v.(map[string]any)
			if !ok {
				break
			}
			rest := map[string]any{}
			for mk, mv := range m {
				if mk != "until" && mk != "max_gen_toks" {
					rest[mk] = mv
				}
			}
			if len(rest) == 0 {
				continue
			}
			v = rest
		}
		b, err := json.Marshal(v) // decoded JSON marshals again, maps in key order
		if err == nil {
			out[k] = string(b)
		}
	}
	return out
}
