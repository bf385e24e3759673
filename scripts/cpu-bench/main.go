// Command cpu-bench measures tally's native engine against an Ollama server
// on the same random Llama weights (see scripts/cpu-bench.sh, which builds
// the anchor Ollama and runs the steps below).
//
//	cpu-bench model -out DIR [-dtype BF16]  # random 76M Llama, F16 (or BF16) safetensors, tokenizer
//	cpu-bench native -model DIR         # one JSON line: native batch 1 and 8
//	cpu-bench native -model DIR -phase long  # one JSON line: native 4k and 16k-token prompts
//	cpu-bench ollama -name NAME -pid P [-phase long] [-log serve.log]  # the same for Ollama at OLLAMA_HOST
//	cpu-bench report -model DIR A.json B.json ...  # the table, with the roofline and ratios
//	cpu-bench native -model DIR -dtype float32  # the native engine in another --dtype
//	cpu-bench compare A1.json B1.json A2.json B2.json ...  # per-round ratios to the first engine, and medians
//
// The short phase (the default) runs the same prompts on every engine
// (about 270 tokens each, 128 new tokens): one warm-up prompt, 8 prompts one
// at a time (batch 1), 8 other prompts at once (batch 8), distinct so that
// no server-side prompt cache helps. The long phase runs one warm-up
// prompt, then one prompt of 4,096 and one of 16,384 tokens at batch 1,
// 16 new tokens after each.
package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/gomlx/compute/dtypes/bfloat16"
	"github.com/gomlx/compute/dtypes/float16"
	"github.com/ollama/ollama/api"

	"tally/backends"
	"tally/backends/gomlx"
	"tally/backends/tokenizer"
)

// The model of issue 16: hidden 768, 12 layers, 12/4 heads, MLP 2048, a
// 512-entry byte-level vocabulary (about 76M parameters).
const (
	hidden, layers, heads, kvHeads, inter, vocab = 768, 12, 12, 4, 2048, 512
	promptTokens, newTokens, nPrompts            = 270, 128, 8
	// maxContext is the model's context: room for the long phase.
	maxContext = 32768
	// longNew is the number of new tokens after each long prompt.
	longNew = 16
)

// longPrompts are the long phase's prompt lengths, in tokens.
var longPrompts = []int{4096, 16384}

// longContext is the context the long phase asks Ollama for.
const longContext = 16384 + 2*longNew

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: cpu-bench model|native|ollama|report ...")
		os.Exit(2)
	}
	ctx := context.Background()
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "model":
		fs := flag.NewFlagSet(cmd, flag.ExitOnError)
		out := fs.String("out", "", "directory to write")
		dt := fs.String("dtype", "F16", "weight dtype: F16 or BF16")
		fs.Parse(args)
		err = writeModel(*out, *dt)
	case "native":
		fs := flag.NewFlagSet(cmd, flag.ExitOnError)
		dir := fs.String("model", "", "model directory")
		dtype := fs.String("dtype", "auto", "the products' dtype (tally --dtype): auto, float32, bfloat16 or float16")
		prof := fs.String("cpuprofile", "", "write a CPU profile of the run to this file")
		phase := fs.String("phase", "short", "short (270-token prompts, batch 1 and 8) or long (4k and 16k-token prompts)")
		fs.Parse(args)
		if *prof != "" {
			f, perr := os.Create(*prof)
			if perr != nil {
				err = fmt.Errorf("cpu profile: %w", perr)
				break
			}
			defer f.Close()
			if perr := pprof.StartCPUProfile(f); perr != nil {
				err = fmt.Errorf("cpu profile: %w", perr)
				break
			}
			defer pprof.StopCPUProfile()
		}
		err = runNative(ctx, *dir, gomlx.DType(*dtype), *phase)
	case "ollama":
		fs := flag.NewFlagSet(cmd, flag.ExitOnError)
		dir := fs.String("model", "", "model directory (for the tokenizer)")
		name := fs.String("name", "", "Ollama model name")
		pid := fs.Int("pid", 0, "ollama serve pid (its runner's peak RSS is reported)")
		phase := fs.String("phase", "short", "short or long (see native)")
		logFile := fs.String("log", "", "the server's log, for the CPU features ggml reports")
		fs.Parse(args)
		err = runOllama(ctx, *dir, *name, *pid, *phase, *logFile)
	case "report":
		fs := flag.NewFlagSet(cmd, flag.ExitOnError)
		dir := fs.String("model", "", "model directory (for its weight bytes)")
		fs.Parse(args)
		err = report(*dir, fs.Args())
	case "compare":
		err = compare(args)
	default:
		err = fmt.Errorf("unknown command %q", cmd)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "cpu-bench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

