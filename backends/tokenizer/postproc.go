package tokenizer

import (
	"encoding/json"
	"fmt"
)

// postProcessor adds special tokens around an encoding (only called when
// special tokens are requested).
type postProcessor interface {
	process(ids []int) []int
}

// templatePost is TemplateProcessing's single-sequence template, resolved
// to ids: nil entries mark the sequence itself.
type templatePost struct {
	parts [][]int
}

func (p templatePost) process(ids []int) []int {
	out := make([]int, 0, len(ids)+4)
	for _, part := range p.parts {
		if part == nil {
			out = append(out, ids...)
		} else {
			out = append(out, part...)
		}
	}
	return out
}

// wrapPost is Bert/Roberta processing: cls + ids + sep.
type wrapPost struct{ cls, sep int }

func (p wrapPost) process(ids []int) []int {
	out := make([]int, 0, len(ids)+2)
	out = append(out, p.cls)
	out = append(out, ids...)
	return append(out, p.sep)
}

type noopPost struct{}

func (noopPost) process(ids []int) []int { return ids }

type seqPost []postProcessor

func (q seqPost) process(ids []int) []int {
	for _, p := range q {
		ids = p.process(ids)
	}
	return ids
}

type templatePiece struct {
	SpecialToken *struct {
		ID string `json:"id"`
	} `json:"SpecialToken"`
	Sequence *struct {
		ID string `json:"id"`
	} `json:"Sequence"`
}

type postJSON struct {
	Type          string            `json:"type"`
	Processors    []json.RawMessage `json:"processors"`
	Single        []templatePiece   `json:"single"`
	SpecialTokens map[string]struct {
		IDs []int `json:"ids"`
	} `json:"special_tokens"`
	Cls []json.RawMessage `json:"cls"`
	Sep []json.RawMessage `json:"sep"`
}

func parsePostProcessor(raw json.RawMessage, t *Tokenizer) (postProcessor, error) {
	if isNull(raw) {
		return nil, nil
	}
	var j postJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, fmt.Errorf("tokenizer.json: post_processor: %w", err)
	}
	switch j.Type {
	case "ByteLevel":
		return noopPost{}, nil
	case "TemplateProcessing":
		var p templatePost
		for _, pc := range j.Single {
			switch {
			case pc.Sequence != nil:
				p.parts = append(p.parts, nil)
			case pc.SpecialToken != nil:
				st, ok := j.SpecialTokens[pc.SpecialToken.ID]
				if !ok {
					return nil, fmt.Errorf("tokenizer.json: post_processor TemplateProcessing special token %q missing", pc.SpecialToken.ID)
				}
				p.parts = append(p.parts, append([]int{}, st.IDs...))
			default:
				return nil, fmt.Errorf("tokenizer.json: post_processor TemplateProcessing piece not supported")
			}
		}
		return p, nil
	case "BertProcessing", "RobertaProcessing":
		var cls, sep int
		if len(j.Cls) != 2 || len(j.Sep) != 2 ||
			json.Unmarshal(j.Cls[1], &cls) != nil || json.Unmarshal(j.Sep[1], &sep) != nil {
			return nil, fmt.Errorf("tokenizer.json: post_processor %s cls/sep malformed", j.Type)
		}
		return wrapPost{cls: cls, sep: sep}, nil
	case "Sequence":
		var q seqPost
		for _, sub := range j.Processors {
			p, err := parsePostProcessor(sub, t)
			if err != nil {
				return nil, err
			}
			if p != nil {
				q = append(q, p)
			}
		}
		return q, nil
	}
	return nil, fmt.Errorf("tokenizer.json: post_processor type %q not supported", j.Type)
}
