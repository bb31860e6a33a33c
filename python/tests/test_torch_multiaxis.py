"""posenc.torch's multi-axis drop-ins against HF's code (originals_vl.py): Qwen2VLRotaryEmbedding (Qwen2-VL /
Qwen2.5-VL text) with apply_multimodal_rotary_pos_emb, Qwen3VLTextRotaryEmbedding (interleaved) with
apply_rotary_pos_emb, VisionRotaryEmbedding with apply_rotary_pos_emb_vision, and the fused in-place applies.

- The axis each pair takes is read off HF's own functions (cos / sin whose rows hold the axis index, passed
  through HF's section selection) and must be the posenc spec's map.
- cos / sin: posenc's are the correctly rounded m cos / m sin of the exact angles (bit for bit against MPFR);
  HF's are within HF's own float32 error of them at short positions (test_torch_support.hf_cos_sin_bound: the
  float32 angle error, measured per element, times m, plus the roundings); at 131072, 2^20 and 2^31 - 1 posenc
  stays exact while HF is off by more than ORIGINAL_FLOOR.
- Rotations: the fused applies round the exact rotation once (bit for bit against mpfr_ref's rotation), and HF's
  three roundings with its own cos / sin are within rotation_bound of them; the backward is the transpose.
- The vision angle table: each angle the float32 nearest the exact p * theta^(-2k/dim) (MPFR), on the fast path
  and on the decimal path for near-midpoints (forced here); HF's within p |w32 - w| + one float32 ulp.
"""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import posenc  # noqa: E402
import posenc.torch as pt  # noqa: E402

import mpfr_ref as R  # noqa: E402
import originals as O  # noqa: E402
import originals_vl as V  # noqa: E402
from test_torch_support import (  # noqa: E402
    FMT, ORIGINAL_FLOOR, U, UNIT, angle_error, assert_bits, assert_within, bits, f64, hf_angles, rotation_bound,
    spacing32)

TEXT = ["qwen2_vl_7b", "qwen2_5_vl_7b", "qwen2_vl_2b", "qwen2_5_vl_yarn"]
QWEN3 = ["qwen3_vl_8b", "qwen3_vl_default_section"]
LONG = [131072, 2 ** 20, 2 ** 31 - 1]


def cfg(name):
    return V.vl_configs()[name]


def head_dim(c):
    return c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]


_REFS = {}


def text_ref(name):
    """mpfr_ref.RopeRef of a VL text config (default: base^(-2i/r); yarn: HF's formula, nearest doubles), with .w
    (the frequencies as doubles) as test_torch_support.ref_rope gives."""
    if name not in _REFS:
        c = cfg(name)
        rs, r, base = c["rope_scaling"], head_dim(c), c["rope_theta"]
        if rs.get("type") == "yarn":
            f, a = R.hf_yarn(base, r, rs["factor"], rs["original_max_position_embeddings"])
            ref = R.RopeRef(r, base, 1.0, R.nearest_doubles(f), R.round_f64(a))
        else:
            ref = R.RopeRef(r, base)
        ref.w = np.array([float(v) for v in ref.f])
        _REFS[name] = ref
    return _REFS[name]


def axes_ref(name, rope):
    """mpfr_ref.AxesRef: text_ref's frequencies and attention factor with the rope's axis map (memoised)."""
    key = (name, tuple(rope.axis.tolist()))
    if key not in _REFS:
        _REFS[key] = R.AxesRef(text_ref(name), rope.axes, rope.axis)
    return _REFS[key]


