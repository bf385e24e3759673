package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"tally/backends"
	"tally/backends/chattemplate"
	"tally/backends/gomlx"
	"tally/backends/imported"
	"tally/backends/ollama"
	"tally/backends/openai"
	"tally/generate"
	"tally/tasks"
)

// modelOptions are the flags that shape how a model is opened.
type modelOptions struct {
	device      string // native backend device
	dtype       string // native backend: the products' dtype (--dtype)
	memory      int64  // native backend: --device-memory in bytes (0: not given)
	concurrency int    // requests in flight (native: batch size)
	baseURL     string // openai: API root (else OPENAI_BASE_URL)
	revision    string // openai: a revision label pinned into the fingerprint
	// chat prompts through the model's chat template; taskChat holds each
	// task's own `chat:` setting, used when chat is not forced.
	chat     bool
	taskChat []bool
	// systems holds the benchmarks' system prompts (sample metadata
	// "system_prompt"), sent as the system message in chat mode.
	systems chattemplate.Systems
}

// modelOptions collects the model flags, with the chat setting of the
// tasks that will run and their samples' system prompts (both may be nil).
func (f *runFlags) modelOptions(cfgs []*tasks.Config, jobs []*generate.Job) modelOptions {
	o := modelOptions{device: f.device, dtype: f.dtype, memory: f.deviceBytes, concurrency: f.concurrency, baseURL: f.baseURL, revision: f.modelRevision, chat: f.chat,
		systems: chattemplate.Systems{}}
	for _, c := range cfgs {
		o.taskChat = append(o.taskChat, c.Chat)
	}
	for _, j := range jobs {
		for _, s := range j.Samples {
			if sys, ok := s.Metadata[chattemplate.SystemKey].(string); ok {
				o.systems.Add(s.Prompt, sys)
			}
		}
	}
	return o
}

// useChat tells whether prompts go through the chat template: --chat, or
// every task saying `chat: true`. Tasks that disagree cannot share one
// backend and are refused.
func (o modelOptions) useChat() (bool, error) {
	if o.chat || len(o.taskChat) == 0 {
		return o.chat, nil
	}
	for _, c := range o.taskChat[1:] {
		if c != o.taskChat[0] {
			return false, errors.New("some tasks are chat tasks and some are not: run them separately, or pass --chat")
		}
	}
	return o.taskChat[0], nil
}

