package generate

// TokenProgress is an optional extension of Progress: a Progress that
// also implements it is told the tokens a run will prefill and may
// generate, and each sample's tokens and failure as the sample ends, so it
// can count tokens and estimate the time left from them.
type TokenProgress interface {
	Progress
	// Work announces the prompt tokens to prefill (counted where the plan
	// knows the prompt's ids) and the new-token budget of the samples.
	Work(promptTokens, budget int)
	// SampleEnded reports a finished sample: its id (task/id), prompt
	// tokens prefilled, token budget, tokens generated, and its error text
	// ("" when it did not fail).
	SampleEnded(id string, promptTokens, budget, generated int, errText string)
}

// workTokens sums, as the plan does, the prompt tokens to prefill (the
// prompt and any stored prefix, where the ids are known; an overflowing
// prompt is never prefilled) and the token budgets of items.
func workTokens(items []*Item, ctxLen int) (prompt, budget int) {
	for _, it := range items {
		budget += it.NewTokens
		if overflows(it, ctxLen) {
			continue
		}
		prompt += len(it.PromptIDs)
		if it.Continue && it.Stored != nil {
			prompt += it.Stored.NTokens
		}
	}
	return prompt, budget
}
