package generate

import (
	"context"
	"fmt"
	"sort"

	"tally/backends"
	"tally/store"
)

// Superseded is a fingerprint of the plan's model computed under another
// arithmetic (another --dtype, device or engine numerics version) that
// holds generations of samples the plan must generate: they are not reused,
// because the fingerprint differs, and the plan says so.
type Superseded struct {
	Fingerprint string `json:"fingerprint"`
	// Why says how its arithmetic differs from the plan's.
	Why string `json:"why"`
	// Samples counts the plan's missing samples it holds a generation of.
	Samples int `json:"samples"`
}

// superseded lists, for a backend that implements backends.Variants, the
// stored fingerprints of the plan's model under another arithmetic that
// hold generations of the plan's missing samples (their keys under that
// fingerprint), in fingerprint order.
func superseded(ctx context.Context, st *store.Store, be backends.Backend, p *Plan) ([]Superseded, error) {
	v, ok := be.(backends.Variants)
	if !ok || p.Counts[Missing] == 0 {
		return nil, nil
	}
	models, err := st.Models(ctx)
	if err != nil {
		return nil, fmt.Errorf("plan: fingerprints in the store: %w", err)
	}
	fps := make([]string, 0, len(models))
	for fp := range models {
		fps = append(fps, fp)
	}
	sort.Strings(fps)
	var out []Superseded
	for _, fp := range fps {
		why, ok := v.OtherArithmetic(p.Fingerprint, fp)
		if !ok {
			continue
		}
		var keys []string
		for _, it := range p.Items {
			if it.Stored == nil {
				keys = append(keys, Key(fp, it.PromptIDs, it.Sample.Prompt))
			}
		}
		got, err := st.Generations(ctx, fp, keys)
		if err != nil {
			return nil, fmt.Errorf("plan: generations under %s: %w", fp, err)
		}
		if len(got) > 0 {
			out = append(out, Superseded{Fingerprint: fp, Why: why, Samples: len(got)})
		}
	}
	return out, nil
}
