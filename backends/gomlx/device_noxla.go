//go:build noxla || !cgo

package gomlx

import (
	"fmt"

	mlbackends "github.com/gomlx/compute"
)

// xlaAvailable reports whether this binary was built with the XLA backend.
const xlaAvailable = false

func newXLA(device, _ string) (mlbackends.Backend, error) {
	return nil, fmt.Errorf("device %s: this binary was built without XLA (noxla tag or CGO_ENABLED=0); rebuild with CGO on and without -tags noxla", device)
}

// xlaTF32 reports whether backend multiplies float32 matrices in TF32.
func xlaTF32(mlbackends.Backend) bool { return false }
