package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tally/store"
)

// TestChatRunsLabelled is issue 22's finding that chat and raw runs of one
// model looked identical: with a real Ollama server, a raw and a chat run
// of the same model show in `tally ls` as two models, the chat one
// labelled "(chat)" with chat=true in CONFIG; the store-only report labels
// its rows and never pairs a chat column with a raw one; compare
// --against pairs chat with chat unless --against-chat says otherwise.
func TestChatRunsLabelled(t *testing.T) {
	model := os.Getenv("TALLY_OLLAMA_MODEL")
	if model == "" || os.Getenv("OLLAMA_HOST") == "" {
		t.Skip("no Ollama server: run scripts/ollama-server.sh and eval its output (.ci/run does)")
	}
	db := filepath.Join(t.TempDir(), "c.db")
	m := "ollama:" + model
	common := []string{"--model", m, "--tasks", "demo", "--limit", "3", "--stop", "dot=.", "--stop", `nl=\n`, "--store", db}
	tallyOut(t, append([]string{"run"}, common...)...)
	tallyOut(t, append([]string{"run", "--chat"}, common...)...)
	ls := tallyOut(t, "ls", "--store", db)
	if !strings.Contains(ls, m+" (chat)") || !strings.Contains(ls, "chat=true") {
		t.Errorf("ls does not label the chat run:\n%s", ls)
	}
	checkChatRows(t, runJSON(t, "report", "--store", db, "--format", "json"), m)
	var rows []struct {
		Setting string
		Against string `json:"diff_against"`
	}
	out := runJSON(t, append([]string{"compare", "--json", "--chat", "--against", m}, common...)...)
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Against != "" && !strings.Contains(r.Against, "(chat)") {
			t.Errorf("compare --chat --against paired a chat run with a raw one: %+v", r)
		}
	}
	out = runJSON(t, append([]string{"compare", "--json", "--chat", "--against", m, "--against-chat=false"}, common...)...)
	if !strings.Contains(out, `"setting": "`+m+` dot=.`) || !strings.Contains(out, `"diff_against": "`+m+` (chat) dot=.`) {
		t.Errorf("--against-chat=false: the raw run is not labelled apart from the chat one:\n%s", out)
	}
}

// checkChatRows checks report rows of a store holding a raw and a chat
// run of one model: the chat rows are labelled "(chat)" and paired only
// with chat rows.
func checkChatRows(t *testing.T, out, model string) {
	t.Helper()
	var rows []struct {
		Setting string
		Chat    bool
		Against string `json:"diff_against"`
	}
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	chat, raw := 0, 0
	for _, r := range rows {
		if strings.HasPrefix(r.Setting, model+" (chat) ") != r.Chat {
			t.Errorf("row %+v: label and chat disagree", r)
		}
		if r.Chat {
			chat++
		} else {
			raw++
		}
		if r.Against != "" && strings.Contains(r.Against, "(chat)") != r.Chat {
			t.Errorf("row %+v paired a chat run with a raw one", r)
		}
	}
	if chat == 0 || raw == 0 {
		t.Errorf("%d chat rows, %d raw rows:\n%s", chat, raw, out)
	}
}

// TestChatLabelsFromStore: a store whose runs of one model name are a raw
// and a chat run (as server backends fingerprint them, the chat run
// recorded with chat true) lists and reports them apart, without a
// server.
func TestChatLabelsFromStore(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "c.db")
	st, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	var gens []store.Generation
	var scores []store.Score
	for _, fp := range []string{"ollama:tiny@d1", "ollama:tiny@d1:chat"} {
		cfg := `{"command":"run","tasks":["demo"]}`
		if strings.HasSuffix(fp, ":chat") {
			cfg = `{"command":"run","tasks":["demo"],"chat":true}`
		}
		if _, err := st.StartRun(ctx, store.Run{Command: "run", Model: "ollama:tiny", Fingerprint: fp, Config: json.RawMessage(cfg)}); err != nil {
			t.Fatal(err)
		}
		for i, id := range []string{"a", "b"} {
			key := fp + id
			gens = append(gens, store.Generation{Key: key, Fingerprint: fp, Task: "t", SampleID: id, Text: "1.5\n", Finish: "eos", Budget: 8, Stops: json.RawMessage(`{}`)})
			for _, set := range [][2]string{{"dot", "."}, {"nl", "\n"}} {
				scores = append(scores, store.Score{GenKey: key, Task: "t", SampleID: id, Setting: set[0], SettingKey: set[1], Budget: 8,
					Metric: "em", Value: float64(i), Prediction: "1"})
			}
		}
	}
	if err := st.PutGenerations(ctx, gens, scores); err != nil {
		t.Fatal(err)
	}
	st.Close()
	ls := tallyOut(t, "ls", "--store", db)
	if !strings.Contains(ls, "ollama:tiny (chat)") || !strings.Contains(ls, "chat=true") {
		t.Errorf("ls:\n%s", ls)
	}
	checkChatRows(t, runJSON(t, "report", "--store", db, "--format", "json"), "ollama:tiny")
	if page := tallyOut(t, "report", "--store", db, "--format", "html"); !strings.Contains(page, "ollama:tiny (chat) dot") {
		t.Errorf("HTML report does not label the chat run")
	}
}
