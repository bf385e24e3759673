package countingstars

import (
	"bufio"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"tally/scoring/threec3h/pyjson"
)

// strictEqual compares repair values including Python's int/float
// distinction.
func strictEqual(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && (x == y || (math.IsNaN(x) && math.IsNaN(y)))
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !strictEqual(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !strictEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return a == b
}

func readLines(t *testing.T, name string) []map[string]any {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("opening vectors: %v", err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		v, _, err := pyjson.RawDecode(sc.Text())
		if err != nil {
			t.Fatalf("%s line %d: %v", name, len(out)+1, err)
		}
		out = append(out, v.(map[string]any))
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading %s: %v", name, err)
	}
	if len(out) == 0 {
		t.Fatalf("%s: no vectors", name)
	}
	return out
}

// TestRepairVectors requires RepairLoads to match json_repair.loads on
// every vector it supports, and reports how many it declines.
func TestRepairVectors(t *testing.T) {
	vs := readLines(t, "repair.jsonl")
	match, unsupported, bad := 0, 0, 0
	for i, v := range vs {
		text := v["text"].(string)
		got, err := RepairLoads(text)
		switch {
		case errors.Is(err, ErrUnsupported):
			unsupported++
		case err != nil:
			bad++
			t.Errorf("repair vector %d %q: error %v", i+1, text, err)
		case !strictEqual(got, v["expect"]):
			bad++
			t.Errorf("repair vector %d %q: got %#v, want %#v", i+1, text, got, v["expect"])
		default:
			match++
		}
	}
	t.Logf("repair vectors: %d match, %d declined (ErrUnsupported), %d mismatch, of %d", match, unsupported, bad, len(vs))
}

// TestRepairPaperEraVectors requires RepairLoadsPaperEra to match
// json_repair.loads of json_repair 0.10.1 (PaperEraJSONRepair) on every
// vector of testdata/repair0101.jsonl: the same value, an error where the
// reference raises, and ErrUnsupported only where the reference's dict has
// a non-string key or it raises RecursionError.
func TestRepairPaperEraVectors(t *testing.T) {
	vs := readLines(t, "repair0101.jsonl")
	match, unsupported := 0, 0
	for i, v := range vs {
		text := v["text"].(string)
		got, err := RepairLoadsPaperEra(text)
		wantErr, isErr := v["error"].(string)
		switch {
		case v["nonstr_keys"] == true || wantErr == "RecursionError":
			if !errors.Is(err, ErrUnsupported) {
				t.Errorf("vector %d %q: want ErrUnsupported, got %#v, %v", i+1, text, got, err)
				continue
			}
			unsupported++
		case isErr:
			if err == nil || errors.Is(err, ErrUnsupported) {
				t.Errorf("vector %d %q: the reference raises %s; got %#v, %v", i+1, text, wantErr, got, err)
				continue
			}
			match++
		case err != nil:
			t.Errorf("vector %d %q: error %v, want %#v", i+1, text, err, v["expect"])
		case !strictEqual(got, v["expect"]):
			t.Errorf("vector %d %q: got %#v, want %#v", i+1, text, got, v["expect"])
		default:
			match++
		}
	}
	t.Logf("json_repair 0.10.1 vectors: %d match, %d declined as expected, of %d", match, unsupported, len(vs))
}
