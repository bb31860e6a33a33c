"""posenc.torch.RotaryEmbedding against HF's LlamaRotaryEmbedding (originals.py) for every config of
original_configs(), and apply_rotary (posenc's fused in-place rotation) against apply_rotary_pos_emb.

cos/sin: at positions < 2048 |posenc - HF| <= m |a32 - p w| + (2m + 2) U per element (test_torch_support.
hf_cos_sin_bound: HF's float32 angle error, measured per element against the MPFR frequency, times the attention
factor m, plus the roundings of HF's cos, of m and of the product, plus posenc's half ulp), and posenc's values
are the correctly rounded m cos / m sin of the exact HF frequencies (bit for bit against mpfr_ref's HF formulas).
At 4096 / 131072 / 2^20 / 2^31 - 1 posenc stays exact while HF is off by the amounts of ORIGINAL_FLOOR and more.

The rotation: posenc rounds x c - y s once (bit for bit against mpfr_ref.rotate_rows with the exact cos/sin);
HF's three roundings with its own cos/sin are within rotation_bound of it.
"""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import posenc.torch as pt  # noqa: E402

import mpfr_ref as R  # noqa: E402
import originals as O  # noqa: E402
from test_torch_support import (  # noqa: E402
    FMT, LONG, ORIGINAL_FLOOR, U, UNIT, assert_bits, assert_within, bits, exact_cos_sin, f64, head_dim,
    hf_angles, hf_cos_sin_bound, ref_rope, rotary_dim, rotation_bound)

CONFIGS = list(O.original_configs())


def cfg(name):
    return O.original_configs()[name]


def pair(name):
    return O.LlamaRotaryEmbedding(cfg(name)), pt.RotaryEmbedding(cfg(name))


def short_positions(seed=0):
    """[2, 64]: a stride through 0 .. 2047 and random positions below 2048 (no runtime update for any config)."""
    g = torch.Generator().manual_seed(seed)
    return torch.stack([torch.arange(0, 2048, 32), torch.randint(0, 2048, (64,), generator=g)])


def check_cos_sin(name, orig, new, pos, x=None, seq_len=None, what=""):
    """new(x, pos) against the exact reference (bits, first 16 positions of each row) and against orig(x, pos)
    (the derived bound, every element); returns the largest |HF - exact| seen."""
    x = torch.zeros(1) if x is None else x
    co, so = orig(x, pos)
    cn, sn = new(x, pos)
    r = rotary_dim(cfg(name))
    h = r // 2
    assert cn.shape == co.shape == (*pos.shape, r) and cn.dtype == co.dtype == x.dtype, what
    assert_bits(cn[..., h:], cn[..., :h], "cos halves (HF's cat(freqs, freqs))")
    assert_bits(sn[..., h:], sn[..., :h], "sin halves")
    ref = ref_rope(name, seq_len)
    flat = pos.reshape(-1).numpy()
    ce, se = exact_cos_sin(ref, flat[:16] if x.dtype == torch.float32 else flat)
    k = len(ce)
    if x.dtype == torch.float32:
        assert_bits(cn.reshape(-1, r)[:k, :h], ce, what + " cos exact")
        assert_bits(sn.reshape(-1, r)[:k, :h], se, what + " sin exact")
        bound = hf_cos_sin_bound(orig, ref, flat).reshape(*pos.shape, h)
    else:  # one rounding of the exact float32 values to the narrow format
        fmt = FMT[x.dtype]
        assert_bits(cn.reshape(-1, r)[:, :h], R.narrow_from_f32(ce, fmt), what + " cos " + fmt)
        assert_bits(sn.reshape(-1, r)[:, :h], R.narrow_from_f32(se, fmt), what + " sin " + fmt)
        # both round float32 values within the float32 bound: at most one step of the format apart more
        step = 2.0 * UNIT[x.dtype] * np.maximum(np.abs(f64(co[..., :h])), 2.0 ** -14)
        bound = hf_cos_sin_bound(orig, ref, flat).reshape(*pos.shape, h) + step
    assert_within(f64(cn[..., :h]), f64(co[..., :h]), bound, what + " cos vs HF")
    assert_within(f64(sn[..., :h]), f64(so[..., :h]), bound, what + " sin vs HF")
    return cn, sn, co, so


# ---- cos / sin ---------------------------------------------------------------------------------------------

