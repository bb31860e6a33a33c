"""posenc.table and posenc.rows (float32, bfloat16, float16) bit for bit against MPFR on every SIMD path; the
seeds' d = 6 table; the golden SHA-256 digests of tests/test_golden.cpp; out= arrays and tensors; Spec."""
import pickle

import numpy as np
import pytest

import posenc
import mpfr_ref as R
from helpers import assert_bits, bits, sentinel

K = 2 ** 31
PAD = posenc.PAD

SPECS = {
    "vaswani64": posenc.Spec(64),
    "halves33_base1e6": posenc.Spec(33, "sin_cos_halves", base=1e6),
    "cos_sin130_D64": posenc.Spec(130, "cos_sin_halves", freq_denominator=64.0),
    "interleaved48_top": posenc.Spec(48, base=2.0, freq_denominator=0.5, position_scale=2.0 ** 100),
    "odd7_scale-1.5": posenc.Spec(7, position_scale=-1.5),
    "d1": posenc.Spec(1),
    "d2_D7.5": posenc.Spec(2, freq_denominator=7.5),
    "scale0": posenc.Spec(12, "sin_cos_halves", position_scale=0.0),
    "fairseq32": posenc.Spec.fairseq(32),
    "t2t20": posenc.Spec.tensor2tensor(20, 1.0, 1.0e4),
    "diffusers18": posenc.Spec.diffusers(18, True, 1.0, 2.5, 10000.0),
    "ggml10": posenc.Spec.ggml_timestep(10, 1000.0),
    "marian40": posenc.Spec.marian(40),
}
_REFS = {}


def ref_of(name):
    if name not in _REFS:
        _REFS[name] = R.SpecRef.of(SPECS[name])
    return _REFS[name]


# (first, n): runs near 0, negative, at the top of the range, and one crossing 0
RUNS = [(0, 19), (-40, 45), (K - 21, 20), (-(K - 1), 3)]
SCATTERED = [0, 1, PAD, 7, 7, -(K - 1), K - 1, 123456789, -5, PAD, 1 << 20, 4096, 131072, 3]


@pytest.mark.parametrize("name", list(SPECS))
def test_table_f32_is_correctly_rounded(isa, name):
    spec, ref = SPECS[name], ref_of(name)
    for first, n in RUNS:
        got = posenc.table(spec, n, first)
        assert got.dtype == np.float32 and got.shape == (n, spec.d_model)
        assert_bits(got, ref.table(first, n), f"{name} first {first} on {posenc.isa_name(isa)}")


@pytest.mark.parametrize("name", ["vaswani64", "halves33_base1e6", "cos_sin130_D64", "odd7_scale-1.5", "d1",
                                  "interleaved48_top", "diffusers18"])
def test_rows_f32_is_correctly_rounded(isa, name):
    spec, ref = SPECS[name], ref_of(name)
    got = posenc.rows(spec, SCATTERED)
    assert got.dtype == np.float32 and got.shape == (len(SCATTERED), spec.d_model)
    want = ref.rows(SCATTERED)
    assert_bits(got, want, f"{name} on {posenc.isa_name(isa)}")
    assert not bits(want[2]).any()  # the PAD row is +0.0


@pytest.mark.parametrize("fmt,dtype", [("bf16", "bfloat16"), ("bf16", "bf16"), ("f16", "float16"),
                                       ("f16", np.float16), ("f32", np.dtype("float32")), ("f32", "float32")])
@pytest.mark.parametrize("name", ["vaswani64", "cos_sin130_D64", "odd7_scale-1.5", "fairseq32"])
def test_16bit_tables_round_the_float32_values_to_nearest_even(isa, name, fmt, dtype):
    spec, ref = SPECS[name], ref_of(name)
    want_dtype = {"f32": np.float32, "bf16": np.uint16, "f16": np.float16}[fmt]
    for first, n in RUNS[:3]:
        got = posenc.table(spec, n, first, dtype=dtype)
        assert got.dtype == want_dtype
        assert_bits(got, R.table_in(ref.table(first, n), fmt), f"{name} {fmt} table first {first}")
    got = posenc.rows(spec, SCATTERED, dtype=dtype)
    assert got.dtype == want_dtype
    assert_bits(got, R.table_in(ref.rows(SCATTERED), fmt), f"{name} {fmt} rows")


