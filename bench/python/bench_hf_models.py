#!/usr/bin/env python3
"""posenc.torch inside transformers' own forward, timed: a random-weight Llama 3.1 model (transformers' LlamaConfig,
the llama3 RoPE, 128-wide heads) with its rotary module and with posenc.torch.RotaryEmbedding swapped in, the same
weights, in one process:

- the model: a prefill of 2048 tokens (one forward with the cache), then 64 greedy decode steps with that cache,
  each timed;
- the rotary module alone: forward(x, position_ids) for the 2048 prefill positions and for one decode position.

At 1 and 2 threads (torch.set_num_threads; posenc follows torch's count), in rounds that alternate the order
(vanilla then posenc, posenc then vanilla, ...). The JSON keeps every round's times; the table shows medians and
the median of the per-round ratios vanilla / posenc (above 1: posenc faster). Needs transformers (Debian
unstable's python3-transformers: scripts/bench_transformers.sh). Nothing is downloaded.

    python3 bench/python/bench_hf_models.py [--rounds N] [--layers L] [--out FILE.json]
"""
import argparse
import json
import os
import platform
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402

import posenc  # noqa: E402
import posenc.torch as pt  # noqa: E402

PREFILL, DECODE = 2048, 64


def cpu_name():
    """The CPU's model name with its family and model numbers (hosts named alike differ: Zen 4 and others)."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    name = fields.get("model name") or platform.processor() or "unknown"
    if "cpu family" in fields and "model" in fields:
        name += " (family %s, model %s)" % (fields["cpu family"], fields["model"])
    return name


def make_models(layers):
    cfg = LlamaConfig(vocab_size=8192, hidden_size=1024, intermediate_size=2816, num_hidden_layers=layers,
                      num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=131072,
                      rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                                       "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                       "original_max_position_embeddings": 8192})
    torch.manual_seed(0)
    vanilla = LlamaForCausalLM(cfg).eval()
    swapped = LlamaForCausalLM(cfg).eval()
    swapped.load_state_dict(vanilla.state_dict())
    swapped.model.rotary_emb = pt.RotaryEmbedding(swapped.config)  # docs/python.md's line
    return cfg, vanilla, swapped


def run_model(model, ids):
    """(prefill seconds, decode seconds for DECODE steps, the tokens decoded)."""
    with torch.no_grad():
        t0 = time.perf_counter()
        out = model(input_ids=ids, use_cache=True)
        t1 = time.perf_counter()
        cache = out.past_key_values
        tok = out.logits[:, -1:].argmax(-1)
        toks = []
        for _ in range(DECODE):
            out = model(input_ids=tok, past_key_values=cache, use_cache=True)
            cache = out.past_key_values
            tok = out.logits[:, -1:].argmax(-1)
            toks.append(int(tok))
        t2 = time.perf_counter()
    return t1 - t0, t2 - t1, toks


def time_call(fn, inner):
    t0 = time.perf_counter()
    for _ in range(inner):
        fn()
    return (time.perf_counter() - t0) / inner


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--out")
    args = ap.parse_args()
    cfg, vanilla, swapped = make_models(args.layers)
    sides = {"vanilla": vanilla, "posenc": swapped}
    g = torch.Generator().manual_seed(3)
    ids = torch.randint(3, cfg.vocab_size, (1, PREFILL), generator=g)
    result = {"cpu": cpu_name(), "torch": torch.__version__, "transformers": transformers.__version__,
              "posenc": posenc.__version__, "isa": posenc.isa_name(posenc.active_isa()), "layers": args.layers,
              "config": "Llama 3.1 RoPE (llama3), hidden 1024, 8 heads of 128, 2 KV heads, %d layers" % args.layers,
              "rounds": {}}
    for threads in (1, 2):
        torch.set_num_threads(threads)
        rounds = result["rounds"][str(threads)] = []
        x = torch.zeros(1, PREFILL, 8)
        pos_prefill = torch.arange(PREFILL).unsqueeze(0)
        pos_decode = torch.tensor([[PREFILL + 17]])
        for i in range(args.rounds + 1):  # round 0 warms up and checks, not kept
            order = list(sides) if i % 2 == 0 else list(reversed(list(sides)))
            row = {}
            toks = {}
            for side in order:
                m = sides[side]
                pf, dc, toks[side] = run_model(m, ids)
                rot = m.model.rotary_emb
                with torch.no_grad():
                    r_pf = time_call(lambda: rot(x, pos_prefill), 20)
                    r_dc = time_call(lambda: rot(x[:, :1], pos_decode), 2000)
                row[side] = {"prefill": pf, "decode": dc, "rotary_prefill": r_pf, "rotary_decode": r_dc}
            if i == 0:
                same = toks["vanilla"] == toks["posenc"]
                result.setdefault("same_tokens", {})[str(threads)] = same
                continue
            rounds.append(row)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(result, fh, indent=1)
    print_table(result)


def print_table(result):
    print("posenc.torch inside transformers %s (torch %s), %s; %s, posenc %s (%s)" % (
        result["transformers"], result["torch"], result["config"], result["cpu"], result["posenc"], result["isa"]))
    print("| threads | what | vanilla | posenc.torch | vanilla / posenc (median of rounds) |")
    print("|---|---|---|---|---|")
    labels = {"prefill": "model forward, prefill 2048 (cache on)", "decode": "model, 64 decode steps with the cache",
              "rotary_prefill": "rotary module alone, 2048 positions", "rotary_decode": "rotary module alone, 1 position"}
    for threads, rounds in result["rounds"].items():
        for key, label in labels.items():
            v = statistics.median(r["vanilla"][key] for r in rounds)
            p = statistics.median(r["posenc"][key] for r in rounds)
            ratio = statistics.median(r["vanilla"][key] / r["posenc"][key] for r in rounds)
            lo = min(r["vanilla"][key] / r["posenc"][key] for r in rounds)
            hi = max(r["vanilla"][key] / r["posenc"][key] for r in rounds)
            unit, scale = ("ms", 1e3) if v > 1e-3 else ("us", 1e6)
            print("| %s | %s | %.3g %s | %.3g %s | %.3f (%.3f .. %.3f) |" % (threads, label, v * scale, unit, p * scale,
                                                                        unit, ratio, lo, hi))
    print("same greedy tokens (64 decode steps):", result.get("same_tokens"))


if __name__ == "__main__":
    main()
