"""The report's Python section: bench/python/bench_torch.py's JSON -> Markdown, one SVG chart and the target rows
of issues 16 and 25 (the original PyTorch code against posenc.torch, timed from Python in one process).

    import python_section
    text, charts = python_section.render("report/python.json", "report")   # charts: [(title, file name)]
    report = python_section.insert(report, text)                            # before "## Charts" / "## Machine"
    bad = python_section.problems("report/python.json")                     # the pipeline, never the timings

    python_section.py report/python.json [--out DIR]                      prints the section (chart into DIR)

target_rows(data) gives the targets in targets.evaluate's row shape (title, path, ratio of medians, paired
ratio, op, target, met, first s, second s, spread); the section shows them in its own table, with the columns
of the report's targets table and one more: the paired ratio in the other allocator configuration (glibc's
default malloc; the verdicts use the run with malloc reusing freed memory, see METHOD).
"""
import os
import statistics
import sys

from results import data_of, json_problems, load_json as load, not_measured
from summary import fmt_ratio, fmt_time, table  # the report's own formats

SECTION = "## Python: the original PyTorch code against posenc.torch"
CHART = "python_speedup.svg"

# (title, case id, numerator variant, denominator variant, op, target, binding, quick case id): value = time of
# the numerator / time of the denominator, judged on the paired ratio (the median of the per-round ratios of
# calls made in the same round); a denominator "us" makes the value the numerator's per-call overhead in
# microseconds (its time minus the kernel's, per round, median). Issue 16: at least 10x faster than PyTorch
# eager for tables and the fused embedding at 2048 x 512 and larger, at least 3x for the HF-style rotation, a
# per-call overhead under 5 us for a one-row decode step. Issue 25: a batch of 1024 timesteps x 320 and x 1280
# channels at least 2x faster than diffusers' get_timestep_embedding in PyTorch at one thread.
TARGETS = [
    ("table 2048 x 512: faster than the tutorial's table code", "table/2048x512", "tutorial", "posenc",
     ">=", 10.0, True, "table/256x512"),
    ("table 2048 x 512: faster than the torch.pow / torch.stack table", "table/2048x512", "stacked", "posenc",
     ">=", 10.0, True, "table/256x512"),
    ("table 8192 x 1024: faster than the tutorial's table code", "table/8192x1024", "tutorial", "posenc",
     ">=", 10.0, True, None),
    ("table 8192 x 1024: faster than the torch.pow / torch.stack table", "table/8192x1024", "stacked", "posenc",
     ">=", 10.0, True, None),
    ("embedding + PE, 2048 tokens, d = 512, vocab 32000: faster than emb * sqrt(d) + pe", "embed/1x2048x512",
     "original", "posenc", ">=", 10.0, True, "embed/1x256x512"),
    ("embedding + PE, batch 8 x 2048 tokens, d = 512: faster than emb * sqrt(d) + pe", "embed/8x2048x512",
     "original", "posenc", ">=", 10.0, True, "embed/2x256x512"),
    ("embedding + PE, 8192 tokens, d = 1024: faster than emb * sqrt(d) + pe", "embed/1x8192x1024",
     "original", "posenc", ">=", 10.0, True, None),
    # ceilings, no target: the original against the bound (the same output without the arithmetic), i.e. the
    # ratio posenc would reach if its own work cost nothing beyond writing (gathering) the output
    ("ceiling: table 8192 x 1024, the tutorial's code vs a new tensor written (no target)", "table/8192x1024",
     "tutorial", "bound", ">=", 10.0, False, None),
    ("ceiling: embedding + PE 2048 tokens, d = 512: the original vs the gather alone (no target)",
     "embed/1x2048x512", "original", "bound", ">=", 10.0, False, "embed/1x256x512"),
    ("ceiling: embedding + PE batch 8 x 2048, d = 512: the original vs the gather alone (no target)",
     "embed/8x2048x512", "original", "bound", ">=", 10.0, False, "embed/2x256x512"),
    ("ceiling: embedding + PE 8192 tokens, d = 1024: the original vs the gather alone (no target)",
     "embed/1x8192x1024", "original", "bound", ">=", 10.0, False, None),
    ("HF rotation, Llama-3.1-8B prefill 2048 tokens: faster than LlamaRotaryEmbedding + apply_rotary_pos_emb",
     "rope/prefill", "original", "posenc", ">=", 3.0, True, "rope/prefill"),
    ("HF rotation, Llama-3.1-8B decode, 1 token: faster than LlamaRotaryEmbedding + apply_rotary_pos_emb",
     "rope/decode", "original", "posenc", ">=", 3.0, True, "rope/decode"),
    ("HF rotation, prefill: faster than apply_rotary_pos_emb alone (cos/sin shared by the layers; no target)",
     "rope/prefill", "original_apply", "posenc", ">=", 3.0, False, "rope/prefill"),
    ("HF rotation, decode: faster than apply_rotary_pos_emb alone (no target)", "rope/decode", "original_apply",
     "posenc", ">=", 3.0, False, "rope/decode"),
    ("decode step overhead: posenc.torch.apply_rotary, 1 token, microseconds", "overhead/rope_decode", "function",
     "us", "<=", 5.0, True, "overhead/rope_decode"),
    ("decode step overhead: RotaryEmbedding.apply_rotary, 1 token, microseconds", "overhead/rope_decode", "module",
     "us", "<=", 5.0, True, "overhead/rope_decode"),
    ("decode step overhead: posenc.torch.rows, one position, microseconds (an upper bound)", "overhead/rows_one",
     "function", "us", "<=", 5.0, True, "overhead/rows_one"),
    ("timesteps 1024 x 320 (SD UNet's Timesteps(320, True, 0)): faster than diffusers' get_timestep_embedding",
     "timesteps/1024x320", "original", "posenc", ">=", 2.0, True, "timesteps/1024x320"),
    ("timesteps 1024 x 1280: faster than diffusers' get_timestep_embedding", "timesteps/1024x1280", "original",
     "posenc", ">=", 2.0, True, "timesteps/1024x1280"),
    ("ceiling: timesteps 1024 x 1280, diffusers' formula vs a new tensor written (no target)", "timesteps/1024x1280",
     "original", "bound", ">=", 2.0, False, "timesteps/1024x1280"),
    # issue 43: diffusers' apply_rotary_emb on Flux's q at least 2x, get_2d_rotary_pos_embed no slower
    ("apply_rotary_emb, Flux q [1, 24, 4608, 128] float32: faster than diffusers'", "diffusion_apply/flux_f32",
     "original", "posenc", ">=", 2.0, True, "diffusion_apply/flux_f32"),
    ("apply_rotary_emb, Flux q [1, 24, 4608, 128] bfloat16: faster than diffusers'", "diffusion_apply/flux_bf16",
     "original", "posenc", ">=", 2.0, True, "diffusion_apply/flux_bf16"),
    ("get_2d_rotary_pos_embed, HunyuanDiT 1024: no slower than diffusers' float32 path",
     "diffusion_rope/hunyuandit_1024", "original", "posenc", ">=", 1.0, True, "diffusion_rope/hunyuandit_1024"),
    ("get_2d_rotary_pos_embed, HunyuanDiT 2048: no slower than diffusers' float32 path",
     "diffusion_rope/hunyuandit_2048", "original", "posenc", ">=", 1.0, True, "diffusion_rope/hunyuandit_2048"),
]

