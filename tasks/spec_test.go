package tasks

import "testing"

// TestScoringSpec: the spec changes with the metrics and scoring fields,
// and not with the description, data path, stop settings or budget.
func TestScoringSpec(t *testing.T) {
	base := Config{Task: "t", Metrics: []string{"exact_match", "token_f1"}, Lang: "EN", MaxTokens: 32,
		Stop: map[string][]string{"nl": {"\n"}}, Description: "d", Data: "a.jsonl"}
	same := base
	same.Description, same.Data, same.MaxTokens = "other", "b.jsonl", 64
	same.Stop = map[string][]string{"dot": {"."}}
	if base.ScoringSpec() != same.ScoringSpec() {
		t.Errorf("spec changed with description, data, stop or budget")
	}
	for name, f := range map[string]func(*Config){
		"metrics": func(c *Config) { c.Metrics = c.Metrics[:1] },
		"lang":    func(c *Config) { c.Lang = "ZH" },
	} {
		c := base
		c.Metrics = append([]string(nil), base.Metrics...)
		f(&c)
		if c.ScoringSpec() == base.ScoringSpec() {
			t.Errorf("%s: spec unchanged", name)
		}
	}
}
