"""posenc.rope_shift, the context shift (llama.cpp's KV-cache shift): cached keys rotated once more by a per-token
(per-axis) delta with attention scale 1.

- Bit for bit: the shift is posenc.h's rotation at the positions `delta` with attention scale 1 (MPFR's cos/sin,
  every path and format, one and several axes, every layout rope() takes, an int delta for every token).
- The bounds of rope_shift's docstring, checked per pair (x, y) on random keys: a rotation with float32 cos/sin
  and one rounding per element to a format of unit roundoff u is within E(m) |v| of the exact one, with
    h(m) = 2^(ceil(log2 m) - 25)   half an ulp of float32 values of magnitude up to m (2^-25 for m = 1),
    E(m) = sqrt(2) h(m) + sqrt(2) u (m + sqrt(2) h(m))      (E(1) = eps = 2^-24.5 + sqrt(2) u (1 + 2^-24.5)),
  plus, where an element underflows, sqrt(2) times half the format's smallest subnormal spacing (eta). Hence
    shift by d, then by -d:              |result - v| <= (2 + eps) eps |v| + 2 eta
    rotate at p (scale m), shift by d:   |result - rotate at p + d| <= (2 E(m) + eps (m + E(m))) |k| + 3 eta
  (k the unrotated pair; (3 + eps) eps |k| for m = 1). The measured ratios must use a good part of each bound.
"""
import math
import os

import numpy as np
import pytest

import posenc
import mpfr_ref as R
from helpers import assert_bits, bits
from test_rope_api import FMTS, data
from test_rope_axes import vl_positions

K = 2 ** 31
PAD = posenc.PAD
UNIT = {"f32": 2.0 ** -24, "bf16": 2.0 ** -8, "f16": 2.0 ** -11}
ETA = {"f32": 2.0 ** -150, "bf16": 2.0 ** -134, "f16": 2.0 ** -25}  # half the smallest subnormal


def keys(fmt, shape, seed):
    """Random keys: normal values, each token's scaled by 10^[-3, 3) (bf16 as uint16 bits)."""
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(shape) * 10.0 ** rng.uniform(-3, 3, shape[:1] + (1,) * (len(shape) - 1))
    if fmt == "f32":
        return v.astype(np.float32)
    return R.narrow_from_double(v, "bf16") if fmt == "bf16" else v.astype(np.float16)


def half_ulp_up_to(m):
    return 2.0 ** (math.ceil(math.log2(m)) - 25)


def rotation_error(m, fmt):
    """E(m): one rotation with attention scale m (cos/sin of values up to m), relative to |v|."""
    h, u = half_ulp_up_to(m), UNIT[fmt]
    return math.sqrt(2) * h + math.sqrt(2) * u * (m + math.sqrt(2) * h)


def pair_norms(x, pairs, r):
    """|(x, y)| of every pair of the first r elements: float64, shape x.shape[:-1] + (r/2,)."""
    h = r // 2
    ix, iy = (np.arange(h), np.arange(h) + h) if int(pairs) == 0 else (2 * np.arange(h), 2 * np.arange(h) + 1)
    return np.hypot(x[..., ix], x[..., iy])


def values(a, fmt):
    return R.widen(a.view(np.uint16) if fmt == "f16" else a, fmt).astype(np.float64)


def check_pairs(err, bound, what):
    """err <= bound, per pair (arrays of pair norms); returns the largest ratio."""
    ratio = err / np.where(bound > 0, bound, 1)
    worst = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
    assert (err <= bound).all(), f"{what}: {int((err > bound).sum())} pairs outside; worst {ratio[worst]:.3f} at {worst}"
    return float(ratio.max())


ROPES = {
    "llama r128": lambda: posenc.Rope(128, base=5e5),
    "interleaved r64 scale 0.25": lambda: posenc.Rope(64, "interleaved", position_scale=0.25),
    "yarn m 1.1386": lambda: posenc.Rope.qwen2(yarn=True),
    "m 0.7, explicit": lambda: posenc.Rope(40, freq=R.odd_frequencies(20, 9), attention_scale=0.7),
    "qwen2.5-vl 3 axes": lambda: posenc.rope_sections(posenc.Rope(128, base=1e6), [16, 24, 24]),
    "vision 2 axes interleaved": lambda: posenc.rope_sections(posenc.Rope(40, "gptj"), [10, 10], "vision"),
}


