package lmeval

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"
)

type gsmRow struct {
	Question string `parquet:"question"`
	Answer   string `parquet:"answer"`
}

type tqAnswer struct {
	Aliases []string `parquet:"aliases,list"`
	Value   string   `parquet:"value"`
}

type tqRow struct {
	Question string   `parquet:"question"`
	ID       string   `parquet:"question_id"`
	Answer   tqAnswer `parquet:"answer"`
}

func writeParquet[T any](t *testing.T, path string, rows []T) {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[T](&buf)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// jsonlDocs reads a JSON Lines data file of the testdata.
func jsonlDocs(t *testing.T, path string) []*Map {
	t.Helper()
	docs, _, err := readRows(path, false)
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// TestParquetHubLayout writes the GSM8K and TriviaQA testdata as Parquet
// in the Hub's layouts (CONFIG/SPLIT-00000-of-00001.parquet and the
// parquet conversion's CONFIG/SPLIT/0000.parquet) and checks that a task
// reads the same prompts and targets from the folder as from JSON Lines.
func TestParquetHubLayout(t *testing.T) {
	dir := t.TempDir()
	for _, split := range []string{"test", "train"} {
		var rows []gsmRow
		for _, d := range jsonlDocs(t, filepath.Join(repoTestdata, "gsm8k/data/main", split+".jsonl")) {
			rows = append(rows, gsmRow{mustGet(d, "question").(string), mustGet(d, "answer").(string)})
		}
		writeParquet(t, filepath.Join(dir, "gsm8k", "main", split+"-00000-of-00001.parquet"), rows)
	}
	for _, split := range []string{"validation", "train"} {
		var rows []tqRow
		for _, d := range jsonlDocs(t, filepath.Join(repoTestdata, "triviaqa/data/rc.nocontext", split+".jsonl")) {
			a := mustGet(d, "answer").(*Map)
			var aliases []string
			for _, x := range mustGet(a, "aliases").([]any) {
				aliases = append(aliases, x.(string))
			}
			rows = append(rows, tqRow{mustGet(d, "question").(string), mustGet(d, "question_id").(string), tqAnswer{aliases, mustGet(a, "value").(string)}})
		}
		writeParquet(t, filepath.Join(dir, "triviaqa", "rc.nocontext", split, "0000.parquet"), rows)
	}
	for _, c := range []struct {
		yaml, jsonl, pq string
		set             map[string]string
	}{
		{"gsm8k/gsm8k.yaml", "gsm8k/data", "gsm8k", nil},
		{"triviaqa/triviaqa.yaml", "triviaqa/data", "triviaqa", map[string]string{"num_fewshot": "3"}},
	} {
		task, err := Load(filepath.Join(repoTestdata, c.yaml), c.set)
		if err != nil {
			t.Fatal(err)
		}
		want, err := task.Load(filepath.Join(repoTestdata, c.jsonl), false)
		if err != nil {
			t.Fatal(err)
		}
		got, err := task.Load(filepath.Join(dir, c.pq), false)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Samples) != len(want.Samples) || got.MultipleTarget != want.MultipleTarget {
			t.Fatalf("%s: %d samples (multiple_target %v), want %d (%v)", c.yaml, len(got.Samples), got.MultipleTarget, len(want.Samples), want.MultipleTarget)
		}
		for i := range got.Samples {
			if got.Samples[i].Prompt != want.Samples[i].Prompt || string(got.Samples[i].References) != string(want.Samples[i].References) {
				t.Errorf("%s sample %d differs:\n parquet %q %s\n jsonl   %q %s", c.yaml, i, got.Samples[i].Prompt, got.Samples[i].References,
					want.Samples[i].Prompt, want.Samples[i].References)
			}
		}
	}
}

// TestDataSpecs checks --data's forms and their one-line errors.
func TestDataSpecs(t *testing.T) {
	task, err := Load(filepath.Join(repoTestdata, "gsm8k/gsm8k.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for spec, want := range map[string]string{
		"": "no data",
		filepath.Join(repoTestdata, "gsm8k/data/main/test.jsonl"):           "also needs split train",
		"test=" + filepath.Join(repoTestdata, "gsm8k/data/main/test.jsonl"): "no file for split train",
		filepath.Join(repoTestdata, "bbh/data"):                             "no file for split test of main",
		"test=a,test=b":                                                     "given twice",
	} {
		_, err := task.Load(spec, false)
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(want)) || bytes.Contains([]byte(err.Error()), []byte("\n")) {
			t.Errorf("--data %q: %v, want one line with %q", spec, err, want)
		}
	}
	zero, err := Load(filepath.Join(repoTestdata, "gsm8k/gsm8k.yaml"), map[string]string{"num_fewshot": "0"})
	if err != nil {
		t.Fatal(err)
	}
	if l, err := zero.Load(filepath.Join(repoTestdata, "gsm8k/data/main/test.jsonl"), false); err != nil || len(l.Samples) != 6 {
		t.Errorf("0-shot from one file: %v", err)
	}
}
