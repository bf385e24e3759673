package chattemplate

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"tally/internal/fsguard"
	"tally/internal/sharedtest"
)

// TestFixtures renders every conversation of
// ../shared/fixtures/chat_templates/expected.jsonl (Python jinja2 in
// transformers' environment) and compares the text byte for byte.
func TestFixtures(t *testing.T) {
	shared := sharedtest.Dir(t)
	f, err := os.Open(filepath.Join(shared, "fixtures", "chat_templates", "expected.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	templates := map[string]*Template{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		var c struct {
			Tokenizer    string    `json:"tokenizer"`
			Conversation string    `json:"conversation"`
			Messages     []Message `json:"messages"`
			AddGen       bool      `json:"add_generation_prompt"`
			Text         *string   `json:"text"`
			Error        *string   `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		n++
		tmpl, ok := templates[c.Tokenizer]
		if !ok {
			tmpl, err = Load(filepath.Join(shared, "fixtures", "tokenizers", c.Tokenizer))
			if err != nil {
				t.Fatal(err)
			}
			tmpl.Now = func() time.Time { return time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC) }
			templates[c.Tokenizer] = tmpl
		}
		got, err := tmpl.Render(c.Messages, c.AddGen)
		switch {
		case c.Error != nil:
			if err == nil {
				t.Errorf("%s/%s/%v: rendered %q, want error %q", c.Tokenizer, c.Conversation, c.AddGen, got, *c.Error)
			}
		case err != nil:
			t.Errorf("%s/%s/%v: %v", c.Tokenizer, c.Conversation, c.AddGen, err)
		case got != *c.Text:
			t.Errorf("%s/%s/%v:\n got %q\nwant %q", c.Tokenizer, c.Conversation, c.AddGen, got, *c.Text)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n != 24 {
		t.Errorf("%d renderings, want 24", n)
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name, cfg, want string
		err             bool
	}{
		{"string template", `{"chat_template":"{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}{{ eos_token }}","bos_token":"<s>","eos_token":{"content":"</s>"}}`,
			"<s>[user]hi</s>", false},
		{"named templates", `{"chat_template":[{"name":"tool_use","template":"T"},{"name":"default","template":"D{{ messages|length }}"}]}`, "D1", false},
		{"no template", `{"bos_token":"<s>"}`, "", true},
		{"raise_exception", `{"chat_template":"{{ raise_exception('no users') }}"}`, "", true},
		{"bad json", `{`, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, err := Parse([]byte(tc.cfg))
			var got string
			if err == nil {
				got, err = tmpl.Render([]Message{{Role: "user", Content: "hi"}}, true)
			}
			if (err != nil) != tc.err || got != tc.want {
				t.Errorf("got %q, %v; want %q (error %v)", got, err, tc.want, tc.err)
			}
		})
	}
}

func TestStrftimeNow(t *testing.T) {
	tmpl, err := New(`{{ strftime_now("%d %b %Y, %A %H:%M %%") }}`, "", "")
	if err != nil {
		t.Fatal(err)
	}
	tmpl.Now = func() time.Time { return time.Date(2026, 1, 5, 7, 8, 0, 0, time.UTC) }
	got, err := tmpl.Render(nil, false)
	if want := "05 Jan 2026, Monday 07:08 %"; err != nil || got != want {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
}

func TestDigest(t *testing.T) {
	a, _ := New("x", "<s>", "</s>")
	b, _ := New("x", "<s>", "")
	c, _ := New("y", "<s>", "</s>")
	if a.Digest() == b.Digest() || a.Digest() == c.Digest() {
		t.Error("digests collide")
	}
}

func TestPrompterSystems(t *testing.T) {
	sys := Systems{}
	sys.Add("You judge.\n\nWhich is better?", "You judge.")
	sys.Add("Doc: x. Q?", "Doc")            // a prefix: kept
	sys.Add("Rules.\nQ: 1?", "Rules.")      // one newline: kept in the user turn
	sys.Add("no system here", "")           // empty: ignored
	sys.Add("short", "not a prefix at all") // ignored
	p := Prompter{Systems: sys, System: "Default."}
	tests := []struct {
		prompt string
		want   []Message
	}{
		{"You judge.\n\nWhich is better?", []Message{{"system", "You judge."}, {"user", "Which is better?"}}},
		{"Doc: x. Q?", []Message{{"system", "Doc"}, {"user", ": x. Q?"}}},
		{"Rules.\nQ: 1?", []Message{{"system", "Rules."}, {"user", "\nQ: 1?"}}},
		{"short", []Message{{"system", "Default."}, {"user", "short"}}},
	}
	for _, tc := range tests {
		if got := p.Messages(tc.prompt); !slices.Equal(got, tc.want) {
			t.Errorf("Messages(%q) = %v, want %v", tc.prompt, got, tc.want)
		}
	}
	if got := (Prompter{}).Messages("hi"); !slices.Equal(got, []Message{{"user", "hi"}}) {
		t.Errorf("no systems: %v", got)
	}
}

// TestLoadNotRegular (issue 37, item 3): a model folder's
// tokenizer_config.json that is a FIFO or a link to /dev/zero is refused
// before it is opened, and a link out of the folder unless asked for.
func TestLoadNotRegular(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "tokenizer_config.json")
	if err := os.WriteFile(outside, []byte(`{"chat_template": "{{ messages[0].content }}"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		make   func(p string) error
		follow bool
		err    string
	}{
		{"FIFO", func(p string) error { return syscall.Mkfifo(p, 0o644) }, false, "named pipe (FIFO): refused"},
		{"/dev/zero", func(p string) error { return os.Symlink("/dev/zero", p) }, true, "is a device: refused"},
		{"a link out", func(p string) error { return os.Symlink(outside, p) }, false, "outside"},
		{"a link out, followed", func(p string) error { return os.Symlink(outside, p) }, true, ""},
	} {
		dir := t.TempDir()
		if err := tc.make(filepath.Join(dir, "tokenizer_config.json")); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := LoadIn(fsguard.Folder{Root: dir, FollowOut: tc.follow}, dir)
			done <- err
		}()
		select {
		case err := <-done:
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("%s: still loading after a minute", tc.name)
		}
	}
}

// BenchmarkRender renders a prompt the way a chat run does
// (Prompter.Render: a system message and the user's), with the llama3 and
// qwen3 templates of the reference set, for a short prompt and ones of
// 64 KiB and of 1 MiB.
func BenchmarkRender(b *testing.B) {
	shared := sharedtest.Dir(b)
	for _, tok := range []string{"llama3", "qwen3"} {
		tmpl, err := Load(filepath.Join(shared, "fixtures", "tokenizers", tok))
		if err != nil {
			b.Fatal(err)
		}
		tmpl.Now = func() time.Time { return time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC) }
		for _, size := range []int{200, 64 << 10, 1 << 20} {
			prompt := strings.Repeat("Question: what is 2 plus 3? ", size/28+1)[:size]
			p := Prompter{Template: tmpl, System: "Be brief."}
			b.Run(fmt.Sprintf("%s/%dB", tok, size), func(b *testing.B) {
				b.SetBytes(int64(size))
				for b.Loop() {
					if _, err := p.Render(prompt); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
