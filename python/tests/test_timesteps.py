"""posenc.timesteps / timesteps_add (posenc_timesteps_f32 / _bf16 / _f16, posenc_timesteps_add_f32) and the
timestep specs (Spec.dit, flux, whisper), on every path of this machine:

- every row bit for bit against MPFR (timesteps_ref.exact_rows) at fractional, huge (up to 2^31 - 1/4),
  negative, tiny and subnormal, and integer-valued timesteps; bf16 / f16 the float32 values rounded to
  nearest-even; timesteps_add one fmaf; integer-valued timesteps the bytes of posenc.rows;
- the input conversions: float64 as it is, float32 / float16 / bfloat16 / integer timesteps exactly, from NumPy,
  torch and lists; strided inputs and outputs, batches;
- bad input: the documented exception, nothing written.
"""
import math

import numpy as np
import pytest

import posenc
import mpfr_ref as R
from helpers import assert_bits, sentinel
from timesteps_ref import exact_rows

K2P31 = 2.0 ** 31
# diffusion steps and half steps, flow matching's [0, 1) and sigma * 1000, far fractions, the edges of |t| < 2^31,
# tiny and subnormal products, signed zeros
TIMES = [0.0, -0.0, 1.0, 999.0, 999.5, 0.25, 0.04, 261.1875, 14.614641, 1e6 + 0.5, -1e6 - 0.5, 123456.789,
         2147483647.0, 2147483646.75, -2147483647.75, 2.0 ** -60, 1e-300, 5e-324, -5e-324, 0.5 + 2.0 ** -52, -2.5]

SPECS = [
    ("diffusers SD UNet 320", posenc.Spec.diffusers(320, True, 0.0)),
    ("diffusers 33, shift 1, scale 2", posenc.Spec.diffusers(33, False, 1.0, 2.0)),
    ("DiT 256", posenc.Spec.dit(256)),
    ("Flux 64, max_period 2000", posenc.Spec.flux(64, 2000.0)),
    ("ggml 17", posenc.Spec.ggml_timestep(17)),
    ("interleaved 10, base 2, scale -0.75", posenc.Spec(10, "interleaved", 2.0, 0.0, -0.75)),
]


@pytest.fixture(scope="module")
def refs():
    return {name: exact_rows(spec, TIMES) for name, spec in SPECS}


@pytest.mark.parametrize("name,spec", SPECS, ids=[s[0] for s in SPECS])
def test_rows_are_correctly_rounded(isa, refs, name, spec):
    want = refs[name]
    t = np.array(TIMES, np.float64)
    assert_bits(posenc.timesteps(spec, t), want, name)
    assert_bits(posenc.timesteps(spec, t, dtype="bfloat16"), R.narrow_from_f32(want, "bf16"), name + " bf16")
    assert_bits(posenc.timesteps(spec, t, dtype="float16"), R.narrow_from_f32(want, "f16").view(np.float16),
                name + " f16")


def test_spec_constructors_are_the_cpp_ones():
    # the C++ named constructors' fields (tests/test_cpp_wrapper.cpp checks those against the frameworks')
    assert posenc.Spec.dit(256) == posenc.Spec(256, "cos_sin_halves", 1e4, 0.0, 1.0) == posenc.Spec.ggml_timestep(256)
    assert posenc.Spec.dit(33, 500.0) == posenc.Spec(33, "cos_sin_halves", 500.0, 0.0, 1.0)
    assert posenc.Spec.flux(256) == posenc.Spec(256, "cos_sin_halves", 1e4, 0.0, 1000.0)
    assert posenc.Spec.flux(64, 2000.0, 3.0) == posenc.Spec(64, "cos_sin_halves", 2000.0, 0.0, 3.0)
    assert posenc.Spec.whisper(384) == posenc.Spec(384, "sin_cos_halves", 1e4, 191.0, 1.0)
    assert posenc.Spec.whisper(512, 3e4) == posenc.Spec(512, "sin_cos_halves", 3e4, 255.0, 1.0)


def test_integer_valued_timesteps_are_the_integer_rows(isa):
    spec = posenc.Spec.diffusers(96, True, 0.0, 1000.0)
    p = [0, 1, -1, 999, 1000000, -1000000, 2147483647, -2147483647]
    t = np.array(p + [-0.0], np.float64)
    for dtype in ("float32", "bfloat16", "float16"):
        assert_bits(posenc.timesteps(spec, t, dtype=dtype), posenc.rows(spec, p + [0], dtype=dtype), dtype)


