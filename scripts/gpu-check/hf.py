"""The transformers side of scripts/gpu-check.sh (torch, transformers and a
CUDA GPU; no network). Written from the libraries' documentation on a
machine without torch: NOT YET RUN on a GPU. Without torch or a GPU every
command prints one line saying so and exits 3 (the script records the step
as skipped).

  hf.py device OUT.json
      the GPU's name, a 2 GiB device-to-device copy's rate (bytes read plus
      bytes written) and an 8192^3 bf16 matrix product's TFLOP/s, and the
      versions of the Python side.
  hf.py bench MODEL_DIR NAME PROMPTS_DIR CONFIGS NEW OUT.jsonl [--caches dynamic,static] [--deadline UNIX]
      transformers generate (bf16, sdpa, greedy) on the prompts gpu-check
      wrote for each BATCHxPROMPT configuration, one JSON line per
      (configuration, cache), with the fields of gpu-check's benchRow.
"""
import json
import os
import subprocess
import sys
import threading
import time

SKIP = 3  # exit status for "skipped: what it needs is missing"


def skip(msg):
    print("hf.py: skipped: " + msg, flush=True)
    sys.exit(SKIP)


def need_cuda():
    try:
        import torch
    except Exception as e:  # ImportError, or a broken install
        skip("torch is not importable here (%s)" % e)
    if not torch.cuda.is_available():
        skip("torch sees no CUDA device")
    return torch


def versions():
    from importlib import metadata

    out = {}
    for name in ("torch", "transformers", "safetensors", "accelerate", "jax", "jaxlib", "jax-cuda13-pjrt"):
        try:
            out[name] = metadata.version(name)
        except Exception:
            pass
    return out


def device(out_path):
    torch = need_cuda()
    info = {"gpu": torch.cuda.get_device_name(0), "versions": versions()}
    info["versions"]["cuda (torch)"] = str(torch.version.cuda)
    try:
        n = 2 << 30
        a = torch.empty(n, dtype=torch.uint8, device="cuda")
        a.random_(0, 255)
        b = torch.empty_like(a)
        for _ in range(3):
            b.copy_(a)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        reps = 20
        start.record()
        for _ in range(reps):
            b.copy_(a)
        end.record()
        torch.cuda.synchronize()
        info["bandwidth_gbps"] = 2 * n * reps / (start.elapsed_time(end) / 1e3) / 1e9
        del a, b
        k = 8192
        x = torch.randn(k, k, dtype=torch.bfloat16, device="cuda")
        y = torch.randn(k, k, dtype=torch.bfloat16, device="cuda")
        for _ in range(3):
            x @ y
        reps = 20
        start.record()
        for _ in range(reps):
            x @ y
        end.record()
        torch.cuda.synchronize()
        info["bf16_tflops"] = 2 * k**3 * reps / (start.elapsed_time(end) / 1e3) / 1e12
        del x, y
        torch.cuda.empty_cache()
    except Exception as e:
        info["error"] = repr(e)
    with open(out_path, "w") as f:
        json.dump(info, f, indent=2)
    print("hf.py device: %s, %.0f GB/s, %.0f TFLOP/s bf16" % (
        info["gpu"], info.get("bandwidth_gbps", 0), info.get("bf16_tflops", 0)), flush=True)


