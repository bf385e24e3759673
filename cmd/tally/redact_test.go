package main

import (
	"bytes"
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"tally/internal/pgtest"
)

// These tests cover issue 23, finding 3: secrets a server echoes, or a
// store location holds, never reach the output or the store.

// echoKeyServer is an OpenAI-compatible server that refuses every
// generation request with an error echoing the credentials it was sent
// (as some servers do: "Incorrect API key provided: Bearer sk-…"): with
// HTTP status code, or, for code 0, inside a 200 event stream. With
// modelsCode set, /v1/models fails that way too.
func echoKeyServer(t *testing.T, code, modelsCode int) *httptest.Server {
	echo := func(r *http.Request) string {
		auth := r.Header.Get("Authorization")
		return fmt.Sprintf("Incorrect API key provided: %s (key %s)", auth, strings.TrimPrefix(auth, "Bearer "))
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		if modelsCode != 0 {
			w.WriteHeader(modelsCode)
			fmt.Fprintf(w, `{"error":{"message":%q,"type":"invalid_request_error","code":"invalid_api_key"}}`, echo(r))
			return
		}
		fmt.Fprint(w, `{"object":"list","data":[{"id":"x","object":"model","created":1,"owned_by":"test"}]}`)
	})
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
		if code == 0 {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"error\":{\"message\":%q,\"type\":\"server_error\"}}\n\n", echo(r))
			return
		}
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"error":{"message":%q,"type":"invalid_request_error","code":"invalid_api_key"}}`, echo(r))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// noSecret fails the test when secret appears in what.
func noSecret(t *testing.T, what, text, secret string) {
	t.Helper()
	if strings.Contains(text, secret) {
		t.Errorf("the secret leaked into %s:\n%s", what, text)
	}
}

// TestAPIKeyRedacted: a server echoing the API key on every status (400,
// 401, 500) and in an error event of the stream: `tally run` fails the
// samples, and neither its stderr, nor the stored generations.error, nor
// `tally plan` shows the key; a /v1/models refusal that echoes it is
// redacted too.
func TestAPIKeyRedacted(t *testing.T) {
	// Not shaped like an OpenAI key: only the literal key masks it.
	const key = "tk-4f9a1c77e2d84b0cQ"
	for _, code := range []int{400, 401, 500, 0} {
		name := fmt.Sprint(code)
		if code == 0 {
			name = "stream"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel() // 500 and stream errors are retried with back-off for ~20s
			srv := echoKeyServer(t, code, 0)
			db := filepath.Join(t.TempDir(), "k.db")
			args := []string{"--model", "openai:x", "--base-url", srv.URL + "/v1", "--tasks", "demo", "--limit", "2", "--store", db}
			cmd := exec.Command(built, append([]string{"run"}, args...)...)
			cmd.Env = append(os.Environ(), "OPENAI_API_KEY="+key)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != ExitFailed {
				t.Fatalf("run: %v, want exit status %d\n%s", err, ExitFailed, stderr.String())
			}
			if !strings.Contains(stderr.String(), "Incorrect API key provided") {
				t.Errorf("stderr does not carry the server's message:\n%s", stderr.String())
			}
			noSecret(t, "stderr", stderr.String(), key)
			stored := storedErrors(t, db)
			if len(stored) != 2 || !strings.Contains(stored[0], "Incorrect API key provided: Bearer "+redactMask) {
				t.Errorf("stored errors %q", stored)
			}
			noSecret(t, "generations.error", strings.Join(stored, "\n"), key)
			for _, f := range []string{db, db + "-wal"} {
				b, _ := os.ReadFile(f)
				noSecret(t, f, string(b), key)
			}
			plan := exec.Command(built, append([]string{"plan"}, args...)...)
			plan.Env = cmd.Env
			out, err := plan.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "failed: demo/") {
				t.Errorf("plan: %v\n%s", err, out)
			}
			noSecret(t, "tally plan", string(out), key)
		})
	}
	t.Run("models", func(t *testing.T) {
		t.Parallel()
		srv := echoKeyServer(t, 0, 401)
		cmd := exec.Command(built, "run", "--model", "openai:x", "--base-url", srv.URL+"/v1", "--tasks", "demo", "--limit", "2",
			"--store", filepath.Join(t.TempDir(), "m.db"))
		cmd.Env = append(os.Environ(), "OPENAI_API_KEY="+key)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "HTTP 401: Incorrect API key provided") {
			t.Errorf("run against a server refusing the key: %v\n%s", err, out)
		}
		noSecret(t, "the error", string(out), key)
	})
}

// redactMask is what replaces a secret.
const redactMask = "xxxxx"

// storedErrors reads generations.error of a SQLite store.
func storedErrors(t *testing.T, db string) []string {
	t.Helper()
	h, err := sql.Open("sqlite", "file:"+db+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	rows, err := h.Query(`SELECT error FROM generations ORDER BY sample_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var e string
		if err := rows.Scan(&e); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// TestStorePasswordRedacted: a PostgreSQL password given as ?password= in
// the URL, or in a key=value connection string, is masked in the "worker …
// on store …" line and every other output, and a key=value string is a
// PostgreSQL store (it was taken for a SQLite file name, creating a file
// whose name held the password).
func TestStorePasswordRedacted(t *testing.T) {
	dsn := pgtest.NewDatabase(t) // trust authentication: any password is accepted
	const pw = "hunter2-Pw9"
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("password", pw)
	u.RawQuery = q.Encode()
	kv := fmt.Sprintf("host=%s port=%s user=%s dbname=%s sslmode=disable password='%s'", u.Hostname(), u.Port(), u.User.Username(),
		strings.TrimPrefix(u.Path, "/"), pw)
	for _, tc := range []struct{ name, store string }{{"url", u.String()}, {"keyvalue", kv}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, args := range [][]string{
				{"demo", "--limit", "2", "--worker", "--store", tc.store},
				{"ls", "--store", tc.store},
				{"plan", "--model", "demo", "--tasks", "demo", "--limit", "2", "--store", tc.store},
				{"report", "--store", tc.store, "--format", "html"}, // its title names the store
			} {
				cmd := exec.Command(built, args...)
				cmd.Dir = dir
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("tally %s: %v\n%s", args[0], err, out)
				}
				if args[0] == "demo" && !strings.Contains(string(out), "password="+redactMask) {
					t.Errorf("the worker line does not name the store (redacted):\n%s", out)
				}
				noSecret(t, "tally "+args[0], string(out), pw)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("files created in the working directory: %v", ents)
			}
		})
	}
}
