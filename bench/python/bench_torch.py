#!/usr/bin/env python3
"""The original PyTorch code against posenc.torch, timed from Python in one process, on the same shapes.

    PYTHONPATH=<dir holding the posenc package> /usr/bin/python3 bench/python/bench_torch.py [--quick] \
        --out report/python.json
    /usr/bin/python3 bench/python/bench_torch.py --posenc-build build-report --out report/python.json

--posenc-build DIR: use the extension a meson build with -Dpython=enabled made (DIR/python/_posenc*.so) with
this tree's python/posenc/*.py, instead of a posenc found on sys.path.

The originals are python/tests/originals.py (the PyTorch tutorial's PositionalEncoding, the torch.pow /
torch.stack table, emb(tok) * sqrt(d) + pe, HF transformers' LlamaRotaryEmbedding + apply_rotary_pos_emb) and
originals_timesteps.py next to it (diffusers' get_timestep_embedding), imported from this tree. Every case runs
its variants in rounds: each round calls every variant once (or a fixed inner loop of calls, for calls of a few
microseconds), the order rotated from round to round
(A B, B A, ...), so that drift hits all sides alike; the JSON keeps the time of every variant in every round
(round order), from which bench/report/python_section.py computes medians, per-round (paired) ratios and
spreads. Everything runs under torch.no_grad() (inference), float32, with torch.set_num_threads(1); then
big_cases (tables, the tutorial and fairseq forwards, the embedding, the HF rotations) run a second time with
--threads N, torch's default thread count when above 1, else 2 threads where there are 2 CPUs (posenc's large calls
follow torch.get_num_threads(): the same thread count on both sides). Each case also times a bound: what
the same output costs without the arithmetic (a new tensor written, the gather alone, q and k read and written).

Scaling (issue 26; --scaling-only runs just this): the table 8192 x 1024, embedding + PE and the Llama-3.1-8B
RoPE prefill of 2048 tokens at 1 thread, 2 threads and every CPU of the process's affinity, the original and
posenc.torch at torch.set_num_threads(t) (posenc follows it), and posenc again held to one thread
(posenc.set_num_threads(1)) in the same rounds: its speed-up from threads, paired.

Memory: glibc's malloc gives a tensor of 32 MiB or more (in the steady state of its default configuration) a
fresh mapping whose pages fault on first touch, about 1.5 ns per float32 element on the VM this was written on,
as much as several passes over the data; smaller ones reuse freed heap memory, which the implementations of a
case then share, each one's timing depending on what the others freed. So the cases run first with glibc told to
reuse every freed block (mallopt M_MMAP_THRESHOLD 1 GiB, M_TRIM_THRESHOLD max): no fresh mapping, no page
fault, the work itself, as with a caching allocator; the report's verdicts use that run. The cases without a
decode shape then run again in glibc's default steady state, set explicitly (M_MMAP_THRESHOLD 32 MiB,
M_TRIM_THRESHOLD 64 MiB), each case starting from a trimmed heap (malloc_trim): what a default process sees
(--no-default-run skips it). Without glibc's mallopt there is one run, with the allocator as it is.

Before timing, each case checks that both sides compute the same thing (the largest difference is recorded;
nothing about the timings is ever asserted).

Exits non-zero when a case failed (its error is in the JSON); the timings are never judged here.
"""
import argparse
import atexit
import datetime
import gc
import glob
import importlib.util
import json
import math
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
# the report's modules: bench/report in a source tree, this directory in an install (share/posenc/report)
sys.path.insert(0, os.path.join(REPO, "bench", "report") if os.path.isdir(os.path.join(REPO, "bench", "report"))
                else HERE)
import machine as report_machine  # noqa: E402
SCHEMA = 1


# ---- setup ---------------------------------------------------------------------------------------------------

def use_build(build_dir):
    """Puts a package dir made of build_dir's extension and this tree's python/posenc/*.py first on sys.path."""
    import importlib.machinery
    sos = [f for f in glob.glob(os.path.join(build_dir, "python", "_posenc*"))
           if any(f.endswith(x) for x in importlib.machinery.EXTENSION_SUFFIXES)]
    if not sos:
        sys.exit("bench_torch: no python/_posenc%s in %s (meson setup -Dpython=enabled, for this interpreter, %s)"
                 % (importlib.machinery.EXTENSION_SUFFIXES[0], build_dir, sys.executable))
    root = tempfile.mkdtemp(prefix="posenc-bench-py-")
    atexit.register(shutil.rmtree, root, True)
    pkg = os.path.join(root, "posenc")
    os.makedirs(pkg)
    for f in sos + glob.glob(os.path.join(REPO, "python", "posenc", "*.py")):
        shutil.copy(f, pkg)
    sys.path.insert(0, root)
    return root


def default_originals():
    for path in (os.path.join(REPO, "python", "tests", "originals.py"), os.path.join(HERE, "originals.py")):
        if os.path.exists(path):
            return path
    return os.path.join(REPO, "python", "tests", "originals.py")