class GPUPeak:
    """Samples nvidia-smi's used memory of GPU 0 every 100 ms (-1 without
    nvidia-smi), as gpu-check's Go sampler does."""

    def __init__(self):
        self.peak = -1
        self.proc = None
        try:
            self.proc = subprocess.Popen(
                ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i", "0", "-lms", "100"],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except Exception:
            return
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                self.peak = max(self.peak, int(line.strip()))
            except ValueError:
                pass

    def stop(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.thread.join(timeout=2)
        return self.peak


class FirstTokenClock:
    """A generate streamer that notes when the first new tokens arrive:
    generate calls put() with the prompt ids, then once per step with the
    [batch] tensor of new tokens, and end() at the end."""

    def __init__(self, torch):
        self.torch = torch
        self.calls = 0
        self.start = time.perf_counter()
        self.first = None

    def put(self, value):
        self.calls += 1
        if self.calls == 2:
            self.torch.cuda.synchronize()
            self.first = time.perf_counter()

    def end(self):
        pass


def load(torch, model_dir):
    from transformers import AutoModelForCausalLM

    # Straight onto the GPU (device_map needs accelerate); else through the
    # CPU; transformers before 4.56 names dtype torch_dtype.
    tries = (dict(dtype=torch.bfloat16, device_map="cuda"), dict(dtype=torch.bfloat16),
             dict(torch_dtype=torch.bfloat16))
    failures = []
    model = None
    for kw in tries:
        try:
            model = AutoModelForCausalLM.from_pretrained(model_dir, attn_implementation="sdpa", **kw)
            break
        except Exception as e:
            failures.append("%s: %r" % (sorted(kw), e))
    if model is None:
        raise RuntimeError("from_pretrained failed: " + "; ".join(failures))
    if model.device.type != "cuda":
        model = model.to("cuda")
    model.eval()
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    return model


def bench(model_dir, name, prompt_dir, configs, new, out_path, caches, deadline):
    torch = need_cuda()
    t0 = time.perf_counter()
    model = load(torch, model_dir)
    print("hf.py bench %s: loaded in %.1fs" % (name, time.perf_counter() - t0), flush=True)
    last = 0.0
    with open(out_path, "a") as out:
        for cache in caches:
            for cfg in configs.split(","):
                batch, prompt = (int(x) for x in cfg.split("x"))
                row = {"engine": "transformers", "model": name, "dir": model_dir, "dtype": "bfloat16", "cache": cache,
                       "batch": batch, "prompt": prompt, "new": new, "rows": batch, "peak_gpu_mib": -1}
                if deadline and time.time() + last > deadline:
                    row["skipped"] = "no time left in the step's budget"
                else:
                    t = time.perf_counter()
                    one(torch, model, os.path.join(prompt_dir, "b%d-p%d.json" % (batch, prompt)), cache, row)
                    last = time.perf_counter() - t
                out.write(json.dumps(row) + "\n")
                out.flush()
                print("hf.py bench %s %s %s: prefill %.0f tok/s, decode %.1f tok/s, peak %s MiB %s" % (
                    name, cfg, cache, row.get("prefill_tok_s", 0), row.get("decode_tok_s", 0), row["peak_gpu_mib"],
                    row.get("error", "") + row.get("skipped", "")), flush=True)


def one(torch, model, prompt_path, cache, row):
    with open(prompt_path) as f:
        ids = torch.tensor(json.load(f)["prompts"], device="cuda")
    new = row["new"]
    # No EOS id (the config has none): every row runs max_new_tokens.
    kw = dict(do_sample=False, num_beams=1, eos_token_id=None, pad_token_id=0,
              attention_mask=torch.ones_like(ids))
    if cache != "dynamic":
        # generate compiles the forward pass itself with a static cache
        # (transformers' automatic compile); the warm run pays for it.
        kw["cache_implementation"] = cache
    peak = GPUPeak()
    try:
        with torch.inference_mode():
            # Warm run: a dynamic cache needs only a few steps; a static
            # cache is sized by max_new_tokens, so it warms at full length.
            warm_new = new if cache != "dynamic" else 2
            torch.cuda.synchronize()
            t = time.perf_counter()
            model.generate(ids, max_new_tokens=warm_new, **kw)
            torch.cuda.synchronize()
            row["warm_s"] = time.perf_counter() - t
            torch.cuda.reset_peak_memory_stats()
            clock = FirstTokenClock(torch)
            torch.cuda.synchronize()
            clock.start = time.perf_counter()
            out = model.generate(ids, max_new_tokens=new, streamer=clock, **kw)
            torch.cuda.synchronize()
            end = time.perf_counter()
        gen = out[:, ids.shape[1]:]
        if gen.shape[1] != new:
            row["error"] = "generated %d tokens, want %d" % (gen.shape[1], new)
        first = clock.first or end
        row["prefill_s"] = first - clock.start
        row["decode_s"] = end - first
        row["prefill_tok_s"] = row["batch"] * row["prompt"] / row["prefill_s"]
        if row["decode_s"] > 0:
            row["decode_tok_s"] = row["batch"] * (new - 1) / row["decode_s"]
            row["decode_ms_per_step"] = row["decode_s"] * 1000 / (new - 1)
        row["compile_s"] = max(0.0, row["warm_s"] - row["prefill_s"] - (row["decode_s"] / max(new - 1, 1)) * (warm_new - 1))
        row["peak_alloc_bytes"] = torch.cuda.max_memory_allocated()
        row["first_ids"] = gen[:4, :8].tolist()
    except torch.cuda.OutOfMemoryError as e:
        row["error"] = "out of memory: " + str(e).splitlines()[0]
    except Exception as e:
        row["error"] = repr(e)[:500]
    finally:
        row["peak_gpu_mib"] = peak.stop()
        torch.cuda.empty_cache()


def main(argv):
    if len(argv) >= 2 and argv[0] == "device":
        device(argv[1])
    elif len(argv) >= 7 and argv[0] == "bench":
        caches, deadline = ["dynamic"], 0.0
        rest = argv[7:]
        while rest:
            if rest[0] == "--caches" and len(rest) > 1:
                caches = [c for c in rest[1].split(",") if c]
            elif rest[0] == "--deadline" and len(rest) > 1:
                deadline = float(rest[1])
            else:
                sys.exit("hf.py: unknown argument %r" % rest[0])
            rest = rest[2:]
        bench(argv[1], argv[2], argv[3], argv[4], int(argv[5]), argv[6], caches, deadline)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
