package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"tally/backends/gomlx"
)

// referenceSection returns the lines of docs/reference.md's section
// headed "## title", up to the next section.
func referenceSection(t *testing.T, path, title string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\n## "+title+"\n")
	if !ok {
		t.Fatalf("%s has no section %q", path, title)
	}
	rest, _, _ = strings.Cut(rest, "\n## ")
	return strings.Split(rest, "\n")
}

// tableCells splits a Markdown table row into its cells ("" row: nil).
func tableCells(line string) []string {
	if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") {
		return nil
	}
	return strings.Split(strings.Trim(line, "|"), " | ")
}

var backticked = regexp.MustCompile("`([^`]+)`")

// commandsByPath maps every command of tally's tree to its name as
// docs/reference.md writes it ("completion bash" is completion's).
func commandsByPath(root *cobra.Command) map[string]*cobra.Command {
	out := map[string]*cobra.Command{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Name() == "help" {
				continue
			}
			out[strings.TrimPrefix(sub.CommandPath(), "tally ")] = sub
			walk(sub)
		}
	}
	walk(root)
	return out
}

// takes reports whether c, or each of its subcommands when it has them
// (completion bash, zsh, …), takes the visible flag name.
func takes(c *cobra.Command, name string) bool {
	if subs := c.Commands(); len(subs) > 0 {
		for _, s := range subs {
			if s.Name() != "help" && !takes(s, name) {
				return false
			}
		}
		return true
	}
	f := c.Flags().Lookup(name)
	return f != nil && !f.Hidden
}

// docName is the name docs/reference.md files a command's flags under.
func docName(path string) string {
	name, _, _ := strings.Cut(path, " ")
	return name
}

// TestHelpIsTheReference is item 4 of issue 34: the help and
// docs/reference.md say the same. Every flag the reference's table lists
// exists on each command it names; every flag of every command is listed
// under that command; every --model help names every form --model takes;
// --model-revision's help and docs/servers.md agree; the commands `tally
// --help` lists are the reference's, and report's line there says what
// the reference says (it recomputes stale scores in memory; it said "no
// scoring").
func TestHelpIsTheReference(t *testing.T) {
	const ref = "../../docs/reference.md"
	root := newRoot()
	root.InitDefaultCompletionCmd()
	cmds := commandsByPath(root)

	documented := map[string]map[string]bool{} // command → flags
	rows := 0
	for _, line := range referenceSection(t, ref, "Flags") {
		cells := tableCells(line)
		if len(cells) < 3 || cells[0] == "flag" {
			continue
		}
		rows++
		var flags, names []string
		for _, m := range backticked.FindAllStringSubmatch(cells[0], -1) {
			flags = append(flags, strings.TrimPrefix(m[1], "--"))
		}
		for _, m := range backticked.FindAllStringSubmatch(cells[1], -1) {
			names = append(names, m[1])
		}
		for _, n := range names {
			if documented[n] == nil {
				documented[n] = map[string]bool{}
			}
			c, ok := cmds[n]
			if !ok {
				t.Errorf("reference.md lists --%s on %q, which is no command", strings.Join(flags, ", --"), n)
				continue
			}
			for _, fl := range flags {
				documented[n][fl] = true
				if !takes(c, fl) {
					t.Errorf("reference.md lists --%s on `tally %s`, which does not take it", fl, n)
				}
			}
		}
	}
	if rows < 20 {
		t.Fatalf("only %d rows read from reference.md's flag table", rows)
	}
	forms := []string{"Hugging Face model directory", "org/name", ".gguf file", "Ollama manifest", "ollama:NAME", "openai:NAME", "imported:NAME", "demo"}
	for path, c := range cmds {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Hidden || f.Name == "help" {
				return
			}
			if !documented[docName(path)][f.Name] {
				t.Errorf("`tally %s --%s` is not in reference.md's flag table under %s", path, f.Name, docName(path))
			}
			if f.Name == "model" {
				for _, form := range forms {
					if !strings.Contains(f.Usage, form) {
						t.Errorf("`tally %s --help`: --model does not name %s", path, form)
					}
				}
			}
		})
	}

	// The commands of `tally --help` are the reference's, and report's
	// line says it recomputes stale scores.
	var listed []string
	for _, line := range referenceSection(t, ref, "Commands") {
		cells := tableCells(line)
		if len(cells) < 2 || cells[0] == "command" {
			continue
		}
		for _, m := range backticked.FindAllStringSubmatch(cells[0], -1) {
			listed = append(listed, strings.Fields(m[1])[0])
		}
	}
	for _, c := range root.Commands() {
		if c.Name() != "help" && !slices.Contains(listed, c.Name()) {
			t.Errorf("`tally --help` lists %s; reference.md's commands do not", c.Name())
		}
	}
	for _, n := range listed {
		if c, _, err := root.Find([]string{n}); err != nil || c == root {
			t.Errorf("reference.md lists command %s, which tally does not have", n)
		}
	}
	report := cmds["report"]
	if strings.Contains(report.Short, "no scoring") || !strings.Contains(report.Short, "recomputed in memory") {
		t.Errorf("`tally --help` says of report %q; reference.md: stale scores recomputed in memory first", report.Short)
	}

	// --model-revision: the help and servers.md name the same models.
	servers, err := os.ReadFile("../../docs/servers.md")
	if err != nil {
		t.Fatal(err)
	}
	var para string
	for _, p := range strings.Split(string(servers), "\n- ") {
		if strings.Contains(p, "--model-revision") {
			para = strings.Join(strings.Fields(p), " ")
		}
	}
	help := cmds["run"].Flags().Lookup("model-revision").Usage
	for _, say := range []string{"openai:NAME", "TGI", "Ollama's", "ollama:NAME", "digest"} {
		if !strings.Contains(help, say) || !strings.Contains(para, say) {
			t.Errorf("--model-revision: help %q and servers.md %q do not both say %q", help, para, say)
		}
	}
}

