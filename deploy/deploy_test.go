// Package deploy holds the launch files for sharded runs (a Kubernetes
// Indexed Job, a Slurm job array, a docker-compose file); its tests parse
// them, since no container engine or scheduler runs in CI.
package deploy

import (
	"os"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func readYAML(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// get walks nested maps and lists by key or index.
func get(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("at %v: not a map", p)
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				t.Fatalf("at %v: not a list that long", p)
			}
			v = l[k]
		}
	}
	return v
}

func TestIndexedJob(t *testing.T) {
	j := readYAML(t, "k8s-indexed-job.yaml")
	if get(t, j, "kind") != "Job" || get(t, j, "spec", "completionMode") != "Indexed" {
		t.Fatal("not an Indexed Job")
	}
	if c, p := get(t, j, "spec", "completions"), get(t, j, "spec", "parallelism"); c == nil || p == nil {
		t.Fatal("completions and parallelism must be set")
	}
	c := get(t, j, "spec", "template", "spec", "containers", 0)
	if get(t, c, "resources", "limits", "nvidia.com/gpu") != 1 {
		t.Error("each pod must ask for one GPU")
	}
	if get(t, c, "env", 0, "name") != "TALLY_STORE" {
		t.Error("the store must come from TALLY_STORE")
	}
	checkCommand(t, get(t, c, "command").([]any))
}

func TestCompose(t *testing.T) {
	c := readYAML(t, "compose.yaml")
	w := get(t, c, "services", "worker")
	if !strings.HasPrefix(get(t, w, "environment", "TALLY_STORE").(string), "postgres://") {
		t.Error("workers must share a PostgreSQL store")
	}
	if get(t, w, "depends_on", "postgres", "condition") != "service_healthy" {
		t.Error("workers must wait for the database")
	}
	checkCommand(t, get(t, w, "command").([]any))
}

func TestSlurmArray(t *testing.T) {
	b, err := os.ReadFile("slurm-array.sbatch")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{"#SBATCH --array=", "#SBATCH --gres=gpu:1", "TALLY_STORE", "exec tally run ", "--worker="} {
		if !strings.Contains(s, want) {
			t.Errorf("slurm script lacks %q", want)
		}
	}
}

// checkCommand: the container runs tally as a worker (--worker, or
// --worker=NAME: pflag takes a value of an optional-value flag only after
// "=") with a command that does work and takes its store from the
// environment (no --store pinned to a local file).
func checkCommand(t *testing.T, cmd []any) {
	t.Helper()
	if len(cmd) < 2 || cmd[0] != "tally" || (cmd[1] != "run" && cmd[1] != "demo") {
		t.Fatalf("command %v: want tally run|demo …", cmd)
	}
	worker := false
	for i, a := range cmd {
		s, _ := a.(string)
		if s == "--store" {
			t.Errorf("command %v pins --store; workers take TALLY_STORE", cmd)
		}
		if s == "--worker" || strings.HasPrefix(s, "--worker=") {
			worker = true
			if s == "--worker" && i+1 < len(cmd) && !strings.HasPrefix(cmd[i+1].(string), "-") {
				t.Errorf("command %v: --worker NAME is read as an argument; write --worker=NAME", cmd)
			}
		}
	}
	if !worker {
		t.Errorf("command %v: workers run with --worker", cmd)
	}
}
