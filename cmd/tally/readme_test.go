package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"tally/internal/lmevalcli"
	"tally/internal/sharedtest"
)

// readmePath is the repository's README, from this package's directory.
const readmePath = "../../README.md"

// readmeBlocks returns the README's ```bash blocks, each as its logical
// lines (backslash continuations joined, blank lines dropped).
func readmeBlocks(t *testing.T) [][]string {
	t.Helper()
	b, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	var blocks [][]string
	var cur []string
	in := false
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !in && strings.HasPrefix(line, "```bash"):
			in, cur = true, nil
		case in && strings.HasPrefix(line, "```"):
			in = false
			blocks = append(blocks, cur)
		case in:
			if n := len(cur); n > 0 && strings.HasSuffix(cur[n-1], "\\") {
				cur[n-1] = strings.TrimSuffix(cur[n-1], "\\") + line
			} else if strings.TrimSpace(line) != "" {
				cur = append(cur, line)
			}
		}
	}
	return blocks
}

// readmeSkip says why a README command is not run by the test ("" when it
// is run).
func readmeSkip(cmd string) string {
	for _, s := range []struct{ has, why string }{
		{"go test ./...", "it is the test suite itself"},
		{"go build -o tally ./cmd/tally", "TestMain built the same binary (this package, the same flags)"},
		{"curl ", "it downloads over the network; the reference set's DROP file stands in for drop_dataset_dev.json"},
		{"scripts/postgres-server.sh", "it starts a PostgreSQL server (the store tests do, when one is there)"},
		{"scripts/ollama-server.sh", "it starts an Ollama server (the Ollama tests do, when one is there)"},
		{"apt-get", "it installs a package"},
	} {
		if strings.Contains(cmd, s.has) {
			return s.why
		}
	}
	return ""
}

// readmeRewrite turns a README command into the one the test runs: tally
// as built by TestMain, on the demo model instead of the README's example
// model.
func readmeRewrite(cmd string) string {
	cmd = strings.ReplaceAll(cmd, "go run ./cmd/tally", "./tally")
	return strings.ReplaceAll(cmd, "Qwen/Qwen2.5-0.5B", "demo")
}

// TestREADMECommands is item 5 of issue 26: the README's commands run as
// written, on the demo model, in a fresh directory: its set-up, the DROP
// walk-through (on the reference set's DROP file, standing in for the
// download) and the lm-eval example. Commands that need the network, a
// server or are the suite itself are left out, each with its reason. A
// command may exit 0, or 3 (it finished, but some samples failed: the demo
// model's context holds few DROP passages). Each command's time is logged.
func TestREADMECommands(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	dir := t.TempDir()
	if err := os.Symlink(built, filepath.Join(dir, "tally")); err != nil {
		t.Fatal(err)
	}
	drop, haveDrop := sharedtest.Lookup("data", "drop", "drop_dataset_dev.subset.json")
	if haveDrop {
		os.Mkdir(filepath.Join(dir, "drop_dataset"), 0o755)
		if err := os.Symlink(drop, filepath.Join(dir, "drop_dataset", "drop_dataset_dev.json")); err != nil {
			t.Fatal(err)
		}
	}
	log := filepath.Join(dir, ".readme-log")
	var script strings.Builder
	script.WriteString("cd \"$1\"\nunset TALLY_STORE\n")
	var cmds []string
	for _, block := range readmeBlocks(t) {
		if !haveDrop && strings.Contains(strings.Join(block, "\n"), "drop_dataset") {
			t.Logf("not run: the block of %q\n\t(%s)", block[0], sharedtest.Message(filepath.Dir(filepath.Dir(filepath.Dir(drop)))))
			continue
		}
		for _, line := range block {
			cmd := strings.TrimSpace(line)
			if strings.HasPrefix(cmd, "#") {
				continue
			}
			if why := readmeSkip(cmd); why != "" {
				t.Logf("not run: %s\n\t(%s)", cmd, why)
				continue
			}
			cmds = append(cmds, cmd)
			fmt.Fprintf(&script, "__s=$EPOCHREALTIME\n%s\n__rc=$?\necho \"%d $__rc $__s $EPOCHREALTIME\" >>%q\n"+
				"if [ $__rc -ne 0 ] && [ $__rc -ne 3 ]; then exit 100; fi\n", readmeRewrite(cmd), len(cmds)-1, log)
		}
	}
	if len(cmds) < 2 {
		t.Fatalf("only %d README commands found to run", len(cmds))
	}
	sh := exec.Command("bash", "-c", script.String(), "readme", dir)
	out, err := sh.CombinedOutput()
	logged, _ := os.ReadFile(log)
	ran := 0
	for _, l := range strings.Split(strings.TrimSpace(string(logged)), "\n") {
		f := strings.Fields(l)
		if len(f) != 4 {
			continue
		}
		i, _ := strconv.Atoi(f[0])
		start, _ := strconv.ParseFloat(f[2], 64)
		end, _ := strconv.ParseFloat(f[3], 64)
		t.Logf("%6.1fs  exit %s  %s", end-start, f[1], cmds[i])
		ran++
	}
	if err != nil || ran != len(cmds) {
		t.Fatalf("README commands: %d of %d ran: %v\n%s", ran, len(cmds), err, out)
	}
	if haveDrop {
		for _, f := range []string{"tally.db", "drop.db", "drop.md", "drop.html"} {
			if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
				t.Errorf("README walk-through: %s not written (%v)", f, err)
			}
		}
		for _, pat := range []string{"lmeval/*/results_*.json", "lmeval/*/samples_drop_*.jsonl"} {
			if m, _ := filepath.Glob(filepath.Join(dir, pat)); len(m) == 0 {
				t.Errorf("README walk-through: no %s", pat)
			}
		}
	}
}

