package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"

	"tally/internal/pgtest"
)

// BenchmarkDemoClaimOverhead runs the native demo (tally demo, default
// flags, a fresh store each time) and reports the share of its wall time
// spent claiming work and looking at what peers stored (claim_seconds /
// seconds of the JSON summary; issue 15's target is below 5%), on a SQLite
// file and, when a server is named, on PostgreSQL.
func BenchmarkDemoClaimOverhead(b *testing.B) {
	for _, eng := range []string{"sqlite", "postgres"} {
		b.Run(eng, func(b *testing.B) {
			var secs, claim float64
			for i := 0; i < b.N; i++ {
				db := filepath.Join(b.TempDir(), "d.db")
				if eng == "postgres" {
					db = pgtest.NewDatabase(b)
				}
				out, err := exec.Command(built, "demo", "--store", db, "--json").Output()
				if err != nil {
					b.Fatal(err)
				}
				var s struct {
					Seconds      float64 `json:"seconds"`
					ClaimSeconds float64 `json:"claim_seconds"`
				}
				if err := json.Unmarshal(out, &s); err != nil {
					b.Fatal(err)
				}
				secs += s.Seconds
				claim += s.ClaimSeconds
			}
			b.ReportMetric(claim/secs, "claim-share")
			b.ReportMetric(secs/float64(b.N), "run-s")
		})
	}
}
