package lmevalcli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// flagSet is the part of tally's run flags that --model_args touches.
func flagSet(t *testing.T, args ...string) *pflag.FlagSet {
	t.Helper()
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	fs.SetNormalizeFunc(Normalize)
	fs.String("model", "", "")
	fs.String("model-args", "", "")
	fs.String("base-url", "", "")
	fs.String("device", "", "")
	fs.Int("concurrency", 0, "")
	fs.Int("fewshot", 0, "")
	fs.String("output-path", "", "")
	fs.Bool("log-samples", false, "")
	fs.Bool("chat", false, "")
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	return fs
}

// TestAliases: lm-eval's spellings set tally's flags (issue 26, item 3).
func TestAliases(t *testing.T) {
	fs := flagSet(t, "--num_fewshot", "0", "--batch_size=4", "--output_path", "out", "--log_samples", "--apply_chat_template", "--model", "m")
	for flag, want := range map[string]string{"fewshot": "0", "concurrency": "4", "output-path": "out", "log-samples": "true", "chat": "true"} {
		if fl := fs.Lookup(flag); !fl.Changed || fl.Value.String() != want {
			t.Errorf("--%s = %q (changed %v), want %q", flag, fl.Value.String(), fl.Changed, want)
		}
	}
}

// TestFlagError: a flag lm-eval has and tally refuses fails with one line
// naming tally's spelling; an alias the command lacks says which command
// takes it; other errors pass through.
func TestFlagError(t *testing.T) {
	fs := flagSet(t)
	for _, tc := range []struct{ arg, want string }{
		{"--gen_kwargs=until=.", "--max-tokens N and stop sequences with --stop NAME=SEQ"},
		{"--seed=1", "--set fewshot_seed=N"},
		{"--include_path=d", "--tasks path/to/task.yaml"},
		{"--use_cache=d", "--store PATH"},
		{"--no_such_thing", "unknown flag --no_such_thing for `tally run`"},
	} {
		err := FlagError("tally run", fs, fs.Parse([]string{tc.arg}))
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q", tc.arg, err, tc.want)
		}
	}
	// A value a flag cannot take is one line in tally's words (issue 34:
	// --limit 0.1 was strconv.ParseInt's error).
	for _, tc := range []struct{ arg, want string }{
		{"--concurrency=x", "--concurrency x: want a whole number"},
		{"--fewshot=99999999999999999999", "--fewshot 99999999999999999999: out of range"},
		{"--chat=maybe", "--chat maybe: want true or false"},
	} {
		err := FlagError("tally run", fs, fs.Parse([]string{tc.arg}))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: %v, want %q", tc.arg, err, tc.want)
		}
	}
	ls := pflag.NewFlagSet("ls", pflag.ContinueOnError)
	ls.SetNormalizeFunc(Normalize)
	err := FlagError("tally ls", ls, ls.Parse([]string{"--output_path", "x"}))
	if err == nil || !strings.Contains(err.Error(), "tally's --output-path, which `tally ls` does not take") {
		t.Errorf("--output_path on ls: %v", err)
	}
	plain := errors.New("other")
	if FlagError("tally", nil, plain) != plain {
		t.Error("an error that is not about an unknown flag changed")
	}
}

// TestApplyModelArgs: lm-eval's --model TYPE --model_args K=V maps onto
// tally's flags; keys tally has no flag for, and a model given twice, are
// refused naming tally's flags.
func TestApplyModelArgs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		want    map[string]string
		wantErr string
	}{
		{"hf pretrained", []string{"--model", "hf", "--model_args", "pretrained=/m/llama,device=cuda"},
			map[string]string{"model": "/m/llama", "device": "cuda"}, ""},
		{"no type", []string{"--model_args=pretrained=/m/llama"}, map[string]string{"model": "/m/llama"}, ""},
		{"local-completions", []string{"--model", "local-completions", "--model_args", "model=llama3,base_url=http://h:8000/v1/completions,num_concurrent=8"},
			map[string]string{"model": "openai:llama3", "base-url": "http://h:8000/v1", "concurrency": "8", "chat": "false"}, ""},
		{"local-chat-completions", []string{"--model", "local-chat-completions", "--model_args", "model=llama3,base_url=http://h:8000/v1/chat/completions"},
			map[string]string{"model": "openai:llama3", "base-url": "http://h:8000/v1", "chat": "true"}, ""},
		{"plain model", []string{"--model", "demo"}, map[string]string{"model": "demo"}, ""},
		{"type without args", []string{"--model", "hf"}, nil, "--model hf is lm-eval's model type; tally's --model takes the model itself"},
		{"unknown key", []string{"--model", "hf", "--model_args", "pretrained=/m,trust_remote_code=True"}, nil,
			"--model_args trust_remote_code: tally has no such setting; its model flags are --model"},
		{"dtype without --dtype", []string{"--model", "hf", "--model_args", "pretrained=/m,dtype=float16"}, nil, "--model_args dtype: tally has no such setting"},
		{"model twice", []string{"--model", "/m/a", "--model_args", "pretrained=/m/b"}, nil, "give the model once"},
		{"no model", []string{"--model", "hf", "--model_args", "device=cuda"}, nil, "names no model"},
		{"flag disagrees", []string{"--model", "local-completions", "--base-url", "http://a/v1", "--model_args", "model=x,base_url=http://b/v1"}, nil,
			"--base-url is http://a/v1: give it once"},
		{"bad pair", []string{"--model", "hf", "--model_args", "pretrained"}, nil, "want KEY=VALUE"},
		// Issue 34 item 3: a backend tally lacks is refused, naming the
		// forms --model takes, with or without --model_args.
		{"vllm", []string{"--model", "vllm", "--model_args", "pretrained=demo"}, nil,
			"--model vllm is lm-eval's model type for a backend tally does not have (a model a vLLM, SGLang or llama.cpp server serves is --model openai:NAME"},
		{"sglang alone", []string{"--model", "sglang"}, nil, "imported:NAME"},
		{"vllm forms", []string{"--model", "vllm", "--model_args", "pretrained=demo"}, nil, ModelForms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flagSet(t, tc.args...)
			err := ApplyModelArgs(fs)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("err %v, want one line with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for flag, want := range tc.want {
				if got := fs.Lookup(flag).Value.String(); got != want {
					t.Errorf("--%s = %q, want %q", flag, got, want)
				}
			}
		})
	}
}

