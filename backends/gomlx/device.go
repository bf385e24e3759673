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
		b, err := gobackend.New("")
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
