"""posenc.add, posenc.embed (float32 / bfloat16 / float16 tables) and posenc.embed_learned bit for bit against
fmaf(scale, x, PE) with MPFR's PE rows, on every SIMD path; batches, shared and per-row positions, in-place
calls, seq-first views, strided tables and outputs, torch tensors; the NaN rule of posenc.h."""
import numpy as np
import pytest

import posenc
import mpfr_ref as R
from helpers import assert_bits, bits, sentinel

K = 2 ** 31
PAD = posenc.PAD
RNG = np.random.default_rng(7)

SPECS = {
    "vaswani64": posenc.Spec(64),
    "halves33": posenc.Spec(33, "sin_cos_halves", base=1e6),
    "cos_sin130": posenc.Spec(130, "cos_sin_halves", freq_denominator=64.0),
}
_REFS = {}


def ref_of(name):
    if name not in _REFS:
        _REFS[name] = R.SpecRef.of(SPECS[name])
    return _REFS[name]


SCALES = [1.0, 22.627417, -0.5]
POS = [0, 5, PAD, K - 1, -(K - 1), 77777, 77777, -3, 1 << 20, 12]  # n = 10


def rnd(shape):
    return (RNG.standard_normal(shape) * 4).astype(np.float32)


@pytest.mark.parametrize("name", list(SPECS))
def test_add_rows_runs_and_explicit_positions(isa, name):
    spec, ref = SPECS[name], ref_of(name)
    d = spec.d_model
    x = rnd((10, d))
    x0 = x.copy()
    for scale in SCALES:
        got = posenc.add(spec, x, first=-4, scale=scale)
        assert_bits(got, R.fmaf(scale, x, ref.table(-4, 10)), f"{name} run, scale {scale}")
        got = posenc.add(spec, x, positions=POS, scale=scale)
        assert_bits(got, R.fmaf(scale, x, ref.rows(POS)), f"{name} positions, scale {scale}")
    assert_bits(x, x0, "x is not written unless out is x")


def test_add_batches_shared_and_per_row_positions(isa):
    spec, ref = SPECS["halves33"], ref_of("halves33")
    x = rnd((3, 10, 33))
    got = posenc.add(spec, x, first=K - 10, scale=2.0)
    assert_bits(got, R.fmaf(2.0, x, ref.table(K - 10, 10)[None]), "batch, run")
    got = posenc.add(spec, x, positions=POS)
    assert_bits(got, R.fmaf(1.0, x, ref.rows(POS)[None]), "batch, shared positions")
    per = np.array([POS, POS[::-1], [PAD] * 10], np.int64)
    got = posenc.add(spec, x, positions=per, scale=-0.5)
    want = R.fmaf(-0.5, x, np.stack([ref.rows(p) for p in per]))
    assert_bits(got, want, "batch, per-row positions")


def test_add_in_place_seq_first_and_strided_out(isa):
    spec, ref = SPECS["vaswani64"], ref_of("vaswani64")
    # the PyTorch tutorial's [seq, batch, d]: x.transpose(1, 0, 2) is [batch, seq, d] with strides
    seq_first = rnd((10, 4, 64))
    want = R.fmaf(1.0, seq_first, ref.table(0, 10)[:, None, :])
    got = posenc.add(spec, seq_first.transpose(1, 0, 2))
    assert_bits(got, want.transpose(1, 0, 2), "seq-first input")
    xs = seq_first.copy()
    res = posenc.add(spec, xs.transpose(1, 0, 2), out=xs.transpose(1, 0, 2))  # in place through the view
    assert res.base is xs or np.shares_memory(res, xs)
    assert_bits(xs, want, "seq-first in place")
    x = rnd((10, 64))
    x1 = x.copy()
    assert posenc.add(spec, x1, positions=POS, scale=3.0, out=x1) is x1
    assert_bits(x1, R.fmaf(3.0, x, ref.rows(POS)), "in place")
    buf = sentinel((10, 80), np.float32)
    out = buf[:, 7:71]
    assert posenc.add(spec, x, positions=POS, out=out) is out
    assert_bits(out, R.fmaf(1.0, x, ref.rows(POS)), "strided out")
    assert (bits(buf[:, :7]) == 0x7FBADBAD).all() and (bits(buf[:, 71:]) == 0x7FBADBAD).all()
    wide = sentinel((10, 90), np.float32)
    wide[:, 3:67] = x  # x itself a column slice of a wider buffer
    assert_bits(posenc.add(spec, wide[:, 3:67], positions=POS), R.fmaf(1.0, x, ref.rows(POS)), "strided x")


