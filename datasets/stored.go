package datasets

import "encoding/json"

// Stored is the JSON a stored sample's metadata column holds: the sample's
// metadata and share key (what scoring reads back), and what reports show
// of its data row (doc, target, index), which takes no part in scoring.
// It is the one definition of that format (tally/rescore writes and reads
// it; tally/report reads it).
type Stored struct {
	Metadata map[string]any  `json:"metadata"`
	ShareKey string          `json:"share_key"`
	Index    *int            `json:"index,omitempty"`
	Doc      json.RawMessage `json:"doc,omitempty"`
	Target   *string         `json:"target,omitempty"`
}

// ToStored is the stored metadata of a sample.
func ToStored(s Sample) Stored {
	return Stored{Metadata: s.Metadata, ShareKey: s.ShareKey, Index: s.Index, Doc: s.Doc, Target: s.Target}
}

// ParseStored reads a stored metadata column. Metadata written in another
// form (a bare object) is kept whole as the sample's metadata.
func ParseStored(raw []byte) (Stored, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil {
		return Stored{}, err
	}
	for k := range probe {
		switch k {
		case "metadata", "share_key", "index", "doc", "target":
		default:
			var md map[string]any
			err := json.Unmarshal(raw, &md)
			return Stored{Metadata: md}, err
		}
	}
	var st Stored
	err := json.Unmarshal(raw, &st)
	return st, err
}
