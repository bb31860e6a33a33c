"""Shared helpers of the posenc.torch tests (test_torch_*.py); this module holds no tests itself.

The originals (originals.py) are compared with posenc.torch through bounds derived from the float32 error of
the original's own arithmetic, never through a tolerance picked by hand. The one idea behind all of them:

  every original forms the angle a32 = RN32(p * w32) in float32 (w32 its float32 frequency: exp/pow, then a
  float32 product), while posenc rounds sin/cos of the exact angle p * w once. sin and cos are 1-Lipschitz, so

    |original - exact| <= |a32 - p * w|  +  the original's sin/cos rounding (torch: <= 1 ulp)
    |posenc   - exact| <= 0.5 ulp

  and |a32 - p * w| is *computed* here for every element (a32 by the original's own float32 operations,
  p * w from an MPFR frequency, mpfr_ref.inv_freq / hf_*), so the bound is as tight as the original's own
  error at that position: at p < 2048 it is ~1e-4 for pairs with w near 1, 2^-24-ish for the slow pairs.
  The measured |posenc - original| reaches 0.99+ of it (the bound is tight, not a loose tolerance).

U = 2^-24 is float32's unit roundoff: ulp(v) <= U for |v| < 1 (2U for 1 <= |v| < 2), so one ulp of a sin/cos
value is at most U and half an ulp at most U/2.
"""
import math
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import mpfr_ref as R  # noqa: E402
import originals as O  # noqa: E402

