// Package gomlx is tally's native model backend: a decoder-only transformer
// (Llama, Qwen2 and Mistral families) run with gomlx, on its pure-Go backend
// by default or on XLA/PJRT (CUDA) on request.
//
// A model is loaded from a Hugging Face directory (config.json, safetensors
// weights, generation_config.json, tokenizer.json) or a hub cache name
// "org/name". The matrix products run in the dtype Options.DType chooses
// (by default the checkpoint's where this device's kernels are at least as
// fast in it as in float32, else float32); everything else (accumulation, attention,
// norms, residuals, the KV cache) is float32. Generation is greedy, batched,
// over a KV cache held as tensors; graphs are compiled once per shape
// bucket.
package gomlx

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"

	mlbackends "github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/dtypes/bfloat16"
	"github.com/gomlx/compute/dtypes/float16"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"golang.org/x/sync/errgroup"

	"tally/backends"
	"tally/backends/tokenizer"
)

// Options configure Open and Demo.
type Options struct {
	// Device is "" or "cpu" (gomlx's pure-Go backend), "xla" or "cuda"
	// (gomlx's XLA backend; see gpu.md for the PJRT plugin).
	Device string
	// MaxBatch is the number of requests decoded together (default 8).
	MaxBatch int
	// MaxContext caps the context window (0: the model's
	// max_position_embeddings).
	MaxContext int
	// FingerprintCache is the JSON file caching weight digests (default
	// os.UserCacheDir()/tally/fingerprints.json; "-" disables the cache).
	FingerprintCache string
	// Tokenizer overrides the tokenizer found next to the weights.
	Tokenizer StreamTokenizer
	// PrefillBudget bounds one prefill call's attention scores, in elements
	// (rows × heads × chunk × cache length); 0 picks a default per device.
	PrefillBudget int
	// NoPrefixSharing turns off prefix sharing: by default, requests with
	// the same ShareKey prefill their longest common prompt prefix once and
	// copy its KV cache rows to the other requests' slots.
	NoPrefixSharing bool
	// DeviceMemory is the memory in bytes the model may use in all,
	// weights included, for the memory plan (see PlanMemory) that caps the
	// batch and, when DeviceMemory is set, sizes the prefill chunks (see
	// prefillBudget); 0: the host's available memory on the pure-Go
	// backend (batch only), no plan on XLA.
	DeviceMemory int64
	// DType is the arithmetic of the matrix products (--dtype; "" is
	// DTypeAuto): see DType and resolveProducts.
	DType DType
	// meminfo is the /proc/meminfo file assemble reads (tests; "" the
	// host's).
	meminfo string
	// FollowSymlinks lets a model folder's files be symbolic links that
	// lead out of it (refused by default: see ModelFolder).
	FollowSymlinks bool
	// Log, when set, receives one line when the first Generate starts,
	// naming the engine and its kernels (see Model.Kernels), e.g.
	// "native: gomlx pure Go, AVX-512".
	Log io.Writer
}

// Stats are counters of a Model's work.
type Stats struct {
	// Compilations is the number of graphs compiled so far.
	Compilations int
	// PrefillCalls and DecodeSteps count graph executions.
	PrefillCalls, DecodeSteps int
	// PrefillTokens and DecodeTokens count real (non-padding) tokens.
	PrefillTokens, DecodeTokens int
	// SharedTokens counts prompt tokens that were not prefilled because
	// their keys and values were copied from a shared prefix (ShareKey);
	// PrefixCopies counts the copy-graph executions that did it.
	SharedTokens, PrefixCopies int
	// PrefillSeconds and DecodeSeconds are the time spent executing the
	// prefill and decode graphs (compiling them not included): a run's
	// stats keep them, and a plan reads its prefill and decode speeds
	// from them.
	PrefillSeconds, DecodeSeconds float64
}

