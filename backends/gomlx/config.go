package gomlx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"strings"

	"tally/internal/fsguard"
)

// Config is the architecture of a decoder-only transformer, read from a
// Hugging Face config.json (both the classic and the transformers-5 dialect).
type Config struct {
	// ModelType is config.json's model_type: "llama", "qwen2" or "mistral".
	ModelType string
	// VocabSize is the number of token embeddings.
	VocabSize int
	// HiddenSize is the residual stream width.
	HiddenSize int
	// IntermediateSize is the MLP width.
	IntermediateSize int
	// NumLayers is the number of decoder blocks.
	NumLayers int
	// NumHeads and NumKVHeads are the query and key/value head counts (GQA).
	NumHeads, NumKVHeads int
	// HeadDim is the per-head width.
	HeadDim int
	// MaxPositionEmbeddings is the model's trained context window.
	MaxPositionEmbeddings int
	// RMSNormEps is the RMSNorm epsilon.
	RMSNormEps float64
	// RopeTheta is the RoPE base.
	RopeTheta float64
	// Rope describes RoPE scaling; Type is "default", "linear" or "llama3".
	Rope RopeScaling
	// TieWordEmbeddings makes lm_head reuse model.embed_tokens.weight.
	TieWordEmbeddings bool
	// AttentionBias marks q/k/v (and for Llama o) projection biases.
	AttentionBias bool
	// MLPBias marks gate/up/down projection biases (Llama's mlp_bias).
	MLPBias bool
	// SlidingWindow is the attention window per layer (0: full attention).
	SlidingWindow []int
	// HiddenAct is the MLP activation (only "silu" is supported).
	HiddenAct string
	// DType is the dtype recorded in config.json (dtype or torch_dtype).
	DType string
	// EOSTokenIDs end a generation (generation_config.json, else config.json).
	EOSTokenIDs []int
	// BOSTokenID is the beginning-of-sequence id, or -1 when unset.
	BOSTokenID int
}

// RopeScaling holds the RoPE scaling parameters.
type RopeScaling struct {
	// Type is "default", "linear", "llama3" or "factors".
	Type string
	// Factor is the scaling factor (linear, llama3).
	Factor float64
	// LowFreqFactor and HighFreqFactor are llama3's band limits.
	LowFreqFactor, HighFreqFactor float64
	// OriginalMaxPositionEmbeddings is llama3's original context.
	OriginalMaxPositionEmbeddings float64
	// Factors, for Type "factors", divide each inverse frequency (a GGUF
	// file's rope_freqs: llama.cpp's form of llama3 scaling).
	Factors []float32
}

// intList decodes a JSON int, list of ints, or null.
type intList []int

// UnmarshalJSON accepts a single integer or a list of integers.
func (l *intList) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*l = nil
		return nil
	}
	if len(b) > 0 && b[0] == '[' {
		var xs []int
		if err := json.Unmarshal(b, &xs); err != nil {
			return err
		}
		*l = xs
		return nil
	}
	var x int
	if err := json.Unmarshal(b, &x); err != nil {
		return err
	}
	*l = []int{x}
	return nil
}

type rawRope struct {
	RopeType                      string   `json:"rope_type"`
	Type                          string   `json:"type"`
	RopeTheta                     *float64 `json:"rope_theta"`
	Factor                        *float64 `json:"factor"`
	LowFreqFactor                 *float64 `json:"low_freq_factor"`
	HighFreqFactor                *float64 `json:"high_freq_factor"`
	OriginalMaxPositionEmbeddings *float64 `json:"original_max_position_embeddings"`
}

type rawConfig struct {
	ModelType             string          `json:"model_type"`
	Architectures         []string        `json:"architectures"`
	VocabSize             int             `json:"vocab_size"`
	HiddenSize            int             `json:"hidden_size"`
	IntermediateSize      int             `json:"intermediate_size"`
	NumHiddenLayers       int             `json:"num_hidden_layers"`
	NumAttentionHeads     int             `json:"num_attention_heads"`
	NumKeyValueHeads      *int            `json:"num_key_value_heads"`
	HeadDim               *int            `json:"head_dim"`
	MaxPositionEmbeddings int             `json:"max_position_embeddings"`
	RMSNormEps            *float64        `json:"rms_norm_eps"`
	RopeTheta             *float64        `json:"rope_theta"`
	RopeScaling           json.RawMessage `json:"rope_scaling"`
	RopeParameters        json.RawMessage `json:"rope_parameters"`
	TieWordEmbeddings     *bool           `json:"tie_word_embeddings"`
	AttentionBias         *bool           `json:"attention_bias"`
	MLPBias               *bool           `json:"mlp_bias"`
	SlidingWindow         *int            `json:"sliding_window"`
	UseSlidingWindow      *bool           `json:"use_sliding_window"`
	MaxWindowLayers       *int            `json:"max_window_layers"`
	LayerTypes            []string        `json:"layer_types"`
	HiddenAct             string          `json:"hidden_act"`
	DType                 string          `json:"dtype"`
	TorchDType            string          `json:"torch_dtype"`
	EOSTokenID            intList         `json:"eos_token_id"`
	BOSTokenID            intList         `json:"bos_token_id"`
}