GROUPS = [
    ("tables", "Tables", "[n, d] tables of positions 0 .. n-1 (the tutorial's interleaved sin/cos), a new tensor "
     "per call; per element of the table."),
    ("forward", "The tutorial module's forward", "`PositionalEncoding(d, dropout=0.0, max_len=seq).eval()` and its "
     "batch-first variant: x + pe[:seq], a new tensor; per element of x. The original's work is one broadcast add; "
     "posenc.torch does the same add on its exact table (its fused add, the PE computed on the fly, lost to it)."),
    ("fairseq_forward", "fairseq's forward", "`SinusoidalPositionalEmbedding(512, padding_idx=1, init_size=1026)` "
     "(fairseq main, the size its PositionalEmbedding factory gives for 1024 positions) on tokens [bsz, seq], row 0 "
     "left-padded: make_positions then one index_select of the table. posenc.torch does the same gather on its "
     "exact table after make_positions in four ops instead of seven; per output element."),
    ("embed", "Embedding + PE", "`ScaledEmbeddingWithPE(vocab, d)` on random tokens: emb(tok) * sqrt(d) + pe[:seq] "
     "(three passes) against posenc's one fused pass; per output element."),
    ("rope", "HF-style rotation (Llama-3.1-8B: 32 q heads, 8 kv heads, head 128, llama3 scaling)",
     "q and k as HF makes them (`[1, heads, seq, 128]` views of `[1, seq, heads, 128]` projections), restored from "
     "a saved copy before every call of every variant, outside the timed region; the original returns new q and "
     "k, posenc rotates them in place; per rotated element of q and k."),
    ("rope_hf", "The HF drop-in path (forward + apply_rotary_pos_emb)", "What a model's own code runs with the "
     "module swapped in: `rotary_emb(x, position_ids)` then `apply_rotary_pos_emb(q, k, cos, sin)` (once here; a "
     "model applies the same cos/sin in every layer), HF's against posenc.torch's, both out of place; posenc's "
     "apply_rotary_pos_emb computes the formula's products and sums in fewer passes (the same bits); per rotated "
     "element."),
    ("rope_cos_sin", "HF-style cos/sin alone", "`forward(x, position_ids) -> (cos, sin)`, [1, seq, 128] each; per "
     "element of cos."),
    ("vision_rope", "The vision towers' angle table (issue 32)", "`VisionRotaryEmbedding(40)` (Qwen2-VL's "
     "tower: head_dim 80): v5's `forward(position_ids)` on (row, col) ids and v4's `forward(seqlen)` with the "
     "0-dim tensor its towers pass. Upstream's work is one op on `inv_freq`, which posenc.torch hands to the "
     "same op on its correctly rounded `inv_freq`: the difference is each module's own Python; per element."),
    ("diffusion_rope", "Diffusion transformers' RoPE tables (issues 33 and 43)", "diffusers' `FluxPosEmbed` on a "
     "1024 x 1024 image (4608 ids; its float64 CPU path and its float32 path, against posenc.torch's exact one) "
     "and `WanRotaryPosEmbed` (building its tables; its forward on an 81-frame 480p latent, which slices them "
     "on both sides); the video tables; HunyuanDiT's `get_2d_rotary_pos_embed` (1024 and 2048: 64 x 64 and 128 x "
     "128 grids over the (0, 0)-(32, 32) crop, fractional positions; diffusers' float32 and float64 frequencies) "
     "and LTX-Video at 704 x 480 x 161, whose checks count the values that are not the correctly rounded ones "
     "(MPFR, gmpy2: each position as diffusers holds it times the exact frequency); per element."),
    ("diffusion_apply", "diffusers' apply_rotary_emb (issue 43)", "Flux's attention rotating q (`[1, 24, S, 128]`, "
     "S = 4608 for 1024 x 1024, 1024 in the quick plan; sequence_dim 2, adjacent pairs, FluxPosEmbed's float32 "
     "tables) in float32 and bfloat16: diffusers' expression (five passes) against posenc.torch's one pass "
     "(`posenc_rope_tables_*`, every element correctly rounded), with a copy of q into a new tensor as the bound; "
     "per element."),
    ("decode", "A fairseq decode step", "`SinusoidalPositionalEmbedding(512, padding_idx=1)` with "
     "incremental_state: both index their precomputed table (posenc computes a row only past it); per element."),
    ("timesteps", "Timestep embeddings (issue 25)", "A batch of 1024 float32 timesteps in [0, 1000) (fractional, as "
     "a sampler passes them), Stable Diffusion's UNet configuration `get_timestep_embedding(t, C, "
     "flip_sin_to_cos=True, downscale_freq_shift=0)`: diffusers' formula in PyTorch (exp, the float32 products, "
     "sin, cos, two concatenations) against posenc.torch's drop-in (each row at its own exact angle: no table to "
     "reuse); per output element."),
]

