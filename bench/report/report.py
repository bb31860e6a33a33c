"""The benchmark report, one pipeline for a source tree and an install: scripts/report.sh runs it with the
programs of its build directory, `posenc-bench --report DIR` with the installed ones (this file and its
modules are installed in share/posenc/report). The same steps, the same report.

    report.py --out DIR --bench POSENC_BENCH --accuracy POSENC_ACCURACY [--posenc POSENC] [--quick]
              [--posenc-python BUILD] [--ggml-bench POSENC_GGML_BENCH] [--docs FILE] [--command TEXT]
              [--llama-check LLAMA_CHECK --llama-backend LIBGGML_POSENC --llama-gguf-py DIR] [--llama-note TEXT]

--quick: the quick plan (small shapes, 2 repetitions); --docs FILE: also the repository's copy of the
summary (docs/benchmarks.md and its charts); --command: how the report says it was made. Without
matplotlib (and NumPy) the report is written without charts or pictures, and says so. The Python section
(the original PyTorch code against posenc.torch, bench/python/bench_torch.py) runs when torch and the posenc
package are importable (--posenc-python BUILD: the extension of a meson build with -Dpython=enabled); the ggml
section (posenc's RoPE operation against ggml's own, in a graph) when --ggml-bench names posenc-ggml-bench; the
llama.cpp section (the whole model with posenc's backend over without, bench/report/llama_section.py) when
--llama-check, --llama-backend and --llama-gguf-py name a llama.cpp build's driver, backend and gguf-py (full plan).

The steps are STEPS below, in order. Each is a Step: `skip(run)` returns why it cannot run here (None: it
runs), `run(run)` does the work in run.out and returns the arguments it adds to make_report.py. A step whose
program fails stops the pipeline; make_report.py last decides whether the run is complete (exit 1 if not).
"""
import argparse
import importlib.util
import os
import subprocess
import sys

import make_report
import targets


class Run:
    """What every step sees: the parsed arguments, the output directory, the interpreter."""

    def __init__(self, args):
        self.args = args
        self.out = args.out
        self.quick = args.quick
        self.python = sys.executable

    def path(self, name):
        return os.path.join(self.out, name)

    def program(self, *cmd):
        subprocess.run([str(c) for c in cmd], check=True)


def missing(*modules):
    """The modules this interpreter cannot import."""
    return [m for m in modules if importlib.util.find_spec(m) is None]


class Step:
    def __init__(self, title, run, skip=None):
        self.title = title
        self.run = run
        self.skip = skip or (lambda run: None)


def accuracy(run):
    run.program(run.args.accuracy, "--json", run.path("accuracy.json"))
    return ["--accuracy", run.path("accuracy.json")]


def benchmarks(run):
    # the issues' target ratios are also timed as alternated pairs of calls (targets.py)
    with open(run.path("pairs.txt"), "w") as f:
        f.write("\n".join(targets.pair_lines(run.quick)) + "\n")
    if run.quick:
        plan = ["--quick", "--benchmark_repetitions=2", "--benchmark_min_time=0.01"]
    else:
        plan = ["--benchmark_repetitions=9", "--benchmark_min_time=0.05"]  # many short repetitions: a robust median
    run.program(run.args.bench, *plan, "--pairs", run.path("pairs.txt"), "--benchmark_enable_random_interleaving=true",
                "--benchmark_out=" + run.path("bench.json"), "--benchmark_out_format=json",
                "--benchmark_counters_tabular=true")
    return ["--bench", run.path("bench.json")]


def benchmarks_title(run):
    try:
        with open("/proc/loadavg") as f:
            load = " ".join(f.read().split()[:3])
    except OSError:
        load = "?"
    return "benchmarks (%s; load average: %s)" % ("quick" if run.quick else "full", load)


def pictures(run):
    import pictures as p  # matplotlib and NumPy: imported only when present
    p.main(["--posenc", run.args.posenc, "--out", run.out, "--positions", "512", "--d-model", "200"])
    return ["--pictures", "PE table, 512 positions x d = 200=pe_heatmap.svg",
            "--pictures", "Cosine similarity of positions=pe_cosine_similarity.svg"]


def pictures_skip(run):
    if not run.args.posenc:
        return "no posenc command (built with -Dtools=disabled)"
    if missing("matplotlib", "numpy"):
        return "%s not importable by %s" % (" and ".join(missing("matplotlib", "numpy")), run.python)
    return None


# bench/python/bench_torch.py in a source tree; bench_torch.py next to this file in an install
PY_BENCH = next((p for p in (os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "bench_torch.py"),
                             os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_torch.py"))
                 if os.path.exists(p)), None)


