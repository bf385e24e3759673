package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"tally/internal/lmevalcli"
)

// modelHelp is --model's help on every command that takes a model.
const modelHelp = "model: " + lmevalcli.ModelForms

// omitted names the run flags a command does not take, each with why: a
// flag that would change nothing there is not registered, and giving it is
// one line saying so (refusedFlag).
type omitted map[string]string

// Why the flags of runFlags are left off a command.
const (
	whyNoModelWork = "it does no model work (it reads the stored generations), so there are no requests in flight and no memory to plan"
	whyNoClaims    = "only commands that generate claim work"
	whyNoFiles     = "plan only reads the store; run or rerun with --output-path writes the lm-eval files of the work it shows"
	whyImportLog   = "import stores a log's generations as they are, with no model work: there is no device, server, budget or stop setting to choose, and the whole log is imported"
)

// Flags left off the commands that share runFlags.
var (
	omitPlan = omitted{"output-path": whyNoFiles, "log-samples": whyNoFiles, "lease": whyNoClaims, "claim-batch": whyNoClaims}
	// omitStored is what rescore, compare and report leave off.
	omitStored = omitted{"concurrency": whyNoModelWork, "device-memory": whyNoModelWork, "lease": whyNoClaims, "claim-batch": whyNoClaims}
	omitImport = omitted{"device": whyImportLog, "dtype": whyImportLog, "device-memory": whyImportLog, "concurrency": whyImportLog,
		"base-url": whyImportLog, "model-revision": whyImportLog, "output-path": whyImportLog, "log-samples": whyImportLog,
		"stop": whyImportLog, "max-tokens": whyImportLog, "limit": whyImportLog, "samples": whyImportLog,
		"lease": whyNoClaims, "claim-batch": whyNoClaims}
)

// refusedPrefix leads the annotation that records why a command does not
// take a flag.
const refusedPrefix = "tally.refused:"

// addFlags adds the flags of from to cmd, except those omit names, whose
// reasons cmd's annotations keep for refusedFlag.
func addFlags(cmd *cobra.Command, from *pflag.FlagSet, omit omitted) {
	from.VisitAll(func(fl *pflag.Flag) {
		if why, ok := omit[fl.Name]; ok {
			if cmd.Annotations == nil {
				cmd.Annotations = map[string]string{}
			}
			cmd.Annotations[refusedPrefix+fl.Name] = why
			return
		}
		cmd.Flags().AddFlag(fl)
	})
}

// refusedFlag is the error for a flag a command does not take because it
// would change nothing there ("`tally plan` does not take --output-path:
// …"), or nil when err is about something else.
func refusedFlag(c *cobra.Command, err error) error {
	var ne *pflag.NotExistError
	if !errors.As(err, &ne) || ne.GetSpecifiedName() == "" {
		return nil
	}
	name := string(lmevalcli.Normalize(nil, ne.GetSpecifiedName()))
	why, ok := c.Annotations[refusedPrefix+name]
	if !ok {
		return nil
	}
	return fmt.Errorf("`%s` does not take --%s: %s", c.CommandPath(), name, why)
}

// refuseUnused refuses the flags among names that were given although, as
// the command was called, they change nothing: why says when they apply.
func refuseUnused(cmd *cobra.Command, why string, names ...string) error {
	var given []string
	for _, n := range names {
		if cmd.Flags().Changed(n) {
			given = append(given, "--"+n)
		}
	}
	if len(given) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %s", strings.Join(given, ", "), why)
}