def positions(rope, seed, n, lo=0, hi=K):
    """Positions of n tokens for the rope's axes: (n,) or (A, n), PAD-free, in [lo, hi)."""
    rng = np.random.default_rng(seed)
    shape = (n,) if rope.axes == 1 else (rope.axes, n)
    return rng.integers(lo, hi, shape, dtype=np.int64)


@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("name", list(ROPES))
def test_shift_is_the_rotation_by_delta_with_scale_one(isa, name, fmt):
    rope = ROPES[name]()
    unit = rope.with_attention_scale(1.0)
    ref = R.AxesRef.of(unit)
    d = rope.rotary_dim + 2
    delta = positions(rope, 7, 30, -(K - 1), K)
    delta[..., 3] = 0
    if rope.axes == 1:
        delta[5] = PAD  # a padding token stays
    else:
        delta[0, 5] = PAD
    pos2 = delta if rope.axes > 1 else delta[None]
    x = data(fmt, (30, 2, d), 11 + FMTS.index(fmt))
    want = R.rotate_tokens_axes(x, pos2, ref, fmt)
    assert posenc.rope_shift(rope, x, delta) is x
    assert_bits(x, want, f"{name} {fmt}")
    # HF's cache layout [B, kv_heads, S, D], a delta per batch entry and token; an int delta for every token
    kv = data(fmt, (2, 2, 30, d), 12)
    db = np.stack([delta, positions(rope, 8, 30, -1000, 1000)], axis=-2)  # (B, S) or (A, B, S)
    want = np.stack([R.rotate_tokens_axes(kv[b].transpose(1, 0, 2), db[..., b, :] if rope.axes > 1 else
                                          db[b][None], ref, fmt).transpose(1, 0, 2) for b in range(2)])
    posenc.rope_shift(rope, kv, db, heads_first=True)
    assert_bits(kv, want, f"{name} {fmt} [B, H, S, D]")
    kv = data(fmt, (2, 2, 30, d), 13)
    want = np.stack([R.rotate_tokens_axes(kv[b].transpose(1, 0, 2), np.full((rope.axes, 30), -4096), ref,
                                          fmt).transpose(1, 0, 2) for b in range(2)])
    posenc.rope_shift(rope, kv, -4096, heads_first=True)
    assert_bits(kv, want, f"{name} {fmt} int delta")
    assert posenc.rope_shift(rope, kv[:, :, :0], 5, heads_first=True).shape == (2, 2, 0, d)


def test_shift_forces_attention_scale_one():
    rope = posenc.Rope.qwen2(yarn=True)
    assert rope.attention_scale > 1.1
    k = keys("f32", (8, 2, 128), 3)
    a, b, c = k.copy(), k.copy(), k.copy()
    posenc.rope_shift(rope, a, 77)
    posenc.rope(rope.with_attention_scale(1.0), b, positions=np.full(8, 77))
    posenc.rope(rope, c, positions=np.full(8, 77))
    assert_bits(a, b, "scale 1")
    assert not np.array_equal(bits(a), bits(c))
    ratio = np.linalg.norm(values(c, "f32")) / np.linalg.norm(values(a, "f32"))
    assert abs(ratio - rope.attention_scale) < 1e-6  # rotating with m again would scale the cached keys by m


