package main

import (
	"os"
	"sync"
)

// atExit are what tally undoes when it ends in failure or is interrupted
// (wholeOutput's cuts), run by undoAtExit.
var atExit struct {
	sync.Mutex
	fns []func()
}

// wholeOutput makes what a command writes to f (its standard output),
// when f is a regular file (a shell's `> page.html` or `>> log`), whole or
// nothing: undo, which tally calls when the command fails or is
// interrupted (undoAtExit), cuts the file back to the size it had when
// the command began; done forgets it once the command succeeded. On a
// pipe or a terminal both do nothing.
func wholeOutput(f *os.File) (done func()) {
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return func() {}
	}
	size := fi.Size()
	undo := func() { f.Truncate(size) }
	atExit.Lock()
	atExit.fns = append(atExit.fns, undo)
	i := len(atExit.fns) - 1
	atExit.Unlock()
	return func() {
		atExit.Lock()
		atExit.fns[i] = func() {}
		atExit.Unlock()
	}
}

// undoAtExit undoes what a command that did not finish leaves (its
// output file's part: wholeOutput).
func undoAtExit() {
	atExit.Lock()
	defer atExit.Unlock()
	for _, fn := range atExit.fns {
		fn()
	}
	atExit.fns = nil
}
