package fsguard

import (
	"fmt"
	"os"
	"syscall"
)

// pseudoFS names the kernel's file systems whose files stat as regular
// but are not data: their size says nothing of what a read returns, and
// a read may block or never end (/proc/kmsg, /sys/kernel/debug/...).
var pseudoFS = map[int64]string{
	0x9fa0:     "/proc (procfs)",
	0x62656572: "/sys (sysfs)",
	0x64626720: "debugfs",
	0x74726163: "tracefs",
	0x73636673: "securityfs",
	0x27e0eb:   "cgroupfs",
	0x63677270: "cgroup2fs",
	0x62656570: "configfs",
	0xde5e81e4: "efivarfs",
	0x6165676c: "pstorefs",
	0xcafe4a11: "bpffs",
}

// notPseudo refuses a file of a kernel pseudo file system (path is
// followed through symbolic links).
func notPseudo(path string) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return nil // Stat succeeded: let the open say what is wrong
	}
	return pseudoErr(path, int64(st.Type))
}

// notPseudoFile is notPseudo of an open file.
func notPseudoFile(path string, f *os.File) error {
	var st syscall.Statfs_t
	if err := syscall.Fstatfs(int(f.Fd()), &st); err != nil {
		return nil
	}
	return pseudoErr(path, int64(st.Type))
}

func pseudoErr(path string, typ int64) error {
	if what, ok := pseudoFS[typ]; ok {
		return fmt.Errorf("%s is a file of %s, not data: refused, only regular files are read", path, what)
	}
	return nil
}
