// Package redact removes secrets from text that tally prints or stores: an
// API key it was given, Authorization values (Bearer, Basic and token
// credentials), API-key-shaped tokens, and passwords in URLs and in any
// PostgreSQL connection form (URL user info, ?password= in the query, and
// key=value connection strings). It is the one mechanism through which every
// error message, stored error and store location passes before it is shown
// or written.
package redact

import (
	"regexp"
	"strings"
	"unicode"
)

// Mask replaces each secret.
const Mask = "xxxxx"

// minSecret is the length below which a literal secret is not masked (a
// one- or two-letter "key" would mask ordinary words).
const minSecret = 4

var (
	// authorization matches an Authorization header or field and its value,
	// with an optional scheme (Bearer, Basic, Token).
	authorization = regexp.MustCompile(`(?i)(\bauthorization["']?\s*[:=]\s*["']?)((?:bearer|basic|token)\s+)?([^\s"',;]+)`)
	// bearer matches a bearer credential anywhere in text.
	bearer = regexp.MustCompile(`(?i)(\b(?:bearer|basic)\s+)([A-Za-z0-9\-._~+/]{8,}=*)`)
	// apiKey matches OpenAI-style secret keys (sk-…, sk-proj-…).
	apiKey = regexp.MustCompile(`\bsk-[A-Za-z0-9_\-]{16,}`)
	// userinfo matches the password of a URL's user info.
	userinfo = regexp.MustCompile(`(?i)(\b[a-z][a-z0-9+.\-]*://[^/\s:@]*):([^@\s/]*)@`)
	// keyValue matches password-like parameters in a URL query or a
	// key=value connection string (a quoted value may hold spaces).
	keyValue = regexp.MustCompile(`(?i)((?:^|[?&;\s,(])(?:pg|ssl)?(?:password|passwd|pwd)|(?:^|[?&;\s,(])(?:api[_-]?key|access[_-]?token|auth[_-]?token|secret))(\s*=\s*)('(?:\\.|[^'\\])*'|[^&\s#'",;)]*)`)
)

// String returns s with every literal secret given (an API key, masked
// wherever it appears) and every credential the patterns recognise
// replaced by Mask. It is idempotent.
func String(s string, secrets ...string) string {
	if s == "" {
		return s // most stored errors: no cost on reads of many records
	}
	for _, sec := range secrets {
		if len(sec) >= minSecret {
			s = strings.ReplaceAll(s, sec, Mask)
		}
	}
	s = authorization.ReplaceAllString(s, "${1}${2}"+Mask)
	s = bearer.ReplaceAllStringFunc(s, func(m string) string {
		sub := bearer.FindStringSubmatch(m)
		if !strings.ContainsFunc(sub[2], func(r rune) bool { return !unicode.IsLetter(r) }) {
			return m // an English word after "bearer", not a token
		}
		return sub[1] + Mask
	})
	s = apiKey.ReplaceAllString(s, Mask)
	s = userinfo.ReplaceAllString(s, "${1}:"+Mask+"@")
	s = keyValue.ReplaceAllStringFunc(s, func(m string) string {
		sub := keyValue.FindStringSubmatch(m)
		if sub[3] == "" || sub[3] == Mask {
			return m
		}
		return sub[1] + sub[2] + Mask
	})
	return s
}
