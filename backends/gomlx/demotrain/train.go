package demotrain

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"

	mlbackends "github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/gobackend"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph DSL reads best unqualified
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train"
	"github.com/gomlx/gomlx/ml/train/optimizer"

	"tally/backends/gomlx"
	"tally/backends/tokenizer"
	"tally/internal/demodata"
)

// Hyper are the training settings; Default gives the ones of the embedded
// demo model.
type Hyper struct {
	// Seed draws the training questions and the initial weights.
	Seed uint64
	// Vocab is the tokenizer's vocabulary size (256 bytes, merges, and
	// <|endoftext|>); Split its pre-tokenizer pattern.
	Vocab int
	Split tokenizer.Split
	// Hidden, Layers, Heads and Inter size the transformer.
	Hidden, Layers, Heads, Inter int
	// Context is the exported max_position_embeddings.
	Context int
	// SeqLen and Batch shape one training step: Batch rows of SeqLen
	// tokens, each row solved questions back to back.
	SeqLen, Batch int
	// Steps is the number of Adam steps; LR the peak learning rate (linear
	// warm-up over Warmup steps, then cosine decay to a tenth).
	Steps  int
	LR     float64
	Warmup int
	// PromptWeight is the loss weight of passage and question tokens;
	// answer tokens (the answer and the blank line after it) weigh 1.
	PromptWeight float64
}

// Default returns the settings of the embedded demo model.
func Default() Hyper {
	return Hyper{Seed: 1, Vocab: 800, Split: tokenizer.SplitGPT2, Hidden: 64, Layers: 2, Heads: 4, Inter: 192, Context: 1024,
		SeqLen: 128, Batch: 8, Steps: 1200, LR: 5e-3, Warmup: 30, PromptWeight: 0.1}
}

// Trainer holds a model being trained.
type Trainer struct {
	hp      Hyper
	tokJSON []byte
	tok     *tokenizer.Tokenizer
	cfgJSON []byte
	cfg     gomlx.Config
	invFreq []float32
	backend mlbackends.Backend
	store   *model.Store
	tr      *train.Trainer
	data    *demodata.Generator
	step    int
	lrVar   *model.Variable
	// pending holds solved questions' tokens not yet put in a row.
	pending []tokWeight
}

// tokWeight is one token of the training stream and its loss weight.
type tokWeight struct {
	id int
	w  float32
}

// tokenizerSeedOffset separates the tokenizer corpus's questions from the
// training stream's.
const tokenizerSeedOffset = 7919

// New trains the tokenizer, initialises the weights and prepares the
// optimiser.
func New(hp Hyper) (*Trainer, error) {
	corpus := demodata.Text(demodata.Generate(hp.Seed+tokenizerSeedOffset, 3000))
	tokJSON, err := tokenizer.TrainByteLevelSplit(corpus, hp.Vocab, hp.Split)
	if err != nil {
		return nil, fmt.Errorf("train demo tokenizer: %w", err)
	}
	tok, err := tokenizer.FromJSON(tokJSON)
	if err != nil {
		return nil, fmt.Errorf("train demo tokenizer: %w", err)
	}
	eos, ok := tok.TokenID("<|endoftext|>")
	if !ok {
		return nil, fmt.Errorf("train demo tokenizer: no <|endoftext|>")
	}
	cfgJSON, err := json.MarshalIndent(map[string]any{
		"architectures":           []string{"LlamaForCausalLM"},
		"model_type":              "llama",
		"vocab_size":              hp.Vocab,
		"hidden_size":             hp.Hidden,
		"intermediate_size":       hp.Inter,
		"num_hidden_layers":       hp.Layers,
		"num_attention_heads":     hp.Heads,
		"num_key_value_heads":     hp.Heads,
		"max_position_embeddings": hp.Context,
		"rms_norm_eps":            1e-5,
		"rope_theta":              10000.0,
		"hidden_act":              "silu",
		"tie_word_embeddings":     false,
		"torch_dtype":             "float32",
		"eos_token_id":            eos,
	}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("demo config: %w", err)
	}
	cfg, err := gomlx.ParseConfig(cfgJSON, "config.json")
	if err != nil {
		return nil, err
	}
	// Graph nodes run one at a time: with ops run in parallel, gomlx/compute
	// v0.1.3's worker pool can deadlock when several large matrix products
	// each wait for workers (seen after ~500 steps).
	backend, err := gobackend.New("ops_sequential")
	if err != nil {
		return nil, fmt.Errorf("create pure-Go backend: %w", err)
	}
	t := &Trainer{hp: hp, tokJSON: tokJSON, tok: tok, cfgJSON: cfgJSON, cfg: cfg, invFreq: cfg.InvFreq(),
		backend: backend, store: model.NewStore(), data: demodata.New(hp.Seed)}
	if err := t.initWeights(); err != nil {
		return nil, err
	}
	t.lrVar = optimizer.LearningRateVarWithValue(t.store.RootScope(), dtypes.Float32, t.lr(0))
	modelFn := func(_ *model.Scope, tokens *Node) *Node { return forward(t.store, t.cfg, t.invFreq, tokens) }
	lossFn := func(labels, predictions []*Node) *Node { return weightedNLL(predictions[0], labels[0], labels[1]) }
	t.tr = train.NewTrainer(backend, t.store, modelFn, lossFn, optimizer.Adam().Done(), nil, nil)
	return t, nil
}

