"""posenc.torch's timestep drop-ins (diffusers' get_timestep_embedding and Timesteps, DiT's timestep_embedding,
Flux's as flux_timestep_embedding) against the originals re-typed in originals_timesteps.py:

- the same signatures (names, defaults, kinds), attributes, (empty) state_dict, output shapes and dtypes;
- at short timesteps (diffusion's 0 .. 999 and fractions, flow matching's [0, 1)) within the originals' own
  float32 error (timesteps_ref.formula_bound, derived from their operations), and bit for bit the MPFR rows;
- at long and fractional timesteps (1e6 + 0.5 .. 2^31 - 1/4) exact against MPFR, where the originals are off
  by up to their bound (measured and bounded here);
- timestep dtypes float64 (used as it is), float32, bfloat16, float16, integers; Flux's output dtype rule;
- gradients with respect to the timesteps, as the originals' autograd gives them;
- refusals: shapes, devices, dtypes, configurations the originals cannot evaluate (named in the message).
"""
import inspect
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import posenc  # noqa: E402
import posenc.torch as pt  # noqa: E402
import originals_timesteps as O  # noqa: E402
from helpers import assert_bits  # noqa: E402
from timesteps_ref import exact_rows, formula_bound  # noqa: E402

SHORT = [0.0, 1.0, 2.0, 10.0, 50.0, 261.0, 500.0, 999.0, 0.5, 999.5, 0.04, 0.25, 0.75, 0.999, 14.614641, 123.456,
         0.001, 1e-5]
LONG = [1e6 + 0.5, -1e6 - 0.5, 123456.789, 5e7 + 0.25, 2147483647.0 - 0.25, 2147483000.125, 65536.0 + 2 ** -20]

# (name, original call, posenc call, spec, (scale, max_period, den, layout, pre_scaled) for the bound)
DIFFUSERS = [
    # SD 1.x / 2.x UNet: Timesteps(320, True, 0); SDXL's add_time_proj Timesteps(256, True, 0); the defaults
    (320, True, 0, 1, 10000),
    (256, True, 0, 1, 10000),
    (1280, False, 1, 1, 10000),
    (33, False, 1, 2.0, 10000),
    (64, True, 1, 1000, 100),
    (257, False, 0.5, 0.25, 10000),
]


