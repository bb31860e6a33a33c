"""The references themselves (mpfr_ref.py), before anything is compared with them: one correct rounding from the
high-precision value (never two), the 16-bit formats, fmaf, and a plausibility check of the rows."""
import math

import numpy as np
import pytest

import mpfr_ref as R
from mpfr_ref import gmpy2, mpfr

RNG = np.random.default_rng(20261)


def test_round_f32_equals_the_hardware_conversion_of_doubles():
    # a double converts to float32 with one rounding (nearest-even) in numpy: the same as round_f32 of it
    mant = RNG.integers(0, 1 << 52, 3000)
    exps = RNG.integers(-160, 40, 3000)
    vals = [math.ldexp(1.0 + float(m) / 2 ** 52, int(e)) * (-1) ** int(m & 1) for m, e in zip(mant, exps)]
    # exact float32 midpoints (ties) and subnormal midpoints
    vals += [1.0 + 2.0 ** -24, 1.0 + 3 * 2.0 ** -24, 2.0 ** -150, 3 * 2.0 ** -150, -(2.0 ** -150), 2.0 ** -149 * 1.5]
    for v in vals:
        with R.ctx(200):
            got = R.round_f32(mpfr(v))
        want = np.float32(v)
        assert got.view(np.uint32) == want.view(np.uint32), v


def test_round_f32_rounds_once_from_the_exact_value():
    with R.ctx(300):
        up = mpfr(1) + mpfr(2) ** -24 + mpfr(2) ** -80  # via double: 1 + 2^-24, a tie, then 1.0
        down = mpfr(1) + mpfr(2) ** -24 - mpfr(2) ** -80
        sub = mpfr(2) ** -150 + mpfr(2) ** -200  # just above half the smallest subnormal
        neg0 = -(mpfr(2) ** -151)
    assert R.round_f32(up) == np.float32(1 + 2.0 ** -23)
    assert float(up) == 1 + 2.0 ** -24  # the double rounding this avoids
    assert R.round_f32(down) == np.float32(1.0)
    assert R.round_f32(sub) == np.float32(2.0 ** -149)
    z = R.round_f32(neg0)
    assert z == 0 and np.signbit(z)


def test_round_f64_of_a_subnormal_and_a_tie():
    with R.ctx(300):
        assert R.round_f64(mpfr(2) ** -1075 * 3) == 2.0 ** -1073  # 1.5 ulps: tie to even (2 ulps)
        assert R.round_f64(mpfr(1) + mpfr(2) ** -53 + mpfr(2) ** -200) == 1 + 2.0 ** -52


def test_narrowing_from_float32_equals_numpy_float16_and_the_bf16_bit_rule():
    bits = RNG.integers(0, 1 << 32, 20000, dtype=np.uint64).astype(np.uint32)
    f = bits.view(np.float32)
    f = f[np.isfinite(f) & (np.abs(f) < 60000)]
    assert np.array_equal(R.narrow_from_f32(f, "f16"), f.astype(np.float16).view(np.uint16))
    b = f.view(np.uint32).astype(np.uint64)
    bf = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)  # nearest-even on the bits (finite values)
    assert np.array_equal(R.narrow_from_f32(f, "bf16"), bf)


def test_narrowing_from_double_is_one_rounding():
    v = 1.0 + 2.0 ** -8 + 2.0 ** -30  # through float32: 1 + 2^-8, a bf16 tie, rounds to 1.0
    assert R.narrow_from_double([v], "bf16")[0] == 0x3F81
    assert R.narrow_from_f32([np.float32(v)], "bf16")[0] == 0x3F80
    w = 1.0 + 2.0 ** -11 + 2.0 ** -40
    assert R.narrow_from_double([w], "f16")[0] == 0x3C01
    assert R.narrow_from_double([70000.0, -1e300, 65519.0, 65520.0], "f16").tolist() == [0x7C00, 0xFC00, 0x7BFF,
                                                                                         0x7C00]
    assert R.narrow_from_double([2.0 ** -25, 2.0 ** -25 * 1.0000001, -0.0], "f16").tolist() == [0, 1, 0x8000]


