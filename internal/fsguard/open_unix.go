//go:build unix

package fsguard

import "syscall"

// openNoWait makes an open of a FIFO return at once rather than wait for
// a writer (it changes nothing for a regular file).
const openNoWait = syscall.O_NONBLOCK
