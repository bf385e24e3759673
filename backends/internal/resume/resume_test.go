package resume

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"tally/backends"
)

// step is one scripted attempt: the pieces the server streams, whether it
// finishes, and the error the attempt ends with.
type step struct {
	pieces   []string
	complete bool
	err      error
}

// fakeAttempt is a backend's attempt over Progress.
type fakeAttempt struct {
	Progress
	complete bool
}

func (a *fakeAttempt) Complete(error) bool { return a.complete }

func (a *fakeAttempt) Done(r backends.Request, earlier, gen int) backends.Event {
	return backends.Event{Index: r.Index, Done: true, Finish: backends.FinishEOS, GenTokens: gen, PromptTokens: earlier}
}

// call is what the driver asked of one attempt.
type call struct {
	prior, skip string
	budget      int
}

// script runs the steps in order, recording the calls.
func script(steps []step, calls *[]call, sink backends.Sink, index int) Stream {
	n := 0
	return func(ctx context.Context, prior, skip string, budget int) (Attempt, error) {
		*calls = append(*calls, call{prior, skip, budget})
		if n >= len(steps) {
			return &fakeAttempt{Progress: Progress{SkipLeft: skip}}, errors.New("script exhausted")
		}
		s := steps[n]
		n++
		a := &fakeAttempt{Progress: Progress{SkipLeft: skip}}
		for _, p := range s.pieces {
			if err := a.Piece(index, p, sink); err != nil {
				return a, err
			}
		}
		a.complete = s.complete
		return a, s.err
	}
}

