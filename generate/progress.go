package generate

// Progress receives progress reports; implementations must be safe for
// concurrent use.
type Progress interface {
	// Start announces the number of samples that need model work.
	Start(samples int)
	// Tokens reports n newly generated tokens. When a sample ends, n
	// corrects what was reported for it to the backend's count (negative
	// when a server streamed more pieces than tokens), so that the tokens
	// reported add up to Summary.GeneratedTokens.
	Tokens(n int)
	// SampleDone reports one finished sample.
	SampleDone()
	// Finish ends the report.
	Finish()
}

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