def test_torch_dtypes_and_tensor_outputs(isa):
    torch = pytest.importorskip("torch")
    spec, ref = SPECS["vaswani64"], ref_of("vaswani64")
    want = ref.table(-40, 45)
    for tdt, fmt in ((torch.float32, "f32"), (torch.bfloat16, "bf16"), (torch.float16, "f16")):
        got = posenc.table(spec, 45, -40, dtype=tdt)  # a torch dtype selects the format of a NumPy result
        assert_bits(got, R.table_in(want, fmt), f"dtype {tdt}")
        out = torch.full((45, 64), 7.0, dtype=tdt)
        res = posenc.table(spec, first=-40, out=out)  # n from out, dtype from out
        assert res is out
        assert_bits(out, R.table_in(want, fmt), f"out {tdt}")
        out = torch.full((len(SCATTERED), 64), 7.0, dtype=tdt)
        assert posenc.rows(spec, torch.tensor(SCATTERED), out=out) is out
        assert_bits(out, R.table_in(ref.rows(SCATTERED), fmt), f"rows out {tdt}")


def test_the_seeds_d6_table_10_positions(isa):
    # tests/test_seeds.cpp: rows of the published seed (its NumPy code), printed to 4 decimals
    t = posenc.table(6, 10)
    row4 = [" ".join(f"{float(v):.4f}" for v in t[r]) for r in range(10)]
    assert row4[0] == "0.0000 1.0000 0.0000 1.0000 0.0000 1.0000"
    assert row4[1] == "0.8415 0.5403 0.0464 0.9989 0.0022 1.0000"
    assert row4[9] == "0.4121 -0.9111 0.4057 0.9140 0.0194 0.9998"
    assert_bits(t, R.SpecRef(6).table(0, 10), "seeds table")
    assert_bits(posenc.table(posenc.Spec.vaswani(6), 10), t, "Spec.vaswani(6)")


# tests/test_golden.cpp
GOLDENS = [
    ("vaswani d=64, positions 0..63", (64, 0, 1e4, 0.0, 1.0), list(range(64)),
     "84f6dfc6b5108aea633cb0fc00c93e4a6d15e97f7e8ae29210a3dc02d2843dde"),
    ("sin|cos halves d=33, base 1e6, positions -100..-69", (33, 1, 1e6, 0.0, 1.0), list(range(-100, -68)),
     "561a90058300ea1a1aaaad546bd5b338836caa9ac284824ae6ac86f79ed8486e"),
    ("cos|sin halves d=130, D=64, scattered rows and a pad", (130, 2, 1e4, 64.0, 1.0),
     [0, 1, 1000000, 2147483647, -12345, PAD, 7], "9183432ea0a12e4b5dcbbb66d62e8e2c68ed0d847a0494e9ab05f7f5544116dd"),
    ("interleaved d=48, base 2, D=0.5, scale 2^100, near the top of the range", (48, 0, 2.0, 0.5, 2.0 ** 100),
     list(range(K - 40, K - 1)), "61bc310d0943be9746c6420a2ba4f8af431a926f4cb1576dbdebcb2fe3914c82"),
]
_GOLDEN_REFS = {}


def golden_ref(g):
    if g[0] not in _GOLDEN_REFS:
        _GOLDEN_REFS[g[0]] = R.SpecRef(*g[1]).rows(g[2])
    return _GOLDEN_REFS[g[0]]


@pytest.mark.parametrize("g", GOLDENS, ids=[g[0] for g in GOLDENS])
def test_golden_digests_are_those_of_mpfr(g):
    assert R.sha256(golden_ref(g)) == g[3]