// Model is a loaded model; it implements backends.Backend. Its methods are
// safe for concurrent use (calls run one at a time).
type Model struct {
	mu       sync.Mutex
	announce sync.Once // Options.Log's line, at the first Generate
	cfg      Config
	lay      layout
	dir      string
	opts     Options
	device   string
	backend  mlbackends.Backend
	weights  []*tensors.Tensor
	invFreq  []float32
	graphs   map[graphKey]*graph.Graph
	stats    Stats
	tok      StreamTokenizer
	ctxLen   int
	maxBatch int
	budget   int
	fpFiles  []string // files hashed by Fingerprint
	// arith is the arithmetic the model computes in (see Fingerprint), and
	// arithNote the line Options.Log gets about it ("" when nothing to say).
	arith     Arithmetic
	arithNote string
	fpExtra   string // extra identity (demo)
	// chat is the chat template a GGUF file carries, with the ids of its
	// BOS and EOS tokens (-1: none; empty for a directory, whose
	// tokenizer_config.json holds them).
	chat struct {
		source   string
		bos, eos int
	}
	closed bool
	// sp is the split step of the pure-Go backend (see split.go); nil on
	// XLA.
	sp *splitModel
	// prefillHook, when set (tests), sees each request's last prompt logits.
	prefillHook func(index int, logits []float32)
}

var _ backends.Backend = (*Model)(nil)

// Open loads a model from a directory or a Hugging Face cache name
// ("org/name"); "demo" gives Demo's model.
func Open(ctx context.Context, path string, opts Options) (*Model, error) {
	if path == "demo" {
		return Demo(ctx, opts)
	}
	if blob, ok, err := OllamaModelBlob(path); err != nil {
		return nil, err
	} else if ok {
		path = blob
	}
	if IsGGUF(path) {
		return openGGUF(ctx, path, opts)
	}
	dir, err := ResolveModelDir(path)
	if err != nil {
		return nil, err
	}
	folder := ModelFolder(dir, opts.FollowSymlinks)
	cfg, err := LoadConfigIn(folder, dir)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	w, err := OpenWeightsIn(folder, dir)
	if err != nil {
		return nil, err
	}
	tokPath := filepath.Join(dir, "tokenizer.json")
	_, statErr := os.Lstat(tokPath)
	m, err := assemble(ctx, cfg, w, opts, func() (StreamTokenizer, error) {
		if statErr != nil {
			return nil, nil
		}
		return loadTokenizer(folder, tokPath)
	})
	if err != nil {
		return nil, err
	}
	m.dir = dir
	m.fpFiles = append([]string{filepath.Join(dir, "config.json")}, w.Files...)
	if statErr == nil {
		m.fpFiles = append(m.fpFiles, tokPath)
	}
	return m, nil
}

// OpenFS loads a model held in fsys in the Hugging Face layout that Open
// reads from a directory: config.json (and, when present,
// generation_config.json), one model.safetensors and tokenizer.json at its
// root. name labels the model in errors. The files are read into memory;
// the fingerprint is the SHA-256 of their contents ("sha256:<hex>" after
// the backend and dtype, as for a directory).
func OpenFS(ctx context.Context, fsys fs.FS, name string, opts Options) (*Model, error) {
	cfg, err := LoadConfigFS(fsys, name)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	w, err := OpenWeightsFS(fsys, name)
	if err != nil {
		return nil, err
	}
	m, err := assemble(ctx, cfg, w, opts, func() (StreamTokenizer, error) {
		data, err := fs.ReadFile(fsys, "tokenizer.json")
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, nil
		case err != nil:
			return nil, fmt.Errorf("read %s/tokenizer.json: %w", name, err)
		}
		t, err := tokenizer.FromJSON(data)
		if err != nil {
			return nil, fmt.Errorf("load tokenizer %s/tokenizer.json: %w", name, err)
		}
		return WrapTokenizer(t), nil
	})
	if err != nil {
		return nil, err
	}
	m.dir = name
	h := sha256.New()
	for _, f := range []string{"config.json", "generation_config.json", "model.safetensors", "tokenizer.json"} {
		data, err := fs.ReadFile(fsys, f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			m.Close()
			return nil, fmt.Errorf("fingerprint %s/%s: %w", name, f, err)
		}
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(data))
		h.Write(data)
	}
	m.fpExtra = "sha256:" + hex.EncodeToString(h.Sum(nil))
	return m, nil
}