// TestREADMELMEvalTable: the README's "Coming from lm-evaluation-harness"
// table names exactly the lm-eval flags tally knows (lmevalcli.Flags), and
// each alias's tally spelling.
func TestREADMELMEvalTable(t *testing.T) {
	b, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "## Coming from lm-evaluation-harness")
	if i < 0 {
		t.Fatal("README has no section \"Coming from lm-evaluation-harness\"")
	}
	flag := regexp.MustCompile(`--[a-z_-]+`)
	var named []string
	for _, row := range strings.Split(s[i:], "\n") {
		cols := strings.Split(row, "|")
		if len(cols) < 4 || strings.HasPrefix(strings.TrimSpace(cols[1]), "lm-eval") || strings.HasPrefix(strings.TrimSpace(cols[1]), "---") {
			continue
		}
		for _, f := range flag.FindAllString(cols[1], -1) {
			name := strings.TrimPrefix(f, "--")
			named = append(named, name)
			for _, lf := range lmevalcli.Flags {
				if lf.LMEval != name || name == "model_args" {
					continue
				}
				want := "—"
				if lf.Tally != "" && lf.Tally != "log-samples" {
					want = "--" + lf.Tally
				}
				if !strings.Contains(cols[2], want) {
					t.Errorf("README row for --%s: tally column %q, want %q", name, strings.TrimSpace(cols[2]), want)
				}
			}
		}
	}
	for _, lf := range lmevalcli.Flags {
		if !slices.Contains(named, lf.LMEval) {
			t.Errorf("README's lm-eval table lacks --%s", lf.LMEval)
		}
	}
	for _, n := range named {
		if !slices.ContainsFunc(lmevalcli.Flags, func(f lmevalcli.Flag) bool { return f.LMEval == n }) {
			t.Errorf("README's lm-eval table names --%s, which internal/lmevalcli does not know", n)
		}
	}
}

// TestDocsStayInRepository is item 1 of issue 26: the README pointed at
// ../shared/gpu.md and ../shared/DESIGN.md, which a clone does not have.
// Every relative link of README.md and docs/*.md resolves inside the
// repository, to a file that exists; the README stays a front page of at
// most 150 lines.
func TestDocsStayInRepository(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files := append([]string{filepath.Join(root, "README.md")}, docs...)
	if len(docs) < 8 {
		t.Errorf("docs/ holds %d guides, want the guides moved out of the README", len(docs))
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "../shared/") {
			t.Errorf("%s points at ../shared/, which a clone does not have", f)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") || strings.HasPrefix(target, "#") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			p := filepath.Join(filepath.Dir(f), target)
			if rel, err := filepath.Rel(root, p); err != nil || strings.HasPrefix(rel, "..") {
				t.Errorf("%s links outside the repository: %s", f, m[1])
				continue
			}
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s links %s, which does not exist", f, m[1])
			}
		}
	}
	b, _ := os.ReadFile(filepath.Join(root, "README.md"))
	if n := strings.Count(string(b), "\n"); n > 150 {
		t.Errorf("README.md has %d lines, want a front page of at most 150", n)
	}
}
