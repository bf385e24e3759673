package main

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"tally/backends"
	"tally/backends/gomlx"
)

// expected is the part of a fixture's <model>.expected.json.gz the check
// uses (fixtures/README.md in the shared reference set describes it).
type expected struct {
	Prompts         [][]int     `json:"prompts"`
	LastLogits      [][]float64 `json:"last_logits"`
	GreedyNew       int         `json:"greedy_new_tokens"`
	GreedyUnbatched [][]int     `json:"greedy_unbatched"`
	GreedyBatched   [][]int     `json:"greedy_batched"`
}

// parityRow is one fixture model in one --dtype, compared with its
// expected file (transformers' float32 computation).
type parityRow struct {
	Model string `json:"model"`
	DType string `json:"dtype"`
	// Arithmetic is the model fingerprint's arithmetic part, e.g.
	// "float32:xla-cuda:numerics-2" (it would say xla-cuda-tf32 if the
	// float32 products ran in TF32).
	Arithmetic string `json:"arithmetic"`
	Prompts    int    `json:"prompts"`
	// LogitRelErr is each prompt's max|got − want| / max|want| of its last
	// position's logits; WorstRelErr the largest.
	LogitRelErr []float64 `json:"logit_rel_err"`
	WorstRelErr float64   `json:"worst_rel_err"`
	// UnbatchedIdentical and BatchedIdentical count prompts whose greedy
	// tokens equal the expected ones (one request per call; all prompts in
	// one call); AgreeTokens counts tokens before each prompt's first
	// difference (unbatched), of TotalTokens; FirstTokenEqual the prompts
	// whose first token agrees.
	UnbatchedIdentical int `json:"unbatched_identical"`
	BatchedIdentical   int `json:"batched_identical"`
	AgreeTokens        int `json:"agree_tokens"`
	TotalTokens        int `json:"total_tokens"`
	FirstTokenEqual    int `json:"first_token_equal"`
	// Pass is the float32 target (every logit within 1e-4 relative, every
	// greedy sequence identical batched and unbatched); for the half
	// modes, the CPU test's bounds (worst error under 6e-2, first token
	// equal on all but a quarter of the prompts: docs/numerics.md).
	Pass         bool    `json:"pass"`
	Seconds      float64 `json:"seconds"`
	Compilations int     `json:"compilations"`
	Error        string  `json:"error,omitempty"`
}

// parityTolerance is the float32 bound on the relative logit error.
const parityTolerance = 1e-4

