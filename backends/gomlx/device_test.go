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

// TestXLABackendConfig checks that float32 products are float32 on CUDA:
// go-xla's TF32 default is turned off unless GOMLX_BACKEND names tf32.
func TestXLABackendConfig(t *testing.T) {
	tests := []struct{ device, env, want string }{
		{"cuda", "", "cuda,tf32=false"},
		{"xla", "", ",tf32=false"},
		{"cuda", "xla:/opt/venv/jax_plugins/xla_cuda13/xla_cuda_plugin.so", "/opt/venv/jax_plugins/xla_cuda13/xla_cuda_plugin.so,tf32=false"},
		{"cuda", "xla:cuda,preallocate=true", "cuda,preallocate=true,tf32=false"},
		{"cuda", "xla:/abs/p.so,tf32=true", "/abs/p.so,tf32=true"},
		{"cuda", "xla:cuda,tf32=false,memory_fraction=0.9", "cuda,tf32=false,memory_fraction=0.9"},
		{"cuda", "go", "cuda,tf32=false"},
	}
	for _, tc := range tests {
		if got := xlaBackendConfig(tc.device, tc.env); got != tc.want {
			t.Errorf("xlaBackendConfig(%q, %q) = %q, want %q", tc.device, tc.env, got, tc.want)
		}
	}
}

// TestPluginKind checks the fingerprint's name for a plugin: a plugin
// named by its absolute path (JAX's wheel) must not put the path into the
// fingerprint, and every NVIDIA plugin is "cuda".
func TestPluginKind(t *testing.T) {
	tests := []struct{ name, want string }{
		{"cuda", "cuda"},
		{"/opt/torch/.venv/lib/python3.12/site-packages/jax_plugins/xla_cuda13/xla_cuda_plugin.so", "cuda"},
		{"/root/.local/lib/go-xla/nvidia/pjrt_c_api_cuda_plugin.so", "cuda"},
		{"cpu_v0.83.1", "cpu"},
		{"/usr/lib/pjrt_c_api_cpu_plugin.so", "cpu"},
		{"/x/pjrt_c_api_rocm_plugin.so", "rocm"},
		{"/x/pjrt_c_api_tpu:v5_plugin.so", "tpu_v5"},
		{"/x/", "x"},
	}
	for _, tc := range tests {
		if got := pluginKind(tc.name); got != tc.want {
			t.Errorf("pluginKind(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}
