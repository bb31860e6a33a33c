"""The report's NEON section: bench/neon/counts.py's JSON (guest instructions per output element under qemu-user)
-> Markdown, one SVG chart and issue 28's targets.

    import neon_section
    text, charts = neon_section.render("report/neon.json", "report")   # charts: [(title, file name)]
    bad = neon_section.problems("report/neon.json")                    # the pipeline, never the counts

    neon_section.py report/neon.json [--out DIR]                        prints the section (chart into DIR)
"""
import os

import python_section
from results import json_problems, load_json as load, not_measured
from summary import table  # the report's own Markdown table

SECTION = "## NEON (AArch64): guest instructions per element under qemu-user"
CHART = "neon_instructions.svg"

# (case name, label) in the order shown; a missing row is left out (the quick plan counts a few).
GROUPS = [
    ("Tables, 512 x 2048 (d = 512, positions 0 .. 2047, interleaved)", [
        ("table_f32/neon", "posenc_table_f32, NEON path"),
        ("table_f32/scalar", "posenc_table_f32, scalar path"),
        ("sleef_u35_neon", "SLEEF 3.5 Sleef_sincosf4_u35advsimd on the float angle"),
        ("sleef_u10_neon", "SLEEF 3.5 Sleef_sincosf4_u10advsimd on the float angle"),
        ("xsimd_neon", "xsimd 8.1 sincos (neon64) on the float angle"),
        ("table_bf16/neon", "posenc_table_bf16, NEON path"),
        ("rows_f32/neon", "posenc_rows_f32, 32 scattered positions (one anchor per row)"),
    ]),
    ("Timestep embeddings", [
        ("timesteps_f32/neon", "posenc_timesteps_f32, 1024 fractional timesteps, d = 320 (cos, sin halves)"),
    ]),
    ("Fused operations, 2048 rows of d = 512", [
        ("add_f32/neon", "posenc_add_f32"),
        ("embed_f32/neon", "posenc_embed_f32 (vocab 32000)"),
        ("embed_bf16/neon", "posenc_embed_bf16"),
        ("embed_f16/neon", "posenc_embed_f16"),
    ]),
    ("RoPE cache, 2048 positions x 128 (Llama-3-8B: base 5e5, h = 64)", [
        ("rope_cache_f32/neon", "posenc_rope_cache_f32"),
        ("rope_cache_sleef_u35_neon", "SLEEF u35 advsimd on the float angle, the same cache"),
    ]),
    ("RoPE rotation, Llama-3-8B (32 + 8 heads of 128, fused QKV)", [
        ("rope_qk_f32/neon", "posenc_rope_qk_f32, prefill 2048 tokens"),
        ("rope_qk_bf16/neon", "posenc_rope_qk_bf16, prefill"),
        ("rope_qk_f16/neon", "posenc_rope_qk_f16, prefill"),
        ("rope_qk_f32_decode/neon", "posenc_rope_qk_f32, one decode token at 100000"),
        ("rope_qk_f32_axes3/neon",
         "posenc_rope_qk_f32, Qwen2.5-VL-7B 3-axis (28 + 4 heads), 2048 tokens with a 1600-token image"),
        ("rope_qk_f32_axes3_decode/neon", "the same, one decode token"),
        ("ggml_rope_ext_f32", "ggml's own ggml_rope_ext (NEOX), f32, prefill"),
        ("ggml_rope_ext_f32_decode", "ggml_rope_ext, f32, one decode token"),
        ("ggml_rope_ext_f16", "ggml_rope_ext, f16 rows, prefill"),
        ("ggml_rope_ext_f16_decode", "ggml_rope_ext, f16 rows, one decode token"),
        ("rope_llamacpp_style", "bench/peers' copy of ggml's scalar NEOX loop (cosf/sinf cache per token)"),
        ("rope_cache_lookup_neon", "cache lookup (vLLM CPU style: float cos/sin rows, float rotation), prefill"),
        ("rope_cache_lookup_neon_decode", "cache lookup, one decode token"),
    ]),
]

# Issue 28's targets: (title, numerator case, denominator case or None, op, target); value = numerator's count
# (over the denominator's).
TARGETS = [
    ("posenc_rope_qk_f32 prefill: instructions per element", "rope_qk_f32/neon", None, "<=", 4.0),
    ("posenc_table_f32 512 x 2048 over SLEEF u35 advsimd's count", "table_f32/neon", "sleef_u35_neon", "<=", 0.5),
]
QUICK_ROWS = {"table_f32/neon", "sleef_u35_neon", "rope_qk_f32/neon", "rope_qk_f32_decode/neon",
              "rope_cache_lookup_neon_decode"}

METHOD = """Measured without an ARM host: every kernel runs in `posenc-count` (bench/neon/count.cpp, built for aarch64 \
by {compiler}, `-O3`) under {qemu} with the TCG plugin bench/neon/insn_count.c, which adds each executed block's \
instruction count to a counter. Each case runs K and 3K times (K calls make at least 2^20 output elements); the \
difference over 2K calls and the call's output elements is the kernel's own count per output element (start-up, \
buffer filling and the first call's one-time setup cancel). ggml is built from the shared tarball by \
bench/neon/build_ggml.sh (CMake, static, `-march=armv8-a`, one thread){ggml_note}. Counted {date} by `{command}`.

A count is a proxy for time, not a time: qemu counts a double-precision FMA, a conversion, a load and a branch \
alike, and sees no cache miss. On a core that retires a sustained IPC of I, n instructions per element take about \
n / I cycles per element while the loop stays in cache; no IPC is assumed in the tables below, which compare \
counts only. On an ARM host `posenc-bench --report` measures the NEON path's time against the same peers."""