// result is one engine's measurements in one phase.
type result struct {
	Engine   string  `json:"engine"`
	Kernels  string  `json:"kernels,omitempty"` // the CPU kernels the engine runs
	Weights  string  `json:"weights,omitempty"` // the checkpoint's dtype (config.json's torch_dtype)
	Phase    string  `json:"phase,omitempty"`   // "short" (or "") or "long"
	Prefill1 float64 `json:"prefill1"`          // prompt tok/s, batch 1
	Decode1  float64 `json:"decode1"`           // new tok/s after the first, batch 1
	Prefill8 float64 `json:"prefill8"`          // prompt tok/s, 8 at once
	Decode8  float64 `json:"decode8"`           // total new tok/s, 8 at once
	PeakRSS  int64   `json:"peak_rss"`          // bytes
	// The long phase: prompt tok/s of each long prompt (longPrompts), and
	// new tok/s after the longest.
	PrefillLong []float64 `json:"prefill_long,omitempty"`
	DecodeLong  float64   `json:"decode_long,omitempty"`
	// OtherCores is the CPU other processes took while the engine ran,
	// in cores (see cpuMeter).
	OtherCores *float64 `json:"other_cores,omitempty"`
}

// --- the model ---

func writeModel(out, dtype string) error {
	if out == "" {
		return errors.New("model: -out is required")
	}
	if dtype != "F16" && dtype != "BF16" {
		return fmt.Errorf("model: dtype %q (want F16 or BF16)", dtype)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", out, err)
	}
	tok, err := tokenizer.TrainByteLevel(corpus(), vocab)
	if err != nil {
		return fmt.Errorf("train tokenizer: %w", err)
	}
	t, err := tokenizer.FromJSON(tok)
	if err != nil {
		return fmt.Errorf("read back tokenizer: %w", err)
	}
	if t.VocabSize() != vocab {
		return fmt.Errorf("tokenizer has %d entries, want %d", t.VocabSize(), vocab)
	}
	eos, _ := t.TokenID("<|endoftext|>")
	files := map[string]any{
		"config.json": map[string]any{
			"architectures": []string{"LlamaForCausalLM"}, "model_type": "llama",
			"hidden_size": hidden, "intermediate_size": inter, "num_hidden_layers": layers,
			"num_attention_heads": heads, "num_key_value_heads": kvHeads, "head_dim": hidden / heads,
			"hidden_act": "silu", "max_position_embeddings": maxContext, "rms_norm_eps": 1e-5,
			"rope_theta": 10000.0, "tie_word_embeddings": false, "vocab_size": vocab,
			"torch_dtype": map[string]string{"F16": "float16", "BF16": "bfloat16"}[dtype], "bos_token_id": nil, "eos_token_id": eos,
		},
		"tokenizer_config.json": map[string]any{
			"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
			"add_bos_token": false, "add_eos_token": false,
			"model_max_length": maxContext, "tokenizer_class": "Qwen2Tokenizer",
		},
		"generation_config.json": map[string]any{"do_sample": false, "eos_token_id": eos},
	}
	for name, v := range files {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return fmt.Errorf("encode %s: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(out, name), append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	if err := os.WriteFile(filepath.Join(out, "tokenizer.json"), tok, 0o644); err != nil {
		return fmt.Errorf("write tokenizer.json: %w", err)
	}
	return writeWeights(filepath.Join(out, "model.safetensors"), dtype)
}

type tensorSpec struct {
	name  string
	shape []int
	norm  bool
}

func specs() []tensorSpec {
	hd := hidden / heads
	s := []tensorSpec{{name: "model.embed_tokens.weight", shape: []int{vocab, hidden}}}
	for l := range layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		s = append(s,
			tensorSpec{name: p + "input_layernorm.weight", shape: []int{hidden}, norm: true},
			tensorSpec{name: p + "self_attn.q_proj.weight", shape: []int{heads * hd, hidden}},
			tensorSpec{name: p + "self_attn.k_proj.weight", shape: []int{kvHeads * hd, hidden}},
			tensorSpec{name: p + "self_attn.v_proj.weight", shape: []int{kvHeads * hd, hidden}},
			tensorSpec{name: p + "self_attn.o_proj.weight", shape: []int{hidden, heads * hd}},
			tensorSpec{name: p + "post_attention_layernorm.weight", shape: []int{hidden}, norm: true},
			tensorSpec{name: p + "mlp.gate_proj.weight", shape: []int{inter, hidden}},
			tensorSpec{name: p + "mlp.up_proj.weight", shape: []int{inter, hidden}},
			tensorSpec{name: p + "mlp.down_proj.weight", shape: []int{hidden, inter}},
		)
	}
	return append(s,
		tensorSpec{name: "model.norm.weight", shape: []int{hidden}, norm: true},
		tensorSpec{name: "lm_head.weight", shape: []int{vocab, hidden}})
}

