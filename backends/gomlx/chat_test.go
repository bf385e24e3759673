package gomlx

import (
	"context"
	"slices"
	"testing"

	"tally/backends"
	"tally/backends/chattemplate"
	"tally/backends/tokenizer"
	"tally/internal/sharedtest"
)

// TestChatTokenizer renders a prompt through Llama 3's chat template and
// checks that it is tokenised with exactly one BOS (the template's), as
// apply_chat_template(tokenize=True) does, while continuations (no special
// tokens) are encoded as before.
func TestChatTokenizer(t *testing.T) {
	dir := sharedtest.Path(t, "fixtures", "tokenizers", "llama3")
	tok, err := tokenizer.Load(dir + "/tokenizer.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := chattemplate.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	p := chattemplate.Prompter{Template: tmpl, System: "Be brief."}
	ct := chatTokenizer{StreamTokenizer: WrapTokenizer(tok), render: p.Render}

	got, err := ct.Encode("What is 2+3?", true)
	if err != nil {
		t.Fatal(err)
	}
	rendered, _ := p.Render("What is 2+3?")
	want, _ := tok.Encode(rendered, false)
	bos, _ := tok.Encode(tmpl.BOS, false)
	if len(bos) != 1 {
		t.Fatalf("BOS %q encodes as %v, want one special token", tmpl.BOS, bos)
	}
	if !slices.Equal(got, want) || got[0] != bos[0] || slices.Index(got[1:], bos[0]) >= 0 {
		t.Errorf("chat prompt ids %v (BOS %d), want %v with one leading BOS", got, bos[0], want)
	}
	plain, _ := tok.Encode(" 5", false)
	if cont, _ := ct.Encode(" 5", false); !slices.Equal(cont, plain) {
		t.Errorf("continuation %v, want %v", cont, plain)
	}
}

// TestUseChatTemplate: once a model has a chat template, the prompt ids
// that generate keys and runs are those of the rendered chat, so a chat run
// and a raw run of one model never share a generation, and its fingerprint
// ends in ":chat", so that reports never take one for the other;
// continuations are encoded as before, and a text prompt given to Generate
// is rendered too.
func TestUseChatTemplate(t *testing.T) {
	ctx := context.Background()
	m, err := Demo(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	raw := m.Tokenizer()
	rawFP, err := m.Fingerprint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const prompt = "Question: what is 2 plus 3?\nAnswer:"
	rawIDs, _ := raw.Encode(prompt, true)
	tmpl, err := chattemplate.New("{% for m in messages %}<{{ m.role }}>{{ m.content }}\n{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}", "", "")
	if err != nil {
		t.Fatal(err)
	}
	p := chattemplate.Prompter{Template: tmpl}
	if err := m.UseChatTemplate(p.Render); err != nil {
		t.Fatal(err)
	}
	chatIDs, err := m.Tokenizer().Encode(prompt, true)
	if err != nil {
		t.Fatal(err)
	}
	// A chat run's fingerprint says so (issue 22: chat and raw runs of a
	// native model were one column in reports).
	if chatFP, err := m.Fingerprint(ctx); err != nil || chatFP != rawFP+":chat" {
		t.Errorf("chat fingerprint %q (%v), want %q", chatFP, err, rawFP+":chat")
	}
	rendered, _ := p.Render(prompt)
	want, _ := raw.Encode(rendered, false)
	if !slices.Equal(chatIDs, want) || slices.Equal(chatIDs, rawIDs) {
		t.Errorf("chat ids %v, want %v (raw %v)", chatIDs, want, rawIDs)
	}
	// Generate from the text prompt equals Generate from the chat ids.
	gen := func(r backends.Request) string {
		var text string
		if err := m.Generate(ctx, []backends.Request{r}, func(ev backends.Event) bool { text += ev.Text; return true }); err != nil {
			t.Fatal(err)
		}
		return text
	}
	if a, b := gen(backends.Request{Prompt: prompt, MaxTokens: 8}), gen(backends.Request{PromptIDs: chatIDs, MaxTokens: 8}); a != b {
		t.Errorf("text prompt gave %q, chat ids %q", a, b)
	}
}
