"""SVG charts of the measurements (matplotlib, headless)."""
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from results import BOUNDS, POSENC_PATHS  # noqa: E402

plt.rcParams["svg.hashsalt"] = "posenc"  # the same data gives the same file


def _style(impl):
    if impl in POSENC_PATHS:
        return {"linestyle": "-", "marker": "o", "linewidth": 2}
    if impl in BOUNDS:
        return {"linestyle": ":", "marker": "", "color": "black", "linewidth": 2}
    return {"linestyle": "--", "marker": "x", "linewidth": 1}


def _label(impl):
    return "posenc " + impl if impl in POSENC_PATHS else impl


def _save(fig, out_dir, name):
    fig.tight_layout()
    path = os.path.join(out_dir, name)
    fig.savefig(path, format="svg", metadata={"Date": None})
    plt.close(fig)
    return name


def _gbs(case):
    v = sorted(case.bytes_per_s)
    return v[len(v) // 2] / 1e9 if v else None


def _plain_tables(groups, kernel="table_f32"):
    """{(d, n): group} of the kernel's cases with neither explicit positions nor threads."""
    out = {}
    for (k, params), g in groups.items():
        p = dict(params)
        if k == kernel and set(p) <= {"d", "n", "first"}:
            out[(p["d"], p["n"])] = g
    return out


def _lines(ax, points, xlabel, title):
    """points: {impl: [(x, y)]}"""
    for impl in sorted(points, key=lambda i: (i not in POSENC_PATHS, i in BOUNDS, i)):
        pts = sorted(points[impl])
        ax.plot([p[0] for p in pts], [p[1] for p in pts], label=_label(impl), **_style(impl))
    ax.set_xscale("log", base=2)
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)


def table_vs_d(groups, out_dir):
    tables = _plain_tables(groups)
    panels = []
    for title, pick in (("output <= 4 MiB (cache-resident)", lambda b: b <= 4 << 20),
                        ("output > 4 MiB (beyond L2; 128 MiB beyond L3)", lambda b: b > 4 << 20)):
        best = {}
        for (d, n) in tables:
            if pick(d * n * 4) and n > 1 and (d not in best or n > best[d]):
                best[d] = n
        if len(best) >= 2:
            panels.append((title, best))
    if not panels:
        return None
    fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 4.8), squeeze=False)
    for ax, (title, best) in zip(axes[0], panels):
        points = {}
        for d, n in best.items():
            for impl, c in tables[(d, n)].items():
                if c.median:
                    points.setdefault(impl, []).append((d, _gbs(c)))
        _lines(ax, points, "d_model", "posenc_table_f32, " + title)
        ax.set_ylabel("output GB/s (median)")
    axes[0][-1].legend(fontsize=7, loc="best")
    return _save(fig, out_dir, "table_throughput_vs_d.svg")


def table_vs_positions(groups, out_dir, d=64):
    tables = {n: g for (dd, n), g in _plain_tables(groups).items() if dd == d}
    if len(tables) < 2:
        return None
    points = {}
    for n, g in tables.items():
        for impl, c in g.items():
            if c.median:
                points.setdefault(impl, []).append((n, _gbs(c)))
    fig, ax = plt.subplots(figsize=(7, 4.8))
    _lines(ax, points, "positions per call", "posenc_table_f32, d = %d" % d)
    ax.set_yscale("log")  # memset and one-row calls are orders of magnitude apart
    ax.set_ylabel("output GB/s (median, log scale)")
    ax.legend(fontsize=7)
    return _save(fig, out_dir, "table_throughput_vs_positions.svg")