def test_add_torch_tensors(isa):
    torch = pytest.importorskip("torch")
    spec, ref = SPECS["vaswani64"], ref_of("vaswani64")
    x = rnd((2, 10, 64))
    xt = torch.from_numpy(x.copy())
    out = torch.empty(2, 10, 64)
    assert posenc.add(spec, xt, positions=torch.tensor(POS), scale=8.0, out=out) is out
    assert_bits(out, R.fmaf(8.0, x, ref.rows(POS)[None]), "torch out")
    res = posenc.add(spec, xt, first=3)
    assert isinstance(res, np.ndarray)  # a new array is NumPy's
    assert_bits(res, R.fmaf(1.0, x, ref.table(3, 10)[None]), "torch x")
    seq_first = torch.from_numpy(rnd((10, 2, 64)))
    want = R.fmaf(1.0, seq_first.numpy(), ref.table(0, 10)[:, None, :])
    posenc.add(spec, seq_first.transpose(0, 1), out=seq_first.transpose(0, 1))
    assert_bits(seq_first, want, "torch seq-first in place")


def table_of(fmt, vocab, d):
    if fmt == "f32":
        return rnd((vocab, d))
    if fmt == "bf16":
        return R.narrow_from_f32(rnd((vocab, d)), "bf16")
    return rnd((vocab, d)).astype(np.float16)


@pytest.mark.parametrize("fmt", ["f32", "bf16", "f16"])
@pytest.mark.parametrize("name", list(SPECS))
def test_embed_against_fmaf_of_the_widened_table(isa, name, fmt):
    spec, ref = SPECS[name], ref_of(name)
    d = spec.d_model
    table = table_of(fmt, 50, d)
    tab32 = R.widen(table, fmt)
    tokens = RNG.integers(0, 50, 10)
    for scale in SCALES:
        got = posenc.embed(spec, table, tokens, first=K - 10, scale=scale)
        assert got.dtype == np.float32 and got.shape == (10, d)
        assert_bits(got, R.fmaf(scale, tab32[tokens], ref.table(K - 10, 10)), f"{fmt} run, scale {scale}")
        got = posenc.embed(spec, table, tokens.tolist(), positions=POS, scale=scale)
        assert_bits(got, R.fmaf(scale, tab32[tokens], ref.rows(POS)), f"{fmt} positions, scale {scale}")


def test_embed_batches_strided_table_and_out(isa):
    spec, ref = SPECS["halves33"], ref_of("halves33")
    wide = rnd((40, 50))
    table = wide[:, 4:37]  # rows of stride 50
    tokens = RNG.integers(0, 40, (3, 10)).astype(np.int32)
    per = np.array([POS, POS[::-1], list(range(10))], np.int64)
    got = posenc.embed(spec, table, tokens, positions=per, scale=5.0)
    assert got.shape == (3, 10, 33)
    assert_bits(got, R.fmaf(5.0, table[tokens], np.stack([ref.rows(p) for p in per])), "batch per-row")
    got = posenc.embed(spec, table, tokens, positions=POS)
    assert_bits(got, R.fmaf(1.0, table[tokens], ref.rows(POS)[None]), "batch shared")
    buf = sentinel((3, 12, 40), np.float32)
    out = buf[:, 1:11, 2:35]
    assert posenc.embed(spec, table, tokens, first=-5, out=out) is out
    assert_bits(out, R.fmaf(1.0, table[tokens], ref.table(-5, 10)[None]), "batch strided out")
    mask = np.ones(buf.shape, bool)
    mask[:, 1:11, 2:35] = False
    assert (bits(buf)[mask] == 0x7FBADBAD).all()


def test_embed_torch_tables(isa):
    torch = pytest.importorskip("torch")
    spec, ref = SPECS["vaswani64"], ref_of("vaswani64")
    tokens = RNG.integers(0, 30, 10)
    for tdt, fmt in ((torch.float32, "f32"), (torch.bfloat16, "bf16"), (torch.float16, "f16")):
        t = torch.randn(30, 64).to(tdt)
        tab32 = t.float().numpy()  # the exact widening
        out = torch.empty(10, 64)
        res = posenc.embed(spec, t, torch.tensor(tokens), positions=torch.tensor(POS), scale=8.0, out=out)
        assert res is out
        assert_bits(out, R.fmaf(8.0, tab32[tokens], ref.rows(POS)), f"torch {tdt}")