// assemble loads the weights of cfg from w and makes the model, with
// opts.Tokenizer or, when that is nil, the tokenizer readTok reads (nil
// when the model has none).
func assemble(ctx context.Context, cfg Config, w *WeightIndex, opts Options, readTok func() (StreamTokenizer, error)) (*Model, error) {
	if _, err := ParseDType(string(opts.DType)); err != nil {
		return nil, err
	}
	// The weights are read into float32 host memory first (a quantized or
	// half-precision file grows 2-8x): refuse before reading what cannot
	// fit rather than be killed halfway.
	meminfo := opts.meminfo
	if meminfo == "" {
		meminfo = "/proc/meminfo"
	}
	if avail, err := memAvailable(meminfo); err == nil && 4*cfg.Params() > avail {
		return nil, fmt.Errorf("load %s: %.1fM weights need %s as float32 in memory, %s is available",
			w.Files[0], float64(cfg.Params())/1e6, fmtGiB(4*cfg.Params()), fmtGiB(avail))
	}
	lay, host, err := loadHostWeights(ctx, cfg, w)
	if err != nil {
		return nil, err
	}
	tok := opts.Tokenizer
	if tok == nil {
		if tok, err = readTok(); err != nil {
			return nil, err
		}
	}
	return newModel(cfg, lay, host, tok, opts)
}

// halfDType is the dtype the model's matrices are held in: Float16 or
// BFloat16 when every 2-D tensor of the file has that dtype (widening to
// float32 and back is then exact), else InvalidDType (all float32).
func halfDType(w *WeightIndex) dtypes.DType {
	seen := ""
	for _, t := range w.Tensors {
		if len(t.Shape) != 2 {
			continue
		}
		if seen != "" && t.DType != seen {
			return dtypes.InvalidDType
		}
		seen = t.DType
	}
	switch seen {
	case "F16":
		return dtypes.Float16
	case "BF16":
		return dtypes.BFloat16
	}
	return dtypes.InvalidDType
}

// loadHostWeights reads every tensor and validates its shape, returning
// the weights in canonical order (weightSpecs). The projections stay
// separate: a fused q/k/v or gate/up product would be split with the
// pure-Go backend's Slice, an element-by-element copy of its output.
func loadHostWeights(ctx context.Context, c Config, w *WeightIndex) (layout, [][]float32, error) {
	d, q, kv, in := c.HiddenSize, c.NumHeads*c.HeadDim, c.NumKVHeads*c.HeadDim, c.IntermediateSize
	lay := layout{
		qkvBias: c.AttentionBias || w.Has("model.layers.0.self_attn.q_proj.bias"),
		oBias:   (c.AttentionBias && c.ModelType == "llama") || w.Has("model.layers.0.self_attn.o_proj.bias"),
		mlpBias: c.MLPBias || w.Has("model.layers.0.mlp.gate_proj.bias"),
	}
	for name, t := range w.Tensors {
		if _, ok := dtypeSize[t.DType]; !ok && !isBlockType(t.DType) {
			return lay, nil, fmt.Errorf("%s: tensor %s: unsupported dtype %s (want F32, F16 or BF16)", t.File, name, t.DType)
		}
	}
	lay.half = halfDType(w)
	// The tensors are listed in canonical order here and read (widened,
	// dequantized) on every core below.
	type read struct {
		name string
		dims []int
	}
	var reads []read
	add := func(name string, dims ...int) error {
		if t, ok := w.Tensors[name]; !ok || !equalInts(t.Shape, dims) {
			_, err := w.Read(name, dims...) // the missing-tensor or shape error, in order
			return err
		}
		reads = append(reads, read{name, dims})
		return nil
	}
	if err := add("model.embed_tokens.weight", c.VocabSize, d); err != nil {
		return lay, nil, err
	}
	if err := add("model.norm.weight", d); err != nil {
		return lay, nil, err
	}
	if !c.TieWordEmbeddings {
		if err := add("lm_head.weight", c.VocabSize, d); err != nil {
			return lay, nil, err
		}
	}
	for l := range c.NumLayers {
		if err := ctx.Err(); err != nil {
			return lay, nil, fmt.Errorf("load weights: %w", err)
		}
		p := fmt.Sprintf("model.layers.%d.", l)
		if err := add(p+"input_layernorm.weight", d); err != nil {
			return lay, nil, err
		}
		for _, s := range []struct {
			n   string
			out int
		}{{"q_proj", q}, {"k_proj", kv}, {"v_proj", kv}} {
			if err := add(p+"self_attn."+s.n+".weight", s.out, d); err != nil {
				return lay, nil, err
			}
		}
		if lay.qkvBias {
			for _, s := range []struct {
				n   string
				out int
			}{{"q_proj", q}, {"k_proj", kv}, {"v_proj", kv}} {
				if err := add(p+"self_attn."+s.n+".bias", s.out); err != nil {
					return lay, nil, err
				}
			}
		}
		if err := add(p+"self_attn.o_proj.weight", d, q); err != nil {
			return lay, nil, err
		}
		if lay.oBias {
			if err := add(p+"self_attn.o_proj.bias", d); err != nil {
				return lay, nil, err
			}
		}
		if err := add(p+"post_attention_layernorm.weight", d); err != nil {
			return lay, nil, err
		}
		for _, n := range []string{"gate_proj", "up_proj"} {
			if err := add(p+"mlp."+n+".weight", in, d); err != nil {
				return lay, nil, err
			}
		}
		if lay.mlpBias {
			for _, n := range []string{"gate_proj", "up_proj"} {
				if err := add(p+"mlp."+n+".bias", in); err != nil {
					return lay, nil, err
				}
			}
		}
		if err := add(p+"mlp.down_proj.weight", d, in); err != nil {
			return lay, nil, err
		}
		if lay.mlpBias {
			if err := add(p+"mlp.down_proj.bias", d); err != nil {
				return lay, nil, err
			}
		}
	}
	out := make([][]float32, len(reads))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, r := range reads {
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return fmt.Errorf("load weights: %w", err)
			}
			x, err := w.Read(r.name, r.dims...)
			out[i] = x
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return lay, nil, err
	}
	return lay, out, nil
}