SIDE_ORDER = {"original": 0, "posenc": 1, "posenc-extra": 2, "bound": 3, "kernel": 4}
ALLOC_NAMES = {"reuse": "memory reused", "default": "default malloc"}


# ---- small helpers (the formats are summary.py's) -------------------------------------------------------------

def median(xs):
    return statistics.median(xs) if xs else None


def spread(xs):
    if not xs or len(xs) < 4:
        return 0.0
    q = statistics.quantiles(xs, n=4)
    return (q[2] - q[0]) / statistics.median(xs)


def verdict_alloc(data):
    """The allocator configuration of the run the verdicts use ("reuse": glibc told to reuse freed memory)."""
    return data.get("verdict_alloc", "default")


def other_alloc(data):
    """The other allocator configuration measured, if any ("default": glibc's default steady state)."""
    others = [a for a in data.get("alloc_runs", []) if a != verdict_alloc(data)]
    return others[0] if others else None


def cases_of(data, threads=1, alloc=None, group=None):
    """{case id: case} of one run (torch threads, allocator configuration; None: the verdicts' run). The scaling
    cases (group "scaling") only when asked for by group: they have their own table."""
    alloc = alloc or verdict_alloc(data)
    return {c["id"]: c for c in data.get("cases", [])
            if c.get("threads", 1) == threads and c.get("alloc", "default") == alloc
            and (c.get("group") == "scaling") == (group == "scaling") and (group is None or c.get("group") == group)}


def _times(case, name):
    v = (case or {}).get("variants", {}).get(name)
    return v["times"] if v else None


def paired(case, a, b):
    """Median of the per-round ratios time(a) / time(b) (the calls of a round were made next to each other)."""
    ta, tb = _times(case, a), _times(case, b)
    if not ta or not tb:
        return None
    return statistics.median(x / y for x, y in zip(ta, tb) if y > 0)


def overhead(case, name):
    """Median over the rounds of (the Python call's time - the kernel's own time per call), seconds."""
    ta, tk = _times(case, name), _times(case, "kernel")
    if not ta or not tk:
        return None
    return statistics.median(x - y for x, y in zip(ta, tk))


def _posenc_name(case):
    for n, v in (case or {}).get("variants", {}).items():
        if v["side"] == "posenc":
            return n
    return None


def _variants(case):
    return sorted(case["variants"].items(), key=lambda kv: SIDE_ORDER.get(kv[1]["side"], 9))


def _loads(data):
    return "%s at the start, %s at the end" % (" ".join("%.2f" % x for x in data.get("load_avg_start", [])),
                                               " ".join("%.2f" % x for x in data.get("load_avg_end", [])))


# ---- targets -------------------------------------------------------------------------------------------------

def _met(value, op, target):
    return {">=": value >= target, "<=": value <= target, ">": value > target}[op]


def _target_case(data, target, alloc=None):
    quick = data.get("mode") == "quick"
    cid = target[7] if quick else target[1]
    return cases_of(data, 1, alloc).get(cid) if cid else None


def target_rows(data_or_path):
    """One row per target, in targets.evaluate's shape: (title, path, ratio of medians, paired ratio, op, target,
    met, first s, second s, spread), from the verdicts' run (torch.set_num_threads(1), glibc malloc reusing freed
    memory when it could be told to). met is None when not measured, not binding, or measured on the quick plan's
    shapes (which are not the targets' shapes); path is "python <posenc ISA>"."""
    data = data_of(data_or_path)
    if not data:
        return [(t[0], "python", None, None, t[4], t[5], None, None, None, None) for t in TARGETS]
    quick = data.get("mode") == "quick"
    path = "python " + data.get("machine", {}).get("posenc_isa", "?")
    rows = []
    for t in TARGETS:
        title, _, num, den, op, target, binding, quick_id = t
        case = _target_case(data, t)
        judged = binding and not quick
        if quick and quick_id:
            title += " [quick shape: %s]" % quick_id
        ta = _times(case, num)
        tb = _times(case, "kernel" if den == "us" else den)
        if not ta or not tb:
            rows.append((title, path, None, None, op, target, None, None, None, None))
            continue
        noise = max(spread(ta), spread(tb))
        if den == "us":
            v = overhead(case, num) / 1e-6
            rows.append((title, path, v, None, op, target, _met(v, op, target) if judged else None, median(ta),
                         median(tb), noise))
            continue
        p = paired(case, num, den)
        rows.append((title, path, median(ta) / median(tb), p, op, target, _met(p, op, target) if judged else None,
                     median(ta), median(tb), noise))
    return rows