// writeWeights writes seeded N(0, 0.02²) weights (norms 1) of dtype (F16
// or BF16) as safetensors.
func writeWeights(path, dtype string) error {
	type entry struct {
		DType   string `json:"dtype"`
		Shape   []int  `json:"shape"`
		Offsets [2]int `json:"data_offsets"`
	}
	header := map[string]any{}
	off := 0
	for _, s := range specs() {
		n := 2
		for _, d := range s.shape {
			n *= d
		}
		header[s.name] = entry{DType: dtype, Shape: s.shape, Offsets: [2]int{off, off + n}}
		off += n
	}
	h, err := json.Marshal(header)
	if err != nil {
		return fmt.Errorf("encode safetensors header: %w", err)
	}
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	buf := make([]byte, 8, 8+len(h)+off)
	binary.LittleEndian.PutUint64(buf, uint64(len(h)))
	buf = append(buf, h...)
	rng := rand.New(rand.NewPCG(16, 76))
	var f float16.Float16
	for _, s := range specs() {
		n := 1
		for _, d := range s.shape {
			n *= d
		}
		for range n {
			v := float32(1)
			if !s.norm {
				v = float32(rng.NormFloat64() * 0.02)
			}
			if dtype == "BF16" {
				buf = binary.LittleEndian.AppendUint16(buf, uint16(bfloat16.FromFloat32(v)))
			} else {
				f.SetFloat32(v)
				buf = binary.LittleEndian.AppendUint16(buf, uint16(f))
			}
		}
	}
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// corpus is varied English-like text with enough repeated pairs for the
// tokenizer's merges.
func corpus() string {
	var b strings.Builder
	for i := range 100 {
		b.WriteString(prompt(1000+i, 200))
		b.WriteByte('\n')
	}
	return b.String()
}

var words = strings.Fields(`alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima
mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu
the a model server harness token answer question number river mountain forest valley ocean
reads writes counts streams scores checks measures quickly slowly always never often`)

var syllables = strings.Fields("ka lo mi nu pe ra si to vu we xa yo ze bri cha dro fle gru pla sto")

// prompt is seeded text of about n words.
func prompt(seed, n int) string {
	rng := rand.New(rand.NewPCG(uint64(seed), 3))
	ws := make([]string, n)
	for i := range ws {
		switch rng.IntN(6) {
		case 0:
			ws[i] = strconv.Itoa(rng.IntN(2000))
		case 1:
			ws[i] = syllables[rng.IntN(len(syllables))] + syllables[rng.IntN(len(syllables))] + syllables[rng.IntN(len(syllables))]
		default:
			ws[i] = words[rng.IntN(len(words))]
		}
	}
	return strings.Join(ws, " ") + "."
}

// prompts returns the texts of set (0 warm-up, 1 batch 1, 2 batch 8), each
// cut to promptTokens tokens of tok.
func prompts(tok *tokenizer.Tokenizer, set int) ([]string, [][]int, error) {
	n := nPrompts
	if set == 0 {
		n = 1
	}
	var texts []string
	var ids [][]int
	for i := range n {
		text, enc, err := promptOf(tok, set*100+i, promptTokens)
		if err != nil {
			return nil, nil, err
		}
		texts = append(texts, text)
		ids = append(ids, enc)
	}
	return texts, ids, nil
}

// promptOf is seeded text of exactly tokens tokens of tok, and its ids.
func promptOf(tok *tokenizer.Tokenizer, seed, tokens int) (string, []int, error) {
	text := prompt(seed, tokens)
	enc, err := tok.Encode(text, false)
	if err != nil {
		return "", nil, fmt.Errorf("encode prompt: %w", err)
	}
	if len(enc) < tokens {
		return "", nil, fmt.Errorf("prompt has %d tokens, want ≥ %d", len(enc), tokens)
	}
	enc = enc[:tokens]
	text, err = tok.Decode(enc, false)
	if err != nil {
		return "", nil, fmt.Errorf("decode prompt: %w", err)
	}
	return text, enc, nil
}

// longSet returns the long phase's prompts: a short warm-up, then one of
// each of longPrompts' lengths.
func longSet(tok *tokenizer.Tokenizer) ([]string, [][]int, error) {
	var texts []string
	var ids [][]int
	for i, n := range append([]int{promptTokens}, longPrompts...) {
		text, enc, err := promptOf(tok, 300+i, n)
		if err != nil {
			return nil, nil, err
		}
		texts = append(texts, text)
		ids = append(ids, enc)
	}
	return texts, ids, nil
}

// measureLong runs the long phase through gen (each call one prompt,
// maxNew new tokens).
func measureLong(tok *tokenizer.Tokenizer, r *result, gen func(ids [][]int, maxNew int) (timing, error)) error {
	_, ids, err := longSet(tok)
	if err != nil {
		return err
	}
	r.Phase = "long"
	for i, p := range ids {
		t, err := gen([][]int{p}, longNew)
		if err != nil {
			return err
		}
		if i > 0 {
			r.PrefillLong = append(r.PrefillLong, rate(len(p), t.prefill))
			r.DecodeLong = rate(t.tokens, t.decode)
		}
	}
	return nil
}

// weightsOf is the torch_dtype of the model in dir ("F16" or "BF16").
func weightsOf(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return ""
	}
	var c struct {
		DType string `json:"torch_dtype"`
	}
	if json.Unmarshal(b, &c) != nil {
		return ""
	}
	return map[string]string{"float16": "F16", "bfloat16": "BF16"}[c.DType]
}

