package retry

import (
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	tests := []struct {
		n      int
		jitter float64
		want   time.Duration
	}{
		{1, 0.999999, time.Second - time.Microsecond/2},
		{1, 0, 500 * time.Millisecond},
		{2, 0, time.Second},
		{3, 0.5, 3 * time.Second},
		{5, 0, 8 * time.Second},
		{9, 0, 8 * time.Second}, // capped at 16s, then halved by jitter 0
		{50, 0.999999, 16*time.Second - 8*time.Microsecond},
	}
	for _, tc := range tests {
		got := Backoff(time.Second, 16*time.Second, tc.n, tc.jitter)
		if d := got - tc.want; d < -time.Microsecond || d > time.Microsecond {
			t.Errorf("Backoff(n=%d, jitter=%v) = %v, want %v", tc.n, tc.jitter, got, tc.want)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"3", 3 * time.Second, true},
		{" 0.5 ", 500 * time.Millisecond, true},
		{"-1", 0, false},
		{"soon", 0, false},
		{"Thu, 15 Jan 2026 12:00:07 GMT", 7 * time.Second, true},
		{"Thu, 15 Jan 2026 11:00:00 GMT", 0, true},
	}
	for _, tc := range tests {
		got, ok := RetryAfter(tc.in, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("RetryAfter(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
