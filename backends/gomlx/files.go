package gomlx

import (
	"os"
	"path/filepath"
	"strings"

	"tally/internal/fsguard"
)

// FollowSymlinksEnv names the environment variable that, set to 1, lets a
// model folder's files be symbolic links that lead out of it (tally's
// command line sets Options.FollowSymlinks from it).
const FollowSymlinksEnv = "TALLY_FOLLOW_SYMLINKS"

// maxModelJSON bounds config.json, generation_config.json and the
// safetensors index, checked before they are read (a few kilobytes to a
// few megabytes in real models); tokenizer.json has tokenizer.MaxFileSize,
// tokenizer_config.json chattemplate.MaxFileSize.
const maxModelJSON = 64 << 20

// ModelFolder is how the files of a model directory are read: regular
// files only (a FIFO, a device, a socket or a file of /proc is refused
// before it is opened), and no symbolic link that leads out of the folder
// unless followOut. The folder of a snapshot in the Hugging Face cache
// (…/models--org--name/snapshots/REV) is its repository folder
// (models--org--name): the cache's own links, from snapshots/REV into
// blobs/, stay inside it.
func ModelFolder(dir string, followOut bool) fsguard.Folder {
	root := dir
	if snaps := filepath.Dir(filepath.Clean(dir)); filepath.Base(snaps) == "snapshots" &&
		strings.HasPrefix(filepath.Base(filepath.Dir(snaps)), "models--") {
		root = filepath.Dir(snaps)
	}
	return fsguard.Folder{Root: root, FollowOut: followOut, Hint: "set " + FollowSymlinksEnv + "=1 to read it"}
}

// openRegular opens a file checked before (a weight file, to read a
// tensor or its digest), refusing it if it is no longer a regular file.
func openRegular(path string) (*os.File, error) { return fsguard.Open("", path, true, -1) }