// transpose returns the [cols, rows] transpose of x, a row-major [rows,
// cols] matrix.
func transpose(x []float32, rows, cols int) []float32 {
	out := make([]float32, len(x))
	const tile = 32
	tiles := (rows + tile - 1) / tile
	onCores(tiles, tile*cols, func(lo, hi int) { // row tiles [lo, hi): disjoint output columns
		for r0 := lo * tile; r0 < min(hi*tile, rows); r0 += tile {
			for c0 := 0; c0 < cols; c0 += tile {
				for r := r0; r < min(r0+tile, rows); r++ {
					for c := c0; c < min(c0+tile, cols); c++ {
						out[c*rows+r] = x[r*cols+c]
					}
				}
			}
		}
	})
	return out
}

// onCores calls fn on contiguous parts [lo, hi) of [0, n), one part per
// core at most, and returns when all are done. cost is the work of one
// item, in values touched: parts stay above about 64Ki values each, so a
// small weight is converted on the calling goroutine alone.
func onCores(n, cost int, fn func(lo, hi int)) {
	parts := min(runtime.GOMAXPROCS(0), max(1, n*max(cost, 1)/(1<<16)), max(n, 1))
	if parts == 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	for p := range parts {
		lo, hi := n*p/parts, n*(p+1)/parts
		wg.Go(func() { fn(lo, hi) })
	}
	wg.Wait()
}

// toHalf converts float32 values to a half-precision type on every core
// (a Llama-3.1-8B checkpoint is 8 billion conversions).
func toHalf[H any](x []float32, conv func(float32) H) []H {
	out := make([]H, len(x))
	toHalfInto(out, x, conv)
	return out
}

// toHalfInto is toHalf into dst (len(x) values).
func toHalfInto[H any](dst []H, x []float32, conv func(float32) H) {
	onCores(len(x), 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			dst[i] = conv(x[i])
		}
	})
}

