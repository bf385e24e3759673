package demotrain

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"

	"github.com/gomlx/gomlx/core/tensors"
)

// hfTensor is one exported tensor: its Hugging Face name, shape and values.
type hfTensor struct {
	name string
	dims []int
	data []float32
}

// weight returns a variable's values.
func (t *Trainer) weight(name string) ([]float32, error) {
	v := t.store.GetVariable(varPath(name))
	if v == nil {
		return nil, fmt.Errorf("demo variable %s missing", name)
	}
	val, err := v.Value()
	if err != nil {
		return nil, fmt.Errorf("read demo variable %s: %w", name, err)
	}
	return tensors.CopyFlatData[float32](val)
}

// hfTensors lists the weights under their Hugging Face Llama names, the
// fused q/k/v and gate/up matrices split into their parts.
func (t *Trainer) hfTensors() ([]hfTensor, error) {
	c := t.cfg
	d, q, in := c.HiddenSize, c.NumHeads*c.HeadDim, c.IntermediateSize
	var out []hfTensor
	add := func(hfName, name string, dims ...int) ([]float32, error) {
		w, err := t.weight(name)
		if err != nil {
			return nil, err
		}
		out = append(out, hfTensor{hfName, dims, w})
		return w, nil
	}
	if _, err := add("model.embed_tokens.weight", "embed", c.VocabSize, d); err != nil {
		return nil, err
	}
	if _, err := add("model.norm.weight", "final_norm", d); err != nil {
		return nil, err
	}
	if _, err := add("lm_head.weight", "lm_head", c.VocabSize, d); err != nil {
		return nil, err
	}
	for l := range c.NumLayers {
		p := fmt.Sprintf("model.layers.%d.", l)
		if _, err := add(p+"input_layernorm.weight", layerVar(l, "in_norm"), d); err != nil {
			return nil, err
		}
		if _, err := add(p+"post_attention_layernorm.weight", layerVar(l, "post_norm"), d); err != nil {
			return nil, err
		}
		if _, err := add(p+"self_attn.o_proj.weight", layerVar(l, "o"), d, q); err != nil {
			return nil, err
		}
		if _, err := add(p+"mlp.down_proj.weight", layerVar(l, "down"), d, in); err != nil {
			return nil, err
		}
		qkv, err := t.weight(layerVar(l, "qkv"))
		if err != nil {
			return nil, err
		}
		for i, n := range []string{"q_proj", "k_proj", "v_proj"} {
			out = append(out, hfTensor{p + "self_attn." + n + ".weight", []int{q, d}, qkv[i*q*d : (i+1)*q*d]})
		}
		gu, err := t.weight(layerVar(l, "gate_up"))
		if err != nil {
			return nil, err
		}
		for i, n := range []string{"gate_proj", "up_proj"} {
			out = append(out, hfTensor{p + "mlp." + n + ".weight", []int{in, d}, gu[i*in*d : (i+1)*in*d]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// safetensors encodes tensors as one float32 safetensors file, tensors in
// name order.
func safetensors(ts []hfTensor) ([]byte, error) {
	header := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	off := 0
	for _, t := range ts {
		n := 4 * len(t.data)
		header[t.name] = map[string]any{"dtype": "F32", "shape": t.dims, "data_offsets": []int{off, off + n}}
		off += n
	}
	h, err := json.Marshal(header)
	if err != nil {
		return nil, fmt.Errorf("encode safetensors header: %w", err)
	}
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	var b bytes.Buffer
	b.Grow(8 + len(h) + off)
	_ = binary.Write(&b, binary.LittleEndian, uint64(len(h)))
	b.Write(h)
	var w [4]byte
	for _, t := range ts {
		for _, x := range t.data {
			binary.LittleEndian.PutUint32(w[:], math.Float32bits(x))
			b.Write(w[:])
		}
	}
	return b.Bytes(), nil
}

// Files returns the model in the Hugging Face layout: config.json,
// model.safetensors (float32) and tokenizer.json.
func (t *Trainer) Files() (map[string][]byte, error) {
	ts, err := t.hfTensors()
	if err != nil {
		return nil, err
	}
	st, err := safetensors(ts)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{"config.json": append(t.cfgJSON, '\n'), "model.safetensors": st, "tokenizer.json": t.tokJSON}, nil
}

// Export writes Files into dir (created if needed).
func (t *Trainer) Export(dir string) error {
	files, err := t.Files()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("export demo model: %w", err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return fmt.Errorf("export demo model: %w", err)
		}
	}
	return nil
}
