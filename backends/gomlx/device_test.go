package gomlx

import (
	"context"
	"strings"
	"testing"
)

func TestDeviceErrors(t *testing.T) {
	tests := []struct {
		device, env string
		want        []string
	}{
		{"tpu", "", []string{"unknown device", "tpu"}},
		{"xla", "xla:/nonexistent/xla_cuda_plugin.so", []string{"xla"}},
	}
	for _, tc := range tests {
		t.Run(tc.device, func(t *testing.T) {
			t.Setenv("GOMLX_BACKEND", tc.env)
			t.Setenv("GOMLX_NO_AUTO_INSTALL", "1")
			m, err := Demo(context.Background(), Options{Device: tc.device})
			if err == nil {
				m.Close()
				t.Skip("device available here")
			}
			msg := err.Error()
			t.Log(msg)
			if strings.Contains(msg, "\n") {
				t.Errorf("multi-line error %q", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not mention %q", msg, w)
				}
			}
		})
	}
	if got := xlaPluginConfig("cuda", ""); got != "cuda" {
		t.Errorf("cuda plugin %q", got)
	}
	if got := xlaPluginConfig("xla", "xla:/abs/p.so"); got != "/abs/p.so" {
		t.Errorf("env plugin %q", got)
	}
}
