package gomlx

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

func FuzzParseConfig(f *testing.F) {
	for _, name := range fixtureModels {
		data, err := os.ReadFile(filepath.Join(sharedDir(f), "fixtures", "models", name, "config.json"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"model_type":"llama","vocab_size":8,"hidden_size":8,"intermediate_size":8,"num_hidden_layers":1,"num_attention_heads":2,"rope_scaling":{"rope_type":"llama3","factor":8,"low_freq_factor":1,"high_freq_factor":4,"original_max_position_embeddings":8192},"eos_token_id":[1,2]}`))
	f.Add([]byte(`{"model_type":"mistral","head_dim":0}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data, "config.json")
		if err != nil {
			return
		}
		if c.HeadDim <= 0 || c.NumKVHeads <= 0 || c.NumHeads%c.NumKVHeads != 0 || len(c.SlidingWindow) != c.NumLayers {
			t.Fatalf("accepted invalid config %+v", c)
		}
		if c.HeadDim <= 1<<16 {
			_ = c.InvFreq()
		}
	})
}

func FuzzSafetensorsHeader(f *testing.F) {
	good := func(header string, data int) []byte {
		b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
		return append(append(b, header...), make([]byte, data)...)
	}
	f.Add(good(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, 8))
	f.Add(good(`{"__metadata__":{"x":"y"},"b":{"dtype":"BF16","shape":[1,2],"data_offsets":[0,4]}}`, 4))
	f.Add(good(`{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,8]}}`, 8))
	f.Add(good(`{"a":{"dtype":"F16","shape":[-1],"data_offsets":[8,0]}}`, 0))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		infos, err := parseSafetensorsHeader(bytes.NewReader(data), int64(len(data)), "fuzz.safetensors")
		if err != nil {
			return
		}
		for _, info := range infos {
			if info.Offset < 8 || info.Offset+info.Length > int64(len(data)) {
				t.Fatalf("tensor %s outside the file: %+v", info.Name, info)
			}
			if es, ok := dtypeSize[info.DType]; ok && int64(info.Numel()*es) != info.Length {
				t.Fatalf("tensor %s size mismatch: %+v", info.Name, info)
			}
		}
	})
}
