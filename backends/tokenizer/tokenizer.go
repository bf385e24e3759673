// Package tokenizer is a pure-Go reader of Hugging Face tokenizer.json files
// that produces the same token ids and decoded text as the Rust `tokenizers`
// library for byte-level BPE (GPT-2, Qwen2/3, Llama 3) and SentencePiece-style
// BPE with byte fallback (Llama 2, Mistral).
//
// The encode pipeline follows the Rust one: added tokens are extracted from
// the raw text, each remaining segment is normalized, pre-tokenized and run
// through the BPE model, and the post-processor adds special tokens when
// asked. Decoding maps ids to tokens and runs the decoder chain.
package tokenizer

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"tally/internal/fsguard"
)

// Tokenizer encodes text to token ids and decodes ids to text. It is safe
// for concurrent use.
type Tokenizer struct {
	model     *bpeModel
	norm      normalizer
	pre       preTokenizer
	post      postProcessor
	dec       decoder
	added     []addedToken        // in id order; first/firstN index it
	addedR    map[int]*addedToken // id -> token
	addedM    map[string]int      // content -> id
	first     *[256][]int         // first byte -> indexes into added, longest first (raw pass); nil if none
	firstN    *[256][]int         // the same for normalized added tokens
	special   map[string]bool     // contents of special tokens
	vocabSize int
	digest    string // SHA-256 of the tokenizer.json read
}

// addedToken is an entry of added_tokens.
type addedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
	// match is the text matched in the input (the normalized content for
	// normalized tokens).
	match string
}

