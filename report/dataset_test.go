package report

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"testing"
	"unsafe"

	"tally/generate"
	"tally/scoring/stats"
	"tally/store"
)

// referenceRows is the summary computed the plain way, from every
// SampleData of a fully loaded task (the per-sample maps the HTML page
// shows), as summarise did before it worked on columns of scores.
func referenceRows(td *TaskData) []Row {
	var rows []Row
	for _, m := range td.Metrics {
		var first map[string]generate.SampleScore
		firstModel, firstLabel := "", ""
		for ci, c := range td.Columns {
			byID := map[string]generate.SampleScore{}
			var vals []float64
			for _, sd := range td.Samples {
				if sd.Fingerprint != c.Fingerprint || sd.Under[ci] == nil {
					continue
				}
				v, ok := sd.Under[ci].Value(m)
				if !ok {
					continue
				}
				vals = append(vals, v)
				byID[sd.ID] = generate.SampleScore{SampleID: sd.ID, Value: v, Prediction: sd.Under[ci].Prediction}
			}
			if len(vals) == 0 {
				continue
			}
			row := Row{Task: td.label(), Variant: td.Task, Metric: m, Setting: c.Label, Model: c.Model, Stop: c.Setting, Seqs: nonNil(c.Seqs()), Budget: c.Budget,
				N: len(vals), Scored: len(vals), Mean: interval(stats.BoundedMeanInterval(vals, Level)), Stderr: generate.Mean(stats.MeanStderr(vals))}
			if first == nil || c.Model != firstModel {
				first, firstModel, firstLabel = byID, c.Model, c.Label
			} else {
				row.Against = firstLabel
				ids := make([]string, 0, len(byID))
				for id := range byID {
					ids = append(ids, id)
				}
				sort.Strings(ids)
				var a, b []float64
				for _, id := range ids {
					x, ok := first[id]
					if !ok {
						continue
					}
					y := byID[id]
					a, b = append(a, x.Value), append(b, y.Value)
					if x.Value != y.Value {
						row.Changed = append(row.Changed, Changed{id, generate.Mean(x.Value), generate.Mean(y.Value), x.Prediction, y.Prediction})
					}
				}
				row.Diff = pairedInterval(a, b)
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// mixedStore holds two models, two tasks, numeric and other sample ids,
// non-binary values, a NULL value, a sample only one setting scored, a
// setting with two sequences and two budgets of one task.
func mixedStore(t *testing.T) *store.Store {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for _, m := range []string{"b-model", "a-model"} {
		if _, err := st.StartRun(ctx, store.Run{Command: "run", Model: m, Fingerprint: "fp-" + m, Config: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	ids := []string{"10", "9", "x-2", "100", "x-10", "1", "b", "a"}
	var gens []store.Generation
	var scores []store.Score
	for mi, m := range []string{"a-model", "b-model"} {
		for ti, task := range []string{"t1", "t2"} {
			for i, id := range ids {
				key := fmt.Sprintf("%x", mi*1000+ti*100+i)
				gens = append(gens, store.Generation{Key: key, Fingerprint: "fp-" + m, Task: task, SampleID: id, Text: "x", Finish: "eos", Budget: 16, Stops: json.RawMessage(`{}`)})
				for si, set := range []struct{ name, key string }{{"nl", "\n"}, {"both", ".\x00\n"}, {"none", ""}} {
					if si == 1 && i == 3 {
						continue // only some settings scored this sample
					}
					for _, budget := range []int{16, 32} {
						if task == "t1" && budget == 32 {
							continue
						}
						for _, metric := range []string{"f1", "em"} {
							v := math.Mod(float64(i*7+si*3+mi+budget), 5) / 4
							if metric == "em" {
								v = math.Floor(v)
							}
							if i == 5 && si == 2 {
								v = math.NaN() // stored as NULL
							}
							scores = append(scores, store.Score{GenKey: key, Task: task, SampleID: id, Setting: set.name, SettingKey: set.key,
								Budget: budget, Metric: metric, Value: v, Prediction: fmt.Sprintf("p%d-%d", i, si)})
						}
					}
				}
			}
		}
	}
	if err := st.PutGenerations(ctx, gens, scores); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestSummaryMatchesSamples(t *testing.T) {
	st := mixedStore(t)
	ctx := context.Background()
	filters := []store.Filter{
		{},
		{Tasks: []string{"t2"}},
		{Fingerprints: []string{"fp-b-model"}},
		{Settings: []string{"none", "both"}},
	}
	for _, f := range filters {
		t.Run(fmt.Sprintf("%+v", f), func(t *testing.T) {
			full, err := Load(ctx, st, f)
			if err != nil {
				t.Fatal(err)
			}
			sum, err := LoadSummary(ctx, st, f)
			if err != nil {
				t.Fatal(err)
			}
			if len(full.Tasks) == 0 || len(full.Tasks) != len(sum.Tasks) {
				t.Fatalf("%d tasks in full, %d in summary", len(full.Tasks), len(sum.Tasks))
			}
			for i, td := range full.Tasks {
				want := referenceRows(td)
				if len(want) == 0 {
					t.Fatalf("%s: no rows", td.Task)
				}
				if js(td.Rows) != js(want) {
					t.Errorf("%s: Load rows\n%s\nwant\n%s", td.Task, js(td.Rows), js(want))
				}
				s := sum.Tasks[i]
				if s.Samples != nil || !reflect.DeepEqual(s.Columns, td.Columns) || !reflect.DeepEqual(s.Metrics, td.Metrics) {
					t.Errorf("%s: summary columns %v metrics %v, %d samples", s.Task, s.Columns, s.Metrics, len(s.Samples))
				}
				if js(s.Rows) != js(want) {
					t.Errorf("%s: LoadSummary rows\n%s\nwant\n%s", s.Task, js(s.Rows), js(want))
				}
			}
		})
	}
}

func js(rows []Row) string {
	b, err := json.Marshal(rows)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// FuzzCompareIDs: compareIDs orders ids as it did with strconv.Atoi's
// errors (numerically when both are numbers, else as strings).
func FuzzCompareIDs(f *testing.F) {
	for _, s := range [][2]string{{"1", "10"}, {"+2", "-3"}, {"a", "1"}, {"", "0"}, {"99999999999999999999", "1"}, {"12a", "12"}, {"-", "+"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		want := cmp.Compare(a, b)
		if x, ex := strconv.Atoi(a); ex == nil {
			if y, ey := strconv.Atoi(b); ey == nil {
				want = cmp.Compare(x, y)
			}
		}
		if got := compareIDs(a, b); got != want {
			t.Errorf("compareIDs(%q, %q) = %d, want %d", a, b, got, want)
		}
	})
}

// TestPointSize: a score held by a load is 12 bytes, and its key row (what
// a key's scores share) 12 (issue 23: 2.4 million scores of 600,000
// keys); a value comes back bit for bit; a key's scores under several
// metrics share one row, and a key met again after another gets a new
// one.
func TestPointSize(t *testing.T) {
	if n, k := unsafe.Sizeof(point{}), unsafe.Sizeof(keyRow{}); n != 12 || k != 12 {
		t.Errorf("a point is %d bytes and a key row %d, want 12 and 12", n, k)
	}
	for _, v := range []float64{0, math.Copysign(0, -1), 1, 0.1, -3.5e300, math.Inf(1), math.NaN(), math.SmallestNonzeroFloat64} {
		p := newPoint(7, v)
		if got := p.val(); math.Float64bits(got) != math.Float64bits(v) || p.row != 7 {
			t.Errorf("newPoint(%v) = %+v, value %v", v, p, got)
		}
	}
	keys := &chunked[keyRow]{}
	em, f1 := &series{keys: keys}, &series{keys: keys}
	for i := range 3 * (1 << chunkBits) {
		k := keyRow{int32(i / 2), int32(i), int32(i % 5)} // each sample twice, under two generations
		em.addScore(k.idx, k.gen, k.pred, float64(i))
		f1.addScore(k.idx, k.gen, k.pred, -float64(i))
		em.addScore(k.idx, k.gen, k.pred, float64(i)+0.5) // the same key again at once: the same row
	}
	if keys.n != 3*(1<<chunkBits) || em.n != 2*keys.n || f1.n != keys.n {
		t.Fatalf("%d key rows, %d and %d points, want %d, %d and %d", keys.n, em.n, f1.n, 3*(1<<chunkBits), 6*(1<<chunkBits), 3*(1<<chunkBits))
	}
	i := 0
	for p := range f1.all() {
		if k := f1.key(p); *k != (keyRow{int32(i / 2), int32(i), int32(i % 5)}) || p.val() != -float64(i) {
			t.Fatalf("point %d of f1: key %+v value %v", i, *k, p.val())
		}
		i++
	}
}

// FuzzStoredSample: a stored sample's metadata column read as ToStore
// writes it gives what decoding it gives.
func FuzzStoredSample(f *testing.F) {
	for _, raw := range []string{
		`{"metadata":null,"share_key":"scale00-00000","index":0,"doc":{"passage":"Jon. \"Tom\" <joined>","query_id":"q","target":"2017"},"target":" 2017"}`,
		`{"metadata":{"lang":"en","n":[1,2,{"x":null}]},"share_key":"","index":12}`,
		`{"metadata":null,"share_key":"k"}`,
		`{"metadata":null,"share_key":"k","doc":{}}`,
		`{"metadata":null,"share_key":"k","target":"a\u0026b"}`,
		`{"metadata":null,"share_key":"k","index":01}`,
		`{"metadata":null,"share_key":"k","index":-0}`,
		`{"metadata":null,"share_key":"k","index":99999999999999999999}`,
		`{"metadata":null,"share_key":"k","index":1.5}`,
		`{"metadata":null,"share_key":"k","doc":{"a":"}"}}`,
		`{"metadata":null,"share_key":"k","doc":{"a":"\\"}"}}`,
		`{"metadata":null,"share_key":"k","doc":{"a":[}}`,
		`{"metadata":{},"share_key":"k"} `,
		`{"metadata":null,"share_key":"k","target":"\xff"}`,
		`{"metadata":null,"share_key":"k","extra":1}`,
		`{"lang":"en"}`,
		`{"Metadata":null,"share_key":"k"}`,
		`{"metadata":null,"share_key":"k","metadata":{"a":1}}`,
	} {
		f.Add([]byte(raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		meta, doc, target, index, ok := storedSampleAsWritten(raw)
		if !ok {
			return
		}
		wm, wd, wt, wi := decodeStoredSample(raw)
		if !bytes.Equal(meta, wm) || !bytes.Equal(doc, wd) || (target == nil) != (wt == nil) || target != nil && *target != *wt || index != wi {
			t.Errorf("%q: read as written %q %q %v %d; decoded %q %q %v %d", raw, meta, doc, target, index, wm, wd, wt, wi)
		}
	})
}
