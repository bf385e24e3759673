// Package imported is the backend of generations made elsewhere and imported
// into the store (lm-evaluation-harness sample logs): it identifies them and
// answers plan, rescore and compare, but cannot generate.
package imported

import (
	"context"
	"fmt"

	"tally/backends"
)

// Prefix starts a --model value that names imported generations.
const Prefix = "imported:"

// Backend stands for the model whose outputs were imported under a name.
type Backend struct{ name string }

// New returns the backend of generations imported under name.
func New(name string) *Backend { return &Backend{name: name} }

// Name is "imported".
func (b *Backend) Name() string { return "imported" }

// Fingerprint is Prefix + the import name.
func (b *Backend) Fingerprint(context.Context) (string, error) { return Prefix + b.name, nil }

// Tokenizer is nil: imported prompts are keyed by their text.
func (b *Backend) Tokenizer() backends.Tokenizer { return nil }

// ContextLength is unknown (0: no limit is checked).
func (b *Backend) ContextLength() int { return 0 }

// Slots is 1.
func (b *Backend) Slots() int { return 1 }

// Close does nothing.
func (b *Backend) Close() error { return nil }

// Generate refuses: imported outputs cannot be generated or extended.
func (b *Backend) Generate(_ context.Context, reqs []backends.Request, _ backends.Sink) error {
	return fmt.Errorf("model %s%s was imported and cannot generate: %d samples have no imported output (import them, or run another model)", Prefix, b.name, len(reqs))
}