// weightTensor makes the tensor of a weight held in dt with dims from its
// float32 values x. On a backend that shares buffers with the host (the
// pure-Go backend) the values are written once, into the buffer the
// graphs read, so that loading and the first step hold no second copy of
// them (a tensor made from host data is copied into such a buffer when a
// graph first reads it, and a half-precision one was converted into a
// third).
func weightTensor(backend mlbackends.Backend, dt dtypes.DType, dims []int, x []float32) (*tensors.Tensor, error) {
	t, err := tensors.FromShapeForBackend(backend, 0, shapes.Make(dt, dims...))
	if err != nil {
		return nil, fmt.Errorf("weight tensor %v: %w", dims, err)
	}
	switch dt {
	case dtypes.Float16:
		err = tensors.MutableFlatData(t, func(f []float16.Float16) { toHalfInto(f, x, float16.FromFloat32) })
	case dtypes.BFloat16:
		err = tensors.MutableFlatData(t, func(f []bfloat16.BFloat16) { toHalfInto(f, x, bfloat16.FromFloat32) })
	default:
		err = tensors.MutableFlatData(t, func(f []float32) { copy(f, x) })
	}
	if err != nil {
		_ = t.FinalizeAll()
		return nil, fmt.Errorf("weight tensor %v: %w", dims, err)
	}
	return t, nil
}

// weightGCPercent is the garbage collector's target percentage while a
// model's weights are held in host memory (the pure-Go backend): see
// paceCollector.
const weightGCPercent = 25

// paceCollector lowers the garbage collector's target percentage to
// weightGCPercent, unless GOGC is set or the target is lower already.
// The weights are most of the heap, pointer-free and long-lived; at Go's
// default of 100 the garbage of the steps (graph outputs, activations)
// grows as large as the weights before a collection (BenchmarkCPUBenchModel
// at batch 8: peak RSS 1,545 MiB at 100, 1,113 MiB at 25, the same
// speed: marking pointer-free arrays is cheap).
func paceCollector() {
	if os.Getenv("GOGC") != "" {
		return
	}
	if prev := debug.SetGCPercent(weightGCPercent); prev >= 0 && prev < weightGCPercent {
		debug.SetGCPercent(prev)
	}
}

// withDerived returns host with the weights the model holds beyond the
// file's tensors inserted where specs have them: a tied LM head's copy
// (weightSpec.tiedCopy) is the embedding, host[0]; a matrix's panels
// (weightSpec.panels) are the same values as the matrix before them.
func withDerived(specs []weightSpec, host [][]float32) [][]float32 {
	for i, s := range specs {
		switch {
		case i > len(host):
			return host
		case s.tiedCopy:
			host = slices.Insert(host, i, slices.Clone(host[0]))
		case s.panels && i > 0:
			host = slices.Insert(host, i, host[i-1])
		}
	}
	return host
}

// padMatrix returns the row-major rows×cols matrix x padded with zeros to
// prows×pcols (x itself when no padding is needed).
func padMatrix(x []float32, rows, cols, prows, pcols int) []float32 {
	if rows == prows && cols == pcols {
		return x
	}
	out := make([]float32, prows*pcols)
	for r := range rows {
		copy(out[r*pcols:r*pcols+cols], x[r*cols:(r+1)*cols])
	}
	return out
}