def test_hf_angle_helper_is_hfs_matmul():
    """hf_angles (float32 p times inv_freq, one rounding) is what HF's batched matmul computes."""
    orig = O.LlamaRotaryEmbedding(cfg("llama3_1_8b"))
    pos = torch.randint(0, 2 ** 31 - 1, (2, 50))
    freqs = (orig.inv_freq[None, :, None].float().expand(2, -1, 1) @ pos[:, None, :].float()).transpose(1, 2)
    assert_bits(freqs, hf_angles(orig.inv_freq.numpy(), pos.numpy()), "HF freqs")


@pytest.mark.parametrize("name", CONFIGS)
def test_rotary_matches_hf(name):
    orig, new = pair(name)
    assert new.rope_type == orig.rope_type
    assert new.max_seq_len_cached == orig.max_seq_len_cached and new.original_max_seq_len == orig.original_max_seq_len
    ref = ref_rope(name)
    assert new.attention_scaling == pytest.approx(orig.attention_scaling, rel=4e-16, abs=0)
    assert new.attention_scaling == float(ref.m)
    assert new.inv_freq.shape == orig.inv_freq.shape and new.inv_freq.dtype == torch.float32
    assert_bits(new.inv_freq, ref.w.astype(np.float32), "inv_freq: the exact frequencies in float32")
    assert list(new.state_dict()) == list(orig.state_dict()) == []  # inv_freq is not persistent in either
    check_cos_sin(name, orig, new, short_positions(), what=name)
    # every position below 2048 against HF (bound only)
    pos = torch.arange(2048).unsqueeze(0)
    co, so = orig(torch.zeros(1), pos)
    cn, sn = new(torch.zeros(1), pos)
    h = rotary_dim(cfg(name)) // 2
    bound = hf_cos_sin_bound(orig, ref, pos[0].numpy())[None]
    ratio = assert_within(f64(cn[..., :h]), f64(co[..., :h]), bound, name + " cos, 0..2047")
    ratio = max(ratio, assert_within(f64(sn[..., :h]), f64(so[..., :h]), bound, name + " sin, 0..2047"))
    assert ratio > 0.5, "the bound is the original's angle error: the data should reach it"


# Helper measurements of HF's cos/sin error at r = 128, base 1e4 (Llama 2): each asserted within a factor 2.
LLAMA2_MEASURED = {4096: 1.2e-4, 131072: 3.4e-3, 2 ** 20: 2.3e-2}


@pytest.mark.parametrize("p", LONG)
@pytest.mark.parametrize("name", CONFIGS)
def test_rotary_long_positions(name, p):
    """posenc's cos/sin at p are the correctly rounded values of the HF formulas (dynamic: the NTK base for
    seq_len p + 1; longrope: the long factors), HF's are off by more than ORIGINAL_FLOOR[p]."""
    orig, new = pair(name)
    pos = torch.tensor([[p]])
    cn, sn = new(torch.zeros(1), pos)
    co, so = orig(torch.zeros(1), pos)
    ref = ref_rope(name, p + 1)
    ce, se = exact_cos_sin(ref, [p])
    h = ref.h
    assert_bits(cn[0, :, :h], ce, f"cos at {p}")
    assert_bits(sn[0, :, :h], se, f"sin at {p}")
    err = max(np.abs(f64(co[0, :, :h]) - ce).max(), np.abs(f64(so[0, :, :h]) - se).max())
    assert err > ORIGINAL_FLOOR[p], f"HF's error at {p}: {err}"
    if p < 2 ** 24:  # HF's error is its angle error: within the same bound as at short positions
        bound = hf_cos_sin_bound(orig, ref, [p])
        assert_within(f64(co[0, :, :h]), ce, bound, "HF within its angle bound")
    if name == "llama2_7b" and p in LLAMA2_MEASURED:
        assert LLAMA2_MEASURED[p] / 2 < err < 2 * LLAMA2_MEASURED[p], err


def test_dynamic_growth_and_reset():
    """Dynamic NTK: recomputed when max(position_ids) + 1 exceeds the cached length, kept while it does not,
    back to the original frequencies once it drops below max_position_embeddings (4096)."""
    name = "dynamic_llama2_7b_x2"
    orig, new = pair(name)
    # (max position, the length the frequencies are for: None = the original's); around each threshold
    steps = [(1000, None), (4095, None), (4096, 4097), (6000, 6001), (5999, 6001), (6000, 6001), (6001, 6002),
             (9000, 9001), (4500, 9001), (4095, 9001), (4094, None), (100, None), (6000, 6001), (3000, None)]
    for top, seq in steps:
        pos = torch.stack([torch.arange(top - 63, top + 1), torch.randint(0, top, (64,))])
        check_cos_sin(name, orig, new, pos, seq_len=seq, what=f"max position {top}")
        assert new.max_seq_len_cached == int(orig.max_seq_len_cached) == (seq or 4096)
        assert_bits(new.inv_freq, ref_rope(name, seq).w.astype(np.float32), "inv_freq")