U = 2.0 ** -24  # float32 unit roundoff
U_BF16 = 2.0 ** -8  # bfloat16: 8 significant bits
U_F16 = 2.0 ** -11  # binary16: 11 significant bits
UNIT = {torch.float32: U, torch.bfloat16: U_BF16, torch.float16: U_F16}
FMT = {torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16"}

# The long positions of the issue: float32 angles are off by ~1e-4 at 4096, ~1e-3..1e-2 at 131072, ~1e-2..1e-1
# at 2^20, and at 2^31 - 1 the position itself is no float32 (HF converts it to 2^31).
LONG = [4096, 131072, 2 ** 20, 2 ** 31 - 1]
# Floors under the original's worst error among the values at one such position (any config, d >= 24): the
# smallest measured with Debian's torch 1.13 divided by ~2 (linear x4 and DeepSeek have the smallest angles).
ORIGINAL_FLOOR = {4096: 1.0e-5, 131072: 4.0e-4, 2 ** 20: 3.0e-3, 2 ** 31 - 1: 1.0}


def f64(t):
    """A tensor's values as float64 NumPy (exact for float32, bfloat16, float16)."""
    return t.detach().to(torch.float64).numpy()


def bits(t):
    """Bit patterns of a float32 / bfloat16 / float16 tensor (uint32 or uint16 NumPy)."""
    t = t.detach().contiguous()
    if t.dtype == torch.float32:
        return t.view(torch.int32).numpy().view(np.uint32)
    return t.view(torch.int16).numpy().view(np.uint16)


def assert_bits(got, want, what=""):
    """got (a tensor) bit-for-bit equal to want (a tensor, or NumPy float32 values / uint16 bits)."""
    g = bits(got)
    w = bits(want) if isinstance(want, torch.Tensor) else np.asarray(want)
    if w.dtype == np.float32:
        w = w.view(np.uint32)
    assert g.shape == w.shape, f"{what}: shape {g.shape}, want {w.shape}"
    if not np.array_equal(g, w):
        idx = tuple(int(i) for i in np.argwhere(g != w)[0])
        raise AssertionError(f"{what}: {int(np.count_nonzero(g != w))} of {g.size} elements differ; first at {idx}: "
                             f"got 0x{int(g[idx]):x}, want 0x{int(w[idx]):x}")


def assert_within(got, want, tol, what=""):
    """|got - want| <= tol element-wise (float64 arithmetic); the message names the worst element."""
    g, w = np.asarray(got, np.float64), np.asarray(want, np.float64)
    tol = np.broadcast_to(np.asarray(tol, np.float64), g.shape)
    err = np.abs(g - w)
    bad = ~(err <= tol)
    if bad.any():
        ratio = np.where(tol > 0, err / np.where(tol > 0, tol, 1), np.inf)
        idx = tuple(int(i) for i in np.unravel_index(int(np.nanargmax(np.where(bad, ratio, -1))), g.shape))
        raise AssertionError(f"{what}: {int(bad.sum())} of {g.size} elements outside the bound; worst at {idx}: "
                             f"got {g[idx]!r}, want {w[idx]!r}, |diff| {err[idx]:.3g} > bound {tol[idx]:.3g}")
    ratio = float(np.max(err / np.where(tol > 0, tol, np.inf))) if err.size else 0.0
    if os.environ.get("POSENC_TEST_RATIOS"):  # how much of each bound the data uses (for tuning reports)
        top = float(err.max()) if err.size else 0.0
        print(f"\n[bound] {what}: max |diff| / bound = {ratio:.3f}, max |diff| = {top:.3g}")
    return ratio


def spacing32(v):
    """ulp of float32 values (|v|), float64."""
    return np.spacing(np.abs(np.asarray(v, np.float64)).astype(np.float32)).astype(np.float64)


# ---- exact frequencies (MPFR, independent of posenc) -----------------------------------------------------------

def vaswani_w(d):
    """w_i = 10000^(-2i/d), i < d/2, as the nearest doubles (the tutorial / stacked / LSPE tables)."""
    return np.array([float(R.inv_freq(10000.0, d, i)) for i in range(d // 2)])


def fairseq_w(dim):
    """fairseq: w_k = 10000^(-k/(h-1)), h = dim // 2."""
    h = dim // 2
    return np.array([float(R.inv_freq(10000.0, 2 * (h - 1), k)) for k in range(h)])


def angle_error(a32, positions, w):
    """|a32 - p * w| per element: the original's float32 angle against the exact one (p * w in double: its
    own error, <= 2^-52 p w, is below 1e-12 at the positions where this is used, and added)."""
    p = np.asarray(positions, np.float64)[..., None]
    exact = p * np.asarray(w, np.float64)
    return np.abs(np.asarray(a32, np.float64) - exact) + 1e-12


# ---- the originals' float32 angles and rows, at any positions --------------------------------------------------
# The originals build whole tables (rows 0 .. n-1); their rows are independent, so the same torch operations
# applied to chosen positions give the same rows without building a table of 2^31 rows. test_torch_modules
# checks these helpers bit-for-bit against the originals' own tables.

def tutorial_angles(positions, d):
    """originals.PositionalEncoding's position * div_term (int64 positions times the float32 exp)."""
    position = torch.as_tensor(positions, dtype=torch.int64).reshape(-1, 1)
    div_term = torch.exp(torch.arange(0, d, 2) * (-math.log(10000.0) / d))
    return position * div_term


def tutorial_rows(positions, d):
    a = tutorial_angles(positions, d)
    pe = torch.zeros(a.shape[0], d)
    pe[:, 0::2] = torch.sin(a)
    pe[:, 1::2] = torch.cos(a)
    return pe, a


def fairseq_rows(positions, dim):
    """originals.SinusoidalPositionalEmbedding.get_embedding's rows at the given positions (no padding row)."""
    half_dim = dim // 2
    step = math.log(10000) / (half_dim - 1)
    freq = torch.exp(torch.arange(half_dim, dtype=torch.float) * -step)
    ang = torch.as_tensor(positions, dtype=torch.int64).to(torch.float).reshape(-1, 1) * freq.unsqueeze(0)
    emb = torch.cat([torch.sin(ang), torch.cos(ang)], dim=1)
    if dim % 2 == 1:
        emb = torch.cat([emb, torch.zeros(emb.shape[0], 1)], dim=1)
    return emb, ang


def stacked_rows(positions, d, base=10000.0):
    """originals.stacked_sincos_table's rows at the given positions."""
    pos = torch.as_tensor(positions, dtype=torch.int64).to(torch.float32).reshape(-1, 1)
    inv = 1.0 / torch.pow(base, torch.arange(0, d, 2, dtype=torch.float32) / d)
    ang = pos * inv
    return torch.stack([torch.sin(ang), torch.cos(ang)], dim=-1).flatten(-2), ang


def interleave(per_pair):
    """[n, h] per-pair values to the [n, 2h] interleaved columns (sin, cos of pair i at 2i, 2i+1)."""
    per_pair = np.asarray(per_pair)
    return np.repeat(per_pair, 2, axis=-1)


def halves(per_pair, dim):
    """[n, h] per-pair values to fairseq's [n, dim] columns (sin | cos | a zero column for odd dim)."""
    per_pair = np.asarray(per_pair)
    out = np.concatenate([per_pair, per_pair], axis=-1)
    if dim % 2:
        out = np.concatenate([out, np.zeros(out.shape[:-1] + (1,))], axis=-1)
    return out


def torch_sincos_error():
    """The largest |torch.sin(x) - sin(x)|, |torch.cos(x) - cos(x)| of this torch's float32 functions (the
    original's sin/cos rounding), measured over float32 arguments: 2e6 from 0 to 3000 (the tables' and the
    rotaries' angles below position 2048) and 1e6 uniform below 2^31 (long positions), against NumPy's float64
    sin/cos of the same float32 values; at least U (one ulp below 1). torch 1.13 (bookworm): 1 ulp, U; torch
    2.14 (Debian unstable): 2.4 ulps, about 2U, so a bound that assumed 1 ulp failed there."""
    g = torch.Generator().manual_seed(11)
    x = torch.cat((torch.linspace(0, 3000, 2_000_001, dtype=torch.float32),
                   torch.rand(1_000_000, generator=g, dtype=torch.float64).mul(2.0 ** 31).float()))
    xd = x.double().numpy()
    err = U
    for f, ref in ((torch.sin, np.sin), (torch.cos, np.cos)):
        err = max(err, float(np.max(np.abs(f(x).double().numpy() - ref(xd)))))
    return err


SINCOS = torch_sincos_error()

# The bound of a table value (sin or cos of one pair) against the original: the angle error, plus the
# original's sin/cos rounding (SINCOS, measured), plus posenc's half ulp (<= U/2).
TABLE_ROUNDING = SINCOS + 0.5 * U


# ---- RoPE: exact references of HF configs (mpfr_ref's HF formulas, independent of posenc) -----------------------

def scaling(cfg):
    rs = cfg.get("rope_scaling")
    return dict(rs) if isinstance(rs, dict) else {}


def rope_type(cfg):
    t = scaling(cfg).get("rope_type", scaling(cfg).get("type")) or "default"
    return "longrope" if t == "su" else t


def rotary_dim(cfg):
    head = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    return int(head * (cfg.get("partial_rotary_factor") or 1.0))


def head_dim(cfg):
    return cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]


_REF_CACHE = {}


def ref_rope(name, seq_len=None):
    """mpfr_ref.RopeRef of original_configs()[name] at the current length seq_len (dynamic: the NTK base for
    max(seq_len, max_position_embeddings); longrope: the long factors when seq_len > the original length),
    from mpfr_ref's real-arithmetic HF formulas: frequencies and attention factor are the nearest doubles of
    the real values (default: base^(-2i/r) itself). Memoised."""
    cfg = O.original_configs()[name]
    kind = rope_type(cfg)
    key = (name, seq_len if kind in ("dynamic", "longrope") else None)
    if kind == "longrope":
        orig = cfg.get("original_max_position_embeddings") or scaling(cfg).get("original_max_position_embeddings")
        key = (name, bool(seq_len and seq_len > orig))
    if key in _REF_CACHE:
        return _REF_CACHE[key]
    rs = scaling(cfg)
    base = float(cfg["rope_theta"])
    r = rotary_dim(cfg)
    maxpos = cfg["max_position_embeddings"]
    att = 1.0
    if kind == "default":
        freq = None
    elif kind == "linear":
        freq = R.nearest_doubles(R.hf_linear(base, r, rs["factor"]))
    elif kind == "dynamic":
        freq = R.nearest_doubles(R.hf_dynamic(base, r, rs["factor"], maxpos, seq_len or maxpos))
    elif kind == "yarn":
        f, a = R.hf_yarn(base, r, rs["factor"], rs.get("original_max_position_embeddings") or maxpos,
                         rs.get("beta_fast") or 0.0, rs.get("beta_slow") or 0.0, rs.get("mscale") or 0.0,
                         rs.get("mscale_all_dim") or 0.0, rs.get("truncate", True))
        freq, att = R.nearest_doubles(f), R.round_f64(a)
    elif kind == "llama3":
        freq = R.nearest_doubles(R.hf_llama3(base, r, rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"],
                                             rs["original_max_position_embeddings"]))
    elif kind == "longrope":
        orig = cfg["original_max_position_embeddings"]
        ext = rs["long_factor"] if key[1] else rs["short_factor"]
        f, a = R.hf_longrope(base, r, ext, maxpos / orig, orig)
        freq, att = R.nearest_doubles(f), R.round_f64(a)
    else:
        raise AssertionError(kind)
    ref = R.RopeRef(r, base, 1.0, freq, att)
    ref.w = np.array([float(v) for v in ref.f])  # the frequencies as doubles, for the angle errors
    _REF_CACHE[key] = ref
    return ref


def exact_cos_sin(ref, positions):
    """Correctly rounded (m cos, m sin) of a RopeRef at positions [n] -> two float32 arrays [n, h]."""
    c = ref.cache(list(positions))
    return c[:, : ref.h], c[:, ref.h:]


def hf_angles(inv_freq, positions):
    """HF's float32 angle RN32(float32(p) * inv_freq): the product of two float32 values is exact in double,
    then one rounding to float32, as the batched matmul with inner dimension 1 does (checked against HF's own
    freqs in test_torch_rotary)."""
    p32 = np.asarray(positions, np.int64).astype(np.float32).astype(np.float64)
    return (p32[..., None] * np.asarray(inv_freq, np.float32).astype(np.float64)).astype(np.float32)


def hf_cos_sin_bound(orig_module, ref, positions):
    """The per-element bound of |posenc cos/sin - HF cos/sin| (float32) at positions [n]: m |a32 - p w| (the
    angle error scaled by the attention factor m) + m SINCOS + (m + 2) U: HF's cos rounding (SINCOS, measured,
    times m), m itself rounded to float32 (m U), the product by m rounded (half an ulp of a value below 2: U),
    posenc's half ulp (U)."""
    m = float(ref.m)
    a32 = hf_angles(orig_module.inv_freq.numpy(), positions)
    da = angle_error(a32, positions, ref.w)
    return m * da + m * SINCOS + (m + 2) * U


def rotation_bound(x, y, c_o, s_o, c_e, s_e, u):
    """|posenc's rotation - HF's apply_rotary_pos_emb| for one pair (x, y) (float64 arrays, broadcast): HF
    computes RN(RN(x c_o) + RN(-y s_o)) (and y c_o + x s_o) in a format of unit roundoff u with its cos/sin
    c_o, s_o; posenc rounds x c_e - y s_e once (c_e, s_e the exact float32 cos/sin). So
      |diff| <= |x| |c_o - c_e| + |y| |s_o - s_e|   (the cos/sin difference, measured)
              + 3u (|x| |c_o| + |y| |s_o|)          (HF's two products and the sum)
              + u (|x| |c_e| + |y| |s_e|)           (posenc's one rounding)
    for the first output of the pair; the second swaps the roles of x and y."""
    ax, ay = np.abs(x), np.abs(y)
    dc, ds = np.abs(c_o - c_e), np.abs(s_o - s_e)
    co, so, ce, se = np.abs(c_o), np.abs(s_o), np.abs(c_e), np.abs(s_e)
    first = ax * dc + ay * ds + 3 * u * (ax * co + ay * so) + u * (ax * ce + ay * se)
    second = ay * dc + ax * ds + 3 * u * (ay * co + ax * so) + u * (ay * ce + ax * se)
    return first, second