// newModel builds a Model from host weights in canonical order.
func newModel(cfg Config, lay layout, host [][]float32, tok StreamTokenizer, opts Options) (m *Model, err error) {
	mode, err := ParseDType(string(opts.DType))
	if err != nil {
		return nil, err
	}
	backend, err := newDevice(opts.Device)
	if err != nil {
		return nil, err
	}
	lay.inv = newInvariance(opts.Device)
	specs := weightSpecs(cfg, lay)
	host = withDerived(specs, host)
	if len(specs) != len(host) {
		backend.Finalize()
		return nil, fmt.Errorf("internal: %d weights for %d specs", len(host), len(specs))
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("create weight tensors: %v", r)
		}
	}()
	var note string
	lay.half, note = resolveProducts(mode, lay.half, productsFamily(opts.Device))
	m = &Model{cfg: cfg, lay: lay, opts: opts, backend: backend, tok: tok,
		graphs: map[graphKey]*graph.Graph{}, invFreq: cfg.InvFreq(), arithNote: note,
		arith: Arithmetic{Products: productsName(lay.half), Device: deviceKind(backend, opts.Device), Numerics: numericsVersion(opts.Device)}}
	m.device = "go"
	if isXLA(opts.Device) {
		m.device = "xla"
	}
	var held []float32 // the last weight as held, for its panels
	converted := 0     // host bytes converted since the last collection
	for i, s := range specs {
		n := 1
		for _, d := range s.dims {
			n *= d
		}
		if len(host[i]) != n {
			return nil, fmt.Errorf("internal: weight %s has %d values for shape %v", s.name, len(host[i]), s.dims)
		}
		x := host[i]
		dims := s.graphDims(lay)
		switch {
		case s.panels && i > 0 && specs[i-1].inOut:
			x = held // the matrix before, [in, out] row-major: [panels, panel, out]
		case s.inOut:
			flat := s
			flat.panels = false
			fd := flat.graphDims(lay)
			x = padMatrix(transpose(x, s.dims[0], s.dims[1]), s.dims[1], s.dims[0], fd[0], fd[1])
		}
		held = x
		if s.panels && lay.inv.on {
			// The split step holds a matrix once, in the shape each graph
			// reads it in (see splitModel.weight).
			m.weights = append(m.weights, nil)
			host[i] = nil
			continue
		}
		t, err := weightTensor(backend, s.dtype(lay), dims, x)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		m.weights = append(m.weights, t)
		host[i] = nil
		// Collect the host copies and conversions already made (the
		// collector would let them grow to the size of what is held).
		if converted += 4 * n; converted > 64<<20 {
			runtime.GC()
			converted = 0
		}
	}
	runtime.GC()
	if m.device == "go" {
		paceCollector()
	}
	m.ctxLen = cfg.MaxPositionEmbeddings
	if opts.MaxContext > 0 && opts.MaxContext < m.ctxLen {
		m.ctxLen = opts.MaxContext
	}
	m.maxBatch = opts.MaxBatch
	if m.maxBatch <= 0 {
		m.maxBatch = 8
	}
	m.budget = opts.PrefillBudget
	if m.budget <= 0 {
		m.budget = 1 << 24
		if m.device != "go" {
			m.budget = 1 << 28
		}
	}
	if m.useSplit() {
		if m.sp, err = newSplitModel(m); err != nil {
			return nil, err
		}
		if opts.PrefillBudget <= 0 {
			m.budget = 0 // no scores are held: chunks are capped by splitMaxTokens
		}
	}
	return m, nil
}

// Name implements backends.Backend.
func (m *Model) Name() string { return "gomlx" }

// ChatTemplate returns the chat template the model file carries (a GGUF
// file's tokenizer.chat_template) and the texts of its BOS and EOS tokens,
// or "" when it carries none.
func (m *Model) ChatTemplate() (source, bos, eos string) {
	text := func(id int) string {
		if id < 0 || m.tok == nil {
			return ""
		}
		s, _ := m.tok.Decode([]int{id}, false)
		return s
	}
	return m.chat.source, text(m.chat.bos), text(m.chat.eos)
}

// Config returns the model's architecture.
func (m *Model) Config() Config { return m.cfg }

// Kernels names the engine and the kernels it runs: "gomlx pure Go,
// AVX-512" (or "AVX2", or why it runs portable Go kernels) on the pure-Go
// backend, "gomlx XLA (NAME)" on XLA.
func (m *Model) Kernels() string {
	if m.device != "go" {
		return "gomlx XLA (" + m.backend.Name() + ")"
	}
	return "gomlx pure Go, " + cpuKernels()
}

// Arithmetic is what the model computes in: its products' dtype, its
// device kind and the engine's numerics version (see Fingerprint).
func (m *Model) Arithmetic() Arithmetic { return m.arith }

// Device is the gomlx backend running the model ("go" for pure Go, "xla").
func (m *Model) Device() string { return m.device }

// Tokenizer implements backends.Backend; nil when the model has none.
func (m *Model) Tokenizer() backends.Tokenizer {
	if m.tok == nil {
		return nil
	}
	return m.tok
}

// ContextLength implements backends.Backend.
func (m *Model) ContextLength() int { return m.ctxLen }

