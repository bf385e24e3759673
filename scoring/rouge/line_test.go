package rouge

import (
	"encoding/json"
	"testing"
)

func TestLineMetric(t *testing.T) {
	ms := LineMetrics()
	if len(ms) != 1 || ms[0].Name != "rouge" || ms[0].Doc == "" {
		t.Fatalf("LineMetrics() = %+v", ms)
	}
	m := ms[0]
	tests := []struct {
		in      string
		want    LineScore
		wantErr bool
	}{
		{`{"prediction":"a b","references":["a b"]}`, LineScore{1, 1, 1, 1}, false},
		{`{"prediction":"a b","references":["x","b a"]}`, LineScore{1, 0, 0.5, 0.5}, false},
		{`{"prediction":"a b","references":[]}`, LineScore{}, true},
		{`{"references":["a"]}`, LineScore{}, true},
		{`not json`, LineScore{}, true},
	}
	for _, tt := range tests {
		got, err := m.Score(json.RawMessage(tt.in))
		if (err != nil) != tt.wantErr {
			t.Errorf("Score(%s) error %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if err == nil && got.(LineScore) != tt.want {
			t.Errorf("Score(%s) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
	agg, err := m.Aggregate([]json.RawMessage{
		json.RawMessage(`{"prediction":"a b","references":["a b"]}`),
		json.RawMessage(`{"prediction":"c","references":["a b"]}`),
	})
	if err != nil {
		t.Fatalf("Aggregate: %v", err)
	}
	if got := agg.(map[string]any)["rouge1"]; got != 0.5 {
		t.Errorf("aggregate rouge1 = %v, want 0.5", got)
	}
	if _, err := m.Aggregate(nil); err == nil {
		t.Error("empty aggregate accepted")
	}
}