// ParseConfig parses config.json bytes; name is used in error messages.
func ParseConfig(data []byte, name string) (Config, error) {
	var r rawConfig
	if err := json.Unmarshal(data, &r); err != nil {
		return Config{}, fmt.Errorf("parse %s: %w", name, err)
	}
	bad := func(field, format string, args ...any) (Config, error) {
		return Config{}, fmt.Errorf("%s: field %s: %s", name, field, fmt.Sprintf(format, args...))
	}
	c := Config{
		ModelType:             r.ModelType,
		VocabSize:             r.VocabSize,
		HiddenSize:            r.HiddenSize,
		IntermediateSize:      r.IntermediateSize,
		NumLayers:             r.NumHiddenLayers,
		NumHeads:              r.NumAttentionHeads,
		MaxPositionEmbeddings: r.MaxPositionEmbeddings,
		RMSNormEps:            1e-6,
		RopeTheta:             10000,
		HiddenAct:             r.HiddenAct,
		DType:                 r.DType,
		EOSTokenIDs:           r.EOSTokenID,
		BOSTokenID:            -1,
	}
	switch c.ModelType {
	case "llama", "qwen2", "mistral":
	case "":
		return bad("model_type", "missing")
	default:
		return bad("model_type", "unsupported architecture %q (want llama, qwen2 or mistral)", c.ModelType)
	}
	if c.DType == "" {
		c.DType = r.TorchDType
	}
	if c.HiddenAct == "" {
		c.HiddenAct = "silu"
	}
	if c.HiddenAct != "silu" {
		return bad("hidden_act", "unsupported activation %q (want silu)", c.HiddenAct)
	}
	if len(r.BOSTokenID) > 0 {
		c.BOSTokenID = r.BOSTokenID[0]
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"vocab_size", c.VocabSize}, {"hidden_size", c.HiddenSize}, {"intermediate_size", c.IntermediateSize},
		{"num_hidden_layers", c.NumLayers}, {"num_attention_heads", c.NumHeads}} {
		if f.v <= 0 || f.v > 1<<24 {
			return bad(f.name, "must be a positive integer, got %d", f.v)
		}
	}
	c.NumKVHeads = c.NumHeads
	if r.NumKeyValueHeads != nil {
		c.NumKVHeads = *r.NumKeyValueHeads
	}
	if c.NumKVHeads <= 0 || c.NumHeads%c.NumKVHeads != 0 {
		return bad("num_key_value_heads", "%d does not divide num_attention_heads %d", c.NumKVHeads, c.NumHeads)
	}
	if r.HeadDim != nil {
		c.HeadDim = *r.HeadDim
	} else {
		if c.HiddenSize%c.NumHeads != 0 {
			return bad("hidden_size", "%d not divisible by num_attention_heads %d", c.HiddenSize, c.NumHeads)
		}
		c.HeadDim = c.HiddenSize / c.NumHeads
	}
	if c.HeadDim <= 0 || c.HeadDim%2 != 0 {
		return bad("head_dim", "must be a positive even integer, got %d", c.HeadDim)
	}
	if c.MaxPositionEmbeddings <= 0 {
		c.MaxPositionEmbeddings = 2048
	}
	if r.RMSNormEps != nil {
		c.RMSNormEps = *r.RMSNormEps
	}
	if r.TieWordEmbeddings != nil {
		c.TieWordEmbeddings = *r.TieWordEmbeddings
	}
	if r.AttentionBias != nil {
		c.AttentionBias = *r.AttentionBias
	}
	if c.ModelType == "qwen2" {
		c.AttentionBias = true
	}
	if r.MLPBias != nil {
		c.MLPBias = *r.MLPBias
	}
	// RoPE: transformers-5 rope_parameters, else legacy rope_theta + rope_scaling.
	var rope rawRope
	ropeField := "rope_scaling"
	if len(r.RopeParameters) > 0 && !bytes.Equal(bytes.TrimSpace(r.RopeParameters), []byte("null")) {
		ropeField = "rope_parameters"
		if err := json.Unmarshal(r.RopeParameters, &rope); err != nil {
			return bad(ropeField, "%v", err)
		}
	} else if len(r.RopeScaling) > 0 && !bytes.Equal(bytes.TrimSpace(r.RopeScaling), []byte("null")) {
		if err := json.Unmarshal(r.RopeScaling, &rope); err != nil {
			return bad(ropeField, "%v", err)
		}
	}
	if rope.RopeTheta != nil {
		c.RopeTheta = *rope.RopeTheta
	} else if r.RopeTheta != nil {
		c.RopeTheta = *r.RopeTheta
	}
	if !(c.RopeTheta > 0) || math.IsInf(c.RopeTheta, 0) {
		return bad("rope_theta", "must be positive, got %g", c.RopeTheta)
	}
	c.Rope.Type = rope.RopeType
	if c.Rope.Type == "" {
		c.Rope.Type = rope.Type
	}
	if c.Rope.Type == "" {
		c.Rope.Type = "default"
	}
	get := func(p *float64, key string) (float64, error) {
		if p == nil {
			return 0, fmt.Errorf("%s: field %s.%s: missing for rope_type %q", name, ropeField, key, c.Rope.Type)
		}
		return *p, nil
	}
	var err error
	switch c.Rope.Type {
	case "default":
	case "linear":
		if c.Rope.Factor, err = get(rope.Factor, "factor"); err != nil {
			return Config{}, err
		}
		if !(c.Rope.Factor > 0) {
			return bad(ropeField+".factor", "must be positive, got %g", c.Rope.Factor)
		}
	case "llama3":
		if c.Rope.Factor, err = get(rope.Factor, "factor"); err != nil {
			return Config{}, err
		}
		if c.Rope.LowFreqFactor, err = get(rope.LowFreqFactor, "low_freq_factor"); err != nil {
			return Config{}, err
		}
		if c.Rope.HighFreqFactor, err = get(rope.HighFreqFactor, "high_freq_factor"); err != nil {
			return Config{}, err
		}
		if c.Rope.OriginalMaxPositionEmbeddings, err = get(rope.OriginalMaxPositionEmbeddings, "original_max_position_embeddings"); err != nil {
			return Config{}, err
		}
		if !(c.Rope.Factor > 0) || !(c.Rope.LowFreqFactor > 0) || !(c.Rope.OriginalMaxPositionEmbeddings > 0) ||
			c.Rope.HighFreqFactor == c.Rope.LowFreqFactor {
			return bad(ropeField, "invalid llama3 parameters %+v", c.Rope)
		}
	default:
		return bad(ropeField+".rope_type", "unsupported rope type %q (want default, linear or llama3)", c.Rope.Type)
	}
	// Sliding window: Mistral applies it whenever set; Qwen2 only with
	// use_sliding_window, on the layers layer_types (or max_window_layers) marks.
	c.SlidingWindow = make([]int, c.NumLayers)
	if r.SlidingWindow != nil && *r.SlidingWindow > 0 {
		w := *r.SlidingWindow
		switch c.ModelType {
		case "mistral":
			for l := range c.SlidingWindow {
				c.SlidingWindow[l] = w
			}
		case "qwen2":
			if r.UseSlidingWindow != nil && *r.UseSlidingWindow {
				for l := range c.SlidingWindow {
					switch {
					case len(r.LayerTypes) == c.NumLayers:
						if r.LayerTypes[l] == "sliding_attention" {
							c.SlidingWindow[l] = w
						}
					case r.MaxWindowLayers != nil:
						if l >= *r.MaxWindowLayers {
							c.SlidingWindow[l] = w
						}
					default:
						c.SlidingWindow[l] = w
					}
				}
			}
		}
	}
	switch strings.ToLower(c.DType) {
	case "", "float32", "float16", "bfloat16":
	default:
		return bad("dtype", "unsupported dtype %q (want float32, float16 or bfloat16)", c.DType)
	}
	return c, nil
}