// Slots implements backends.Backend: the maximum batch.
func (m *Model) Slots() int { return m.maxBatch }

// Compilations is the number of graphs compiled so far.
func (m *Model) Compilations() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stats.Compilations
}

// Stats returns the model's counters.
func (m *Model) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stats
}

// Close implements backends.Backend, releasing graphs and weights.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	var errs []error
	func() {
		defer func() {
			if r := recover(); r != nil {
				errs = append(errs, fmt.Errorf("close model: %v", r))
			}
		}()
		for _, g := range m.graphs {
			g.Finalize()
		}
		if m.sp != nil {
			m.sp.close()
		}
		for _, t := range m.weights {
			if t == nil {
				continue
			}
			if err := t.FinalizeAll(); err != nil {
				errs = append(errs, err)
			}
		}
		m.backend.Finalize()
	}()
	m.graphs = nil
	m.weights = nil
	return errors.Join(errs...)
}

// graphFor returns the compiled graph for k, compiling it on first use.
func (m *Model) graphFor(k graphKey) (*graph.Graph, error) {
	if m.closed {
		return nil, errors.New("model is closed")
	}
	if g, ok := m.graphs[k]; ok {
		return g, nil
	}
	var g *graph.Graph
	var err error
	if k.Copy {
		g, err = buildCopy(m.backend, m.cfg, m.lay.inv, k)
	} else {
		g, err = buildStep(m.backend, m.cfg, m.lay, m.invFreq, k)
	}
	if err != nil {
		return nil, err
	}
	m.graphs[k] = g
	m.stats.Compilations++
	return g, nil
}

// run executes g with the weights, the step inputs and the caches (which
// are donated and replaced by the outputs). It returns the first output.
func (m *Model) run(g *graph.Graph, inputs []*tensors.Tensor, caches []*tensors.Tensor) (first *tensors.Tensor, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("run graph %s: %v", g.Name(), r)
		}
	}()
	args := make([]any, 0, len(m.weights)+len(inputs)+len(caches))
	for _, w := range m.weights {
		args = append(args, w)
	}
	for _, t := range inputs {
		args = append(args, t)
	}
	for i, c := range caches {
		d, err := graph.DonateTensorBuffer(c, m.backend, 0)
		if err != nil {
			return nil, fmt.Errorf("donate cache %d: %w", i, err)
		}
		args = append(args, d)
		_ = c.FinalizeAll() // drop any host copy (first use of a fresh cache)
	}
	outs := g.Run(args...)
	for _, t := range inputs {
		_ = t.FinalizeAll()
	}
	if len(outs) != 1+len(caches) {
		return nil, fmt.Errorf("run graph %s: %d outputs, want %d", g.Name(), len(outs), 1+len(caches))
	}
	copy(caches, outs[1:])
	return outs[0], nil
}

// copyRows runs the cache-copy graph (see buildCopy) on cache, which is
// donated and replaced by the outputs: row b takes positions below keep[b]
// from row src[b] and zeros from keep[b] on.
func (m *Model) copyRows(cache []*tensors.Tensor, batch, length int, src, keep []int32) (err error) {
	if m.useSplit() {
		return m.copySplitRows(cache, batch, length, src, keep)
	}
	g, err := m.graphFor(graphKey{Copy: true, Batch: batch, Cache: length})
	if err != nil {
		return err
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("run graph %s: %v", g.Name(), r)
		}
	}()
	args := []any{tensors.FromFlatDataAndDimensions(src, batch), tensors.FromFlatDataAndDimensions(keep, batch)}
	for i, c := range cache {
		d, err := graph.DonateTensorBuffer(c, m.backend, 0)
		if err != nil {
			return fmt.Errorf("donate cache %d: %w", i, err)
		}
		args = append(args, d)
		_ = c.FinalizeAll()
	}
	outs := g.Run(args...)
	for _, a := range args[:2] {
		_ = a.(*tensors.Tensor).FinalizeAll()
	}
	if len(outs) != len(cache) {
		return fmt.Errorf("run graph %s: %d outputs, want %d", g.Name(), len(outs), len(cache))
	}
	copy(cache, outs)
	m.stats.PrefixCopies++
	return nil
}
