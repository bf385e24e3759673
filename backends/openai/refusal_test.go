package openai

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"tally/backends"
)

// TestBudgetRefusal runs requests whose budget does not fit the context
// after their prompt against each server's exact refusal: a prompt that
// fits is asked again once with the budget capped at the room it leaves,
// and ends "context-full" with the server's counts; a prompt that does not
// fit stays a context overflow, asked once; other 400s are errors, asked
// once.
func TestBudgetRefusal(t *testing.T) {
	const budget = 20
	tests := []struct {
		name    string
		ctx     int // the context length, default 12
		refusal string
		chat    bool
		prompt  string
		prefix  string // stored text to continue
		status  int    // a fault answered instead of the model, with body
		body    string
		// want: the finish, the budgets asked for in order, /tokenize calls.
		finish    string
		budgets   []int
		tokenizes int
		gen       int // tokens generated where not the last budget
	}{
		{name: "vLLM 0.9 budget", refusal: "vllm-0.9", prompt: "alpha", finish: backends.FinishContextFull, budgets: []int{budget, 7}},
		{name: "vLLM 0.9 prompt", refusal: "vllm-0.9", prompt: "bravo charlie", finish: backends.FinishContext, budgets: []int{budget}},
		{name: "vLLM 0.11 budget", refusal: "vllm-0.11", prompt: "alpha", finish: backends.FinishContextFull, budgets: []int{budget, 7}},
		{name: "vLLM 0.11 budget chat", ctx: 30, refusal: "vllm-0.11", chat: true, prompt: "a", finish: backends.FinishContextFull, budgets: []int{budget, 30 - len("<user>a<assistant>")}},
		{name: "vLLM 0.11 prompt", refusal: "vllm-0.11", prompt: "bravo charlie", finish: backends.FinishContext, budgets: []int{budget}},
		{name: "vLLM 0.11 continuation", refusal: "vllm-0.11", prompt: "alpha", prefix: "xy", finish: backends.FinishContextFull, budgets: []int{budget, 5}},
		{name: "vLLM renderer budget", refusal: "vllm-renderer", prompt: "alpha", finish: backends.FinishContextFull, budgets: []int{budget, 7}, tokenizes: 1},
		{name: "vLLM renderer budget chat", ctx: 30, refusal: "vllm-renderer", chat: true, prompt: "a", finish: backends.FinishContextFull, budgets: []int{budget, 30 - len("<user>a<assistant>")}, tokenizes: 1},
		{name: "vLLM renderer prompt", refusal: "vllm-renderer", prompt: "bravo charlie", finish: backends.FinishContext, budgets: []int{budget}, tokenizes: 1},
		{name: "SGLang budget", refusal: "sglang", prompt: "alpha", finish: backends.FinishContextFull, budgets: []int{budget, 6}},
		{name: "SGLang prompt", refusal: "sglang", prompt: "bravo charlie", finish: backends.FinishContext, budgets: []int{budget}},
		{name: "SGLang in-stream budget", refusal: "sglang-stream", prompt: "alpha", finish: backends.FinishContextFull, budgets: []int{budget, 6}},
		{name: "SGLang in-stream prompt", refusal: "sglang-stream", prompt: "bravo charlie", finish: backends.FinishContext, budgets: []int{budget}},
		{name: "llama.cpp budget", refusal: "llamacpp", prompt: "alpha", finish: backends.FinishContextFull, budgets: []int{budget}, gen: 7},
		{name: "llama.cpp budget chat", ctx: 30, refusal: "llamacpp", chat: true, prompt: "a", finish: backends.FinishContextFull, budgets: []int{budget}, gen: 30 - len("<user>a<assistant>")},
		{name: "llama.cpp prompt", refusal: "llamacpp", prompt: "bravo charlie", finish: backends.FinishContext, budgets: []int{budget}},
		{name: "budget that fits", ctx: 30, refusal: "vllm-0.11", prompt: "a", finish: backends.FinishLength, budgets: []int{budget}},
		{name: "other 400", prompt: "alpha", status: http.StatusBadRequest,
			body:   `{"error":{"message":"max_tokens must be at least 1, got 0. (parameter=max_tokens, value=0)","type":"BadRequestError","param":"max_tokens","code":400}}`,
			finish: backends.FinishError, budgets: []int{budget}},
		{name: "generic overflow without numbers", prompt: "alpha", status: http.StatusBadRequest,
			body: `{"error":{"message":"This model's maximum context length was exceeded.","type":"BadRequestError","code":400}}`,
			// /tokenize counts 5 tokens of the 4096 /v1/models reports: the
			// budget fits, the refusal is not about it.
			finish: backends.FinishContext, budgets: []int{budget}, tokenizes: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeServer(t)
			o := fastOpts(f)
			o.Chat = tc.chat
			o.APIKey = "sk-refusal-secret"
			b, err := Open(context.Background(), "tiny", o)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			f.ctxLen, f.refusal = 12, tc.refusal
			if tc.ctx > 0 {
				f.ctxLen = tc.ctx
			}
			if tc.status != 0 {
				f.fault = func(_ int, w http.ResponseWriter) (bool, int) {
					http.Error(w, tc.body, tc.status)
					return true, 0
				}
			}
			texts, done := collect(t, b, []backends.Request{{Prompt: tc.prompt, PrefixText: tc.prefix, MaxTokens: budget}}, nil)
			ev := done[0]
			if ev.Finish != tc.finish {
				t.Fatalf("finish %q (%v), want %q", ev.Finish, ev.Err, tc.finish)
			}
			var got []int
			for _, r := range f.requests() {
				got = append(got, r.MaxTokens)
			}
			if len(got) != len(tc.budgets) || got[len(got)-1] != tc.budgets[len(tc.budgets)-1] {
				t.Errorf("budgets asked %v, want %v", got, tc.budgets)
			}
			if f.tokenizes != tc.tokenizes {
				t.Errorf("%d /tokenize requests, want %d", f.tokenizes, tc.tokenizes)
			}
			switch tc.finish {
			case backends.FinishContextFull:
				room := tc.budgets[len(tc.budgets)-1]
				if tc.gen > 0 {
					room = tc.gen
				}
				r := f.requests()[len(f.requests())-1]
				if w := want(fakeContext(r), room, nil); texts[0] != w || ev.GenTokens != room || ev.PromptTokens != len(fakeContext(r)) || ev.Err != nil {
					t.Errorf("%q, %d+%d tokens, err %v; want %q, %d+%d", texts[0], ev.PromptTokens, ev.GenTokens, ev.Err, w, len(fakeContext(r)), room)
				}
			case backends.FinishContext:
				if !errors.Is(ev.Err, backends.ErrContextOverflow) || texts[0] != "" {
					t.Errorf("error %v, text %q", ev.Err, texts[0])
				}
			}
			if ev.Err != nil && strings.Contains(ev.Err.Error(), o.APIKey) {
				t.Errorf("the API key in the error: %v", ev.Err)
			}
		})
	}
}