def mrope_positions(seed, b, s, lo=0, hi=2048):
    """[3, b, s]: text runs (equal axes) and image-like rows (fixed t and h, consecutive w), below hi."""
    g = torch.Generator().manual_seed(seed)
    t = torch.randint(lo, hi - 64, (b, 1), generator=g) + torch.arange(s)
    h = t.clone()
    w = t.clone()
    h[:, s // 3:] = torch.randint(lo, hi, (b, 1), generator=g)
    w[:, s // 3:] = torch.randint(lo, hi - s, (b, 1), generator=g) + torch.arange(s - s // 3)
    t[:, 2 * s // 3:] = torch.randint(lo, hi, (b, 1), generator=g)
    return torch.stack([t, h, w])


# ---- which axis each pair takes: read off HF's code -----------------------------------------------------------

def hf_axis_of_multimodal(section, hd):
    """HF's apply_multimodal_rotary_pos_emb with cos = axis index a on row a: the axis of each channel."""
    cos = torch.arange(3.0).view(3, 1, 1, 1).expand(3, 1, 1, hd)
    q = torch.ones(1, 1, 1, hd)
    out, _ = V.apply_multimodal_rotary_pos_emb(q, q, cos, torch.zeros_like(cos), section)
    return out.view(hd).long()


def hf_axis_of_interleaved(section, h):
    freqs = torch.arange(3.0).view(3, 1, 1, 1).expand(3, 1, 1, h).clone()
    return V.apply_interleaved_mrope(freqs, section).view(h).long()


@pytest.mark.parametrize("section,hd", [([16, 24, 24], 128), ([8, 12, 12], 64), ([8, 0, 24], 64), ([2, 1, 1], 8)])
def test_qwen2_vl_map_is_hfs(section, hd):
    axis = hf_axis_of_multimodal(section, hd)
    assert torch.equal(axis[: hd // 2], axis[hd // 2:]), "rotate_half's pairs share an axis"
    c = {"head_dim": hd, "rope_theta": 1e6, "rope_scaling": {"type": "mrope", "mrope_section": section}}
    rope = pt.Qwen2VLRotaryEmbedding(c).multi_rope
    assert rope.axes == (3 if section[2] else 2) and rope.axis.tolist() == axis[: hd // 2].tolist()


@pytest.mark.parametrize("section,hd", [([24, 20, 20], 128), ([12, 10, 10], 64), ([5, 7, 3], 30), ([0, 0, 0], 16),
                                        ([24, 20, 20], 64), ([0, 9, 1], 16), ([1, 1, 9], 16), ([3, 5, 5], 2),
                                        ([3, 5, 5], 4)])
def test_qwen3_vl_map_is_hfs(section, hd):
    axis = hf_axis_of_interleaved(section, hd // 2)
    c = {"head_dim": hd, "rope_theta": 5e6, "rope_scaling": {"rope_type": "default", "mrope_section": section}}
    rope = pt.Qwen3VLTextRotaryEmbedding(c).multi_rope
    assert rope.axes == 3 and rope.axis.tolist() == axis.tolist()
    if section == [24, 20, 20] and hd == 128:
        assert rope == posenc.Rope.qwen3_vl()


def test_vision_map_and_frequencies_are_hfs():
    """HF's table [row * inv_freq | col * inv_freq]: pair i < dim/2 by the row with frequency i, the rest by the
    column with frequency i - dim/2 (read off HF's forward with ids (1, 0) and (0, 1))."""
    for dim in (40, 36, 8):
        orig, new = V.VisionRotaryEmbedding(dim), pt.VisionRotaryEmbedding(dim)
        row, col = orig(torch.tensor([[1, 0]]))[0], orig(torch.tensor([[0, 1]]))[0]
        q = dim // 2
        assert (row[:q] > 0).all() and (row[q:] == 0).all() and (col[:q] == 0).all() and (col[q:] > 0).all()
        assert new.rope.axis.tolist() == [0] * q + [1] * q
        want = R.nearest_doubles([R.inv_freq(10000.0, dim, k) for k in range(q)])  # theta^(-2k/dim)
        assert new.rope.freq.tobytes() == np.tile(want, 2).tobytes()
        assert_bits(new.inv_freq, want.astype(np.float32), "inv_freq")
        assert new.inv_freq.shape == orig.inv_freq.shape and list(new.state_dict()) == []
    assert pt.VisionRotaryEmbedding(40).rope == posenc.Rope.qwen2_vl_vision()
    assert pt.VisionRotaryEmbedding(36).rope == posenc.Rope.qwen3_vl_vision()


# ---- text cos / sin --------------------------------------------------------------------------------------------

def check_text_cos_sin(name, orig, new, pos, x, merged):
    """new(x, pos) against MPFR (bits) and orig(x, pos) (HF's float32 bound); merged: Qwen3's [b, s, hd]."""
    co, so = orig(x, pos)
    cn, sn = new(x, pos)
    hd = head_dim(cfg(name))
    h = hd // 2
    assert cn.shape == co.shape and cn.dtype == co.dtype == x.dtype
    assert_bits(cn[..., h:], cn[..., :h], "cos halves")
    ref = text_ref(name)
    if merged:
        ar = axes_ref(name, new.multi_rope)
        cache = ar.cache(pos.reshape(3, -1).numpy())
        # HF's angle per element: the position of the pair's axis times HF's float32 inv_freq
        axis = new.multi_rope.axis
        p_el = pos.reshape(3, -1).numpy()[axis, :].T  # [n, h]
        a32 = (p_el.astype(np.float32).astype(np.float64) * orig.inv_freq.numpy().astype(np.float64)).astype(
            np.float32)
        bound = float(ref.m) * (np.abs(a32.astype(np.float64) - p_el * ref.w) + 1e-12) + (2 * float(ref.m) + 2) * U
        bound = bound.reshape(*pos.shape[1:], h)
    else:
        cache = ref.cache(pos.reshape(-1).numpy())
        a32 = hf_angles(orig.inv_freq.numpy(), pos.reshape(-1).numpy())
        bound = (float(ref.m) * angle_error(a32, pos.reshape(-1).numpy(), ref.w) + (2 * float(ref.m) + 2) * U)
        bound = bound.reshape(*pos.shape, h)
    if x.dtype == torch.float32:
        assert_bits(cn[..., :h].reshape(-1, h), cache[:, :h], f"{name} cos exact")
        assert_bits(sn[..., :h].reshape(-1, h), cache[:, h:], f"{name} sin exact")
    else:
        fmt = FMT[x.dtype]
        assert_bits(cn[..., :h].reshape(-1, h), R.narrow_from_f32(cache[:, :h], fmt), f"{name} cos {fmt}")
        assert_bits(sn[..., :h].reshape(-1, h), R.narrow_from_f32(cache[:, h:], fmt), f"{name} sin {fmt}")
    # both round float32 values within the float32 bound to the format: at most one step of it further apart
    step = (lambda v: 2.0 * UNIT[x.dtype] * np.maximum(np.abs(f64(v[..., :h])), 2.0 ** -14)) \
        if x.dtype != torch.float32 else (lambda v: 0.0)
    r1 = assert_within(f64(cn[..., :h]), f64(co[..., :h]), bound + step(co), f"{name} cos vs HF")
    r2 = assert_within(f64(sn[..., :h]), f64(so[..., :h]), bound + step(so), f"{name} sin vs HF")
    return max(r1, r2)


@pytest.mark.parametrize("name", TEXT)
def test_qwen2_vl_rotary_matches_hf(name):
    orig, new = V.Qwen2VLRotaryEmbedding(cfg(name)), pt.Qwen2VLRotaryEmbedding(cfg(name))
    ref = text_ref(name)
    assert new.attention_scaling == float(ref.m) and new.attention_scaling == pytest.approx(orig.attention_scaling,
                                                                                            rel=4e-16)
    assert new.mrope_section == [16, 24, 24]
    assert_bits(new.inv_freq, ref.w.astype(np.float32), "inv_freq: the exact frequencies in float32")
    assert list(new.state_dict()) == list(orig.state_dict()) == []
    pos = mrope_positions(1, 2, 40)
    ratio = check_text_cos_sin(name, orig, new, pos, torch.zeros(1), merged=False)
    assert ratio > 0.5, "the bound is HF's own angle error: the data should reach it"
    # 2-D text ids: every axis the same (HF's text model expands them)
    ids = torch.arange(100, 120).unsqueeze(0)
    cn, sn = new(torch.zeros(1), ids)
    c3, s3 = new(torch.zeros(1), ids.unsqueeze(0).expand(3, -1, -1))
    assert cn.shape == (3, 1, 20, head_dim(cfg(name)))
    assert_bits(cn, c3, "2-D ids")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_qwen2_vl_rotary_half_precision(dtype):
    name = "qwen2_5_vl_7b"
    orig, new = V.Qwen2VLRotaryEmbedding(cfg(name)), pt.Qwen2VLRotaryEmbedding(cfg(name))
    check_text_cos_sin(name, orig, new, mrope_positions(2, 1, 24), torch.zeros(1, dtype=dtype), merged=False)


@pytest.mark.parametrize("name", QWEN3)
def test_qwen3_vl_rotary_matches_hf(name):
    orig, new = V.Qwen3VLTextRotaryEmbedding(cfg(name)), pt.Qwen3VLTextRotaryEmbedding(cfg(name))
    assert new.mrope_section == orig.mrope_section == [24, 20, 20]
    assert new.rope.base == 5e6
    pos = mrope_positions(3, 2, 40)
    ratio = check_text_cos_sin(name, orig, new, pos, torch.zeros(1), merged=True)
    assert ratio > 0.5
    cn, _ = new(torch.zeros(1), pos[0])  # 2-D ids
    co, _ = new(torch.zeros(1), pos[0].unsqueeze(0).expand(3, -1, -1))
    assert_bits(cn, co, "2-D ids")
    check_text_cos_sin(name, orig, new, pos[:, :1, :16], torch.zeros(1, dtype=torch.bfloat16), merged=True)


@pytest.mark.parametrize("p", LONG)
def test_text_rotary_long_positions_exact(p):
    """An image at the far end of the range (t fixed, h and w around p): posenc exact, HF off."""
    for name, orig_cls, new_cls, merged in [("qwen2_5_vl_7b", V.Qwen2VLRotaryEmbedding, pt.Qwen2VLRotaryEmbedding,
                                             False),
                                            ("qwen3_vl_8b", V.Qwen3VLTextRotaryEmbedding, pt.Qwen3VLTextRotaryEmbedding,
                                             True)]:
        orig, new = orig_cls(cfg(name)), new_cls(cfg(name))
        pos = torch.tensor([[[p - 4] * 4], [[p - 3] * 4], [[p - 3, p - 2, p - 1, p]]]) if p < 2 ** 31 - 1 else \
            torch.tensor([[[p] * 4], [[p - 1] * 4], [[p - 3, p - 2, p - 1, p]]])
        cn, sn = new(torch.zeros(1), pos)
        co, so = orig(torch.zeros(1), pos)
        h = head_dim(cfg(name)) // 2
        if merged:
            want = axes_ref(name, new.multi_rope).cache(pos.reshape(3, -1).numpy())
        else:
            want = text_ref(name).cache(pos.reshape(-1).numpy())
        assert_bits(cn[..., :h].reshape(-1, h), want[:, :h], f"{name} cos at {p}")
        assert_bits(sn[..., :h].reshape(-1, h), want[:, h:], f"{name} sin at {p}")
        err = max(np.abs(f64(co[..., :h]).reshape(-1, h) - want[:, :h]).max(),
                  np.abs(f64(so[..., :h]).reshape(-1, h) - want[:, h:]).max())
        assert err > ORIGINAL_FLOOR[p], f"{name}: HF's error at {p}: {err}"


# ---- text rotations ----------------------------------------------------------------------------------------------

def exact_rotated(x, ref, pos, heads_first):
    """mpfr_ref's rotation of x (HF's [b, H, s, hd] when heads_first, else [b, s, H, hd]) at pos [3, b, s]."""
    rows = x.detach().numpy() if x.dtype == torch.float32 else bits(x)
    if heads_first:
        rows = rows.transpose(0, 2, 1, 3)
    out = R.rotate_tokens_axes(rows, pos.numpy(), ref, FMT[x.dtype])
    return out.transpose(0, 2, 1, 3) if heads_first else out


def rotation_bound_of(x, cos_o, sin_o, ce, se, unsqueeze_dim, u, exact_roundings=1):
    """test_torch_support.rotation_bound for every element of x with HF's (merged) cos/sin [b, s, hd] and the
    exact ones [b, s, h]; exact_roundings=3 when the exact cos/sin go through HF's formula too (three roundings
    on that side as well, instead of posenc's one)."""
    h = ce.shape[-1]
    ex = (lambda a: a[:, None]) if unsqueeze_dim == 1 else (lambda a: a[:, :, None])
    xx = f64(x)
    c_e, s_e = ex(ce.astype(np.float64)), ex(se.astype(np.float64))
    first, second = rotation_bound(xx[..., :h], xx[..., h:2 * h], ex(f64(cos_o[..., :h])), ex(f64(sin_o[..., :h])),
                                   c_e, s_e, u)
    if exact_roundings > 1:
        ax, ay, extra = np.abs(xx[..., :h]), np.abs(xx[..., h:2 * h]), (exact_roundings - 1) * u
        first = first + extra * (ax * np.abs(c_e) + ay * np.abs(s_e))
        second = second + extra * (ay * np.abs(c_e) + ax * np.abs(s_e))
    bound = np.zeros_like(xx)
    bound[..., :h], bound[..., h:2 * h] = first, second
    return bound


def merged_hf(cos3, sin3, section):
    """HF's per-channel selection of cos / sin [3, b, s, hd] by mrope_section * 2: [b, s, hd]."""
    sec = section * 2
    return (torch.cat([m[i % 3] for i, m in enumerate(cos3.split(sec, dim=-1))], dim=-1),
            torch.cat([m[i % 3] for i, m in enumerate(sin3.split(sec, dim=-1))], dim=-1))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("unsqueeze_dim", [1, 2])
@pytest.mark.parametrize("name", ["qwen2_5_vl_7b", "qwen2_5_vl_yarn", "qwen3_vl_8b"])
def test_fused_text_apply_matches_hf(name, unsqueeze_dim, dtype):
    torch.manual_seed(5)
    qwen3 = name.startswith("qwen3")
    orig = (V.Qwen3VLTextRotaryEmbedding if qwen3 else V.Qwen2VLRotaryEmbedding)(cfg(name))
    new = (pt.Qwen3VLTextRotaryEmbedding if qwen3 else pt.Qwen2VLRotaryEmbedding)(cfg(name))
    c = cfg(name)
    hd, hq, hk = head_dim(c), 4, 2
    b, s = 2, 24
    pos = mrope_positions(7, b, s)
    shape = (lambda H: (b, H, s, hd)) if unsqueeze_dim == 1 else (lambda H: (b, s, H, hd))
    q, k = torch.randn(shape(hq)).to(dtype), torch.randn(shape(hk)).to(dtype)
    cos_o, sin_o = orig(q, pos)
    if qwen3:
        qo, ko = O.apply_rotary_pos_emb(q, k, cos_o, sin_o, unsqueeze_dim=unsqueeze_dim)
        mc, ms = cos_o, sin_o
    else:
        qo, ko = V.apply_multimodal_rotary_pos_emb(q, k, cos_o, sin_o, [16, 24, 24], unsqueeze_dim=unsqueeze_dim)
        mc, ms = merged_hf(cos_o, sin_o, [16, 24, 24])
        # posenc.torch's copy of HF's function, with the same cos/sin: the same bits
        qp, kp = pt.apply_multimodal_rotary_pos_emb(q, k, cos_o, sin_o, [16, 24, 24], unsqueeze_dim=unsqueeze_dim)
        assert_bits(qp, qo, "posenc.torch.apply_multimodal_rotary_pos_emb")
        assert_bits(kp, ko, "posenc.torch.apply_multimodal_rotary_pos_emb")
    ref = axes_ref(name, new.multi_rope)
    qn, kn = q.clone(), k.clone()
    rq, rk = new.apply_rotary(qn, kn, pos, unsqueeze_dim=unsqueeze_dim)
    assert rq is qn and rk is kn
    assert_bits(qn, exact_rotated(q, ref, pos, unsqueeze_dim == 1), "q: the exact rotation, rounded once")
    assert_bits(kn, exact_rotated(k, ref, pos, unsqueeze_dim == 1), "k")
    cache = ref.cache(pos.reshape(3, -1).numpy())
    ce, se = cache[:, :hd // 2].reshape(b, s, -1), cache[:, hd // 2:].reshape(b, s, -1)
    u = UNIT[dtype]
    assert_within(f64(qn), f64(qo), rotation_bound_of(q, mc, ms, ce, se, unsqueeze_dim, u), "q vs HF")
    assert_within(f64(kn), f64(ko), rotation_bound_of(k, mc, ms, ce, se, unsqueeze_dim, u), "k vs HF")
    # the generic function with the module's spec, and the cos/sin path with posenc's cos/sin
    q2 = q.clone()
    pt.apply_rotary(q2, None, pos, new.multi_rope, unsqueeze_dim=unsqueeze_dim)
    assert_bits(q2, qn, "apply_rotary(multi_rope)")


def test_fused_text_apply_text_ids_and_long_positions():
    name = "qwen2_5_vl_7b"
    new = pt.Qwen2VLRotaryEmbedding(cfg(name))
    q = torch.randn(1, 2, 3, 128)
    ids = torch.tensor([[131072, 2 ** 20, 2 ** 31 - 1]])
    q1, q2 = q.clone(), q.clone()
    new.apply_rotary(q1, None, ids)  # [b, s] text ids: every axis the same
    pt.apply_rotary(q2, None, ids, posenc.Rope(128, base=1e6))  # the one-axis rotation
    assert_bits(q1, q2, "text tokens rotate as one axis")
    assert_bits(q1, exact_rotated(q, axes_ref(name, new.multi_rope), ids.expand(3, -1, -1), True), "exact")


@pytest.mark.parametrize("name", ["qwen2_5_vl_7b", "qwen3_vl_8b"])
def test_fused_text_apply_backward_is_the_transpose(name):
    """The gradient through the fused in-place multi-axis rotation equals, bit for bit, the double-precision
    gradient of HF's formula with the same (exact) cos/sin, rounded once to float32."""
    torch.manual_seed(9)
    qwen3 = name.startswith("qwen3")
    new = (pt.Qwen3VLTextRotaryEmbedding if qwen3 else pt.Qwen2VLRotaryEmbedding)(cfg(name))
    b, s = 2, 10
    pos = mrope_positions(11, b, s, hi=1 << 20)
    q0 = torch.randn(b, 3, s, 128, requires_grad=True)
    gq = torch.randn(b, 3, s, 128)
    q = q0.clone()
    new.apply_rotary(q, None, pos)
    assert q.grad_fn is not None
    q.backward(gq)
    cos, sin = pt.rope_cache(new.multi_rope, pos)
    cos[..., 64:], sin[..., 64:] = cos[..., :64], sin[..., :64]
    qd = q0.detach().double().requires_grad_()
    qr, _ = O.apply_rotary_pos_emb(qd, qd, cos.double(), sin.double())
    (qr * gq.double()).sum().backward()
    assert_bits(q0.grad, qd.grad.numpy().astype(np.float32), "q.grad")


def test_qwen3_dynamic_update_and_default_theta():
    """Qwen3-VL's forward carries HF's dynamic_rope_update: a dynamic config's frequencies follow the longest
    position of all three rows; a dict without rope_theta takes the model's default (5e5; Qwen2-VL 1e6)."""
    c = {"head_dim": 64, "max_position_embeddings": 4096, "rope_theta": 1e4,
         "rope_scaling": {"rope_type": "dynamic", "factor": 2.0, "mrope_section": [12, 10, 10]}}
    new = pt.Qwen3VLTextRotaryEmbedding(c)
    pos = torch.stack([torch.arange(8).unsqueeze(0), torch.arange(8).unsqueeze(0), 9000 + torch.arange(8)[None]])
    cn, _ = new(torch.zeros(1), pos)
    grown = posenc.rope_init(64, 1e4, {"rope_type": "dynamic", "factor": 2.0}, max_position_embeddings=4096,
                             seq_len=9008)
    assert new.rope == grown and new.multi_rope == posenc.rope_sections(grown, [12, 10, 10], "interleaved")
    want, _ = pt.rope_cache(new.multi_rope, pos)
    assert_bits(cn[..., :32], want[..., :32], "grown frequencies")
    assert pt.Qwen3VLTextRotaryEmbedding({"head_dim": 128}).rope.base == 5e5
    assert pt.Qwen2VLRotaryEmbedding({"head_dim": 128}).rope.base == 1e6
    # v5: rope_parameters, and a config with a text_config
    v5 = {"text_config": {"head_dim": 128, "rope_parameters": {"rope_type": "default", "rope_theta": 5e6,
                                                               "mrope_section": [24, 20, 20]}}}
    assert pt.Qwen3VLTextRotaryEmbedding(v5).multi_rope == posenc.Rope.qwen3_vl()
    assert pt.Qwen2VLRotaryEmbedding(cfg("qwen2_5_vl_7b")).multi_rope == posenc.Rope.qwen2_5_vl()


@pytest.mark.parametrize("name", ["qwen2_5_vl_7b", "qwen3_vl_8b"])
def test_original_inv_freq_as_each_version_keeps_it(name):
    """transformers v4.57.6's Qwen2-VL / Qwen2.5-VL / Qwen3-VL text rotaries keep original_inv_freq as a plain
    attribute naming the inv_freq tensor, v5 registers it as a non-persistent buffer (a clone): named_buffers(),
    .to() and to_empty() follow the version of the config's format, as the original of that version does."""
    qwen3 = name.startswith("qwen3")
    orig_cls = V.Qwen3VLTextRotaryEmbedding if qwen3 else V.Qwen2VLRotaryEmbedding
    new_cls = pt.Qwen3VLTextRotaryEmbedding if qwen3 else pt.Qwen2VLRotaryEmbedding
    orig, new = orig_cls(cfg(name)), new_cls(cfg(name))
    assert [n for n, _ in new.named_buffers()] == [n for n, _ in orig.named_buffers()] == ["inv_freq"]
    assert new.original_inv_freq is new.inv_freq and orig.original_inv_freq is orig.inv_freq
    for m in (orig, new):
        m.to(torch.float64)
    assert new.inv_freq.dtype == orig.inv_freq.dtype == torch.float64
    for m in (orig, new):  # the attribute is not the module's to convert
        assert type(m.original_inv_freq) is torch.Tensor and not isinstance(m.original_inv_freq, torch.nn.Parameter)
        assert m.original_inv_freq.dtype == torch.float32 and m.original_inv_freq.device.type == "cpu"
    # built on "meta", then to_empty(): the buffer is refilled with posenc's values, the attribute stays meta
    orig, new = orig_cls(cfg(name), device="meta"), new_cls(cfg(name), device="meta")
    for m in (orig, new):
        m.to_empty(device="cpu")
        assert m.original_inv_freq.is_meta and not m.inv_freq.is_meta
    assert_bits(new.inv_freq, new_cls(cfg(name)).inv_freq, "inv_freq after to_empty")
    # v5's format: a buffer of its own, converted and materialised with the module
    c = cfg(name)
    v5 = {k: v for k, v in c.items() if k not in ("rope_scaling", "rope_theta")}
    v5["rope_parameters"] = dict(c["rope_scaling"], rope_theta=c["rope_theta"])
    new = new_cls(v5, device="meta")
    assert [n for n, _ in new.named_buffers()] == ["inv_freq", "original_inv_freq"]
    new.to_empty(device="cpu")
    assert_bits(new.original_inv_freq, new_cls(cfg(name)).inv_freq, "v5 original_inv_freq after to_empty")
    new.to(torch.float64)
    assert new.original_inv_freq.dtype == torch.float64 and new.original_inv_freq is not new.inv_freq


def test_config_objects():
    """HF config objects (attributes, not keys), v4 and v5 layouts, the text config nested as HF's VL configs
    nest it: the same specs as the dicts."""
    from types import SimpleNamespace as NS
    v4 = NS(**cfg("qwen2_5_vl_7b"))
    assert pt.Qwen2VLRotaryEmbedding(v4).multi_rope == posenc.Rope.qwen2_5_vl()
    v5 = NS(text_config=NS(hidden_size=4096, num_attention_heads=32, head_dim=128, max_position_embeddings=262144,
                           rope_parameters={"rope_type": "default", "rope_theta": 5000000.0,
                                            "mrope_section": [24, 20, 20], "mrope_interleaved": True}),
            vision_config=NS(hidden_size=1152, num_heads=16))
    new = pt.Qwen3VLTextRotaryEmbedding(v5)
    assert new.multi_rope == posenc.Rope.qwen3_vl() and new.max_seq_len_cached == 262144
    orig = V.Qwen3VLTextRotaryEmbedding(cfg("qwen3_vl_8b"))
    pos = mrope_positions(4, 1, 16)
    assert_bits(new(torch.zeros(1), pos)[0], pt.Qwen3VLTextRotaryEmbedding(cfg("qwen3_vl_8b"))(torch.zeros(1), pos)[0],
                "object config = dict config")
    assert orig(torch.zeros(1), pos)[0].shape == (1, 16, 128)


# ---- the vision tower --------------------------------------------------------------------------------------------

def exact_angles(ids, dim):
    """MPFR: the float32 nearest p * 1e4^(-2k/dim) for ids [N, 2] -> [N, dim] ([row | col])."""
    q = dim // 2
    out = np.zeros((ids.shape[0], 2, q), np.float32)
    with R.ctx(400):
        f = [R.mpfr(10000.0) ** (R.mpfr(-2 * k) / dim) for k in range(q)]
        for n, row in enumerate(ids.tolist()):
            for a in range(2):
                for k in range(q):
                    out[n, a, k] = R.round_f32(f[k] * row[a])
    return out.reshape(ids.shape[0], dim)


GRIDS = [torch.tensor([[1, 8, 12]]), torch.tensor([[2, 6, 4], [1, 4, 10]]), torch.tensor([[1, 56, 80]])]


@pytest.mark.parametrize("grid", range(len(GRIDS)))
@pytest.mark.parametrize("dim", [40, 36])
def test_vision_angles_exact_and_within_hfs(dim, grid):
    orig, new = V.VisionRotaryEmbedding(dim), pt.VisionRotaryEmbedding(dim)
    ids = V.vision_pos_ids(GRIDS[grid], 2)
    got = new.exact_angles(ids)
    assert got.shape == orig(ids).shape == (ids.shape[0], dim) and got.dtype == torch.float32
    sample = ids[:: max(1, ids.shape[0] // 200)]
    assert_bits(new.exact_angles(sample), exact_angles(sample, dim), "angles: correctly rounded")
    # HF: RN32(p * w32); |HF - exact| <= p |w32 - w| + half an ulp, |posenc - exact| <= half an ulp
    w = np.array([float(R.inv_freq(10000.0, dim, k)) for k in range(dim // 2)])
    w_err = np.abs(orig.inv_freq.numpy().astype(np.float64) - w)
    p = ids.numpy().astype(np.float64)
    bound = (p[:, :, None] * w_err).reshape(ids.shape[0], dim) + spacing32(f64(got))
    assert_within(f64(got), f64(orig(ids)), bound, "vs HF's forward(position_ids)")
    # v4: forward(seqlen) and the table lookup of rot_pos_emb
    table = new.exact_angles(int(GRIDS[grid][:, 1:].max()))
    assert_bits(table, exact_angles(torch.stack([torch.arange(table.shape[0])] * 2, 1), dim)[:, : dim // 2],
                "exact_angles(seqlen)")


@pytest.mark.parametrize("grid", range(len(GRIDS)))
@pytest.mark.parametrize("dim", [40, 36])
def test_vision_forward_is_hfs_op_on_posencs_inv_freq(dim, grid):
    """forward is HF's float32 product (HF's whole work is that one op, so posenc runs the same op): each angle
    RN32(RN32(p) * inv_freq) with posenc's correctly rounded inv_freq, computed here in numpy; forward(seqlen)
    and HF's rot_pos_emb with posenc's module swapped in give the same table."""
    new = pt.VisionRotaryEmbedding(dim)
    ids = V.vision_pos_ids(GRIDS[grid], 2)
    w32 = new.inv_freq.numpy()
    want = (ids.numpy().astype(np.float32)[:, :, None] * w32[None, None, :]).reshape(ids.shape[0], dim)
    assert_bits(new(ids), want, "forward(position_ids)")
    n = int(GRIDS[grid][:, 1:].max())
    assert_bits(new(n), np.arange(n, dtype=np.float32)[:, None] * w32[None, :], "forward(seqlen)")
    assert_bits(V.rot_pos_emb(new, GRIDS[grid], 2), new(ids), "HF's rot_pos_emb with posenc's module swapped in")


# (dim, p, k): p * 1e4^(-2k/dim) so close to a float32 midpoint that the double product rounds to the other
# float32. A search over every p < 2^24 for dim 40, 36 and 44 found 45 products within 2^-50 of a midpoint
# (the decimal path's margin) and this one among them that the double rounds wrongly.
NEAR_MIDPOINTS = [(40, 10084873, 6)]


@pytest.mark.parametrize("dim,p,k", NEAR_MIDPOINTS)
def test_vision_angles_near_a_midpoint(dim, p, k):
    new = pt.VisionRotaryEmbedding(dim)
    ids = torch.tensor([[p, 1], [2, p]])
    want = exact_angles(ids, dim)
    naive = np.float32(float(p) * new.rope.freq[k])
    assert naive != want[0, k] and naive != want[1, dim // 2 + k], "the double product rounds the other way"
    assert_bits(new.exact_angles(ids), want, f"p {p}, k {k}: decided in decimal")


def test_vision_angles_decimal_path(monkeypatch):
    """Every element through the near-midpoint path (decimal arithmetic): the same correctly rounded angles."""
    new = pt.VisionRotaryEmbedding(40)
    ids = torch.tensor([[0, 0], [1, 2], [27, 3], [1000, 77], [2 ** 20, 5], [123456, 2 ** 24 + 1]])
    fast = new.exact_angles(ids)
    monkeypatch.setattr(pt, "_MIDPOINT_MARGIN", 1.0)
    slow = new.exact_angles(ids)
    assert_bits(slow, exact_angles(ids, 40), "decimal path")
    assert_bits(fast, slow, "fast path")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_vision_cos_sin_and_fused_apply(dtype):
    """cos_sin: the exact values; HF's emb.cos() within its angle error; the fused apply rounds the exact rotation
    once, HF's apply_rotary_pos_emb_vision (float32, then cast) within rotation_bound plus its final cast."""
    torch.manual_seed(2)
    dim = 40
    orig, new = V.VisionRotaryEmbedding(dim), pt.VisionRotaryEmbedding(dim)
    ids = V.vision_pos_ids(torch.tensor([[1, 8, 12], [2, 4, 4]]), 2)
    n = ids.shape[0]
    emb = torch.cat([orig(ids)] * 2, dim=-1)
    cos_o, sin_o = emb.cos(), emb.sin()
    cn, sn = new.cos_sin(ids)
    ref = R.AxesRef.of(new.rope)
    cache = ref.cache(ids.t().numpy())
    assert_bits(cn[:, :dim], cache[:, :dim], "cos exact")
    assert_bits(sn[:, dim:], cache[:, dim:], "sin exact")
    a32 = f64(orig(ids))
    exact = ids.numpy().astype(np.float64)[:, :, None] * np.array(ref.ref.f, dtype=np.float64)[None, None, :dim // 2]
    bound = np.abs(a32 - exact.reshape(n, dim)) + 2 * U
    assert_within(f64(cn[:, :dim]), f64(cos_o[:, :dim]), bound, "cos vs HF")
    q, k = torch.randn(n, 4, 2 * dim).to(dtype), torch.randn(n, 2, 2 * dim).to(dtype)
    qo, ko = V.apply_rotary_pos_emb_vision(q, k, cos_o, sin_o)
    qp, kp = pt.apply_rotary_pos_emb_vision(q, k, cos_o, sin_o)
    assert_bits(qp, qo, "posenc.torch.apply_rotary_pos_emb_vision")
    qn, kn = q.clone(), k.clone()
    new.apply_rotary(qn, kn, ids)
    fmt = FMT[dtype]
    rows = lambda t: t.numpy() if dtype == torch.float32 else bits(t)  # noqa: E731
    assert_bits(qn, R.rotate_tokens_axes(rows(q), ids.t().numpy(), ref, fmt), "q exact")
    assert_bits(kn, R.rotate_tokens_axes(rows(k), ids.t().numpy(), ref, fmt), "k exact")
    xx = f64(q)
    c_o, s_o = f64(cos_o[:, None, :dim]), f64(sin_o[:, None, :dim])
    c_e, s_e = cache[:, None, :dim].astype(np.float64), cache[:, None, dim:].astype(np.float64)
    first, second = rotation_bound(xx[..., :dim], xx[..., dim:], c_o, s_o, c_e, s_e, U)
    bound = np.concatenate([first, second], -1)
    if dtype != torch.float32:  # HF rounds its float32 result once more to the format; posenc once in total
        bound = bound * (1 + UNIT[dtype]) + UNIT[dtype] * np.abs(f64(qo)) + UNIT[dtype] * np.abs(f64(qn))
    assert_within(f64(qn), f64(qo), bound, "q vs HF")


def test_vision_fused_backward_and_1d_rows():
    torch.manual_seed(4)
    new = pt.VisionRotaryEmbedding(40)
    ids = V.vision_pos_ids(torch.tensor([[1, 4, 6]]), 2)
    q0 = torch.randn(ids.shape[0], 2, 80, requires_grad=True)
    g = torch.randn(q0.shape)
    q = q0.clone()
    new.apply_rotary(q, None, ids)
    q.backward(g)
    cos, sin = new.cos_sin(ids)
    qd = q0.detach().double().requires_grad_()
    qr, _ = O.apply_rotary_pos_emb(qd, qd, cos.double(), sin.double())  # [N, 1, hd]: HF's formula in double
    (qr * g.double()).sum().backward()
    assert_bits(q0.grad, qd.grad.numpy().astype(np.float32), "q.grad")
    x = torch.randn(ids.shape[0], 80)  # [N, head_dim]: one head
    y = x.clone()
    pt.apply_rotary_vision(y, None, ids, new.rope)
    z = x.clone().unsqueeze(1)
    new.apply_rotary(z, None, ids)
    assert_bits(y, z[:, 0], "[N, head_dim]")


# ---- bad input -----------------------------------------------------------------------------------------------------

def test_multi_axis_bad_input_leaves_tensors_untouched():
    q = torch.randn(1, 2, 5, 128)
    before = q.clone()
    new = pt.Qwen2VLRotaryEmbedding(cfg("qwen2_5_vl_7b"))
    with pytest.raises(ValueError, match=r"position_ids: expected \[3, batch, seq\] \(or \[batch, seq\] text ids\), "
                                         r"got \[4, 1, 5\]"):
        new.apply_rotary(q, None, torch.zeros(4, 1, 5, dtype=torch.long))
    with pytest.raises(ValueError, match=r"got \[3, 1, 1, 5\]"):
        new(q, torch.zeros(3, 1, 1, 5, dtype=torch.long))
    with pytest.raises(ValueError, match=r"positions: expected shape \(3, 5\)"):
        new.apply_rotary(q, None, torch.zeros(3, 1, 4, dtype=torch.long))
    with pytest.raises(IndexError):
        new.apply_rotary(q, None, torch.full((3, 1, 5), 2 ** 31))
    with pytest.raises(TypeError, match="positions must be integers"):
        new.apply_rotary(q, None, torch.zeros(3, 1, 5))
    no_section = pt.Qwen2VLRotaryEmbedding({"head_dim": 128, "rope_scaling": {"type": "mrope"}})
    with pytest.raises(ValueError, match="mrope_section: the config has none"):
        no_section.apply_rotary(q, None, torch.zeros(3, 1, 5, dtype=torch.long))
    bad = pt.Qwen2VLRotaryEmbedding({"head_dim": 128, "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 16]}})
    with pytest.raises(ValueError, match=r"mrope_section \[16, 24, 16\]: three sections summing to rotary_dim / 2 = 64"):
        bad.apply_rotary(q, None, torch.zeros(3, 1, 5, dtype=torch.long))
    with pytest.raises(ValueError, match="expected three sections"):
        pt.Qwen3VLTextRotaryEmbedding({"head_dim": 128, "rope_scaling": {"mrope_section": [24, 20]}})
    negative = pt.Qwen3VLTextRotaryEmbedding({"head_dim": 64, "rope_scaling": {"mrope_section": [24, -1, 20]}})
    with pytest.raises(ValueError, match=r"mrope_section \[24, -1, 20\]: negative sections"):
        negative(q, torch.zeros(3, 1, 5, dtype=torch.long))
    vis = pt.VisionRotaryEmbedding(64)
    with pytest.raises(ValueError, match=r"position_ids: expected \(row, col\) ids \[N, 2\], got \[5, 3\]"):
        vis(torch.zeros(5, 3, dtype=torch.long))
    with pytest.raises(ValueError, match=r"position_ids: expected \[N, 2\] for a rope of 2 axes, got \[2, 5\]"):
        vis.apply_rotary(q[0].transpose(0, 1), None, torch.zeros(2, 5, dtype=torch.long))
    with pytest.raises(ValueError, match="dim must be even"):
        pt.VisionRotaryEmbedding(33)
    assert pt.Qwen2VLRotaryEmbedding(cfg("qwen2_5_vl_7b"), device="meta").inv_freq.is_meta  # as HF: any device
    with pytest.raises(ValueError, match=r"position_ids: expected \[3, \.\.\.\] for a rope of 3 axes"):
        pt.rope_cache(new.multi_rope, torch.zeros(5, dtype=torch.long))
    assert_bits(q, before, "untouched")


def test_qwen3_vl_text_tokens_turn_every_pair():
    """Text tokens at (t, t, t), as HF's get_rope_index gives them: every pair turns by t, pairs 61 and 62 (past
    the height and width sets of [24, 20, 20]) included. llama.cpp's ggml turns those two by its fourth position
    slot, 0 for text (docs/rope.md, "Qwen3-VL's leftover pairs"; the ggml side in test_ggml_exact.cpp)."""
    orig, new = V.Qwen3VLTextRotaryEmbedding(cfg("qwen3_vl_8b")), pt.Qwen3VLTextRotaryEmbedding(cfg("qwen3_vl_8b"))
    ts = [262144, 1000000, 12345]
    pos = torch.tensor(ts).view(1, 1, -1).expand(3, 1, -1)
    cn, sn = new(torch.zeros(1), pos)
    co, so = orig(torch.zeros(1), pos)
    for i, t in enumerate(ts):
        for k in (60, 61, 62, 63):
            angle = t * 5e6 ** (-2 * k / 128)  # the real angle, in double: its error (1e-16 rad) is far below
            for got, what in ((sn, "posenc"), (so, "HF")):
                assert abs(float(got[0, i, k]) - np.sin(angle)) <= 1e-6, f"{what}: sin of pair {k} at {t}"
                assert float(got[0, i, k + 64]) == float(got[0, i, k])  # cat(freqs, freqs)
            assert abs(float(cn[0, i, k]) - np.cos(angle)) <= 1e-7
        assert float(sn[0, i, 61]) > 1e-3 and float(sn[0, i, 62]) > 1e-3  # turned, not left at 0


@pytest.mark.parametrize("dim", [40, 36])
def test_vision_forward_takes_v4s_seqlen(dim):
    """v4's towers call rotary_pos_emb(grid_thw[:, 1:].max()), a 0-dim int64 tensor; v4's forward is
    forward(seqlen). posenc's module takes an int, a 0-dim integer tensor and the keyword, with v4's table."""
    orig, new = V.VisionRotaryEmbedding(dim), pt.VisionRotaryEmbedding(dim)
    grid = torch.tensor([[1, 8, 12], [2, 4, 6]])
    n = grid[:, 1:].max()
    assert n.dim() == 0
    w32 = new.inv_freq.numpy()
    want = np.arange(12, dtype=np.float32)[:, None] * w32[None, :]
    for got, what in ((new(n), "0-dim tensor"), (new(seqlen=n), "seqlen=tensor"), (new(seqlen=12), "seqlen=12"),
                      (new(np.int64(12)), "numpy int")):
        assert got.shape == (12, dim // 2), what
        assert_bits(got, want, what)  # RN32(p * inv_freq), as numpy's float32 product
    assert_bits(orig(n), np.arange(12, dtype=np.float32)[:, None] * orig.inv_freq.numpy()[None, :], "v4's own")
    assert_bits(new.exact_angles(n), new.exact_angles(12), "exact_angles(0-dim tensor)")
    with pytest.raises(TypeError, match="not both"):
        new(torch.zeros(3, 2, dtype=torch.long), seqlen=4)
    with pytest.raises(TypeError, match="missing position_ids"):
        new()
    with pytest.raises(ValueError, match="seqlen: an integer, got a 0-dim torch.float32 tensor"):
        new(torch.tensor(4.0))


def test_upstream_members_compute_default_rope_parameters_and_interleave():
    """v5's static compute_default_rope_parameters (Qwen2-VL, Qwen2.5-VL, Qwen3-VL text rotaries) and Qwen3-VL's
    apply_interleaved_mrope, with upstream's signatures and behaviour: the frequencies each the float32 nearest
    rope_theta^(-2i/dim) (MPFR), HF's float32 evaluation within an ulp; the interleave HF's own (re-typed)."""
    v5 = {"head_dim": 128,
          "rope_parameters": {"rope_type": "default", "rope_theta": 5e6, "mrope_section": [24, 20, 20]}}
    for cls in (pt.Qwen2VLRotaryEmbedding, pt.Qwen3VLTextRotaryEmbedding):
        inv, factor = cls.compute_default_rope_parameters(v5)
        assert factor == 1.0 and inv.dtype == torch.float32 and inv.shape == (64,)
        want = np.array([R.round_f32(R.inv_freq(5e6, 128, i)) for i in range(64)], dtype=np.float32)
        assert_bits(inv, want, f"{cls.__name__}.compute_default_rope_parameters")
        hf = 1.0 / (5e6 ** (torch.arange(0, 128, 2, dtype=torch.int64).float() / 128))
        assert np.max(np.abs(hf.numpy().view(np.int32) - want.view(np.int32))) <= 1
        assert_bits(cls(v5).inv_freq, inv, "the module's own buffer")
        inst, _ = cls(v5).compute_default_rope_parameters(v5, None, None)  # called on an instance, positionally
        assert_bits(inst, inv, "instance call")
    v4 = {"hidden_size": 2048, "num_attention_heads": 16, "rope_theta": 1e6}  # no head_dim: 2048 // 16
    assert pt.Qwen2VLRotaryEmbedding.compute_default_rope_parameters(v4)[0].shape == (64,)
    with pytest.raises(ValueError, match="no rope_theta"):
        pt.Qwen2VLRotaryEmbedding.compute_default_rope_parameters({"head_dim": 128})
    with pytest.raises(ValueError, match="neither head_dim"):
        pt.Qwen2VLRotaryEmbedding.compute_default_rope_parameters({"rope_theta": 1e4})

    new = pt.Qwen3VLTextRotaryEmbedding(cfg("qwen3_vl_8b"))
    torch.manual_seed(3)
    for section in ([24, 20, 20], [12, 10, 10], [30, 30, 4]):
        freqs = torch.randn(3, 2, 5, 64)
        want = V.apply_interleaved_mrope(freqs.clone(), section)
        f = freqs.clone()
        got = new.apply_interleaved_mrope(f, section)
        assert_bits(got, want, f"apply_interleaved_mrope {section}")
        assert got.data_ptr() == f.data_ptr()  # freqs[0], written in place, as upstream


def test_upstream_member_rope_init_fn():
    """v4's rope_init_fn(config, device, seq_len=...): (inv_freq, attention_scaling) of the module's rope type,
    the values of its inv_freq buffer, at seq_len for the dynamic type (what v4's dynamic update calls)."""
    c = {"head_dim": 64, "max_position_embeddings": 4096, "rope_theta": 1e4,
         "rope_scaling": {"rope_type": "dynamic", "factor": 2.0, "mrope_section": [12, 10, 10]}}
    new = pt.Qwen3VLTextRotaryEmbedding(c)
    inv, scale = new.rope_init_fn(new.config, None)
    assert_bits(inv, new.inv_freq, "rope_init_fn at the start")
    assert scale == new.attention_scaling
    grown, _ = new.rope_init_fn(new.config, None, seq_len=9008)
    want = posenc.rope_init(64, 1e4, {"rope_type": "dynamic", "factor": 2.0}, max_position_embeddings=4096,
                            seq_len=9008)
    assert_bits(grown, np.array(want.freq, dtype=np.float64).astype(np.float32), "rope_init_fn at seq_len 9008")
    assert_bits(new.rope_init_fn(c)[0], inv, "the HF-style config itself, rewritten as the module reads it")
    with pytest.raises(TypeError, match="unexpected arguments"):
        new.rope_init_fn(c, None, bogus=1)
    llama = pt.RotaryEmbedding({"head_dim": 128, "rope_theta": 5e5, "max_position_embeddings": 131072,
                                "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                                 "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}})
    inv, scale = llama.rope_init_fn(llama.config, torch.device("cpu"))
    assert_bits(inv, llama.inv_freq, "llama3")
    assert scale == llama.attention_scaling == 1.0


def openpangu_config(section, v5=False, **extra):
    """An openPangu-VL-like text config (head 128, rope_theta 1e6) with vLLM's rope_type "openpangu"."""
    rs = {"rope_type": "openpangu", "mrope_section": section, "mrope_interleaved": True, **extra}
    c = {"hidden_size": 4096, "num_attention_heads": 32, "head_dim": 128, "max_position_embeddings": 32768}
    if v5:
        c["rope_parameters"] = dict(rs, rope_theta=1e6)
    else:
        c.update(rope_theta=1e6, rope_scaling=rs)
    return c


@pytest.mark.parametrize("section,v5", [([22, 21, 21], False), ([24, 20, 20], True), ([40, 24], False)])
def test_openpangu_rotary_is_vllms_map_exact(section, v5):
    """OpenPanguVLTextRotaryEmbedding: vLLM's map (test_rope_vllm's re-typed get_mrope_interleaved_id_list),
    cos / sin the correctly rounded values on vLLM's position rows (two sizes: rows 0 and 1), the fused apply
    the exact rotation rounded once."""
    from test_rope_vllm import vllm_openpangu_axis
    new = pt.OpenPanguVLTextRotaryEmbedding(openpangu_config(section, v5))
    A = len(section)
    axis = vllm_openpangu_axis(section, 64)
    assert new.multi_rope.axes == A and new.multi_rope.axis.tolist() == axis
    assert new.rope.base == 1e6 and new.rope.freq is None
    ref = R.AxesRef(R.RopeRef(128, 1e6), A, axis)
    pos = mrope_positions(8, 2, 30)
    cos, sin = new(torch.zeros(1), pos)
    assert cos.shape == (2, 30, 128)
    want = ref.cache(pos[:A].reshape(A, -1).numpy())
    for half in (slice(0, 64), slice(64, 128)):
        assert_bits(cos[..., half].reshape(-1, 64), want[:, :64], f"{section} cos")
        assert_bits(sin[..., half].reshape(-1, 64), want[:, 64:], f"{section} sin")
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        q = torch.randn(2, 4, 30, 128, generator=torch.Generator().manual_seed(3)).to(dtype)
        k = torch.randn(2, 2, 30, 128, generator=torch.Generator().manual_seed(4)).to(dtype)
        wq, wk = exact_rotated(q, ref, pos[:A], True), exact_rotated(k, ref, pos[:A], True)
        rq, rk = new.apply_rotary(q, k, pos)
        assert rq is q and rk is k
        assert_bits(q, wq, f"{section} q {dtype}")
        assert_bits(k, wk, f"{section} k {dtype}")


@pytest.mark.parametrize("change,match", [
    (dict(rope_type="default"), "reads vLLM's rope_type 'openpangu'"),
    (dict(mrope_interleaved=False), "needs mrope_section and a true mrope_interleaved"),
    (dict(mrope_section=None), "needs mrope_section and a true mrope_interleaved"),
    (dict(factor=2.0), "keys MRotaryEmbeddingInterleaved does not read: factor"),
    (dict(mrope_section=[22, 21, 20]), r"the sum must equal rotary_dim / 2 = 64"),
    (dict(mrope_section=[22, 42, 0]), r"three sizes \[t, h, w\] need t > 0 and w > 0"),
    (dict(mrope_section=[0, 32, 32]), r"three sizes \[t, h, w\] need t > 0 and w > 0"),
    (dict(mrope_section=[16, 16, 16, 16]), "two or three non-negative sizes")])
def test_openpangu_rotary_refuses_what_it_does_not_read(change, match):
    c = openpangu_config([22, 21, 21])
    c["rope_scaling"] = {k: v for k, v in dict(c["rope_scaling"], **change).items() if v is not None}
    with pytest.raises(ValueError, match=match):
        pt.OpenPanguVLTextRotaryEmbedding(c)