func TestRun(t *testing.T) {
	broken := errors.New("connection reset")
	for _, tc := range []struct {
		name      string
		cont      bool
		maxTokens int
		stopAfter int // the sink asks to stop after this many pieces (0: never)
		steps     []step
		wantText  string
		wantCalls []call
		wantDone  backends.Event // Index and Done are checked too
		wantErr   string
	}{
		{name: "no budget", maxTokens: 0,
			wantDone: backends.Event{Finish: backends.FinishLength}},
		{name: "clean", maxTokens: 8, steps: []step{{pieces: []string{"a", "b"}, complete: true}},
			wantText: "ab", wantCalls: []call{{"", "", 8}},
			wantDone: backends.Event{Finish: backends.FinishEOS, GenTokens: 2}},
		{name: "replayed after a break", maxTokens: 8, steps: []step{
			{pieces: []string{"a"}, err: broken},
			{pieces: []string{"a", "bc"}, complete: true}},
			wantText: "abc", wantCalls: []call{{"", "", 8}, {"", "a", 8}},
			wantDone: backends.Event{Finish: backends.FinishEOS, GenTokens: 2}},
		{name: "replay piece spans the held-back text", maxTokens: 8, steps: []step{
			{pieces: []string{"ab"}, err: broken},
			{pieces: []string{"a", "bcd"}, complete: true}},
			wantText: "abcd", wantCalls: []call{{"", "", 8}, {"", "ab", 8}},
			wantDone: backends.Event{Finish: backends.FinishEOS, GenTokens: 2}},
		{name: "diverged replay continues", maxTokens: 8, steps: []step{
			{pieces: []string{"a"}, err: broken},
			{pieces: []string{"x"}},
			{pieces: []string{"b"}, complete: true}},
			wantText: "ab", wantCalls: []call{{"", "", 8}, {"", "a", 8}, {"a", "", 7}},
			wantDone: backends.Event{Finish: backends.FinishEOS, GenTokens: 2, PromptTokens: 1}},
		{name: "replay ends early", maxTokens: 8, steps: []step{
			{pieces: []string{"ab"}, err: broken},
			{pieces: []string{"a"}, complete: true},
			{pieces: []string{"c"}, complete: true}},
			wantText: "abc", wantCalls: []call{{"", "", 8}, {"", "ab", 8}, {"ab", "", 7}},
			wantDone: backends.Event{Finish: backends.FinishEOS, GenTokens: 2, PromptTokens: 1}},
		{name: "continued", cont: true, maxTokens: 8, steps: []step{
			{pieces: []string{"a", "b"}, err: broken},
			{pieces: []string{"c"}, complete: true}},
			wantText: "abc", wantCalls: []call{{"", "", 8}, {"ab", "", 6}},
			wantDone: backends.Event{Finish: backends.FinishEOS, GenTokens: 3, PromptTokens: 2}},
		{name: "permanent", maxTokens: 8, steps: []step{{err: fmt.Errorf("%w: HTTP 400", ErrPermanent)}},
			wantCalls: []call{{"", "", 8}},
			wantDone:  backends.Event{Finish: backends.FinishError}, wantErr: "fake: request 3: not retryable: HTTP 400"},
		{name: "context overflow", maxTokens: 8, steps: []step{{err: fmt.Errorf("%w: too long", backends.ErrContextOverflow)}},
			wantCalls: []call{{"", "", 8}},
			wantDone:  backends.Event{Finish: backends.FinishContext}, wantErr: "fake: request 3: "},
		{name: "tries run out", maxTokens: 8, steps: []step{{err: broken}, {err: broken}, {err: broken}},
			wantCalls: []call{{"", "", 8}, {"", "", 8}, {"", "", 8}},
			wantDone:  backends.Event{Finish: backends.FinishError}, wantErr: "fake: request 3 failed after 3 tries: connection reset"},
		{name: "progress renews the tries", maxTokens: 8, steps: []step{
			{err: broken}, {err: broken}, {pieces: []string{"a"}, err: broken},
			{err: broken}, {err: broken}, {pieces: []string{"a", "b"}, complete: true}},
			wantText: "ab", wantCalls: []call{{"", "", 8}, {"", "", 8}, {"", "", 8}, {"", "a", 8}, {"", "a", 8}, {"", "a", 8}},
			wantDone: backends.Event{Finish: backends.FinishEOS, GenTokens: 2}},
		{name: "no final message is retried", maxTokens: 8, steps: []step{
			{pieces: []string{"a"}},
			{pieces: []string{"a", "b"}, complete: true}},
			wantText: "ab", wantCalls: []call{{"", "", 8}, {"", "a", 8}},
			wantDone: backends.Event{Finish: backends.FinishEOS, GenTokens: 2}},
		{name: "budget spent before the break", maxTokens: 2, steps: []step{{pieces: []string{"a", "b"}, err: broken}},
			wantText: "ab", wantCalls: []call{{"", "", 2}},
			wantDone: backends.Event{Finish: backends.FinishLength, GenTokens: 2}},
		{name: "sink stops", maxTokens: 8, stopAfter: 1, steps: []step{{pieces: []string{"a", "b"}, complete: true}},
			wantText: "a", wantCalls: []call{{"", "", 8}},
			wantDone: backends.Event{Finish: backends.FinishStop, GenTokens: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var text strings.Builder
			var dones []backends.Event
			pieces := 0
			sink := func(ev backends.Event) bool {
				if ev.Done {
					dones = append(dones, ev)
					return true
				}
				text.WriteString(ev.Text)
				pieces++
				return tc.stopAfter == 0 || pieces < tc.stopAfter
			}
			var calls []call
			r := backends.Request{Index: 3, MaxTokens: tc.maxTokens}
			c := Config{Name: "fake", MaxTries: 3, Continue: tc.cont, NoDone: errors.New("no final message")}
			Run(context.Background(), c, r, sink, script(tc.steps, &calls, sink, r.Index))
			if got := text.String(); got != tc.wantText {
				t.Errorf("text %q, want %q", got, tc.wantText)
			}
			if fmt.Sprint(calls) != fmt.Sprint(tc.wantCalls) {
				t.Errorf("calls %v, want %v", calls, tc.wantCalls)
			}
			if len(dones) != 1 {
				t.Fatalf("%d Done events, want 1: %+v", len(dones), dones)
			}
			d := dones[0]
			if d.Index != 3 || d.Finish != tc.wantDone.Finish || d.GenTokens != tc.wantDone.GenTokens || d.PromptTokens != tc.wantDone.PromptTokens {
				t.Errorf("done %+v, want finish %q, gen %d, prompt %d", d, tc.wantDone.Finish, tc.wantDone.GenTokens, tc.wantDone.PromptTokens)
			}
			switch {
			case tc.wantErr == "" && d.Err != nil:
				t.Errorf("error %v, want none", d.Err)
			case tc.wantErr != "" && (d.Err == nil || !strings.HasPrefix(d.Err.Error(), tc.wantErr)):
				t.Errorf("error %v, want %q…", d.Err, tc.wantErr)
			}
		})
	}
}