def targets_table(data):
    quick = data.get("mode") == "quick"
    other = other_alloc(data)
    rows = []
    for t, (title, path, r, p, op, target, met, a, b, noise) in zip(TARGETS, target_rows(data)):
        binding, quick_id = t[6], t[7]
        if r is None:
            verdict = "not in the quick plan" if quick and not quick_id else "not measured"
        elif not binding:
            verdict = "no target"
        elif quick:
            verdict = "quick plan: not judged"
        else:
            verdict = "met" if met else "**not met**"
        cells = [title, path, fmt_ratio(p), fmt_ratio(r), "%s %g" % (op, target), verdict, fmt_time(a), fmt_time(b),
                 "-" if noise is None else "%.0f%%" % (100 * noise)]
        if other:
            o = paired(_target_case(data, t, other), t[2], t[3]) if t[3] != "us" else None
            cells.append(fmt_ratio(o))
        rows.append(cells)
    header = ["target", "path", "paired", "of medians (overhead: us)", "wanted", "verdict", "first", "second",
              "spread"]
    if other:
        header.append("paired, %s" % ALLOC_NAMES.get(other, other))
    return table(header, rows)


# ---- issue 24: every drop-in at least as fast as its original, at 1 and 2 threads ------------------------------

# (title, case id, quick case id, the original's variant, same_op): same_op marks the cases where the original's
# work is one PyTorch op that posenc.torch hands to that same op (parity is the most there is).
ISSUE24 = [
    ("tutorial PositionalEncoding forward, x [2048, 1, 512]", "forward/2048x1x512", "forward/128x1x512", "original",
     True),
    ("tutorial PositionalEncoding forward, x [2048, 8, 512]", "forward/2048x8x512", "forward/128x2x512", "original",
     True),
    ("batch-first forward, x [1, 2048, 512]", "forward_bf/1x2048x512", "forward_bf/1x128x512", "original", True),
    ("batch-first forward, x [8, 2048, 512]", "forward_bf/8x2048x512", "forward_bf/2x128x512", "original", True),
    ("fairseq forward, tokens [8, 128], d 512", "fairseq/8x128x512", "fairseq/2x64x512", "original", False),
    ("fairseq forward, tokens [8, 1024], d 512", "fairseq/8x1024x512", "fairseq/2x64x512", "original", False),
    ("fairseq decode step, d 512", "fairseq_decode/1000", "fairseq_decode/1000", "original", False),
    ("ScaledEmbeddingWithPE, 8 x 2048 tokens, d 512", "embed/8x2048x512", "embed/2x256x512", "original", False),
    ("HF cos/sin forward, Llama-3.1-8B prefill 2048", "rope_cos_sin/prefill", "rope_cos_sin/prefill", "original",
     False),
    ("HF cos/sin forward, decode 1 token", "rope_cos_sin/decode", "rope_cos_sin/decode", "original", False),
    ("HF forward + apply_rotary_pos_emb, prefill 2048", "rope_hf/prefill", "rope_hf/prefill", "original", False),
    ("HF forward + apply_rotary_pos_emb, decode 1 token", "rope_hf/decode", "rope_hf/decode", "original", False),
    ("HF forward + apply vs posenc's fused apply_rotary, prefill 2048", "rope/prefill", "rope/prefill", "original",
     False),
    ("VisionRotaryEmbedding(40) v5 forward, 4096 (row, col) ids", "vision_rope/ids", "vision_rope/ids", "original",
     False),
    ("VisionRotaryEmbedding(40) v4 forward(seqlen), a 0-dim tensor", "vision_rope/seqlen", "vision_rope/seqlen",
     "original", False),
    ("FluxPosEmbed, 1024 x 1024 (diffusers float64)", "diffusion_rope/flux", "diffusion_rope/flux", "original",
     False),
    ("FluxPosEmbed, 1024 x 1024 (diffusers float32)", "diffusion_rope/flux", "diffusion_rope/flux", "original_f32",
     False),
    ("WanRotaryPosEmbed(), the tables", "diffusion_rope/wan_init", "diffusion_rope/wan_init", "original", False),
    ("WanRotaryPosEmbed forward, 81 frames 480p", "diffusion_rope/wan", "diffusion_rope/wan", "original", False),
    ("get_3d_rotary_pos_embed (CogVideoX 1.5), 13 x 30 x 45", "diffusion_rope/cogvideox", "diffusion_rope/cogvideox",
     "original", False),
    ("get_3d_rotary_pos_embed (CogVideoX 1.0, linspace: real positions), 13 x 30 x 45",
     "diffusion_rope/cogvideox_linspace", "diffusion_rope/cogvideox_linspace", "original", False),
    ("HunyuanVideoRotaryPosEmbed, 9 x 20 x 30", "diffusion_rope/hunyuan_video", "diffusion_rope/hunyuan_video",
     "original", False),
    ("LTXVideoRotaryPosEmbed(2048), 7 x 8 x 12", "diffusion_rope/ltx", "diffusion_rope/ltx", "original", False),
    ("LTXVideoRotaryPosEmbed(2048), 704 x 480 x 161", "diffusion_rope/ltx_704x480x161",
     "diffusion_rope/ltx_704x480x161", "original", False),
    ("get_2d_rotary_pos_embed (HunyuanDiT 1024, float32 path)", "diffusion_rope/hunyuandit_1024",
     "diffusion_rope/hunyuandit_1024", "original", False),
    ("get_2d_rotary_pos_embed (HunyuanDiT 2048, float32 path)", "diffusion_rope/hunyuandit_2048",
     "diffusion_rope/hunyuandit_2048", "original", False),
    ("apply_rotary_emb, Flux q float32", "diffusion_apply/flux_f32", "diffusion_apply/flux_f32", "original", False),
    ("apply_rotary_emb, Flux q bfloat16", "diffusion_apply/flux_bf16", "diffusion_apply/flux_bf16", "original",
     False),
]