@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("name", list(ROPES))
def test_shift_there_and_back(name, fmt):
    """Keys rotated at p, shifted by d and then by -d, are the keys rotated at p again within (2 + eps) eps |v|
    per pair (v the cached pair) + 2 eta."""
    rope = ROPES[name]()
    r, eps = rope.rotary_dim, rotation_error(1.0, fmt)
    n = 400
    k = keys(fmt, (n, 3, r), 21 + FMTS.index(fmt))
    posenc.rope(rope, k, positions=positions(rope, 1, n, -(K // 2), K // 2))  # the cached keys
    d = positions(rope, 2, n, -(K // 2) + 1, K // 2)
    back = k.copy()
    posenc.rope_shift(rope, back, d)
    assert not np.array_equal(bits(back), bits(k))
    posenc.rope_shift(rope, back, -d)
    v0, v1 = values(k, fmt), values(back, fmt)
    norm = pair_norms(v0, rope.pairs, r)
    err = pair_norms(v1 - v0, rope.pairs, r)
    ratio = check_pairs(err, (2 + eps) * eps * norm + 2 * ETA[fmt], f"{name} {fmt}")
    if os.environ.get("POSENC_TEST_RATIOS"):
        print(f"\n[shift there and back] {name} {fmt}: {ratio:.3f} of the bound")
    assert ratio > 0.3, f"{name} {fmt}: the bound is far from the data ({ratio:.3f})"


@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("name", list(ROPES))
def test_shift_equals_rotating_at_the_new_positions(name, fmt):
    """Rotating k at p (attention scale m) and shifting by d gives the rotation of k at p + d within
    (2 E(m) + eps (m + E(m))) |k| per pair + 3 eta: every axis by its own delta, positions up to 2^31 - 1."""
    rope = ROPES[name]()
    r, m = rope.rotary_dim, rope.attention_scale
    eps, em = rotation_error(1.0, fmt), rotation_error(m, fmt)
    n = 400
    k = keys(fmt, (n, 3, r), 31 + FMTS.index(fmt))
    p = positions(rope, 3, n, -(K // 2) + 1, K // 2)
    d = positions(rope, 4, n, -(K // 2) + 1, K // 2)
    p[..., :8] = np.abs(p[..., :8])
    d[..., :8] = (K - 1) - p[..., :8]  # to the end of the range
    shifted, direct = k.copy(), k.copy()
    posenc.rope(rope, shifted, positions=p)
    posenc.rope_shift(rope, shifted, d)
    posenc.rope(rope, direct, positions=p + d)
    norm = pair_norms(values(k, fmt), rope.pairs, r)
    err = pair_norms(values(shifted, fmt) - values(direct, fmt), rope.pairs, r)
    ratio = check_pairs(err, (2 * em + eps * (m + em)) * norm + 3 * ETA[fmt], f"{name} {fmt}")
    if os.environ.get("POSENC_TEST_RATIOS"):
        print(f"\n[shift vs direct] {name} {fmt}: {ratio:.3f} of the bound")
    assert ratio > 0.3, f"{name} {fmt}: the bound is far from the data ({ratio:.3f})"


def test_bound_constants():
    """The docstring's eps: 2^-24.5 + sqrt(2) u (1 + 2^-24.5)."""
    for fmt, u in UNIT.items():
        assert rotation_error(1.0, fmt) == pytest.approx(2 ** -24.5 + math.sqrt(2) * u * (1 + 2 ** -24.5), rel=1e-15)
    assert half_ulp_up_to(0.7) == 2 ** -25 and half_ulp_up_to(1.1386) == 2 ** -24 and half_ulp_up_to(1.0) == 2 ** -25


def test_shift_bad_input_leaves_keys_untouched():
    rope = posenc.rope_sections(posenc.Rope(8), [2, 2])
    k = data("f32", (2, 5, 1, 8), 1)
    before = k.copy()
    with pytest.raises(posenc.OutOfRange):
        posenc.rope_shift(rope, k, K)
    bad = np.zeros((2, 2, 5), np.int64)
    bad[1, 1, 4] = PAD  # PAD on axis 1
    with pytest.raises(posenc.OutOfRange):
        posenc.rope_shift(rope, k, bad)
    with pytest.raises(ValueError, match=r"positions: expected shape \(2, 5\)"):
        posenc.rope_shift(rope, k, np.zeros(5, np.int64))
    with pytest.raises(TypeError, match="delta: expected integers, got dtype float64"):
        posenc.rope_shift(rope, k, 2.0)
    with pytest.raises(ValueError, match="keys: head rows of 8 elements, shorter than rotary_dim 16"):
        posenc.rope_shift(posenc.Rope(16), k, 1)
    with pytest.raises(TypeError, match="keys: dtype float64"):
        posenc.rope_shift(rope, k.astype(np.float64), 1)
    assert_bits(k, before, "untouched")
