package report

import "tally/store"

// genInfo is what a sample shows of its generation: its text, how it
// ended and its prompt's length. The text lies in its load's genTexts,
// its finish reason and error are numbered there: a genInfo holds no
// pointer, so that the collector never scans the hundreds of thousands
// of them a report of a large store holds, and each is 28 bytes where
// three strings and two words were 56.
type genInfo struct {
	block, off, n uint32 // the text: genTexts.blocks[block][off:off+n]
	promptTokens  int32
	finish, err   int32 // indices into genTexts.strs
	imported      bool
}

// genTexts holds the text of a load's generations, in blocks that are
// never moved, and the finish reasons and errors they name, each once.
type genTexts struct {
	blocks [][]byte
	strs   []string
	strIdx map[string]int32
}

// textBlock is the size of a block of text; a longer text has a block of
// its own.
const textBlock = 1 << 20

func newGenTexts() *genTexts {
	return &genTexts{strs: []string{""}, strIdx: map[string]int32{"": 0}}
}

// info keeps what a sample shows of g.
func (t *genTexts) info(g *store.Generation) genInfo {
	gi := genInfo{promptTokens: int32(g.PromptTokens), finish: t.str(g.Finish), err: t.str(g.Error), imported: g.Imported}
	if g.Text == "" {
		return gi
	}
	last := len(t.blocks) - 1
	if last < 0 || len(t.blocks[last])+len(g.Text) > cap(t.blocks[last]) {
		t.blocks = append(t.blocks, make([]byte, 0, max(textBlock, len(g.Text))))
		last++
	}
	b := t.blocks[last]
	gi.block, gi.off, gi.n = uint32(last), uint32(len(b)), uint32(len(g.Text))
	t.blocks[last] = append(b, g.Text...)
	return gi
}

// str is the number of a finish reason or error, numbering it when new.
func (t *genTexts) str(s string) int32 {
	i, ok := t.strIdx[s]
	if !ok {
		i = int32(len(t.strs))
		t.strs = append(t.strs, s)
		t.strIdx[s] = i
	}
	return i
}

// text is gi's text.
func (t *genTexts) text(gi *genInfo) string {
	if gi.n == 0 {
		return ""
	}
	return string(t.blocks[gi.block][gi.off : gi.off+gi.n])
}

// finish and errText are gi's finish reason and error.
func (t *genTexts) finish(gi *genInfo) string  { return t.strs[gi.finish] }
func (t *genTexts) errText(gi *genInfo) string { return t.strs[gi.err] }