def test_dynamic_growth_through_apply_rotary():
    """RotaryEmbedding.apply_rotary makes the same runtime update as forward."""
    name = "dynamic_llama2_7b_x2"
    new = pt.RotaryEmbedding(cfg(name))
    pos = torch.arange(8000, 8008).unsqueeze(0)
    q = torch.randn(1, 2, 8, 128)
    want = rotated(q, name, pos, 8008, heads_first=True)
    new.apply_rotary(q, None, pos)
    assert new.max_seq_len_cached == 8008
    assert_bits(q, want, "rotated with the grown frequencies")


def test_longrope_short_long_switch():
    """Phi-3: the short factors while max(position_ids) + 1 <= 4096, the long ones beyond, and back."""
    name = "phi3_mini_128k"
    orig, new = pair(name)
    for top, long_ in [(100, False), (4095, False), (4096, True), (20000, True), (4000, False), (131071, True)]:
        pos = torch.stack([torch.arange(top - 31, top + 1), torch.randint(0, top + 1, (32,))])
        seq = top + 1
        check_cos_sin(name, orig, new, pos, seq_len=seq, what=f"max position {top}")
        ref = ref_rope(name, seq)
        assert_bits(new.inv_freq, ref.w.astype(np.float32), "inv_freq (%s factors)" % ("long" if long_ else "short"))
        assert (seq > 4096) == long_
        assert new.attention_scaling == orig.attention_scaling == pytest.approx(1.1902380714238083, rel=1e-15)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("name", ["llama2_7b", "qwen2_7b_yarn", "phi3_mini_128k"])
def test_rotary_half_precision_outputs(name, dtype):
    """x in bf16 / f16: cos and sin in x.dtype, each the exact float32 value rounded once (as HF's .to())."""
    orig, new = pair(name)
    check_cos_sin(name, orig, new, short_positions(1)[:, :16], x=torch.zeros(1, dtype=dtype), what=str(dtype))


def test_legacy_int_first_signature():
    """RotaryEmbedding(dim, max_position_embeddings=..., base=..., scaling_factor=..., rope_type=...) as HF's
    older LlamaRotaryEmbedding / LlamaLinearScalingRotaryEmbedding / DynamicNTK classes."""
    pos = short_positions(2)
    for kwargs, rs in [(dict(base=10000.0), None),
                       (dict(base=500000.0, max_position_embeddings=8192), None),
                       (dict(base=10000.0, scaling_factor=4.0, rope_type="linear"), {"factor": 4.0, "type": "linear"}),
                       (dict(base=10000.0, scaling_factor=2.0, rope_type="dynamic"),
                        {"factor": 2.0, "type": "dynamic"})]:
        new = pt.RotaryEmbedding(64, **kwargs)
        config = {"head_dim": 64, "rope_theta": kwargs["base"], "rope_scaling": rs,
                  "max_position_embeddings": kwargs.get("max_position_embeddings", 2048)}
        orig = O.LlamaRotaryEmbedding(config)
        ours = pt.RotaryEmbedding(config)
        cn, sn = new(torch.zeros(1), pos)
        c2, s2 = ours(torch.zeros(1), pos)
        assert_bits(cn, c2, f"{kwargs}: legacy == config")
        assert_bits(sn, s2, f"{kwargs}: legacy == config")
        co, so = orig(torch.zeros(1), pos)
        h = 32
        inv = np.asarray(ours.rope.freq if ours.rope.freq is not None else
                         [float(R.inv_freq(kwargs["base"], 64, i)) for i in range(h)])
        a32 = hf_angles(orig.inv_freq.numpy(), pos.numpy())
        bound = np.abs(a32 - pos.numpy()[..., None] * inv) + 4 * U
        assert_within(f64(cn[..., :h]), f64(co[..., :h]), bound, f"{kwargs} cos vs HF")
        # the dim keyword, without the int first
        assert_bits(pt.RotaryEmbedding(dim=64, **kwargs)(torch.zeros(1), pos)[0], cn, "dim=")


