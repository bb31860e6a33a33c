"""The ratios the issues set targets on (issue 2: tables; issue 3: embedding), measured in one run."""
from results import posenc_paths

# (title, kernel, params, numerator, denominator, how the issue states it, target, comparison)
#   ratio = median time of `num` / median time of `den`; "posenc" stands for each SIMD path in turn.
TABLE_SMALL = {"d": 512, "n": 2048}
TABLE_BIG = {"d": 8192, "n": 4096}


def embed(d, n, vocab=32000):
    return {"d": d, "n": n, "vocab": vocab}


TARGETS = [
    ("table 512 x 2048: faster than SLEEF u35 AVX2 on fl(p*w)", "table_f32", TABLE_SMALL,
     "sleef_u35_avx2", "posenc", ">=", 3.0, "speed-up"),
    ("table 512 x 2048: faster than libm sincos in double", "table_f32", TABLE_SMALL,
     "libm_double", "posenc", ">=", 20.0, "speed-up"),
    ("table 8192 x 4096 (128 MiB): share of memset bandwidth", "table_f32", TABLE_BIG,
     "memset", "posenc", ">=", 0.9, "bandwidth ratio"),
    ("embed 32000 x 4096, 8192 tokens: time vs memcpy gather", "embed_f32", embed(4096, 8192),
     "posenc", "memcpy_gather", "<=", 1.25, "time ratio"),
    ("embed 32000 x 4096, 8192 tokens: faster than naive 3 passes", "embed_f32", embed(4096, 8192),
     "naive_3pass", "posenc", ">=", 3.0, "speed-up"),
    ("embed 32000 x 4096, 8192 tokens: bf16 table faster than f32", "embed_f32", embed(4096, 8192),
     "posenc", "posenc@embed_bf16", ">", 1.0, "speed-up"),
    ("embed 32000 x 1024, 2048 tokens: time vs memcpy gather", "embed_f32", embed(1024, 2048),
     "posenc", "memcpy_gather", "<=", 1.25, "time ratio"),
    ("embed 32000 x 1024, 2048 tokens: faster than naive 3 passes", "embed_f32", embed(1024, 2048),
     "naive_3pass", "posenc", ">=", 3.0, "speed-up"),
    ("embed 32000 x 1024, 2048 tokens: bf16 table faster than f32", "embed_f32", embed(1024, 2048),
     "posenc", "posenc@embed_bf16", ">", 1.0, "speed-up"),
]


def _case(groups, kernel, params, impl, path):
    if impl.startswith("posenc"):
        kernel = impl.split("@")[1] if "@" in impl else kernel
        impl = path
    return groups.get((kernel, tuple(sorted(params.items()))), {}).get(impl)


def _met(value, op, target):
    return {">=": value >= target, "<=": value <= target, ">": value > target}[op]


def evaluate(groups, simd_paths):
    """One row per target and SIMD path: (title, path, ratio or None, op, target, met, num s, den s)."""
    rows = []
    for title, kernel, params, num, den, op, target, _ in TARGETS:
        for path in simd_paths:
            a = _case(groups, kernel, params, num, path)
            b = _case(groups, kernel, params, den, path)
            if not a or not b or a.median is None or b.median is None:
                rows.append((title, path, None, op, target, None, None, None))
                continue
            r = a.median / b.median
            rows.append((title, path, r, op, target, _met(r, op, target), a.median, b.median))
    return rows


def simd_paths_of(groups):
    found = set()
    for g in groups.values():
        found.update(p for p in posenc_paths(g) if p != "scalar")
    return [p for p in ("avx2", "avx512", "neon") if p in found]