// InvFreq returns RoPE's inverse frequencies (HeadDim/2 values) as
// transformers computes them, including linear and llama3 scaling.
func (c Config) InvFreq() []float32 {
	dim := c.HeadDim
	half := dim / 2
	out := make([]float32, half)
	for i := range half {
		// torch: arange(0, dim, 2).float() / dim in float32, then base ** that.
		exp := float32(2*i) / float32(dim)
		inv := float32(1.0 / math.Pow(c.RopeTheta, float64(exp)))
		out[i] = inv
	}
	switch c.Rope.Type {
	case "linear":
		for i := range out {
			out[i] = float32(float64(out[i]) / c.Rope.Factor)
		}
	case "factors":
		for i := range out {
			out[i] /= c.Rope.Factors[i]
		}
	case "llama3":
		factor := c.Rope.Factor
		lowFreqWavelen := c.Rope.OriginalMaxPositionEmbeddings / c.Rope.LowFreqFactor
		highFreqWavelen := c.Rope.OriginalMaxPositionEmbeddings / c.Rope.HighFreqFactor
		for i, f := range out {
			inv := float64(f)
			wavelen := 2 * math.Pi / inv
			scaled := inv
			if wavelen > lowFreqWavelen {
				scaled = inv / factor
			}
			if !(wavelen < highFreqWavelen) && !(wavelen > lowFreqWavelen) {
				smooth := (c.Rope.OriginalMaxPositionEmbeddings/wavelen - c.Rope.LowFreqFactor) /
					(c.Rope.HighFreqFactor - c.Rope.LowFreqFactor)
				scaled = (1-smooth)*scaled/factor + smooth*scaled
			}
			out[i] = float32(scaled)
		}
	}
	return out
}