def test_legacy_positional_max_position_embeddings():
    new = pt.RotaryEmbedding(96, 4096, base=10000.0)
    assert new.max_seq_len_cached == 4096 and new.rope.rotary_dim == 96


# ---- the rotation ---------------------------------------------------------------------------------------------

def rotated(x, name, pos, seq_len=None, heads_first=True):
    """mpfr_ref.rotate_rows of x (a tensor [b, H, s, hd] heads_first, or [b, s, H, hd]) with the exact cos/sin
    of config `name` at positions pos [b, s]: a float32 array or uint16 bits."""
    ref = ref_rope(name, seq_len)
    b, s = pos.shape
    ce, se = exact_cos_sin(ref, pos.reshape(-1).numpy())
    ce, se = ce.reshape(b, s, -1), se.reshape(b, s, -1)
    ce, se = (ce[:, None], se[:, None]) if heads_first else (ce[:, :, None], se[:, :, None])
    fmt = FMT[x.dtype]
    rows = x.detach().numpy() if x.dtype == torch.float32 else bits(x)
    return R.rotate_rows(rows, ce, se, 0, fmt)


def hf_rotation_bound(q, cos_o, sin_o, name, pos, unsqueeze_dim, u, seq_len=None):
    """rotation_bound for every element of q (shape as q) with HF's cos/sin (c_o) and the exact ones (c_e)."""
    ref = ref_rope(name, seq_len)
    h = ref.h
    b, s = pos.shape
    ce, se = exact_cos_sin(ref, pos.reshape(-1).numpy())
    ce, se = ce.reshape(b, s, h).astype(np.float64), se.reshape(b, s, h).astype(np.float64)
    co, so = f64(cos_o[..., :h]), f64(sin_o[..., :h])
    ex = (lambda a: a[:, None]) if unsqueeze_dim == 1 else (lambda a: a[:, :, None])
    qq = f64(q)
    x, y = qq[..., :h], qq[..., h:2 * h]
    first, second = rotation_bound(x, y, ex(co), ex(so), ex(ce), ex(se), u)
    bound = np.zeros_like(qq)
    bound[..., :h], bound[..., h:2 * h] = first, second
    return bound


@pytest.mark.parametrize("unsqueeze_dim", [1, 2])
@pytest.mark.parametrize("name,hq,hk", [("llama2_7b", 4, 4), ("llama3_1_8b", 8, 2), ("qwen2_7b_yarn", 7, 1),
                                        ("deepseek_v3", 4, 4)])
def test_apply_rotary_matches_hf(name, hq, hk, unsqueeze_dim):
    """apply_rotary (in place, q and k in one pass, GQA head counts) against apply_rotary_pos_emb with HF's own
    cos/sin (unsqueeze_dim=1: [b, heads, seq, dim]; 2: [b, seq, heads, dim])."""
    torch.manual_seed(3)
    orig, new = pair(name)
    hd = head_dim(cfg(name))
    b, s = 2, 24
    pos = torch.stack([torch.arange(s), torch.randint(0, 2048, (s,))])
    shape = (lambda H: (b, H, s, hd)) if unsqueeze_dim == 1 else (lambda H: (b, s, H, hd))
    q, k = torch.randn(shape(hq)), torch.randn(shape(hk))
    cos_o, sin_o = orig(q, pos)
    qo, ko = O.apply_rotary_pos_emb(q, k, cos_o, sin_o, unsqueeze_dim=unsqueeze_dim)
    want_q = rotated(q, name, pos, heads_first=unsqueeze_dim == 1)
    want_k = rotated(k, name, pos, heads_first=unsqueeze_dim == 1)
    qn, kn = q.clone(), k.clone()
    ptr = qn.data_ptr(), kn.data_ptr()
    rq, rk = pt.apply_rotary(qn, kn, pos, new.rope, unsqueeze_dim=unsqueeze_dim)
    assert rq is qn and rk is kn and (qn.data_ptr(), kn.data_ptr()) == ptr, "in place"
    assert_bits(qn, want_q, "q: one rounding of the exact rotation")
    assert_bits(kn, want_k, "k: one rounding of the exact rotation")
    assert_within(f64(qn), f64(qo), hf_rotation_bound(q, cos_o, sin_o, name, pos, unsqueeze_dim, U), "q vs HF")
    assert_within(f64(kn), f64(ko), hf_rotation_bound(k, cos_o, sin_o, name, pos, unsqueeze_dim, U), "k vs HF")
    # the module's method, and HF's function with posenc's own cos/sin (posenc.torch.apply_rotary_pos_emb)
    q2, k2 = q.clone(), k.clone()
    new.apply_rotary(q2, k2, pos, unsqueeze_dim=unsqueeze_dim)
    assert_bits(q2, qn, "RotaryEmbedding.apply_rotary")
    assert_bits(k2, kn, "RotaryEmbedding.apply_rotary")
    cn, sn = new(q, pos)
    q3, k3 = pt.apply_rotary_pos_emb(q, k, cn, sn, unsqueeze_dim=unsqueeze_dim)
    q4, k4 = O.apply_rotary_pos_emb(q, k, cn, sn, unsqueeze_dim=unsqueeze_dim)
    assert_bits(q3, q4, "posenc.torch.apply_rotary_pos_emb is HF's")
    assert_bits(k3, k4, "posenc.torch.apply_rotary_pos_emb is HF's")
    assert_bits(pt.rotate_half(q), O.rotate_half(q), "rotate_half")


