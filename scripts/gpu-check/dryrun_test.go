package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"tally/internal/sharedtest"
)

// helperEnv makes the test binary act as the gpu-check command, so the
// dry run needs no second build.
const helperEnv = "GPU_CHECK_TEST_AS_COMMAND"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestGPUCheckDryRun runs scripts/gpu-check.sh as a GPU machine would,
// with DRYRUN=1: --device cpu, tiny shapes, few tokens, every step of the
// GPU run but the GPU itself (the fixtures' parity, the random
// checkpoints, the DROP run, report and rerun, both benchmarks, the long
// prompt inside the plan, the report files). transformers' steps are
// skipped, saying so, where python3 has no torch (as here).
func TestGPUCheckDryRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds tally and runs the whole dry run")
	}
	if runtime.GOOS != "linux" {
		t.Skip("gpu-check.sh runs on Linux")
	}
	for _, tool := range []string{"bash", "timeout", "tar"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s here", tool)
		}
	}
	shared := sharedtest.Dir(t)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	tally := filepath.Join(tmp, "tally")
	build := exec.Command("go", "build", "-o", tally, "./cmd/tally")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build tally: %v\n%s", err, out)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "out")
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "gpu-check.sh"), out)
	cmd.Env = append(os.Environ(), "DRYRUN=1", "TALLY_BIN="+tally, "GPU_CHECK_BIN="+self, helperEnv+"=1",
		"SHARED="+shared, "WORK="+filepath.Join(tmp, "work"), "BUDGET_S=300")
	logs, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gpu-check.sh: %v\n%s", err, logs)
	}
	for _, f := range []string{"gpu-check.md", "gpu-check.json", "gpu-check-logs.tar.gz"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s missing or empty: %v", f, err)
		}
	}
	data, err := os.ReadFile(filepath.Join(out, "gpu-check.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s summary
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatalf("gpu-check.json: %v", err)
	}
	// Every step ran; only the ones that need torch were skipped.
	status := map[string]string{}
	for _, st := range s.Steps {
		status[st.Name] = st.Status
	}
	torch := exec.Command("python3", "-c", "import torch; assert torch.cuda.is_available()").Run() == nil
	for _, name := range strings.Split("setup,device,parity,weights-1b,drop,bench-1b-tally,bench-1b-hf,weights-8b,bench-8b-tally,bench-8b-hf,long", ",") {
		want := "ok"
		if !torch && (name == "device" || strings.HasSuffix(name, "-hf")) {
			want = "skipped"
		}
		if status[name] != want {
			t.Errorf("step %s: %q, want %q", name, status[name], want)
		}
	}
	if len(s.Parity) != 6 {
		t.Errorf("%d parity rows, want 3 fixtures × 2 dtypes", len(s.Parity))
	}
	for _, r := range s.Parity {
		if !r.Pass || r.Prompts != 5 || (r.DType == "float32" && r.WorstRelErr >= parityTolerance) {
			t.Errorf("parity %+v", r)
		}
	}
	tallyRows := 0
	for _, r := range s.Bench {
		if r.Engine == "tally" {
			tallyRows++
			if r.Error != "" || r.DecodeTokS <= 0 || r.PrefillTokS <= 0 || r.TimedCompilations != 0 || len(r.FirstIDs) == 0 {
				t.Errorf("bench %+v", r)
			}
		}
	}
	if tallyRows != 4 {
		t.Errorf("%d tally benchmark rows, want 4", tallyRows)
	}
	if d := s.Drop; d == nil || !d.Stored || !d.AnsweredOnce || !strings.Contains(d.Report, "drop.f1") {
		t.Errorf("drop %+v", s.Drop)
	}
	if l := s.Long; l == nil || !l.Completed || l.PredictedBytes <= 0 || !strings.Contains(l.Plan, "prefill chunk") {
		t.Errorf("long %+v", s.Long)
	}
	met := map[string]string{}
	for _, tg := range s.Targets {
		met[tg.Name] = tg.Met
	}
	if met["parity, --dtype float32 (TF32 off)"] != "yes" || met["tally run of DROP (1B shape, two stop settings)"] != "yes" {
		t.Errorf("targets %+v", s.Targets)
	}
	md, _ := os.ReadFile(filepath.Join(out, "gpu-check.md"))
	if !strings.Contains(string(md), "CPU dry run") || !strings.HasPrefix(strings.SplitN(string(md), "| target |", 2)[0], "# tally GPU check") {
		t.Errorf("gpu-check.md does not start with the title and the targets table:\n%s", md)
	}
	t.Logf("dry run output:\n%s", logs)
}

// TestHFScriptParses checks hf.py's syntax where python3 is there (it
// cannot run here without torch and a GPU).
func TestHFScriptParses(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 here")
	}
	out, err := exec.Command("python3", "-c", "import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])", "hf.py").CombinedOutput()
	if err != nil {
		t.Fatalf("hf.py: %v\n%s", err, out)
	}
}
