package redact

import (
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	const key = "tk-4f9a1c77e2d84b0c"
	tests := []struct {
		name, in string
		secrets  []string
		want     string
	}{
		{"plain text", "HTTP 500: internal error", nil, "HTTP 500: internal error"},
		{"literal key", "Incorrect API key provided: " + key + ".", []string{key}, "Incorrect API key provided: xxxxx."},
		{"short literal ignored", "a b c", []string{"b"}, "a b c"},
		{"bearer echoed", "Incorrect API key provided: Bearer abcDEF123456789", nil, "Incorrect API key provided: Bearer xxxxx"},
		{"bearer words kept", "missing bearer authentication", nil, "missing bearer authentication"},
		{"authorization header", "got Authorization: Bearer abc.def-123", nil, "got Authorization: Bearer xxxxx"},
		{"authorization json", `{"authorization":"Basic dXNlcjpwYXNz"}`, nil, `{"authorization":"Basic xxxxx"}`},
		{"authorization bare", "authorization=s3cr3t;", nil, "authorization=xxxxx;"},
		{"openai key shape", "key sk-proj-AbCdEf0123456789xyz rejected", nil, "key xxxxx rejected"},
		{"postgres user info", "postgres://tally:hunter2@db:5432/x", nil, "postgres://tally:xxxxx@db:5432/x"},
		{"postgres query password", "postgres://tally@db/x?sslmode=disable&password=hunter2", nil, "postgres://tally@db/x?sslmode=disable&password=xxxxx"},
		{"postgres query first", "postgresql://db/x?password=hunter2&sslmode=disable", nil, "postgresql://db/x?password=xxxxx&sslmode=disable"},
		{"key=value", "host=db port=5432 password=hunter2 dbname=x", nil, "host=db port=5432 password=xxxxx dbname=x"},
		{"key=value first", "password=hunter2 host=db", nil, "password=xxxxx host=db"},
		{"key=value spaced", "host=db password = hunter2 dbname=x", nil, "host=db password = xxxxx dbname=x"},
		{"key=value quoted", `host=db password='hun ter\'2' dbname=x`, nil, "host=db password=xxxxx dbname=x"},
		{"sslpassword", "host=db sslpassword=abc", nil, "host=db sslpassword=xxxxx"},
		{"url in message", `open store postgres://u:p4ss@h/d: dial tcp: refused`, nil, `open store postgres://u:xxxxx@h/d: dial tcp: refused`},
		{"api_key query", "GET https://x/v1?api_key=abc123 failed", nil, "GET https://x/v1?api_key=xxxxx failed"},
		{"sqlite path", "open store /tmp/results.db: disk full", nil, "open store /tmp/results.db: disk full"},
		{"empty password", "postgres://h/d?password=&sslmode=disable", nil, "postgres://h/d?password=&sslmode=disable"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := String(tc.in, tc.secrets...)
			if got != tc.want {
				t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if again := String(got, tc.secrets...); again != got {
				t.Errorf("not idempotent: %q then %q", got, again)
			}
		})
	}
}

// FuzzString: a literal secret never survives, wherever it sits in the
// text, and redacting twice changes nothing.
func FuzzString(f *testing.F) {
	f.Add("Incorrect API key provided: Bearer ", "tk-4f9a1c77e2d84b0c", " (401)")
	f.Add("postgres://u:", "hunter2", "@h/d")
	f.Add("host=h password=", "x y", " dbname=d")
	f.Fuzz(func(t *testing.T, before, secret, after string) {
		got := String(before+secret+after, secret)
		if len(secret) >= minSecret && strings.Contains(got, secret) && !strings.Contains(Mask, secret) {
			t.Errorf("secret %q survives in %q", secret, got)
		}
		if String(got, secret) != got {
			t.Errorf("not idempotent on %q", got)
		}
	})
}

// TestDropURLSecrets (issue 37, item 5): a URL's user info and the query
// parameters that carry a credential are dropped, each with its separator;
// the rest of the URL comes back byte for byte, and a URL without one
// comes back as it was.
func TestDropURLSecrets(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http://h:8000/v1", "http://h:8000/v1"},
		{"http://h/v1?x=1&y=%20z", "http://h/v1?x=1&y=%20z"},
		{"http://h/v1?api_key=K1", "http://h/v1"},
		{"http://h/v1?api-version=2024&api-key=K2", "http://h/v1?api-version=2024"},
		{"http://h/v1?key=K3&x=1#frag", "http://h/v1?x=1#frag"},
		{"http://h/v1?Token=K4&access_token=K5&sig=K6", "http://h/v1"},
		{"http://u:K7@h/v1", "http://h/v1"},
		{"http://K8@h/v1?keyspace=a", "http://h/v1?keyspace=a"},
	}
	for _, tc := range tests {
		if got := DropURLSecrets(tc.in); got != tc.want {
			t.Errorf("DropURLSecrets(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestStringURLQuery (issue 37, item 5): String masks a credential in a
// URL's query, whatever message holds the URL.
func TestStringURLQuery(t *testing.T) {
	for _, in := range []string{
		`Get "http://h/v1/models?api_key=K1SECRET": dial tcp: refused`,
		`at http://h/v1?x=1&key=K1SECRET`,
		`http://h/v1?token=K1SECRET&x=1`,
		`https://h/v1?access_token=K1SECRET`,
	} {
		if got := String(in); strings.Contains(got, "K1SECRET") || !strings.Contains(got, Mask) {
			t.Errorf("String(%q) = %q", in, got)
		}
	}
	if in := "http://h/v1?keyspace=a&x=1"; String(in) != in {
		t.Errorf("String(%q) = %q, want it unchanged", in, String(in))
	}
}
