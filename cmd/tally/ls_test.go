package main

import (
	"strings"
	"testing"
)

// TestConfigSummary: tally ls shows the flags a run was given, not every
// zero value of its stored config, and keeps long lists and lines short.
func TestConfigSummary(t *testing.T) {
	long := `{"command":"import","files":["` + strings.Repeat("x", 200) + `"]}`
	for _, tc := range []struct{ raw, want string }{
		{`{"command":"demo","concurrency":0,"data":"","device":"","limit":0,"max_tokens":0,"model":"demo","samples":null,"set":null,"skip_bad":false,"stops":null,"tasks":["demo"]}`,
			"model=demo tasks=demo"},
		{`{"command":"run","limit":5,"skip_bad":true,"stops":["dot=.","nl=\\n"],"tasks":["drop","leval"],"set":{"k":"v"}}`,
			`limit=5 set={"k":"v"} skip_bad=true stops=dot=.,nl=\n tasks=drop,leval`},
		{`{"command":"import","files":["a","b","c","d"]}`, "files=a,… (4)"},
		{`{"command":"import"}`, "-"},
		{long, "files=" + strings.Repeat("x", 113) + "…"},
		{`not json`, "not json"},
	} {
		if got := configSummary([]byte(tc.raw)); got != tc.want {
			t.Errorf("configSummary(%s) = %q, want %q", tc.raw, got, tc.want)
		}
	}
}
