package report

import (
	"testing"

	"tally/internal/pyref"
)

// TestPyDumpsIndent: documents written as Python's json.dumps(indent=2,
// ensure_ascii=False) writes them (lm-eval's doc_hash), against Python:
// member order kept, Python's floats, non-ASCII as it is, control
// characters escaped, empty containers, nesting.
func TestPyDumpsIndent(t *testing.T) {
	texts := []string{
		`{"zeta": 1, "alpha": [1, 2.5, -3.0, 1e-05, 1e+16, 123456789012345678901], "mid": {"b": null, "a": true}}`,
		`{"question": "Qui a écrit « Hamlet » ?\n\t\"quoted\" \\ back\u0001\u001f\u007f\u2028", "answers": ["William Shakespeare", "Shakespeare"]}`,
		`{"empty_list": [], "empty_obj": {}, "nested": [[], [{}], [[1]]]}`,
		`[]`, `"just a string"`, `3.14`, `{"a": false}`,
	}
	var want []string
	pyref.Run(t, "testdata/pydumps.py", texts, &want)
	for i, text := range texts {
		got, err := pyDumpsIndent([]byte(text))
		if err != nil || got != want[i] {
			t.Errorf("pyDumpsIndent(%s) =\n%s\n(%v), want Python's\n%s", text, got, err, want[i])
		}
	}
}
