"""Real-valued RoPE positions through the binding (posenc.h, "RoPE at real-valued positions"): floating positions
in rope_cache, rope and rope_qk take the C _real calls. Each value is the correctly rounded float32 of the exact
angle at the position as given (gmpy2 reference, mpfr_ref.RopeRef, not the library); integer-valued floating
positions give the integer call's bytes; shapes as for integer positions; bad values raise the C status."""
import numpy as np
import pytest

import posenc
import mpfr_ref as R


def reference_cache(rope, t):
    """(cos, sin) [n, r/2] for real positions t [A, n] (pair i at its axis's position)."""
    ref = R.RopeRef.of(rope)
    t = np.asarray(t, dtype=np.float64).reshape(rope.axes, -1)
    h = rope.rotary_dim // 2
    axis = list(rope.axis) if rope.axes > 1 else [0] * h
    cos = np.zeros((t.shape[1], h), np.float32)
    sin = np.zeros((t.shape[1], h), np.float32)
    for k in range(t.shape[1]):
        for i in range(h):
            cos[k, i], sin[k, i] = ref.pair(i, float(t[axis[i], k]))
    return cos, sin


def bits(a):
    return np.ascontiguousarray(a).view(np.uint32 if a.dtype == np.float32 else np.uint16)


def test_cache_exact_at_real_positions():
    specs = [posenc.Rope(64), posenc.Rope(32, base=5e5, attention_scale=1.369, position_scale=0.25),
             posenc.rope_sections(posenc.Rope(128, pairs="interleaved"), [8, 28, 28], "per_axis")]
    rng = np.random.default_rng(3)
    for rope in specs:
        n = 17
        t = np.concatenate([[0.0, 0.5, -0.5, 1e-5, 2147483647.5, -1e6 - 0.25],
                            rng.uniform(-5000, 5000, n - 6)])
        t = np.tile(t, rope.axes) if rope.axes > 1 else t
        if rope.axes > 1:
            t = t.reshape(rope.axes, n) + np.arange(rope.axes)[:, None] * 0.125
        cos, sin = posenc.rope_cache(rope, positions=t)
        ec, es = reference_cache(rope, t)
        assert np.array_equal(bits(cos), bits(ec)) and np.array_equal(bits(sin), bits(es))


def test_float32_positions_are_taken_exactly():
    rope = posenc.Rope(16)
    t32 = np.array([0.1, 1.7, 3.3, 1000.9], dtype=np.float32)
    cos, sin = posenc.rope_cache(rope, positions=t32)
    ec, es = reference_cache(rope, t32.astype(np.float64))  # the float32 values, exactly
    assert np.array_equal(bits(cos), bits(ec)) and np.array_equal(bits(sin), bits(es))


def test_integer_valued_real_positions_give_the_integer_bytes():
    rope = posenc.rope_sections(posenc.Rope(64, base=1e6), [8, 12, 12], "chunked")
    p = np.array([[0, 1, 2, 3, 3, 9], [0, 1, 2, 5, 5, 9], [0, 1, 2, 4, 6, 9]], dtype=np.int64)
    ci, si = posenc.rope_cache(rope, positions=p)
    cr, sr = posenc.rope_cache(rope, positions=p.astype(np.float64))
    assert np.array_equal(bits(ci), bits(cr)) and np.array_equal(bits(si), bits(sr))
    rng = np.random.default_rng(1)
    q0 = rng.standard_normal((2, 4, 6, 64)).astype(np.float32)  # [batch, heads, seq, dim]
    k0 = rng.standard_normal((2, 2, 6, 64)).astype(np.float32)
    for dtype in (np.float32, np.float16):
        qi, ki = q0.astype(dtype), k0.astype(dtype)
        qr, kr = qi.copy(), ki.copy()
        posenc.rope_qk(rope, qi, ki, positions=p, heads_first=True)
        posenc.rope_qk(rope, qr, kr, positions=p.astype(dtype), heads_first=True)
        assert np.array_equal(bits(qi), bits(qr)) and np.array_equal(bits(ki), bits(kr))
        # (A, batch, n): one row per batch entry
        per = np.stack([p, p + 1], axis=1)
        qi, qr = q0.astype(dtype), q0.astype(dtype)
        posenc.rope(rope, qi, positions=per, heads_first=True)
        posenc.rope(rope, qr, positions=per.astype(np.float64), heads_first=True)
        assert np.array_equal(bits(qi), bits(qr))


def test_rotation_at_real_positions_is_the_formula_on_the_exact_cache():
    rope = posenc.Rope(32, pairs="interleaved", attention_scale=0.7)
    t = np.array([0.5, 2.25, -7.125, 100.0625])
    cos, sin = reference_cache(rope, t)
    x = np.random.default_rng(2).standard_normal((4, 3, 40)).astype(np.float32)
    got = posenc.rope(rope, x.copy(), positions=t)
    want = x.copy()
    xe, ye = x[..., 0:32:2].astype(np.float64), x[..., 1:32:2].astype(np.float64)
    c, s = cos[:, None, :].astype(np.float64), sin[:, None, :].astype(np.float64)
    want[..., 0:32:2] = (xe * c - ye * s).astype(np.float32)  # products exact in double, one rounding each
    want[..., 1:32:2] = (ye * c + xe * s).astype(np.float32)
    assert np.array_equal(bits(got), bits(want))


def test_torch_tensors_of_real_positions():
    torch = pytest.importorskip("torch")
    rope = posenc.Rope(32)
    t = torch.tensor([0.5, 1.0, 2.75], dtype=torch.float64)
    cos, sin = posenc.rope_cache(rope, positions=t)
    ec, es = reference_cache(rope, t.numpy())
    assert np.array_equal(bits(np.asarray(cos)), bits(ec))
    q = torch.randn(3, 2, 32)
    q2 = q.clone()
    posenc.rope(rope, q, positions=t)
    posenc.rope(rope, q2, positions=t.float())  # float32 positions: the same values here (exact in float32)
    assert torch.equal(q, q2)


def test_bad_real_positions_raise_the_c_status_and_write_nothing():
    rope = posenc.Rope(16)
    x = np.ones((3, 16), np.float32)
    for bad in (np.array([0.5, np.nan, 1.0]), np.array([0.5, np.inf, 1.0]), np.array([2.0 ** 31, 0.0, 1.0])):
        with pytest.raises(posenc.OutOfRange):
            posenc.rope(rope, x, positions=bad)
        assert (x == 1).all()
    big = posenc.Rope(16, position_scale=2.0 ** 52)
    with pytest.raises(posenc.InvalidArgument):
        posenc.rope_cache(big, positions=np.array([0.5]))
    posenc.rope_cache(big, positions=np.array([1]))  # integer positions keep the 2^1000 bound
    with pytest.raises(ValueError, match="positions"):
        posenc.rope(rope, x, positions=np.zeros(4))
