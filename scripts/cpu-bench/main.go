// Command cpu-bench measures tally's native engine against an Ollama server
// on the same random Llama weights (see scripts/cpu-bench.sh, which builds
// the anchor Ollama and runs the steps below).
//
//	cpu-bench model -out DIR            # random 76M Llama, F16 safetensors, tokenizer
//	cpu-bench native -model DIR         # one JSON line: native batch 1 and 8
//	cpu-bench ollama -name NAME -pid P  # one JSON line: Ollama at OLLAMA_HOST
//	cpu-bench report -model DIR A.json B.json  # the table, with the roofline
//	cpu-bench native -model DIR -dtype float32  # the native engine in another --dtype
//	cpu-bench compare A1.json B1.json A2.json B2.json ...  # per-round ratios to the first engine, and medians
//
// Every run uses the same prompts (about 270 tokens each, 128 new tokens):
// one warm-up prompt, 8 prompts one at a time (batch 1), 8 other prompts at
// once (batch 8), distinct so that no server-side prompt cache helps.
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
)

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
		err = runNative(ctx, *dir, gomlx.DType(*dtype))
	case "ollama":
		fs := flag.NewFlagSet(cmd, flag.ExitOnError)
		dir := fs.String("model", "", "model directory (for the tokenizer)")
		name := fs.String("name", "", "Ollama model name")
		pid := fs.Int("pid", 0, "ollama serve pid (its runner's peak RSS is reported)")
		fs.Parse(args)
		err = runOllama(ctx, *dir, *name, *pid)
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

// result is one engine's measurements.
type result struct {
	Engine   string  `json:"engine"`
	Prefill1 float64 `json:"prefill1"` // prompt tok/s, batch 1
	Decode1  float64 `json:"decode1"`  // new tok/s after the first, batch 1
	Prefill8 float64 `json:"prefill8"` // prompt tok/s, 8 at once
	Decode8  float64 `json:"decode8"`  // total new tok/s, 8 at once
	PeakRSS  int64   `json:"peak_rss"` // bytes
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
			"hidden_act": "silu", "max_position_embeddings": 2048, "rms_norm_eps": 1e-5,
			"rope_theta": 10000.0, "tie_word_embeddings": false, "vocab_size": vocab,
			"torch_dtype": map[string]string{"F16": "float16", "BF16": "bfloat16"}[dtype], "bos_token_id": nil, "eos_token_id": eos,
		},
		"tokenizer_config.json": map[string]any{
			"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
			"add_bos_token": false, "add_eos_token": false,
			"model_max_length": 2048, "tokenizer_class": "Qwen2Tokenizer",
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
		text := prompt(set*100+i, promptTokens)
		enc, err := tok.Encode(text, false)
		if err != nil {
			return nil, nil, fmt.Errorf("encode prompt: %w", err)
		}
		if len(enc) < promptTokens {
			return nil, nil, fmt.Errorf("prompt has %d tokens, want ≥ %d", len(enc), promptTokens)
		}
		enc = enc[:promptTokens]
		text, err = tok.Decode(enc, false)
		if err != nil {
			return nil, nil, fmt.Errorf("decode prompt: %w", err)
		}
		texts = append(texts, text)
		ids = append(ids, enc)
	}
	return texts, ids, nil
}

// --- native ---

func runNative(ctx context.Context, dir string, dtype gomlx.DType) error {
	tok, err := tokenizer.Load(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return fmt.Errorf("load tokenizer: %w", err)
	}
	m, err := gomlx.Open(ctx, dir, gomlx.Options{MaxBatch: nPrompts, DType: dtype, Log: os.Stderr, FingerprintCache: "-"})
	if err != nil {
		return fmt.Errorf("open native model: %w", err)
	}
	defer m.Close()
	gen := func(ids [][]int) (prefill, decode float64, err error) {
		reqs := make([]backends.Request, len(ids))
		for i := range ids {
			reqs[i] = backends.Request{Index: i, PromptIDs: ids[i], MaxTokens: newTokens}
		}
		return timed(len(ids), func(each func(int, int)) error {
			return m.Generate(ctx, reqs, func(ev backends.Event) bool {
				if len(ev.IDs) > 0 {
					each(ev.Index, len(ev.IDs))
				}
				return true
			})
		}, len(ids)*promptTokens)
	}
	r := result{Engine: "tally native (" + m.Kernels() + ", products in " + m.Arithmetic().Products + ")"}
	if err := measure(tok, &r, gen); err != nil {
		return err
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		r.PeakRSS = ru.Maxrss * 1024
	}
	return json.NewEncoder(os.Stdout).Encode(r)
}

// measure runs the warm-up set and the batch-1 and batch-8 sets through gen.
func measure(tok *tokenizer.Tokenizer, r *result, gen func(ids [][]int) (float64, float64, error)) error {
	for set := range 3 {
		_, ids, err := prompts(tok, set)
		if err != nil {
			return err
		}
		switch set {
		case 0:
			if _, _, err := gen(ids); err != nil {
				return err
			}
		case 1:
			var pt, dt float64 // summed times over the prompts, one at a time
			for _, p := range ids {
				pre, dec, err := gen([][]int{p})
				if err != nil {
					return err
				}
				pt += promptTokens / pre
				dt += (newTokens - 1) / dec
			}
			r.Prefill1 = float64(len(ids)*promptTokens) / pt
			r.Decode1 = float64(len(ids)*(newTokens-1)) / dt
		case 2:
			pre, dec, err := gen(ids)
			if err != nil {
				return err
			}
			r.Prefill8, r.Decode8 = pre, dec
		}
	}
	return nil
}

