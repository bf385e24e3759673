package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	_ "tally/benchmarks" // every built-in benchmark's metrics
	"tally/scoring"
)

// lineMetrics is every registered metric in the form `tally metric` runs
// it, sorted by name: the same registry task scoring uses.
func lineMetrics() []scoring.LineMetric {
	all := scoring.All()
	out := make([]scoring.LineMetric, len(all))
	for i, m := range all {
		out[i] = m.LineForm()
	}
	return out
}

func newMetricCmd() *cobra.Command {
	var list, aggregate bool
	opts := map[string]*string{}
	cmd := &cobra.Command{
		Use:   "metric NAME",
		Short: "Score JSON lines from stdin with a metric, no model needed (--list to list metrics)",
		Long: "metric reads one JSON object per line on stdin (or a JSON array, either gzipped) and writes one JSON object per line on stdout. " +
			"A line the reference implementation cannot score gets {\"error\": ...}; malformed JSON gets {\"error\": \"line N: ...\"} " +
			"and the exit status is non-zero at the end. With --aggregate, one JSON object for the whole input.",
		Args: func(cmd *cobra.Command, args []string) error {
			if list {
				return cobra.NoArgs(cmd, args)
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ms := lineMetrics()
			if list {
				return listMetrics(cmd.OutOrStdout(), ms)
			}
			var m *scoring.LineMetric
			for i := range ms {
				if ms[i].Name == args[0] {
					m = &ms[i]
				}
			}
			if m == nil {
				names := make([]string, len(ms))
				for i, x := range ms {
					names[i] = x.Name
				}
				return fmt.Errorf("unknown metric %q (known: %s)", args[0], strings.Join(names, ", "))
			}
			given := map[string]string{}
			for name, v := range opts {
				if cmd.Flags().Changed(name) {
					if !contains(m.Options, name) {
						return fmt.Errorf("metric %s takes no option --%s", m.Name, name)
					}
					given[name] = *v
				}
			}
			if m.Configure != nil {
				cm, err := m.Configure(given)
				if err != nil {
					return fmt.Errorf("metric %s: %w", m.Name, err)
				}
				m = &cm
			}
			in, err := metricInput(cmd.InOrStdin())
			if err != nil {
				return err
			}
			return scoreLines(in, cmd.OutOrStdout(), *m, aggregate)
		},
	}
	cmd.Flags().BoolVar(&list, "list", false, "list the metrics with their input and output fields")
	cmd.Flags().BoolVar(&aggregate, "aggregate", false, "print one aggregate object for the whole input")
	seen := map[string]bool{}
	for _, m := range lineMetrics() {
		for _, o := range m.Options {
			if !seen[o] {
				seen[o] = true
				v := new(string)
				opts[o] = v
				cmd.Flags().StringVar(v, o, "", "option of the metrics that take it (see --list)")
				if switchOptions[o] {
					cmd.Flags().Lookup(o).NoOptDefVal = "true"
				}
			}
		}
	}
	return cmd
}

// switchOptions are metric options that may be given without a value
// (--jury means --jury=true).
var switchOptions = map[string]bool{"jury": true}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func listMetrics(w io.Writer, ms []scoring.LineMetric) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, m := range ms {
		kind := "per line"
		switch {
		case m.Score == nil:
			kind = "aggregate only"
		case m.Aggregate != nil:
			kind = "per line, --aggregate"
		}
		opt := ""
		if len(m.Options) > 0 {
			opt = " options: --" + strings.Join(m.Options, ", --")
		}
		fmt.Fprintf(tw, "%s\t%s%s\n\t%s\n", m.Name, kind, opt, m.Doc)
	}
	return tw.Flush()
}

func scoreLines(r io.Reader, w io.Writer, m scoring.LineMetric, aggregate bool) error {
	if aggregate && m.Aggregate == nil {
		return fmt.Errorf("metric %s has no aggregate", m.Name)
	}
	if !aggregate && m.Score == nil {
		return fmt.Errorf("metric %s is aggregate only: pass --aggregate", m.Name)
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	bw := bufio.NewWriter(w)
	enc = json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	defer bw.Flush()
	var lines []json.RawMessage
	bad := 0
	for n := 1; sc.Scan(); n++ {
		line := append([]byte(nil), sc.Bytes()...)
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		if !json.Valid(line) {
			bad++
			var v any
			err := json.Unmarshal(line, &v)
			enc.Encode(map[string]string{"error": fmt.Sprintf("line %d: %v", n, err)})
			continue
		}
		if aggregate {
			lines = append(lines, line)
			continue
		}
		out, err := m.Score(line)
		if err != nil {
			enc.Encode(map[string]string{"error": err.Error()})
			continue
		}
		if err := enc.Encode(out); err != nil {
			return fmt.Errorf("line %d: encode result: %w", n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read stdin: %w", err)
	}
	if aggregate {
		out, err := m.Aggregate(lines)
		if err != nil {
			return fmt.Errorf("metric %s: %w", m.Name, err)
		}
		if err := enc.Encode(out); err != nil {
			return err
		}
	}
	if bad > 0 {
		bw.Flush()
		return fmt.Errorf("%d malformed JSON lines", bad)
	}
	return nil
}
