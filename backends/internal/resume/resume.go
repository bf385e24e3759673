// Package resume drives one request of a streaming server backend (ollama,
// openai) to its Done event across broken streams: an attempt that breaks
// after streaming text is resumed, either replayed from the start with the
// text already streamed held back (greedy decoding reproduces it; the
// server's own accounting of the whole answer stays exact) or continued
// after that text with the budget that is left; attempts are retried with
// back-off while they make no progress, up to a number of tries, and a
// replay that diverges from the streamed text falls back to continuing.
//
// The streamed text reaches the sink once, in order, whatever the attempts.
package resume

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"tally/backends"
	"tally/backends/internal/retry"
)

var (
	// ErrSinkStop is what an attempt returns when the sink asked to stop.
	ErrSinkStop = errors.New("sink asked to stop")
	// ErrDiverged is what an attempt returns when a replay streams text
	// other than what was streamed before.
	ErrDiverged = errors.New("replay diverged from the streamed text")
	// ErrPermanent marks an error that another try will not cure (a 4xx
	// answer other than 408 and 429).
	ErrPermanent = errors.New("not retryable")
)

// Progress is the text one attempt streamed; a backend's attempt embeds it
// and passes every streamed piece to Piece.
type Progress struct {
	// Text is the text this attempt sent to the sink.
	Text strings.Builder
	// Pieces counts the non-empty pieces sent to the sink.
	Pieces int
	// SkipLeft is the replayed text not yet reproduced.
	SkipLeft string
}

// progress gives the driver the Progress embedded in a backend's attempt.
func (p *Progress) progress() *Progress { return p }

// Piece takes one streamed piece of request index: while a replay has
// text left to reproduce, the piece must reproduce it (ErrDiverged
// otherwise) and is held back; the rest goes to the sink (ErrSinkStop when
// the sink asks to stop).
func (p *Progress) Piece(index int, text string, sink backends.Sink) error {
	if p.SkipLeft != "" && text != "" {
		switch {
		case strings.HasPrefix(p.SkipLeft, text):
			p.SkipLeft = p.SkipLeft[len(text):]
			text = ""
		case strings.HasPrefix(text, p.SkipLeft):
			text = text[len(p.SkipLeft):]
			p.SkipLeft = ""
		default:
			return ErrDiverged
		}
	}
	if text != "" {
		p.Text.WriteString(text)
		p.Pieces++
		if !sink(backends.Event{Index: index, Text: text}) {
			return ErrSinkStop
		}
	}
	return nil
}

// Attempt is one streamed attempt as the driver sees it: a backend's
// attempt type that embeds Progress.
type Attempt interface {
	progress() *Progress
	// Complete reports whether the server finished its answer in this
	// attempt, which ended with err.
	Complete(err error) bool
	// Done is the final event of a complete attempt of r: earlier counts
	// the pieces of the broken attempts it continued (0 for a replay),
	// gen every piece streamed for r.
	Done(r backends.Request, earlier, gen int) backends.Event
}

// Config is a backend's retry policy.
type Config struct {
	// Name prefixes errors ("ollama", "openai").
	Name string
	// MaxTries bounds the attempts in a row that stream nothing new.
	MaxTries int
	// Continue resumes a broken stream by continuing after the streamed
	// text rather than replaying the request.
	Continue bool
	// Delay is the wait before the tries-th retry after err (tries ≥ 1).
	Delay func(tries int, err error) time.Duration
	// NoDone is the error of a stream that ended without finishing.
	NoDone error
}

// Stream runs one attempt with budget new tokens: the request continued
// after prior (the text streamed by earlier attempts), or replayed from
// the start with the pieces reproducing skip held back (Progress.SkipLeft
// starts as skip). It returns the attempt even when it fails.
type Stream func(ctx context.Context, prior, skip string, budget int) (Attempt, error)

// Run drives request r to its Done event (unless ctx ends first, in which
// case no Done event is sent).
func Run(ctx context.Context, c Config, r backends.Request, sink backends.Sink, stream Stream) {
	done := func(finish string, err error, gen int) {
		sink(backends.Event{Index: r.Index, Done: true, Finish: finish, Err: err, GenTokens: gen})
	}
	if r.MaxTokens <= 0 {
		done(backends.FinishLength, nil, 0)
		return
	}
	var (
		streamed strings.Builder // text streamed so far (by every attempt)
		gen      int             // pieces streamed so far
		tries    int             // attempts since the last progress
		lastErr  error
		replay   = !c.Continue
	)
	for {
		if ctx.Err() != nil {
			return
		}
		if tries >= c.MaxTries {
			done(backends.FinishError, fmt.Errorf("%s: request %d failed after %d tries: %w", c.Name, r.Index, tries, lastErr), gen)
			return
		}
		if tries > 0 {
			var d time.Duration
			if c.Delay != nil {
				d = c.Delay(tries, lastErr)
			}
			if !retry.Sleep(ctx, d) {
				return
			}
		}
		tries++
		prior, skip, budget, earlier := "", "", r.MaxTokens, 0
		if gen > 0 {
			if replay {
				skip = streamed.String()
			} else {
				prior, budget, earlier = streamed.String(), max(r.MaxTokens-gen, 1), gen
			}
		}
		a, err := stream(ctx, prior, skip, budget)
		p := a.progress()
		if p.Pieces > 0 {
			tries = 0 // progress: a fresh budget of tries for the rest
			streamed.WriteString(p.Text.String())
			gen += p.Pieces
		}
		complete := a.Complete(err)
		switch {
		case errors.Is(err, ErrSinkStop):
			done(backends.FinishStop, nil, gen)
			return
		case ctx.Err() != nil:
			return
		case errors.Is(err, backends.ErrContextOverflow):
			done(backends.FinishContext, fmt.Errorf("%s: request %d: %w", c.Name, r.Index, err), gen)
			return
		case err == nil && complete && p.SkipLeft == "":
			sink(a.Done(r, earlier, gen))
			return
		case err == nil && complete:
			err = ErrDiverged // the replay ended before reproducing the text
		case err == nil:
			err = c.NoDone
		}
		if errors.Is(err, ErrDiverged) {
			// Not reproducible (should not happen with greedy decoding):
			// continue after the streamed text instead, at once.
			replay = false
			tries--
			continue
		}
		lastErr = err
		if errors.Is(err, ErrPermanent) {
			done(backends.FinishError, fmt.Errorf("%s: request %d: %w", c.Name, r.Index, err), gen)
			return
		}
		if gen >= r.MaxTokens {
			// The budget was spent before the stream broke.
			done(backends.FinishLength, nil, gen)
			return
		}
	}
}