def python_bench(run):
    cmd = [run.python, PY_BENCH, "--out", run.path("python.json")] + (["--quick"] if run.quick else [])
    if run.args.posenc_python:
        cmd += ["--posenc-build", run.args.posenc_python]
    run.program(*cmd)
    return ["--python", run.path("python.json")]


def python_bench_skip(run):
    if not PY_BENCH:
        return "no bench_torch.py"
    if missing("torch", "numpy"):
        return "%s not importable by %s (Debian: python3-torch)" % (" and ".join(missing("torch", "numpy")), run.python)
    if not run.args.posenc_python and missing("posenc"):
        return "the posenc Python package is not importable by %s (pip install it, docs/python.md)" % run.python
    return None


# bench/neon/counts.py in a source tree (an install has no aarch64 driver to count: on an ARM host
# posenc-bench --report times the NEON path instead)
NEON_COUNTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "neon", "counts.py")


def neon_counts(run):
    a = run.args
    cmd = [run.python, NEON_COUNTS, "--qemu", a.neon_qemu, "--plugin", a.neon_plugin, "--count", a.neon_count,
           "--out", run.path("neon.json"), "--command", a.command]
    if a.neon_sysroot:
        cmd += ["--sysroot", a.neon_sysroot, "--libdir", a.neon_libdir]
    if a.neon_ggml:
        cmd += ["--ggml", a.neon_ggml]
    elif a.neon_ggml_note:
        cmd += ["--ggml-note", a.neon_ggml_note]
    if run.quick:
        cmd.append("--quick")
    run.program(*cmd)
    return ["--neon", run.path("neon.json")]


def neon_counts_skip(run):
    if not run.args.neon_count:
        return "no --neon-count (scripts/report.sh builds it and counts under qemu-user; on an ARM host " \
               "posenc-bench --report times the NEON path)"
    if not os.path.exists(NEON_COUNTS):
        return "no bench/neon/counts.py"
    return None


def ggml_bench(run):
    cmd = [run.args.ggml_bench, "--out", run.path("ggml.json"), "--command", run.args.command]
    run.program(*(cmd + (["--quick"] if run.quick else [])))
    return ["--ggml", run.path("ggml.json")]


def ggml_bench_skip(run):
    if not run.args.ggml_bench:
        return "no --ggml-bench (a build with -Dggml=enabled has posenc-ggml-bench: scripts/report.sh builds ggml for it)"
    return None


# integrations/ggml/llama/make_models.py in a source tree (an install has no llama.cpp step)
LLAMA_MODELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "integrations", "ggml", "llama",
                            "make_models.py")