// timed runs fn, which calls each(row, n) for every n new tokens of a
// row, and returns prompt tok/s (start until every row has its first
// token) and decode tok/s (new tokens after each row's first, over the rest
// of the time).
func timed(rows int, fn func(each func(row, n int)) error, promptTotal int) (prefill, decode float64, err error) {
	var mu sync.Mutex
	var firstAt time.Time
	started := make([]bool, rows)
	seen, total := 0, 0
	start := time.Now()
	err = fn(func(row, n int) {
		mu.Lock()
		defer mu.Unlock()
		total += n
		if !started[row] {
			started[row] = true
			total -= 1 // the first token comes with the prefill
			if seen++; seen == rows {
				firstAt = time.Now()
			}
		}
	})
	end := time.Now()
	if err != nil {
		return 0, 0, err
	}
	if seen < rows || total <= 0 {
		return 0, 0, fmt.Errorf("only %d tokens after the first for %d of %d rows", total, seen, rows)
	}
	return float64(promptTotal) / firstAt.Sub(start).Seconds(),
		float64(total) / end.Sub(firstAt).Seconds(), nil
}

// --- Ollama ---

func runOllama(ctx context.Context, dir, name string, pid int) error {
	tok, err := tokenizer.Load(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return fmt.Errorf("load tokenizer: %w", err)
	}
	client, err := api.ClientFromEnvironment()
	if err != nil {
		return fmt.Errorf("ollama client: %w", err)
	}
	byIDs := map[string]string{}
	for set := range 3 {
		texts, ids, err := prompts(tok, set)
		if err != nil {
			return err
		}
		for i := range texts {
			byIDs[fmt.Sprint(ids[i])] = texts[i]
		}
	}
	gen := func(ids [][]int) (float64, float64, error) {
		return timed(len(ids), func(each func(int, int)) error {
			var wg sync.WaitGroup
			errs := make([]error, len(ids))
			for i := range ids {
				wg.Add(1)
				go func() {
					defer wg.Done()
					stream := true
					req := &api.GenerateRequest{Model: name, Prompt: byIDs[fmt.Sprint(ids[i])], Raw: true, Stream: &stream,
						Options: map[string]any{"num_predict": newTokens, "temperature": 0, "num_ctx": 2048, "seed": 1}}
					errs[i] = client.Generate(ctx, req, func(r api.GenerateResponse) error {
						if r.Response != "" {
							each(i, 1) // one streamed chunk per token
						}
						return nil
					})
				}()
			}
			wg.Wait()
			return errors.Join(errs...)
		}, len(ids)*promptTokens)
	}
	r := result{Engine: "Ollama v0.6.5 (ggml, F16, -march=native)"}
	if err := measure(tok, &r, gen); err != nil {
		return err
	}
	r.PeakRSS = treeHWM(pid)
	return json.NewEncoder(os.Stdout).Encode(r)
}

// treeHWM is the largest VmHWM (peak RSS) among pid and its children (the
// Ollama runner is a child of `ollama serve`).
func treeHWM(pid int) int64 {
	if pid <= 0 {
		return 0
	}
	best := hwm(pid)
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
		// ppid is the 2nd field after the parenthesised command name.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			best = max(best, hwm(p))
		}
	}
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

// --- report ---

func report(dir string, files []string) error {
	st, err := os.Stat(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		return fmt.Errorf("model weights: %w", err)
	}
	weightBytes := float64(st.Size())
	bw := bandwidth()
	roof := bw / weightBytes // decode tok/s if every step reads the F16 weights once
	rs, err := readResults(files)
	if err != nil {
		return err
	}
	fmt.Printf("model: random Llama, hidden %d, %d layers, %.1fM parameters, 16-bit weights (%.0f MB)\n",
		hidden, layers, weightBytes/2/1e6, weightBytes/1e6)
	fmt.Printf("prompts: %d × %d tokens, %d new tokens; %d threads (GOMAXPROCS), %s\n",
		nPrompts, promptTokens, newTokens, runtime.GOMAXPROCS(0), cpuModel())
	fmt.Printf("memory read bandwidth %.1f GB/s: decode roofline %.0f tok/s (16-bit weights read once per step)\n\n", bw/1e9, roof)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "engine\tprefill tok/s b1\tdecode tok/s b1\tdecode/roofline\tprefill tok/s b8\tdecode tok/s b8\tb8/b1 decode\tpeak RSS MB\t")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%.0f\t%.1f\t%.0f%%\t%.0f\t%.1f\t%.1f×\t%.0f\t\n", r.Engine, r.Prefill1, r.Decode1,
			100*r.Decode1/roof, r.Prefill8, r.Decode8, r.Decode8/r.Decode1, float64(r.PeakRSS)/1e6)
	}
	tw.Flush()
	if len(rs) == 2 && rs[1].Decode1 > 0 && rs[1].Prefill1 > 0 {
		a, o := rs[0], rs[1]
		fmt.Printf("\nratios %s / %s: prefill b1 %.2f×, decode b1 %.2f×, prefill b8 %.2f×, decode b8 %.2f×\n",
			short(a.Engine), short(o.Engine), a.Prefill1/o.Prefill1, a.Decode1/o.Decode1, a.Prefill8/o.Prefill8, a.Decode8/o.Decode8)
	}
	return nil
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
