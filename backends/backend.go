// Package backends defines the contract between tally's generation pipeline
// and the engines that run models (the native gomlx backend, an Ollama
// server). A backend receives requests and streams events; it never applies
// stop sequences itself beyond an optional early-stop hint: truncation belongs
// to package generate, so every backend behaves the same.
package backends

import (
	"context"
	"errors"
)

// Finish reasons recorded for a generation.
const (
	FinishEOS     = "eos"     // the model produced an end-of-sequence token
	FinishStop    = "stop"    // every requested stop setting matched (set by generate)
	FinishLength  = "length"  // the token budget was spent
	FinishContext = "context" // the prompt does not fit the model's context (a failure)
	FinishError   = "error"   // the backend failed for this request
	// FinishContextFull: the generation filled the model's context (the
	// token budget asked for more than the context had room for after the
	// prompt, and the budget was capped to that room). Not a failure: the
	// text is scored like any other, and a longer budget cannot extend it.
	FinishContextFull = "context-full"
)

// ErrContextOverflow is returned (wrapped) when a prompt cannot fit the
// model's context window.
var ErrContextOverflow = errors.New("prompt exceeds the model's context")

// Request is one generation to run. Exactly one of Prompt or PromptIDs is
// the prompt: PromptIDs when the backend tokenises locally (Tokenizer() is
// not nil), else Prompt as text.
type Request struct {
	// Index identifies the request inside one Generate call; events carry it.
	Index int
	// Prompt is the prompt text, for backends that tokenise server-side.
	Prompt string
	// PromptIDs is the tokenised prompt, for backends with a local tokenizer.
	PromptIDs []int
	// Prefix is earlier output to continue from: token ids for a local
	// tokenizer, appended after the prompt and prefilled, not regenerated.
	Prefix []int
	// PrefixText is earlier output as text, for server-side tokenisation.
	PrefixText string
	// MaxTokens is the number of new tokens allowed after Prefix.
	MaxTokens int
	// StopHint lists stop sequences shared by every setting; a backend may
	// end generation early on them (to save compute). Generate stays the
	// authority on truncation.
	StopHint []string
	// ShareKey marks requests that share a prompt prefix (an L-Eval document
	// with several questions); a backend may reuse prefill across them.
	ShareKey string
}

// Event is one streamed step of a request. Pieces come in order; the last
// event of a request has Done set.
type Event struct {
	// Index is the Request.Index this event belongs to.
	Index int
	// Text is the decoded text of the new tokens (may be empty while a
	// multi-byte character is incomplete).
	Text string
	// IDs are the new token ids (empty for server backends that do not
	// report them).
	IDs []int
	// Done marks the final event of the request.
	Done bool
	// Finish is the reason generation ended (set when Done).
	Finish string
	// PromptTokens and GenTokens are counts reported with the final event.
	PromptTokens, GenTokens int
	// Err describes a failure (Finish is FinishError or FinishContext).
	Err error
}

// Sink receives events. Returning false asks the backend to stop that
// request (every stop setting has matched); the backend then sends a final
// Done event for it with Finish "stop".
type Sink func(Event) bool

// Backend is an engine that runs a model.
type Backend interface {
	// Name is the engine name ("gomlx", "ollama").
	Name() string
	// Fingerprint identifies the model: weights digest or server digest,
	// quantisation and backend. Generations are keyed by it.
	Fingerprint(ctx context.Context) (string, error)
	// Tokenizer returns the local tokenizer, or nil when the backend
	// tokenises server-side.
	Tokenizer() Tokenizer
	// ContextLength is the model's context window in tokens.
	ContextLength() int
	// Slots is the number of requests the backend runs at once; a scheduler
	// keeps that many in flight.
	Slots() int
	// Generate runs every request, streaming events to sink, and returns
	// when all have finished (each with a Done event) or ctx is done.
	// Per-request failures are reported in events, not as the error.
	Generate(ctx context.Context, reqs []Request, sink Sink) error
	// Close releases resources.
	Close() error
}

// Variants is implemented by a backend whose fingerprint names, beside the
// model, the arithmetic its tokens were computed in (the native engine:
// products' dtype, device, numerics version). Generations stored under
// another arithmetic are never reused; OtherArithmetic lets a plan say
// that they exist and why they do not count.
type Variants interface {
	// OtherArithmetic reports whether stored is a fingerprint of the same
	// model as current computed under another arithmetic, and how it
	// differs (e.g. "products in bfloat16, not float32").
	OtherArithmetic(current, stored string) (why string, ok bool)
}

// Tokenizer is a local tokenizer. It must be safe for concurrent use (a
// plan tokenises its prompts on every core).
type Tokenizer interface {
	// Encode tokenises text; addSpecial applies the post-processor (BOS).
	Encode(text string, addSpecial bool) ([]int, error)
	// Decode turns ids back into text, dropping special tokens when skip is set.
	Decode(ids []int, skipSpecial bool) (string, error)
}
