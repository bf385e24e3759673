package pqrows

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

type answer struct {
	Value   string   `parquet:"value"`
	Aliases []string `parquet:"aliases,list"`
}

type row struct {
	Question string   `parquet:"question"`
	ID       int64    `parquet:"id"`
	Small    int32    `parquet:"small"`
	Score    float64  `parquet:"score"`
	Half     float32  `parquet:"half"`
	OK       bool     `parquet:"ok"`
	Label    *string  `parquet:"label,optional"`
	Answer   answer   `parquet:"answer"`
	Tags     []string `parquet:"tags,list"`
}

func encode[T any](t testing.TB, rows []T, groupRows int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[T](&buf, parquet.MaxRowsPerRowGroup(int64(groupRows)))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestRoundTrip writes rows of every supported kind (strings, int32/64,
// float/double, bool, a null, a struct holding a list, a list) across row
// groups and reads them back in schema order.
func TestRoundTrip(t *testing.T) {
	lbl := "x"
	rows := []row{
		{"Q1? é", 1, -2, 0.1, 0.5, true, &lbl, answer{"Paris", []string{"Paris", "City of Light"}}, []string{"a"}},
		{"Q2", 1 << 40, 7, -3.0, 0.1, false, nil, answer{"", []string{}}, nil},
		{"Q3", 0, 0, 1e300, -1.5, true, &lbl, answer{"v", nil}, []string{"b", "c"}},
	}
	got, err := Read("t.parquet", bytes.NewReader(encode(t, rows, 2)), int64(len(encode(t, rows, 2))))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got)
	want := `[{"question":"Q1? é","id":1,"small":-2,"score":0.1,"half":0.5,"ok":true,"label":"x","answer":{"value":"Paris","aliases":["Paris","City of Light"]},"tags":["a"]},` +
		`{"question":"Q2","id":1099511627776,"small":7,"score":-3,"half":0.10000000149011612,"ok":false,"label":null,"answer":{"value":"","aliases":[]},"tags":[]},` +
		`{"question":"Q3","id":0,"small":0,"score":1e+300,"half":-1.5,"ok":true,"label":"x","answer":{"value":"v","aliases":[]},"tags":["b","c"]}]`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	if v, ok := got[0].Get("small"); !ok || v != int64(-2) {
		t.Errorf("small: %v (%T)", v, v)
	}
}

type mapRow struct {
	M map[string]string `parquet:"m"`
}

func TestRefusals(t *testing.T) {
	valid := encode(t, []row{{Question: "q"}}, 10)
	for name, data := range map[string][]byte{
		"junk":      []byte("not parquet at all"),
		"empty":     nil,
		"truncated": valid[:len(valid)/2],
		"no-magic":  valid[4:],
		"map":       encode(t, []mapRow{{M: map[string]string{"a": "b"}}}, 10),
	} {
		_, err := Read(name+".parquet", bytes.NewReader(data), int64(len(data)))
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		if !strings.Contains(err.Error(), name+".parquet") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %q does not name the file on one line", name, err)
		}
	}
}

func FuzzRead(f *testing.F) {
	lbl := "y"
	f.Add(encode(f, []row{{"q", 1, 2, 3, 4, true, &lbl, answer{"v", []string{"a"}}, []string{"t"}}}, 1))
	f.Add([]byte("PAR1PAR1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, err := Read("fuzz.parquet", bytes.NewReader(data), int64(len(data)))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error on several lines: %q", err)
			}
			return
		}
		if _, err := json.Marshal(rows); err != nil {
			t.Errorf("rows do not marshal: %v", err)
		}
	})
}