// --- native ---

func runNative(ctx context.Context, dir string, dtype gomlx.DType, phase string) error {
	tok, err := tokenizer.Load(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return fmt.Errorf("load tokenizer: %w", err)
	}
	m, err := gomlx.Open(ctx, dir, gomlx.Options{MaxBatch: nPrompts, DType: dtype, Log: os.Stderr, FingerprintCache: "-"})
	if err != nil {
		return fmt.Errorf("open native model: %w", err)
	}
	defer m.Close()
	gen := func(ids [][]int, maxNew int) (timing, error) {
		reqs := make([]backends.Request, len(ids))
		for i := range ids {
			reqs[i] = backends.Request{Index: i, PromptIDs: ids[i], MaxTokens: maxNew}
		}
		return timed(len(ids), func(each func(int, int)) error {
			return m.Generate(ctx, reqs, func(ev backends.Event) bool {
				if len(ev.IDs) > 0 || ev.Done {
					each(ev.Index, len(ev.IDs))
				}
				return true
			})
		})
	}
	kernels := m.Kernels() + ", products in " + m.Arithmetic().Products
	r := result{Engine: "tally native (" + kernels + ")", Kernels: kernels, Weights: weightsOf(dir)}
	meter := startCPUMeter(0)
	switch phase {
	case "long":
		err = measureLong(tok, &r, gen)
	case "short", "":
		err = measure(tok, &r, gen)
	default:
		err = fmt.Errorf("phase %q: want short or long", phase)
	}
	if err != nil {
		return err
	}
	r.OtherCores = meter.others()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		r.PeakRSS = ru.Maxrss * 1024
	}
	return json.NewEncoder(os.Stdout).Encode(r)
}

// measure runs the warm-up set and the batch-1 and batch-8 sets through
// gen (newTokens new tokens a prompt).
func measure(tok *tokenizer.Tokenizer, r *result, gen func(ids [][]int, maxNew int) (timing, error)) error {
	for set := range 3 {
		_, ids, err := prompts(tok, set)
		if err != nil {
			return err
		}
		switch set {
		case 0:
			if _, err := gen(ids, newTokens); err != nil {
				return err
			}
		case 1:
			var sum timing // over the prompts, one at a time
			for _, p := range ids {
				t, err := gen([][]int{p}, newTokens)
				if err != nil {
					return err
				}
				sum.prefill += t.prefill
				sum.decode += t.decode
				sum.tokens += t.tokens
			}
			r.Prefill1 = rate(len(ids)*promptTokens, sum.prefill)
			r.Decode1 = rate(sum.tokens, sum.decode)
		case 2:
			t, err := gen(ids, newTokens)
			if err != nil {
				return err
			}
			r.Prefill8, r.Decode8 = rate(len(ids)*promptTokens, t.prefill), rate(t.tokens, t.decode)
		}
	}
	return nil
}

// timing is one generation call's: the seconds until every row had its
// first token (or ended without one: prefill), the seconds after that
// (decode), and the tokens after each row's first.
type timing struct {
	prefill, decode float64
	tokens          int
}

// timed runs fn, which calls each(row, n) for every n new tokens of a
// row and each(row, 0) when a row ends (a row may end without a token: a
// random model's first greedy token can be its end-of-text id), and
// returns its timing.
func timed(rows int, fn func(each func(row, n int)) error) (timing, error) {
	var mu sync.Mutex
	var firstAt time.Time
	started := make([]bool, rows)
	seen, total := 0, 0
	start := time.Now()
	err := fn(func(row, n int) {
		mu.Lock()
		defer mu.Unlock()
		if !started[row] {
			started[row] = true
			if n > 0 {
				n-- // the first token comes with the prefill
			}
			if seen++; seen == rows {
				firstAt = time.Now()
			}
		}
		total += n
	})
	end := time.Now()
	if err != nil {
		return timing{}, err
	}
	if seen < rows {
		return timing{}, fmt.Errorf("%d of %d rows ended without a token or an end", rows-seen, rows)
	}
	return timing{prefill: firstAt.Sub(start).Seconds(), decode: end.Sub(firstAt).Seconds(), tokens: total}, nil
}