def load_originals(path):
    spec = importlib.util.spec_from_file_location("posenc_bench_originals", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ---- timing --------------------------------------------------------------------------------------------------

class Plan:
    def __init__(self, quick):
        self.quick = quick
        # rounds per case: as many as fit in the budget, within [min, max]
        self.min_rounds, self.max_rounds, self.budget = (5, 15, 0.4) if quick else (21, 301, 4.0)
        self.inner_target = 0.2e-3 if quick else 1e-3  # a round of a microsecond call: an inner loop this long


def _clock_once(fn, setup, inner, self_timed=False):
    if setup is not None:
        setup()
    if self_timed:  # fn measures itself and returns seconds per call
        return fn()
    t0 = time.perf_counter()
    for _ in range(inner):
        fn()
    return (time.perf_counter() - t0) / inner


def measure(variants, plan, inner=None):
    """variants: [(name, fn, setup or None[, self_timed])]. Returns ({name: [seconds per call, one per round]},
    inner). inner=None: one call per round; "auto": an inner loop of calls sized to plan.inner_target (the
    setup runs once per round, before the loop). A self-timed variant is called once per round and returns
    its own seconds per call (posenc._posenc._repeat_rope_qk)."""
    variants = [tuple(v) + (False,) * (4 - len(v)) for v in variants]
    gc.collect()
    for name, fn, setup, own in variants:  # warm-up: first-use costs (allocator, caches, lazy init) out of the way
        for _ in range(2):
            _clock_once(fn, setup, 1, own)
    looped = [v for v in variants if not v[3]]
    est = sum(min(_clock_once(fn, setup, 1) for _ in range(3)) for _, fn, setup, _ in looped)
    if inner == "auto":
        inner = max(1, min(10000, int(plan.inner_target / max(est / max(1, len(looped)), 1e-8))))
    inner = inner or 1
    own_cost = sum(plan.inner_target for v in variants if v[3])
    rounds = int(max(plan.min_rounds, min(plan.max_rounds, plan.budget / max(est * inner + own_cost, 1e-9))))
    times = {v[0]: [] for v in variants}
    gc_was = gc.isenabled()
    gc.disable()
    try:
        n = len(variants)
        for r in range(rounds):
            order = variants[r % n:] + variants[:r % n]
            if (r // n) % 2:
                order = order[::-1]
            for name, fn, setup, own in order:
                times[name].append(_clock_once(fn, setup, inner, own))
    finally:
        if gc_was:
            gc.enable()
    return times, inner


# ---- cases ---------------------------------------------------------------------------------------------------

class Bench:
    def __init__(self, torch, pt, posenc, originals, plan):
        self.torch, self.pt, self.posenc, self.O, self.plan = torch, pt, posenc, originals, plan
        self.cases = []
        self.failed = 0
        self.alloc = "default"

    def trim(self):
        """Each case starts from the same heap: free memory given back (malloc_trim), thresholds kept."""
        if LIBC is not None:
            LIBC.malloc_trim(0)

    def run(self, case_id, group, title, shape, elements, variants, sides, check=None, inner=None, note=None):
        """sides: {variant name: (label, "original" | "posenc" | "posenc-extra" | "bound" | "kernel")}"""
        rec = {"id": case_id, "group": group, "title": title, "shape": shape, "elements": elements,
               "threads": self.torch.get_num_threads(), "posenc_threads": self.posenc.get_num_threads(),
               "alloc": self.alloc, "variants": {}, "note": note, "error": None}
        self.trim()
        try:
            with self.torch.no_grad():
                if check is not None:
                    rec["check"] = check()
                times, used_inner = measure(variants, self.plan, inner)
            rec["inner"] = used_inner
            for name, ts in times.items():
                label, side = sides[name]
                rec["variants"][name] = {"label": label, "side": side, "times": ts}
        except Exception as e:  # recorded for the report's completeness check
            rec["error"] = "%s: %s" % (type(e).__name__, e)
            self.failed += 1
        self.cases.append(rec)
        med = {n: statistics.median(v["times"]) for n, v in rec["variants"].items()}
        print("  %-34s %s" % (case_id + " t%d %s" % (rec["threads"], self.alloc),
                              rec["error"] or
                              "  ".join("%s %.4g us" % (n, m * 1e6) for n, m in med.items())), flush=True)
        return rec


def max_diff(a, b):
    return float((a.float() - b.float()).abs().max())


def tables(B, shapes):
    torch, pt, posenc, O = B.torch, B.pt, B.posenc, B.O
    for n, d in shapes:
        spec = posenc.Spec.vaswani(d)
        buf = torch.empty(n, d)
        B.run("table/%dx%d" % (n, d), "tables", "table %d x %d" % (n, d), {"n": n, "d": d}, n * d,
              [("tutorial", lambda: O._tutorial_table(d, n), None),
               ("stacked", lambda: O.stacked_sincos_table(n, d), None),
               ("posenc", lambda: pt.table(spec, n), None),
               ("posenc_out", lambda: pt.table(spec, n, out=buf), None),
               ("bound", lambda: torch.empty(n, d).fill_(0.0), None)],
              {"tutorial": ("tutorial table (exp, sin/cos into pe[:, 0::2] / pe[:, 1::2])", "original"),
               "stacked": ("stacked table (torch.pow, torch.stack)", "original"),
               "posenc": ("posenc.torch.table", "posenc"),
               "posenc_out": ("posenc.torch.table(out=) into a preallocated tensor (touched by no other variant: "
                              "out of the cache between its calls)", "posenc-extra"),
               "bound": ("torch.empty(n, d).fill_(0): a new tensor, its bytes written, no arithmetic", "bound")},
              check=lambda: {"max_abs_diff_vs_tutorial": max_diff(pt.table(spec, n), O._tutorial_table(d, n))})


def tutorial_forward(B, shapes):
    torch, pt, O = B.torch, B.pt, B.O
    for seq, batch, d in shapes:
        for batch_first in (False, True):
            if batch_first:
                mo = O.PositionalEncodingBatchFirst(d, dropout=0.0, max_len=seq).eval()
                mp = B.pt.PositionalEncodingBatchFirst(d, dropout=0.0, max_len=seq).eval()
                x = torch.randn(batch, seq, d)
                cid = "forward_bf/%dx%dx%d" % (batch, seq, d)
                title = "batch-first forward, x [%d, %d, %d]" % (batch, seq, d)
            else:
                mo = O.PositionalEncoding(d, dropout=0.0, max_len=seq).eval()
                mp = pt.PositionalEncoding(d, dropout=0.0, max_len=seq).eval()
                x = torch.randn(seq, batch, d)
                cid, title = "forward/%dx%dx%d" % (seq, batch, d), "tutorial forward, x [%d, %d, %d]" % (seq, batch, d)
            B.run(cid, "forward", title, {"seq": seq, "batch": batch, "d": d, "batch_first": batch_first},
                  seq * batch * d,
                  [("original", lambda: mo(x), None), ("posenc", lambda: mp(x), None),
                   ("bound", lambda: x.clone(), None)],
                  {"original": ("original module (eval, dropout 0): x + pe[:seq]", "original"),
                   "posenc": ("posenc.torch module (batch-first: fused add, exact PE on the fly; seq-first: "
                              "x + pe[:seq], the same op on the exact table)", "posenc"),
                   "bound": ("x.clone(): x read, a new tensor written", "bound")},
                  check=lambda: {"max_abs_diff": max_diff(mo(x), mp(x))})


def embedding(B, shapes, vocab):
    torch, pt, posenc, O = B.torch, B.pt, B.posenc, B.O
    for batch, n, d in shapes:
        mo = O.ScaledEmbeddingWithPE(vocab, d, max_len=n).eval()
        mp = pt.ScaledEmbeddingWithPE(vocab, d, max_len=n).eval()
        mp.embedding.weight.data.copy_(mo.embedding.weight.data)
        g = torch.Generator().manual_seed(batch * 1000 + n)
        tok = torch.randint(0, vocab, (batch, n), generator=g)
        w = mp.embedding.weight.detach()
        spec, scale, out = posenc.Spec.vaswani(d), math.sqrt(d), torch.empty(batch, n, d)
        B.run("embed/%dx%dx%d" % (batch, n, d), "embed", "embedding + PE, %d x %d tokens, d = %d, vocab %d"
              % (batch, n, d, vocab), {"batch": batch, "n": n, "d": d, "vocab": vocab}, batch * n * d,
              [("original", lambda: mo(tok), None), ("posenc", lambda: mp(tok), None),
               ("posenc_out", lambda: posenc.embed(spec, w, tok, scale=scale, out=out), None),
               ("bound", lambda: torch.nn.functional.embedding(tok, w), None)],
              {"original": ("original: embedding(tok) * sqrt(d) + pe[:seq]", "original"),
               "posenc": ("posenc.torch.ScaledEmbeddingWithPE (fused)", "posenc"),
               "posenc_out": ("posenc.embed(out=) into a preallocated tensor (touched by no other variant: out of "
                              "the cache between its calls)", "posenc-extra"),
               "bound": ("torch.nn.functional.embedding(tok, weight): the gather alone", "bound")},
              check=lambda: {"max_abs_diff": max_diff(mo(tok), mp(tok))})


def llama_qk(torch, seq, batch=1, q_heads=32, kv_heads=8, head_dim=128):
    """q, k as HF makes them: views [batch, heads, seq, dim] of q_proj(x).view(batch, seq, heads, dim)
    .transpose(1, 2); the base tensors and saved copies to restore them."""
    g = torch.Generator().manual_seed(seq)
    qb = torch.randn(batch, seq, q_heads, head_dim, generator=g)
    kb = torch.randn(batch, seq, kv_heads, head_dim, generator=g)
    return qb, kb, qb.clone(), kb.clone()


def llama_rotation(B, ro, seq, first):
    """q, k of llama_qk at positions first .., restore() (q and k from their saved copies) and original() (HF's
    forward + apply_rotary_pos_emb with the rotary module ro): (qb, kb, q, k, pos, restore, original)."""
    torch, O = B.torch, B.O
    qb, kb, q0, k0 = llama_qk(torch, seq)
    q, k = qb.transpose(1, 2), kb.transpose(1, 2)
    pos = torch.arange(first, first + seq).unsqueeze(0)

    def restore():
        qb.copy_(q0)
        kb.copy_(k0)

    def original():
        cos, sin = ro(q, pos)
        return O.apply_rotary_pos_emb(q, k, cos, sin)

    return qb, kb, q, k, pos, restore, original


def vision_forward(B, n_ids=4096, dim=40):
    """Issue 32: the vision towers' angle table (Qwen2-VL: dim = head_dim / 2 = 40). v5's forward(position_ids)
    on (row, col) ids and v4's forward(seqlen) with the 0-dim tensor its towers pass; the originals are
    upstream's modules as written (python/tests/originals_vl.py). Both do one PyTorch op on inv_freq, which
    posenc.torch hands to the same op: what remains is each module's own Python."""
    torch, pt, V = B.torch, B.pt, B.O_vl
    g = torch.Generator().manual_seed(5)
    ids = torch.randint(0, 64, (n_ids, 2), generator=g)
    seqlen = torch.tensor(64)
    p = pt.VisionRotaryEmbedding(dim)
    for kind, orig, arg, title in (
            ("ids", V.VisionRotaryEmbeddingV5(dim), ids, "v5 forward(position_ids), %d (row, col) ids" % n_ids),
            ("seqlen", V.VisionRotaryEmbeddingV4(dim), seqlen, "v4 forward(seqlen), a 0-dim tensor 64")):
        B.run("vision_rope/%s" % kind, "vision_rope", "VisionRotaryEmbedding(%d): %s" % (dim, title),
              {"dim": dim, "ids": n_ids if kind == "ids" else 64}, (n_ids if kind == "ids" else 64) * dim,
              [("original", lambda o=orig, a=arg: o(a), None), ("posenc", lambda a=arg: p(a), None)],
              {"original": ("HF VisionRotaryEmbedding.forward (%s)" % ("v5" if kind == "ids" else "v4"), "original"),
               "posenc": ("posenc.torch VisionRotaryEmbedding.forward", "posenc")},
              check=lambda o=orig, a=arg: {"max_abs_diff": max_diff(o(a), p(a))}, inner="auto")


def diffusion_rope(B):
    """Issue 33: diffusers' per-axis RoPE tables (python/tests/originals_diffusers.py). FluxPosEmbed on a 1024 x 1024
    image (64 x 64 latent patches + 512 text tokens): diffusers' float64 CPU path, its float32 path (MPS / NPU),
    posenc.torch's (exact); WanRotaryPosEmbed's construction (3 x 1024 positions of 128 dimensions) and its
    forward on an 81-frame 480p latent (21 x 30 x 52 patches), which slices the tables on both sides."""
    torch, pt, D = B.torch, B.pt, B.O_diff
    ids = torch.zeros(512 + 64 * 64, 3)
    ids[512:, 1] = torch.arange(64).repeat_interleave(64).float()
    ids[512:, 2] = torch.arange(64).repeat(64).float()
    f64, f32 = D.DiffusersFluxPosEmbed(10000, [16, 56, 56]), D.DiffusersFluxPosEmbed(10000, [16, 56, 56], torch.float32)
    mine = pt.FluxPosEmbed(10000, [16, 56, 56])

    def ulps(a, b):
        a, b = a.double(), b.double()
        unit = torch.clamp(torch.maximum(a.abs(), b.abs()), min=2.0 ** -126) * 2.0 ** -23
        return float(((a - b).abs() / unit).max())

    def check():
        c, s = mine(ids)
        c64, s64 = f64(ids)
        c32, s32 = f32(ids)
        return {"max_abs_diff": max_diff(c64, c), "ulps_float64_path": max(ulps(c64, c), ulps(s64, s)),
                "ulps_float32_path": max(ulps(c32, c), ulps(s32, s))}

    B.run("diffusion_rope/flux", "diffusion_rope", "FluxPosEmbed(10000, (16, 56, 56)), 4608 ids (1024 x 1024)",
          {"ids": 4608, "dim": 128}, 4608 * 128,
          [("original", lambda: f64(ids), None), ("original_f32", lambda: f32(ids), None),
           ("posenc", lambda: mine(ids), None)],
          {"original": ("diffusers FluxPosEmbed, float64 (CPU)", "original"),
           "original_f32": ("diffusers FluxPosEmbed, float32 (MPS/NPU path)", "original"),
           "posenc": ("posenc.torch FluxPosEmbed", "posenc")}, check=check, inner="auto")
    x = torch.zeros(1, 16, 21, 60, 104)
    w64, wp = D.DiffusersWanRotaryPosEmbed(128, (1, 2, 2), 1024), pt.WanRotaryPosEmbed(128, (1, 2, 2), 1024)
    B.run("diffusion_rope/wan_init", "diffusion_rope", "WanRotaryPosEmbed(128, (1, 2, 2), 1024): the tables",
          {"positions": 1024, "dim": 128}, 1024 * 128,
          [("original", lambda: D.DiffusersWanRotaryPosEmbed(128, (1, 2, 2), 1024), None),
           ("posenc", lambda: pt.WanRotaryPosEmbed(128, (1, 2, 2), 1024), None)],
          {"original": ("diffusers WanRotaryPosEmbed(), float64", "original"),
           "posenc": ("posenc.torch WanRotaryPosEmbed()", "posenc")},
          check=lambda: {"max_abs_diff": max_diff(w64.freqs_cos, wp.freqs_cos)}, inner="auto")
    B.run("diffusion_rope/wan", "diffusion_rope", "WanRotaryPosEmbed forward, 81 frames 480p (32760 patches)",
          {"tokens": 32760, "dim": 128}, 32760 * 128,
          [("original", lambda: w64(x), None), ("posenc", lambda: wp(x), None)],
          {"original": ("diffusers WanRotaryPosEmbed.forward", "original"),
           "posenc": ("posenc.torch WanRotaryPosEmbed.forward", "posenc")},
          check=lambda: {"max_abs_diff": max_diff(w64(x)[0], wp(x)[0])}, inner="auto")


def video_rope(B):
    """Issue 33: the video transformers' tables, diffusers' (as it runs: float32 frequencies and angles) against
    posenc.torch's: CogVideoX's get_3d_rotary_pos_embed on a 13 x 30 x 45 "slice" grid (1.5), HunyuanVideo's
    module on 9 latent frames of 20 x 30 patches, LTX-Video's module (dim 2048) on 7 x 8 x 12 patches; CogVideoX
    1.0's linspace grid and LTX's coordinates are real-valued positions."""
    torch, pt, D = B.torch, B.pt, B.O_diff
    cases = [
        ("cogvideox", "get_3d_rotary_pos_embed(64), 13 x 30 x 45 slice grid", 17550 * 64,
         lambda: D.diffusers_get_3d(64, None, (30, 45), 13, grid_type="slice", max_size=(30, 45)),
         lambda: pt.get_3d_rotary_pos_embed(64, None, (30, 45), 13, grid_type="slice", max_size=(30, 45))),
        # CogVideoX 1.0: linspace over a crop, real-valued positions (posenc_rope_cache_real_f32)
        ("cogvideox_linspace", "get_3d_rotary_pos_embed(64), 13 x 30 x 45 linspace grid (real positions)",
         17550 * 64, lambda: D.diffusers_get_3d(64, ((0, 0), (32, 48)), (30, 45), 13),
         lambda: pt.get_3d_rotary_pos_embed(64, ((0, 0), (32, 48)), (30, 45), 13)),
    ]
    hv, hp = D.DiffusersHunyuanVideoRotaryPosEmbed(2, 1, [16, 56, 56]), pt.HunyuanVideoRotaryPosEmbed(2, 1, [16, 56, 56])
    xh = torch.zeros(1, 16, 9, 40, 60)
    cases.append(("hunyuan_video", "HunyuanVideoRotaryPosEmbed, 9 x 20 x 30 patches", 5400 * 128,
                  lambda: hv(xh), lambda: hp(xh)))
    lv, lp = D.DiffusersLTXVideoRotaryPosEmbed(2048), pt.LTXVideoRotaryPosEmbed(2048)
    xl, scale = torch.zeros(1, 672, 16), (torch.tensor(8 / 25.0), 32, 32)
    cases.append(("ltx", "LTXVideoRotaryPosEmbed(2048), 7 x 8 x 12 patches", 672 * 2048,
                  lambda: lv(xl, 7, 8, 12, scale), lambda: lp(xl, 7, 8, 12, scale)))
    for name, title, elements, orig, mine in cases:
        B.run("diffusion_rope/%s" % name, "diffusion_rope", title, {"elements": elements}, elements,
              [("original", orig, None), ("posenc", mine, None)],
              {"original": ("diffusers (float32 frequencies)", "original"), "posenc": ("posenc.torch", "posenc")},
              check=lambda o=orig, m=mine: {"max_abs_diff": max_diff(o()[0], m()[0])}, inner="auto")


def _exact_cos_sin(pos, freq):
    """(cos, sin) float32 [len(pos), len(freq)]: each the correctly rounded value at the exact angle pos * freq
    (doubles, multiplied exactly), by MPFR (gmpy2) at 400 bits; independent of posenc."""
    import gmpy2
    ctx = gmpy2.context(precision=400, round=gmpy2.RoundToNearest)
    cos = np.empty((len(pos), len(freq)), np.float32)
    sin = np.empty_like(cos)
    saved = gmpy2.get_context()
    try:
        gmpy2.set_context(ctx)
        fs = [gmpy2.mpfr(float(f)) for f in freq]
        for i, p in enumerate(pos):
            mp = gmpy2.mpfr(float(p))
            for k, f in enumerate(fs):
                a = mp * f  # exact: 106 bits
                cos[i, k] = float(gmpy2.mpfr(gmpy2.cos(a), 24))  # one rounding to 24 bits (|values| far above 2^-126)
                sin[i, k] = float(gmpy2.mpfr(gmpy2.sin(a), 24))
    finally:
        gmpy2.set_context(saved)
    return cos, sin


def _nearest_double(x):
    """The double nearest a real expression evaluated by gmpy2 at 400 bits (a callable of the mpfr type)."""
    import gmpy2
    saved = gmpy2.get_context()
    try:
        gmpy2.set_context(gmpy2.context(precision=400, round=gmpy2.RoundToNearest))
        return float(x(gmpy2))
    finally:
        gmpy2.set_context(saved)


def _errors(got, want):
    """How a table of float32 values compares with the correctly rounded one: values not correctly rounded, out
    of how many, and the largest error in ulps of the correct value (floored at 2^-126)."""
    g = got.detach().float().contiguous().numpy().reshape(-1)
    w = np.ascontiguousarray(want, dtype=np.float32).reshape(-1)
    bad = int((g.view(np.uint32) != w.view(np.uint32)).sum())
    unit = np.maximum(np.abs(w.astype(np.float64)), 2.0 ** -126) * 2.0 ** -23
    return bad, int(w.size), float((np.abs(g.astype(np.float64) - w) / unit).max()) if w.size else 0.0


def hunyuandit_2d(B):
    """Issue 43: HunyuanDiT's get_2d_rotary_pos_embed (88 dims, its 1024 and 2048 grids over the (0, 0)-(32, 32)
    crop: positions k / 2 and k / 4): diffusers' torch path with its float32 frequencies and with float64 ones,
    posenc.torch's. At one thread the check holds every value to MPFR (each position as diffusers holds it
    times the double nearest theta^(-2k/d), exactly) and counts those that are not correctly rounded."""
    torch, pt, D = B.torch, B.pt, B.O_diff
    for size in (1024, 2048):
        g = size // 16
        args = (88, ((0, 0), (32, 32)), (g, g))
        grid = torch.linspace(0, 32 * (g - 1) / g, g, dtype=torch.float32).double().numpy()
        freq = [_nearest_double(lambda m, k=k: m.mpfr(10000) ** (m.mpfr(-2 * k) / 44)) for k in range(22)]

        def check(args=args, grid=grid, freq=freq, g=g):
            c1, s1 = _exact_cos_sin(grid, freq)  # [g, 22]: the same grid on both axes
            # row i g + j: pairs of grid_w[j] (the column) then of grid_h[i] (the row), each value twice
            rep = lambda t: np.repeat(t, 2, axis=1)  # noqa: E731
            want_c = np.concatenate([np.broadcast_to(rep(c1)[None, :, :], (g, g, 44)),
                                     np.broadcast_to(rep(c1)[:, None, :], (g, g, 44))], -1).reshape(g * g, 88)
            want_s = np.concatenate([np.broadcast_to(rep(s1)[None, :, :], (g, g, 44)),
                                     np.broadcast_to(rep(s1)[:, None, :], (g, g, 44))], -1).reshape(g * g, 88)
            out = {}
            for name, fn in (("posenc", lambda: pt.get_2d_rotary_pos_embed(*args, output_type="pt")),
                             ("diffusers_f32", lambda: D.diffusers_get_2d(*args, output_type="pt")),
                             ("diffusers_f64", lambda: D.diffusers_get_2d(*args, output_type="pt",
                                                                          freqs_dtype=torch.float64))):
                c, s = fn()
                bc, n, uc = _errors(c, want_c)
                bs, _, us = _errors(s, want_s)
                out[name + "_not_correctly_rounded"] = bc + bs
                out[name + "_max_ulps"] = max(uc, us)
            out["values"] = 2 * g * g * 88
            return out

        B.run("diffusion_rope/hunyuandit_%d" % size, "diffusion_rope",
              "get_2d_rotary_pos_embed(88), HunyuanDiT %d (%d x %d grid, fractional)" % (size, g, g),
              {"grid": g, "dim": 88}, g * g * 88,
              [("original", lambda a=args: D.diffusers_get_2d(*a, output_type="pt"), None),
               ("original_f64", lambda a=args: D.diffusers_get_2d(*a, output_type="pt", freqs_dtype=torch.float64),
                None),
               ("posenc", lambda a=args: pt.get_2d_rotary_pos_embed(*a, output_type="pt"), None)],
              {"original": ("diffusers get_2d_rotary_pos_embed, float32 (its default)", "original"),
               "original_f64": ("diffusers, freqs_dtype float64", "original"),
               "posenc": ("posenc.torch get_2d_rotary_pos_embed", "posenc")},
              check=check if torch.get_num_threads() == 1 else None, inner="auto")


def ltx_exact(B):
    """Issue 43: LTX-Video at 704 x 480 x 161 (a 21 x 15 x 22 latent, dim 2048, rope_interpolation_scale (8/25,
    32, 32)): diffusers' float32 module against posenc.torch's; the check holds every value to MPFR (each
    coordinate 2 g - 1 as diffusers' float32 grid holds g, times the double nearest theta^(k/(n-1)) pi/2)."""
    torch, pt, D = B.torch, B.pt, B.O_diff
    # LTX-Video 704 x 480 x 161: the latent's 21 x 15 x 22 patches
    F, H, W, dim = 21, 15, 22, 2048
    n = dim // 6
    scale = (torch.tensor(8 / 25.0), 32, 32)
    xl = torch.zeros(1, F * H * W, 128)
    lv, lp = D.DiffusersLTXVideoRotaryPosEmbed(dim), pt.LTXVideoRotaryPosEmbed(dim)

    def ltx_check():
        freq = [_nearest_double(lambda m, k=k: m.mpfr(10000) ** (m.mpfr(k) / (n - 1)) * m.const_pi() / 2)
                for k in range(n)]
        coords = []  # 2 g - 1 of each axis, g as diffusers' float32 grid holds it
        for size, s, base in ((F, scale[0], 20), (H, scale[1], 2048), (W, scale[2], 2048)):
            gr = torch.arange(size, dtype=torch.float32) * s * 1 / base
            coords.append(gr.double().numpy() * 2 - 1)
        tables = [_exact_cos_sin(c, freq) for c in coords]  # per axis: [size, n]
        want = []
        for part in range(2):
            f, h, w = (t[part] for t in tables)
            full = np.stack([np.broadcast_to(f[:, None, None, :], (F, H, W, n)),
                             np.broadcast_to(h[None, :, None, :], (F, H, W, n)),
                             np.broadcast_to(w[None, None, :, :], (F, H, W, n))], -1).reshape(F * H * W, 3 * n)
            want.append(np.repeat(full, 2, axis=1))
        out = {"values": 2 * F * H * W * 3 * n * 2}
        pad = dim % 6
        for name, mod in (("posenc", lp), ("diffusers_f32", lv)):
            c, s = mod(xl, F, H, W, scale)
            bc, _, uc = _errors(c[0, :, pad:], want[0])
            bs, _, us = _errors(s[0, :, pad:], want[1])
            out[name + "_not_correctly_rounded"] = bc + bs
            out[name + "_max_ulps"] = max(uc, us)
        return out

    B.run("diffusion_rope/ltx_704x480x161", "diffusion_rope",
          "LTXVideoRotaryPosEmbed(2048), 704 x 480 x 161 (21 x 15 x 22 patches, scaled: fractional)",
          {"patches": F * H * W, "dim": dim}, F * H * W * dim,
          [("original", lambda: lv(xl, F, H, W, scale), None), ("posenc", lambda: lp(xl, F, H, W, scale), None)],
          {"original": ("diffusers LTXVideoRotaryPosEmbed (float32)", "original"),
           "posenc": ("posenc.torch LTXVideoRotaryPosEmbed", "posenc")}, check=ltx_check, inner="auto")


def diffusion_apply(B):
    """Issue 43: diffusers' apply_rotary_emb as Flux's attention calls it (q [1, 24, S, 128], sequence_dim 2,
    adjacent pairs, FluxPosEmbed's float32 tables; S = 4608 for 1024 x 1024, 1024 in the quick plan), in float32
    and bfloat16, against posenc.torch's one pass; check: the largest difference from diffusers' values."""
    torch, pt, D = B.torch, B.pt, B.O_diff
    tokens = 1024 if B.plan.quick else 4608
    ids = torch.zeros(tokens, 3)
    img = torch.arange(max(tokens - 512, 0))
    ids[tokens - img.numel():, 1] = (img // 64).float()
    ids[tokens - img.numel():, 2] = (img % 64).float()
    cos, sin = pt.FluxPosEmbed(10000, [16, 56, 56])(ids)
    g = torch.Generator().manual_seed(43)
    for name, dt in (("f32", torch.float32), ("bf16", torch.bfloat16)):
        q = torch.randn(1, 24, tokens, 128, generator=g).to(dt)
        B.run("diffusion_apply/flux_%s" % name, "diffusion_apply",
              "apply_rotary_emb, Flux q [1, 24, %d, 128] %s" % (tokens, name),
              {"tokens": tokens, "heads": 24, "dim": 128, "dtype": name}, 24 * tokens * 128,
              [("original", lambda q=q: D.diffusers_apply_rotary_emb(q, (cos, sin)), None),
               ("posenc", lambda q=q: pt.apply_rotary_emb(q, (cos, sin)), None),
               ("bound", lambda q=q: torch.empty_like(q).copy_(q), None)],
              {"original": ("diffusers apply_rotary_emb", "original"),
               "posenc": ("posenc.torch apply_rotary_emb (posenc_rope_tables_*)", "posenc"),
               "bound": ("a copy of q into a new tensor (no arithmetic)", "bound")},
              check=lambda q=q: {"max_abs_diff": max_diff(D.diffusers_apply_rotary_emb(q, (cos, sin)),
                                                          pt.apply_rotary_emb(q, (cos, sin)))}, inner="auto")


def big_cases(B, table_shapes, fwd_shapes, emb_shapes, vocab, prefill, fairseq_shapes, decode_position):
    tables(B, table_shapes)
    vision_forward(B)
    diffusion_rope(B)
    video_rope(B)
    diffusion_apply(B)
    hunyuandit_2d(B)
    tutorial_forward(B, fwd_shapes)
    fairseq_forward(B, fairseq_shapes)
    embedding(B, emb_shapes, vocab)
    rotary(B, prefill, None, decode=False)
    for kind in ("prefill", "decode"):
        rotary_hf_path(B, prefill, decode_position, kind)


def fairseq_forward(B, shapes, d=512, padding_idx=1):
    """fairseq main's SinusoidalPositionalEmbedding.forward on tokens [bsz, seq] (the table sized as its
    PositionalEmbedding factory sizes it for 1024 source positions), row 0 left-padded."""
    torch, pt, O = B.torch, B.pt, B.O
    for bsz, seq in shapes:
        mo = O.SinusoidalPositionalEmbedding(d, padding_idx, init_size=1024 + padding_idx + 1)
        mp = pt.SinusoidalPositionalEmbedding(d, padding_idx, init_size=1024 + padding_idx + 1)
        g = torch.Generator().manual_seed(bsz * 7 + seq)
        tok = torch.randint(padding_idx + 1, 30000, (bsz, seq), generator=g)
        tok[0, : seq // 8] = padding_idx
        flat = O.make_positions(tok, padding_idx).view(-1)
        w = mp.weights
        B.run("fairseq/%dx%dx%d" % (bsz, seq, d), "fairseq_forward", "fairseq forward, tokens [%d, %d], d = %d"
              % (bsz, seq, d), {"bsz": bsz, "seq": seq, "d": d}, bsz * seq * d,
              [("original", lambda: mo(tok), None), ("posenc", lambda: mp(tok), None),
               ("bound", lambda: w.index_select(0, flat), None)],
              {"original": ("fairseq main: make_positions (7 ops) + index_select of its table", "original"),
               "posenc": ("posenc.torch: make_positions (4 ops) + index_select of the exact table", "posenc"),
               "bound": ("index_select with the positions precomputed: the gather alone", "bound")},
              check=lambda: {"max_abs_diff": max_diff(mo(tok), mp(tok))})


def rotary_hf_path(B, prefill_tokens, decode_position, kind):
    """The drop-in path: the model's own code calls rotary_emb(x, position_ids) once per step and
    apply_rotary_pos_emb per layer; here one of each, HF's against posenc.torch's (both out of place)."""
    torch, pt, O = B.torch, B.pt, B.O
    cfg = O.original_configs()["llama3_1_8b"]
    ro, rp = O.LlamaRotaryEmbedding(cfg), pt.RotaryEmbedding(cfg)
    seq, first = (prefill_tokens, 0) if kind == "prefill" else (1, decode_position)
    qb, kb, _, _ = llama_qk(torch, seq)
    q, k = qb.transpose(1, 2), kb.transpose(1, 2)
    pos = torch.arange(first, first + seq).unsqueeze(0)

    def original():
        cos, sin = ro(q, pos)
        return O.apply_rotary_pos_emb(q, k, cos, sin)

    def posenc():
        cos, sin = rp(q, pos)
        return pt.apply_rotary_pos_emb(q, k, cos, sin)

    B.run("rope_hf/%s" % kind, "rope_hf", "HF path, Llama-3.1-8B %s: %d token%s at %d" % (kind, seq, "s" * (seq > 1),
                                                                                          first),
          {"batch": 1, "seq": seq, "q_heads": 32, "kv_heads": 8, "head_dim": 128, "first": first}, seq * 40 * 128,
          [("original", original, None), ("posenc", posenc, None)],
          {"original": ("HF LlamaRotaryEmbedding.forward + apply_rotary_pos_emb", "original"),
           "posenc": ("posenc.torch RotaryEmbedding.forward + apply_rotary_pos_emb (the same formula's bits, fewer "
                      "passes)", "posenc")},
          check=lambda: {"max_abs_diff_q": max_diff(original()[0], posenc()[0])}, inner="auto" if seq == 1 else None)


def rotary(B, prefill_tokens, decode_position, decode):
    torch, pt, O = B.torch, B.pt, B.O
    cfg = O.original_configs()["llama3_1_8b"]
    ro = O.LlamaRotaryEmbedding(cfg)
    rp = pt.RotaryEmbedding(cfg)
    shapes = [("decode", 1, decode_position)] if decode else [("prefill", prefill_tokens, 0)]
    for kind, seq, first in shapes:
        qb, kb, q, k, pos, restore, original = llama_rotation(B, ro, seq, first)

        with torch.no_grad():
            cos0, sin0 = ro(q, pos)

        def check():
            restore()
            want_q, want_k = original()
            rp.apply_rotary(q, k, pos)
            got = {"max_abs_diff_q": max_diff(q, want_q), "max_abs_diff_k": max_diff(k, want_k)}
            restore()
            return got

        shape = {"batch": 1, "seq": seq, "q_heads": 32, "kv_heads": 8, "head_dim": 128, "first": first}
        B.run("rope/%s" % kind, "rope", "RoPE, Llama-3.1-8B %s: %d token%s at %d" % (kind, seq, "s" * (seq > 1), first),
              shape, seq * 40 * 128,
              [("original", original, restore),
               ("original_apply", lambda: O.apply_rotary_pos_emb(q, k, cos0, sin0), restore),
               ("posenc", lambda: rp.apply_rotary(q, k, pos), restore),
               ("bound", lambda: (qb.mul_(1.0), kb.mul_(1.0)), restore)],
              {"original": ("HF LlamaRotaryEmbedding.forward + apply_rotary_pos_emb (new q, k)", "original"),
               "original_apply": ("HF apply_rotary_pos_emb alone, cos/sin precomputed (new q, k)", "original"),
               "posenc": ("posenc.torch RotaryEmbedding.apply_rotary (fused, in place)", "posenc"),
               "bound": ("q.mul_(1), k.mul_(1): q and k read and written once, in place", "bound")},
              check=check, note="q and k restored from a saved copy before every call of every variant, "
                                "outside the timed region")
        B.run("rope_cos_sin/%s" % kind, "rope_cos_sin", "RoPE cos/sin, Llama-3.1-8B %s: %d token%s at %d"
              % (kind, seq, "s" * (seq > 1), first), shape, seq * 128,
              [("original", lambda: ro(q, pos), None), ("posenc", lambda: rp(q, pos), None)],
              {"original": ("HF LlamaRotaryEmbedding.forward -> (cos, sin)", "original"),
               "posenc": ("posenc.torch RotaryEmbedding.forward -> (cos, sin)", "posenc")},
              check=lambda: {"max_abs_diff_cos": max_diff(ro(q, pos)[0], rp(q, pos)[0])},
              inner="auto" if seq == 1 else None)


def scaling_counts():
    """1, 2 and every CPU this process may run on (issue 26's scaling rows), without repeats."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return sorted({1, 2, cpus}) if cpus >= 2 else [1]


def scaling_cases(B, counts, table_shape, emb_shapes, vocab, prefill):
    """Issue 26: each case at torch.set_num_threads(t) for t in counts (posenc's calls follow torch's count), the
    original against posenc.torch, and posenc.torch held to one thread in the same rounds ("posenc_1")."""
    torch, pt, posenc, O = B.torch, B.pt, B.posenc, B.O

    def one_thread(fn):
        def call():
            posenc.set_num_threads(1)
            try:
                return fn()
            finally:
                posenc.set_num_threads(None)
        return call

    n, d = table_shape
    spec = posenc.Spec.vaswani(d)
    embs = []
    for batch, m, e in emb_shapes:
        mo = O.ScaledEmbeddingWithPE(vocab, e, max_len=m).eval()
        mp = pt.ScaledEmbeddingWithPE(vocab, e, max_len=m).eval()
        mp.embedding.weight.data.copy_(mo.embedding.weight.data)
        tok = torch.randint(0, vocab, (batch, m), generator=torch.Generator().manual_seed(batch * 1000 + m))
        embs.append(((batch, m, e), mo, mp, tok))
    cfg = O.original_configs()["llama3_1_8b"]
    ro, rp = O.LlamaRotaryEmbedding(cfg), pt.RotaryEmbedding(cfg)
    _, _, q, k, pos, restore, rope_original = llama_rotation(B, ro, prefill, 0)

    def rope_posenc():
        return rp.apply_rotary(q, k, pos)

    for t in counts:
        torch.set_num_threads(t)
        print("-- scaling: torch.set_num_threads(%d), posenc.get_num_threads() %d" % (t, posenc.get_num_threads()),
              flush=True)
        extra = t > 1
        table_posenc = lambda: pt.table(spec, n)  # noqa: E731
        B.run("scaling/table/%dx%d" % (n, d), "scaling", "table %d x %d" % (n, d), {"n": n, "d": d}, n * d,
              [("tutorial", lambda: O._tutorial_table(d, n), None), ("posenc", table_posenc, None)]
              + ([("posenc_1", one_thread(table_posenc), None)] if extra else []),
              {"tutorial": ("tutorial table", "original"), "posenc": ("posenc.torch.table", "posenc"),
               "posenc_1": ("posenc.torch.table, posenc held to 1 thread", "posenc-one")})
        for (batch, m, e), mo, mp, tok in embs:
            B.run("scaling/embed/%dx%dx%d" % (batch, m, e), "scaling", "embedding + PE, %d x %d tokens, d = %d"
                  % (batch, m, e), {"batch": batch, "n": m, "d": e, "vocab": vocab}, batch * m * e,
                  [("original", lambda: mo(tok), None), ("posenc", lambda: mp(tok), None)]
                  + ([("posenc_1", one_thread(lambda: mp(tok)), None)] if extra else []),
                  {"original": ("embedding(tok) * sqrt(d) + pe[:seq]", "original"),
                   "posenc": ("posenc.torch.ScaledEmbeddingWithPE", "posenc"),
                   "posenc_1": ("the same, posenc held to 1 thread", "posenc-one")})
        B.run("scaling/rope/prefill", "scaling", "RoPE, Llama-3.1-8B prefill: %d tokens, 32 q / 8 kv heads of 128"
              % prefill, {"batch": 1, "seq": prefill, "q_heads": 32, "kv_heads": 8, "head_dim": 128}, prefill * 40 * 128,
              [("original", rope_original, restore), ("posenc", rope_posenc, restore)]
              + ([("posenc_1", one_thread(rope_posenc), restore)] if extra else []),
              {"original": ("HF LlamaRotaryEmbedding.forward + apply_rotary_pos_emb", "original"),
               "posenc": ("posenc.torch RotaryEmbedding.apply_rotary (fused, in place)", "posenc"),
               "posenc_1": ("the same, posenc held to 1 thread", "posenc-one")},
              note="q and k restored from a saved copy before every call, outside the timed region")
    torch.set_num_threads(1)


def decode_steps(B, position):
    """A fairseq decode step (one row): the original indexes its table, posenc computes the row."""
    torch, pt, O = B.torch, B.pt, B.O
    d, steps = 512, min(position, 1000)
    mo = O.SinusoidalPositionalEmbedding(d, padding_idx=1, init_size=steps + 2)
    mp = pt.SinusoidalPositionalEmbedding(d, padding_idx=1, init_size=steps + 2)
    tokens = torch.full((1, steps), 5)
    state = {}
    B.run("fairseq_decode/%d" % steps, "decode", "fairseq SinusoidalPositionalEmbedding, incremental step %d, d = %d"
          % (steps, d), {"d": d, "step": steps}, d,
          [("original", lambda: mo(tokens, incremental_state=state), None),
           ("posenc", lambda: mp(tokens, incremental_state=state), None)],
          {"original": ("fairseq: row of the precomputed table", "original"),
           "posenc": ("posenc.torch: the row computed (posenc.torch.rows)", "posenc")},
          check=lambda: {"max_abs_diff": max_diff(mo(tokens, incremental_state=state),
                                                  mp(tokens, incremental_state=state))},
          inner="auto")


def overhead(B, position):
    """Per-call overhead at decode shapes: the Python call minus the kernel's own time per call, measured in the
    same rounds of the same process."""
    torch, pt, posenc, O = B.torch, B.pt, B.posenc, B.O
    _p = posenc._posenc
    rp = pt.RotaryEmbedding(O.original_configs()["llama3_1_8b"])
    rope = rp.rope
    qb, kb, _, _ = llama_qk(torch, 1)
    q, k = qb.transpose(1, 2), kb.transpose(1, 2)
    pos = torch.tensor([[position]])
    qn, kn, pn = q.numpy(), k.numpy(), pos.numpy()
    reps = 200 if B.plan.quick else 1000
    B.run("overhead/rope_decode", "overhead", "RoPE decode step, Llama-3.1-8B, 1 token at %d" % position,
          {"batch": 1, "seq": 1, "q_heads": 32, "kv_heads": 8, "head_dim": 128, "first": position}, None,
          [("function", lambda: pt.apply_rotary(q, k, pos, rope), None),
           ("module", lambda: rp.apply_rotary(q, k, pos), None),
           ("binding", lambda: _p.rope_qk(rope, q, k, positions=pos, heads_first=True), None),
           ("binding_numpy", lambda: _p.rope_qk(rope, qn, kn, positions=pn, heads_first=True), None),
           ("kernel", lambda: _p._repeat_rope_qk(rope, q, k, pos, True, reps), None, True)],
          {"function": ("posenc.torch.apply_rotary(q, k, position_ids, rope)", "posenc"),
           "module": ("posenc.torch RotaryEmbedding.apply_rotary(q, k, position_ids)", "posenc"),
           "binding": ("posenc._posenc.rope_qk on the tensors (no posenc.torch code)", "posenc-extra"),
           "binding_numpy": ("posenc._posenc.rope_qk on NumPy views of the same memory", "posenc-extra"),
           "kernel": ("the C call alone: _repeat_rope_qk, %d calls without Python in between, per call" % reps,
                      "kernel")},
          inner="auto",
          note="q and k (HF layout) of one token rotated again at every call: the values do not change the work")

    # one table row for one position (fairseq's incremental step), d = 512
    d, many = 512, 1024
    spec = posenc.Spec.vaswani(d)
    one = torch.tensor([position])
    out_one, out_many = torch.empty(1, d), torch.empty(many, d)
    one_np, out_one_np = one.numpy(), out_one.numpy()
    pos_many = torch.full((many,), position, dtype=torch.int64)
    kreps = 4 if B.plan.quick else 20

    def per_row_kernel():  # a lower bound of one row's kernel time: calls of `many` rows, divided
        t0 = time.perf_counter()
        for _ in range(kreps):
            _p.rows(spec, pos_many, out=out_many)
        return (time.perf_counter() - t0) / (kreps * many)

    B.run("overhead/rows_one", "overhead", "one table row, d = %d, position %d" % (d, position),
          {"d": d, "n": 1, "first": position}, None,
          [("function", lambda: pt.rows(spec, one), None),
           ("binding", lambda: _p.rows(spec, one, out=out_one), None),
           ("binding_numpy", lambda: _p.rows(spec, one_np, out=out_one_np), None),
           ("kernel", per_row_kernel, None, True)],
          {"function": ("posenc.torch.rows(spec, torch.tensor([p]))", "posenc"),
           "binding": ("posenc._posenc.rows(spec, tensor, out=) (no posenc.torch code)", "posenc-extra"),
           "binding_numpy": ("posenc._posenc.rows on NumPy arrays, out=", "posenc-extra"),
           "kernel": ("one row's kernel time estimated from calls of %d rows, divided (a lower bound)" % many,
                      "kernel")},
          inner="auto",
          note="the kernel time is per row of a %d-row call (the C call's fixed cost not counted), so the "
               "overhead derived from it is an upper bound" % many)


def timestep_cases(B, shapes, O_ts):
    """Issue 25: a batch of timestep embeddings, Stable Diffusion's UNet configuration (Timesteps(C, True, 0):
    cos | sin, D = C / 2), fractional float32 timesteps as a sampler passes them; the original is diffusers'
    get_timestep_embedding (python/tests/originals_timesteps.py)."""
    torch, pt, posenc = B.torch, B.pt, B.posenc
    for n, c in shapes:
        g = torch.Generator().manual_seed(n * 7 + c)
        t = torch.rand(n, generator=g) * 1000.0  # float32 in [0, 1000): DDIM / Euler steps, sigma-derived times
        spec = posenc.Spec.diffusers(c, True, 0.0)
        buf, t64 = torch.empty(n, c), t.double()
        B.run("timesteps/%dx%d" % (n, c), "timesteps", "timestep embedding, %d timesteps x %d channels" % (n, c),
              {"n": n, "channels": c}, n * c,
              [("original", lambda: O_ts.get_timestep_embedding(t, c, True, 0), None),
               ("posenc", lambda: pt.get_timestep_embedding(t, c, True, 0), None),
               ("posenc_out", lambda: posenc.timesteps(spec, t64, out=buf), None),
               ("bound", lambda: torch.empty(n, c).fill_(0.0), None)],
              {"original": ("diffusers get_timestep_embedding(t, C, flip_sin_to_cos=True, downscale_freq_shift=0)",
                            "original"),
               "posenc": ("posenc.torch.get_timestep_embedding (the float32 timesteps converted to float64)",
                          "posenc"),
               "posenc_out": ("posenc.timesteps(spec, float64 timesteps, out=) into a preallocated tensor",
                              "posenc-extra"),
               "bound": ("torch.empty(n, C).fill_(0): a new tensor, its bytes written, no arithmetic", "bound")},
              check=lambda: {"max_abs_diff": max_diff(pt.get_timestep_embedding(t, c, True, 0),
                                                      O_ts.get_timestep_embedding(t, c, True, 0))})


# ---- machine -------------------------------------------------------------------------------------------------

def _cpu():
    info = report_machine._cpuinfo()  # the C report's reading of /proc/cpuinfo
    model = info.get("model name") or info.get("CPU part") or platform.processor() or "unknown"
    if "cpu family" in info:
        model += " (family %s, model %s, stepping %s)" % (info["cpu family"], info.get("model"), info.get("stepping"))
    return model


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def _parallel_backend(torch):
    for line in torch.__config__.parallel_info().splitlines():
        if "parallel backend" in line:
            return line.split(":", 1)[1].strip()
    return None


def machine(torch, posenc, default_threads):
    import numpy
    return {
        "cpu": _cpu(), "cpus": os.cpu_count(), "kernel": platform.release(),
        "python": platform.python_version(), "torch": torch.__version__, "numpy": numpy.__version__,
        "torch_default_threads": default_threads, "torch_parallel": _parallel_backend(torch),
        "posenc": posenc.version(), "posenc_isa": posenc.isa_name(posenc.active_isa()),
        "posenc_isas": [posenc.isa_name(i) for i in posenc.available_isas()],
        "posenc_module": os.path.dirname(posenc.__file__),
        "glibc": platform.libc_ver()[1],
        "transparent_hugepage": _read("/sys/kernel/mm/transparent_hugepage/enabled"),
    }


def _libc():
    try:
        import ctypes
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
        return libc
    except (OSError, AttributeError):
        return None


LIBC = _libc()
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3


def allocator_reuse():
    """glibc told to keep every freed block for reuse: no fresh mapping, no first-touch page fault after the
    warm-up. What remains is the work itself (and what a caching allocator such as jemalloc or tcmalloc gives)."""
    return LIBC is not None and LIBC.mallopt(M_MMAP_THRESHOLD, 1 << 30) == 1 and \
        LIBC.mallopt(M_TRIM_THRESHOLD, 2 ** 31 - 1) == 1


def allocator_default():
    """glibc's steady state with its default configuration, set explicitly so that it does not depend on what the
    process did before: its dynamic mmap threshold rises to at most 32 MiB as blocks are freed, the trim
    threshold to twice that. A tensor of 32 MiB or more is then a fresh mapping (first-touch page faults), a
    smaller one reuses freed heap memory."""
    return LIBC is not None and LIBC.mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1 and \
        LIBC.mallopt(M_TRIM_THRESHOLD, 64 << 20) == 1


def load_avg():
    return [round(x, 2) for x in os.getloadavg()]


# ---- main ----------------------------------------------------------------------------------------------------

def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small shapes, few rounds (CI; under 30 s)")
    ap.add_argument("--out", required=True, help="the JSON file to write")
    ap.add_argument("--posenc-build", help="a meson build dir with -Dpython=enabled (else posenc from sys.path)")
    ap.add_argument("--originals", default=default_originals(),
                    help="the original PyTorch code (default: python/tests/originals.py of this tree, else "
                         "originals.py next to this script)")
    ap.add_argument("--no-default-run", action="store_true",
                    help="skip the second run with glibc malloc in its default steady state")
    ap.add_argument("--scaling-only", action="store_true",
                    help="only the scaling cases (issue 26: 1, 2 and every CPU's threads), with freed memory reused")
    ap.add_argument("--diffusion-only", action="store_true",
                    help="only issue 43's cases (apply_rotary_emb, HunyuanDiT's 2-D tables at 1 and 2 threads, "
                         "LTX-Video 704 x 480 x 161 once), with freed memory reused")
    ap.add_argument("--threads", type=int, help="also run the cases without a decode shape with this many torch "
                    "threads (default: torch's default thread count, when it is above 1)")
    args = ap.parse_args(argv)
    started = time.perf_counter()
    if args.posenc_build:
        use_build(args.posenc_build)

    import torch
    default_threads = torch.get_num_threads()
    import posenc
    import posenc.torch as pt
    O = load_originals(args.originals)
    O_ts = load_originals(os.path.join(os.path.dirname(os.path.abspath(args.originals)), "originals_timesteps.py"))
    # originals_vl imports originals by name: its folder on the path while it loads
    sys.path.insert(0, os.path.dirname(os.path.abspath(args.originals)))
    try:
        O_vl = load_originals(os.path.join(os.path.dirname(os.path.abspath(args.originals)), "originals_vl.py"))
        O_diff = load_originals(os.path.join(os.path.dirname(os.path.abspath(args.originals)),
                                             "originals_diffusers.py"))
    finally:
        sys.path.pop(0)
    plan = Plan(args.quick)
    data = {"schema": SCHEMA, "mode": "quick" if args.quick else "full",
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": " ".join([os.path.relpath(sys.argv[0], REPO) if sys.argv[0] else "bench_torch.py"] + argv),
            "load_avg_start": load_avg(), "machine": machine(torch, posenc, default_threads),
            "plan": {"min_rounds": plan.min_rounds, "max_rounds": plan.max_rounds, "budget_s": plan.budget,
                     "inner_target_s": plan.inner_target}, "cases": []}
    print("== Python: original PyTorch vs posenc.torch (%s; torch %s, posenc %s %s; load %s)"
          % (data["mode"], torch.__version__, posenc.version(), data["machine"]["posenc_isa"],
             " ".join("%.2f" % x for x in data["load_avg_start"])), flush=True)

    if args.quick:
        table_shapes, fwd_shapes, emb_shapes, vocab, prefill = [(256, 512)], [(128, 1, 512), (128, 2, 512)], \
            [(1, 256, 512), (2, 256, 512)], 1000, 64
        fairseq_shapes = [(2, 64)]
    else:
        table_shapes, fwd_shapes, emb_shapes, vocab, prefill = [(2048, 512), (8192, 1024)], \
            [(2048, 1, 512), (2048, 8, 512)], [(1, 2048, 512), (8, 2048, 512), (1, 8192, 1024)], 32000, 2048
        fairseq_shapes = [(8, 128), (8, 1024)]
    decode_position = 100000
    ts_shapes = [(1024, 320), (1024, 1280)]  # issue 25's batch, in both plans (milliseconds each)

    B = Bench(torch, pt, posenc, O, plan)

    B.O_vl = O_vl
    B.O_diff = O_diff
    reuse = allocator_reuse()
    B.alloc = "reuse" if reuse else "default"
    data["verdict_alloc"] = B.alloc
    data["alloc_runs"] = [B.alloc]
    scaling_shape = (table_shapes[-1], emb_shapes[1:], vocab, prefill)
    data["scaling_runs"] = scaling_counts()
    # torch's OpenMP threads spin after each parallel op (libgomp's default) unless this says PASSIVE: they then
    # hold the CPUs posenc's threads would use (docs/python.md, "Threads")
    data["omp_wait_policy"] = os.environ.get("OMP_WAIT_POLICY")
    if args.scaling_only:
        data["scaling_only"] = True
        data["thread_runs"], data["thread_note"] = [1], "scaling cases only (--scaling-only)"
        scaling_cases(B, data["scaling_runs"], *scaling_shape)
        torch.set_num_threads(default_threads)
        return finish(data, B, args.out, started)
    # issue 24: every module at 1 and 2 threads; torch's default when above 1, else 2 where there are 2 CPUs
    extra = args.threads if args.threads else (default_threads if default_threads > 1 else
                                               (2 if (os.cpu_count() or 1) >= 2 else None))
    data["thread_runs"] = [1] + ([extra] if extra and extra > 1 else [])
    data["thread_note"] = ("torch's default here is %d thread%s; %s" % (
        default_threads, "s" * (default_threads > 1),
        "the cases of big_cases ran again with %d threads" % extra if extra and extra > 1 else
        "one run (torch.set_num_threads(1)), which is also the default"))
    if args.diffusion_only:
        data["diffusion_only"] = True
        for threads in data["thread_runs"]:
            torch.set_num_threads(threads)
            diffusion_apply(B)
            hunyuandit_2d(B)
            if threads == 1:
                ltx_exact(B)
        torch.set_num_threads(default_threads)
        return finish(data, B, args.out, started)
    for threads in data["thread_runs"]:
        torch.set_num_threads(threads)
        print("-- torch.set_num_threads(%d), glibc malloc %s" % (threads, "reusing freed memory (mallopt)" if reuse
                                                                 else "as configured"), flush=True)
        big_cases(B, table_shapes, fwd_shapes, emb_shapes, vocab, prefill, fairseq_shapes, decode_position)
        timestep_cases(B, ts_shapes, O_ts)
        if threads == 1:
            ltx_exact(B)  # MPFR references: once
            rotary(B, prefill, decode_position, decode=True)
            decode_steps(B, decode_position)
            overhead(B, decode_position)
    scaling_cases(B, data["scaling_runs"], *scaling_shape)
    torch.set_num_threads(1)
    if reuse and not args.no_default_run and allocator_default():
        B.alloc = "default"
        data["alloc_runs"].append("default")
        print("-- torch.set_num_threads(1), glibc malloc in its default steady state (fresh mappings from 32 MiB)",
              flush=True)
        big_cases(B, table_shapes, fwd_shapes, emb_shapes, vocab, prefill, fairseq_shapes, decode_position)
        timestep_cases(B, ts_shapes, O_ts)
    torch.set_num_threads(default_threads)
    return finish(data, B, args.out, started)


def finish(data, B, out, started):
    """Writes the JSON; the exit status (1 when a case failed)."""
    data["cases"] = B.cases
    data["load_avg_end"] = load_avg()
    data["seconds"] = round(time.perf_counter() - started, 1)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        json.dump(data, f, indent=1)
    print("wrote %s (%d cases, %d failed, %.0f s; load %s)" % (out, len(B.cases), B.failed, data["seconds"],
                                                                " ".join("%.2f" % x for x in data["load_avg_end"])))
    return 1 if B.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
