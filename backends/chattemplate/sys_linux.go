package chattemplate

import (
	"fmt"
	"os"
	"syscall"
)

// limitMemory bounds the process's address space to what it maps now and
// budget bytes more (RLIMIT_AS): past it, the Go runtime's next mapping
// fails and the process ends with "fatal error: out of memory". The Go
// runtime grows its heap by mappings as it needs them, so the bound holds
// its heap, its goroutines' stacks and its threads alike.
func limitMemory(budget int64) error {
	statm, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return err
	}
	var pages uint64
	if _, err := fmt.Sscan(string(statm), &pages); err != nil {
		return fmt.Errorf("/proc/self/statm: %w", err)
	}
	limit := pages*uint64(os.Getpagesize()) + uint64(budget)
	var cur syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &cur); err != nil {
		return err
	}
	if cur.Cur < limit {
		return nil // a tighter limit of the user's holds already
	}
	return syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: limit, Max: min(limit, cur.Max)})
}

// growPipe makes a pipe's buffer 1 MiB (from 64 KiB), so that a prompt of
// that size passes in one write rather than in turns of both processes.
// A pipe that stays as it was only costs time.
func growPipe(f *os.File) {
	const setPipeSize = 1031 // F_SETPIPE_SZ
	if c, err := f.SyscallConn(); err == nil {
		c.Control(func(fd uintptr) { syscall.Syscall(syscall.SYS_FCNTL, fd, setPipeSize, 1<<20) })
	}
}
