package generate

import (
	"context"
	"fmt"

	"tally/backends"
)

// PlanKeys is the part of a plan that rescoring needs: every sample of the
// jobs as an item with its generation key and token budget, with no store
// read and no statuses (CurrentResults reads what is stored).
func PlanKeys(ctx context.Context, be backends.Backend, jobs []*Job) (*Plan, error) {
	fp, err := be.Fingerprint(ctx)
	if err != nil {
		return nil, fmt.Errorf("plan: model fingerprint: %w", err)
	}
	p := &Plan{Fingerprint: fp, Counts: map[Status]int{}, EstimatedSeconds: -1}
	if p.Items, err = keyedItems(ctx, be, fp, jobs); err != nil {
		return nil, err
	}
	return p, nil
}
