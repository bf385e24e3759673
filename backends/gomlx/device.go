package gomlx

import (
	"fmt"
	"os"
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
		return newXLA(strings.ToLower(device), os.Getenv("GOMLX_BACKEND"))
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
// ("xla:/abs/plugin.so", "xla:cuda"); empty means "first available" for
// "xla" and "cuda" for "cuda".
func xlaPluginConfig(device, env string) string {
	if cfg, ok := strings.CutPrefix(env, "xla:"); ok && cfg != "" {
		return cfg
	}
	if device == "cuda" {
		return "cuda"
	}
	return ""
}
