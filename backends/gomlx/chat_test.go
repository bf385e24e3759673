package gomlx

import (
	"slices"
	"testing"

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