def test_apply_rotary_q_only_and_1d_positions():
    name = "llama2_7b"
    rope = pt.RotaryEmbedding(cfg(name)).rope
    q = torch.randn(3, 2, 10, 128)
    pos = torch.arange(5, 15)
    want = rotated(q, name, pos.expand(3, 10))
    rq, rk = pt.apply_rotary(q, None, pos, rope)
    assert rk is None and rq is q
    assert_bits(q, want, "q alone, positions [seq] shared by the batch")


def test_apply_rotary_partial_rotary_gpt_neox():
    """GPT-NeoX-20B: rotary_dim 24 of head_dim 96. Only the first 24 elements of each head row change; they
    agree with HF's partial rotation (apply_rotary_pos_emb on q[..., :24], then cat with the rest)."""
    name = "gpt_neox_20b"
    orig, new = pair(name)
    assert new.rope.rotary_dim == 24 and head_dim(cfg(name)) == 96
    b, H, s = 2, 3, 20
    q, k = torch.randn(b, H, s, 96), torch.randn(b, H, s, 96)
    pos = torch.stack([torch.arange(s), torch.randint(0, 2048, (s,))])
    cos_o, sin_o = orig(q, pos)
    qr, kr = O.apply_rotary_pos_emb(q[..., :24], k[..., :24], cos_o, sin_o)
    qo, ko = torch.cat([qr, q[..., 24:]], -1), torch.cat([kr, k[..., 24:]], -1)
    qn, kn = q.clone(), k.clone()
    pt.apply_rotary(qn, kn, pos, new.rope)
    assert_bits(qn[..., 24:], q[..., 24:], "q pass-through untouched")
    assert_bits(kn[..., 24:], k[..., 24:], "k pass-through untouched")
    assert_bits(qo[..., 24:], qn[..., 24:], "HF's pass-through")
    assert_bits(kn, rotated(k, name, pos), "k: exact rotation of the first 24")
    assert not torch.equal(qn[..., :24], q[..., :24])
    assert_bits(qn, rotated(q, name, pos), "exact rotation of the first 24")
    bq = np.zeros(q.shape)
    bq[..., :24] = hf_rotation_bound(q[..., :24], cos_o, sin_o, name, pos, 1, U)
    assert_within(f64(qn), f64(qo), bq, "q vs HF partial")
    bk = np.zeros(k.shape)
    bk[..., :24] = hf_rotation_bound(k[..., :24], cos_o, sin_o, name, pos, 1, U)
    assert_within(f64(kn), f64(ko), bk, "k vs HF partial")


@pytest.mark.parametrize("unsqueeze_dim", [1, 2])
def test_apply_rotary_fused_qkv_views(unsqueeze_dim):
    """q and k as strided views of one fused QKV projection output: rotated in place, v untouched."""
    name = "llama3_1_8b"
    rope = pt.RotaryEmbedding(cfg(name)).rope
    b, s, H, hd = 2, 9, 4, 128
    qkv = torch.randn(b, s, 3 * H * hd)
    before = qkv.clone()
    if unsqueeze_dim == 2:  # [b, s, H, hd] views
        v5 = qkv.view(b, s, 3, H, hd)
        q, k, v = v5[:, :, 0], v5[:, :, 1], v5[:, :, 2]
    else:  # HF: [b, H, s, hd] views (view + permute, no copy)
        v5 = qkv.view(b, s, 3, H, hd).permute(2, 0, 3, 1, 4)
        q, k, v = v5[0], v5[1], v5[2]
    assert not q.is_contiguous()
    pos = torch.stack([torch.arange(s), torch.arange(100, 100 + s)])
    want_q = rotated(q.contiguous(), name, pos, heads_first=unsqueeze_dim == 1)
    want_k = rotated(k.contiguous(), name, pos, heads_first=unsqueeze_dim == 1)
    v_before = v.clone()
    pt.apply_rotary(q, k, pos, rope, unsqueeze_dim=unsqueeze_dim)
    assert_bits(q.contiguous(), want_q, "q view")
    assert_bits(k.contiguous(), want_k, "k view")
    assert_bits(v, v_before, "v untouched")
    assert not torch.equal(qkv, before)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("unsqueeze_dim", [1, 2])
