package openai

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestBaseURLSecrets (issue 37, item 5): a credential in --base-url's
// query (?api_key=…, key=, token=) or user info is no part of the model's
// fingerprint nor of any message, while the query still reaches the
// server with every request; a base URL without one keeps the fingerprint
// it had (generation keys are made from it).
func TestBaseURLSecrets(t *testing.T) {
	var mu sync.Mutex
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		queries = append(queries, r.URL.Path+"?"+r.URL.RawQuery)
		mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/models") {
			w.Write([]byte(`{"object":"list","data":[{"id":"tiny","object":"model"}]}`))
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	tests := []struct {
		base, ident, query string
	}{
		{"http://" + host + "/v1", "http://" + host + "/v1", ""},
		{"http://" + host + "/v1/", "http://" + host + "/v1", ""},
		{"http://" + host + "/v1?api_key=S3CRET-1", "http://" + host + "/v1", "api_key=S3CRET-1"},
		{"http://" + host + "/v1?api-version=2024-02&key=S3CRET-2", "http://" + host + "/v1?api-version=2024-02", "api-version=2024-02&key=S3CRET-2"},
		{"http://" + host + "/v1?access_token=S3CRET-3&x=1", "http://" + host + "/v1?x=1", "access_token=S3CRET-3&x=1"},
		{"http://" + host + "/v1?x=1", "http://" + host + "/v1?x=1", "x=1"},
		{"http://user:S3CRET-4@" + host + "/v1", "http://" + host + "/v1", ""},
	}
	for _, tc := range tests {
		t.Run(tc.base, func(t *testing.T) {
			ctx := context.Background()
			mu.Lock()
			queries = nil
			mu.Unlock()
			b, err := Open(ctx, "tiny", Options{BaseURL: tc.base})
			if err != nil {
				t.Fatal(err)
			}
			fp, err := b.Fingerprint(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if want := "openai:" + tc.ident + "|tiny|"; !strings.HasPrefix(fp, want) || strings.Contains(fp, "S3CRET") {
				t.Errorf("fingerprint %q, want %q…", fp, want)
			}
			mu.Lock()
			if len(queries) == 0 || queries[0] != "/v1/models?"+tc.query {
				t.Errorf("requests %q, want /v1/models?%s", queries, tc.query)
			}
			mu.Unlock()
			if _, err := Open(ctx, "missing", Options{BaseURL: tc.base}); err == nil || strings.Contains(err.Error(), "S3CRET") {
				t.Errorf("error %v: want it without the credential", err)
			}
		})
	}
	if _, err := Open(context.Background(), "tiny", Options{BaseURL: "ftp://h/v1?api_key=S3CRET-5"}); err == nil || strings.Contains(err.Error(), "S3CRET") {
		t.Errorf("bad base URL: %v; want it refused without the credential", err)
	}
	srv.Close() // no server: the HTTP client's error names the URL
	if _, err := Open(context.Background(), "tiny", Options{BaseURL: "http://" + host + "/v1?api_key=S3CRET-6", MaxTries: 1}); err == nil || strings.Contains(err.Error(), "S3CRET") {
		t.Errorf("no server: %v; want the error without the credential", err)
	}
}