def test_fmaf_is_one_rounding_of_the_exact_value():
    n = 4000
    x = (RNG.standard_normal(n) * 2.0 ** RNG.integers(-30, 30, n)).astype(np.float32)
    y = RNG.standard_normal(n).astype(np.float32)
    for s in [np.float32(1.0), np.float32(22.627417), np.float32(-0.37), np.float32(3e-5)]:
        got = R.fmaf(s, x, y)
        for k in range(0, n, 7):
            with R.ctx(200):
                want = R.round_f32(mpfr(float(s)) * mpfr(float(x[k])) + mpfr(float(y[k])))
            assert got[k].view(np.uint32) == want.view(np.uint32), (s, x[k], y[k])
    # double sums on float32 midpoints: the exact values 1 + 2^-23 + 2^-24 - 2^-70 (below one) and
    # 1 + 2^-24 + 2^-70 (above another)
    s = np.float32(1 + 2.0 ** -23)
    xv = np.float32([2.0 ** -24 * (1 - 2.0 ** -23), -(2.0 ** -24) * (1 - 2.0 ** -23)])
    yv = np.float32([1 + 2.0 ** -23, 1 + 2.0 ** -23])
    twice = (np.float64(s) * xv.astype(np.float64) + yv).astype(np.float32)
    assert twice.tolist() == [np.float32(1 + 2.0 ** -22), np.float32(1.0)]  # rounding twice goes wrong here
    assert R.fmaf(s, xv, yv).tolist() == [np.float32(1 + 2.0 ** -23)] * 2


def test_fmaf_nan_rule():
    nan_payload = np.array([0x7FA00001], np.uint32).view(np.float32)  # signalling: quieted
    got = R.fmaf(np.float32(1.0), nan_payload, np.float32([0.5]))
    assert got.view(np.uint32)[0] == 0x7FE00001
    got = R.fmaf(np.float32(0.0), np.float32([np.inf]), np.float32([0.5]))
    assert got.view(np.uint32)[0] == 0x7FC00000


def test_rows_are_plausible_against_libm():
    ref = R.SpecRef(16)
    for p in (0, 1, 5, 1000, -77):
        row = ref.row(p)
        for i in range(8):
            a = p * 10000.0 ** (-i / 8)
            assert abs(float(row[2 * i]) - math.sin(a)) < 2e-7
            assert abs(float(row[2 * i + 1]) - math.cos(a)) < 2e-7
    assert np.array_equal(R.SpecRef(5).row(R.PAD), np.zeros(5, np.float32))
    assert R.SpecRef(5).row(3)[4] == 0.0  # odd d_model: the last element is 0


def test_rope_reference_is_plausible_against_libm():
    ref = R.RopeRef(8, 10000.0, 0.5, None, 1.25)
    for p in (0, 1, 33, -9):
        row = ref.row(p)
        for i in range(4):
            a = p * 0.5 * 10000.0 ** (-2 * i / 8)
            assert abs(float(row[i]) - 1.25 * math.cos(a)) < 3e-7
            assert abs(float(row[4 + i]) - 1.25 * math.sin(a)) < 3e-7


@pytest.mark.parametrize("fmt", ["f32", "bf16", "f16"])
def test_rotation_reference_matches_the_header_formula_in_scalar_code(fmt):
    # rotate_rows (vectorised) against the formula written out one pair at a time with MPFR sums
    rows = R.fill(fmt, 64, 99).reshape(4, 16)
    cs = R.RopeRef(8, 100.0, 1.0, None, 1.5).cache([1, 2, 3, 4])
    got = R.rotate_rows(rows, cs[:, :4], cs[:, 4:], 1, fmt)
    w = R.widen(rows, fmt)
    for t in range(4):
        for i in range(4):
            x, y, c, s = (float(w[t, 2 * i]), float(w[t, 2 * i + 1]), float(cs[t, i]), float(cs[t, 4 + i]))
            if not all(map(math.isfinite, (x, y))):
                continue
            with R.ctx(200):
                xr = R.round_f64(mpfr(x) * mpfr(c) - mpfr(y) * mpfr(s))
                yr = R.round_f64(mpfr(y) * mpfr(c) + mpfr(x) * mpfr(s))
            for e, v in ((2 * i, xr), (2 * i + 1, yr)):
                with np.errstate(over="ignore"):
                    want = np.float32(v).view(np.uint32) if fmt == "f32" else R.narrow_from_double([v], fmt)[0]
                have = got[t, e].view(np.uint32) if fmt == "f32" else got[t, e]
                assert have == want, (t, e)
        assert np.array_equal(got[t, 8:], rows[t, 8:])


def test_golden_generators_match_the_c_suite():
    # the first values of test_rope.cpp's splitmix (seed 0): the reference's golden inputs depend on them
    g = R.SplitMix(0)
    assert g() == 0xE220A8397B1DCDAF
    assert g() == 0x6E789E6AA1B965F4
    assert len(R.packed(8, 40)) == 40 and R.PAD in R.packed(8, 40)
    assert R.odd_frequencies(20, 5)[:3] == [1.0, 0.0, -0.25]
    assert gmpy2.mpfr_version().startswith("MPFR")