// rate is n over seconds, 0 when either is 0.
func rate(n int, seconds float64) float64 {
	if n <= 0 || seconds <= 0 {
		return 0
	}
	return float64(n) / seconds
}

// --- Ollama ---

func runOllama(ctx context.Context, dir, name string, pid int, phase, logFile string) error {
	tok, err := tokenizer.Load(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return fmt.Errorf("load tokenizer: %w", err)
	}
	client, err := api.ClientFromEnvironment()
	if err != nil {
		return fmt.Errorf("ollama client: %w", err)
	}
	byIDs := map[string]string{}
	remember := func(texts []string, ids [][]int) {
		for i := range texts {
			byIDs[fmt.Sprint(ids[i])] = texts[i]
		}
	}
	numCtx := 2048
	if phase == "long" {
		numCtx = longContext
		texts, ids, err := longSet(tok)
		if err != nil {
			return err
		}
		remember(texts, ids)
	} else {
		for set := range 3 {
			texts, ids, err := prompts(tok, set)
			if err != nil {
				return err
			}
			remember(texts, ids)
		}
	}
	gen := func(ids [][]int, maxNew int) (timing, error) {
		return timed(len(ids), func(each func(int, int)) error {
			var wg sync.WaitGroup
			errs := make([]error, len(ids))
			for i := range ids {
				wg.Add(1)
				go func() {
					defer wg.Done()
					stream := true
					req := &api.GenerateRequest{Model: name, Prompt: byIDs[fmt.Sprint(ids[i])], Raw: true, Stream: &stream,
						Options: map[string]any{"num_predict": maxNew, "temperature": 0, "num_ctx": numCtx, "seed": 1}}
					errs[i] = client.Generate(ctx, req, func(r api.GenerateResponse) error {
						switch {
						case r.Response != "":
							each(i, 1) // one streamed chunk per token
						case r.Done:
							each(i, 0)
						}
						return nil
					})
				}()
			}
			wg.Wait()
			return errors.Join(errs...)
		})
	}
	r := result{Engine: "Ollama v0.6.5 (ggml)", Weights: weightsOf(dir)}
	meter := startCPUMeter(pid)
	switch phase {
	case "long":
		err = measureLong(tok, &r, gen)
	case "short", "":
		err = measure(tok, &r, gen)
	default:
		err = fmt.Errorf("phase %q: want short or long", phase)
	}
	if err != nil {
		return err
	}
	r.OtherCores = meter.others()
	r.PeakRSS = treeHWM(pid)
	r.Kernels = ggmlFeatures(logFile)
	return json.NewEncoder(os.Stdout).Encode(r)
}

// cpuMeter measures the CPU time that other processes take while an
// engine runs: the machine's busy time (/proc/stat) less the engine's own
// (this process, and an Ollama server's processes). On a machine shared
// with other work it says how much of that work each measurement met.
type cpuMeter struct {
	start     time.Time
	busy, own float64
	pid       int
}

func startCPUMeter(pid int) *cpuMeter {
	return &cpuMeter{start: time.Now(), busy: busySeconds(), own: ownSeconds(pid), pid: pid}
}

// others is the CPU other processes took since start, in cores.
func (c *cpuMeter) others() *float64 {
	wall := time.Since(c.start).Seconds()
	if wall <= 0 {
		return nil
	}
	v := max(0, (busySeconds()-c.busy)-(ownSeconds(c.pid)-c.own)) / wall
	return &v
}

// clockTicks is Linux's USER_HZ, the unit of /proc's CPU times.
const clockTicks = 100

// busySeconds is the CPU time every core spent busy since boot: all of
// /proc/stat's cpu line but idle and iowait.
func busySeconds() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	var sum float64
	for i, v := range f[1:] {
		if i == 3 || i == 4 || i >= 8 { // idle, iowait; guest times are in user already
			continue
		}
		x, _ := strconv.ParseFloat(v, 64)
		sum += x
	}
	return sum / clockTicks
}

// ownSeconds is the CPU time of this process, plus that of pid and its
// children when pid > 0.
func ownSeconds(pid int) float64 {
	var ru syscall.Rusage
	var t float64
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		t = float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
	}
	if pid <= 0 {
		return t
	}
	procStats(func(p int, f []string) {
		// state, ppid, ..., utime and stime are the 12th and 13th fields.
		if len(f) < 13 || (p != pid && f[1] != strconv.Itoa(pid)) {
			return
		}
		u, _ := strconv.ParseFloat(f[11], 64)
		k, _ := strconv.ParseFloat(f[12], 64)
		t += (u + k) / clockTicks
	})
	return t
}