def test_apply_rotary_half_precision(dtype, unsqueeze_dim):
    """bf16 / f16 q and k: posenc rounds the exact rotation (float32 cos/sin, products exact, the sum in double)
    once to the format; HF works in the format with its cos/sin in that format (three roundings)."""
    name = "qwen2_7b_yarn"
    torch.manual_seed(4)
    orig, new = pair(name)
    b, s = 2, 16
    shape = (b, 4, s, 128) if unsqueeze_dim == 1 else (b, s, 4, 128)
    q, k = torch.randn(shape).to(dtype), torch.randn(shape).to(dtype)
    pos = torch.stack([torch.arange(s), torch.randint(0, 2048, (s,))])
    cos_o, sin_o = orig(q, pos)
    assert cos_o.dtype == dtype
    qo, ko = O.apply_rotary_pos_emb(q, k, cos_o, sin_o, unsqueeze_dim=unsqueeze_dim)
    qn, kn = q.clone(), k.clone()
    pt.apply_rotary(qn, kn, pos, new.rope, unsqueeze_dim=unsqueeze_dim)
    assert qn.dtype == dtype
    assert_bits(qn, rotated(q, name, pos, heads_first=unsqueeze_dim == 1), "q")
    assert_bits(kn, rotated(k, name, pos, heads_first=unsqueeze_dim == 1), "k")
    u = UNIT[dtype]
    assert_within(f64(qn), f64(qo), hf_rotation_bound(q, cos_o, sin_o, name, pos, unsqueeze_dim, u), "q vs HF")
    assert_within(f64(kn), f64(ko), hf_rotation_bound(k, cos_o, sin_o, name, pos, unsqueeze_dim, u), "k vs HF")


@pytest.mark.parametrize("name", ["llama2_7b", "phi3_mini_128k", "deepseek_v2"])
def test_apply_rotary_long_positions(name):
    """At 131072, 2^20 and 2^31 - 1 the rotation is still one rounding of the exact one; HF's rotated values are
    off by (about |q| times) its cos/sin error."""
    orig, new = pair(name)
    pos = torch.tensor([[131072, 2 ** 20, 2 ** 31 - 1]])
    seq = 2 ** 31
    hd = head_dim(cfg(name))
    q = torch.randn(1, 2, 3, hd)
    cos_o, sin_o = orig(q, pos)
    qo, _ = O.apply_rotary_pos_emb(q, q, cos_o, sin_o)
    qn = q.clone()
    new.apply_rotary(qn, None, pos)
    assert_bits(qn, rotated(q, name, pos, seq), "exact at long positions")
    want = rotated(q, name, pos, seq)
    err = np.abs(f64(qo) - want).max(axis=(0, 1, 3))
    assert err[0] > ORIGINAL_FLOOR[131072] and err[1] > ORIGINAL_FLOOR[2 ** 20] and err[2] > 0.1, err


def test_forward_tracks_nothing():
    """RotaryEmbedding.forward runs without torch.no_grad (its cost, 2.5 us, was a tenth of a decode step's
    call): cos and sin still require no gradient, with grad mode on and position ids that require one."""
    cfg = {"head_dim": 64, "max_position_embeddings": 4096, "rope_parameters": {"rope_type": "default",
                                                                               "rope_theta": 1e4}}
    m = pt.RotaryEmbedding(cfg)
    x = torch.zeros(1, 3, 8, requires_grad=True)
    for pos in (torch.tensor([[0, 5, 9]]), torch.tensor([[0.5, 5.0, 9.25]], requires_grad=True)):
        with torch.enable_grad():
            cos, sin = m(x, pos)
        assert not cos.requires_grad and not sin.requires_grad and cos.grad_fn is None
