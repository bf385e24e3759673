package scoring

import (
	"encoding/json"
	"strings"
	"testing"

	"tally/datasets"
)

func TestRegisterLookupLineForm(t *testing.T) {
	m := Metric{Name: "test-len", Version: "1", Reference: "none (test)", Doc: "length of the prediction.",
		Score: func(pred string, s datasets.Sample) (map[string]float64, error) {
			refs, err := StringRefs(s)
			if err != nil {
				return nil, err
			}
			return map[string]float64{"len": float64(len(pred)), "refs": float64(len(refs))}, nil
		}}
	Register(m)
	got, ok := Lookup("test-len")
	if !ok || got.Version != "1" {
		t.Fatalf("Lookup(test-len) = %+v, %v", got, ok)
	}
	if !strings.Contains(strings.Join(TaskNames(), ","), "test-len") {
		t.Errorf("TaskNames() = %v lacks test-len", TaskNames())
	}
	lf := got.LineForm()
	for _, tc := range []struct {
		line, want, wantErr string
	}{
		{`{"prediction": "abc", "references": ["x", "y"]}`, `{"len":3,"refs":2}`, ""},
		{`{"prediction": "abc"}`, "", `needs "prediction" and "references"`},
		{`{"references": ["x"]}`, "", `needs "prediction" and "references"`},
		{`{"prediction": "abc", "references": "x"}`, "", "not a list of strings"},
	} {
		out, err := lf.Score(json.RawMessage(tc.line))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: error %v, want %q", tc.line, err, tc.wantErr)
			}
			continue
		}
		b, _ := json.Marshal(out)
		if err != nil || string(b) != tc.want {
			t.Errorf("%s: %s, %v; want %s", tc.line, b, err, tc.want)
		}
	}
}

func TestRegisterRefuses(t *testing.T) {
	score := func(string, datasets.Sample) (map[string]float64, error) { return nil, nil }
	Register(Metric{Name: "test-dup", Version: "1", Reference: "r", Doc: "d", Score: score})
	for name, m := range map[string]Metric{
		"duplicate":      {Name: "test-dup", Version: "1", Reference: "r", Doc: "d", Score: score},
		"no name":        {Version: "1", Reference: "r", Doc: "d", Score: score},
		"no version":     {Name: "test-v", Reference: "r", Doc: "d", Score: score},
		"no reference":   {Name: "test-r", Version: "1", Doc: "d", Score: score},
		"no score, line": {Name: "test-s", Version: "1", Reference: "r", Doc: "d"},
		"line misnamed":  {Name: "test-l", Version: "1", Reference: "r", Doc: "d", Line: &LineMetric{Name: "other"}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Register did not panic", name)
				}
			}()
			Register(m)
		}()
	}
}