// procStats calls f with each process's pid and the fields of its
// /proc/PID/stat after the parenthesised command name (state, ppid, …).
func procStats(f func(pid int, fields []string)) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		f(p, strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])))
	}
}

// treeHWM is the largest VmHWM (peak RSS) among pid and its children (the
// Ollama runner is a child of `ollama serve`).
func treeHWM(pid int) int64 {
	if pid <= 0 {
		return 0
	}
	best := hwm(pid)
	procStats(func(p int, f []string) {
		if len(f) > 1 && f[1] == strconv.Itoa(pid) { // its ppid
			best = max(best, hwm(p))
		}
	})
	return best
}

func hwm(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n * 1024
			}
		}
	}
	return 0
}

// ggmlFeatures lists the CPU features ggml reports in an Ollama server's
// log (its "system" line: the SIMD extensions it was built with) and the
// weights' type llama.cpp loaded (Ollama v0.6.5 converts a BF16
// checkpoint's matrices to F16).
func ggmlFeatures(logFile string) string {
	if logFile == "" {
		return ""
	}
	b, err := os.ReadFile(logFile)
	if err != nil {
		return ""
	}
	var line string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "CPU :") || strings.Contains(l, "CPU.0.") {
			line = l
		}
	}
	var feats []string
	for _, f := range []string{"AVX512_BF16", "AVX512_VNNI", "AVX512", "AVX_VNNI", "AVX2", "AVX", "F16C", "FMA"} {
		for _, form := range []string{f + " = 1", "CPU.0." + f + "=1"} {
			if strings.Contains(line, form) {
				feats = append(feats, f)
				break
			}
		}
	}
	out := "ggml CPU: " + strings.Join(feats, " ")
	if len(feats) == 0 {
		out = "ggml CPU features not in the log"
	}
	// llama.cpp's loader: "print_info: file type   = F16".
	for _, l := range strings.Split(string(b), "\n") {
		if _, v, ok := strings.Cut(l, "file type   = "); ok {
			out += ", weights " + strings.TrimSpace(v)
			break
		}
	}
	return out
}

// --- report ---

// row is one engine's results on one checkpoint: its short and long
// phases, a result per round.
type row struct {
	weights, engine string
	short, long     []result
}

// rowsOf merges results into rows, in the order they first appear: a
// row per checkpoint dtype and engine.
func rowsOf(rs []result) []*row {
	var rows []*row
	find := func(r result) *row {
		for _, x := range rows {
			if x.weights == r.Weights && x.engine == short(r.Engine) {
				return x
			}
		}
		x := &row{weights: r.Weights, engine: short(r.Engine)}
		rows = append(rows, x)
		return x
	}
	for _, r := range rs {
		x := find(r)
		if r.Phase == "long" {
			x.long = append(x.long, r)
		} else {
			x.short = append(x.short, r)
		}
	}
	return rows
}

// metric is one column of the table: its name, the phase it is measured
// in (long or short), its value in a result (0: not measured) and its
// format.
type metric struct {
	name   string
	long   bool
	value  func(result) float64
	format string
}

// metrics are the table's columns.
func metrics() []metric {
	ms := []metric{
		{"prefill b1 tok/s", false, func(r result) float64 { return r.Prefill1 }, "%.0f"},
		{"decode b1 tok/s", false, func(r result) float64 { return r.Decode1 }, "%.1f"},
		{"prefill b8 tok/s", false, func(r result) float64 { return r.Prefill8 }, "%.0f"},
		{"decode b8 tok/s", false, func(r result) float64 { return r.Decode8 }, "%.1f"},
		{"peak RSS MB", false, func(r result) float64 { return float64(r.PeakRSS) / 1e6 }, "%.0f"},
	}
	for i, n := range longPrompts {
		ms = append(ms, metric{fmt.Sprintf("prefill %dk tok/s", n/1024), true, func(r result) float64 {
			if i < len(r.PrefillLong) {
				return r.PrefillLong[i]
			}
			return 0
		}, "%.0f"})
	}
	ms = append(ms,
		metric{fmt.Sprintf("decode after %dk tok/s", longPrompts[len(longPrompts)-1]/1024), true, func(r result) float64 { return r.DecodeLong }, "%.1f"},
		metric{"peak RSS MB long", true, func(r result) float64 { return float64(r.PeakRSS) / 1e6 }, "%.0f"})
	return ms
}

