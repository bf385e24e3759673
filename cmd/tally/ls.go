package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"tally/generate"
	"tally/report"
	"tally/store"
	"tally/tasks/variant"
)

func newLsCmd() *cobra.Command {
	var storePath string
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"runs"},
		Short:   "List what the store holds: models, tasks, stop settings, sample counts, budgets and each model's last run",
		Long: "ls reads the store alone (no task config, no model) and lists per model and task the samples generated, failed and " +
			"pending, per stop setting and token budget the samples scored and the metrics, and each model's last run with the " +
			"flags it was given. `tally report --store FILE` then reports all of it.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			st, err := openStoreReadOnly(ctx, storePath, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer st.Close()
			inv, err := st.Inventory(ctx)
			if err != nil {
				return err
			}
			workers, err := st.Workers(ctx, "")
			if err != nil {
				return err
			}
			recs, err := st.Variants(ctx)
			if err != nil {
				return err
			}
			labels := inventoryLabels(inv, recs)
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), struct {
					*store.Inventory
					Variants map[string]variant.Record `json:"variants"`
					Labels   map[string]string         `json:"labels"`
					Workers  store.WorkerView          `json:"workers"`
				}{inv, recs, labels, workers})
			}
			if err := printInventory(cmd.OutOrStdout(), inv, labels); err != nil {
				return err
			}
			return printWorkersSection(cmd.OutOrStdout(), workers)
		},
	}
	cmd.Flags().StringVar(&storePath, "store", defaultStore(), "results store: a SQLite file or a PostgreSQL URL (default from $TALLY_STORE, else tally.db)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object instead of tables")
	return cmd
}

// inventoryLabels names the inventory's tasks (variant keys) for people:
// their names, and what sets a variant apart from the others of its name
// (variant.Labels).
func inventoryLabels(inv *store.Inventory, recs map[string]variant.Record) map[string]string {
	var keys []string
	for _, t := range inv.Tasks {
		keys = append(keys, t.Task)
	}
	for _, c := range inv.Cells {
		keys = append(keys, c.Task)
	}
	return variant.Labels(keys, recs)
}

// printInventory writes the inventory as three tables: models and their
// last runs, generations per task, scores per setting; tasks named by
// labels.
func printInventory(w io.Writer, inv *store.Inventory, labels map[string]string) error {
	// A chat run is labelled so: one model's chat and raw runs are two
	// fingerprints that would otherwise read alike.
	model := func(fp string) string {
		return report.ModelLabel(inv.Models[fp], report.IsChatFingerprint(fp) || report.RunChat(inv.LastRun[fp].Config))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MODEL\tFINGERPRINT\tLAST RUN\tCOMMAND\tSTATUS\tCONFIG")
	fps := make([]string, 0, len(inv.Models))
	for fp := range inv.Models {
		fps = append(fps, fp)
	}
	slices.SortFunc(fps, func(a, b string) int { return cmp.Or(cmp.Compare(model(a), model(b)), cmp.Compare(a, b)) })
	for _, fp := range fps {
		m := model(fp)
		r, ok := inv.LastRun[fp]
		if !ok {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\n", m, short(fp))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", m, short(fp), store.RunStarted(r), r.Command, r.Status, configSummary(r.Config))
	}
	if line := runCounts(inv.Runs); line != "" {
		fmt.Fprintln(tw, line)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "MODEL\tTASK\tSAMPLES\tGENERATED\tFAILED\tPENDING\tIMPORTED\tMAX BUDGET")
	for _, t := range inv.Tasks {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\n", model(t.Fingerprint), labels[t.Task], t.Samples, t.Generated, t.Failed, t.Pending, t.Imported, t.MaxBudget)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "MODEL\tTASK\tSETTING\tBUDGET\tSCORED\tMETRICS")
	for _, c := range inv.Cells {
		set := generate.StopSetting{Name: c.Setting}
		if c.SettingKey != "" {
			set.Seqs = strings.Split(c.SettingKey, "\x00")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", model(c.Fingerprint), labels[c.Task], set.String(), c.Budget, c.Scored, strings.Join(c.Metrics, ","))
	}
	return tw.Flush()
}

// runCounts is the line under the runs table counting every run by
// status ("" when there is none), with what dead means.
func runCounts(byStatus map[string]int) string {
	var parts []string
	for _, st := range []string{store.RunRunning, store.RunDone, store.RunFailed, store.RunInterrupted, store.RunDead} {
		if n := byStatus[st]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, st))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	line := "runs: " + strings.Join(parts, ", ")
	if byStatus[store.RunDead] > 0 {
		line += " (a dead run's process stopped heartbeating without closing it: killed, or its machine lost)"
	}
	return line
}

// short abbreviates a long fingerprint for display.
// configSummary is a run's flags as the table shows them: the ones given
// (not zero, empty or null), as key=value in key order, the command left
// out (it has its own column), a list of more than three values shown by
// its first and its length, and the whole cut at 120 characters (--json
// gives the config as stored).
func configSummary(raw json.RawMessage) string {
	var cfg map[string]any
	if json.Unmarshal(raw, &cfg) != nil {
		return short(string(raw))
	}
	keys := make([]string, 0, len(cfg))
	for k := range cfg {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		if k == "command" {
			continue
		}
		var v string
		switch x := cfg[k].(type) {
		case nil:
		case bool:
			if x {
				v = "true"
			}
		case float64:
			if x != 0 {
				v = strconv.FormatFloat(x, 'g', -1, 64)
			}
		case string:
			v = x
		case []any:
			vals := make([]string, len(x))
			for i, e := range x {
				vals[i] = fmt.Sprint(e)
			}
			if len(vals) > 3 {
				v = fmt.Sprintf("%s,… (%d)", vals[0], len(vals))
			} else {
				v = strings.Join(vals, ",")
			}
		default:
			b, _ := json.Marshal(x)
			if string(b) != "{}" {
				v = string(b)
			}
		}
		if v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	out := strings.Join(parts, " ")
	if r := []rune(out); len(r) > 120 {
		out = string(r[:119]) + "…"
	}
	if out == "" {
		return "-"
	}
	return out
}

func short(fp string) string {
	if len(fp) > 40 {
		return fp[:36] + "…"
	}
	return fp
}
