package datasets

import (
	"encoding/json"
	"fmt"
	"sort"
	"sync"
)

// VerbatimPrompt is the row key under which a row loader hands a prompt to
// be taken as it is (from an lm-evaluation-harness sample log), with no
// template or few-shot examples.
const VerbatimPrompt = "__prompt"

// Fields are the task-config fields a loader may read (tally/tasks.Config
// documents each).
type Fields struct {
	// References names the row field holding the reference answer(s).
	References string
	// L-Eval: the prompt bound and how a document that does not fit is cut.
	MaxPromptTokens int
	Truncate        string
	// Counting-Stars: language, test type, stars, haystack lengths, seed
	// and scoring rule.
	Lang        string
	TestType    string
	Stars       int
	Lengths     []int
	Seed        uint64
	ScoringRule string
	// Judge tasks: the judge system prompt file and the questions file.
	SystemPrompt string
	Questions    string
}

// Request is what a task hands its loader.
type Request struct {
	// Task is the task name; the task puts every sample under it.
	Task string
	// Path is the data file, resolved against the task config's directory,
	// or "embedded:NAME" for data built into tally (then in Data).
	Path string
	// Data is the embedded data when Path is "embedded:NAME", else nil.
	Data []byte
	// SkipBad skips malformed records, counting them, instead of failing.
	SkipBad bool
	// Resolve resolves another path named in the task config.
	Resolve func(path string) string
	// Fields are the loader's task-config fields.
	Fields Fields
}

// Rows is what a row loader reads: template rows (the task's id, prompt,
// target and share_key templates run over them) and each row's references
// as JSON.
type Rows struct {
	Rows []map[string]any
	Refs []json.RawMessage
	// Notes, when set, are each row's sample notes (datasets.Sample.Notes;
	// nil: none).
	Notes   []map[string]string
	Skipped int
}

// Loader reads one data format. Exactly one of Rows and Samples is set:
// Rows for formats whose prompts the task's templates build, Samples for
// loaders that build prompts themselves.
type Loader struct {
	// Name is the task config's loader value.
	Name string
	// Doc is one sentence: the format read.
	Doc string
	// Rows reads template rows and references.
	Rows func(Request) (Rows, error)
	// Samples builds the samples, prompts included; it also returns the
	// number of records skipped under SkipBad.
	Samples func(Request) ([]Sample, int, error)
	// OnlyData says that the loader reads nothing but the data file (Path,
	// or Data): what it returns depends on the file's bytes and the
	// request's fields alone, so a task may keep what it rendered from
	// them between runs.
	OnlyData bool
}

// loaders holds every registered loader by name. It is written only by
// RegisterLoader, from package init functions, and read afterwards.
var loaders = struct {
	sync.RWMutex
	m map[string]Loader
}{m: map[string]Loader{}}

// RegisterLoader adds a loader. It panics on an empty name, a loader with
// not exactly one of Rows and Samples, or a name registered twice.
func RegisterLoader(l Loader) {
	switch {
	case l.Name == "":
		panic("datasets.RegisterLoader: loader with no name")
	case (l.Rows == nil) == (l.Samples == nil):
		panic(fmt.Sprintf("datasets.RegisterLoader: loader %q needs exactly one of Rows and Samples", l.Name))
	}
	loaders.Lock()
	defer loaders.Unlock()
	if _, dup := loaders.m[l.Name]; dup {
		panic(fmt.Sprintf("datasets.RegisterLoader: loader %q registered twice", l.Name))
	}
	loaders.m[l.Name] = l
}

// LookupLoader returns the registered loader of that name.
func LookupLoader(name string) (Loader, bool) {
	loaders.RLock()
	defer loaders.RUnlock()
	l, ok := loaders.m[name]
	return l, ok
}

// LoaderNames lists the registered loaders, sorted.
func LoaderNames() []string {
	loaders.RLock()
	defer loaders.RUnlock()
	out := make([]string, 0, len(loaders.m))
	for n := range loaders.m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
