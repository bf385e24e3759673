package lmevallog

import (
	"encoding/json"
	"testing"
)

// TestOwn: a line tally wrote carries its raw continuation and gold
// answers in its "tally" object; a line lm-eval wrote has none; each
// document counts once however many filters logged it.
func TestOwn(t *testing.T) {
	recs := []Record{
		{DocID: 0, Tally: json.RawMessage(`{"sample_id":"q0","raw":" 7.5\n\nPassage","references":[["7.5"]],"metadata":{"answer_type":"number"}}`)},
		{DocID: 1},
		{DocID: 0, Tally: json.RawMessage(`{"sample_id":"q0","raw":"other filter"}`)},
		{DocID: 2, Tally: json.RawMessage(`not json`)},
	}
	one := OnePerDoc(recs)
	if len(one) != 3 || one[0].DocID != 0 || one[1].DocID != 1 || one[2].DocID != 2 {
		t.Fatalf("OnePerDoc: %+v", one)
	}
	for i, tc := range []struct {
		ok   bool
		raw  string
		refs string
	}{{true, " 7.5\n\nPassage", `[["7.5"]]`}, {false, "", ""}, {false, "", ""}} {
		o, ok := one[i].Own()
		if ok != tc.ok || o.Raw != tc.raw || string(o.References) != tc.refs {
			t.Errorf("record %d: %+v %v", i, o, ok)
		}
	}
}