// Config is the model's configuration as the loader reads it.
func (t *Trainer) Config() gomlx.Config { return t.cfg }

// Tokenizer is the trained tokenizer.
func (t *Trainer) Tokenizer() *tokenizer.Tokenizer { return t.tok }

// initWeights draws the initial weights from a PCG seeded with the seed:
// embeddings N(0,1), other matrices N(0, 1/fan-in), the projections back
// into the residual stream further scaled by 1/√(2·layers); norms 1.
func (t *Trainer) initWeights() error {
	c := t.cfg
	r := rand.New(rand.NewPCG(t.hp.Seed, 0x1a11))
	d, q, in := c.HiddenSize, c.NumHeads*c.HeadDim, c.IntermediateSize
	mat := func(rows, cols int, std float64) *tensors.Tensor {
		x := make([]float32, rows*cols)
		for i := range x {
			x[i] = float32(std * r.NormFloat64())
		}
		return tensors.FromFlatDataAndDimensions(x, rows, cols)
	}
	ones := func(n int) *tensors.Tensor {
		x := make([]float32, n)
		for i := range x {
			x[i] = 1
		}
		return tensors.FromFlatDataAndDimensions(x, n)
	}
	resid := 1 / math.Sqrt(2*float64(c.NumLayers))
	type initVar struct {
		name string
		val  *tensors.Tensor
	}
	vars := []initVar{
		{"embed", mat(c.VocabSize, d, 1)},
		{"final_norm", ones(d)},
		{"lm_head", mat(c.VocabSize, d, 1/math.Sqrt(float64(d)))},
	}
	for l := range c.NumLayers {
		vars = append(vars,
			initVar{layerVar(l, "in_norm"), ones(d)},
			initVar{layerVar(l, "qkv"), mat(3*q, d, 1/math.Sqrt(float64(d)))},
			initVar{layerVar(l, "o"), mat(d, q, resid/math.Sqrt(float64(q)))},
			initVar{layerVar(l, "post_norm"), ones(d)},
			initVar{layerVar(l, "gate_up"), mat(2*in, d, 1/math.Sqrt(float64(d)))},
			initVar{layerVar(l, "down"), mat(d, in, resid/math.Sqrt(float64(in)))},
		)
	}
	root := t.store.Scope("/demo")
	for _, v := range vars {
		if _, err := root.CreateVariable(v.name, v.val); err != nil {
			return fmt.Errorf("create demo variable %s: %w", v.name, err)
		}
	}
	return nil
}

// lr is the learning rate of step i.
func (t *Trainer) lr(i int) float64 {
	hp := t.hp
	if i < hp.Warmup {
		return hp.LR * float64(i+1) / float64(hp.Warmup)
	}
	frac := float64(i-hp.Warmup) / float64(max(1, hp.Steps-hp.Warmup))
	frac = min(frac, 1)
	return hp.LR * (0.1 + 0.9*0.5*(1+math.Cos(math.Pi*frac)))
}

