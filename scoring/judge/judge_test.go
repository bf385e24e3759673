package judge

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"testing"
)

type kappaVector struct {
	A       []any    `json:"a"`
	B       []any    `json:"b"`
	Weights *string  `json:"weights"`
	Kappa   *float64 `json:"kappa"`
	Error   string   `json:"error"`
}

func TestKappaVectors(t *testing.T) {
	f, err := os.Open("testdata/kappa.jsonl")
	if err != nil {
		t.Fatalf("opening vectors: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	total, bad := 0, 0
	for sc.Scan() {
		var v kappaVector
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("vector %d: %v", total+1, err)
		}
		total++
		w := ""
		if v.Weights != nil {
			w = *v.Weights
		}
		y1 := make([]Label, len(v.A))
		y2 := make([]Label, len(v.B))
		for i := range v.A {
			y1[i], y2[i] = v.A[i], v.B[i]
		}
		got, err := CohenKappa(y1, y2, w)
		switch {
		case v.Error != "":
			if err == nil {
				bad++
				t.Errorf("vector %d: want error %q, got %v", total, v.Error, got)
			}
		case err != nil:
			bad++
			t.Errorf("vector %d: %v", total, err)
		case v.Kappa == nil && !math.IsNaN(got), v.Kappa != nil && got != *v.Kappa:
			bad++
			t.Errorf("vector %d (%s, n=%d): got %v, want %v", total, w, len(y1), got, v.Kappa)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if total == 0 {
		t.Fatal("no vectors")
	}
	t.Logf("kappa vectors: %d/%d match", total-bad, total)
}

func labels(xs ...any) []Label {
	out := make([]Label, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

func TestKappaTable(t *testing.T) {
	tests := []struct {
		name    string
		a, b    []Label
		weights string
		want    float64
		wantErr bool
	}{
		{"perfect agreement", labels("A", "B", "tie"), labels("A", "B", "tie"), "", 1, false},
		{"chance-level binary", labels("x", "x", "y", "y"), labels("x", "y", "x", "y"), "", 0, false},
		{"one label is undefined", labels(1.0, 1.0), labels(1.0, 1.0), "", math.NaN(), false},
		{"no pairs is undefined", nil, nil, "", math.NaN(), false},
		{"linear weights use sorted label distance", labels(1.0, 2.0, 3.0), labels(1.0, 3.0, 3.0), Linear, 2.0 / 3, false},
		{"mixed types", labels(1.0, "a"), labels(1.0, "a"), "", 0, true},
		{"continuous labels", labels(0.5, 1.0), labels(0.5, 1.0), "", 0, true},
		{"unknown weighting", labels(1.0), labels(1.0), "cubic", 0, true},
		{"null label", labels(nil), labels(1.0), "", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CohenKappa(tt.a, tt.b, tt.weights)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && !(got == tt.want || math.IsNaN(got) && math.IsNaN(tt.want) || math.Abs(got-tt.want) < 1e-12) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPairVerdicts(t *testing.T) {
	tests := []struct {
		ab, ba     Verdict
		want       Verdict
		consistent bool
	}{
		{A, B, A, true}, // A wins in both orders
		{B, A, B, true}, // B wins in both orders
		{Tie, Tie, Tie, true},
		{A, A, "", false},   // position A always wins: position bias
		{B, B, "", false},   // position B always wins
		{A, Tie, "", false}, // half agreement is not agreement
		{Tie, B, "", false},
	}
	for _, tt := range tests {
		p := Pair{tt.ab, tt.ba}
		v, ok := p.Verdict()
		if v != tt.want || ok != tt.consistent || p.Consistent() != tt.consistent {
			t.Errorf("Pair{%s, %s}: got %q, %v; want %q, %v", tt.ab, tt.ba, v, ok, tt.want, tt.consistent)
		}
	}
}

func TestSummarise(t *testing.T) {
	pairs := []Pair{{A, B}, {A, B}, {B, A}, {Tie, Tie}, {A, A}}
	tests := []struct {
		policy  Policy
		win     float64
		nScored int
	}{
		{Policy{}, (2 + 0.5 + 0.5) / 5, 5},               // inconsistent counts as a tie
		{Policy{Inconsistent: "drop"}, (2 + 0.5) / 4, 4}, // inconsistent dropped
		{Policy{Ties: "drop"}, 2.0 / 3, 3},               // ties (and inconsistent-as-tie) dropped
		{Policy{Inconsistent: "drop", Ties: "drop"}, 2.0 / 3, 3},
	}
	for _, tt := range tests {
		s, err := Summarise(pairs, tt.policy, 200, 1)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(s.WinRate-tt.win) > 1e-12 || s.NScored != tt.nScored {
			t.Errorf("%+v: win %v n %d, want %v n %d", tt.policy, s.WinRate, s.NScored, tt.win, tt.nScored)
		}
		if s.Consistency != 0.8 || s.NWins != 2 || s.NLosses != 1 || s.NTies != 1 || s.NInconsistent != 1 {
			t.Errorf("%+v: %+v", tt.policy, s)
		}
		if !(s.WinRateLow <= s.WinRate && s.WinRate <= s.WinRateHi) {
			t.Errorf("interval [%v, %v] misses %v", s.WinRateLow, s.WinRateHi, s.WinRate)
		}
		// Single-order verdicts: A B | A B | B A | tie tie | A A: 8 decided, 5 name A.
		if s.FirstPosition != 5.0/8 {
			t.Errorf("first position %v", s.FirstPosition)
		}
	}
	if _, err := Summarise(pairs, Policy{Ties: "zero"}, 10, 1); err == nil {
		t.Error("want an error for an unknown ties policy")
	}
	again, _ := Summarise(pairs, Policy{}, 200, 1)
	first, _ := Summarise(pairs, Policy{}, 200, 1)
	if again != first {
		t.Error("same seed gave different intervals")
	}
}

func TestSelfPreference(t *testing.T) {
	// Judge "gpt" prefers gpt outputs; judge "claude" is even-handed.
	js := []Judgment{
		{"1", "gpt", "gpt", "llama", A}, {"1", "claude", "gpt", "llama", Tie},
		{"2", "gpt", "llama", "gpt", B}, {"2", "claude", "llama", "gpt", A},
		{"3", "gpt", "gpt", "claude", A}, {"3", "claude", "gpt", "claude", B},
		{"4", "gpt", "llama", "claude", A}, // no gpt output: ignored for gpt
	}
	r, err := SelfPreference(js, "gpt", 500, 3)
	if err != nil {
		t.Fatal(err)
	}
	if r.NOwn != 3 || r.NOther != 3 || r.Own.Estimate != 1 || r.Others.Estimate != 0.5/3 {
		t.Errorf("got %+v", r)
	}
	if math.Abs(r.Bias-(1-0.5/3)) > 1e-12 || r.NPaired != 3 || math.Abs(r.Paired.Estimate-r.Bias) > 1e-12 {
		t.Errorf("bias %v paired %+v (n %d)", r.Bias, r.Paired, r.NPaired)
	}
	if _, err := SelfPreference([]Judgment{{Verdict: "C"}}, "gpt", 10, 1); err == nil {
		t.Error("want an error for a bad verdict")
	}
}

func TestLineMetrics(t *testing.T) {
	ms := LineMetrics()
	by := map[string]int{}
	for i, m := range ms {
		by[m.Name] = i
		if m.Doc == "" {
			t.Errorf("%s: no doc", m.Name)
		}
	}
	km, err := ms[by["kappa"]].Configure(map[string]string{"weights": "quadratic"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := km.Aggregate([]json.RawMessage{[]byte(`{"a": 1, "b": 1}`), []byte(`{"a": 2, "b": 3}`), []byte(`{"a": 3, "b": 3}`)})
	if b, _ := json.Marshal(out); err != nil || string(b) != `{"kappa":0.8}` {
		t.Errorf("kappa: %s, %v", b, err)
	}
	out, _ = ms[by["kappa"]].Aggregate([]json.RawMessage{[]byte(`{"a": "x", "b": "x"}`)})
	if b, _ := json.Marshal(out); string(b) != `{"kappa":null}` {
		t.Errorf("kappa undefined: %s", b)
	}
	pw := ms[by["pairwise"]]
	out, err = pw.Score(json.RawMessage(`{"ab": "A", "ba": "B"}`))
	if b, _ := json.Marshal(out); err != nil || string(b) != `{"consistent":true,"verdict":"A"}` {
		t.Errorf("pairwise line: %s, %v", b, err)
	}
	out, _ = pw.Score(json.RawMessage(`{"ab": "A", "ba": "A"}`))
	if b, _ := json.Marshal(out); string(b) != `{"consistent":false,"verdict":null}` {
		t.Errorf("pairwise line: %s", b)
	}
	if _, err := pw.Score(json.RawMessage(`{"ab": "a", "ba": "B"}`)); err == nil {
		t.Error("want an error for verdict a")
	}
	pw, err = pw.Configure(map[string]string{"inconsistent": "drop", "seed": "7"})
	if err != nil {
		t.Fatal(err)
	}
	agg, err := pw.Aggregate([]json.RawMessage{[]byte(`{"ab": "A", "ba": "B"}`), []byte(`{"ab": "B", "ba": "B"}`)})
	if err != nil {
		t.Fatal(err)
	}
	m := agg.(map[string]any)
	if *m["win_rate"].(*float64) != 1 || *m["consistency"].(*float64) != 0.5 || m["n_scored"] != 1 {
		t.Errorf("pairwise aggregate: %v", m)
	}
	sp := ms[by["self-preference"]]
	agg, err = sp.Aggregate([]json.RawMessage{[]byte(`{"item": "1", "judge": "gpt", "a": "gpt", "b": "llama", "verdict": "A"}`),
		[]byte(`{"item": "1", "judge": "llama", "a": "gpt", "b": "llama", "verdict": "B"}`)})
	if b, _ := json.Marshal(agg); err != nil || len(b) == 0 {
		t.Errorf("self-preference: %s, %v", b, err)
	}
}

func FuzzPairwiseLine(f *testing.F) {
	f.Add(`{"ab": "A", "ba": "B"}`)
	f.Add(`{"ab": "tie", "ba": "tie"}`)
	f.Add(`{"ab": 1}`)
	m := pairwiseMetric(Policy{}, 10, 1)
	f.Fuzz(func(t *testing.T, line string) {
		_, _ = m.Score(json.RawMessage(line))
		_, _ = m.Aggregate([]json.RawMessage{json.RawMessage(line)})
	})
}

func FuzzKappaLine(f *testing.F) {
	f.Add(`{"a": 1, "b": 2}`, `{"a": "x", "b": "y"}`)
	f.Add(`{"a": 0.5, "b": true}`, `{"a": null}`)
	m := kappaMetric(Quadratic)
	f.Fuzz(func(t *testing.T, l1, l2 string) {
		_, _ = m.Aggregate([]json.RawMessage{json.RawMessage(l1), json.RawMessage(l2)})
	})
}

func BenchmarkCohenKappa(b *testing.B) {
	y1 := make([]Label, 1000)
	y2 := make([]Label, 1000)
	for i := range y1 {
		y1[i], y2[i] = float64(i%5), float64((i*7)%5)
	}
	for b.Loop() {
		_, _ = CohenKappa(y1, y2, Quadratic)
	}
	b.ReportMetric(float64(b.N*len(y1))/b.Elapsed().Seconds(), "samples/s")
}

func BenchmarkSummarise(b *testing.B) {
	pairs := make([]Pair, 1000)
	vs := []Verdict{A, B, Tie}
	for i := range pairs {
		pairs[i] = Pair{vs[i%3], vs[(i/3)%3]}
	}
	for b.Loop() {
		_, _ = Summarise(pairs, Policy{}, 1000, 1)
	}
	b.ReportMetric(float64(b.N*len(pairs))/b.Elapsed().Seconds(), "samples/s")
}
