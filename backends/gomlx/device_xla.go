//go:build !noxla && cgo

package gomlx

import (
	"fmt"

	mlbackends "github.com/gomlx/compute"
	"github.com/gomlx/go-xla/compute/xla"
)

// xlaAvailable reports whether this binary was built with the XLA backend.
const xlaAvailable = true

// newXLA creates go-xla's backend from cfg (xlaBackendConfig).
func newXLA(device, cfg string) (b mlbackends.Backend, err error) {
	xla.EnableAutoInstall(false)
	defer func() {
		if r := recover(); r != nil {
			b, err = nil, fmt.Errorf("device %s: XLA backend failed: %v", device, r)
		}
	}()
	b, err = xla.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("device %s: no usable PJRT plugin %q (set GOMLX_BACKEND=xla:/abs/path/to/xla_cuda_plugin.so or PJRT_PLUGIN_LIBRARY_PATH; auto-install is off): %w", device, cfg, err)
	}
	return b, nil
}

// xlaTF32 reports whether backend multiplies float32 matrices in TF32.
func xlaTF32(backend mlbackends.Backend) bool {
	b, ok := backend.(*xla.Backend)
	return ok && b.DotGeneralUseTF32
}
