package gomlx

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeSafetensors writes tensors (name → dtype, shape, raw bytes) to path.
type rawTensor struct {
	dtype string
	shape []int
	data  []byte
}

func writeSafetensors(t testing.TB, path string, ts map[string]rawTensor) {
	t.Helper()
	names := make([]string, 0, len(ts))
	for n := range ts {
		names = append(names, n)
	}
	slices.Sort(names)
	header := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var data []byte
	for _, n := range names {
		r := ts[n]
		header[n] = map[string]any{"dtype": r.dtype, "shape": r.shape, "data_offsets": []int{len(data), len(data) + len(r.data)}}
		data = append(data, r.data...)
	}
	h, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	out = append(append(out, h...), data...)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

func f32Bytes(xs []float32) []byte {
	var b []byte
	for _, x := range xs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

// copyFixture copies a fixture model directory to a temp dir.
func copyFixture(t testing.TB, name string) string {
	t.Helper()
	src := filepath.Join(sharedDir(t), "fixtures", "models", name)
	dst := t.TempDir()
	for _, f := range []string{"config.json", "model.safetensors", "generation_config.json"} {
		data, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func TestParseConfigDialects(t *testing.T) {
	base := `"model_type":"llama","vocab_size":512,"hidden_size":64,"intermediate_size":176,"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2`
	tests := []struct {
		name    string
		json    string
		check   func(t *testing.T, c Config)
		wantErr string
	}{
		{"v5", `{` + base + `,"rope_parameters":{"rope_theta":500000.0,"rope_type":"default"},"dtype":"bfloat16"}`, func(t *testing.T, c Config) {
			if c.RopeTheta != 500000 || c.Rope.Type != "default" || c.DType != "bfloat16" || c.HeadDim != 16 {
				t.Errorf("%+v", c)
			}
		}, ""},
		{"legacy", `{` + base + `,"rope_theta":1000.0,"rope_scaling":null,"torch_dtype":"float16","eos_token_id":[1,2]}`, func(t *testing.T, c Config) {
			if c.RopeTheta != 1000 || c.Rope.Type != "default" || c.DType != "float16" || !slices.Equal(c.EOSTokenIDs, []int{1, 2}) {
				t.Errorf("%+v", c)
			}
		}, ""},
		{"legacy linear", `{` + base + `,"rope_theta":10000.0,"rope_scaling":{"type":"linear","factor":2.0},"eos_token_id":7}`, func(t *testing.T, c Config) {
			if c.Rope.Type != "linear" || c.Rope.Factor != 2 || !slices.Equal(c.EOSTokenIDs, []int{7}) {
				t.Errorf("%+v", c)
			}
			if got, want := c.InvFreq()[0], float32(0.5); got != want {
				t.Errorf("inv_freq[0] %v want %v", got, want)
			}
		}, ""},
		{"llama3", `{` + base + `,"rope_theta":500000.0,"rope_scaling":{"rope_type":"llama3","factor":8.0,"low_freq_factor":1.0,"high_freq_factor":4.0,"original_max_position_embeddings":8192}}`, func(t *testing.T, c Config) {
			if c.Rope.Type != "llama3" || c.Rope.OriginalMaxPositionEmbeddings != 8192 {
				t.Errorf("%+v", c)
			}
		}, ""},
		{"mistral window", `{"model_type":"mistral","vocab_size":8,"hidden_size":8,"intermediate_size":8,"num_hidden_layers":2,"num_attention_heads":2,"sliding_window":4096}`, func(t *testing.T, c Config) {
			if !slices.Equal(c.SlidingWindow, []int{4096, 4096}) || c.NumKVHeads != 2 {
				t.Errorf("%+v", c)
			}
		}, ""},
		{"qwen2 no window", `{"model_type":"qwen2","vocab_size":8,"hidden_size":8,"intermediate_size":8,"num_hidden_layers":1,"num_attention_heads":2,"sliding_window":4096,"use_sliding_window":false}`, func(t *testing.T, c Config) {
			if c.SlidingWindow[0] != 0 || !c.AttentionBias {
				t.Errorf("%+v", c)
			}
		}, ""},
		{"bad arch", `{"model_type":"gpt2"}`, nil, "model_type"},
		{"bad dtype", `{` + base + `,"dtype":"int8"}`, nil, "dtype"},
		{"bad rope", `{` + base + `,"rope_scaling":{"rope_type":"yarn","factor":2}}`, nil, "rope_type"},
		{"llama3 missing", `{` + base + `,"rope_scaling":{"rope_type":"llama3","factor":8.0}}`, nil, "low_freq_factor"},
		{"bad heads", `{"model_type":"llama","vocab_size":8,"hidden_size":8,"intermediate_size":8,"num_hidden_layers":1,"num_attention_heads":3,"num_key_value_heads":2}`, nil, "num_key_value_heads"},
		{"not json", `{`, nil, "parse"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseConfig([]byte(tc.json), "config.json")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "config.json") {
					t.Fatalf("err %v, want one naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

// TestLlama3InvFreq checks transformers' _compute_llama3_parameters bands.
func TestLlama3InvFreq(t *testing.T) {
	c := Config{HeadDim: 128, RopeTheta: 500000, Rope: RopeScaling{Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192}}
	got := c.InvFreq()
	plain := Config{HeadDim: 128, RopeTheta: 500000, Rope: RopeScaling{Type: "default"}}.InvFreq()
	for i := range got {
		inv := float64(plain[i])
		wavelen := 2 * math.Pi / inv
		var want float64
		switch {
		case wavelen < 8192.0/4:
			want = inv
		case wavelen > 8192.0/1:
			want = inv / 8
		default:
			s := (8192/wavelen - 1) / (4 - 1)
			want = (1-s)*inv/8 + s*inv
		}
		if math.Abs(float64(got[i])-want) > 1e-6*want {
			t.Fatalf("inv_freq[%d] = %g, want %g", i, got[i], want)
		}
	}
	if got[0] != plain[0] || got[63] != float32(float64(plain[63])/8) {
		t.Errorf("band edges: %g %g", got[0], got[63])
	}
}

func TestWidening(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.safetensors")
	bf := []byte{0x80, 0x3f, 0x00, 0xc0} // bf16 1.0, -2.0
	f16 := []byte{0x00, 0x3c, 0x00, 0xc0, 0x01, 0x00, 0x00, 0x7c}
	writeSafetensors(t, path, map[string]rawTensor{
		"a": {"BF16", []int{2}, bf},
		"b": {"F16", []int{4}, f16},
		"c": {"F32", []int{1}, f32Bytes([]float32{3.5})},
	})
	infos, err := ReadSafetensorsHeader(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]float32{"a": {1, -2}, "b": {1, -2, float32(math.Ldexp(1, -24)), float32(math.Inf(1))}, "c": {3.5}}
	for _, info := range infos {
		got, err := readTensorF32(info, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want[info.Name]) {
			t.Errorf("%s: got %v want %v", info.Name, got, want[info.Name])
		}
	}
}

func TestLoadErrors(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		mutate func(t *testing.T, dir string)
		want   []string
	}{
		{"missing config", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "config.json")) }, []string{"config.json"}},
		{"no weights", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "model.safetensors")) }, []string{"safetensors"}},
		{"corrupt header", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "model.safetensors"), []byte{0xff, 0xff, 0, 0, 0, 0, 0, 0, '{'}, 0o644)
		}, []string{"model.safetensors", "header"}},
		{"bad json header", func(t *testing.T, dir string) {
			b := binary.LittleEndian.AppendUint64(nil, 3)
			os.WriteFile(filepath.Join(dir, "model.safetensors"), append(b, "{x}"...), 0o644)
		}, []string{"model.safetensors", "header"}},
		{"missing tensor", func(t *testing.T, dir string) {
			writeSafetensors(t, filepath.Join(dir, "model.safetensors"), map[string]rawTensor{
				"model.embed_tokens.weight": {"F32", []int{512, 64}, make([]byte, 512*64*4)},
			})
		}, []string{"model.norm.weight", "missing"}},
		{"wrong shape", func(t *testing.T, dir string) {
			writeSafetensors(t, filepath.Join(dir, "model.safetensors"), map[string]rawTensor{
				"model.embed_tokens.weight": {"F32", []int{64, 512}, make([]byte, 512*64*4)},
			})
		}, []string{"model.embed_tokens.weight", "shape"}},
		{"bad dtype", func(t *testing.T, dir string) {
			writeSafetensors(t, filepath.Join(dir, "model.safetensors"), map[string]rawTensor{
				"model.embed_tokens.weight": {"I8", []int{512, 64}, make([]byte, 512*64)},
			})
		}, []string{"model.embed_tokens.weight", "I8"}},
		{"bad arch", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type":"falcon"}`), 0o644)
		}, []string{"config.json", "falcon"}},
		{"bad generation config", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "generation_config.json"), []byte(`{"eos_token_id":"x"}`), 0o644)
		}, []string{"generation_config.json"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyFixture(t, "llama-tiny")
			tc.mutate(t, dir)
			m, err := Open(ctx, dir, Options{FingerprintCache: "-"})
			if err == nil {
				m.Close()
				t.Fatal("no error")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("multi-line error %q", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not mention %q", msg, w)
				}
			}
		})
	}
}