@pytest.mark.parametrize("g", GOLDENS, ids=[g[0] for g in GOLDENS])
def test_every_path_reproduces_the_golden_digests(isa, g):
    d, layout, base, den, scale = g[1]
    spec = posenc.Spec(d, posenc.Layout(layout), base, den, scale)
    pos = g[2]
    run = all(b == a + 1 for a, b in zip(pos, pos[1:]))
    got = posenc.table(spec, len(pos), pos[0]) if run else posenc.rows(spec, pos)
    assert R.sha256(got) == g[3]
    assert R.sha256(posenc.rows(spec, np.array(pos, np.int64))) == g[3]


def test_out_column_slice_of_a_wider_buffer_and_nothing_else_written(isa):
    spec, ref = SPECS["halves33_base1e6"], ref_of("halves33_base1e6")
    for fmt, dt in (("f32", np.float32), ("bf16", np.uint16), ("f16", np.float16)):
        buf = sentinel((49, 50), dt)
        out = buf[3:48:1, 5:38]  # rows of stride 50, 45 rows, 33 columns
        before = bits(buf).copy()
        res = posenc.table(spec, None, -40, out=out)
        assert res is out
        assert_bits(out, R.table_in(ref.table(-40, 45), fmt), f"{fmt} column slice")
        mask = np.ones(buf.shape, bool)
        mask[3:48, 5:38] = False
        assert np.array_equal(bits(buf)[mask], before[mask]), f"{fmt}: written outside out"
        # every other row: row stride 100
        buf = sentinel((90, 50), dt)
        out = buf[::2, 10:43]
        posenc.rows(spec, SCATTERED + [5] * 31, out=out)
        assert_bits(out, R.table_in(ref.rows(SCATTERED + [5] * 31), fmt), f"{fmt} strided rows")
        assert (bits(buf)[1::2] == bits(sentinel((1,), dt))[0]).all()


def test_a_call_split_in_pieces_gives_the_bytes_of_the_whole_call(isa):
    spec = SPECS["cos_sin130_D64"]
    whole = posenc.table(spec, 70, -35)
    parts = np.concatenate([posenc.table(spec, 1, -35), posenc.table(spec, 30, -34), posenc.table(spec, 39, -4)])
    assert_bits(parts, whole, "split table")
    assert_bits(posenc.rows(spec, np.arange(-35, 35)), whole, "rows of a run")


def test_position_argument_forms():
    spec = SPECS["vaswani64"]
    want = posenc.rows(spec, np.array(SCATTERED, np.int64))
    for pos in (SCATTERED, tuple(SCATTERED), np.array(SCATTERED, np.int64)):
        assert_bits(posenc.rows(spec, pos), want, type(pos).__name__)
    small = [p for p in SCATTERED if p != PAD and abs(p) < 2 ** 31]
    want = posenc.rows(spec, np.array(small, np.int64))
    assert_bits(posenc.rows(spec, np.array(small, np.int32)), want, "int32")
    torch = pytest.importorskip("torch")
    assert_bits(posenc.rows(spec, torch.tensor(small)), want, "torch positions")
    assert_bits(posenc.rows(spec, torch.tensor(small, dtype=torch.int32)), want, "torch int32 positions")


def test_index_arrays_of_any_integer_type_and_layout_are_converted():
    # rows(): "any integer array-like of shape (n,)"; arrays.hpp: converted to a contiguous int64 / int32 array
    spec = SPECS["vaswani64"]
    pos = np.array(SCATTERED, np.int64)
    want = posenc.rows(spec, pos)
    assert_bits(posenc.rows(spec, np.repeat(pos, 2)[::2]), want, "a strided int64 view")
    assert_bits(posenc.rows(spec, pos[::-1].copy()[::-1]), want, "a reversed view")
    small = np.array([0, 1, 7, -5, 100, 127], np.int64)
    want = posenc.rows(spec, small)
    for dt in (np.int8, np.int16, np.uint8, np.uint32, np.uint64):
        v = small[small >= 0] if np.dtype(dt).kind == "u" else small
        assert_bits(posenc.rows(spec, v.astype(dt)), posenc.rows(spec, v), np.dtype(dt).name)
    table = np.ones((200, 64), np.float32)
    tok = np.arange(20, dtype=np.int64)
    assert_bits(posenc.embed(spec, table, tok[::2]), posenc.embed(spec, table, tok[::2].copy()), "strided tokens")
    torch = pytest.importorskip("torch")
    t = torch.tensor(SCATTERED)
    assert_bits(posenc.rows(spec, torch.stack([t, t], 1)[:, 0]), posenc.rows(spec, SCATTERED), "strided tensor")