def issue24_table(data):
    """original / posenc (paired) per case at each thread count measured, in the verdicts' allocator run."""
    quick = data.get("mode") == "quick"
    runs = data.get("thread_runs", [1])
    rows = []
    for title, cid, qid, orig, same_op in ISSUE24:
        cells, ratios = [title + (" [quick shape: %s]" % qid if quick else "")], []
        for threads in runs:
            case = cases_of(data, threads).get(qid if quick else cid)
            pn = _posenc_name(case) if case and not case.get("error") else None
            r = paired(case, orig, pn) if pn else None
            ratios.append(r)
            cells += [fmt_time(median(_times(case, orig))) if pn else "-",
                      fmt_time(median(_times(case, pn))) if pn else "-", fmt_ratio(r)]
        measured = [r for r in ratios if r is not None]
        if not measured:
            verdict = "not measured"
        elif all(r >= 1.0 for r in measured):
            verdict = "at least as fast"
        elif same_op:
            verdict = "the same op: parity (%s)" % " / ".join(fmt_ratio(r) for r in measured)
        else:
            verdict = "**slower**"
        rows.append(cells + [verdict])
    header = ["case"]
    for threads in runs:
        header += ["original, %d thr" % threads, "posenc, %d thr" % threads, "paired, %d thr" % threads]
    return table(header + ["verdict"], rows)


# ---- sections ------------------------------------------------------------------------------------------------

def _check(case):
    c = case.get("check") or {}
    return ", ".join(("%s %d" if isinstance(v, int) else "%s %.2g") % (k.replace("max_abs_diff", "max abs diff")
                                                                      .replace("_", " "), v)
                     for k, v in sorted(c.items())) or "-"


def group_table(data, group):
    other = other_alloc(data)
    other_cases = cases_of(data, 1, other) if other else {}
    with_other = any(c["group"] == group for c in other_cases.values())
    rows = []
    for case in cases_of(data).values():
        if case["group"] != group:
            continue
        if case.get("error"):
            rows.append([case["title"], "error: " + case["error"]] + [""] * (7 if with_other else 5))
            continue
        pn = _posenc_name(case)
        tp = median(_times(case, pn))
        rc = other_cases.get(case["id"])
        for i, (name, v) in enumerate(_variants(case)):
            t = median(v["times"])
            cells = [case["title"] if i == 0 else "", v["label"], fmt_time(t),
                     "%.3g" % (t / case["elements"] * 1e9) if case.get("elements") else "-",
                     "-" if name == pn else fmt_ratio(t / tp) if tp else "-",
                     "-" if name == pn else fmt_ratio(paired(case, name, pn)), "%.0f%%" % (100 * spread(v["times"]))]
            if with_other:
                cells += [fmt_time(median(_times(rc, name))),
                          "-" if name == pn or rc is None else fmt_ratio(paired(rc, name, pn))]
            rows.append(cells)
        rows.append(["", "*check: %s*" % _check(case)] + [""] * (7 if with_other else 5))
    if not rows:
        return None
    header = ["case", "implementation", "median", "ns / element", "time / posenc's", "paired", "spread"]
    if with_other:
        name = ALLOC_NAMES.get(other, other)
        header += ["median, %s" % name, "paired, %s" % name]
    return table(header, rows)


def overhead_table(data):
    rows = []
    for case in cases_of(data).values():
        if case["group"] != "overhead":
            continue
        if case.get("error"):
            rows.append((case["title"], "error: " + case["error"], "", "", ""))
            continue
        for i, (name, v) in enumerate(_variants(case)):
            o = overhead(case, name) if name != "kernel" else None
            rows.append((case["title"] if i == 0 else "", v["label"], fmt_time(median(v["times"])),
                         "-" if o is None else fmt_time(o), "%.0f%%" % (100 * spread(v["times"]))))
        rows.append(("", "*%s; %d calls per round*" % (case.get("note") or "", case.get("inner", 1)), "", "", ""))
    if not rows:
        return None
    return table(("decode step", "call", "median per call", "minus the kernel (overhead)", "spread"), rows)


def threads_table(data):
    runs = data.get("thread_runs", [1])
    if len(runs) < 2:
        return None
    one, many = cases_of(data, 1), cases_of(data, runs[1])
    rows = []
    for cid, c in many.items():
        c1 = one.get(cid)
        pn = _posenc_name(c) if not c.get("error") else None
        if not pn or not c1:
            continue
        for name, v in c["variants"].items():
            if v["side"] != "original":
                continue
            rows.append((c["title"], v["label"], fmt_time(median(_times(c1, name))), fmt_time(median(v["times"])),
                         fmt_time(median(_times(c1, pn))), fmt_time(median(_times(c, pn))),
                         fmt_ratio(paired(c, name, pn))))
    return ("With torch.set_num_threads(%d) (posenc's large calls follow torch's thread count):\n\n" % runs[1] +
            table(("case", "original", "original, 1 thread", "original, %d threads" % runs[1], "posenc, 1 thread",
                   "posenc, %d threads" % runs[1], "original / posenc (paired, %d threads)" % runs[1]), rows))


# ---- issue 26: scaling with threads ------------------------------------------------------------------------------

SCALING_SPEEDUP = 1.7  # posenc at 2 threads over posenc at 1, on the large shapes (table 8192 x 1024, RoPE prefill)
SCALING_KEEP = 0.85  # posenc's ratio over PyTorch at 2 threads against its ratio at 1 thread


