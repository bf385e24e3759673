package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"tally/backends"
	"tally/backends/gomlx"
	"tally/backends/tokenizer"
	"tally/tasks"
	"tally/tasks/lmeval"
)

func newGenerateCmd() *cobra.Command {
	var model, device, dtype, prompt, ids string
	var maxTokens int
	var asJSON, logits bool
	cmd := &cobra.Command{
		Use:   "generate",
		Short: "Greedy-generate from one prompt on the native backend (for debugging and outside checks)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if (prompt == "") == (ids == "") {
				return fmt.Errorf("pass exactly one of --prompt or --ids")
			}
			be, err := openModel(ctx, model, modelOptions{device: device, dtype: dtype, concurrency: 1})
			if err != nil {
				return err
			}
			defer be.Close()
			m, ok := be.(*gomlx.Model)
			if !ok {
				return fmt.Errorf("tally generate needs the native backend")
			}
			var promptIDs []int
			if ids != "" {
				for _, f := range strings.Split(ids, ",") {
					v, err := strconv.Atoi(strings.TrimSpace(f))
					if err != nil {
						return fmt.Errorf("--ids: %q is not an integer", f)
					}
					promptIDs = append(promptIDs, v)
				}
			} else {
				tok := m.Tokenizer()
				if tok == nil {
					return fmt.Errorf("model %s has no tokenizer.json: pass --ids", model)
				}
				if promptIDs, err = tok.Encode(prompt, true); err != nil {
					return fmt.Errorf("tokenise prompt: %w", err)
				}
			}
			out := struct {
				IDs        []int     `json:"ids"`
				Text       string    `json:"text"`
				Finish     string    `json:"finish"`
				LastLogits []float32 `json:"last_logits,omitempty"`
			}{IDs: []int{}}
			var genErr error
			err = m.Generate(ctx, []backends.Request{{PromptIDs: promptIDs, MaxTokens: maxTokens}}, func(ev backends.Event) bool {
				out.IDs = append(out.IDs, ev.IDs...)
				out.Text += ev.Text
				if ev.Done {
					out.Finish, genErr = ev.Finish, ev.Err
				}
				return true
			})
			if err == nil {
				err = genErr
			}
			if err != nil {
				return fmt.Errorf("generate: %w", err)
			}
			if logits {
				if out.LastLogits, err = m.Logits(ctx, promptIDs); err != nil {
					return fmt.Errorf("logits: %w", err)
				}
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), out)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s\n[finish: %s, %d tokens]\n", out.Text, out.Finish, len(out.IDs))
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&model, "model", "demo", modelHelp+"; generate runs the native engine, so not ollama:, openai: or imported:")
	fl.StringVar(&device, "device", "", "cpu (default), xla or cuda")
	fl.StringVar(&dtype, "dtype", "auto", "the dtype of the matrix products: auto (the checkpoint's where this CPU is fast in it, else float32), float32, bfloat16 or float16")
	fl.StringVar(&prompt, "prompt", "", "prompt text (tokenised with special tokens)")
	fl.StringVar(&ids, "ids", "", "prompt token ids, comma separated")
	fl.IntVar(&maxTokens, "max-tokens", 32, "tokens to generate")
	fl.BoolVar(&asJSON, "json", false, `print {"ids", "text", "finish"}`)
	fl.BoolVar(&logits, "logits", false, "also print the logits at the last prompt position")
	return cmd
}

func newTokenizeCmd() *cobra.Command {
	var path string
	var special bool
	cmd := &cobra.Command{
		Use:   "tokenize",
		Short: `Tokenise {"text": ...} JSON lines from stdin into {"ids": [...]} lines`,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if path == "" {
				return fmt.Errorf("pass --tokenizer PATH (tokenizer.json, .json.gz or a model directory)")
			}
			tok, err := tokenizer.Load(path)
			if err != nil {
				return err
			}
			sc := bufio.NewScanner(cmd.InOrStdin())
			sc.Buffer(make([]byte, 1<<20), 1<<30)
			w := bufio.NewWriter(cmd.OutOrStdout())
			defer w.Flush()
			enc := json.NewEncoder(w)
			bad := 0
			for n := 1; sc.Scan(); n++ {
				var in struct {
					Text *string `json:"text"`
				}
				if err := json.Unmarshal(sc.Bytes(), &in); err != nil || in.Text == nil {
					if err == nil {
						err = fmt.Errorf(`missing field "text"`)
					}
					bad++
					enc.Encode(map[string]string{"error": fmt.Sprintf("line %d: %v", n, err)})
					continue
				}
				ids, err := tok.Encode(*in.Text, special)
				if err != nil {
					enc.Encode(map[string]string{"error": fmt.Sprintf("line %d: %v", n, err)})
					bad++
					continue
				}
				if ids == nil {
					ids = []int{}
				}
				enc.Encode(map[string][]int{"ids": ids})
			}
			if err := sc.Err(); err != nil {
				return fmt.Errorf("read stdin: %w", err)
			}
			if bad > 0 {
				w.Flush()
				return fmt.Errorf("%d lines could not be tokenised", bad)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "tokenizer", "", "tokenizer.json (or .json.gz, or a model directory)")
	cmd.Flags().BoolVar(&special, "special", false, "add special tokens (the post-processor, e.g. BOS)")
	return cmd
}

func newTasksCmd() *cobra.Command {
	var lmevalDir, python string
	cmd := &cobra.Command{
		Use:   "tasks [list]",
		Short: "List the built-in tasks, or which lm-eval task files of a folder tally runs (--lm-eval DIR)",
		Args:  listArg,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if lmevalDir != "" {
				survey := lmeval.SurveyDir
				if python != "" || os.Getenv(lmeval.EnvPython) != "" {
					survey = lmeval.SurveyDirBridged
				}
				sv, err := survey(lmevalDir)
				if err != nil {
					return err
				}
				return sv.Write(cmd.OutOrStdout())
			}
			return printTasks(cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&lmevalDir, "lm-eval", "", "a checkout's lm_eval/tasks folder: list which task files load and why the others do not")
	cmd.Flags().StringVar(&python, "python", "", pythonHelp+" (here: count what would load with it; no Python runs)")
	return cmd
}

// listArg accepts no argument or "list" (lm-eval's `--tasks list` habit).
func listArg(_ *cobra.Command, args []string) error {
	if len(args) == 0 || (len(args) == 1 && args[0] == "list") {
		return nil
	}
	return fmt.Errorf("unexpected argument %q: `tally tasks` (or `tally tasks list`) lists the built-in tasks", args[0])
}

// printTasks lists the built-in tasks with their stop settings, budget and
// metrics.
func printTasks(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "task\tstop settings\tmax tokens\tmetrics\tdescription")
	for _, name := range tasks.Builtin() {
		c, err := tasks.Resolve(name)
		if err != nil {
			return err
		}
		var sets []string
		for _, s := range c.Settings() {
			sets = append(sets, s.String())
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", c.Task, strings.Join(sets, " "), c.MaxTokens, strings.Join(c.Metrics, ","), c.Description)
	}
	return tw.Flush()
}