def dspec(dim, flip, shift, scale, period):
    return posenc.Spec(dim, "cos_sin_halves" if flip else "sin_cos_halves", float(period),
                       float(dim // 2 - shift), float(scale))


def check_against_original(got, want, ts, scale, period, den, dim, flip_or_cos_first, pre_scaled=False):
    """got within the original's float32 error of want, element by element; returns the largest ratio."""
    h = dim // 2
    bound = formula_bound(ts, scale, period, den, h, 2 if flip_or_cos_first else 1, dim, pre_scaled)
    diff = np.abs(got.double().numpy() - want.double().numpy())
    assert diff.shape == bound.shape
    bad = diff > bound
    assert not bad.any(), "%d elements beyond the bound; first at %s: %g > %g" % (
        bad.sum(), np.argwhere(bad)[0], diff[bad][0], bound[bad][0])
    return float((diff[bound > 0] / bound[bound > 0]).max())


# ---- signatures, attributes, state ----------------------------------------------------------------------------

@pytest.mark.parametrize("ours,theirs", [
    (pt.get_timestep_embedding, O.get_timestep_embedding),
    (pt.Timesteps.__init__, O.Timesteps.__init__),
    (pt.Timesteps.forward, O.Timesteps.forward),
    (pt.timestep_embedding, O.timestep_embedding),
    (pt.flux_timestep_embedding, O.flux_timestep_embedding),
], ids=["get_timestep_embedding", "Timesteps.__init__", "Timesteps.forward", "timestep_embedding",
        "flux_timestep_embedding"])
def test_signatures_are_the_originals(ours, theirs):
    """The originals' parameters, in order, with their defaults; posenc's one addition is the keyword-only
    exact_input (default False: the timesteps as the original takes them) where the timesteps come in."""
    a, b = inspect.signature(ours), inspect.signature(theirs)
    extra = [p for p in a.parameters.values() if p.name == "exact_input"]
    if ours is not pt.Timesteps.forward:
        assert [(p.kind, p.default) for p in extra] == [(inspect.Parameter.KEYWORD_ONLY, False)]
    assert [(p.name, p.default, p.kind) for p in a.parameters.values() if p.name != "exact_input"] == \
        [(p.name, p.default, p.kind) for p in b.parameters.values()]


def test_exported_from_posenc_torch():
    import posenc._torch_timesteps as ts
    for name in ("get_timestep_embedding", "Timesteps", "timestep_embedding", "flux_timestep_embedding",
                 "timesteps"):
        assert name in pt.__all__
        assert getattr(pt, name) is getattr(ts, name)
    namespace = {}
    exec("from posenc.torch import *", namespace)
    assert namespace["Timesteps"] is ts.Timesteps and namespace["RotaryEmbedding"] is pt.RotaryEmbedding


def test_timesteps_module_attributes_and_state():
    ours, theirs = pt.Timesteps(320, True, 0), O.Timesteps(320, True, 0)
    for m in (ours, theirs):
        assert (m.num_channels, m.flip_sin_to_cos, m.downscale_freq_shift, m.scale) == (320, True, 0, 1)
        assert list(m.state_dict().keys()) == []
        assert list(m.parameters()) == [] and list(m.buffers()) == []
    ours.load_state_dict(theirs.state_dict())  # strict: no key missing, none unexpected
    m = pt.Timesteps(num_channels=256, flip_sin_to_cos=False, downscale_freq_shift=1, scale=3)
    assert (m.num_channels, m.flip_sin_to_cos, m.downscale_freq_shift, m.scale) == (256, False, 1, 3)
    t = torch.tensor([999.0, 0.5])
    assert_bits(m(t), pt.get_timestep_embedding(t, 256, False, 1, 3), "forward = the function")
    m.scale = 5  # attributes are read at each forward, as diffusers does
    assert_bits(m(t), pt.get_timestep_embedding(t, 256, False, 1, 5), "after a change")


# ---- against the originals and MPFR ---------------------------------------------------------------------------

@pytest.mark.parametrize("cfg", DIFFUSERS, ids=[str(c) for c in DIFFUSERS])
def test_get_timestep_embedding_short_timesteps(isa, cfg):
    dim, flip, shift, scale, period = cfg
    t = torch.tensor(SHORT, dtype=torch.float32)
    ts = t.double().numpy()  # the float32 timesteps' values
    got = pt.get_timestep_embedding(t, dim, flip, shift, scale, period)
    want = O.get_timestep_embedding(t, dim, flip, shift, scale, period)
    assert got.dtype == want.dtype == torch.float32 and got.shape == want.shape == (len(SHORT), dim)
    check_against_original(got, want, ts, scale, period, dim // 2 - shift, dim, flip)
    assert_bits(got, exact_rows(dspec(*cfg), ts), "exact")
    if shift == 0 and scale == 1 and period == 10000:
        m, mo = pt.Timesteps(dim, flip, shift), O.Timesteps(dim, flip, shift)
        assert_bits(m(t), got, "Timesteps")
        check_against_original(m(t), mo(t), ts, scale, period, dim // 2 - shift, dim, flip)


@pytest.mark.parametrize("dim", [256, 320, 1152, 33, 2])
def test_dit_timestep_embedding_short_timesteps(isa, dim):
    t = torch.tensor(SHORT, dtype=torch.float32)
    ts = t.double().numpy()
    got, want = pt.timestep_embedding(t, dim), O.timestep_embedding(t, dim)
    assert got.dtype == want.dtype == torch.float32 and got.shape == want.shape
    check_against_original(got, want, ts, 1.0, 10000.0, dim // 2, dim, True)
    assert_bits(got, exact_rows(posenc.Spec.dit(dim), ts), "exact")
    got, want = pt.timestep_embedding(t, dim, max_period=500), O.timestep_embedding(t, dim, max_period=500)
    check_against_original(got, want, ts, 1.0, 500.0, dim // 2, dim, True)


@pytest.mark.parametrize("dim,tf", [(256, 1000.0), (64, 1.0), (33, 250.0)])
def test_flux_timestep_embedding_short_timesteps(isa, dim, tf):
    unit = [v for v in SHORT if v <= 1.0]  # Flux's t in [0, 1], times time_factor
    t = torch.tensor(unit, dtype=torch.float32)
    got, want = pt.flux_timestep_embedding(t, dim, time_factor=tf), O.flux_timestep_embedding(t, dim, time_factor=tf)
    assert got.dtype == want.dtype == torch.float32 and got.shape == want.shape
    check_against_original(got, want, t.double().numpy(), tf, 10000.0, dim // 2, dim, True, pre_scaled=True)
    # Flux's own input: time_factor * t rounded to float32, then exact from there
    scaled = (tf * t).double().numpy()
    assert_bits(got, exact_rows(posenc.Spec.flux(dim, 10000.0, 1.0), scaled), "exact at Flux's product")
    exact = pt.flux_timestep_embedding(t, dim, time_factor=tf, exact_input=True)
    assert_bits(exact, exact_rows(posenc.Spec.flux(dim, 10000.0, tf), t.double().numpy()), "exact_input")


def test_long_timesteps_are_exact_where_the_originals_drift(isa):
    t = torch.tensor(LONG, dtype=torch.float64)
    # as the originals take them: float32, where 2^31 - 1 becomes 2^31, past posenc's range (|t| < 2^31)
    t_in = t[t.float().double().abs() < 2.0 ** 31]
    worst = {}
    for name, ours, theirs, spec, default in [
        ("diffusers", pt.get_timestep_embedding(t, 320, True, 0, exact_input=True),
         O.get_timestep_embedding(t, 320, True, 0), posenc.Spec.diffusers(320, True, 0.0),
         pt.get_timestep_embedding(t_in, 320, True, 0)),
        ("DiT", pt.timestep_embedding(t, 256, exact_input=True), O.timestep_embedding(t, 256), posenc.Spec.dit(256),
         pt.timestep_embedding(t_in, 256)),
    ]:
        assert_bits(ours, exact_rows(spec, LONG), name)  # exact_input: the float64 timesteps as given
        assert_bits(default, exact_rows(spec, t_in.float().double().numpy()), name + ", as the original takes t")
        worst[name] = float((ours - theirs).abs().max())
    with pytest.raises(posenc.OutOfRange):
        pt.timestep_embedding(torch.tensor([2.0 ** 31 - 1], dtype=torch.float64), 256)  # float32: 2^31
    # the originals round t to float32 (2147483000.125 -> 2147483008) and form t * w in float32: far off
    assert worst["diffusers"] > 0.5 and worst["DiT"] > 0.5, worst
    # at timesteps that are float32 values, the originals' error is their angle's: bounded as derived, and large
    t32 = torch.tensor([1e6 + 0.5, 123456.789, 65536.0 + 2 ** -7], dtype=torch.float32)
    ts = t32.double().numpy()
    got, want = pt.timestep_embedding(t32, 256), O.timestep_embedding(t32, 256)
    assert_bits(got, exact_rows(posenc.Spec.dit(256), ts), "float32 long")
    check_against_original(got, want, ts, 1.0, 10000.0, 128, 256, True)
    assert float((got - want).abs().max()) > 1e-3


def test_float64_timesteps_as_the_originals_take_them_or_as_given():
    """By default a drop-in takes t as the original does (diffusers' and DiT's t.float(), Flux's time_factor * t
    in t's dtype), then computes exactly; exact_input=True embeds the timesteps as given."""
    t = torch.tensor([999.0 + 2 ** -30, 0.1, 1e6 + 0.5 + 2 ** -20], dtype=torch.float64)
    spec = posenc.Spec.diffusers(320, True, 0.0)
    got = pt.get_timestep_embedding(t, 320, True, 0)
    assert_bits(got, exact_rows(spec, t.float().double().numpy()), "float32 of it, as diffusers' t.float()")
    assert torch.equal(got, pt.get_timestep_embedding(t.float(), 320, True, 0))
    exact = pt.get_timestep_embedding(t, 320, True, 0, exact_input=True)
    assert_bits(exact, exact_rows(spec, t.numpy()), "float64 as given")
    assert not torch.equal(got, exact)
    assert torch.equal(pt.Timesteps(320, True, 0, exact_input=True)(t), exact)
    assert torch.equal(pt.Timesteps(320, True, 0)(t), got)
    big = torch.tensor([2 ** 24 + 1, 7], dtype=torch.int64)  # an integer above 2^24: float32 rounds it, as DiT's
    assert_bits(pt.timestep_embedding(big, 64), exact_rows(posenc.Spec.dit(64), [2.0 ** 24, 7.0]), "int64 > 2^24")
    # Flux with bfloat16 timesteps: 1000 t in bfloat16 (spacing 4 near 1000), the value the model sees
    tb = torch.tensor([0.6015625, 0.5, 0.0123], dtype=torch.bfloat16)  # 1000 t = 601.5625 -> 600 in bfloat16
    flux = pt.flux_timestep_embedding(tb, 64)
    seen = (1000.0 * tb).double().numpy()
    assert_bits(flux, torch.from_numpy(exact_rows(posenc.Spec.flux(64, 10000.0, 1.0), seen)).to(torch.bfloat16),
                "Flux's bfloat16 product")
    real = tb.double().numpy() * 1000.0
    assert np.max(np.abs(seen - real)) > 1.5  # what exact_input embeds instead: 1.5625 apart here
    assert_bits(pt.flux_timestep_embedding(tb, 64, exact_input=True),
                torch.from_numpy(exact_rows(posenc.Spec.flux(64), tb.double().numpy())).to(torch.bfloat16),
                "Flux exact_input")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int64,
                                   torch.int32, torch.uint8])
def test_timestep_dtypes(dtype):
    vals = [0, 1, 7, 250, 999] if not dtype.is_floating_point else [0.0, 0.5, 7.25, 250.0, 999.0]
    if dtype == torch.uint8:
        vals = [0, 1, 7, 250, 99]
    t = torch.tensor(vals, dtype=dtype)
    exact_t = t.double().numpy()
    for ours, theirs, spec in [
        (pt.get_timestep_embedding(t, 64, True, 0), O.get_timestep_embedding(t, 64, True, 0),
         posenc.Spec.diffusers(64, True, 0.0)),
        (pt.timestep_embedding(t, 64), O.timestep_embedding(t, 64), posenc.Spec.dit(64)),
    ]:
        assert ours.dtype == theirs.dtype == torch.float32
        assert ours.shape == theirs.shape
        assert_bits(ours, exact_rows(spec, exact_t), str(dtype))
    # Flux: the dtype of time_factor * t when it is a float, else float32; its input 1000 t formed in t's dtype
    if dtype == torch.float16:  # 1000 t overflows float16 past 65.5: Flux's angles are inf there, posenc refuses
        with pytest.raises(posenc.OutOfRange):
            pt.flux_timestep_embedding(t, 64)
        ours, theirs = pt.flux_timestep_embedding(t, 64, exact_input=True), O.flux_timestep_embedding(t, 64)
        want = exact_rows(posenc.Spec.flux(64), exact_t)
    else:
        ours, theirs = pt.flux_timestep_embedding(t, 64), O.flux_timestep_embedding(t, 64)
        want = exact_rows(posenc.Spec.flux(64, 10000.0, 1.0), (1000.0 * t).double().numpy())
    assert ours.dtype == theirs.dtype
    if ours.dtype in (torch.float32, torch.float64):
        assert_bits(ours.float(), want, "flux " + str(dtype))
    else:  # bf16 / f16: the float32 value rounded once, as Flux's .to(t) rounds its float32 embedding
        assert_bits(ours, torch.from_numpy(want).to(ours.dtype), "flux " + str(dtype))
    assert pt.flux_timestep_embedding(torch.tensor([1, 2]), 8, time_factor=3).dtype == \
        O.flux_timestep_embedding(torch.tensor([1, 2]), 8, time_factor=3).dtype == torch.float32


def test_odd_and_degenerate_dims_as_the_originals():
    t = torch.tensor([0.5, 999.0])
    for dim in (0, 1, 2, 3, 5):
        for ours, theirs in [(pt.timestep_embedding(t, dim), O.timestep_embedding(t, dim)),
                             (pt.get_timestep_embedding(t, dim, True, 0), O.get_timestep_embedding(t, dim, True, 0)),
                             (pt.flux_timestep_embedding(t, dim), O.flux_timestep_embedding(t, dim))]:
            # DiT's and Flux's dim 1 is [N, 0]: the zero column is cut from an empty embedding
            assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
            assert ours.shape[1] == dim or (dim == 1 and ours.shape[1] == 0)
            if dim % 2 and dim > 1:
                assert_bits(ours[:, -1], torch.zeros(2), "the zero column")
            if dim < 2:
                assert_bits(ours, theirs, "no pairs: zeros")
    assert pt.get_timestep_embedding(torch.zeros(0), 8).shape == (0, 8)


def test_generic_timesteps_function():
    spec = posenc.Spec.whisper(16)
    t = torch.tensor([[0.5, 1.0], [2.0, 999.5]], dtype=torch.float64)
    got = pt.timesteps(spec, t)
    assert got.shape == (2, 2, 16) and got.dtype == torch.float32
    assert_bits(got.reshape(4, 16), exact_rows(spec, t.reshape(-1).numpy()), "any shape")
    assert pt.timesteps(spec, t, dtype=torch.bfloat16).dtype == torch.bfloat16
    out = torch.empty(2, 2, 16, dtype=torch.float16)
    assert pt.timesteps(spec, t, out=out) is out
    assert_bits(pt.timesteps(16, [0.25, 2.0]), posenc.timesteps(16, [0.25, 2.0]), "a list, a d_model")
    # Whisper's own sinusoids: integer positions, within its float32 error of the exact table
    ws = O.sinusoids(64, 16)
    exact = posenc.table(spec, 64)
    assert float((ws.float() - torch.from_numpy(exact)).abs().max()) < 1e-4


def analytic_grad(ts, g, scale, period, den, dim, cos_first):
    """sum_i (g_sin_i cos(a_i) - g_cos_i sin(a_i)) scale w_i per row, in float64 from the double angles."""
    h = dim // 2
    w = scale * np.exp(-math.log(period) * np.arange(h) / den)
    a = np.asarray(ts, np.float64)[:, None] * w[None, :]
    g = g.double().numpy()
    gs, gc = (g[:, h:2 * h], g[:, :h]) if cos_first else (g[:, :h], g[:, h:2 * h])
    return ((gs * np.cos(a) - gc * np.sin(a)) * w).sum(axis=1)


def test_gradients_are_the_derivative_and_the_originals():
    vals = [0.5, 3.0, 999.5, 17.25]
    g = torch.randn(4, 33, generator=torch.Generator().manual_seed(3))
    cases = [((33, True, 0, 1.0, 10000.0), lambda x: pt.get_timestep_embedding(x, 33, True, 0),
              lambda x: O.get_timestep_embedding(x, 33, True, 0)),
             ((33, False, 1, 2.0, 10000.0), lambda x: pt.get_timestep_embedding(x, 33, False, 1, 2.0),
              lambda x: O.get_timestep_embedding(x, 33, False, 1, 2.0)),
             ((33, True, 0, 1.0, 500.0), lambda x: pt.timestep_embedding(x, 33, 500),
              lambda x: O.timestep_embedding(x, 33, 500))]
    for (dim, cos_first, shift, scale, period), ours_fn, theirs_fn in cases:
        t = torch.tensor(vals, dtype=torch.float32, requires_grad=True)
        t0 = t.detach().clone().requires_grad_(True)
        y = ours_fn(t)
        assert y.requires_grad
        (y * g).sum().backward()
        (theirs_fn(t0) * g).sum().backward()
        want = analytic_grad(vals, g, scale, period, dim // 2 - shift, dim, cos_first)
        size = (g.abs().double().numpy() * scale).sum(axis=1)
        # ours: the derivative from the float32 rows, each term within a few float32 ulps
        assert np.all(np.abs(t.grad.double().numpy() - want) <= 1e-6 * size), (t.grad, want)
        # the originals': the same derivative at their float32 angles (off by up to ~|a| 33 u at t = 999.5)
        assert np.all(np.abs(t0.grad.double().numpy() - want) <= 5e-3 * size), (t0.grad, want)
    tf = torch.tensor([0.3], dtype=torch.float64, requires_grad=True)
    y = pt.flux_timestep_embedding(tf, 8, time_factor=10.0)
    assert y.dtype == torch.float64
    y[0, 5].backward()  # sin of pair 1: d/dt sin(10 t w_1) = cos(10 t w_1) 10 w_1
    w1 = 10000.0 ** (-1 / 4)
    assert abs(float(tf.grad) - math.cos(10 * 0.3 * w1) * 10 * w1) < 1e-6
    t = torch.tensor(vals, requires_grad=True)
    with torch.no_grad():
        assert not pt.timestep_embedding(t, 8).requires_grad


def test_refusals_name_the_problem():
    t = torch.tensor([0.5, 1.0])
    with pytest.raises(ValueError, match="1-D"):
        pt.get_timestep_embedding(torch.zeros(2, 2), 8)
    with pytest.raises(ValueError, match="1-D"):
        pt.timestep_embedding(torch.tensor(0.5), 8)
    with pytest.raises(TypeError, match="torch.Tensor"):
        pt.get_timestep_embedding([0.5], 8)
    with pytest.raises(ValueError, match="CPU"):
        pt.timestep_embedding(torch.zeros(2, device="meta"), 8)
    with pytest.raises(TypeError, match="real numbers"):
        pt.get_timestep_embedding(torch.tensor([True]), 8)
    with pytest.raises(TypeError, match="int"):
        pt.get_timestep_embedding(t, 8.0)
    with pytest.raises(ValueError, match="negative"):
        pt.timestep_embedding(t, -2)
    with pytest.raises(ValueError, match=r"downscale_freq_shift 4 equals embedding_dim // 2 = 4"):
        pt.get_timestep_embedding(t, 8, downscale_freq_shift=4)
    with pytest.raises(ValueError, match=r"downscale_freq_shift 1 equals embedding_dim // 2 = 1"):
        pt.Timesteps(2, False, 1)  # at construction, before any forward
    with pytest.raises(ValueError, match="above embedding_dim // 2"):
        pt.get_timestep_embedding(t, 8, downscale_freq_shift=6)
    with pytest.raises(ValueError, match="max_period"):
        pt.get_timestep_embedding(t, 8, max_period=0)
    with pytest.raises(ValueError, match="max_period"):
        pt.timestep_embedding(t, 8, max_period=-1)
    with pytest.raises(posenc.OutOfRange):
        pt.get_timestep_embedding(torch.tensor([0.5, float("nan")]), 8)
    with pytest.raises(posenc.OutOfRange):
        pt.timestep_embedding(torch.tensor([2.0 ** 31], dtype=torch.float64), 8)
    with pytest.raises(posenc.InvalidArgument):  # a 2^52 frequency
        pt.flux_timestep_embedding(t, 8, time_factor=2.0 ** 52, exact_input=True)
    with pytest.raises(posenc.OutOfRange):  # Flux's product 2^52 t, past 2^31
        pt.flux_timestep_embedding(t, 8, time_factor=2.0 ** 52)
