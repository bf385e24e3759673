package report

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tally/store"
)

// TestReportDType: reports show the dtype a run's products were computed
// in: every column carries it, lm-eval results files give it as
// model_dtype, and one model run at two dtypes is reported as two models,
// "NAME (DTYPE)", not merged under one name.
func TestReportDType(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "d.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	models := []struct{ model, fp, config string }{
		{"org/model", "gomlx:bfloat16:cpu-avx512:numerics-1:sha256:aa", `{"dtype":"bfloat16"}`},
		{"org/model", "gomlx:float32:cpu-avx512:numerics-1:sha256:aa", `{"dtype":"float32"}`},
		{"small", "gomlx:float32:cpu-avx512:numerics-1:sha256:bb", `{"dtype":"float32"}`},
		{"ollama:x", "ollama:sha256:cc:Q4_0:llama", `{}`},
	}
	if err := st.PutSamples(ctx, []store.Sample{{Task: "t", ID: "1", Prompt: "p", Refs: json.RawMessage(`["a"]`), Metadata: json.RawMessage(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	for i, m := range models {
		if _, err := st.StartRun(ctx, store.Run{Command: "run", Model: m.model, Fingerprint: m.fp, Config: json.RawMessage(m.config)}); err != nil {
			t.Fatal(err)
		}
		key := "k" + m.fp
		g := store.Generation{Key: key, Fingerprint: m.fp, Task: "t", SampleID: "1", Text: "a", Finish: "eos", Budget: 8, Stops: json.RawMessage(`{}`)}
		sc := store.Score{GenKey: key, Task: "t", SampleID: "1", Setting: "none", Budget: 8, Metric: "em", Value: float64(i % 2), Prediction: "a"}
		if err := st.PutGenerations(ctx, []store.Generation{g}, []store.Score{sc}); err != nil {
			t.Fatal(err)
		}
	}
	ds, err := Load(ctx, st, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range ds.Tasks[0].Columns {
		got[c.Label] = c.DType
	}
	want := map[string]string{"org/model (bfloat16) none=": "bfloat16", "org/model (float32) none=": "float32", "small none=": "float32", "ollama:x none=": ""}
	if !maps.Equal(got, want) {
		t.Errorf("columns (label: dtype) %v, want %v", got, want)
	}
	dir := t.TempDir()
	paths, err := WriteLMEval(dir, ds, LMEvalOptions{Version: "test", Now: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	dtypes := map[string]any{}
	for _, p := range paths {
		if !strings.Contains(filepath.Base(p), "results_") {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var res struct {
			ModelName string         `json:"model_name"`
			Config    map[string]any `json:"config"`
		}
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatal(err)
		}
		dtypes[res.ModelName] = res.Config["model_dtype"]
	}
	wantDT := map[string]any{"org/model (bfloat16)": "bfloat16", "org/model (float32)": "float32", "small": "float32", "ollama:x": nil}
	if len(dtypes) != len(wantDT) {
		t.Errorf("lm-eval model_dtype per model %v, want %v", dtypes, wantDT)
	}
	for k, v := range wantDT {
		if dtypes[k] != v {
			t.Errorf("lm-eval %s: model_dtype %v, want %v", k, dtypes[k], v)
		}
	}
}
