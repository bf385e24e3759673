package datasets

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestStoredNoMetadata: the JSON of a Stored with no metadata begins with
// StoredNoMetadata (readers stop there), one with metadata does not.
func TestStoredNoMetadata(t *testing.T) {
	i, target := 3, " 7"
	for _, c := range []struct {
		s    Stored
		want bool
	}{
		{Stored{}, true},
		{Stored{ShareKey: "k", Index: &i, Doc: json.RawMessage(`{"a":1}`), Target: &target}, true},
		{Stored{Metadata: map[string]any{}}, false},
		{Stored{Metadata: map[string]any{"lang": "en"}, ShareKey: "k"}, false},
	} {
		b, err := json.Marshal(c.s)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.HasPrefix(string(b), StoredNoMetadata); got != c.want {
			t.Errorf("%s begins with %s: %v, want %v", b, StoredNoMetadata, got, c.want)
		}
	}
}