// median is the median of xs' positive values (0 when there is none).
func median(xs []float64) float64 {
	var v []float64
	for _, x := range xs {
		if x > 0 {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return 0
	}
	sort.Float64s(v)
	if len(v)%2 == 0 {
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return v[len(v)/2]
}

// values are metric m's values in each round of x.
func (x *row) values(m metric) []float64 {
	rs := x.short
	if m.long {
		rs = x.long
	}
	var out []float64
	for _, r := range rs {
		out = append(out, m.value(r))
	}
	return out
}

// ratio is tally's value over Ollama's for m: the median of the rounds'
// ratios when both measured every round (each round runs the two in
// turn), else the ratio of the medians; and each round's ratio.
func ratio(a, o *row, m metric) (float64, []float64) {
	av, ov := a.values(m), o.values(m)
	if len(av) == len(ov) && len(av) > 1 {
		var each []float64
		for i := range av {
			if av[i] > 0 && ov[i] > 0 {
				each = append(each, av[i]/ov[i])
			}
		}
		return median(each), each
	}
	am, om := median(av), median(ov)
	if am <= 0 || om <= 0 {
		return 0, nil
	}
	return am / om, nil
}

func report(dir string, files []string) error {
	st, err := os.Stat(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		return fmt.Errorf("model weights: %w", err)
	}
	weightBytes := float64(st.Size())
	bw := bandwidth()
	roof := bw / weightBytes // decode tok/s if every step reads the 16-bit weights once
	rs, err := readResults(files)
	if err != nil {
		return err
	}
	rows := rowsOf(rs)
	rounds := 0
	for _, x := range rows {
		rounds = max(rounds, len(x.short), len(x.long))
	}
	fmt.Printf("model: random Llama, hidden %d, %d layers, %.1fM parameters, 16-bit weights (%.0f MB)\n",
		hidden, layers, weightBytes/2/1e6, weightBytes/1e6)
	fmt.Printf("prompts: %d × %d tokens, %d new tokens (batch 1: one at a time; batch 8: at once); long: %v tokens at batch 1, %d new tokens\n",
		nPrompts, promptTokens, newTokens, longPrompts, longNew)
	fmt.Printf("%d threads (GOMAXPROCS), %s; %d round(s), each running the engines in turn, medians shown\n", runtime.GOMAXPROCS(0), cpuModel(), rounds)
	fmt.Printf("memory read bandwidth %.1f GB/s: decode roofline %.0f tok/s (16-bit weights read once per step)\n\n", bw/1e9, roof)
	ms := metrics()
	var head, rule []string
	for _, m := range ms {
		head = append(head, m.name)
		rule = append(rule, "---")
	}
	fmt.Printf("| weights | engine | %s |\n|---|---|%s|\n", strings.Join(head, " | "), strings.Join(rule, "|"))
	cell := func(v float64, format string) string {
		if v <= 0 {
			return "-"
		}
		return fmt.Sprintf(format, v)
	}
	// Per checkpoint: its engines' rows, then each tally row's ratios to
	// the Ollama row.
	var weights []string
	for _, x := range rows {
		if !slices.Contains(weights, x.weights) {
			weights = append(weights, x.weights)
		}
	}
	for _, w := range weights {
		for _, a := range rows {
			if a.weights != w {
				continue
			}
			var cells []string
			for _, m := range ms {
				cells = append(cells, cell(median(a.values(m)), m.format))
			}
			fmt.Printf("| %s | %s | %s |\n", a.weights, a.engine, strings.Join(cells, " | "))
		}
		for _, a := range rows {
			if a.weights != w || !strings.HasPrefix(a.engine, "tally") {
				continue
			}
			for _, o := range rows {
				if o.weights != w || !strings.HasPrefix(o.engine, "Ollama") {
					continue
				}
				var cells []string
				for _, m := range ms {
					q, each := ratio(a, o, m)
					c := cell(q, "%.2f×")
					if len(each) > 1 {
						var parts []string
						for _, e := range each {
							parts = append(parts, fmt.Sprintf("%.2f", e))
						}
						c += " (" + strings.Join(parts, " ") + ")"
					}
					cells = append(cells, c)
				}
				fmt.Printf("| %s | **%s / %s** | %s |\n", w, a.engine, o.engine, strings.Join(cells, " | "))
			}
		}
	}
	fmt.Println()
	for _, x := range rows {
		fmt.Printf("%s %s: %s; other work on the machine meanwhile %s cores (short), %s (long)\n", x.weights, x.engine, kernelsOf(x),
			others(x.short), others(x.long))
	}
	return nil
}

// others lists each round's OtherCores.
func others(rs []result) string {
	if len(rs) == 0 {
		return "-"
	}
	var parts []string
	for _, r := range rs {
		if r.OtherCores == nil {
			parts = append(parts, "?") // measured before the meter
			continue
		}
		parts = append(parts, fmt.Sprintf("%.1f", *r.OtherCores))
	}
	return strings.Join(parts, " ")
}

// kernelsOf names the kernels a row's engine ran.
func kernelsOf(x *row) string {
	for _, r := range append(slices.Clone(x.short), x.long...) {
		if r.Kernels != "" {
			return r.Kernels
		}
	}
	return "kernels not reported"
}

// readResults reads result files, in order.
func readResults(files []string) ([]result, error) {
	var rs []result
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read result: %w", err)
		}
		var r result
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("parse %s: %w", f, err)
		}
		rs = append(rs, r)
	}
	return rs, nil
}