def test_timesteps_add_is_one_fmaf(isa):
    spec = posenc.Spec.flux(48)
    t = np.array([0.25, 0.999, 0.0, 0.5 + 2.0 ** -40, 1e3 + 0.5], np.float64)
    pe = exact_rows(spec, t)
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((5, 48)) * 3).astype(np.float32)
    want = R.fmaf(np.float32(1.7), x, pe)
    assert_bits(posenc.timesteps_add(spec, x, t, scale=1.7), want, "new array")
    y = x.copy()
    assert posenc.timesteps_add(spec, y, t, scale=1.7, out=y) is y
    assert_bits(y, want, "in place")
    # a batch: one row of timesteps per batch entry, or one shared row; strided x and out
    xb = (rng.standard_normal((3, 5, 64)) * 3).astype(np.float32)
    tb = np.array([t, t[::-1], t * 2], np.float64)
    out = sentinel((3, 5, 80), np.float32)
    got = posenc.timesteps_add(spec, xb[:, :, :48], tb, out=out[:, :, 8:56])
    for b in range(3):
        assert_bits(got[b], R.fmaf(np.float32(1.0), xb[b, :, :48], exact_rows(spec, tb[b])), "batch %d" % b)
    assert_bits(out[:, :, :8], sentinel((3, 5, 8), np.float32), "left of the view")
    shared = posenc.timesteps_add(spec, xb[:, :, :48], t)
    for b in range(3):
        assert_bits(shared[b], R.fmaf(np.float32(1.0), xb[b, :, :48], pe), "shared %d" % b)


def test_outputs_strided_and_preallocated(isa):
    spec = posenc.Spec.dit(40)
    t = np.array([0.5, 999.5, -3.0], np.float64)
    want = exact_rows(spec, t)
    buf = sentinel((3, 64), np.float32)
    got = posenc.timesteps(spec, t, out=buf[:, 10:50])
    assert np.shares_memory(got, buf)
    assert_bits(buf[:, 10:50], want, "into a column slice")
    assert_bits(buf[:, :10], sentinel((3, 10), np.float32), "left of it")
    assert_bits(buf[:, 50:], sentinel((3, 14), np.float32), "right of it")
    h = sentinel((3, 40), np.uint16)
    posenc.timesteps(spec, t, out=h)  # uint16 out: bfloat16 bit patterns
    assert_bits(h, R.narrow_from_f32(want, "bf16"), "bf16 out")


def test_input_dtypes_are_converted_exactly():
    spec = posenc.Spec.diffusers(64, True, 0.0)
    v32 = np.array([0.1, 999.5, 0.04, -7.25, 1e6 + 0.5], np.float32)  # float32 values (0.1f is not 0.1)
    want = posenc.timesteps(spec, v32.astype(np.float64))
    assert_bits(want, exact_rows(spec, v32.astype(np.float64)), "float64 of the float32 values")
    assert_bits(posenc.timesteps(spec, v32), want, "numpy float32")
    assert_bits(posenc.timesteps(spec, v32[::-1][::-1].copy()), want, "a copy")
    assert_bits(posenc.timesteps(spec, np.repeat(v32, 2)[::2]), want, "strided float32")
    t64 = np.repeat(v32.astype(np.float64), 3)[::3]
    assert_bits(posenc.timesteps(spec, t64), want, "strided float64")
    assert_bits(posenc.timesteps(spec, list(map(float, v32))), want, "a list of floats")
    v16 = np.array([0.1, 999.5, 3.0e-5, -7.25, 65504.0], np.float16)
    assert_bits(posenc.timesteps(spec, v16), posenc.timesteps(spec, v16.astype(np.float64)), "numpy float16")
    ints = [0, 999, -5, 2147483647]
    for dt in (np.int32, np.int64, np.uint32, np.int8):
        a = np.array(ints if dt not in (np.uint32, np.int8) else [0, 99, 5], dt)
        assert_bits(posenc.timesteps(spec, a), posenc.rows(spec, a.astype(np.int64)), str(dt))
    assert_bits(posenc.timesteps(spec, ints), posenc.rows(spec, ints), "a list of ints")
    assert_bits(posenc.timesteps(spec, np.array(ints, dtype=object)), posenc.rows(spec, ints), "object array")


def test_torch_inputs_are_converted_exactly():
    torch = pytest.importorskip("torch")
    spec = posenc.Spec.flux(32)
    t = torch.tensor([0.001, 0.5, 0.999, 0.123456789], dtype=torch.float64)
    want = posenc.timesteps(spec, t.numpy())
    assert_bits(posenc.timesteps(spec, t), want, "float64 tensor")
    assert_bits(posenc.timesteps(spec, t.repeat_interleave(2)[::2]), want, "strided float64 tensor")
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        low = t.to(dtype)
        assert_bits(posenc.timesteps(spec, low), posenc.timesteps(spec, low.double().numpy()), str(dtype))
    s = torch.tensor([0, 999, 500], dtype=torch.int64)
    assert_bits(posenc.timesteps(spec, s), posenc.rows(spec, [0, 999, 500]), "int64 tensor")
    out = torch.empty(4, 32, dtype=torch.bfloat16)
    posenc.timesteps(spec, t, out=out)
    assert_bits(out.view(torch.int16).numpy().view(np.uint16), posenc.timesteps(spec, t, dtype="bfloat16"),
                "bf16 tensor out")
    g = t.clone().requires_grad_(True)  # read, not written: a tensor that requires grad is fine
    assert_bits(posenc.timesteps(spec, g), want, "requires_grad")


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, K2P31, -K2P31, 1e300])
def test_bad_timesteps_raise_out_of_range_and_write_nothing(isa, bad):
    spec = posenc.Spec.dit(16)
    t = np.array([0.5, 1.0, bad], np.float64)
    out = sentinel((3, 16), np.float32)
    with pytest.raises(posenc.OutOfRange) as e:
        posenc.timesteps(spec, t, out=out)
    assert e.value.status == posenc.Status.ERR_OUT_OF_RANGE
    assert_bits(out, sentinel((3, 16), np.float32), "out after the error")
    # a batch whose last row is bad: no row written
    x = np.ones((2, 3, 16), np.float32)
    xo = sentinel((2, 3, 16), np.float32)
    with pytest.raises(IndexError):
        posenc.timesteps_add(spec, x, np.array([[0.5, 1.0, 2.0], t], np.float64), out=xo)
    assert_bits(xo, sentinel((2, 3, 16), np.float32), "batch out after the error")