def embed_vs_gather(groups, out_dir):
    """Time of each embedding impl relative to the memcpy gather of the same rows, per shape."""
    bars = {}
    shapes = []
    for (k, params), g in sorted(groups.items()):
        p = dict(params)
        if k != "embed_f32" or "threads" in p or "memcpy_gather" not in g or not g["memcpy_gather"].median:
            continue
        base = g["memcpy_gather"].median
        label = "%d x %d" % (p["d"], p["n"])
        shapes.append(label)
        for kernel in ("embed_f32", "embed_bf16", "embed_f16"):
            other = groups.get((kernel, params), {})
            for impl, c in other.items():
                if impl == "scalar" or impl == "memcpy_gather" or not c.median:
                    continue
                if impl in POSENC_PATHS:
                    impl = "posenc %s%s" % ("" if kernel == "embed_f32" else kernel[6:] + " table, ", impl)
                bars.setdefault(impl, {})[label] = c.median / base
    if not shapes:
        return None
    fig, ax = plt.subplots(figsize=(8, 4.8))
    width = 0.8 / max(1, len(bars))
    for i, (name, vals) in enumerate(sorted(bars.items())):
        xs = [j + i * width for j, s in enumerate(shapes) if s in vals]
        ax.bar(xs, [vals[s] for s in shapes if s in vals], width, label=name)
    ax.axhline(1.0, color="black", linestyle=":", label="memcpy gather")
    ax.axhline(1.25, color="gray", linestyle="--", linewidth=1, label="issue 3 target (1.25x)")
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(shapes))], shapes)
    ax.set_xlabel("d_model x tokens (random tokens of a 32000-row table)")
    ax.set_ylabel("time / memcpy gather time (median)")
    ax.set_title("Embedding + PE: time relative to gathering the rows", fontsize=10)
    ax.legend(fontsize=7)
    ax.grid(True, axis="y", alpha=0.3)
    return _save(fig, out_dir, "embed_vs_gather.svg")


def rope_vs_inplace(groups, out_dir):
    """Time of each RoPE impl relative to the in-place pass over the same q and k, per shape (log scale)."""
    bars = {}
    shapes = []
    for (k, params), g in sorted(groups.items(), key=lambda kv: (dict(kv[0][1])["r"], -dict(kv[0][1])["n"])
                                 if kv[0][0] == "rope_qk_f32" else (0, 0)):
        p = dict(params)
        if k != "rope_qk_f32" or "inplace" not in g or not g["inplace"].median:
            continue
        base = g["inplace"].median
        label = "%d tok, r=%d\n%s" % (p["n"], p["r"], p["pos"])
        shapes.append(label)
        for impl, c in g.items():
            if impl in ("scalar", "inplace", "cache_lookup_scalar") or not c.median:
                continue
            bars.setdefault(_label(impl), {})[label] = c.median / base
    if not shapes:
        return None
    fig, ax = plt.subplots(figsize=(9, 4.8))
    width = 0.8 / max(1, len(bars))
    for i, (name, vals) in enumerate(sorted(bars.items(), key=lambda kv: (not kv[0].startswith("posenc"), kv[0]))):
        xs = [j + i * width for j, s in enumerate(shapes) if s in vals]
        ax.bar(xs, [vals[s] for s in shapes if s in vals], width, label=name)
    ax.axhline(1.0, color="black", linestyle=":", label="in-place pass (bound)")
    ax.axhline(1.25, color="gray", linestyle="--", linewidth=1, label="issue 15 target (1.25x)")
    ax.set_yscale("log")
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(shapes))], shapes, fontsize=8)
    ax.set_ylabel("time / in-place pass time (median, log scale)")
    ax.set_title("RoPE on q and k (head 128, fused QKV): time relative to reading and writing the rotated "
                 "elements", fontsize=10)
    ax.legend(fontsize=7)
    ax.grid(True, axis="y", alpha=0.3)
    return _save(fig, out_dir, "rope_vs_inplace.svg")


def accuracy_vs_position(acc, out_dir):
    if not acc:
        return None
    series = {}
    for r in acc["results"]:
        series.setdefault(r["impl"], []).append((r["center"], max(r["max_ulp"], 1e-2), max(r["max_abs"], 1e-12)))
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    for ax, idx, ylabel in ((axes[0], 1, "max error (float32 ULP)"), (axes[1], 2, "max absolute error")):
        for impl in sorted(series, key=lambda i: (i not in POSENC_PATHS, i)):
            pts = sorted(series[impl])
            ax.plot([p[0] for p in pts], [p[idx] for p in pts], label=_label(impl), **_style(impl))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("position")
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
    axes[0].axhline(1.0, color="gray", linewidth=1)
    axes[0].set_title("vs MPFR, d = %d, all pairs" % acc["d_model"], fontsize=10)
    axes[1].legend(fontsize=7)
    return _save(fig, out_dir, "accuracy_vs_position.svg")


def draw_all(groups, acc, out_dir):
    """[(title, file name)] of the charts written."""
    made = [("Table throughput vs d_model", table_vs_d(groups, out_dir)),
            ("Table throughput vs positions per call", table_vs_positions(groups, out_dir)),
            ("Embedding time relative to the memcpy gather", embed_vs_gather(groups, out_dir)),
            ("RoPE time relative to the in-place pass", rope_vs_inplace(groups, out_dir)),
            ("Error vs position", accuracy_vs_position(acc, out_dir))]
    return [(t, f) for t, f in made if f]
