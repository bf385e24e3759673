package winrate

import (
	"bufio"
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"tally/internal/sharedtest"
	"testing"
)

// sharedDir returns ../shared relative to the directory holding go.mod.
func sharedDir(t testing.TB) string {
	t.Helper()
	return sharedtest.Dir(t)
}

func nan() float64 { return math.NaN() }

func sameFloat(a, b float64) bool {
	return a == b || (math.IsNaN(a) && math.IsNaN(b))
}

func TestQuirks(t *testing.T) {
	tests := []struct {
		name    string
		prefs   []float64
		want    Result
		wantErr bool
	}{
		{"legacy zero is a draw", []float64{2, 1, 0, 1.5, nan()},
			Result{WinRate: 50, StandardError: Float(20.41241452319315), NWins: 1, NWinsBase: 1, NDraws: 2, NTotal: 4, DiscreteWinRate: 50}, false},
		{"negative zero is a draw too", []float64{-0.0, 1, 2},
			Result{WinRate: 50, StandardError: Float(28.86751345948129), NWins: 1, NWinsBase: 1, NDraws: 1, NTotal: 3, DiscreteWinRate: 50}, false},
		{"discrete rule keeps values the continuous one drops", []float64{2.5, 0.5, 1, 2},
			Result{WinRate: 50, StandardError: 50, NWins: 1, NWinsBase: 1, NDraws: 0, NTotal: 2, DiscreteWinRate: 62.5}, false},
		{"single value has NaN standard error", []float64{1},
			Result{WinRate: 0, StandardError: Float(nan()), NWinsBase: 1, NTotal: 1, DiscreteWinRate: 0}, false},
		{"all out of range", []float64{3, 4},
			Result{WinRate: Float(nan()), StandardError: Float(nan()), DiscreteWinRate: Float(nan())}, false},
		{"infinity cannot cast to Int64", []float64{math.Inf(1), 1, 2}, Result{}, true},
		{"huge value cannot cast to Int64", []float64{9.3e18, 1, 2}, Result{}, true},
		{"value inside int64 range is just dropped", []float64{9e18, 1, 2},
			Result{WinRate: 50, StandardError: 50, NWins: 1, NWinsBase: 1, NTotal: 2, DiscreteWinRate: 50}, false},
		// helpers.py describe_head2head drops every NaN: NaN rates, n_total 0.
		{"all missing is NaN with n_total 0", []float64{nan(), nan()},
			Result{WinRate: Float(nan()), StandardError: Float(nan()), DiscreteWinRate: Float(nan())}, false},
		{"one missing is NaN with n_total 0", []float64{nan()},
			Result{WinRate: Float(nan()), StandardError: Float(nan()), DiscreteWinRate: Float(nan())}, false},
		{"empty raises", nil, Result{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Winrate(tt.prefs)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if !sameResult(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func sameResult(a, b Result) bool {
	return sameFloat(float64(a.WinRate), float64(b.WinRate)) &&
		sameFloat(float64(a.StandardError), float64(b.StandardError)) &&
		sameFloat(float64(a.DiscreteWinRate), float64(b.DiscreteWinRate)) &&
		a.NWins == b.NWins && a.NWinsBase == b.NWinsBase && a.NDraws == b.NDraws && a.NTotal == b.NTotal
}

type vector struct {
	Prefs  []any               `json:"prefs"`
	Expect map[string]*float64 `json:"expect"`
	Error  string              `json:"error"`
}

func TestVectors(t *testing.T) {
	f, err := os.Open("testdata/vectors.jsonl")
	if err != nil {
		t.Fatalf("opening vectors: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	total, bad := 0, 0
	for sc.Scan() {
		var v vector
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("vector %d: %v", total+1, err)
		}
		total++
		prefs := make([]float64, len(v.Prefs))
		for i, p := range v.Prefs {
			switch p := p.(type) {
			case nil:
				prefs[i] = nan()
			case float64:
				prefs[i] = p
			case string:
				prefs[i] = map[string]float64{"inf": math.Inf(1), "-inf": math.Inf(-1)}[p]
			}
		}
		got, err := Winrate(prefs)
		if v.Error != "" {
			if err == nil {
				bad++
				t.Errorf("vector %d: want error %q, got %+v", total, v.Error, got)
			}
			continue
		}
		if err != nil {
			bad++
			t.Errorf("vector %d: unexpected error %v", total, err)
			continue
		}
		val := func(k string) float64 {
			if p := v.Expect[k]; p != nil {
				return *p
			}
			return nan()
		}
		want := Result{WinRate: Float(val("win_rate")), StandardError: Float(val("standard_error")),
			NWins: int(val("n_wins")), NWinsBase: int(val("n_wins_base")), NDraws: int(val("n_draws")),
			NTotal: int(val("n_total")), DiscreteWinRate: Float(val("discrete_win_rate"))}
		if !sameResult(got, want) {
			bad++
			t.Errorf("vector %d (n=%d): got %+v, want %+v", total, len(prefs), got, want)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading vectors: %v", err)
	}
	t.Logf("vectors: %d/%d match", total-bad, total)
	if total == 0 {
		t.Fatal("no vectors")
	}
}

func readAnnotations(t *testing.T, path string) []float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("opening annotations: %v", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("gunzip %s: %v", path, err)
	}
	var rows []struct {
		Preference *float64 `json:"preference"`
	}
	if err := json.NewDecoder(zr).Decode(&rows); err != nil {
		t.Fatalf("decoding %s: %v", path, err)
	}
	out := make([]float64, len(rows))
	for i, r := range rows {
		out[i] = nan()
		if r.Preference != nil {
			out[i] = *r.Preference
		}
	}
	return out
}

// TestPublishedLeaderboard recomputes the leaderboard rows in
// ../shared/data/alpaca_eval from the annotations and requires exact
// equality with the published CSV values.
func TestPublishedLeaderboard(t *testing.T) {
	root := filepath.Join(sharedDir(t), "data", "alpaca_eval")
	cases := []struct{ model, annotator, csv string }{
		{"text_davinci_001", "alpaca_eval_gpt4", "data_AlpacaEval/alpaca_eval_gpt4_leaderboard.subset.csv"},
		{"gpt-3.5-turbo-1106", "alpaca_eval_gpt4", "data_AlpacaEval/alpaca_eval_gpt4_leaderboard.subset.csv"},
		{"gpt-3.5-turbo-1106", "weighted_alpaca_eval_gpt4_turbo", "data_AlpacaEval_2/weighted_alpaca_eval_gpt4_turbo_leaderboard.subset.csv"},
	}
	for _, c := range cases {
		t.Run(c.model+"/"+c.annotator, func(t *testing.T) {
			row := leaderboardRow(t, filepath.Join(root, "leaderboards", c.csv), c.model)
			got, err := Winrate(readAnnotations(t, filepath.Join(root, "results", c.model, c.annotator, "annotations.json.gz")))
			if err != nil {
				t.Fatalf("winrate: %v", err)
			}
			gotFields := map[string]float64{
				"win_rate": float64(got.WinRate), "standard_error": float64(got.StandardError),
				"n_wins": float64(got.NWins), "n_wins_base": float64(got.NWinsBase), "n_draws": float64(got.NDraws),
				"n_total": float64(got.NTotal), "discrete_win_rate": float64(got.DiscreteWinRate),
			}
			for k, g := range gotFields {
				w, err := strconv.ParseFloat(row[k], 64)
				if err != nil {
					t.Fatalf("leaderboard %s: %v", k, err)
				}
				// Counts must match exactly; rates to 1e-13 relative: the
				// AE2 weighted win_rate published is 9.177964561962735 while
				// the reference run here (numpy pairwise sum, in any row
				// order, with or without bottleneck) gives ...733.
				if g != w && math.Abs(g-w) > 1e-13*math.Abs(w) {
					t.Errorf("%s = %v, published %v (diff %g)", k, g, w, g-w)
				} else if g != w {
					t.Logf("%s = %v, published %v (diff %g, within 1e-13 relative)", k, g, w, g-w)
				}
			}
		})
	}
}

func leaderboardRow(t *testing.T, path, model string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("opening leaderboard: %v", err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	for _, r := range recs[1:] {
		if r[0] == model {
			m := map[string]string{}
			for i, h := range recs[0] {
				m[h] = r[i]
			}
			return m
		}
	}
	t.Fatalf("%s not in %s", model, path)
	return nil
}

func TestLineMetric(t *testing.T) {
	ms := LineMetrics()
	if len(ms) != 1 || ms[0].Aggregate == nil || ms[0].Score != nil {
		t.Fatalf("unexpected metrics %+v", ms)
	}
	lines := []json.RawMessage{[]byte(`{"preference": 2}`), []byte(`{"preference": null}`), []byte(`{"preference": 1}`), []byte(`{}`)}
	out, err := ms[0].Aggregate(lines)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(out)
	want := `{"win_rate":50,"standard_error":50,"n_wins":1,"n_wins_base":1,"n_draws":0,"n_total":2,"discrete_win_rate":50}`
	if string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
	if _, err := ms[0].Aggregate([]json.RawMessage{[]byte(`{"preference": "x"}`)}); err == nil {
		t.Error("want error for a string preference")
	}
	// A file whose preferences are all missing follows get_winrate
	// (helpers.py describe_head2head): NaN rates written as null, n_total 0.
	out, err = ms[0].Aggregate([]json.RawMessage{[]byte(`{"preference": null}`), []byte(`{"preference": null}`), []byte(`{}`)})
	if err != nil {
		t.Fatalf("all-missing file: %v", err)
	}
	b, _ = json.Marshal(out)
	if want := `{"win_rate":null,"standard_error":null,"n_wins":0,"n_wins_base":0,"n_draws":0,"n_total":0,"discrete_win_rate":null}`; string(b) != want {
		t.Errorf("all-missing file: got %s, want %s", b, want)
	}
	if _, err := ms[0].Aggregate(nil); err == nil {
		t.Error("want an error for an empty file (the reference raises KeyError)")
	}
	b, _ = json.Marshal(PairwiseToWinrate([]float64{1}))
	if want := `{"win_rate":0,"standard_error":null,"n_wins":0,"n_wins_base":1,"n_draws":0,"n_total":1,"discrete_win_rate":0}`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
}

func BenchmarkWinrate(b *testing.B) {
	prefs := make([]float64, 805)
	for i := range prefs {
		prefs[i] = 1 + float64(i%7)/6
	}
	b.ResetTimer()
	for b.Loop() {
		_, _ = Winrate(prefs)
	}
	b.ReportMetric(float64(b.N*len(prefs))/b.Elapsed().Seconds(), "samples/s")
}