def test_bad_arguments():
    spec = posenc.Spec.dit(16)
    t = np.array([0.5, 1.0], np.float64)
    with pytest.raises(posenc.InvalidArgument):  # a frequency of 2^52: the integer calls take it
        posenc.timesteps(posenc.Spec(16, "cos_sin_halves", 1e4, 0.0, 2.0 ** 52), t)
    posenc.rows(posenc.Spec(16, "cos_sin_halves", 1e4, 0.0, 2.0 ** 52), [1, 2])
    with pytest.raises(TypeError, match="ambiguous"):
        posenc.timesteps(spec, np.array([1, 2], np.uint16))
    with pytest.raises(TypeError, match="real numbers"):
        posenc.timesteps(spec, np.array([True, False]))
    with pytest.raises(TypeError, match="real numbers"):
        posenc.timesteps(spec, np.array([1j, 2j]))
    with pytest.raises(TypeError, match="real numbers"):
        posenc.timesteps(spec, ["a", "b"])
    with pytest.raises(ValueError, match="dimensions"):
        posenc.timesteps(spec, np.zeros((2, 2)))
    with pytest.raises(ValueError, match="dimensions"):
        posenc.timesteps(spec, 0.5)
    with pytest.raises(ValueError, match="shape"):
        posenc.timesteps(spec, t, out=np.empty((3, 16), np.float32))
    with pytest.raises(TypeError, match="dtype"):
        posenc.timesteps(spec, t, out=np.empty((2, 16), np.float64))
    with pytest.raises(ValueError, match="read-only"):
        ro = np.empty((2, 16), np.float32)
        ro.flags.writeable = False
        posenc.timesteps(spec, t, out=ro)
    x = np.ones((2, 16), np.float32)
    with pytest.raises(ValueError, match=r"expected shape \(2,\)"):
        posenc.timesteps_add(spec, x, [0.5, 1.0, 2.0])
    with pytest.raises(ValueError, match=r"expected shape \(2,\)"):
        posenc.timesteps_add(spec, x, np.zeros((1, 2)))
    with pytest.raises(ValueError, match=r"expected shape \(2,\) or \(3, 2\)"):
        posenc.timesteps_add(spec, np.ones((3, 2, 16), np.float32), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="d_model"):
        posenc.timesteps_add(spec, np.ones((2, 15), np.float32), t)
    with pytest.raises(ValueError, match="overlaps"):
        big = np.ones((3, 16), np.float32)
        posenc.timesteps_add(spec, big[:2], t, out=big[1:])
    with pytest.raises(TypeError, match="dtype"):
        posenc.timesteps(spec, t, dtype="float64")
    assert posenc.timesteps(spec, np.zeros(0)).shape == (0, 16)


def test_torch_bad_inputs():
    torch = pytest.importorskip("torch")
    spec = posenc.Spec.dit(16)
    with pytest.raises(TypeError, match="real numbers"):
        posenc.timesteps(spec, torch.tensor([True]))
    with pytest.raises(TypeError, match="real numbers"):
        posenc.timesteps(spec, torch.tensor([1j]))
    with pytest.raises(TypeError, match="CPU|meta"):
        posenc.timesteps(spec, torch.zeros(2, dtype=torch.float64, device="meta"))


def test_the_gil_is_released_inside_the_kernel():
    from test_gil import progress_during, released  # the GIL test's measurement (test_gil.py explains it)

    before = posenc.active_isa()
    posenc.force_isa("scalar")  # the slowest path: long calls from modest buffers
    try:
        t = np.arange(16384, dtype=np.float64) * 61.03515625 + 0.123  # fractional: each row its own angle
        out = np.empty((16384, 1024), np.float32)
        for name, call in [("timesteps", lambda: posenc.timesteps(1024, t, out=out)),
                           ("timesteps_add", lambda: posenc.timesteps_add(1024, out, t, out=out))]:
            call()
            n, gap, ms = progress_during(call)
            assert ms >= 10, f"{name}: the call took only {ms} ms, too short to tell"
            assert released(n, gap, ms), f"{name}: the other thread paused {gap} ms of a {ms} ms call ({n} iterations)"
    finally:
        try:
            posenc.force_isa(before)
        except posenc.Unsupported:
            pass
