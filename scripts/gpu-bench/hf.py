"""Helpers for scripts/gpu-bench.sh (transformers side); needs torch and
transformers on a CUDA machine, no network.

  hf.py make-8b DIR               Llama-3-8B-shaped model, random bf16 weights
  hf.py prompts OUT BATCH LEN VOCAB SEED   random prompt ids as JSON
  hf.py generate DIR PROMPTS NEW DTYPE     greedy generate; prints one JSON line
"""
import json
import sys
import time

import torch


def make_8b(out):
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(
        vocab_size=128256, hidden_size=4096, intermediate_size=14336,
        num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
        head_dim=128, max_position_embeddings=131072, rms_norm_eps=1e-5,
        rope_theta=500000.0, tie_word_embeddings=False,
        bos_token_id=None, eos_token_id=None, pad_token_id=None,
    )
    torch.manual_seed(8)
    with torch.device("cuda"):
        model = LlamaForCausalLM(cfg).to(torch.bfloat16)
    # Default init (std 0.02) gives near-uniform logits; widen it so greedy
    # margins are not ties in bf16.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" not in name:
                p.normal_(0.0, 0.05)
    model.generation_config.eos_token_id = None
    model.save_pretrained(out, safe_serialization=True)


def prompts(out, batch, length, vocab, seed):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab, (batch, length), generator=g).tolist()
    with open(out, "w") as f:
        json.dump({"prompts": ids}, f)


def generate(model_dir, prompts_path, new, dtype):
    from transformers import AutoModelForCausalLM

    dt = {"float32": torch.float32, "bfloat16": torch.bfloat16}[dtype]
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=dt).to("cuda").eval()
    with open(prompts_path) as f:
        ids = torch.tensor(json.load(f)["prompts"], device="cuda")
    kw = dict(do_sample=False, num_beams=1, max_new_tokens=new, min_new_tokens=new,
              eos_token_id=None, pad_token_id=0)
    with torch.no_grad():
        model.generate(ids, max_new_tokens=2, do_sample=False, pad_token_id=0)  # warm up
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        t = time.perf_counter()
        first = model.generate(ids, **dict(kw, max_new_tokens=1, min_new_tokens=1))
        torch.cuda.synchronize()
        prefill = time.perf_counter() - t
        t = time.perf_counter()
        out = model.generate(ids, **kw)
        torch.cuda.synchronize()
        total = time.perf_counter() - t
    del first
    gen = out[:, ids.shape[1]:].tolist()
    print(json.dumps({
        "batch": ids.shape[0], "prompt_tokens": ids.shape[1], "new_tokens": new,
        "run_s": total, "prefill_s": prefill,
        "tokens_per_s": ids.shape[0] * new / total,
        "decode_ms_per_step": (total - prefill) * 1000 / max(new - 1, 1),
        "peak_gpu_bytes": torch.cuda.max_memory_allocated(), "ids": gen,
    }))


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "make-8b":
        make_8b(args[0])
    elif cmd == "prompts":
        prompts(args[0], int(args[1]), int(args[2]), int(args[3]), int(args[4]))
    elif cmd == "generate":
        generate(args[0], args[1], int(args[2]), args[3])
    else:
        sys.exit(f"unknown command {cmd}")
