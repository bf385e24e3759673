// Package chattemplate renders a model's chat template (the Jinja
// "chat_template" of its tokenizer_config.json) the way Hugging Face
// transformers' apply_chat_template does: a Jinja environment with
// trim_blocks, lstrip_blocks and loop controls, raise_exception,
// strftime_now, tojson writing non-ASCII as is, and bos_token/eos_token
// from the tokenizer config.
//
// The engine is github.com/ardanlabs/jinja, a pure-Go Jinja written for
// LLM chat templates: it applies HF's trim_blocks/lstrip_blocks and
// provides raise_exception, tojson (ensure_ascii=False) and loop controls
// itself. tally adds only a strftime_now whose clock the caller sets (Now),
// so that a rendering, and the generation key built from it, is
// reproducible. The renderings are checked byte for byte against Python's
// jinja2 (../shared/fixtures/chat_templates/expected.jsonl).
//
// A chat template comes with the model, from anywhere, and the engine has
// no bound of its own: a recursive macro overflows the stack (which no Go
// program survives), range(10**9) exhausts memory, nested loops never
// end. So tally never compiles or renders one in its own process: a
// Renderer hands every template to worker processes (the running
// executable, started again as a worker: see renderer.go), each bounded
// in memory and stack, each render in time and output (Bounds). A
// template past a bound fails that render (or its compilation) with an
// error wrapping ErrBounds, and the next render gets a fresh worker. No
// template skips the workers, however plain it looks: docs/security.md
// says why, and what a render costs.
package chattemplate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"tally/internal/fsguard"
)

// Message is one chat turn.
type Message struct {
	// Role is "system", "user" or "assistant".
	Role string `json:"role"`
	// Content is the turn's text.
	Content string `json:"content"`
}

// Template is a compiled chat template with its special tokens. It is
// compiled, and rendered, by its Renderer's workers.
type Template struct {
	r      *Renderer
	id     uint64
	source string
	// BOS and EOS are the tokenizer config's bos_token and eos_token.
	BOS, EOS string
	// Now is strftime_now's clock (default time.Now), read once per
	// render: every strftime_now of one rendering shows that time.
	Now func() time.Time
}

// ErrNoTemplate is returned when a tokenizer config has no chat template.
var ErrNoTemplate = errors.New("no chat_template in tokenizer_config.json")

// New compiles a template source with the given special tokens, in the
// default Renderer (DefaultBounds).
func New(source, bos, eos string) (*Template, error) {
	return defaultRenderer().New(source, bos, eos)
}

// MaxFileSize bounds tokenizer_config.json and chat_template.jinja,
// checked before they are read.
const MaxFileSize = 64 << 20

// Load reads the chat template of a model directory (its
// tokenizer_config.json) or of a tokenizer_config.json path. A directory
// with a chat_template.jinja file (newer transformers) uses that file.
// Each is a regular file (a link to one may lead anywhere) of at most
// MaxFileSize bytes.
func Load(path string) (*Template, error) { return LoadIn(fsguard.Folder{}, path) }

// LoadIn is Load reading the files as folder allows (a model folder's: no
// link that leads out of it unless it says so).
func LoadIn(folder fsguard.Folder, path string) (*Template, error) {
	cfgPath := path
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		cfgPath = filepath.Join(path, "tokenizer_config.json")
	}
	data, err := folder.ReadFile(cfgPath, MaxFileSize)
	if err != nil {
		return nil, fmt.Errorf("read chat template: %w", err)
	}
	t, err := Parse(data)
	if errors.Is(err, ErrNoTemplate) {
		if src, rerr := folder.ReadFile(filepath.Join(filepath.Dir(cfgPath), "chat_template.jinja"), MaxFileSize); rerr == nil {
			var cfg config
			json.Unmarshal(data, &cfg)
			return New(string(src), tokenText(cfg.BOS), tokenText(cfg.EOS))
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfgPath, err)
	}
	return t, nil
}

// config is the part of tokenizer_config.json a template needs.
type config struct {
	ChatTemplate json.RawMessage `json:"chat_template"`
	BOS          json.RawMessage `json:"bos_token"`
	EOS          json.RawMessage `json:"eos_token"`
}

// Parse reads a tokenizer_config.json. chat_template is a string, or a list
// of {name, template} where transformers uses the one named "default".
func Parse(data []byte) (*Template, error) {
	var cfg config
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("parse tokenizer config: %w", err)
	}
	var src string
	if json.Unmarshal(cfg.ChatTemplate, &src) != nil {
		var named []struct {
			Name     string `json:"name"`
			Template string `json:"template"`
		}
		if json.Unmarshal(cfg.ChatTemplate, &named) == nil {
			for _, n := range named {
				if n.Name == "default" {
					src = n.Template
				}
			}
		}
	}
	if src == "" {
		return nil, ErrNoTemplate
	}
	return New(src, tokenText(cfg.BOS), tokenText(cfg.EOS))
}