def _cpu_paths():
    """posenc's x86 SIMD paths this CPU has (posenc_isa_available's conditions, from /proc/cpuinfo)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = set(next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), []))
    except OSError:
        return []
    need = {"avx2": {"avx2", "fma", "f16c"}, "avx512": {"avx512f", "avx512cd", "avx512dq", "avx512bw", "avx512vl"}}
    return [p for p, fl in need.items() if fl <= flags]


def llama_bench(run):
    """llama_check bench (integrations/ggml/llama/llama_check.cpp) on each benchmark model of make_models.py
    --bench, one process per model and posenc SIMD path (POSENC_ISA is read once per process), gathered into
    llama.json for bench/report/llama_section.py."""
    import json
    a = run.args
    models_dir = a.llama_models or run.path("llama-models")
    env = dict(os.environ, PYTHONPATH=a.llama_gguf_py)
    made = subprocess.run([run.python, LLAMA_MODELS, models_dir, "--bench"], env=env, check=True,
                          stdout=subprocess.PIPE, text=True).stdout.split()
    data = {"command": a.command, "mode": "quick" if run.quick else "full", "llama_cpp": a.llama_version,
            "ggml": a.llama_ggml_version, "cores": os.cpu_count(), "runs": [], "skipped": []}
    paths = _cpu_paths()
    data["skipped"] += ["posenc's %s path: this CPU lacks it" % p for p in ("avx2", "avx512") if p not in paths]
    for model in made:
        for isa in paths:
            out = run.path("llama-%s-%s" % (os.path.basename(model).split(".")[0], isa))
            env = {k: v for k, v in os.environ.items() if k != "GGML_BACKEND_PATH"}
            env["POSENC_ISA"] = isa
            print("-- %s, posenc %s" % (os.path.basename(model), isa), flush=True)
            subprocess.run([a.llama_check, "bench", "--model", model, "--out", out, "--backend", a.llama_backend,
                            "--rounds", str(a.llama_rounds)], env=env, check=True)
            with open(os.path.join(out, "bench.json")) as f:
                r = json.load(f)
            r["isa"] = isa
            data["runs"].append(r)
    with open(run.path("llama.json"), "w") as f:
        json.dump(data, f, indent=1)
    return ["--llama", run.path("llama.json")]


def llama_bench_skip(run):
    a = run.args
    if a.llama_note:
        return a.llama_note
    if not a.llama_check or not a.llama_backend or not a.llama_gguf_py:
        return "no --llama-check, --llama-backend and --llama-gguf-py (scripts/report.sh builds llama.cpp, " \
               "posenc's backend against it and the driver in its full and --docs modes)"
    if run.quick:
        return "the quick plan: a round of a 2048-token prompt takes seconds on 2 cores"
    if not os.path.exists(LLAMA_MODELS):
        return "no integrations/ggml/llama/make_models.py (not a source tree)"
    if missing("numpy"):
        return "numpy not importable by %s (make_models.py)" % run.python
    return None


STEPS = [
    Step("accuracy against MPFR", accuracy),
    Step(benchmarks_title, benchmarks),
    Step("pictures of the encoding", pictures, pictures_skip),
    # Optional steps: a Step whose skip() says why it cannot run (a module that is not importable) and whose
    # run() writes its results in run.out and returns the make_report.py options that read them.
    Step("Python: the original PyTorch code against posenc.torch", python_bench, python_bench_skip),
    Step("NEON: guest instructions under qemu-aarch64", neon_counts, neon_counts_skip),
    Step("ggml: posenc's RoPE operation against ggml's in a graph", ggml_bench, ggml_bench_skip),
    Step("llama.cpp: the whole model with posenc's backend over without", llama_bench, llama_bench_skip),
]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--bench", required=True, help="posenc-bench")
    ap.add_argument("--accuracy", required=True, help="posenc-accuracy")
    ap.add_argument("--posenc", help="the posenc command (pictures of the encoding)")
    ap.add_argument("--posenc-python", help="a meson build dir with -Dpython=enabled (the Python section's "
                                            "package; else posenc as this interpreter imports it)")
    ap.add_argument("--neon-count", help="posenc-count of an aarch64 build (the NEON section, bench/neon/counts.py)")
    ap.add_argument("--neon-plugin", help="bench/neon/insn_count.c built as a qemu plugin")
    ap.add_argument("--neon-qemu", default="qemu-aarch64")
    ap.add_argument("--neon-sysroot", help="qemu -L: the aarch64 libc of a cross tool chain")
    ap.add_argument("--neon-libdir", default="/usr/lib/aarch64-linux-gnu", help="the aarch64 libraries (SLEEF)")
    ap.add_argument("--neon-ggml", help="posenc-count-ggml (bench/neon/build_ggml.sh)")
    ap.add_argument("--neon-ggml-note", help="why there is no --neon-ggml")
    ap.add_argument("--ggml-bench", help="posenc-ggml-bench (integrations/ggml/: the ggml section)")
    ap.add_argument("--llama-check", help="llama_check built against llama.cpp (integrations/ggml/llama/): the "
                                           "llama.cpp section")
    ap.add_argument("--llama-backend", help="posenc's backend module libggml-posenc.so (scripts/build_ggml_backend.sh)")
    ap.add_argument("--llama-gguf-py", help="that llama.cpp's gguf-py (make_models.py writes the models with it)")
    ap.add_argument("--llama-models", help="where the benchmark models are written (default OUT/llama-models)")
    ap.add_argument("--llama-rounds", type=int, default=8, help="rounds per thread count (default 8)")
    ap.add_argument("--llama-version", default="?", help="the llama.cpp commit, for the report")
    ap.add_argument("--llama-ggml-version", default="?", help="its ggml version, for the report")
    ap.add_argument("--llama-note", help="why there is no llama.cpp section (the step is skipped with it)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--docs")
    ap.add_argument("--command", default="scripts/report.sh")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    run = Run(args)
    report_args = ["--out", args.out, "--command", args.command]
    for step in STEPS:
        title = step.title(run) if callable(step.title) else step.title
        why = step.skip(run)
        if why:
            print("== %s: skipped, %s" % (title, why), flush=True)
            continue
        print("== " + title, flush=True)
        try:
            report_args += step.run(run)
        except subprocess.CalledProcessError as e:
            print("report: %s failed (exit status %s): %s" % (title, e.returncode, " ".join(e.cmd)), file=sys.stderr)
            return 1
    print("== report", flush=True)
    if args.docs:
        report_args += ["--docs", args.docs]
    return make_report.main(report_args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