// encode appends one solved question's tokens to the pending stream: the
// prompt at PromptWeight, then the answer and the blank line after it at
// weight 1. The pieces are split where the tokenizer's pre-tokenizer splits
// anyway, so the ids are those of the whole text.
func (t *Trainer) encode(q demodata.Question) error {
	parts := []struct {
		text string
		w    float32
	}{{q.Prompt(), float32(t.hp.PromptWeight)}, {" " + q.Answer, 1}, {demodata.Separator, 1}}
	for _, p := range parts {
		ids, err := t.tok.Encode(p.text, false)
		if err != nil {
			return fmt.Errorf("tokenize demo question %s: %w", q.ID, err)
		}
		for _, id := range ids {
			t.pending = append(t.pending, tokWeight{id, p.w})
		}
	}
	return nil
}

// Batch draws the next training batch: inputs [B,T], targets [B,T] (the
// next token) and loss weights [B,T]. Each row starts at a question's
// "Passage:", as a few-shot prompt does.
func (t *Trainer) Batch() (inputs, targets []int32, weights []float32, err error) {
	B, T := t.hp.Batch, t.hp.SeqLen
	inputs, targets, weights = make([]int32, B*T), make([]int32, B*T), make([]float32, B*T)
	for b := range B {
		t.pending = t.pending[:0]
		for len(t.pending) < T+1 {
			if err := t.encode(t.data.Next()); err != nil {
				return nil, nil, nil, err
			}
		}
		for i := range T {
			inputs[b*T+i] = int32(t.pending[i].id)
			targets[b*T+i] = int32(t.pending[i+1].id)
			weights[b*T+i] = t.pending[i+1].w
		}
	}
	return inputs, targets, weights, nil
}

// Step runs one Adam step on a fresh batch and returns its loss.
func (t *Trainer) Step(ctx context.Context) (float64, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("demo training step %d: %w", t.step, err)
	}
	if err := t.lrVar.SetValue(tensors.FromValue(float32(t.lr(t.step)))); err != nil {
		return 0, fmt.Errorf("demo training step %d: set learning rate: %w", t.step, err)
	}
	in, tg, w, err := t.Batch()
	if err != nil {
		return 0, err
	}
	B, T := t.hp.Batch, t.hp.SeqLen
	metrics, err := t.tr.TrainStep(train.Batch{
		Inputs: []*tensors.Tensor{tensors.FromFlatDataAndDimensions(in, B, T)},
		Labels: []*tensors.Tensor{tensors.FromFlatDataAndDimensions(tg, B, T), tensors.FromFlatDataAndDimensions(w, B, T)},
	})
	if err != nil {
		return 0, fmt.Errorf("demo training step %d: %w", t.step, err)
	}
	t.step++
	loss := tensors.ToScalar[float32](metrics[0])
	for _, m := range metrics {
		_ = m.FinalizeAll()
	}
	return float64(loss), nil
}

// Logits runs the training graph on one sequence and returns the logits
// of its last position (the parity check against the exported model).
func (t *Trainer) Logits(ids []int) ([]float32, error) {
	exec, err := model.NewExec(t.backend, t.store, func(_ *model.Scope, tokens *Node) *Node {
		logits := forward(t.store, t.cfg, t.invFreq, tokens) // [1,T,V]
		T, V := tokens.Shape().Dimensions[1], t.cfg.VocabSize
		return Reshape(Slice(logits, AxisRange(), AxisRange(T-1, T), AxisRange()), V)
	})
	if err != nil {
		return nil, fmt.Errorf("demo logits: %w", err)
	}
	defer exec.Finalize()
	in := make([]int32, len(ids))
	for i, id := range ids {
		in[i] = int32(id)
	}
	out, err := exec.Call(tensors.FromFlatDataAndDimensions(in, 1, len(ids)))
	if err != nil {
		return nil, fmt.Errorf("demo logits: %w", err)
	}
	return tensors.CopyFlatData[float32](out[0])
}