// openModel opens the backend a --model value names: "demo" (the embedded
// demo model), "ollama:NAME" (an Ollama server), "openai:NAME" (an
// OpenAI-compatible server), "imported:NAME", or a Hugging Face directory or
// cache name for the native backend. In chat mode the native backend
// renders prompts with the model's own chat template (tokenizer_config.json)
// and the server backends use the server's; a benchmark's own system prompt
// (sample metadata "system_prompt": L-Eval's, the judges') is sent as the
// system message. --dtype chooses the native backend's products' dtype; a
// server backend or imported outputs refuse any but auto.
func openModel(ctx context.Context, spec string, o modelOptions) (backends.Backend, error) {
	chat, err := o.useChat()
	if err != nil {
		return nil, err
	}
	dtype, err := gomlx.ParseDType(o.dtype)
	if err != nil {
		return nil, fmt.Errorf("--dtype: %w", err)
	}
	server := slices.ContainsFunc([]string{imported.Prefix, "ollama:", "openai:"}, func(p string) bool { return strings.HasPrefix(spec, p) })
	if dtype != gomlx.DTypeAuto && server {
		return nil, fmt.Errorf("--dtype %s applies to the native backend: %s computes in the server's (or the imported outputs') arithmetic", dtype, spec)
	}
	if o.memory > 0 && server {
		return nil, fmt.Errorf("--device-memory applies to the native backend: %s manages its own memory", spec)
	}
	if o.device != "" && server {
		return nil, fmt.Errorf("--device applies to the native backend: %s runs where its server (or the imported outputs') ran", spec)
	}
	if !strings.HasPrefix(spec, "openai:") {
		if o.revision != "" {
			return nil, fmt.Errorf("--model-revision applies to openai:NAME models, whose server may say nothing about the weights; %s is fingerprinted by %s", spec, fingerprintSource(spec))
		}
		if o.baseURL != "" {
			return nil, fmt.Errorf("--base-url applies to openai:NAME models (an Ollama server is named by OLLAMA_HOST); %s runs no OpenAI-compatible server", spec)
		}
	}
	opts := gomlx.Options{Device: o.device, DType: dtype, MaxBatch: o.concurrency, DeviceMemory: o.memory, Log: os.Stderr,
		FollowSymlinks: os.Getenv(gomlx.FollowSymlinksEnv) == "1"}
	switch {
	case spec == "demo":
		if chat {
			return nil, errors.New("the demo model has no chat template")
		}
		m, err := gomlx.Demo(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("open demo model: %w", err)
		}
		return m, nil
	case strings.HasPrefix(spec, imported.Prefix):
		return imported.New(strings.TrimPrefix(spec, imported.Prefix)), nil
	case strings.HasPrefix(spec, "ollama:"):
		m, err := ollama.Open(ctx, strings.TrimPrefix(spec, "ollama:"), ollama.Options{Parallel: o.concurrency, Chat: chat, Split: o.systems.Split})
		if err != nil {
			return nil, modelHint(spec, fmt.Errorf("open model %s: %w", spec, err))
		}
		return m, nil
	case strings.HasPrefix(spec, "openai:"):
		m, err := openai.Open(ctx, strings.TrimPrefix(spec, "openai:"), openai.Options{
			BaseURL: o.baseURL, Revision: o.revision, Parallel: o.concurrency, Chat: chat, Split: o.systems.Split})
		if err != nil {
			return nil, modelHint(spec, fmt.Errorf("open model %s: %w", spec, err))
		}
		return m, nil
	default:
		m, err := gomlx.Open(ctx, spec, opts)
		if err != nil {
			return nil, modelHint(spec, fmt.Errorf("open model %s: %w", spec, err))
		}
		if chat {
			if err := useChatTemplate(m, spec, o.systems); err != nil {
				m.Close()
				return nil, modelHint(spec, fmt.Errorf("open model %s: %w", spec, err))
			}
		}
		return m, nil
	}
}

// fingerprintSource says what a model that is not openai:NAME is
// fingerprinted by, for --model-revision's refusal.
func fingerprintSource(spec string) string {
	switch {
	case strings.HasPrefix(spec, "ollama:"):
		return "the digest the Ollama server reports for it"
	case strings.HasPrefix(spec, imported.Prefix):
		return "its name"
	}
	return "a digest of its weights"
}

// useChatTemplate gives a native model its own chat template.
func useChatTemplate(m *gomlx.Model, spec string, systems chattemplate.Systems) error {
	tmpl, err := nativeChatTemplate(m, spec)
	if err != nil {
		return err
	}
	return m.UseChatTemplate(chattemplate.Prompter{Template: tmpl, Systems: systems}.Render)
}

// nativeChatTemplate is a native model's own chat template: the one its
// GGUF file carries, else its directory's tokenizer config's.
func nativeChatTemplate(m *gomlx.Model, spec string) (*chattemplate.Template, error) {
	if src, bos, eos := m.ChatTemplate(); src != "" {
		tmpl, err := chattemplate.New(src, bos, eos)
		if err != nil {
			return nil, fmt.Errorf("chat template of %s: %w", spec, err)
		}
		return tmpl, nil
	}
	if _, manifest, _ := gomlx.OllamaModelBlob(spec); manifest || gomlx.IsGGUF(spec) {
		return nil, fmt.Errorf("chat template: %s carries no tokenizer.chat_template", spec)
	}
	dir, err := gomlx.ResolveModelDir(spec)
	if err != nil {
		return nil, err
	}
	tmpl, err := chattemplate.LoadIn(gomlx.ModelFolder(dir, os.Getenv(gomlx.FollowSymlinksEnv) == "1"), dir)
	if err != nil {
		return nil, fmt.Errorf("chat template: %w", err)
	}
	return tmpl, nil
}