def scaling_rows(data):
    """(title, threads, original s, posenc s, original / posenc paired, posenc 1 thread / posenc paired or None,
    ratio / the ratio at 1 thread or None, speed-up target or None) per scaling case and thread count."""
    counts = data.get("scaling_runs", [])
    one = cases_of(data, 1, group="scaling")
    rows = []
    for cid, c1 in one.items():
        for t in counts:
            c = cases_of(data, t, group="scaling").get(cid)
            if not c or c.get("error"):
                continue
            orig = next((n for n, v in c["variants"].items() if v["side"] == "original"), None)
            ratio, ratio1 = paired(c, orig, "posenc"), paired(c1, orig, "posenc")
            speedup = paired(c, "posenc_1", "posenc") if t > 1 else None
            large = cid.startswith("scaling/table/8192x1024") or cid == "scaling/rope/prefill"
            rows.append((c["title"], t, median(_times(c, orig)), median(_times(c, "posenc")), ratio, speedup,
                         ratio / ratio1 if ratio and ratio1 and t > 1 else None,
                         SCALING_SPEEDUP if large and t == 2 and data.get("mode") != "quick" else None))
    return rows


def scaling_table(data):
    rows = []
    for title, t, to, tp, ratio, speedup, keep, target in scaling_rows(data):
        met = []
        if target is not None and speedup is not None:
            met.append("speed-up >= %.1fx %s" % (target, "met" if speedup >= target else "NOT met"))
        if keep is not None and t == 2 and data.get("mode") != "quick":
            met.append("ratio kept >= %.2f %s" % (SCALING_KEEP, "met" if keep >= SCALING_KEEP else "NOT met"))
        rows.append((title, "%d" % t, fmt_time(to), fmt_time(tp), fmt_ratio(ratio),
                     fmt_ratio(speedup) if speedup else "", "%.2f" % keep if keep else "", "; ".join(met)))
    if not rows:
        return None
    return table(("case", "threads", "original", "posenc", "original / posenc (paired)",
                  "posenc speed-up over 1 thread (paired)", "ratio / ratio at 1 thread", "issue 26"), rows)


def machine_table(data):
    m = data.get("machine", {})
    rows = [("CPU", "%s, %s CPUs" % (m.get("cpu", "?"), m.get("cpus", "?"))), ("kernel", m.get("kernel", "?")),
            ("Python", m.get("python", "?")),
            ("torch", "%s (parallel backend %s)" % (m.get("torch", "?"), m.get("torch_parallel") or "?")),
            ("torch threads", "%s" % data.get("thread_note", "?")),
            ("NumPy", m.get("numpy", "?")),
            ("posenc", "%s, active ISA %s (available: %s), from %s" % (
                m.get("posenc", "?"), m.get("posenc_isa", "?"), ", ".join(m.get("posenc_isas", [])),
                m.get("posenc_module", "?"))),
            ("glibc", m.get("glibc", "?")), ("transparent huge pages", m.get("transparent_hugepage", "?")),
            ("malloc", "verdicts: %s; also: %s" % (ALLOC_NAMES.get(verdict_alloc(data)),
                                                   ALLOC_NAMES.get(other_alloc(data), "-"))),
            ("load average", _loads(data)),
            ("run", "%s plan, %s s, `%s`" % (data.get("mode", "?"), data.get("seconds", "?"),
                                             data.get("command", "?")))]
    return table(("", ""), rows)


# ---- chart ---------------------------------------------------------------------------------------------------

def chart(data, out_dir):
    """Speed-up of posenc.torch over each original (paired median), one row per case and original, log scale: the
    verdicts' run and the other allocator configuration; the issue's 10x and 3x targets."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # the report without this chart
        return None
    plt.rcParams["svg.hashsalt"] = "posenc"  # the same data gives the same file
    other = other_alloc(data)
    other_cases = cases_of(data, 1, other) if other else {}
    bars = []
    for case in cases_of(data).values():
        pn = _posenc_name(case)
        if case.get("error") or case["group"] == "overhead" or not pn:
            continue
        for name, v in case["variants"].items():
            r = paired(case, name, pn) if v["side"] == "original" else None
            if r:
                short = {"tutorial": "tutorial", "stacked": "pow/stack", "original_apply": "apply only"}.get(name)
                label = case["title"] + (" (%s)" % short if short else "")
                bars.append((label, r, paired(other_cases.get(case["id"]), name, pn), case["group"]))
    if not bars:
        return None
    fig, ax = plt.subplots(figsize=(9, 0.36 * len(bars) + 1.6))
    ys = list(range(len(bars)))[::-1]
    values = [b[1] for b in bars] + [b[2] for b in bars if b[2]]
    left = min(0.5, min(values) / 1.5)
    h = 0.38
    ax.barh([y + h / 2 for y in ys], [b[1] - left for b in bars], h, left=left, color="C0",
            label="malloc: %s (the verdicts)" % ALLOC_NAMES.get(verdict_alloc(data)))
    if any(b[2] for b in bars):
        ax.barh([y - h / 2 for y in ys], [(b[2] or left) - left for b in bars], h, left=left, color="C7",
                label="malloc: %s" % ALLOC_NAMES.get(other, other))
    for y, b in zip(ys, bars):
        ax.text(b[1], y + h / 2, " %.3gx" % b[1], va="center", fontsize=6)
        if b[2]:
            ax.text(b[2], y - h / 2, " %.3gx" % b[2], va="center", fontsize=6)
    ax.set_yticks(ys, [b[0] for b in bars], fontsize=7)
    ax.set_xscale("log")
    ax.set_xlim(left=left, right=max(values) * 2)
    ax.axvline(1.0, color="black", linestyle=":", linewidth=1)
    ax.axvline(10.0, color="gray", linestyle="--", linewidth=1, label="issue 16 target: tables, embedding (10x)")
    ax.axvline(3.0, color="gray", linestyle="-.", linewidth=1, label="issue 16 target: HF rotation (3x)")
    ax.axvline(2.0, color="gray", linestyle=(0, (1, 3)), linewidth=1, label="issue 25 target: timesteps (2x)")
    ax.set_xlabel("original time / posenc.torch time (paired median; > 1: posenc faster)")
    ax.set_title("posenc.torch against the original PyTorch code, one thread (%s plan)" % data.get("mode", "?"),
                 fontsize=10)
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, CHART), format="svg", metadata={"Date": None})
    plt.close(fig)
    return CHART


# ---- entry points --------------------------------------------------------------------------------------------

METHOD = """Measured by `{command}` on {date}: torch {torch}, posenc {posenc} ({isa}), {cpu}; the {mode} plan, \
{seconds} s. Each case calls its implementations in rounds, the order rotated from round to round (A B C, then \
C B A, ...) so that the host's drift hits them alike; a round calls each once, or, for calls of a few \
microseconds, a loop of the same count of calls for each. *Median*: over the rounds ({min_rounds} to \
{max_rounds} per case); *paired*: the median of the per-round ratios (this implementation's time / posenc's in \
the same round), which the verdicts use; spread: interquartile range / median. Everything runs under \
`torch.no_grad()`, float32, `torch.set_num_threads(1)` ({thread_note}). Each case also times a *bound*: the same \
output without the arithmetic.

