package generate

import (
	"fmt"
	"strings"
	"unicode"
)

// CheckSettingName says why name cannot name a stop setting (nil when it
// can): it is empty, holds "=" (which ends a name on the command line), a
// path separator or a control character, or is "." or "..". A setting's
// name becomes a folder's or file's name in what tally writes (lm-eval
// files), so `--stop` and `tally import` refuse the same names.
func CheckSettingName(name string) error {
	if name == "" || strings.ContainsAny(name, "=/\\") || strings.ContainsFunc(name, unicode.IsControl) || name == "." || name == ".." {
		return fmt.Errorf("setting name %q: a setting name may not be empty, hold = , a path separator or a control character, or be . or ..", name)
	}
	return nil
}