// tokenText reads a special token given as a string or as an AddedToken
// object ({"content": ...}); null or absent is "".
func tokenText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var obj struct {
		Content string `json:"content"`
	}
	json.Unmarshal(raw, &obj)
	return obj.Content
}

// Render renders msgs; addGenerationPrompt opens the assistant's turn.
// An error the template raises (raise_exception) is returned as is; a
// template past its Renderer's bounds fails with an error wrapping
// ErrBounds.
func (t *Template) Render(msgs []Message, addGenerationPrompt bool) (string, error) {
	now := t.Now
	if now == nil {
		now = time.Now
	}
	out, err := t.r.render(t, msgs, addGenerationPrompt, now())
	if err != nil {
		return "", fmt.Errorf("render chat template: %w", err)
	}
	return out, nil
}

// Source is the template's Jinja source.
func (t *Template) Source() string { return t.source }

// Digest identifies the template source and its special tokens.
func (t *Template) Digest() string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s", t.source, t.BOS, t.EOS)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// strftime formats t with Python's strftime directives (the C locale).
func strftime(t time.Time, format string) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 == len(format) {
			b.WriteByte(c)
			continue
		}
		i++
		switch format[i] {
		case 'Y':
			fmt.Fprintf(&b, "%04d", t.Year())
		case 'y':
			fmt.Fprintf(&b, "%02d", t.Year()%100)
		case 'm':
			fmt.Fprintf(&b, "%02d", int(t.Month()))
		case 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case 'e':
			fmt.Fprintf(&b, "%2d", t.Day())
		case 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case 'I':
			fmt.Fprintf(&b, "%02d", (t.Hour()+11)%12+1)
		case 'M':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&b, "%02d", t.Second())
		case 'p':
			b.WriteString(t.Format("PM"))
		case 'B':
			b.WriteString(t.Month().String())
		case 'b', 'h':
			b.WriteString(t.Month().String()[:3])
		case 'A':
			b.WriteString(t.Weekday().String())
		case 'a':
			b.WriteString(t.Weekday().String()[:3])
		case 'j':
			fmt.Fprintf(&b, "%03d", t.YearDay())
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(format[i])
		}
	}
	return b.String()
}

// SystemKey is the sample metadata key holding a benchmark's system prompt
// (L-Eval's, the judges'): a prefix of the flattened prompt that a chat
// prompt sends as the system message instead.
const SystemKey = "system_prompt"

// Systems maps a flattened prompt to its system prompt, a prefix of it.
type Systems map[string]string

// Add records that prompt begins with the system prompt system; it does
// nothing when system is empty or not a prefix of prompt.
func (s Systems) Add(prompt, system string) {
	if system != "" && strings.HasPrefix(prompt, system) {
		s[prompt] = system
	}
}

// Split splits prompt into its system prompt and the user's message: the
// rest, less the one blank line ("\n\n") that flattening put between the
// turns where it did (AlpacaEval's judge prompt; L-Eval and 3C3H join by
// plain concatenation, so their user turns are kept as they are). A
// prompt with no system prompt is all user message.
func (s Systems) Split(prompt string) (system, user string) {
	system, ok := s[prompt]
	if !ok {
		return "", prompt
	}
	return system, strings.TrimPrefix(prompt[len(system):], "\n\n")
}

// Prompter turns a task's prompt into a chat: the system message (the
// prompt's own, from Systems, else System), then the prompt as the user's
// message, rendered with the assistant's turn opened.
type Prompter struct {
	// Template is the model's chat template.
	Template *Template
	// System is the system message for prompts Systems does not know
	// ("" for none).
	System string
	// Systems splits prompts that carry a benchmark's system prompt.
	Systems Systems
}

// Messages is the chat a prompt becomes.
func (p Prompter) Messages(prompt string) []Message {
	system, user := p.Systems.Split(prompt)
	if system == "" {
		system = p.System
	}
	var msgs []Message
	if system != "" {
		msgs = append(msgs, Message{Role: "system", Content: system})
	}
	return append(msgs, Message{Role: "user", Content: user})
}

// Render renders prompt as a chat, ready for the assistant's answer.
func (p Prompter) Render(prompt string) (string, error) {
	return p.Template.Render(p.Messages(prompt), true)
}
