// Package retry holds the back-off policy shared by tally's server backends
// (ollama, openai): exponential delays with jitter, capped, and the
// server's Retry-After header when it sends one.
package retry

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Backoff is the delay before retry n (1-based): base·2^(n-1), capped at
// maxDelay, scaled into [½, 1] of itself by jitter (in [0, 1)).
func Backoff(base, maxDelay time.Duration, n int, jitter float64) time.Duration {
	d := base
	for i := 1; i < n && d < maxDelay; i++ {
		d *= 2
	}
	d = min(d, maxDelay)
	return time.Duration(float64(d) * (0.5 + jitter/2))
}

// RetryAfter parses a Retry-After header value (delay seconds or an HTTP
// date, RFC 9110 §10.2.3) relative to now. ok is false when the value is
// absent or malformed; a date in the past gives 0.
func RetryAfter(value string, now time.Time) (d time.Duration, ok bool) {
	value = strings.TrimSpace(value)
	if value == "" {
		return 0, false
	}
	if secs, err := strconv.ParseFloat(value, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		return time.Duration(secs * float64(time.Second)), true
	}
	t, err := http.ParseTime(value)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}

// Sleep waits d, or until ctx is done; it reports whether the full delay
// passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
