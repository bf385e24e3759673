package generate

import "tally/store"

// FailReason says why a stored generation failed (its backend error, or
// that its prompt exceeded the context), "" when it did not fail or is nil:
// the one rule every command and report uses to count a sample as failed.
func FailReason(g *store.Generation) string { return failReason(g) }
