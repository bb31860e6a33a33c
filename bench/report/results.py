"""Google Benchmark JSON -> one median per case, grouped the way the report compares them.

A case name is <kernel>/<impl>/d=<d>/n=<n>[/<key>=<value>...] (bench/harness.hpp). Cases with the same
kernel and the same parameters form a group; within a group every impl moved the same bytes, so time
ratios are throughput ratios.

Also what the report's optional sections (python_section.py, neon_section.py, ggml_section.py, llama_section.py)
share in reading the JSON of their own step of report.py: the file or None, "not measured" when the step did not
run, "no <results>" as their first problem.
"""
import json
import os
import statistics

POSENC_PATHS = ("scalar", "avx2", "avx512", "neon")  # posenc_isa order: the last available is the best
BOUNDS = ("memset", "stores", "memcpy", "memcpy_gather", "inplace")


def parse_name(name):
    parts = name.split("/")
    params = {}
    for p in parts[2:]:
        if "=" in p:
            k, v = p.split("=", 1)
            params[k] = int(v) if v.isdigit() else v
    return parts[0], parts[1], params


class Case:
    def __init__(self, name):
        self.name = name
        self.kernel, self.impl, self.params = parse_name(name)
        self.times = []  # seconds per call, one per repetition
        self.bytes_per_s = []
        self.error = None

    @property
    def median(self):
        return statistics.median(self.times) if self.times else None

    @property
    def spread(self):
        """The interquartile range over the median of the repetitions: how noisy this case was."""
        return spread(self.times)

    def key(self):
        return (self.kernel, tuple(sorted(self.params.items())))


def spread(xs):
    """The interquartile range of xs over their median (0 under 4 values): how noisy the host was."""
    if not xs or len(xs) < 4:
        return 0.0
    q = statistics.quantiles(xs, n=4)
    return (q[2] - q[0]) / statistics.median(xs)


UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def load(path):
    """Returns (context dict, {name: Case}, {(a, b): [paired ratio per repetition]}), from the repetitions
    themselves (medians are computed here)."""
    with open(path) as f:
        data = json.load(f)
    cases = {}
    pairs = {}
    for b in data["benchmarks"]:
        if b.get("run_type") == "aggregate":
            continue
        name = b.get("run_name", b["name"]).removesuffix("/real_time").removesuffix("/manual_time")
        if name.startswith("ratio/"):
            a, _, other = name[len("ratio/"):].partition("|")
            # None marks a repetition that failed, for the report's completeness check
            pairs.setdefault((a, other), []).append(None if b.get("error_occurred") else b.get("ratio"))
            continue
        c = cases.setdefault(name, Case(name))
        if b.get("error_occurred"):
            c.error = b.get("error_message", "error")
            continue
        c.times.append(b["real_time"] * UNIT[b.get("time_unit", "ns")])
        c.bytes_per_s.append(b.get("bytes/s", 0.0))
    return data.get("context", {}), cases, pairs


def case_name(kernel, impl, params):
    """The benchmark's name of a case (bench/harness.cpp): d and n first, then the other parameters."""
    rest = "".join("/%s=%s" % (k, v) for k, v in params.items() if k not in ("d", "n"))
    return "%s/%s/d=%d/n=%d%s" % (kernel, impl, params["d"], params["n"], rest)


def groups(cases):
    """{(kernel, params): {impl: Case}}"""
    out = {}
    for c in cases.values():
        out.setdefault(c.key(), {})[c.impl] = c
    return out


def posenc_paths(group):
    return [p for p in POSENC_PATHS if p in group]


def best_path(cases):
    present = {c.impl for c in cases.values()}
    found = [p for p in POSENC_PATHS if p in present]
    return found[-1] if found else None


# ---- the optional sections' JSON -----------------------------------------------------------------------------

def load_json(path):
    """A section's JSON, or None when there is none (its step was skipped or failed)."""
    if not path or not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def data_of(data_or_path):
    return load_json(data_or_path) if isinstance(data_or_path, str) else data_or_path


def not_measured(heading, path):
    return heading + "\n\nnot measured (no %s)\n" % (path or "JSON")


def json_problems(path, what, check):
    """["no <what> (<path>)"] when a section's JSON is missing, else check(its data)."""
    data = load_json(path)
    if not data:
        return ["no %s (%s)" % (what, path)]
    return check(data)
