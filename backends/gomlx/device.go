package gomlx

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	mlbackends "github.com/gomlx/compute"
	"github.com/gomlx/compute/gobackend"
)

// newDevice creates the gomlx backend for Options.Device: "" or "cpu" (or
// "go") is gomlx's pure-Go backend; "xla" and "cuda" use the XLA/PJRT
// backend (see gpu.md), never falling back to pure Go.
func newDevice(device string) (mlbackends.Backend, error) {
	switch strings.ToLower(device) {
	case "", "cpu", "go", "simplego":
		cfg := goBackendConfig
		if v, ok := os.LookupEnv("TALLY_GOBACKEND_CONFIG"); ok {
			cfg = v
		}
		b, err := gobackend.New(cfg)
		if err != nil {
			return nil, fmt.Errorf("create pure-Go backend: %w", err)
		}
		return b, nil
	case "xla", "cuda":
		d := strings.ToLower(device)
		return newXLA(d, xlaBackendConfig(d, os.Getenv("GOMLX_BACKEND")))
	default:
		return nil, fmt.Errorf("unknown device %q (want cpu, xla or cuda)", device)
	}
}

// goBackendConfig configures gomlx's pure-Go backend. Its default runs
// independent graph nodes concurrently on a pool of 2×GOMAXPROCS slots,
// and a matrix product running in a slot waits for a free slot to fan
// out its own workers (compute v0.1.3 workerspool.Saturate): once as many
// products are ready at the same time as there are slots, every one of
// them waits and the run deadlocks, which a prefill chunk of several
// attention blocks reaches on two cores. Running nodes one after another
// ("ops_sequential"), each product still spread over every core, avoids
// it.
const goBackendConfig = "ops_sequential"

// xlaPluginConfig picks the PJRT plugin for device from $GOMLX_BACKEND
// ("xla:/abs/plugin.so", "xla:cuda", either followed by go-xla's options
// ",key=value"); empty means "first available" for "xla" and "cuda" for
// "cuda".
func xlaPluginConfig(device, env string) string {
	if cfg, ok := strings.CutPrefix(env, "xla:"); ok && cfg != "" {
		return cfg
	}
	if device == "cuda" {
		return "cuda"
	}
	return ""
}

// xlaBackendConfig is the go-xla configuration for device:
// xlaPluginConfig's plugin and options, with "tf32=false" added unless the
// options name tf32. go-xla multiplies float32 matrices in TF32 on CUDA by
// default (10-bit mantissas: about 3e-4 relative error), which is not the
// float32 the fingerprint names: RoPE's rotation and the last-position
// selection are products too, so TF32 would round activations in every
// --dtype mode. GOMLX_BACKEND=xla:PLUGIN,tf32=true asks for it anyway,
// and the fingerprint's device then says "-tf32" (deviceKind).
func xlaBackendConfig(device, env string) string {
	cfg := xlaPluginConfig(device, env)
	_, opts, _ := strings.Cut(cfg, ",")
	for _, o := range strings.Split(opts, ",") {
		if k, _, _ := strings.Cut(o, "="); strings.TrimSpace(k) == "tf32" {
			return cfg
		}
	}
	return cfg + ",tf32=false"
}

// pluginKind names a PJRT plugin for the fingerprint from the name go-xla
// gives it (a short name such as "cuda" or "cpu_v0.83.1", or the absolute
// path of the plugin file): "cuda" for NVIDIA plugins whatever their file
// is called (JAX's xla_cuda_plugin.so, go-xla's
// pjrt_c_api_cuda_plugin.so), "rocm", "cpu", else the file's base name
// without "pjrt_c_api_", "_plugin" and ".so", in lower-case letters,
// digits, '.', '_' and '-' (so no folder or ':' reaches the fingerprint).
func pluginKind(name string) string {
	base := strings.ToLower(filepath.Base(name))
	switch {
	case strings.Contains(base, "cuda") || strings.Contains(base, "nvidia"):
		return "cuda"
	case strings.Contains(base, "rocm"):
		return "rocm"
	case strings.Contains(base, "cpu"):
		return "cpu"
	}
	base = strings.TrimSuffix(base, ".so")
	base = strings.TrimPrefix(base, "pjrt_c_api_")
	base = strings.TrimSuffix(base, "_plugin")
	clean := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, base)
	if clean == "" {
		return "unknown"
	}
	return clean
}
