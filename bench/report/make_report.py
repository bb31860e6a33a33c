"""Google Benchmark JSON + posenc-accuracy JSON -> report/summary.md and SVG charts; prints the summary.

    make_report.py --bench bench.json --accuracy accuracy.json --out report [--docs docs/benchmarks.md]
                   [--command TEXT] [--python python.json] [--neon neon.json] [--ggml ggml.json]
                   [--llama llama.json]

report.py runs it last (the pipeline of scripts/report.sh and posenc-bench --report). Exits non-zero when
the run is incomplete (a case reported an error, a kernel or a posenc path has no case, the accuracy file is
missing a path): the pipeline is checked, never the timings. Without matplotlib the report has no charts and
says why.
"""
import argparse
import json
import os
import shutil
import sys

try:
    import charts
except ImportError as e:  # matplotlib is not importable: the report without its charts
    charts = None
    CHARTS_MISSING = "Not drawn: matplotlib is not importable by %s (%s)." % (sys.executable, e)
import ggml_section
import llama_section
import machine
import neon_section
import python_section
import results
import summary
import targets

KERNELS_REQUIRED = summary.KERNELS


def problems(cases, groups, pairs, acc):
    found = []
    for c in cases.values():
        if c.error:
            found.append("%s: %s" % (c.name, c.error))
    found += ["paired %s | %s failed" % ab for ab, ratios in pairs.items() if None in ratios]
    if not pairs:
        found.append("no paired ratio was measured")
    kernels = {k for k, _ in groups}
    found += ["no case for kernel %s" % k for k in KERNELS_REQUIRED if k not in kernels]
    paths = {c.impl for c in cases.values() if c.impl in results.POSENC_PATHS}
    if "scalar" not in paths:
        found.append("the scalar path was not measured")
    if acc is None:
        found.append("no accuracy results")
    else:
        acc_paths = {r["impl"] for r in acc["results"] if r["kind"] == "posenc"}
        found += ["no accuracy result for path %s" % p for p in sorted(paths - acc_paths)]
        rope_paths = {r["impl"] for r in acc.get("rope", {}).get("results", []) if r["kind"] == "posenc"}
        found += ["no RoPE accuracy result for path %s" % p for p in sorted(paths - rope_paths)]
        axes_paths = {r["impl"] for r in acc.get("rope_axes", {}).get("results", []) if r["kind"] == "posenc"}
        found += ["no multi-axis RoPE accuracy result for path %s" % p for p in sorted(paths - axes_paths)]
        ts_paths = {r["impl"] for r in acc.get("timesteps", {}).get("results", []) if r["kind"] == "posenc"}
        found += ["no timestep accuracy result for path %s" % p for p in sorted(paths - ts_paths)]
    return found


def write_docs(text, charts_made, out_dir, docs_path):
    """The summary for the repository, with the measurement charts copied next to it (links rewritten)."""
    img_dir = os.path.splitext(docs_path)[0]
    os.makedirs(img_dir, exist_ok=True)
    for _, name in charts_made:
        shutil.copy(os.path.join(out_dir, name), os.path.join(img_dir, name))
        text = text.replace("](%s)" % name, "](%s/%s)" % (os.path.basename(img_dir), name))
    with open(docs_path, "w") as f:
        f.write(text)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", required=True)
    ap.add_argument("--accuracy")
    ap.add_argument("--out", required=True)
    ap.add_argument("--pictures", action="append", default=[], help="extra chart files already in --out")
    ap.add_argument("--docs")
    ap.add_argument("--command", default="scripts/report.sh", help="how the report says it was made")
    ap.add_argument("--python", help="bench/python/bench_torch.py's JSON: the report's Python section")
    ap.add_argument("--neon", help="bench/neon/counts.py's JSON: the report's NEON section (qemu-user counts)")
    ap.add_argument("--ggml", help="posenc-ggml-bench's JSON: the report's ggml section (in-graph RoPE)")
    ap.add_argument("--llama", help="report.py's llama.json: the report's llama.cpp section (the whole model)")
    args = ap.parse_args(argv)

    context, cases, pairs = results.load(args.bench)
    acc = None
    if args.accuracy and os.path.exists(args.accuracy):
        with open(args.accuracy) as f:
            acc = json.load(f)
    groups = results.groups(cases)
    os.makedirs(args.out, exist_ok=True)
    measured = charts.draw_all(groups, acc, args.out) if charts else []
    pictures = [(t, f) for t, f in (p.rsplit("=", 1) for p in args.pictures)
                if os.path.exists(os.path.join(args.out, f))]
    reps = max((len(c.times) for c in cases.values()), default=0)
    py_text, py_charts = python_section.render(args.python, args.out) if args.python else ("", [])
    neon_text, neon_charts = neon_section.render(args.neon, args.out) if args.neon else ("", [])
    ggml_text = ggml_section.render(args.ggml) if args.ggml else ""
    llama_text = llama_section.render(args.llama) if args.llama else ""

    def render(chart_list, command):
        return python_section.insert(
            summary.render(context, groups, pairs, acc, machine.describe(context, acc), chart_list,
                           targets.simd_paths_of(groups), reps, command, None if charts else CHARTS_MISSING),
            py_text + ("\n" + neon_text if neon_text else "") + ("\n" + ggml_text if ggml_text else "")
            + ("\n" + llama_text if llama_text else ""))

    text = render(measured + pictures, args.command)
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write(text)
    if args.docs:  # the pictures of the encoding do not depend on the machine: they stay in report/
        write_docs(render(measured, args.command + " --docs"), measured + py_charts + neon_charts, args.out,
                   args.docs)
    print(text)
    bad = problems(cases, groups, pairs, acc) + (python_section.problems(args.python) if args.python else [])
    if args.neon:
        bad += neon_section.problems(args.neon, quick=(neon_section.load(args.neon) or {}).get("mode") == "quick")
    bad += ggml_section.problems(args.ggml) if args.ggml else []
    bad += llama_section.problems(args.llama) if args.llama else []
    for p in bad:
        print("report: " + p, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
