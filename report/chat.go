package report

import (
	"encoding/json"
	"strings"
)

// IsChatFingerprint reports whether a model fingerprint is that of a chat
// run: the backends mark chat mode in the fingerprint (ollama and the
// native engine ":chat", OpenAI-compatible servers "|chat"), so that chat
// and raw generations of one model are never taken for one another.
func IsChatFingerprint(fp string) bool {
	return strings.HasSuffix(fp, ":chat") || strings.HasSuffix(fp, "|chat")
}

// RunChat reports whether a run's stored config says it prompted the
// model through its chat template.
func RunChat(config json.RawMessage) bool {
	var c struct {
		Chat bool `json:"chat"`
	}
	return json.Unmarshal(config, &c) == nil && c.Chat
}
