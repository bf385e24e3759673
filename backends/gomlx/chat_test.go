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

// TestPromptDigest: the digest under which a plan keeps a prompt's key
// covers everything its ids depend on: the tokenizer's file, the prompt,
// and in chat mode the text the template renders for it (the template,
// its system prompt, its clock), and raw and chat encodings never share
// one. Equal digests come with equal ids.
func TestPromptDigest(t *testing.T) {
	m, err := Demo(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	raw, ok := m.Tokenizer().(backends.PromptDigester)
	if !ok {
		t.Fatal("the demo model's tokenizer does not digest its prompts")
	}
	digest := func(pd backends.PromptDigester, prompt string) [32]byte {
		t.Helper()
		d, ok, err := pd.PromptDigest(prompt)
		if err != nil || !ok {
			t.Fatalf("PromptDigest(%q): %v %v", prompt, ok, err)
		}
		return d
	}
	tok := m.Tokenizer()
	other, err := tokenizer.FromJSON(append(slices.Clone(demoTokenizerJSON(t)), ' '))
	if err != nil {
		t.Fatal(err)
	}
	render := func(system string) func(string) (string, error) {
		return func(p string) (string, error) { return "<s>[" + system + "] " + p + " [/]", nil }
	}
	chat := func(system string) backends.PromptDigester {
		return chatTokenizer{StreamTokenizer: tok.(StreamTokenizer), render: render(system)}
	}
	prompt := "Passage: Tom joined in 2017.\nQuestion: When?\nAnswer:"
	distinct := map[string][32]byte{
		"raw":                     digest(raw, prompt),
		"raw, another prompt":     digest(raw, prompt+" "),
		"raw, another tokenizer":  digest(WrapTokenizer(other).(backends.PromptDigester), prompt),
		"chat":                    digest(chat("sys"), prompt),
		"chat, another rendering": digest(chat("sys2"), prompt),
	}
	seen := map[[32]byte]string{}
	for name, d := range distinct {
		if prev, dup := seen[d]; dup {
			t.Errorf("%s and %s share a digest", name, prev)
		}
		seen[d] = name
	}
	if digest(raw, prompt) != distinct["raw"] || digest(chat("sys"), prompt) != distinct["chat"] {
		t.Error("a digest is not a function of its inputs")
	}
	// Equal digests, equal ids: the chat digest is the rendered text's.
	a, _ := chat("sys").(chatTokenizer).Encode(prompt, true)
	rendered, _ := render("sys")(prompt)
	b, _ := tok.Encode(rendered, false)
	if !slices.Equal(a, b) {
		t.Errorf("chat ids %v, rendered text's %v", a, b)
	}
	// A tokenizer with no file to digest keeps nothing.
	if _, ok, _ := (chatTokenizer{StreamTokenizer: idOnly{tok.(StreamTokenizer)}, render: render("sys")}).PromptDigest(prompt); ok {
		t.Error("a chat template over a tokenizer that cannot digest gave a digest")
	}
}

// idOnly hides a tokenizer's digest.
type idOnly struct{ StreamTokenizer }

// demoTokenizerJSON is the demo model's tokenizer.json.
func demoTokenizerJSON(t *testing.T) []byte {
	data, err := demoFiles.ReadFile("demomodel/tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	return data
}