// TestModelTypeThatIsADirectory: a model directory that happens to be
// called like an lm-eval model type is a model.
func TestModelTypeThatIsADirectory(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.Mkdir(filepath.Join(".", "vllm"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := ApplyModelArgs(flagSet(t, "--model", "vllm")); err != nil {
		t.Fatalf("--model vllm with ./vllm present: %v", err)
	}
}

// TestFlagErrorSuggests is item 3 of issue 34: an unknown flag gets "did
// you mean" with the nearest of the command's flags (--task: --tasks), as a
// mistyped command gets "did you mean run"; a name near none says so
// without a guess.
func TestFlagErrorSuggests(t *testing.T) {
	fs := flagSet(t)
	fs.StringSlice("tasks", nil, "")
	fs.Int("max-tokens", 0, "")
	fs.String("store", "", "")
	fs.Duration("lease", 0, "")
	fs.MarkHidden("lease")
	for _, tc := range []struct{ arg, want string }{
		{"--task", "did you mean --tasks?"},
		{"--taskss", "did you mean --tasks?"},
		{"--max_token", "did you mean --max-tokens?"},
		{"--devices", "did you mean --device?"},
		{"--stor", "did you mean --store?"},
		{"--leas", "unknown flag --leas for `tally run` (`tally run --help` lists its flags)"},
		{"--zzzzzzzz", "unknown flag --zzzzzzzz for `tally run` (`tally run --help` lists its flags)"},
	} {
		err := FlagError("tally run", fs, fs.Parse([]string{tc.arg}))
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q", tc.arg, err, tc.want)
		}
	}
}

// TestLimit is item 3 of issue 34: --limit reads as lm-eval reads it
// (lm_eval/evaluator_utils.py get_sample_size): below 1 a fraction of each
// task's samples, math.ceil(len(docs) * limit); from 1 a number, int(limit).
func TestLimit(t *testing.T) {
	for _, tc := range []struct {
		arg   string
		total int
		want  int
		rule  string
	}{
		{"10", 40, 10, ""},
		{"100", 40, 40, ""},
		{"0.1", 40, 4, "--limit 0.1: 4 of the 40 samples (lm-eval's rule for a limit below 1: ceil(40 × 0.1))"},
		{"0.1", 9536, 954, "ceil(9536 × 0.1)"},
		{"0.07", 100, 8, ""}, // Python's 100 * 0.07 is 7.000000000000001: ceil gives 8
		{"0.5", 3, 2, ""},
		{"0.001", 40, 1, ""},
		{"2.5", 40, 2, "lm-eval's int(2.5)"},
		{"1.0", 40, 1, ""},
	} {
		var l Limit
		if err := l.Set(tc.arg); err != nil {
			t.Errorf("%s: %v", tc.arg, err)
			continue
		}
		want := tc.want
		if got := l.Of(tc.total); got != want {
			t.Errorf("--limit %s of %d: %d, want %d", tc.arg, tc.total, got, want)
		}
		if tc.rule != "" && !strings.Contains(l.Rule(tc.total), tc.rule) {
			t.Errorf("--limit %s: rule %q, want %q in it", tc.arg, l.Rule(tc.total), tc.rule)
		}
		if tc.arg == "10" && l.Rule(tc.total) != "" {
			t.Errorf("--limit 10 says %q", l.Rule(tc.total))
		}
	}
	for _, bad := range []string{"0", "-1", "-0.5", "x", "NaN", "Inf", "1e300"} {
		var l Limit
		if err := l.Set(bad); err == nil {
			t.Errorf("--limit %s accepted: %+v", bad, l)
		}
	}
}

// TestConcurrency is item 3 of issue 34: --batch_size auto (and lm-eval's
// auto:N) is tally's own choice, 0; a number is a number.
func TestConcurrency(t *testing.T) {
	for _, tc := range []struct {
		arg  string
		want Concurrency
		ok   bool
	}{
		{"auto", Concurrency{Auto: true}, true},
		{"auto:4", Concurrency{Auto: true}, true},
		{"8", Concurrency{N: 8}, true},
		{"eight", Concurrency{}, false},
	} {
		var c Concurrency
		err := c.Set(tc.arg)
		if (err == nil) != tc.ok || (tc.ok && c != tc.want) {
			t.Errorf("%s: %+v, %v", tc.arg, c, err)
		}
	}
}
