//go:build unix

package chattemplate

import "syscall"

// workerAttr starts a worker in a process group of its own, so that the
// terminal's Ctrl-C, meant for tally, does not end a render in progress:
// tally decides when its renders stop.
func workerAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
