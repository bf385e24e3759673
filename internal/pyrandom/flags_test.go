package pyrandom

import "flag"

var update = flag.Bool("update", false, "rewrite testdata/expected.json from python3")
