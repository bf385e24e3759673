package lmevallog

import "encoding/json"

// Own is the part a loader reads of the "tally" object tally writes beside
// each line of its own samples files (report.TallyExtra): the sample's id,
// the raw continuation, its gold answers and metadata as tally held them.
type Own struct {
	SampleID string `json:"sample_id"`
	// Raw is the raw continuation, cut at no stop sequence (already cut
	// when Imported).
	Raw      string `json:"raw"`
	Finish   string `json:"finish"`
	Imported bool   `json:"imported"`
	// Failed says why the sample failed ("": it did not).
	Failed string `json:"failed"`
	// References are the sample's gold answers as tally scores them;
	// Metadata its own metadata.
	References json.RawMessage `json:"references"`
	Metadata   json.RawMessage `json:"metadata"`
	// Notes are the sample's notes (datasets.Sample.Notes).
	Notes map[string]string `json:"notes"`
}

// Own returns what tally wrote beside the line, and whether the line is
// tally's own (a log lm-eval wrote has no "tally" object).
func (r Record) Own() (Own, bool) {
	if len(r.Tally) == 0 {
		return Own{}, false
	}
	var o Own
	if err := json.Unmarshal(r.Tally, &o); err != nil {
		return Own{}, false
	}
	return o, true
}

// OnePerDoc keeps the first record of each doc_id, in order: a samples
// file holds a document once per filter (tally's once per stop setting),
// and a task's samples are its documents.
func OnePerDoc(recs []Record) []Record {
	seen := make(map[int]bool, len(recs))
	out := recs[:0:0]
	for _, r := range recs {
		if !seen[r.DocID] {
			seen[r.DocID] = true
			out = append(out, r)
		}
	}
	return out
}
