"""The Markdown report: targets first, then accuracy, the 2-thread split, every kernel's ratios, the charts
and the machine."""
from results import BOUNDS, POSENC_PATHS, posenc_paths
from targets import evaluate

KERNELS = ("table_f32", "rows_f32", "table_bf16", "table_f16", "add_f32", "embed_f32", "embed_bf16",
           "embed_f16", "embed_learned_f32", "rope_qk_f32", "rope_qk_bf16", "rope_qk_f16", "rope_cache_f32",
           "rope_qk_f32_axes3", "timesteps_f32", "rope_cache_real_f32")
# Kernels without peers of their own are compared with another kernel's cases on the same shape:
# "=path" means the same posenc path there.
CROSS = {"table_bf16": [("table_f32", "=path")], "table_f16": [("table_f32", "=path")],
         "embed_bf16": [("embed_f32", "=path"), ("embed_f32", "memcpy_gather")],
         "embed_f16": [("embed_f32", "=path"), ("embed_f32", "memcpy_gather")],
         "rope_qk_bf16": [("rope_qk_f32", "=path")], "rope_qk_f16": [("rope_qk_f32", "=path")],
         "rope_qk_f32_axes3": [("rope_qk_f32_axes1", "=path")]}


def fmt_time(s):
    if s is None:
        return "-"
    for unit, scale in (("s", 1), ("ms", 1e-3), ("us", 1e-6)):
        if s >= scale:
            return "%.3g %s" % (s / scale, unit)
    return "%.3g ns" % (s * 1e9)


def fmt_ratio(r):
    return "-" if r is None else ("%.3g" % r)


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def shape_label(params):
    if {"r", "q", "k"} <= set(params):  # RoPE on q and k: d is the head size, n the tokens
        s = "%d tok x (%d q + %d k) x %d, r = %d" % (params["n"], params["q"], params["k"], params["d"], params["r"])
        extra = ["%s=%s" % (k, v) for k, v in sorted(params.items()) if k not in ("d", "n", "r", "q", "k")]
        return s + (" (" + ", ".join(extra) + ")" if extra else "")
    s = "%d x %d" % (params["d"], params["n"])
    extra = ["%s=%s" % (k, v) for k, v in sorted(params.items()) if k not in ("d", "n")]
    return s + (" (" + ", ".join(extra) + ")" if extra else "")


def targets_section(groups, pairs, simd_paths):
    rows = []
    for title, path, r, p, op, target, met, a, b, noise in evaluate(groups, pairs, simd_paths):
        verdict = "not measured" if r is None else "no target" if met is None else "met" if met else "**not met**"
        rows.append((title, path, fmt_ratio(p), fmt_ratio(r), "%s %g" % (op, target), verdict, fmt_time(a),
                     fmt_time(b), "-" if noise is None else "%.0f%%" % (100 * noise)))
    return ("## The issues' targets\n\nEvery ratio is first time / second time, as the row states it, from this "
            "one run. *Paired*: the two calls alternated (order swapped each time), median of the per-pair "
            "ratios, median over the repetitions; the verdict uses it. *Of medians*: the ratio of the two "
            "cases' own medians (the cases measured apart, interleaved at random with all others). First, "
            "second: those medians. Spread: the larger interquartile range / median of the two cases' "
            "repetitions, a measure of how noisy the host was. A paired call finds the caches as the other "
            "implementation left them (posenc's per-spec rotation tables evicted by a long libm call, for "
            "one), so a paired ratio can be below the ratio of medians, which times back-to-back calls.\n\n" +
            table(("target", "path", "paired", "of medians", "wanted", "verdict", "first", "second", "spread"),
                  rows))


def accuracy_section(acc):
    if not acc:
        return "## Accuracy\n\nnot measured\n"
    groups = list(dict.fromkeys(r["group"] for r in acc["results"]))
    impls = list(dict.fromkeys((r["kind"], r["impl"]) for r in acc["results"]))
    by = {(r["kind"], r["impl"], r["group"]): r for r in acc["results"]}
    rows = []
    for kind, impl in impls:
        cells = []
        for g in groups:
            r = by[(kind, impl, g)]
            cells.append("%.3g (%.0f%%)" % (r["max_ulp"], 100.0 * r["over_1ulp"] / max(1, r["count"])))
        worst_abs = max(by[(kind, impl, g)]["max_abs"] for g in groups)
        rows.append([("posenc " if kind == "posenc" else "") + impl] + cells + ["%.2g" % worst_abs])
    return ("## Accuracy next to speed\n\nMax error in float32 ULPs against MPFR (exact angle from the spec's "
            "doubles; ULP at the exact value's binade, unit floored at 2^-149), and in parentheses the share of "
            "elements off by more than 1 ULP; d = %d, all pairs, %d positions around each centre. The float "
            "peers form fl(p*w) as frameworks do.\n\n" % (acc["d_model"], acc["positions_per_group"]) +
            table(["impl"] + ["p ~ %s" % g for g in groups] + ["max abs error"], rows))