// TestRunDelay: the wait before a retry is Config.Delay of the number of
// tries so far and the last error.
func TestRunDelay(t *testing.T) {
	broken := errors.New("broken")
	var asked []string
	c := Config{Name: "fake", MaxTries: 3, NoDone: errors.New("no final message"),
		Delay: func(tries int, err error) time.Duration {
			asked = append(asked, fmt.Sprintf("%d:%v", tries, err))
			return time.Millisecond
		}}
	var calls []call
	sink := func(backends.Event) bool { return true }
	Run(context.Background(), c, backends.Request{MaxTokens: 4}, sink, script([]step{{err: broken}, {err: broken}, {complete: true}}, &calls, sink, 0))
	if got, want := fmt.Sprint(asked), "[1:broken 2:broken]"; got != want {
		t.Errorf("delays asked %s, want %s", got, want)
	}
}

// TestRunCancelled: a cancelled request ends without a Done event.
func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var dones int
	sink := func(ev backends.Event) bool {
		if ev.Done {
			dones++
		}
		return true
	}
	c := Config{Name: "fake", MaxTries: 3, NoDone: errors.New("no final message"),
		Delay: func(int, error) time.Duration { return time.Hour }}
	Run(ctx, c, backends.Request{MaxTokens: 4}, sink, func(context.Context, string, string, int) (Attempt, error) {
		cancel()
		return &fakeAttempt{}, context.Canceled
	})
	if dones != 0 {
		t.Errorf("%d Done events after cancel, want 0", dones)
	}
}

// FuzzPiece: whatever pieces a replay streams, the sink receives exactly
// what lies past the held-back text when the pieces reproduce it, and
// ErrDiverged is reported otherwise.
func FuzzPiece(f *testing.F) {
	f.Add("abc", "a", "bcd")
	f.Add("", "xy", "z")
	f.Add("hello", "help", "")
	f.Fuzz(func(t *testing.T, skip, p1, p2 string) {
		var got strings.Builder
		sink := func(ev backends.Event) bool { got.WriteString(ev.Text); return true }
		p := Progress{SkipLeft: skip}
		err := p.Piece(0, p1, sink)
		if err == nil {
			err = p.Piece(0, p2, sink)
		}
		all := p1 + p2
		ok := strings.HasPrefix(all, skip)
		if !ok {
			// A replay that stops short of the held-back text but agrees
			// with it so far has not diverged yet.
			ok = strings.HasPrefix(skip, all)
		}
		// Empty pieces are ignored, so only the non-empty ones count for
		// divergence; agreement of the concatenation decides it.
		if ok != (err == nil) {
			t.Fatalf("skip %q, pieces %q %q: err %v", skip, p1, p2, err)
		}
		if err != nil {
			return
		}
		want := ""
		if len(all) > len(skip) {
			want = all[len(skip):]
		}
		if got.String() != want || p.Text.String() != want {
			t.Fatalf("skip %q, pieces %q %q: sink got %q, text %q, want %q", skip, p1, p2, got.String(), p.Text.String(), want)
		}
	})
}