// TestShardedAndCache loads a model split over two shards through a Hugging
// Face cache name, and checks it matches the single-file model.
func TestShardedAndCache(t *testing.T) {
	src := filepath.Join(sharedDir(t), "fixtures", "models", "qwen2-tiny")
	hf := t.TempDir()
	t.Setenv("HF_HUB_CACHE", "")
	t.Setenv("HF_HOME", hf)
	snap := filepath.Join(hf, "hub", "models--acme--tiny", "snapshots", "abc123")
	if err := os.MkdirAll(snap, 0o755); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(hf, "hub", "models--acme--tiny", "snapshots", "other"), 0o755)
	os.MkdirAll(filepath.Join(hf, "hub", "models--acme--tiny", "refs"), 0o755)
	os.WriteFile(filepath.Join(hf, "hub", "models--acme--tiny", "refs", "main"), []byte("abc123\n"), 0o644)
	for _, f := range []string{"config.json", "generation_config.json"} {
		data, _ := os.ReadFile(filepath.Join(src, f))
		os.WriteFile(filepath.Join(snap, f), data, 0o644)
	}
	w, err := OpenWeights(src)
	if err != nil {
		t.Fatal(err)
	}
	shards := []map[string]rawTensor{{}, {}}
	weightMap := map[string]string{}
	i := 0
	for name, info := range w.Tensors {
		x, err := readTensorF32(info, nil)
		if err != nil {
			t.Fatal(err)
		}
		s := i % 2
		i++
		// Shard 1 stores its tensors as BF16 when they are exactly representable? No: keep F32.
		shards[s][name] = rawTensor{"F32", info.Shape, f32Bytes(x)}
		weightMap[name] = []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}[s]
	}
	writeSafetensors(t, filepath.Join(snap, "model-00001-of-00002.safetensors"), shards[0])
	writeSafetensors(t, filepath.Join(snap, "model-00002-of-00002.safetensors"), shards[1])
	idx, _ := json.Marshal(map[string]any{"metadata": map[string]any{}, "weight_map": weightMap})
	os.WriteFile(filepath.Join(snap, "model.safetensors.index.json"), idx, 0o644)

	ctx := context.Background()
	m, err := Open(ctx, "acme/tiny", Options{FingerprintCache: "-"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ref := openFixture(t, "qwen2-tiny", Options{})
	prompt := []int{1, 2, 3, 4, 5}
	a, err := m.Logits(ctx, prompt)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ref.Logits(ctx, prompt)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a, b) {
		t.Error("sharded model logits differ")
	}
	if _, err := Open(ctx, "acme/missing", Options{}); err == nil || !strings.Contains(err.Error(), "acme/missing") {
		t.Errorf("missing cache model: %v", err)
	}
}

func TestFingerprintCache(t *testing.T) {
	dir := copyFixture(t, "mistral-tiny")
	cache := filepath.Join(t.TempDir(), "fp.json")
	ctx := context.Background()
	m, err := Open(ctx, dir, Options{FingerprintCache: cache})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	fp1, err := m.Fingerprint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(fp1, cpuArith("float32")+":sha256:") {
		t.Errorf("fingerprint %q", fp1)
	}
	data, err := os.ReadFile(cache)
	if err != nil || !strings.Contains(string(data), "model.safetensors") {
		t.Fatalf("cache not written: %v %s", err, data)
	}
	fp2, _ := m.Fingerprint(ctx)
	if fp1 != fp2 {
		t.Error("fingerprint not stable")
	}
	// Changing config.json changes the fingerprint.
	cfg := filepath.Join(dir, "config.json")
	b, _ := os.ReadFile(cfg)
	os.WriteFile(cfg, append(b, ' '), 0o644)
	fp3, _ := m.Fingerprint(ctx)
	if fp3 == fp1 {
		t.Error("fingerprint ignores config.json")
	}
}