Memory, which decides the large cases: in the steady state of its default configuration glibc's malloc gives \
a tensor of 32 MiB or more a fresh mapping whose pages fault on first touch (on this VM about as long as several \
passes over the data), and serves smaller ones from freed heap memory, which the implementations of a case then \
share, each one's time depending on what the others freed. The verdicts use the run with glibc told to reuse \
every freed block (`mallopt` M_MMAP_THRESHOLD 1 GiB, M_TRIM_THRESHOLD max): no fresh mapping, no page fault, \
the work itself, as with a caching allocator (jemalloc, tcmalloc). *Default malloc*: the cases without a decode \
shape again, in glibc's default steady state set explicitly (M_MMAP_THRESHOLD 32 MiB, M_TRIM_THRESHOLD 64 MiB), \
each case from a trimmed heap: what a process with the default allocator sees. Load average {loads}."""


def render(python_json_path, out_dir=None):
    """(Markdown of the section, [(chart title, file name)]); the chart is written to out_dir (default: the JSON's
    directory) and linked by file name. A missing file gives a section saying so and no chart."""
    data = load(python_json_path)
    if not data:
        return not_measured(SECTION, python_json_path), []
    out_dir = out_dir or os.path.dirname(os.path.abspath(python_json_path))
    m, plan = data.get("machine", {}), data.get("plan", {})
    parts = [SECTION,
             METHOD.format(command=data.get("command", "bench_torch.py"), date=data.get("date", "?"),
                           torch=m.get("torch", "?"), posenc=m.get("posenc", "?"), isa=m.get("posenc_isa", "?"),
                           cpu=m.get("cpu", "?"), mode=data.get("mode", "?"), seconds=data.get("seconds", "?"),
                           min_rounds=plan.get("min_rounds", "?"), max_rounds=plan.get("max_rounds", "?"),
                           thread_note=data.get("thread_note", "?"), loads=_loads(data)),
             "### The targets of issues 16 and 25\n\nA ratio is first time / second time as the row states it "
             "(above 1 posenc is faster); a *ceiling* row gives the original's time over the bound's (the same "
             "output without the arithmetic): the most any implementation that writes a new output could gain; an overhead row "
             "gives the Python call's time minus the kernel's own per call (median of "
             "the per-round differences) in microseconds, first and second being those two times. The quick "
             "plan's shapes are not the targets' shapes: there the rows are shown, not judged.\n\n"
             + targets_table(data)]
    parts.append("### Issue 24: every drop-in at least as fast as its original, at 1 and 2 threads\n\n"
                 "original time / posenc.torch time (paired median) for each module at each torch thread count "
                 "measured, in the run the verdicts use. *The same op*: the original's work is one PyTorch op (a "
                 "broadcast add) that posenc.torch hands to that op on its exact table; a paired ratio there is "
                 "parity within the host's noise, and nothing posenc computes could beat it (its fused add, the PE "
                 "computed on the fly, was slower: single-threaded, the PE per batch row).\n\n" + issue24_table(data))
    parts.append(transformers_part(os.path.join(os.path.dirname(os.path.abspath(python_json_path)),
                                                "transformers.json")))
    for group, title, text in GROUPS:
        t = group_table(data, group)
        if t:
            parts.append("### %s\n\n%s\n\n%s" % (title, text, t))
    ot = overhead_table(data)
    if ot:
        parts.append("### Per-call overhead at decode shapes\n\nThe Python call's time, and that minus the kernel's "
                     "own time per call measured in the same rounds: for RoPE `posenc._posenc._repeat_rope_qk`, "
                     "which repeats the C call without returning to Python; for one table row, calls of many rows "
                     "divided by their count (the C call's fixed cost is not counted, so that overhead is an upper "
                     "bound). The binding rows split the overhead: posenc.torch's own Python code is the function's "
                     "time minus the binding's on the same tensors; reading the tensors' attributes, the binding's "
                     "time on tensors minus on NumPy arrays.\n\n" + ot)
    tt = threads_table(data)
    if tt:
        parts.append("### More threads for PyTorch\n\n" + tt)
    st = scaling_table(data)
    if st:
        parts.append("### Scaling with threads (issue 26)\n\nEach case at `torch.set_num_threads(t)` for 1, 2 and "
                     "every CPU of the process's affinity; posenc's calls follow torch's count (docs/python.md, "
                     "\"Threads\"), splitting on OpenMP's team (torch is imported; torch's operators run on the same "
                     "threads). *Speed-up*: posenc at t threads against "
                     "posenc held to one thread (`posenc.set_num_threads(1)`) in the same rounds, paired; *ratio "
                     "/ ratio at 1 thread*: how much of its lead over PyTorch posenc keeps when both sides get t "
                     "threads. Targets: a speed-up of at least %.1fx at 2 threads on the table 8192 x 1024 and "
                     "the RoPE prefill, and a ratio at 2 threads of at least %.2f of the ratio at 1 thread. "
                     "OMP_WAIT_POLICY: %s (unset, torch's OpenMP threads spin for milliseconds after each of its "
                     "parallel ops; posenc's pieces run on those threads: the RoPE case restores q and k with a "
                     "torch copy before each call, as a model's projections precede its rotation).\n\n"
                     % (SCALING_SPEEDUP, SCALING_KEEP, data.get("omp_wait_policy") or "unset") + st)
    charts = []
    name = chart(data, out_dir)
    if name:
        charts.append(("posenc.torch against the original PyTorch code", name))
        parts.append("![%s](%s)" % charts[0])
    parts.append("### Machine (Python run)\n\n" + machine_table(data))
    return "\n\n".join(parts) + "\n", charts