def test_empty_calls():
    # zero rows are valid everywhere (NumPy gives empty arrays zero strides)
    assert posenc.table(8, 0).shape == (0, 8)
    assert posenc.rows(8, []).shape == (0, 8)
    assert posenc.rows(8, np.zeros(0, np.int64), dtype="bfloat16").dtype == np.uint16
    assert posenc.table(8, 0, first=2 ** 40).shape == (0, 8)  # n == 0: only the spec is checked
    assert posenc.table(8, out=np.zeros((0, 8), np.float32)).shape == (0, 8)
    assert posenc.add(8, np.zeros((0, 8), np.float32)).shape == (0, 8)
    assert posenc.add(8, np.zeros((2, 0, 8), np.float32)).shape == (2, 0, 8)
    assert posenc.embed(8, np.ones((3, 8), np.float32), []).shape == (0, 8)
    assert posenc.embed_learned(np.ones((3, 8), np.float32), [], np.ones((2, 8), np.float32)).shape == (0, 8)
    c, s = posenc.rope_cache(posenc.Rope(8), 0)
    assert c.shape == s.shape == (0, 4)
    x = np.zeros((0, 2, 8), np.float32)
    assert posenc.rope(posenc.Rope(8), x) is x
    assert posenc.PAD == -(2 ** 63)


def test_int_spec_is_vaswanis_convention_and_spec_fields():
    assert_bits(posenc.table(10, 5), posenc.table(posenc.Spec(10), 5))
    s = posenc.Spec(33, "SIN_COS_HALVES", base=1e6, freq_denominator=3.5, position_scale=0.25)
    assert (s.d_model, s.layout, s.base, s.freq_denominator, s.position_scale) == (
        33, posenc.Layout.SIN_COS_HALVES, 1e6, 3.5, 0.25)
    assert s == posenc.Spec(33, posenc.Layout.SIN_COS_HALVES, 1e6, 3.5, 0.25)
    assert s != posenc.Spec(33, posenc.Layout.SIN_COS_HALVES, 1e6, 3.5, 0.5)
    assert hash(s) == hash(posenc.Spec(33, 1, 1e6, 3.5, 0.25))
    assert pickle.loads(pickle.dumps(s)) == s
    assert "d_model=33" in repr(s) and "sin_cos_halves" in repr(s)
    assert posenc.Spec.vaswani(16) == posenc.Spec(16)
    assert posenc.Spec.marian(16) == posenc.Spec(16, "sin_cos_halves")
    # the framework conventions, as posenc.hpp documents them
    f = posenc.Spec.fairseq(32)
    assert (f.layout, f.freq_denominator) == (posenc.Layout.SIN_COS_HALVES, 15.0)
    t = posenc.Spec.tensor2tensor(20, 2.0, 1.0e4)
    assert (t.layout, t.base, t.freq_denominator, t.position_scale) == (posenc.Layout.SIN_COS_HALVES, 5000.0, 9.0, 2.0)
    g = posenc.Spec.ggml_timestep(10, 1000.0)
    assert (g.layout, g.base, g.freq_denominator) == (posenc.Layout.COS_SIN_HALVES, 1000.0, 0.0)
    assert posenc.Spec.ctranslate2(32) == f
    df = posenc.Spec.diffusers(18, True, 1.0, 2.5, 500.0)
    assert (df.layout, df.base, df.freq_denominator, df.position_scale) == (posenc.Layout.COS_SIN_HALVES, 500.0,
                                                                           8.0, 2.5)
    assert posenc.Spec.diffusers(18).layout == posenc.Layout.SIN_COS_HALVES
    with pytest.raises(AttributeError):
        s.d_model = 5  # immutable
