package main

import (
	"fmt"
	"os"
	"regexp"

	"tally/internal/fsguard"
)

// shellPipe matches the names under which a shell hands a command one of
// its open descriptors: a pipe from `<(zcat x.jsonl.gz)` or standard input.
var shellPipe = regexp.MustCompile(`^/(dev/fd|proc/self/fd)/[0-9]+$|^/dev/stdin$`)

// checkDataFile refuses a --data that names a FIFO, a device or a socket
// in a folder (opening a FIFO waits for a writer for good), before it is
// opened: import's check (fsguard.Check). A folder (a task whose data is
// one) and a descriptor the shell handed over (shellPipe: its writer is
// already there) are read as before.
func checkDataFile(path string) error {
	if path == "" || shellPipe.MatchString(path) {
		return nil
	}
	fi, err := os.Stat(path)
	if err != nil || fi.IsDir() {
		return nil // the loader says what is wrong, or reads the folder
	}
	if err := fsguard.Check("", path, false); err != nil {
		return fmt.Errorf("--data: %w (a pipe from the shell, such as <(zcat data.jsonl.gz), is read)", err)
	}
	return nil
}