def _rows(data):
    return {r["name"]: r for r in data.get("rows", [])}


def _fmt(x):
    return "%.2f" % x


def target_rows(data):
    """(title, value, op, target, met) for each target; value None when a case was not counted."""
    rows = _rows(data)
    out = []
    for title, num, den, op, target in TARGETS:
        value = None
        if num in rows and (den is None or den in rows):
            value = rows[num]["per_element"] / (rows[den]["per_element"] if den else 1.0)
        met = None if value is None else (value <= target if op == "<=" else value >= target)
        out.append((title, value, op, target, met))
    return out


def ratios_table(data):
    rows = _rows(data)
    pairs = [("posenc rope_qk f32 prefill vs ggml_rope_ext f32", "ggml_rope_ext_f32", "rope_qk_f32/neon"),
             ("posenc rope_qk f32 decode vs ggml_rope_ext f32 decode", "ggml_rope_ext_f32_decode",
              "rope_qk_f32_decode/neon"),
             ("posenc rope_qk f16 vs ggml_rope_ext f16", "ggml_rope_ext_f16", "rope_qk_f16/neon"),
             ("posenc rope_qk f32 vs the llama.cpp-style loop", "rope_llamacpp_style", "rope_qk_f32/neon"),
             ("posenc rope_qk f32 vs the cache lookup (fewer instructions where above 1)", "rope_cache_lookup_neon",
              "rope_qk_f32/neon"),
             ("posenc table f32 vs SLEEF u35 advsimd", "sleef_u35_neon", "table_f32/neon"),
             ("posenc table f32 vs SLEEF u10 advsimd", "sleef_u10_neon", "table_f32/neon"),
             ("posenc table f32, NEON vs scalar path", "table_f32/scalar", "table_f32/neon"),
             ("posenc rope cache vs SLEEF u35 advsimd", "rope_cache_sleef_u35_neon", "rope_cache_f32/neon")]
    body = [(t, _fmt(rows[a]["per_element"] / rows[b]["per_element"]) + "x")
            for t, a, b in pairs if a in rows and b in rows]
    return table(["comparison (the other's count / posenc's)", "ratio"], body) if body else ""


def chart(data, out_dir):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    rows = _rows(data)
    items = [(label, rows[name]["per_element"], name.endswith(("/neon", "/scalar")))
             for _, group in GROUPS for name, label in group if name in rows]
    if not items:
        return None
    fig, ax = plt.subplots(figsize=(9, 0.32 * len(items) + 1.2))
    ys = list(range(len(items)))[::-1]
    ax.barh(ys, [v for _, v, _ in items], color=["#1f77b4" if p else "#aaaaaa" for _, _, p in items])
    ax.set_yticks(ys)
    ax.set_yticklabels([l if len(l) < 70 else l[:67] + "..." for l, _, _ in items], fontsize=7)
    for y, (_, v, _) in zip(ys, items):
        ax.text(v, y, " %.2f" % v, va="center", fontsize=7)
    ax.set_xlabel("guest instructions per output element (qemu-aarch64)")
    ax.set_title("NEON path: instructions per element (blue: posenc, grey: peers)")
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, CHART))
    plt.close(fig)
    return CHART


def render(json_path, out_dir=None):
    """(Markdown of the section, [(chart title, file name)]); a missing file gives a section saying so."""
    data = load(json_path)
    if not data:
        return not_measured(SECTION, json_path), []
    out_dir = out_dir or os.path.dirname(os.path.abspath(json_path))
    note = data.get("ggml_note") or ""
    parts = [SECTION, METHOD.format(compiler=data.get("compiler") or "?", qemu=data.get("qemu", "?"),
                                    date=data.get("date", "?"), command=data.get("command", "?"),
                                    ggml_note=("; not counted here: " + note) if note else "")]
    rows = _rows(data)
    trows = [(t, "?" if v is None else _fmt(v), "%s %s" % (op, target),
              "not counted" if met is None else "met" if met else "not met") for t, v, op, target, met in
             target_rows(data)]
    parts.append("### Issue 28's targets\n\n" + table(["target", "measured", "wanted", ""], trows))
    for title, group in GROUPS:
        body = [(label, "`%s`" % name, _fmt(rows[name]["per_element"]), str(rows[name]["k"]))
                for name, label in group if name in rows]
        if body:
            parts.append("### %s\n\n%s" % (title, table(["kernel", "case", "instructions / element", "K"], body)))
    rt = ratios_table(data)
    if rt:
        parts.append("### Ratios of counts\n\n" + rt)
    charts = []
    name = chart(data, out_dir)
    if name:
        charts.append(("NEON: guest instructions per element", name))
        parts.append("![%s](%s)" % charts[0])
    return "\n\n".join(parts) + "\n", charts


def problems(json_path, quick=False):
    """What makes the NEON count incomplete: a missing file or a missing row (the quick plan's rows only)."""
    def missing(data):
        want = QUICK_ROWS if quick else {n for _, g in GROUPS for n, _ in g if not n.startswith("ggml_") or
                                         not data.get("ggml_note")}
        return ["NEON: case %s not counted" % n for n in sorted(want - set(_rows(data)))]
    return json_problems(json_path, "NEON counts", missing)


if __name__ == "__main__":
    python_section.command(__doc__, render, problems, "neon_section")
