package report

import (
	"encoding/json"
	"time"

	"tally/store"
)

// LMEvalOptionsOf is what a store's runs say for lm-eval files: per
// fingerprint, the device and batch size its newest run was given and its
// backend, and the span from the first run's start to the last run's
// start (the store keeps no end time).
func LMEvalOptionsOf(runs []store.Run, version string) LMEvalOptions {
	opt := LMEvalOptions{Version: version, Models: map[string]LMEvalModel{}}
	for _, r := range runs { // newest first
		if _, ok := opt.Models[r.Fingerprint]; ok {
			continue
		}
		var cfg struct {
			Device      string `json:"device"`
			Concurrency int    `json:"concurrency"`
		}
		_ = json.Unmarshal(r.Config, &cfg)
		opt.Models[r.Fingerprint] = LMEvalModel{Device: cfg.Device, BatchSize: cfg.Concurrency, Backend: r.Backend}
	}
	for _, r := range runs {
		if r.StartedAt.IsZero() {
			continue
		}
		if opt.Start.IsZero() || r.StartedAt.Before(opt.Start) {
			opt.Start = r.StartedAt
		}
		if r.StartedAt.After(opt.End) {
			opt.End = r.StartedAt
		}
	}
	if opt.End.Before(opt.Start) {
		opt.End = opt.Start
	}
	opt.Now = time.Now()
	return opt
}