func short(s string) string { return strings.SplitN(s, " (", 2)[0] }

// compare reads result files of engines measured in turn (A1 B1 A2 B2 …,
// as scripts/cpu-bench-dtype.sh runs them), and prints each run, each
// engine's ratio to the first engine in the same round (runs next to each
// other in time, so load from other processes shared by the machine
// cancels more), and the median of those ratios.
func compare(files []string) error {
	rs, err := readResults(files)
	if err != nil {
		return err
	}
	var engines []string
	for _, r := range rs {
		if !slices.Contains(engines, r.Engine) {
			engines = append(engines, r.Engine)
		}
	}
	n := len(engines)
	if n < 2 || len(rs)%n != 0 {
		return fmt.Errorf("compare: %d results of %d engines: want whole rounds of every engine", len(rs), n)
	}
	fmt.Printf("%d rounds of %d engines, in turn; %d threads (GOMAXPROCS), %s\n\n", len(rs)/n, n, runtime.GOMAXPROCS(0), cpuModel())
	metrics := func(r result) [4]float64 { return [4]float64{r.Prefill1, r.Decode1, r.Prefill8, r.Decode8} }
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "round\tengine\tprefill tok/s b1\tdecode tok/s b1\tprefill tok/s b8\tdecode tok/s b8\tpeak RSS MB\t")
	ratios := make([][][4]float64, n) // engine → rounds → ratio to engine 0
	for i, r := range rs {
		round, e := i/n, slices.Index(engines, r.Engine)
		if rs[round*n].Engine != engines[0] || e != i%n {
			return fmt.Errorf("compare: %s is not in round order (each round runs the engines in the order of the first)", files[i])
		}
		m, base := metrics(r), metrics(rs[round*n])
		var q [4]float64
		for k := range m {
			q[k] = m[k] / base[k]
		}
		ratios[e] = append(ratios[e], q)
		fmt.Fprintf(tw, "%d\t%s\t%.0f\t%.1f\t%.0f\t%.1f\t%.0f\t\n", round+1, r.Engine, r.Prefill1, r.Decode1, r.Prefill8, r.Decode8, float64(r.PeakRSS)/1e6)
	}
	tw.Flush()
	fmt.Println()
	for e := 1; e < n; e++ {
		var med [4]float64
		var each [4][]string
		for k := range med {
			var xs []float64
			for _, q := range ratios[e] {
				xs = append(xs, q[k])
				each[k] = append(each[k], fmt.Sprintf("%.2f", q[k]))
			}
			sort.Float64s(xs)
			med[k] = xs[len(xs)/2]
			if len(xs)%2 == 0 {
				med[k] = (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
			}
		}
		fmt.Printf("%s / %s, median of the rounds (each round):\n  prefill b1 %.2f× (%s), decode b1 %.2f× (%s), prefill b8 %.2f× (%s), decode b8 %.2f× (%s)\n",
			engines[e], engines[0], med[0], strings.Join(each[0], " "), med[1], strings.Join(each[1], " "),
			med[2], strings.Join(each[2], " "), med[3], strings.Join(each[3], " "))
	}
	return nil
}

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "model name"); ok {
			return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
		}
	}
	return runtime.GOARCH
}

// bandwidth measures read bandwidth in bytes/s: GOMAXPROCS goroutines sum
// disjoint parts of a 512 MiB buffer; the best of 5 passes.
func bandwidth() float64 {
	buf := make([]uint64, 64<<20)
	for i := range buf {
		buf[i] = uint64(i)
	}
	p := runtime.GOMAXPROCS(0)
	var times []float64
	var sink uint64
	for range 5 {
		var wg sync.WaitGroup
		sums := make([]uint64, p)
		start := time.Now()
		for w := range p {
			part := buf[w*len(buf)/p : (w+1)*len(buf)/p]
			wg.Add(1)
			go func() {
				defer wg.Done()
				var s0, s1, s2, s3 uint64
				for i := 0; i+3 < len(part); i += 4 {
					s0 += part[i]
					s1 += part[i+1]
					s2 += part[i+2]
					s3 += part[i+3]
				}
				sums[w] = s0 + s1 + s2 + s3
			}()
		}
		wg.Wait()
		times = append(times, time.Since(start).Seconds())
		for _, s := range sums {
			sink += s
		}
	}
	sort.Float64s(times)
	if sink == math.MaxUint64 {
		fmt.Fprintln(os.Stderr, "")
	}
	return float64(len(buf)*8) / times[0]
}
