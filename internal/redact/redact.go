// Package redact removes secrets from text that tally prints or stores: an
// API key it was given, Authorization values (Bearer, Basic and token
// credentials), API-key-shaped tokens, and passwords in URLs and in any
// PostgreSQL connection form (URL user info, ?password= in the query, and
// key=value connection strings). It is the one mechanism through which every
// error message, stored error and store location passes before it is shown
// or written.
package redact

import (
	"net/url"
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
	s = urlQuerySecret.ReplaceAllStringFunc(s, func(m string) string {
		sub := urlQuerySecret.FindStringSubmatch(m)
		if sub[2] == Mask {
			return m
		}
		return sub[1] + Mask
	})
	s = keyValue.ReplaceAllStringFunc(s, func(m string) string {
		sub := keyValue.FindStringSubmatch(m)
		if sub[3] == "" || sub[3] == Mask {
			return m
		}
		return sub[1] + sub[2] + Mask
	})
	return s
}

// secretParams are the names (lower case, "-" as "_") of URL query
// parameters that carry a credential: DropURLSecrets removes them, and
// String masks their values in a URL's query.
var secretParams = map[string]bool{
	"api_key": true, "apikey": true, "key": true, "x_api_key": true, "api_token": true, "token": true, "access_token": true,
	"auth_token": true, "id_token": true, "auth": true, "secret": true, "client_secret": true, "password": true, "passwd": true,
	"pwd": true, "sig": true, "signature": true,
}

// urlQuerySecret matches a credential parameter of a URL's query (after
// ? or &) and its value.
var urlQuerySecret = regexp.MustCompile(`(?i)([?&](?:x[_-]?)?(?:api[_-]?key|apikey|key|api[_-]?token|token|access[_-]?token|auth[_-]?token|id[_-]?token|auth|secret|client[_-]?secret|password|passwd|pwd|sig|signature)=)([^&\s#'"]+)`)

// DropURLSecrets returns the URL s without the credentials it carries:
// its user info (user and password) and the query parameters that name a
// credential (api_key, key, token, access_token, secret, password, sig, …),
// each removed with its value and its separator; everything else byte for
// byte as it was, so that s itself comes back when it carries none (an
// identity made from a URL, such as a model's fingerprint, keeps its
// value). A string that does not parse as a URL comes back masked by
// String.
func DropURLSecrets(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return String(s)
	}
	out := s
	if u.User != nil {
		if i := strings.Index(out, u.User.String()+"@"); i >= 0 {
			out = out[:i] + out[i+len(u.User.String())+1:]
		}
	}
	q, frag, hasFrag := strings.Cut(out, "#")
	base, query, hasQuery := strings.Cut(q, "?")
	if !hasQuery {
		return out
	}
	var kept []string
	for _, p := range strings.Split(query, "&") {
		name, _, _ := strings.Cut(p, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		if !secretParams[strings.ReplaceAll(strings.ToLower(name), "-", "_")] {
			kept = append(kept, p)
		}
	}
	out = base
	if len(kept) > 0 {
		out += "?" + strings.Join(kept, "&")
	}
	if hasFrag {
		out += "#" + frag
	}
	return out
}
