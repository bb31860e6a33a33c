"""Google Benchmark JSON -> one median per case, grouped the way the report compares them.

A case name is <kernel>/<impl>/d=<d>/n=<n>[/<key>=<value>...] (bench/harness.hpp). Cases with the same
kernel and the same parameters form a group; within a group every impl moved the same bytes, so time
ratios are throughput ratios.
"""
import json
import statistics

POSENC_PATHS = ("scalar", "avx2", "avx512", "neon")  # posenc_isa order: the last available is the best
BOUNDS = ("memset", "memcpy", "memcpy_gather")


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
        """(max - min) / median over the repetitions: how noisy this case was."""
        if len(self.times) < 2:
            return 0.0
        return (max(self.times) - min(self.times)) / self.median

    def key(self):
        return (self.kernel, tuple(sorted(self.params.items())))


UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def load(path):
    """Returns (context dict, {name: Case}) from the repetitions themselves (medians computed here)."""
    with open(path) as f:
        data = json.load(f)
    cases = {}
    for b in data["benchmarks"]:
        if b.get("run_type") == "aggregate":
            continue
        name = b.get("run_name", b["name"]).removesuffix("/real_time")
        c = cases.setdefault(name, Case(name))
        if b.get("error_occurred"):
            c.error = b.get("error_message", "error")
            continue
        c.times.append(b["real_time"] * UNIT[b.get("time_unit", "ns")])
        c.bytes_per_s.append(b.get("bytes/s", 0.0))
    return data.get("context", {}), cases


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