def test_embed_learned(isa):
    d = 48
    table = rnd((30, d))
    pos_table = rnd((20, d))
    tokens = RNG.integers(0, 30, (2, 10))
    for scale in SCALES:
        got = posenc.embed_learned(table, tokens[0], pos_table, first=10, scale=scale)
        assert_bits(got, R.fmaf(scale, table[tokens[0]], pos_table[10:20]), f"run, scale {scale}")
    pos = [0, 19, PAD, 5, 5, 7, PAD, 1, 2, 3]
    padded = np.concatenate([pos_table, np.zeros((1, d), np.float32)])  # PAD adds +0.0
    idx = [p if p != PAD else 20 for p in pos]
    got = posenc.embed_learned(table, tokens[0], pos_table, positions=pos, scale=-2.0)
    assert_bits(got, R.fmaf(-2.0, table[tokens[0]], padded[idx]), "explicit positions with PAD")
    per = np.array([pos, list(range(10, 20))])
    got = posenc.embed_learned(table, tokens, pos_table, positions=per)
    want = np.stack([R.fmaf(1.0, table[tokens[b]], padded[[p if p != PAD else 20 for p in per[b]]])
                     for b in range(2)])
    assert_bits(got, want, "batch, per-row positions")
    # strided tables and a strided out
    wt, wp = sentinel((30, 60), np.float32), sentinel((20, 52), np.float32)
    wt[:, 5:53], wp[:, 1:49] = table, pos_table
    buf = sentinel((2, 10, 50), np.float32)
    out = buf[:, :, 1:49]
    assert posenc.embed_learned(wt[:, 5:53], tokens, wp[:, 1:49], first=3, out=out) is out
    assert_bits(out, R.fmaf(1.0, table[tokens], pos_table[3:13][None]), "strided")
    assert (bits(buf[:, :, 0]) == 0x7FBADBAD).all() and (bits(buf[:, :, 49]) == 0x7FBADBAD).all()


def test_nan_and_infinity_results_follow_the_header(isa):
    # posenc.h: the first NaN among x, the position term and scale, quieted; an invalid operation (0 * inf)
    # gives +qNaN 0x7fc00000; the same bits on every path
    spec, ref = SPECS["vaswani64"], ref_of("vaswani64")
    x = rnd((10, 64))
    xb = x.view(np.uint32)
    xb[0, :8] = [0x7FC00000, 0xFFC12345, 0x7F800001, 0x7FA00000, 0x7F800000, 0xFF800000, 0xFFFFFFFF, 0x7F800000]
    xb[1::3, 5::7] = 0x7F800000  # +inf scattered through the vector lanes
    for scale in (1.0, 0.0, float("nan"), float("inf"), -1.0):
        got = posenc.add(spec, x, positions=POS, scale=scale)
        assert_bits(got, R.fmaf(scale, x, ref.rows(POS)), f"scale {scale}")
    t = rnd((8, 64))
    t.view(np.uint32)[3, ::5] = 0xFF800001
    tokens = [3, 1, 3, 0, 7, 3, 2, 3, 3, 5]
    got = posenc.embed(spec, t, tokens, positions=POS, scale=0.0)
    assert_bits(got, R.fmaf(0.0, t[tokens], ref.rows(POS)), "embed with NaN rows, scale 0")


# fmaf's single rounding: scale * x + pe exactly halfway between two floats once rounded to double, the exact
# value just off that midpoint, on the side where rounding twice (to double, then to float32, ties to even)
# picks the wrong float. (2^23 + 3539683) * 11854442 = 2^47 + 574: s * x = u/2 (1 + 574 2^-47) with
# s = 11872131 2^-23, for the rows whose value has an even last bit; s = 1 + 2^-23 and x = u/2 (1 - 2^-23)
# give u/2 (1 - 2^-46) for the odd ones (u: the float32 ulp of the PE value).
M1, M2 = 11872131, 11854442


def double_rounding_traps(pe):
    mag = np.abs(pe).astype(np.float64)
    b = pe.view(np.uint32)
    usable = (mag >= 2.0 ** -20) & ((b & 0x7FFFFF) != 0)  # a normal value, not a power of two
    _, e = np.frexp(np.where(usable, mag, 1.0))
    u = np.ldexp(1.0, e - 24)  # the ulp of pe
    even = usable & ((b & 1) == 0)
    odd = usable & ((b & 1) == 1)
    x_even = np.where(even, M2 * u * 2.0 ** -25, 0.0).astype(np.float32)
    x_odd = np.where(odd, (1 - 2.0 ** -23) * u / 2, 0.0).astype(np.float32)
    return (np.float32(M1 * 2.0 ** -23), x_even, even), (np.float32(1 + 2.0 ** -23), x_odd, odd)


def test_add_and_embed_round_once_where_rounding_twice_differs(isa):
    spec, ref = SPECS["cos_sin130"], ref_of("cos_sin130")
    pe = ref.table(-4, 10)
    for scale, x, trap in double_rounding_traps(pe):
        twice = (np.float64(scale) * x.astype(np.float64) + pe.astype(np.float64)).astype(np.float32)
        want = R.fmaf(scale, x, pe)
        assert (bits(twice) != bits(want))[trap].sum() >= trap.sum() // 2 > 100  # the traps are real
        assert_bits(posenc.add(spec, x, first=-4, scale=float(scale)), want, f"add, scale {scale}")
        got = posenc.embed(spec, x, np.arange(10), first=-4, scale=float(scale))  # the rows as the table
        assert_bits(got, want, f"embed, scale {scale}")
        pos_rows = np.concatenate([np.zeros((2, 130), np.float32), pe])
        got = posenc.embed_learned(x, np.arange(10), pos_rows, first=2, scale=float(scale))
        assert_bits(got, want, f"embed_learned, scale {scale}")
