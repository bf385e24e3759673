//go:build !unix

package chattemplate

import "syscall"

// workerAttr starts a worker as any process.
func workerAttr() *syscall.SysProcAttr { return nil }
