package report

import (
	"bytes"
	"encoding/json"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The browser's chunk as encoding/json wrote it before it was written by
// hand: values a map.
type (
	mapChunk struct {
		Prompts []string  `json:"p"`
		Items   []mapItem `json:"i"`
	}
	mapItem struct {
		Prompt int       `json:"p"`
		Gold   []string  `json:"g"`
		Text   string    `json:"x"`
		Finish string    `json:"f"`
		Error  string    `json:"e,omitempty"`
		Failed string    `json:"fr,omitempty"`
		Cut    bool      `json:"imp,omitempty"`
		Under  []mapEval `json:"u"`
	}
	mapEval struct {
		Col        int                `json:"c"`
		Cut        int                `json:"cut"`
		Seq        string             `json:"seq,omitempty"`
		Prediction string             `json:"pred"`
		Values     map[string]float64 `json:"v"`
	}
)

// asMaps is c in the encoding/json form.
func asMaps(c *browserChunk) mapChunk {
	m := mapChunk{Prompts: c.Prompts}
	if c.Items != nil {
		m.Items = []mapItem{}
	}
	for _, it := range c.Items {
		mi := mapItem{it.Prompt, it.Gold, it.Text, it.Finish, it.Error, it.Failed, it.Cut, nil}
		if it.Under != nil {
			mi.Under = []mapEval{}
		}
		for _, e := range it.Under {
			vals := map[string]float64{}
			for _, v := range e.Values {
				vals[v.name] = v.value
			}
			mi.Under = append(mi.Under, mapEval{e.Col, e.Cut, e.Seq, e.Prediction, vals})
		}
		m.Items = append(m.Items, mi)
	}
	return m
}

// checkChunk fails when appendChunkJSON and encoding/json disagree on c.
func checkChunk(t *testing.T, c *browserChunk) {
	t.Helper()
	var want bytes.Buffer
	if err := json.NewEncoder(&want).Encode(asMaps(c)); err != nil {
		t.Fatal(err)
	}
	if got := appendChunkJSON(nil, c); !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("hand-written chunk\n%s\nencoding/json\n%s", got, want.Bytes())
	}
	var direct bytes.Buffer
	if err := json.NewEncoder(&direct).Encode(c); err != nil || !bytes.Equal(direct.Bytes(), want.Bytes()) {
		t.Fatalf("encoding/json of the chunk itself (%v)\n%s\nwant\n%s", err, direct.Bytes(), want.Bytes())
	}
}

var chunkStrings = []string{"", "7.5", " 12.5\n\nPassage: x", "<b>&amp;</b> \"q\" \\", "\x00\x01\b\f\t\r\x1f\x7f", "\u2028\u2029 é 日本 🙂",
	"bad \xff\xfe utf8 \xe2\x82", "'single' `back`"}

var chunkFloats = []float64{0, 1, -1, 0.5, 1.0 / 3, 1e-6, 9.99e-7, 1e-7, 1.5e-10, 1e20, 1e21, 123456789012345678901234.0, -2.5e-8, math.MaxFloat64, math.SmallestNonzeroFloat64, 0.1 + 0.2}

// TestChunkJSON: the sample browser's chunks written by hand are the
// bytes encoding/json writes (nil and empty lists, omitted fields, every
// escape, floats of every magnitude).
func TestChunkJSON(t *testing.T) {
	checkChunk(t, &browserChunk{})
	checkChunk(t, &browserChunk{Prompts: []string{}, Items: []browserItem{}})
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		checkChunk(t, randomChunk(r))
	}
}

func randomChunk(r *rand.Rand) *browserChunk {
	str := func() string {
		return chunkStrings[r.IntN(len(chunkStrings))] + chunkStrings[r.IntN(len(chunkStrings))]
	}
	c := &browserChunk{}
	for range r.IntN(3) {
		c.Prompts = append(c.Prompts, str())
	}
	for range r.IntN(4) {
		it := browserItem{Prompt: r.IntN(100) - 1, Text: str(), Finish: str(), Error: str(), Failed: str(), Cut: r.IntN(2) == 0}
		if r.IntN(3) > 0 {
			it.Gold = []string{}
			for range r.IntN(3) {
				it.Gold = append(it.Gold, str())
			}
		}
		if r.IntN(4) > 0 {
			it.Under = []browserEval{}
			for range r.IntN(3) {
				vals := map[string]float64{}
				for range r.IntN(4) {
					vals[str()] = chunkFloats[r.IntN(len(chunkFloats))] * float64(1-2*r.IntN(2))
				}
				it.Under = append(it.Under, browserEval{Col: r.IntN(9), Cut: r.IntN(50) - 1, Seq: str(), Prediction: str(), Values: finiteValues(scoredOf(vals))})
			}
		}
		c.Items = append(c.Items, it)
	}
	return c
}

// scoredOf is a Scored of the values vals, under their metrics in name
// order.
func scoredOf(vals map[string]float64) *Scored {
	sl := scoredSlab{metrics: slices.Sorted(maps.Keys(vals))}
	sc := sl.next("", "")
	for mi, m := range sl.metrics {
		sc.set(mi, vals[m])
	}
	return sc
}

// FuzzChunkJSON is TestChunkJSON with any text and value.
func FuzzChunkJSON(f *testing.F) {
	for i, s := range chunkStrings {
		f.Add(s, chunkFloats[i])
	}
	f.Fuzz(func(t *testing.T, s string, v float64) {
		if !finite(v) {
			v = 0
		}
		checkChunk(t, &browserChunk{Prompts: []string{s}, Items: []browserItem{{Gold: []string{s}, Text: s, Finish: s, Error: s,
			Under: []browserEval{{Seq: s, Prediction: s, Values: finiteValues(scoredOf(map[string]float64{s: v, "m": v}))}}}}})
	})
}