// TestFlagsThatDoNothingRefused is item 4 of issue 34: a flag that would
// change nothing on a command is refused there, in one line saying why
// (each was accepted and ignored).
func TestFlagsThatDoNothingRefused(t *testing.T) {
	db := t.TempDir() + "/r.db"
	if _, err := execute(t, "demo", "--limit", "2", "--store", db); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "--model", "demo", "--tasks", "demo", "--output-path", "out"}, "`tally plan` does not take --output-path: plan only reads the store"},
		{[]string{"plan", "--model", "demo", "--tasks", "demo", "--output_path", "out"}, "`tally plan` does not take --output-path"},
		{[]string{"report", "--device", "cuda"}, "--device: report without --data"},
		{[]string{"report", "--concurrency", "4"}, "`tally report` does not take --concurrency: it does no model work"},
		{[]string{"report", "--batch_size", "4"}, "`tally report` does not take --concurrency"},
		{[]string{"compare", "--model", "demo", "--tasks", "demo", "--device-memory", "1GiB"}, "`tally compare` does not take --device-memory"},
		{[]string{"compare", "--model", "demo", "--tasks", "demo", "--against-chat"}, "--against-chat: applies to the --against model only"},
		{[]string{"rescore", "--model", "demo", "--tasks", "demo", "--concurrency", "2"}, "`tally rescore` does not take --concurrency"},
		{[]string{"import", "--model", "imported:x", "--tasks", "drop", "--data", "x.jsonl", "--device", "cuda"}, "`tally import` does not take --device"},
		{[]string{"import", "--from", db, "--tasks", "drop"}, "--tasks: apply to `tally import --tasks T --data LOG` only"},
		{[]string{"run", "--model", "demo", "--tasks", "demo", "--model-revision", "v2"}, "--model-revision applies to openai:NAME models"},
		{[]string{"run", "--model", "demo", "--tasks", "demo", "--base-url", "http://127.0.0.1:1/v1"}, "--base-url applies to openai:NAME models"},
		{[]string{"run", "--model", "ollama:tiny", "--tasks", "demo", "--device", "cuda"}, "--device applies to the native backend"},
	} {
		_, err := execute(t, append(tc.args, "--store", db)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("tally %s: %v, want one line with %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}

// TestCachesNamed is item 6 of issue 34: every file and folder tally keeps
// in the user's cache folder is named in docs/reference.md (they were named
// only in docs/reliability.md). A run of a native model from a folder
// (fingerprints), a plan (prompt keys) and a task whose data is a
// mebibyte or more (task samples) make each one.
func TestCachesNamed(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	dir := t.TempDir()
	model := filepath.Join(dir, "model")
	if err := os.CopyFS(model, gomlx.DemoFiles()); err != nil {
		t.Fatal(err)
	}
	var data strings.Builder
	for i := 0; data.Len() < 1<<20+1000; i++ {
		fmt.Fprintf(&data, "{\"id\":\"q%d\",\"prompt\":\"Passage: Tom scored %d points.\\nQuestion: how many?\\nAnswer:\",\"answers\":[\"%d\"]}\n", i, i, i)
	}
	file := filepath.Join(dir, "big.jsonl")
	if err := os.WriteFile(file, []byte(data.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "c.db")
	args := []string{"--model", model, "--tasks", "jsonl", "--data", file, "--limit", "2", "--max-tokens", "2", "--store", db}
	for _, cmd := range []string{"run", "plan"} {
		if _, err := execute(t, append([]string{cmd}, args...)...); err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
	}
	ref, err := os.ReadFile("../../docs/reference.md")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(cache, "tally"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() {
			name += "/"
		}
		names = append(names, name)
		if !strings.Contains(string(ref), "`~/.cache/tally/"+name+"`") {
			t.Errorf("tally keeps %s in its cache folder; docs/reference.md does not name it", name)
		}
	}
	if len(names) < 3 {
		t.Errorf("the runs kept only %v", names)
	}
	script, err := os.ReadFile("../../scripts/ollama-server.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(script), "$CACHE/ollama-$VERSION") || !strings.Contains(string(ref), "`~/.cache/tally/ollama-VERSION/`") {
		t.Error("the Ollama build scripts/ollama-server.sh caches is not named in docs/reference.md")
	}
}

// TestServersDocNamesScript is item 6 of issue 34: docs/servers.md tells
// how to get an Ollama server to try, scripts/ollama-server.sh (it never
// named it), and the script is there.
func TestServersDocNamesScript(t *testing.T) {
	b, err := os.ReadFile("../../docs/servers.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"scripts/ollama-server.sh", "scripts/ollama-stop.sh"} {
		if !strings.Contains(string(b), s) {
			t.Errorf("docs/servers.md does not name %s", s)
		}
		if _, err := os.Stat(filepath.Join("../..", s)); err != nil {
			t.Error(err)
		}
	}
}
