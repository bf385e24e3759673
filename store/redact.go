package store

import "tally/internal/redact"

// redactErrors returns gens with every error text redacted (a server may
// have echoed an API key or a password into it): gens itself when none
// changes, else a copy, so the caller's records are left as they were.
func redactErrors(gens []Generation) []Generation {
	var out []Generation
	for i, g := range gens {
		if r := redact.String(g.Error); r != g.Error {
			if out == nil {
				out = append([]Generation(nil), gens...)
			}
			out[i].Error = r
		}
	}
	if out == nil {
		return gens
	}
	return out
}