def _error_rows(res, names, keys=()):
    """(groups, rows) of the RoPE, multi-axis and timestep accuracy tables: a row per implementation (and value of
    the keys, the RoPE table's base), its label (a peer's from names), the keys' values, the max absolute error at
    each group ("-" where not measured) and the worst max ULP error of the row."""
    groups = list(dict.fromkeys(r["group"] for r in res))
    impls = list(dict.fromkeys((r["kind"], r["impl"]) + tuple(r[k] for k in keys) for r in res))
    by = {(r["kind"], r["impl"]) + tuple(r[k] for k in keys) + (r["group"],): r for r in res}
    rows = []
    for impl in impls:
        got = [by.get(impl + (g,)) for g in groups]
        worst_ulp = max((r["max_ulp"] for r in got if r), default=None)
        kind, name = impl[:2]
        rows.append(["posenc " + name if kind == "posenc" else names.get(name, name)] + ["%g" % v for v in impl[2:]]
                    + ["%.2g" % r["max_abs"] if r else "-" for r in got]
                    + ["-" if worst_ulp is None else "%.3g" % worst_ulp])
    return groups, rows


def rope_accuracy_section(acc):
    rope = (acc or {}).get("rope")
    if not rope or not rope.get("results"):
        return "### RoPE cos/sin\n\nnot measured\n"
    groups, rows = _error_rows(rope["results"], {"hf_fp32": "HF float32 (= vLLM's fp32 cache)",
                                                 "llamacpp": "llama.cpp theta chain"}, ("base",))
    return ("### RoPE cos/sin\n\nMax absolute error of the cos and sin that rotate q and k, against MPFR (the "
            "exact f_i = base^(-2i/r), a_i = p f_i), r = %d (all %d pairs), %d positions around each centre, and "
            "the max error in float32 ULPs (posenc: 0.5 is correct rounding). HF float32: cosf / sinf of "
            "fl32(fl32(p) * inv_freq32), inv_freq32 = 1 / fl32(fl32(base) ** fl32(2i/r)) as torch computes it "
            "(vLLM's float32 cos_sin_cache holds the same values); llama.cpp: theta = (float)p, theta *= "
            "powf(base, -2/r) from pair to pair, cosf / sinf.\n\n"
            % (rope["rotary_dim"], rope["rotary_dim"] // 2, rope["positions_per_group"]) +
            table(["impl", "base"] + ["p ~ %s" % g for g in groups] + ["max ULP"], rows))


def rope_axes_accuracy_section(acc):
    axes = (acc or {}).get("rope_axes")
    if not axes or not axes.get("results"):
        return "### Multi-axis RoPE cos/sin\n\nnot measured\n"
    groups, rows = _error_rows(axes["results"], {
        "hf_fp32": "HF float32 (Qwen2-VL rotary + apply_multimodal_rotary_pos_emb)", "ggml": "ggml MROPE theta chains"})
    return ("### Multi-axis RoPE cos/sin\n\nThe same measure for %s (r = %d, base %g): at each centre p, an image "
            "row of %d tokens as Qwen2-VL numbers it after p tokens of text (temporal p, height p + 3, width p .. "
            "p + %d), every pair at its own axis's position. HF float32: per axis fl32(fl32(p_axis) * inv_freq32), "
            "cosf / sinf; ggml: one float theta chain per axis (theta *= powf(base, -2/r) from pair to pair).\n\n"
            % (axes["model"], axes["rotary_dim"], axes["base"], axes["tokens_per_group"],
               axes["tokens_per_group"] - 1) +
            table(["impl"] + ["p ~ %s" % g for g in groups] + ["max ULP"], rows))


def timesteps_accuracy_section(acc):
    ts = (acc or {}).get("timesteps")
    if not ts or not ts.get("results"):
        return "### Timestep embeddings\n\nnot measured\n"
    groups, rows = _error_rows(ts["results"], {"diffusers_fp32": "diffusers float32 formula (torch)",
                                               "ggml": "ggml timestep_embedding"})
    return ("### Timestep embeddings\n\nThe same measure for %s (%d channels): %d timesteps a quarter apart around "
            "each centre. diffusers: a float32 exponent and exp, the float32 product t * freq, cosf / sinf; ggml: "
            "expf(-logf(max_period) j / half), the float32 product, cosf / sinf.\n\n"
            % (ts["model"], ts["dim"], ts["timesteps_per_group"]) +
            table(["impl"] + ["t ~ %s" % g for g in groups] + ["max ULP"], rows))


def _lookup(groups, kernel, params, impl):
    return groups.get((kernel, tuple(sorted(params.items()))), {}).get(impl)


def kernel_section(groups, kernel):
    keys = sorted((k for k in groups if k[0] == kernel and "threads" not in dict(k[1])),
                  key=lambda k: sorted(dict(k[1]).items()))
    if not keys:
        return None
    others = []
    for k in keys:
        others += [i for i in groups[k] if i not in POSENC_PATHS and i not in others]
    others.sort(key=lambda i: (i in BOUNDS, i))
    cross = CROSS.get(kernel, [])
    header = ["shape", "path", "time", "GB/s"] + ["vs " + o for o in others] + \
             ["vs %s %s" % (k, "same path" if i == "=path" else i) for k, i in cross]
    rows = []
    for k in keys:
        params = dict(k[1])
        g = groups[k]
        for path in posenc_paths(g):
            c = g[path]
            if c.median is None:
                rows.append([shape_label(params), path, "error: %s" % c.error] + [""] * (len(header) - 3))
                continue
            gbs = sorted(c.bytes_per_s)[len(c.bytes_per_s) // 2] / 1e9 if c.bytes_per_s else 0
            cells = [shape_label(params), path, fmt_time(c.median), "%.3g" % gbs]
            for o in others:
                oc = g.get(o)
                cells.append(fmt_ratio(oc.median / c.median) if oc and oc.median else "-")
            for ck, ci in cross:
                oc = _lookup(groups, ck, params, path if ci == "=path" else ci)
                cells.append(fmt_ratio(oc.median / c.median) if oc and oc.median else "-")
            rows.append(cells)
    return "### %s\n\n%s" % (kernel, table(header, rows))


def split_section(groups):
    rows = []
    for (kernel, params), g in sorted(groups.items()):
        p = dict(params)
        if p.get("threads") != 2:
            continue
        single = dict(p)
        del single["threads"]
        for impl, c in sorted(g.items()):
            one = _lookup(groups, kernel, single, impl)
            speedup = one.median / c.median if one and one.median and c.median else None
            rows.append((kernel, shape_label(single), impl, fmt_time(one.median if one else None),
                         fmt_time(c.median), fmt_ratio(speedup)))
    if not rows:
        return None
    return ("## One call split over 2 threads\n\nTwo std::threads each make the same call on half the rows "
            "(started and joined inside the timing); the benchmark first checks that the split writes the "
            "same bytes as one whole call.\n\n" +
            table(("kernel", "shape", "impl", "1 thread", "2 threads", "speed-up"), rows))


IMPLS = """## What is compared

- **posenc scalar / avx2 / avx512 / neon**: the library, each path forced with `posenc_force_isa`, every value
  meant to be correctly rounded from the exact angle (the accuracy table checks a sample).
- **sleef_u10_\\*, sleef_u35_\\***: SLEEF 3.5 `Sleef_sincosf8_u10avx2` / `_u35avx2`, `Sleef_sincosf16_u10avx512f` /
  `_u35avx512f` (NEON: `Sleef_sincosf4_u10advsimd` / `_u35advsimd`) on the float32 angle fl(p*w), w rounded to
  float32 once per spec, as frameworks do; interleaved with register shuffles.
- **xsimd_avx2 / xsimd_avx512**: `xsimd::sincos` on the same float32 angle (`fma3<avx2>`, `avx512f`).
- **libm_double**: glibc `sincos` in double on the double angle p*w, rounded to float32 (scalar loop).
- **naive_3pass / naive_2pass**: what a framework runs without a fused kernel: gather the rows, multiply by
  the scale, add a precomputed PE table, each a separate pass over the output (compiled for the widest ISA
  this CPU runs); for `add_f32`, scale then add.
- **stores**: the same table output written with plain vector stores of one value (the widest ISA this CPU
  runs; read-for-ownership included, unlike memset's string stores): what posenc would take if its
  arithmetic were free.
- **RoPE** (`rope_qk_*`: q and k as views of a fused QKV buffer [tokens, q + 2k heads, 128], rotated in
  place, NEOX pairs; Llama-3-8B base 5e5, GPT-NeoX base 1e4):
  - **cache_lookup_avx2 / _avx512 / _scalar**: vLLM's CPU kernel: a float32 cos_sin_cache [131072, r] (cos
    then sin, built once outside the timing from fl32(p * inv_freq32)) gathered per token, x*c - y*s and
    y*c + x*s in vectors of the ISA, every q head then every k head.
  - **hf_naive**: HF transformers: cos / sin of fl32(fl32(p) * inv_freq32) with libm over cat(freqs, freqs),
    then q*cos, rotate_half(q) = cat(-q2, q1), times sin, the sum, each a pass through [tokens, heads, r]
    temporaries (the last one written back over q), and the same for k.
  - **llamacpp**: ggml's CPU rope, one op for q and one for k: per token theta = (float)p, theta *=
    powf(base, -2/r) along the head's pairs, cosf / sinf into a per-thread cache, a scalar rotate loop.
  - **inplace**: the bound: every rotated element of q and k read and written back once (vector loop).
  - **sleef_u35_\*** (`rope_cache_f32`): the cache rows (cos || sin) from SLEEF u35 sincos of
    fl32(fl32(p) * inv_freq32).
  - `rope_qk_f32_axes3` / `rope_qk_f32_axes1`: Qwen2.5-VL-7B's text RoPE (head 128, 28 q + 4 kv heads, base
    1e6), with its 3-axis spec (mrope_section [16, 24, 24]) on a prompt of 200 text tokens, a 40 x 40 image
    (1600 tokens: temporal fixed, height the row, width the column) and text again, and with a one-axis spec
    on positions 0 .. n-1; decode: one text token at 100000 on every axis.
- **Timesteps** (`timesteps_f32`: a batch of 1024 fractional timesteps in [0, 1000), cos then sin, D = half):
  - **ggml**: ggml's CPU `timestep_embedding`: for every timestep and pair, expf(-logf(max_period) j / half),
    the float32 product with the timestep, cosf and sinf (one thread).
- **RoPE at real-valued positions** (`rope_cache_real_f32`: Flux's per-axis spec `[8, 28, 28]`, theta 1e4, at
  4608 tokens of a 13 x 30 x 45 grid with real coordinates, frames 0.5 apart, rows and columns a `linspace`'s
  29/30 and 44/45 steps, cos then sin rows of 128):
  - **double**: diffusers' float64 CPU path: the angle `t f_i` in double, libm `cos` / `sin` in double, rounded
    to float32 (not correctly rounded: the double angle's error carries).
  - **float**: diffusers' float32 path (its device path): `t`, `f_i` and the angle in float32, `cosf` / `sinf`.
- **memset / memcpy / memcpy_gather**: the bounds. memset of the same output buffer (tables), memcpy of the
  activations (`add_f32`), memcpy of the same embedding rows chosen by the same tokens (embeddings; for
  `embed_learned_f32` it does not read the position table, so it is below the true bound there).
"""


def render(context, groups, pairs, acc, machine_rows, charts, simd_paths, repetitions, command, charts_note=None):
    parts = ["# posenc benchmark report",
             "Generated by `%s` on %s, %s. The %s plan, median of %s repetitions per case, all cases "
             "interleaved at random (`--benchmark_enable_random_interleaving`) so that the host's noise hits "
             "them alike; wall-clock time, one thread unless stated. Ratios compare medians from this one "
             "run; absolute times from another run or machine are not comparable."
             % (command, context.get("date", "?"), dict(machine_rows).get("CPU", "?"), context.get("plan", "?"),
                repetitions),
             targets_section(groups, pairs, simd_paths), accuracy_section(acc), rope_accuracy_section(acc),
             rope_axes_accuracy_section(acc), timesteps_accuracy_section(acc), IMPLS]
    split = split_section(groups)
    if split:
        parts.append(split)
    parts.append("## Every kernel\n\nRatios are (time of the other impl) / (time of this posenc path) on the "
                 "same shape and output: above 1 posenc is faster; against a bound (memset, memcpy, "
                 "memcpy_gather) it is the share of the bound's speed reached. GB/s counts the bytes an ideal "
                 "single pass moves (read + written).")
    parts += [s for s in (kernel_section(groups, k) for k in KERNELS) if s]
    if charts:
        parts.append("## Charts\n\n" + "\n\n".join("![%s](%s)" % (t, f) for t, f in charts))
    elif charts_note:
        parts.append("## Charts\n\n" + charts_note)
    parts.append("## Machine\n\n" + table(("", ""), machine_rows))
    return "\n\n".join(parts) + "\n"