type fileJSON struct {
	Version       string          `json:"version"`
	AddedTokens   []addedToken    `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Decoder       json.RawMessage `json:"decoder"`
	Model         json.RawMessage `json:"model"`
}

type modelJSON struct {
	Type                    string
	Dropout                 *float64
	UnkToken                *string
	ContinuingSubwordPrefix *string
	EndOfWordSuffix         *string
	FuseUnk                 bool
	ByteFallback            bool
	IgnoreMerges            bool
}

func errorf(format string, args ...any) error {
	return fmt.Errorf("tokenizer.json: "+format, args...)
}

// MaxFileSize bounds a tokenizer.json, as read and uncompressed: the
// largest real ones (250,000-token vocabularies) are about 35 MB.
const MaxFileSize = 128 << 20

// Load reads a tokenizer from a tokenizer.json file, a gzip-compressed
// tokenizer.json(.gz), or a directory containing tokenizer.json (or
// tokenizer.json.gz): a regular file (a link to one may lead anywhere) of
// at most MaxFileSize bytes, uncompressed too.
func Load(path string) (*Tokenizer, error) { return LoadIn(fsguard.Folder{}, path) }

// LoadIn is Load reading the file as folder allows (a model folder's: no
// link that leads out of it unless it says so).
func LoadIn(folder fsguard.Folder, path string) (*Tokenizer, error) {
	data, path, err := readTokenizerFile(folder, path)
	if err != nil {
		return nil, err
	}
	t, err := FromJSON(data)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer %s: %w", path, err)
	}
	return t, nil
}

// readTokenizerFile returns the uncompressed tokenizer.json bytes for the
// path forms Load accepts, and the file actually read.
func readTokenizerFile(folder fsguard.Folder, path string) ([]byte, string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, path, fmt.Errorf("load tokenizer %s: %w", path, err)
	}
	if st.IsDir() {
		p := filepath.Join(path, "tokenizer.json")
		if _, err := os.Lstat(p); err != nil {
			if _, err2 := os.Lstat(p + ".gz"); err2 == nil {
				p += ".gz"
			}
		}
		path = p
	}
	data, err := folder.ReadFile(path, MaxFileSize)
	if err != nil {
		return nil, path, fmt.Errorf("load tokenizer %s: %w", path, err)
	}
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, path, fmt.Errorf("load tokenizer %s: gunzip: %w", path, err)
		}
		var buf bytes.Buffer
		if n := len(data); n >= 4 {
			// The gzip trailer holds the uncompressed size (mod 2^32).
			size := int(uint32(data[n-4]) | uint32(data[n-3])<<8 | uint32(data[n-2])<<16 | uint32(data[n-1])<<24)
			if size <= MaxFileSize {
				buf.Grow(size + 512)
			}
		}
		if _, err = io.Copy(&buf, io.LimitReader(zr, MaxFileSize+1)); err != nil {
			return nil, path, fmt.Errorf("load tokenizer %s: gunzip: %w", path, err)
		}
		if buf.Len() > MaxFileSize {
			return nil, path, fmt.Errorf("load tokenizer %s: more than %d MiB uncompressed, the most tally reads", path, MaxFileSize>>20)
		}
		data = buf.Bytes()
	}
	return data, path, nil
}

// FromJSON builds a tokenizer from the contents of a tokenizer.json file.
func FromJSON(data []byte) (*Tokenizer, error) {
	var f fileJSON
	sc := &scanner{b: data}
	err := sc.objectFields(func(key string) error {
		v, err := sc.skipValue()
		if err != nil {
			return err
		}
		switch key {
		case "version":
			return json.Unmarshal(v, &f.Version)
		case "added_tokens":
			return json.Unmarshal(v, &f.AddedTokens)
		case "normalizer":
			f.Normalizer = v
		case "pre_tokenizer":
			f.PreTokenizer = v
		case "post_processor":
			f.PostProcessor = v
		case "decoder":
			f.Decoder = v
		case "model":
			f.Model = v
		}
		return nil
	})
	if err == nil && sc.peek() != 0 {
		err = sc.errf("trailing data")
	}
	if err != nil {
		return nil, fmt.Errorf("tokenizer.json: parse: %w", err)
	}
	if f.Version != "" && f.Version != "1.0" {
		return nil, errorf("version %q not supported", f.Version)
	}
	if isNull(f.Model) {
		return nil, errorf("model missing")
	}
	m, err := parseModel(f.Model)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	t := &Tokenizer{model: m, digest: hex.EncodeToString(sum[:])}
	if t.norm, err = parseNormalizer(f.Normalizer); err != nil {
		return nil, err
	}
	if t.pre, err = parsePreTokenizer(f.PreTokenizer); err != nil {
		return nil, err
	}
	if t.dec, err = parseDecoder(f.Decoder, false); err != nil {
		return nil, err
	}
	if err := t.addTokens(f.AddedTokens); err != nil {
		return nil, err
	}
	if t.post, err = parsePostProcessor(f.PostProcessor, t); err != nil {
		return nil, err
	}
	return t, nil
}

func parseModel(raw json.RawMessage) (*bpeModel, error) {
	var j modelJSON
	var vocab map[string]int
	var pairs [][2]string
	sc := &scanner{b: raw}
	err := sc.objectFields(func(key string) error {
		var err error
		switch key {
		case "vocab":
			vocab, err = parseVocab(sc)
			return err
		case "merges":
			pairs, err = parseMergeList(sc)
			return err
		}
		v, err := sc.skipValue()
		if err != nil {
			return err
		}
		switch key {
		case "type":
			err = json.Unmarshal(v, &j.Type)
		case "dropout":
			err = json.Unmarshal(v, &j.Dropout)
		case "unk_token":
			err = json.Unmarshal(v, &j.UnkToken)
		case "continuing_subword_prefix":
			err = json.Unmarshal(v, &j.ContinuingSubwordPrefix)
		case "end_of_word_suffix":
			err = json.Unmarshal(v, &j.EndOfWordSuffix)
		case "fuse_unk":
			err = json.Unmarshal(v, &j.FuseUnk)
		case "byte_fallback":
			err = json.Unmarshal(v, &j.ByteFallback)
		case "ignore_merges":
			err = json.Unmarshal(v, &j.IgnoreMerges)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		return nil
	})
	if err != nil {
		return nil, errorf("model: %v", err)
	}
	if j.Type != "BPE" && !(j.Type == "" && pairs != nil) {
		return nil, errorf("model type %q not supported", j.Type)
	}
	if j.Dropout != nil && *j.Dropout != 0 {
		return nil, errorf("model dropout %v not supported", *j.Dropout)
	}
	if vocab == nil {
		return nil, errorf("model vocab missing")
	}
	m := &bpeModel{
		vocab:        vocab,
		vocabR:       make(map[int]string, len(vocab)),
		merges:       make(map[uint64]mergeInfo),
		prefix:       j.ContinuingSubwordPrefix,
		suffix:       j.EndOfWordSuffix,
		fuseUnk:      j.FuseUnk,
		byteFallback: j.ByteFallback,
		ignoreMerges: j.IgnoreMerges,
		cache:        make(map[string][]int),
	}
	if j.UnkToken != nil {
		m.unkToken, m.hasUnk = *j.UnkToken, true
	}
	for k, v := range vocab {
		if v < 0 || v > math.MaxInt32 {
			return nil, errorf("model vocab id %d for %q not supported", v, k)
		}
		m.vocabR[v] = k
	}
	for b := 0; b < 256; b++ {
		m.byteIDs[b] = -1
		if id, ok := vocab[fmt.Sprintf("<0x%02X>", b)]; ok {
			m.byteIDs[b] = id
		}
	}
	prefixLen := 0
	if m.prefix != nil {
		prefixLen = len(*m.prefix)
	}
	m.merges = make(map[uint64]mergeInfo, len(pairs))
	for rank, p := range pairs {
		a, ok := m.vocab[p[0]]
		if !ok {
			return nil, errorf("merge token %q not in vocab", p[0])
		}
		b, ok := m.vocab[p[1]]
		if !ok {
			return nil, errorf("merge token %q not in vocab", p[1])
		}
		if len(p[1]) < prefixLen {
			return nil, errorf("merge token %q shorter than continuing_subword_prefix", p[1])
		}
		nid, ok := m.vocab[p[0]+p[1][prefixLen:]]
		if !ok {
			return nil, errorf("merge result %q not in vocab", p[0]+p[1][prefixLen:])
		}
		m.merges[pairKey(a, b)] = mergeInfo{rank: int32(rank), newID: int32(nid)}
	}
	return m, nil
}

// addTokens registers added_tokens like Rust's AddedVocabulary::add_tokens.
func (t *Tokenizer) addTokens(tokens []addedToken) error {
	t.addedR = make(map[int]*addedToken)
	t.addedM = make(map[string]int)
	t.special = make(map[string]bool)
	next := len(t.model.vocab)
	for i := range tokens {
		tok := tokens[i]
		if tok.Content == "" {
			continue
		}
		id, ok := t.addedM[tok.Content]
		if !ok {
			id, ok = t.model.vocab[tok.Content]
		}
		if !ok {
			id = next
			next++
		}
		tok.ID = id
		tok.match = tok.Content
		if tok.Normalized && t.norm != nil {
			n, err := t.norm.normalize(tok.Content)
			if err != nil {
				return errorf("normalize added token %q: %v", tok.Content, err)
			}
			tok.match = n
		}
		t.addedM[tok.Content] = id
		if tok.Special {
			t.special[tok.Content] = true
		}
		t.addedR[id] = &tok
		if id >= next {
			next = id + 1
		}
	}
	var first, firstN [256][]int
	t.added = t.added[:0]
	ids := make([]int, 0, len(t.addedR))
	for id := range t.addedR {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	for _, id := range ids {
		tok := t.addedR[id]
		if tok.match == "" {
			continue
		}
		t.added = append(t.added, *tok)
		idx := len(t.added) - 1
		if tok.Normalized {
			firstN[tok.match[0]] = append(firstN[tok.match[0]], idx)
			t.firstN = &firstN
		} else {
			first[tok.match[0]] = append(first[tok.match[0]], idx)
			t.first = &first
		}
	}
	for _, tab := range []*[256][]int{&first, &firstN} {
		for _, v := range tab {
			sort.SliceStable(v, func(a, b int) bool { return len(t.added[v[a]].match) > len(t.added[v[b]].match) })
		}
	}
	t.vocabSize = 0
	for id := range t.model.vocabR {
		if id+1 > t.vocabSize {
			t.vocabSize = id + 1
		}
	}
	for id := range t.addedR {
		if id+1 > t.vocabSize {
			t.vocabSize = id + 1
		}
	}
	return nil
}

// findAdded splits s around the added tokens of table (leftmost-longest
// matching, like Rust's Aho-Corasick with LeftmostLongest).
func (t *Tokenizer) findAdded(s string, table *[256][]int, atStart bool, dst []piece) []piece {
	if table == nil || s == "" {
		if s != "" {
			dst = append(dst, piece{text: s, id: -1, atStart: atStart})
		}
		return dst
	}
	startOffset := 0
	emit := func(a, b int, id int) {
		if a < b {
			dst = append(dst, piece{text: s[a:b], id: id, atStart: atStart && a == 0})
		}
	}
	for i := 0; i < len(s); {
		cands := table[s[i]]
		matched := -1
		for _, idx := range cands {
			if strings.HasPrefix(s[i:], t.added[idx].match) {
				matched = idx
				break
			}
		}
		if matched < 0 {
			i++
			continue
		}
		tok := &t.added[matched]
		start, stop := i, i+len(tok.match)
		i = stop
		if tok.SingleWord {
			startSpace := start == 0 || !endsWithWord(s[:start])
			stopSpace := stop == len(s) || !startsWithWord(s[stop:])
			if !startSpace || !stopSpace {
				continue
			}
		}
		if tok.LStrip {
			ns := len(strings.TrimRightFunc(s[:start], unicode.IsSpace))
			start = max(ns, startOffset)
		}
		if tok.RStrip {
			stop = len(s) - len(strings.TrimLeftFunc(s[stop:], unicode.IsSpace))
		}
		emit(startOffset, start, -1)
		dst = append(dst, piece{text: s[start:stop], id: tok.ID, atStart: atStart && start == 0})
		startOffset = stop
	}
	emit(startOffset, len(s), -1)
	return dst
}

func isWordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) ||
		unicode.Is(unicode.Mc, r) || unicode.Is(unicode.Pc, r)
}

func endsWithWord(s string) bool {
	r, n := utf8.DecodeLastRuneInString(s)
	return n > 0 && isWordRune(r)
}

func startsWithWord(s string) bool {
	r, n := utf8.DecodeRuneInString(s)
	return n > 0 && isWordRune(r)
}

// Encode tokenises text. With addSpecial the post-processor adds its
// special tokens (for example a BOS); added tokens written literally in
// text are always recognised.
func (t *Tokenizer) Encode(text string, addSpecial bool) ([]int, error) {
	text = validString(text)
	sc := scratchPool.Get().(*scratch)
	sc.err = nil
	defer scratchPool.Put(sc)
	raw := t.findAdded(text, t.first, true, sc.list())
	defer sc.release(raw)
	pieces, words := sc.list(), sc.list()
	defer func() { sc.release(pieces); sc.release(words) }()
	ids := make([]int, 0, len(text)/4+8)
	for _, p := range raw {
		if p.id >= 0 {
			ids = append(ids, p.id)
			continue
		}
		s := p.text
		if t.norm != nil {
			var err error
			if s, err = t.norm.normalize(s); err != nil {
				return nil, fmt.Errorf("encode: normalize: %w", err)
			}
		}
		pieces = t.findAdded(s, t.firstN, p.atStart, pieces[:0])
		for i, q := range pieces {
			if q.id >= 0 {
				ids = append(ids, q.id)
				continue
			}
			if t.pre != nil {
				words = t.pre.split(pieces[i:i+1], words[:0], sc)
				if err := sc.err; err != nil {
					sc.err = nil
					return nil, fmt.Errorf("encode: pre-tokenize: %w", err)
				}
			} else {
				words = append(words[:0], q)
			}
			for _, w := range words {
				var err error
				if ids, err = t.model.tokenize(w.text, ids); err != nil {
					return nil, fmt.Errorf("encode: %w", err)
				}
			}
		}
	}
	if addSpecial && t.post != nil {
		ids = t.post.process(ids)
	}
	return ids, nil
}

// idToken returns the token string of id (added tokens first).
func (t *Tokenizer) idToken(id int) (string, bool) {
	if a, ok := t.addedR[id]; ok {
		return a.match, true
	}
	s, ok := t.model.vocabR[id]
	return s, ok
}

// tokensOf maps ids to token strings, dropping unknown ids and, with skip,
// special tokens (as the Rust library does).
func (t *Tokenizer) tokensOf(ids []int, skip bool) []string {
	toks := make([]string, 0, len(ids))
	for _, id := range ids {
		if s, ok := t.visible(id, skip); ok {
			toks = append(toks, s)
		}
	}
	return toks
}

func (t *Tokenizer) visible(id int, skip bool) (string, bool) {
	s, ok := t.idToken(id)
	if !ok || (skip && t.special[s]) {
		return "", false
	}
	return s, true
}

func (t *Tokenizer) decodeTokens(toks []string, first bool) string {
	if t.dec == nil {
		s := strings.Join(toks, " ")
		if !first && len(toks) > 0 {
			s = " " + s
		}
		return s
	}
	return strings.Join(t.dec.decodeChain(toks, first), "")
}

// Decode turns ids back into text. With skipSpecial, tokens marked special
// are dropped. Ids that are not in the vocabulary are ignored, as in the
// Rust library.
func (t *Tokenizer) Decode(ids []int, skipSpecial bool) (string, error) {
	return t.decodeTokens(t.tokensOf(ids, skipSpecial), true), nil
}

// Digest is the SHA-256 (hex) of the tokenizer.json the tokenizer was
// read from: with this package's code, it determines every encoding.
func (t *Tokenizer) Digest() string { return t.digest }

// VocabSize is one more than the largest token id (model vocabulary and
// added tokens together): the size an embedding table needs.
func (t *Tokenizer) VocabSize() int { return t.vocabSize }

// TokenID returns the id of a token string (added tokens first, then the
// model vocabulary).
func (t *Tokenizer) TokenID(token string) (int, bool) {
	if id, ok := t.addedM[token]; ok {
		return id, true
	}
	id, ok := t.model.vocab[token]
	return id, ok
}

// IsSpecial reports whether id is an added token marked special.
func (t *Tokenizer) IsSpecial(id int) bool {
	a, ok := t.addedR[id]
	return ok && t.special[a.Content]
}