TRANSFORMERS_ROWS = (("prefill", "model forward, prefill 2048 (cache on)", 1.0),
                     ("decode", "model, 64 decode steps with the cache", 1.0),
                     ("rotary_prefill", "rotary module alone, 2048 positions", 1.5),
                     ("rotary_decode", "rotary module alone, 1 position", 1.5))


def transformers_table(data):
    """Rows of bench/python/bench_hf_models.py's JSON: per thread count and measurement, the medians, the median
    of the per-round ratios vanilla / posenc (and their range), and issue 42's target for it."""
    lines = ["| threads | what | vanilla | posenc.torch | vanilla / posenc, paired median (range) | target | met |",
             "|---|---|---|---|---|---|---|"]
    for threads, rounds in sorted(data.get("rounds", {}).items()):
        if not rounds:
            continue
        for key, label, target in TRANSFORMERS_ROWS:
            v = median([r["vanilla"][key] for r in rounds])
            p = median([r["posenc"][key] for r in rounds])
            ratios = [r["vanilla"][key] / r["posenc"][key] for r in rounds]
            unit, scale = ("ms", 1e3) if v > 1e-3 else ("us", 1e6)
            lines.append("| %s | %s | %.4g %s | %.4g %s | %.3f (%.3f .. %.3f) | >= %.1f | %s |" % (
                threads, label, v * scale, unit, p * scale, unit, median(ratios), min(ratios), max(ratios), target,
                "yes" if median(ratios) >= target else "no"))
    return "\n".join(lines)


def transformers_part(path):
    """The subsection of posenc.torch inside transformers' own forward (issue 42), from path when a run of
    scripts/bench_transformers.sh left it there; else how to measure it."""
    head = "### Inside transformers: a Llama 3.1 model's forward with posenc's rotary (issue 42)\n\n"
    data = load(path) if os.path.exists(path) else None
    if not data:
        return head + ("Not measured in this run: transformers is a Debian unstable package, not a bookworm one. "
                       "`scripts/test_fresh.sh --run-sid 'bash scripts/bench_transformers.sh'` measures it (in a "
                       "tree where this report is made afterwards, it leaves `report/transformers.json` for this "
                       "table); docs/benchmarks.md keeps the last numbers.")
    return head + ("transformers %s, torch %s, %s; %s, posenc %s (%s); %d rounds per thread count, the order "
                   "alternated; same greedy tokens in 64 decode steps: %s. Targets: the model at least as fast "
                   "as vanilla, the rotary module alone at least 1.5x.\n\n" % (
                       data.get("transformers", "?"), data.get("torch", "?"), data.get("config", "?"),
                       data.get("cpu", "?"), data.get("posenc", "?"), data.get("isa", "?"),
                       len(next(iter(data.get("rounds", {}).values()), [])), data.get("same_tokens"))
                   + transformers_table(data))


def insert(report_text, section_text):
    """The report with the section placed before its "## Charts" (else "## Machine") heading, else at the end."""
    if not section_text:
        return report_text
    for heading in ("\n## Charts", "\n## Machine"):
        i = report_text.find(heading)
        if i >= 0:
            return report_text[:i] + "\n" + section_text.rstrip("\n") + "\n" + report_text[i:]
    return report_text.rstrip("\n") + "\n\n" + section_text


def problems(python_json_path):
    """What makes the Python run incomplete (for make_report's exit status): a missing file, a failed case, a
    target's case missing. Never the timings."""
    return json_problems(python_json_path, "Python results", _problems)


def _problems(data):
    found = ["python %s (%d threads, %s malloc): %s" % (c["id"], c.get("threads", 1), c.get("alloc", "default"),
                                                        c["error"])
             for c in data.get("cases", []) if c.get("error")]
    quick = data.get("mode") == "quick"
    if not data.get("scaling_only"):  # bench_torch.py --scaling-only measures no target of the other tables
        found += ["python: target not measured: %s" % r[0] for t, r in zip(TARGETS, target_rows(data))
                  if r[2] is None and (t[7] or not quick)]
    return found


def command(doc, render_fn, problems_fn, name):
    """The command line of a section with a chart (this one, neon_section.py's): `<name>.py JSON [--out DIR]` prints
    the section (its chart into DIR, default the JSON's directory) and its problems on stderr; exit status 1 when
    there is any."""
    import argparse
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json")
    ap.add_argument("--out", help="where the chart goes (default: the JSON's directory)")
    a = ap.parse_args()
    text, _ = render_fn(a.json, a.out)
    print(text)
    bad = problems_fn(a.json)
    for p in bad:
        print("%s: %s" % (name, p), file=sys.stderr)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    command(__doc__, render, problems, "python_section")
