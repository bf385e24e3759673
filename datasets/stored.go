package datasets

import "encoding/json"

// Stored is the JSON a stored sample's metadata column holds: the sample's
// metadata and share key (what scoring reads back), and what reports show
// of its data row (doc, target, index), which takes no part in scoring.
// It is the one definition of that format (tally/rescore writes and reads
// it; tally/report reads its fields).
type Stored struct {
	Metadata map[string]any  `json:"metadata"`
	ShareKey string          `json:"share_key"`
	Index    *int            `json:"index,omitempty"`
	Doc      json.RawMessage `json:"doc,omitempty"`
	Target   *string         `json:"target,omitempty"`
	// Notes are the sample's notes (Sample.Notes).
	Notes map[string]string `json:"notes,omitempty"`
}

// StoredNoMetadata begins the JSON of a Stored whose sample has no
// metadata of its own, as encoding/json writes it (Metadata is the first
// field): a reader that needs only the metadata can stop there.
const StoredNoMetadata = `{"metadata":null,`

// ToStored is the stored metadata of a sample.
func ToStored(s Sample) Stored {
	return Stored{Metadata: s.Metadata, ShareKey: s.ShareKey, Index: s.Index, Doc: s.Doc, Target: s.Target, Notes: s.Notes}
}
