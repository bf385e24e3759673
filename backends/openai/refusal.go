package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"tally/backends"
)

// A server refuses a request whose prompt plus max_tokens does not fit the
// model's context (vLLM, SGLang, TGI), where the native engine and the
// ollama backend cap the budget at the room the prompt leaves. The backend
// reads that room from the refusal and asks once more with the budget
// capped to it; a generation that then spends the capped budget filled the
// context (backends.FinishContextFull). A refusal that leaves no room (the
// prompt alone does not fit, which is all llama.cpp's server ever refuses:
// it stops a generation at the end of its context instead, see
// attempt.Done) stays a context overflow.

// refusalPatterns read the room a context refusal leaves for new tokens,
// from the exact messages of each server. Each names its numbers: ctx (the
// model's context), prompt (the request's prompt tokens); strict is set
// where the server wants prompt + max_tokens < ctx rather than ≤ ctx.
var refusalPatterns = []struct {
	re     *regexp.Regexp
	ctx    int // submatch index of the context length
	prompt int // submatch index of the prompt's tokens
	strict bool
}{
	// vLLM v0.2–v0.9, vllm/entrypoints/openai/serving_engine.py
	// (OpenAIServing._validate_input): "This model's maximum context length
	// is %d tokens. However, you requested %d tokens (%d in the messages, %d
	// in the completion). Please reduce the length of the messages or
	// completion."
	{re: regexp.MustCompile(`maximum context length is (\d+) tokens\. However, you requested \d+ tokens \((\d+) in the messages, \d+ in the completion\)`), ctx: 1, prompt: 2},
	// vLLM v0.10–v0.11, the same file and function: "'max_tokens' or
	// 'max_completion_tokens' is too large: %d. This model's maximum context
	// length is %d tokens and your request has %d input tokens (%d > %d -
	// %d)." (with " (parameter=max_tokens, value=%d)" appended by newer
	// releases' VLLMValidationError).
	{re: regexp.MustCompile(`is too large: \d+\. This model's maximum context length is (\d+) tokens and your request has (\d+) input tokens`), ctx: 1, prompt: 2},
	// vLLM v0.10–v0.11, same function, the prompt alone: "This model's
	// maximum context length is %d tokens. However, your request has %d
	// input tokens. Please reduce the length of the input messages."
	{re: regexp.MustCompile(`maximum context length is (\d+) tokens\. However, your request has (\d+) input tokens`), ctx: 1, prompt: 2},
	// vLLM v0.6+ engine check, vllm/v1/engine/processor.py (later
	// input_processor.py, _validate_model_input): "The decoder prompt
	// (length %d) is longer than the maximum model length of %d." (the
	// prompt alone).
	{re: regexp.MustCompile(`prompt \(length (\d+)\)(?: plus the number of requested output tokens \(at least 1\))? is longer than the maximum model length of (\d+)`), ctx: 2, prompt: 1},
	// SGLang v0.4+, python/sglang/srt/managers/tokenizer_manager.py
	// (_validate_token_len): "Requested token count exceeds the model's
	// maximum context length of %d tokens. You requested a total of %d
	// tokens: %d tokens from the input messages and %d tokens for the
	// completion. ..." It refuses input + max_new_tokens ≥ context_len.
	{re: regexp.MustCompile(`maximum context length of (\d+) tokens\. You requested a total of \d+ tokens: (\d+) tokens from the input messages`), ctx: 1, prompt: 2, strict: true},
	// SGLang, same function, the prompt alone: "The input (%d tokens) is
	// longer than the model's context length (%d tokens)."
	{re: regexp.MustCompile(`The input \((\d+) tokens\) is longer than the model's context length \((\d+) tokens\)`), ctx: 2, prompt: 1},
	// TGI v1–v3, router/src/validation.rs (ValidationError::MaxTotalTokens):
	// "Input validation error: `inputs` tokens + `max_new_tokens` must be <=
	// %d. Given: %d `inputs` tokens and %d `max_new_tokens`".
	{re: regexp.MustCompile("`inputs` tokens \\+ `max_new_tokens` must be <= (\\d+)\\. Given: (\\d+) `inputs` tokens"), ctx: 1, prompt: 2},
	// llama.cpp's server, tools/server/server-context.cpp (b6000+): "request
	// (%d tokens) exceeds the available context size (%d tokens), try
	// increasing it" (the prompt alone; the same numbers are the error's
	// n_prompt_tokens and n_ctx, read by parseError).
	{re: regexp.MustCompile(`request \((\d+) tokens\) exceeds the available context size \((\d+) tokens\)`), ctx: 2, prompt: 1},
}

