package store

import "testing"

// TestIsPostgres: every PostgreSQL connection form is recognised as such
// (a key=value string was taken for a SQLite file name, creating a file
// whose name held the password), and file names are not.
func TestIsPostgres(t *testing.T) {
	tests := []struct {
		dsn  string
		want bool
	}{
		{"postgres://u:p@h/d", true},
		{"postgresql://h/d?password=p", true},
		{"host=127.0.0.1 port=5432 dbname=x password=hunter2", true},
		{"  dbname = x   user=tally ", true},
		{`host=h password='a b\' c' dbname=x`, true},
		{"dbname=x", true},
		{"tally.db", false},
		{"/tmp/x/results.db", false},
		{"a=b", false},      // no libpq keyword
		{"run=1.db", false}, // a file name with '='
		{"./host=x", false}, // a path, not a key
		{"host='unterminated", false},
		{"host=h and more", false}, // "and" is not a pair
		{"", false},
	}
	for _, tc := range tests {
		if got := IsPostgres(tc.dsn); got != tc.want {
			t.Errorf("IsPostgres(%q) = %v, want %v", tc.dsn, got, tc.want)
		}
	}
}

// TestRedact: a store location prints without its password in any
// PostgreSQL form (the ?password= query survived before).
func TestRedact(t *testing.T) {
	tests := []struct{ in, want string }{
		{"postgres://tally:hunter2@h:5432/d", "postgres://tally:xxxxx@h:5432/d"},
		{"postgres://tally@h/d?sslmode=disable&password=hunter2", "postgres://tally@h/d?sslmode=disable&password=xxxxx"},
		{"host=h password=hunter2 dbname=d", "host=h password=xxxxx dbname=d"},
		{"tally.db", "tally.db"},
	}
	for _, tc := range tests {
		if got := Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