// Params is the number of weights of the model, embeddings included.
func (c Config) Params() int64 {
	d, h, kv, hd := int64(c.HiddenSize), int64(c.NumHeads), int64(c.NumKVHeads), int64(c.HeadDim)
	layer := d*h*hd + 2*d*kv*hd + h*hd*d + 3*d*int64(c.IntermediateSize) + 2*d
	total := int64(c.NumLayers)*layer + int64(c.VocabSize)*d + d
	if !c.TieWordEmbeddings {
		total += int64(c.VocabSize) * d
	}
	return total
}

type rawGenConfig struct {
	EOSTokenID intList `json:"eos_token_id"`
	BOSTokenID intList `json:"bos_token_id"`
}

// LoadConfig reads dir/config.json and, when present, dir/generation_config.json
// (whose eos_token_id takes precedence), as LoadConfigIn reads them from
// ModelFolder(dir, false).
func LoadConfig(dir string) (Config, error) { return LoadConfigIn(ModelFolder(dir, false), dir) }

// LoadConfigIn is LoadConfig reading the files as folder allows (regular
// files, links out of the folder only when it says so), each of at most
// 64 MiB.
func LoadConfigIn(folder fsguard.Folder, dir string) (Config, error) {
	return loadConfig(func(name string) ([]byte, error) { return folder.ReadFile(filepath.Join(dir, name), maxModelJSON) }, dir)
}

// LoadConfigFS is LoadConfig for a model held in fsys (config.json and
// generation_config.json at its root); label names the model in errors.
func LoadConfigFS(fsys fs.FS, label string) (Config, error) {
	return loadConfig(func(name string) ([]byte, error) { return fs.ReadFile(fsys, name) }, label)
}

// loadConfig reads config.json and generation_config.json with read; dir
// names them in errors.
func loadConfig(read func(name string) ([]byte, error), dir string) (Config, error) {
	path := filepath.Join(dir, "config.json")
	data, err := read("config.json")
	if err != nil {
		return Config{}, fmt.Errorf("read config: %w", err)
	}
	c, err := ParseConfig(data, path)
	if err != nil {
		return Config{}, err
	}
	gpath := filepath.Join(dir, "generation_config.json")
	gdata, err := read("generation_config.json")
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return Config{}, fmt.Errorf("read generation config: %w", err)
	default:
		var g rawGenConfig
		if err := json.Unmarshal(gdata, &g); err != nil {
			return Config{}, fmt.Errorf("parse %s: %w", gpath, err)
		}
		if len(g.EOSTokenID) > 0 {
			c.EOSTokenIDs = g.EOSTokenID
		}
		if len(g.BOSTokenID) > 0 {
			c.BOSTokenID = g.BOSTokenID[0]
		}
	}
	return c, nil
}