func runParity(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("parity", flag.ContinueOnError)
	dir := fs.String("fixtures", "", "fixtures/models folder (NAME/ and NAME.expected.json.gz)")
	device := fs.String("device", "cuda", "cpu, xla or cuda")
	dtypes := fs.String("dtypes", "float32,bfloat16", "--dtype modes, in order")
	prompts := fs.Int("prompts", 0, "check only the first N prompts of each model (0: all)")
	out := fs.String("out", "", "JSON lines file to append each model's row to")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *out == "" {
		return fmt.Errorf("want -fixtures DIR -out FILE")
	}
	names, err := fixtureNames(*dir)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(*out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	failed := 0
	for _, dt := range strings.Split(*dtypes, ",") {
		for _, name := range names {
			row := checkFixture(ctx, *dir, name, *device, strings.TrimSpace(dt), *prompts)
			if err := enc.Encode(row); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "parity %s %s: worst rel err %.3g, unbatched %d/%d, batched %d/%d identical, pass %v (%.1fs)%s\n",
				row.Model, row.DType, row.WorstRelErr, row.UnbatchedIdentical, row.Prompts, row.BatchedIdentical, row.Prompts,
				row.Pass, row.Seconds, errSuffix(row.Error))
			if !row.Pass {
				failed++
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of the (model, dtype) checks did not pass", failed)
	}
	return nil
}

func errSuffix(e string) string {
	if e == "" {
		return ""
	}
	return ": " + e
}

// fixtureNames lists the models of dir that have an expected file.
func fixtureNames(dir string) ([]string, error) {
	matches, err := filepath.Glob(filepath.Join(dir, "*.expected.json.gz"))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, m := range matches {
		name := strings.TrimSuffix(filepath.Base(m), ".expected.json.gz")
		if st, err := os.Stat(filepath.Join(dir, name)); err == nil && st.IsDir() {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no fixture models (NAME/ beside NAME.expected.json.gz) in %s", dir)
	}
	sort.Strings(names)
	return names, nil
}

// readExpected reads a fixture's expected file.
func readExpected(path string) (expected, error) {
	var e expected
	f, err := os.Open(path)
	if err != nil {
		return e, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return e, fmt.Errorf("%s: %w", path, err)
	}
	if err := json.NewDecoder(zr).Decode(&e); err != nil {
		return e, fmt.Errorf("%s: %w", path, err)
	}
	if len(e.Prompts) == 0 || len(e.LastLogits) != len(e.Prompts) || len(e.GreedyUnbatched) != len(e.Prompts) || len(e.GreedyBatched) != len(e.Prompts) {
		return e, fmt.Errorf("%s: prompts, last_logits and greedy lists do not match", path)
	}
	return e, nil
}

// checkFixture runs one fixture model in one mode: the last-position
// logits of each prompt, its greedy tokens alone, then all prompts in one
// batch.
func checkFixture(ctx context.Context, dir, name, device, dtype string, limit int) (row parityRow) {
	row = parityRow{Model: name, DType: dtype}
	start := time.Now()
	defer func() { row.Seconds = time.Since(start).Seconds() }()
	fail := func(err error) parityRow {
		row.Error = err.Error()
		row.Pass = false
		return row
	}
	e, err := readExpected(filepath.Join(dir, name+".expected.json.gz"))
	if err != nil {
		return fail(err)
	}
	n := len(e.Prompts)
	if limit > 0 && limit < n {
		n = limit
	}
	row.Prompts = n
	mode, err := gomlx.ParseDType(dtype)
	if err != nil {
		return fail(err)
	}
	m, err := gomlx.Open(ctx, filepath.Join(dir, name), gomlx.Options{Device: device, DType: mode, MaxBatch: n, FingerprintCache: "-"})
	if err != nil {
		return fail(err)
	}
	defer m.Close()
	row.Arithmetic = m.Arithmetic().String()
	for i := range n {
		got, err := m.Logits(ctx, e.Prompts[i])
		if err != nil {
			return fail(fmt.Errorf("logits of prompt %d: %w", i, err))
		}
		r := relErr(got, e.LastLogits[i])
		row.LogitRelErr = append(row.LogitRelErr, r)
		row.WorstRelErr = math.Max(row.WorstRelErr, r)
	}
	for i := range n {
		ids, err := greedy(ctx, m, e.Prompts[i:i+1], e.GreedyNew)
		if err != nil {
			return fail(fmt.Errorf("greedy prompt %d: %w", i, err))
		}
		want := e.GreedyUnbatched[i]
		if slices.Equal(ids[0], want) {
			row.UnbatchedIdentical++
		}
		agree := 0
		for agree < len(want) && agree < len(ids[0]) && ids[0][agree] == want[agree] {
			agree++
		}
		row.AgreeTokens += agree
		row.TotalTokens += len(want)
		if agree > 0 {
			row.FirstTokenEqual++
		}
	}
	ids, err := greedy(ctx, m, e.Prompts[:n], e.GreedyNew)
	if err != nil {
		return fail(fmt.Errorf("batched greedy: %w", err))
	}
	for i := range n {
		if slices.Equal(ids[i], e.GreedyBatched[i]) {
			row.BatchedIdentical++
		}
	}
	row.Compilations = m.Compilations()
	if mode == gomlx.DTypeFloat32 {
		row.Pass = row.WorstRelErr < parityTolerance && row.UnbatchedIdentical == n && row.BatchedIdentical == n
	} else {
		row.Pass = row.WorstRelErr < 6e-2 && 4*row.FirstTokenEqual >= 3*n
	}
	return row
}

// relErr is max|got − want| / max|want|, want rounded to float32 as the
// fixture README says.
func relErr(got []float32, want []float64) float64 {
	if len(got) != len(want) {
		return math.Inf(1)
	}
	var d, w float64
	for i := range want {
		d = math.Max(d, math.Abs(float64(got[i])-float64(float32(want[i]))))
		w = math.Max(w, math.Abs(want[i]))
	}
	if math.IsNaN(d) {
		return math.Inf(1)
	}
	return d / w
}

// greedy generates newTokens greedy tokens for each prompt in one call.
func greedy(ctx context.Context, m *gomlx.Model, prompts [][]int, newTokens int) ([][]int, error) {
	reqs := make([]backends.Request, len(prompts))
	for i, p := range prompts {
		reqs[i] = backends.Request{Index: i, PromptIDs: p, MaxTokens: newTokens}
	}
	out := make([][]int, len(prompts))
	var firstErr error
	err := m.Generate(ctx, reqs, func(ev backends.Event) bool {
		out[ev.Index] = append(out[ev.Index], ev.IDs...)
		if ev.Done && ev.Err != nil && firstErr == nil {
			firstErr = fmt.Errorf("request %d: %w", ev.Index, ev.Err)
		}
		return true
	})
	if err == nil {
		err = firstErr
	}
	return out, err
}