// room reads from a context refusal how many new tokens the server would
// accept after the prompt (≤ 0: the prompt alone does not fit); ok is false
// when the refusal does not say. Some of vLLM's messages (v0.12+,
// vllm/renderers/params.py, "You passed %d input tokens and requested %d
// output tokens. However, the model's context length is only %d tokens",
// or "... your prompt contains at least %d input tokens ...") count a
// prompt cut at the room plus one token: a bound, not the prompt's length;
// they give no room here (see tokenizeRoom).
func (he *HTTPError) room() (room, ctxLen int, ok bool) {
	if he.NCtx > 0 && he.NPromptTokens > 0 {
		return he.NCtx - he.NPromptTokens, he.NCtx, true // llama.cpp's fields
	}
	for _, p := range refusalPatterns {
		m := p.re.FindStringSubmatch(he.Message)
		if m == nil {
			continue
		}
		c, err1 := strconv.Atoi(m[p.ctx])
		n, err2 := strconv.Atoi(m[p.prompt])
		if err1 != nil || err2 != nil || c <= 0 {
			return 0, 0, false
		}
		room = c - n
		if p.strict {
			room--
		}
		return room, c, true
	}
	return 0, 0, false
}

// contextRe reads the context length from messages that give no prompt
// length (vLLM's renderer checks).
var contextRe = regexp.MustCompile(`(?:maximum context length is|context length is only) (\d+) tokens`)

// budgetRoom is the number of new tokens to ask for instead of r.MaxTokens
// after err, a context refusal of request r: ok when the prompt fits and
// the refusal was about the budget. Where the refusal does not count the
// prompt, the server's /tokenize endpoint (vLLM's) is asked, when the
// context length is known.
func (b *Backend) budgetRoom(ctx context.Context, r backends.Request, err error) (int, bool) {
	var he *HTTPError
	if !errors.Is(err, backends.ErrContextOverflow) || !errors.As(err, &he) {
		return 0, false
	}
	room, _, ok := he.room()
	if !ok {
		ctxLen := b.ctxLen
		if m := contextRe.FindStringSubmatch(he.Message); m != nil {
			ctxLen, _ = strconv.Atoi(m[1])
		}
		if ctxLen <= 0 {
			return 0, false
		}
		n, terr := b.tokenize(ctx, r)
		if terr != nil {
			return 0, false
		}
		room = ctxLen - n
	}
	if room <= 0 || room >= r.MaxTokens {
		return 0, false
	}
	return room, true
}

// tokenize counts the prompt tokens of request r (as sent, with any text
// to continue) with vLLM's POST /tokenize at the server's root, which
// takes the same prompt or messages as the generation endpoints.
func (b *Backend) tokenize(ctx context.Context, r backends.Request) (int, error) {
	data, _ := b.body(r, "", 0)
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return 0, err
	}
	for _, k := range []string{"max_tokens", "temperature", "seed", "stream", "stream_options", "stop"} {
		delete(m, k)
	}
	if _, chat := m["messages"]; chat {
		if _, cont := m["continue_final_message"]; !cont {
			m["add_generation_prompt"] = true
		}
	}
	data, _ = json.Marshal(m)
	root := strings.TrimSuffix(b.base, "/v1")
	u := root + "/tokenize"
	if b.query != "" {
		u += "?" + b.query
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(data))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	b.authorize(req)
	resp, err := b.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return 0, fmt.Errorf("tokenize: HTTP %d", resp.StatusCode)
	}
	var out struct {
		Count  int   `json:"count"`
		Tokens []int `json:"tokens"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&out); err != nil {
		return 0, fmt.Errorf("tokenize: %w", err)
	}
	if out.Count <= 0 {
		out.Count = len(out.Tokens)
	}
	if out.Count <= 0 {
		return 0, errors.New("tokenize: no count")
	}
	return out.Count, nil
}