// TestRefusalRoom reads the room from each server's message, and none
// from messages that do not count the prompt.
func TestRefusalRoom(t *testing.T) {
	tests := []struct {
		msg       string
		nPrompt   int
		nCtx      int
		room, ctx int
		ok        bool
	}{
		{msg: "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (1000 in the messages, 4000 in the completion). Please reduce the length of the messages or completion.", room: 3096, ctx: 4096, ok: true},
		{msg: "'max_tokens' or 'max_completion_tokens' is too large: 8000. This model's maximum context length is 4096 tokens and your request has 2778 input tokens (8000 > 4096 - 2778). None", room: 1318, ctx: 4096, ok: true},
		{msg: "This model's maximum context length is 4096 tokens. However, your request has 5000 input tokens. Please reduce the length of the input messages.", room: -904, ctx: 4096, ok: true},
		{msg: "The decoder prompt (length 8825) is longer than the maximum model length of 8192. Make sure that `max_model_len` is no smaller than the number of text tokens.", room: -633, ctx: 8192, ok: true},
		{msg: "Requested token count exceeds the model's maximum context length of 64000 tokens. You requested a total of 71897 tokens: 7897 tokens from the input messages and 64000 tokens for the completion. Please reduce the number of tokens in the input messages or the completion to fit within the limit.", room: 56102, ctx: 64000, ok: true},
		{msg: "The input (10009 tokens) is longer than the model's context length (128 tokens).", room: -9881, ctx: 128, ok: true},
		{msg: "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 `inputs` tokens and 200 `max_new_tokens`", room: 96, ctx: 4096, ok: true},
		{msg: "request (9000 tokens) exceeds the available context size (8192 tokens), try increasing it", room: -808, ctx: 8192, ok: true},
		{msg: "the request exceeds the available context size, try increasing it", nPrompt: 9000, nCtx: 8192, room: -808, ctx: 8192, ok: true},
		{msg: "This model's maximum context length is 32768 tokens. However, you requested 32000 output tokens and your prompt contains at least 769 input tokens, for a total of at least 32769 tokens."},
		{msg: "You passed 769 input tokens and requested 32000 output tokens. However, the model's context length is only 32768 tokens, resulting in a maximum input length of 768 tokens. Please reduce the length of the input prompt."},
		{msg: "bad field"},
	}
	for _, tc := range tests {
		he := &HTTPError{Message: tc.msg, NPromptTokens: tc.nPrompt, NCtx: tc.nCtx}
		room, ctx, ok := he.room()
		if room != tc.room || ctx != tc.ctx || ok != tc.ok {
			t.Errorf("room(%q) = %d, %d, %v; want %d, %d, %v", tc.msg, room, ctx, ok, tc.room, tc.ctx, tc.ok)
		}
		if tc.ok && !isContextOverflow("", tc.msg) {
			t.Errorf("isContextOverflow(%q) = false", tc.msg)
		}
	}
}
