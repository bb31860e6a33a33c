"""RoPE through the core API: posenc.Rope, rope_cache in its three out forms, rope and rope_qk on float32 /
bfloat16 / float16 arrays and tensors in every layout, bit for bit against MPFR's cos/sin and posenc.h's
rotation on every SIMD path; the RoPE golden digests of tests/test_rope.cpp; rope_init against HF's formulas
(docs/rope.md "Every scheme") evaluated with MPFR; the model presets."""
import pickle

import numpy as np
import pytest

import posenc
import mpfr_ref as R
from helpers import assert_bits, bits, sentinel

K = 2 ** 31
PAD = posenc.PAD
FMTS = ["f32", "bf16", "f16"]
NP_DTYPE = {"f32": np.float32, "bf16": np.uint16, "f16": np.float16}


def data(fmt, shape, seed, specials=False):
    a = R.fill(fmt, int(np.prod(shape)), seed, specials).reshape(shape)
    return a.view(np.float16) if fmt == "f16" else a


ROPES = {
    "r64_halves": posenc.Rope(64),
    "r128_base5e5": posenc.Rope(128, base=5e5),
    "r96_interleaved_scale0.25_m0.7": posenc.Rope(96, "interleaved", position_scale=0.25, attention_scale=0.7),
    "r32_m3_scale-1.5": posenc.Rope(32, base=5e5, position_scale=-1.5, attention_scale=3.0),
    "r2": posenc.Rope(2),
    "r40_explicit_odd": posenc.Rope(40, "interleaved", freq=R.odd_frequencies(20, 1), attention_scale=1.369),
    "r30_explicit_m2^-64": posenc.Rope(30, freq=R.odd_frequencies(15, 2), position_scale=0.75,
                                       attention_scale=2.0 ** -64),
    "r24_explicit_m2^64": posenc.Rope(24, "gptj", freq=R.odd_frequencies(12, 3), attention_scale=2.0 ** 64),
}
_REFS = {}


def ref_of(name):
    if name not in _REFS:
        _REFS[name] = R.RopeRef.of(ROPES[name])
    return _REFS[name]


POS = [0, 1, 4096, 131072, K - 1, -(K - 1), PAD, 1234567, 7, 7, -3]


# ---- the Rope object ----------------------------------------------------------------------------------------

def test_rope_fields_equality_pickle_and_variants():
    r = posenc.Rope(40, "interleaved", base=5e5, position_scale=0.5, freq=R.odd_frequencies(20, 1),
                    attention_scale=1.5)
    assert (r.rotary_dim, r.pairs, r.base, r.position_scale, r.attention_scale) == (
        40, posenc.RopePairs.INTERLEAVED, 5e5, 0.5, 1.5)
    f = r.freq
    assert f.dtype == np.float64 and f.tolist() == R.odd_frequencies(20, 1)
    f[0] = 99.0  # a copy
    assert r.freq[0] == 1.0
    assert posenc.Rope(8).freq is None
    assert pickle.loads(pickle.dumps(r)) == r
    assert r != posenc.Rope(40, "interleaved", base=5e5, position_scale=0.5, freq=R.odd_frequencies(20, 2),
                            attention_scale=1.5)
    assert r.with_pairs("halves").pairs == posenc.RopePairs.HALVES
    assert r.with_position_scale(2.0).position_scale == 2.0
    assert r.with_attention_scale(0.25).attention_scale == 0.25
    assert posenc.Rope(8, "neox") == posenc.Rope(8, posenc.RopePairs.HALVES)
    assert posenc.Rope(8, "GPTJ") == posenc.Rope(8, 1)
    assert "rotary_dim=40" in repr(r) and "interleaved" in repr(r) and "freq=[20 values]" in repr(r)


# ---- the cache ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(ROPES))
def test_rope_cache_three_out_forms(isa, name):
    rope, ref = ROPES[name], ref_of(name)
    h, r = rope.rotary_dim // 2, rope.rotary_dim
    want = ref.cache(POS)
    cos, sin = posenc.rope_cache(rope, positions=POS)
    assert cos.shape == (len(POS), h) and cos.dtype == np.float32
    assert_bits(cos, want[:, :h], f"{name} cos")
    assert_bits(sin, want[:, h:], f"{name} sin")
    # ONNX Runtime's two caches: column slices of wider buffers, gaps untouched
    cb, sb = sentinel((len(POS), h + 3), np.float32), sentinel((len(POS), h + 1), np.float32)
    res = posenc.rope_cache(rope, positions=np.array(POS), out=(cb[:, 2:2 + h], sb[:, 1:]))
    assert res[0].base is cb and res[1].base is sb
    assert_bits(cb[:, 2:2 + h], want[:, :h], f"{name} cos out")
    assert_bits(sb[:, 1:], want[:, h:], f"{name} sin out")
    assert (bits(cb[:, :2]) == 0x7FBADBAD).all() and (bits(cb[:, 2 + h:]) == 0x7FBADBAD).all()
    assert (bits(sb[:, 0]) == 0x7FBADBAD).all()
    # vLLM's cos_sin_cache: one (n, r) array
    vl = sentinel((len(POS), r), np.float32)
    assert posenc.rope_cache(rope, positions=POS, out=vl) is vl
    assert_bits(vl, want, f"{name} vLLM layout")
    # runs: first + t, n given or taken from out
    run = ref.cache(list(range(-40, 30)))
    c2, s2 = posenc.rope_cache(rope, 70, -40)
    assert_bits(np.concatenate([c2, s2], axis=1), run, f"{name} run")
    vl = np.empty((70, r), np.float32)
    posenc.rope_cache(rope, first=-40, out=vl)
    assert_bits(vl, run, f"{name} run, n from out")
    pair = [np.empty((70, h), np.float32), np.empty((70, h), np.float32)]
    posenc.rope_cache(rope, None, -40, out=pair)  # a list works as the pair
    assert_bits(np.concatenate(pair, axis=1), run, f"{name} run, list out")


@pytest.mark.parametrize("name", list(ROPES))
def test_rope_cache_twice(isa, name):
    """twice=True (HF's layout, cat(freqs, freqs)): (n, r) cos and sin whose rows hold the r/2 values twice, new
    or into out=(cos, sin) (strided rows; the gap untouched); a single out array is refused by name, and so is an
    out pair of (n, r/2)."""
    rope, ref = ROPES[name], ref_of(name)
    h, r = rope.rotary_dim // 2, rope.rotary_dim
    want = ref.cache(POS)
    cos, sin = posenc.rope_cache(rope, positions=POS, twice=True)
    assert cos.shape == sin.shape == (len(POS), r)
    for half in (slice(0, h), slice(h, r)):
        assert_bits(cos[:, half], want[:, :h], f"{name} cos twice")
        assert_bits(sin[:, half], want[:, h:], f"{name} sin twice")
    cb, sb = sentinel((len(POS), r + 2), np.float32), sentinel((len(POS), r + 2), np.float32)
    posenc.rope_cache(rope, positions=POS, out=(cb[:, :r], sb[:, 1:r + 1]), twice=True)
    assert_bits(cb[:, :r], cos, f"{name} cos twice out")
    assert_bits(sb[:, 1:r + 1], sin, f"{name} sin twice out")
    assert (bits(cb[:, r:]) == 0x7FBADBAD).all() and (bits(sb[:, 0]) == 0x7FBADBAD).all()
    with pytest.raises(ValueError, match="twice"):
        posenc.rope_cache(rope, positions=POS, out=np.empty((len(POS), r), np.float32), twice=True)
    with pytest.raises(ValueError):
        posenc.rope_cache(rope, positions=POS, out=(np.empty((len(POS), h), np.float32),) * 2, twice=True)


def test_rope_cache_torch_outputs(isa):
    torch = pytest.importorskip("torch")
    rope, ref = ROPES["r128_base5e5"], ref_of("r128_base5e5")
    vl = torch.zeros(len(POS), 128)
    assert posenc.rope_cache(rope, positions=torch.tensor(POS), out=vl) is vl
    assert_bits(vl, ref.cache(POS), "torch vLLM cache")
    c, s = torch.zeros(len(POS), 64), torch.zeros(len(POS), 64)
    posenc.rope_cache(rope, positions=POS, out=(c, s))
    assert_bits(torch.cat([c, s], 1), ref.cache(POS), "torch pair")


# ---- the rotation -------------------------------------------------------------------------------------------

ROT_ROPES = ["r64_halves", "r96_interleaved_scale0.25_m0.7", "r40_explicit_odd", "r2", "r32_m3_scale-1.5"]


@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("name", ROT_ROPES)
def test_rope_every_layout(isa, name, fmt):
    rope, ref = ROPES[name], ref_of(name)
    r = rope.rotary_dim
    d = r + 5  # partial rotary: the tail of each head row stays
    seed = 100 + len(name) * 3 + FMTS.index(fmt)
    # [T, D], first + t
    x = data(fmt, (9, d), seed)
    want = R.rotate_tokens(x, range(1000, 1009), ref, fmt)
    assert posenc.rope(rope, x, first=1000) is x
    assert_bits(x, want, f"{name} {fmt} [T, D]")
    # [T, H, D], explicit positions with PAD and repeats
    x = data(fmt, (len(POS), 3, d), seed + 1)
    want = R.rotate_tokens(x, POS, ref, fmt)
    posenc.rope(rope, x, positions=POS)
    assert_bits(x, want, f"{name} {fmt} [T, H, D]")
    # [B, T, H, D], per-batch positions
    x = data(fmt, (2, 6, 2, d), seed + 2)
    pos = np.array([[5, 6, 7, PAD, 9, 10], [0, 0, K - 1, -5, 3, 2]], np.int64)
    want = R.rotate_tokens(x, pos, ref, fmt)
    posenc.rope(rope, x, positions=pos)
    assert_bits(x, want, f"{name} {fmt} [B, T, H, D]")
    # HF's [B, H, S, D] through transpose(0, 2, 1, 3): token stride D, head stride S * D
    x = data(fmt, (2, 3, 7, d), seed + 3)
    want = R.rotate_tokens(x.transpose(0, 2, 1, 3), range(-3, 4), ref, fmt).transpose(0, 2, 1, 3)
    posenc.rope(rope, x.transpose(0, 2, 1, 3), first=-3)
    assert_bits(x, want, f"{name} {fmt} [B, H, S, D] transposed")
    # the same with heads_first=True, no transpose; and [H, T, D] (rank 3) both ways
    x = data(fmt, (2, 3, 7, d), seed + 3)
    posenc.rope(rope, x, first=-3, heads_first=True)
    assert_bits(x, want, f"{name} {fmt} [B, H, S, D] heads_first")
    x = data(fmt, (3, 7, d), seed + 5)
    want = R.rotate_tokens(x.transpose(1, 0, 2), POS[:7], ref, fmt).transpose(1, 0, 2)
    y = x.copy()
    posenc.rope(rope, x.transpose(1, 0, 2), positions=POS[:7])
    assert_bits(x, want, f"{name} {fmt} [H, T, D] transposed")
    posenc.rope(rope, y, positions=POS[:7], heads_first=True)
    assert_bits(y, want, f"{name} {fmt} [H, T, D] heads_first")
    # head rows inside a wider buffer (strided tokens and heads), the rest untouched
    buf = data(fmt, (5, 4, d + 6), seed + 4)
    want = buf.copy()
    want[:, 1:3, 2:2 + d] = R.rotate_tokens(buf[:, 1:3, 2:2 + d], [3, PAD, 4, 5, 77777], ref, fmt)
    posenc.rope(rope, buf[:, 1:3, 2:2 + d], positions=[3, PAD, 4, 5, 77777])
    assert_bits(buf, want, f"{name} {fmt} strided heads")


@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("name", ["r64_halves", "r40_explicit_odd", "r32_m3_scale-1.5"])
def test_rope_inverse(isa, name, fmt):
    """Rope.inverse() (posenc_rope_inverse): position_scale negated, nothing else; at p, the MPFR rotation by
    -p f_i (the reference of the inverse spec), and the bytes of the forward spec at -p."""
    rope = ROPES[name]
    inv = rope.inverse()
    assert inv.position_scale == -rope.position_scale and inv.inverse() == rope
    assert (inv.rotary_dim, inv.pairs, inv.base, inv.attention_scale) == (
        rope.rotary_dim, rope.pairs, rope.base, rope.attention_scale)
    assert (inv.freq is None) == (rope.freq is None) and (inv.freq is None or (inv.freq == rope.freq).all())
    pos = [p for p in POS if p != PAD]
    x = data(fmt, (len(pos), 2, rope.rotary_dim + 3), 4400 + len(name))
    y = x.copy()
    want = R.rotate_tokens(x, pos, R.RopeRef.of(inv), fmt)
    posenc.rope(inv, x, positions=pos)
    assert_bits(x, want, f"{name} {fmt} inverse at p")
    posenc.rope(rope, y, positions=[-p for p in pos])
    assert_bits(x, y, f"{name} {fmt} inverse at p == forward at -p")


@pytest.mark.parametrize("fmt", FMTS)
def test_rope_qk_gqa_fused_qkv_and_k_none(isa, fmt):
    rope, ref = ROPES["r64_halves"], ref_of("r64_halves")
    d = 72
    # GQA: 8 q heads, 2 k heads, separate arrays
    q, k = data(fmt, (5, 8, d), 11), data(fmt, (5, 2, d), 12)
    pos = [4095, 4096, PAD, 0, -7]
    wq, wk = R.rotate_tokens(q, pos, ref, fmt), R.rotate_tokens(k, pos, ref, fmt)
    res = posenc.rope_qk(rope, q, k, positions=pos)
    assert res[0] is q and res[1] is k
    assert_bits(q, wq, f"{fmt} GQA q")
    assert_bits(k, wk, f"{fmt} GQA k")
    # fused QKV [B, T, Hq + 2 Hk, D]: q = [:, :, :4], k = [:, :, 4:6], v untouched
    qkv = data(fmt, (2, 70, 8, d), 13)
    want = qkv.copy()
    want[:, :, :4] = R.rotate_tokens(qkv[:, :, :4], range(-35, 35), ref, fmt)
    want[:, :, 4:6] = R.rotate_tokens(qkv[:, :, 4:6], range(-35, 35), ref, fmt)
    posenc.rope_qk(rope, qkv[:, :, :4], qkv[:, :, 4:6], first=-35)
    assert_bits(qkv, want, f"{fmt} fused QKV")
    # k None
    q = data(fmt, (4, 3, d), 14)
    wq = R.rotate_tokens(q, [1, 2, 3, 4], ref, fmt)
    assert posenc.rope_qk(rope, q, None, first=1) == (q, None)
    assert_bits(q, wq, f"{fmt} k None")
    # rope_qk equals rope on q then on k
    q, k = data(fmt, (6, 4, d), 15), data(fmt, (6, 4, d), 16)
    q2, k2 = q.copy(), k.copy()
    posenc.rope_qk(rope, q, k, positions=POS[:6])
    posenc.rope(rope, q2, positions=POS[:6])
    posenc.rope(rope, k2, positions=POS[:6])
    assert_bits(q, q2, f"{fmt} qk vs q")
    assert_bits(k, k2, f"{fmt} qk vs k")


def to_torch(x, fmt):
    import torch

    if fmt == "bf16":
        return torch.from_numpy(x.view(np.int16).copy()).view(torch.bfloat16)
    return torch.from_numpy(x.copy())


def test_rope_torch_tensors_hf_layout(isa):
    torch = pytest.importorskip("torch")
    rope, ref = ROPES["r128_base5e5"], ref_of("r128_base5e5")
    pos = np.array([[0, 1, 2, 3, 4, 5], [9, PAD, 11, 12, 13, 14]])
    for fmt in FMTS:
        x = data(fmt, (2, 4, 6, 128), 21)  # HF's [B, H, S, D]
        xt = to_torch(x, fmt)
        want = R.rotate_tokens(x.transpose(0, 2, 1, 3), pos, ref, fmt).transpose(0, 2, 1, 3)
        q = xt.transpose(1, 2)  # [B, S, H, D] view
        assert posenc.rope(rope, q, positions=torch.from_numpy(pos)) is q
        assert_bits(xt, want, f"torch {fmt}")
        qt, kt = to_torch(x, fmt), to_torch(x[:, :2], fmt)
        posenc.rope_qk(rope, qt, kt, first=100, heads_first=True)
        assert_bits(qt, R.rotate_tokens(x.transpose(0, 2, 1, 3), range(100, 106), ref, fmt).transpose(0, 2, 1, 3),
                    f"torch {fmt} qk q")
        assert_bits(kt, R.rotate_tokens(x[:, :2].transpose(0, 2, 1, 3), range(100, 106), ref,
                                        fmt).transpose(0, 2, 1, 3), f"torch {fmt} qk k")


@pytest.mark.parametrize("fmt", FMTS)
def test_nan_and_infinities_in_x(isa, fmt):
    # tests/test_rope.cpp: the formula where it is not NaN, posenc.h's NaN rule where it is, on every path;
    # position 0 (sin 0) makes inf * 0
    for name in ("r64_halves", "r24_explicit_m2^64"):
        rope, ref = ROPES[name], ref_of(name)
        pos = R.packed(3, 70)
        pos[0] = 0
        x = data(fmt, (70, 3, rope.rotary_dim + 5), 999 + FMTS.index(fmt), specials=True)
        want = R.rotate_tokens(x, pos, ref, fmt)
        assert np.isnan(R.widen(want if fmt != "f16" else want.view(np.uint16), fmt)).sum() > 4
        posenc.rope(rope, x, positions=pos)
        assert_bits(x, want, f"{name} {fmt} NaN rule")


# ---- golden digests (tests/test_rope.cpp) --------------------------------------------------------------------

ROPE_GOLDENS = [
    ("cache r=128 base 5e5, scattered and extreme positions", (128, 0, 5e5, 1.0, None, 1.0), True, "f32", 8, 0,
     [0, 1, 4096, 131072, K - 1, -(K - 1), PAD, 1234567],
     "3b15244a606cfe5e98ca2b8461ddb9bc74cf09c9284f279a07999586941b3722"),
    ("cache r=96 m 1.369 scale 0.25, positions -40..29", (96, 0, 1e4, 0.25, None, 1.369), True, "f32", 70, -40,
     None, "67ea95bcb8db282ae9fdd06dac21c08a193d62289c79ff410ce858943a90f520"),
    ("qk f32 halves r=64 fused QKV 4/2 d=72, first + t", (64, 0, 1e4, 1.0, None, 1.0), False, "f32", 66, 1000,
     None, "1b86338b05beaef24b3b197048d7e380f827ea4e1ae56d3a224a634648758640"),
    ("qk bf16 interleaved r=40 explicit frequencies, m 0.7", (40, 1, 1e4, 1.0, R.odd_frequencies(20, 5), 0.7),
     False, "bf16", 5, 0, [7, 7, PAD, 2000000000, -3],
     "398cbf3d5453afab8633722afa3aa90fb98ea5369e3ffd7f137cf5c317dd7d2d"),
    ("qk f16 halves r=32 base 5e5 m 3, packed", (32, 0, 5e5, 1.0, None, 3.0), False, "f16", 40, 0, R.packed(8, 40),
     "f8bd4ba0db04892d7a5c3bc6bb3364272ca7c50cc1854a4242db23a928f4282e"),
]


def golden_rope(g):
    r, pairs, base, scale, freq, m = g[1]
    return posenc.Rope(r, posenc.RopePairs(pairs), base, scale, freq, m)


def golden_input(g):
    r = g[1][0]
    d = r + 8
    return data(g[3], (g[4], 8, d), 2026)  # [T, 8 heads, d]: 4 q, 2 k, 2 v heads


def golden_positions(g):
    return g[6] if g[6] is not None else list(range(g[5], g[5] + g[4]))


@pytest.mark.parametrize("g", ROPE_GOLDENS, ids=[g[0] for g in ROPE_GOLDENS])
def test_rope_golden_digests_are_those_of_mpfr(g):
    r, pairs, base, scale, freq, m = g[1]
    ref = R.RopeRef(r, base, scale, freq, m, pairs)
    pos = golden_positions(g)
    if g[2]:
        want = ref.cache(pos)
    else:
        x = golden_input(g)
        want = x.copy()
        want[:, :6] = R.rotate_tokens(x[:, :6], pos, ref, g[3])
    assert R.sha256(want) == g[7]


@pytest.mark.parametrize("g", ROPE_GOLDENS, ids=[g[0] for g in ROPE_GOLDENS])
def test_every_path_reproduces_the_rope_golden_digests(isa, g):
    rope = golden_rope(g)
    if g[2]:
        out = np.empty((g[4], g[1][0]), np.float32)
        if g[6] is None:
            posenc.rope_cache(rope, g[4], g[5], out=out)
        else:
            posenc.rope_cache(rope, positions=g[6], out=out)
        assert R.sha256(out) == g[7]
    else:
        x = golden_input(g)
        posenc.rope_qk(rope, x[:, :4], x[:, 4:6], positions=g[6], first=g[5])
        assert R.sha256(x) == g[7]


# ---- rope_init against HF's formulas ------------------------------------------------------------------------

def test_rope_init_keys_other_runtimes_read_are_refused_others_warned():
    """A key that another runtime reads for the same rope_type to change the frequencies (vLLM: yarn's
    "attn_factor" / "extrapolation_factor"; posenc's deepseek_yarn reads them) is refused by name: posenc's
    scheme would silently compute other values. A key nobody reads for that type gets a warning, as HF's validation gives; the keys
    every scheme may meet pass silently. HunYuan's dynamic "alpha" is read: vLLM's base * alpha^(r/(r-2))."""
    ext = [1.0] * 32
    refused = [({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096, "attn_factor": 1.0},
                "attn_factor"),
               ({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096,
                 "extrapolation_factor": 0.5}, "extrapolation_factor")]
    for scaling, key in refused:
        message = r"scaling\['%s'\]: another runtime's %s reads it" % (key, scaling["rope_type"])
        with pytest.raises(ValueError, match=message):
            posenc.rope_init(64, 1e4, scaling)
    with pytest.warns(UserWarning, match="rope_type dynamic does not read: bogus_key"):
        r = posenc.rope_init(64, 1e4, {"rope_type": "dynamic", "factor": 2.0, "bogus_key": 1},
                             max_position_embeddings=4096)
    assert r == posenc.rope_init(64, 1e4, {"rope_type": "dynamic", "factor": 2.0}, max_position_embeddings=4096)
    hunyuan = posenc.rope_init(128, 1e4, {"rope_type": "dynamic", "factor": 2.0, "alpha": 1000.0},
                               max_position_embeddings=32768, seq_len=10 ** 6)  # alpha wins, as in vLLM
    with R.ctx(R.PREC):
        lnb = R.gmpy2.log(R.mpfr(1e4)) + R.gmpy2.log(R.mpfr(1000.0)) * 128 / 126
        want = [R.gmpy2.exp(lnb * (-2 * i) / 128) for i in range(64)]
    check_freqs(hunyuan, want, "HunYuan's dynamic alpha 1000")
    with pytest.raises(ValueError, match=r"scaling\['alpha'\]: a positive number"):
        posenc.rope_init(128, 1e4, {"rope_type": "dynamic", "alpha": 0})
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        posenc.rope_init(128, 1e6, {"rope_type": "default", "rope_theta": 1e6, "mrope_section": [16, 24, 24],
                                    "partial_rotary_factor": 1.0, "truncate": True,
                                    "original_max_position_embeddings": 32768, "max_position_embeddings": 32768})


def test_rope_types_is_each_types_one_definition():
    """posenc.rope_types() (posenc_rope_type_keys): every rope type once, its columns; the dict reader refuses each
    type's "elsewhere" keys by name and reads its aliases as the type; posenc.torch reads transformers' keys from it.
    Spelled out here, independently of lib/setup/rope_types.hpp."""
    t = posenc.rope_types()
    assert list(t) == ["default", "linear", "dynamic", "yarn", "llama3", "longrope", "proportional", "ntk",
                       "deepseek_yarn", "yarn_log", "theta_scale", "telechat3"]
    assert set(t["yarn"]) == {"summary", "fields", "accepted", "transformers", "elsewhere", "aliases"}
    assert t["yarn"]["elsewhere"] == ["extrapolation_factor", "attn_factor", "apply_yarn_scaling"]
    assert t["longrope"]["aliases"] == ["su"] and t["telechat3"]["aliases"] == ["telechat3_yarn"]
    assert t["deepseek_yarn"]["accepted"] == ["rope_dim", "is_deepseek_v4"]
    assert [n for n, row in t.items() if row["transformers"] is None] == [
        "ntk", "deepseek_yarn", "yarn_log", "theta_scale", "telechat3"]
    for name, row in t.items():
        for key in row["elsewhere"]:
            with pytest.raises(ValueError, match=r"scaling\['%s'\]: another runtime's %s reads it" % (key, name)):
                posenc.rope_init(64, 1e4, {"rope_type": name, "factor": 4.0, "original_max_position_embeddings": 4096,
                                           key: 1.0})
    assert (posenc.rope_init(64, 1e4, {"rope_type": "telechat3_yarn", "factor": 4.0,
                                       "original_max_position_embeddings": 4096}) ==
            posenc.rope_init(64, 1e4, {"rope_type": "telechat3", "factor": 4.0,
                                       "original_max_position_embeddings": 4096}))
    pt = pytest.importorskip("posenc.torch")
    assert pt._HF_READS == {
        "default": (), "linear": ("factor",), "dynamic": ("factor",),
        "yarn": ("factor", "beta_fast", "beta_slow", "mscale", "mscale_all_dim", "attention_factor"),
        "llama3": ("factor", "low_freq_factor", "high_freq_factor"),
        "longrope": ("factor", "short_factor", "long_factor", "attention_factor"),
        "proportional": ("factor", "partial_rotary_factor")}


def check_freqs(rope, exact, what):
    got = rope.freq
    assert got is not None, what
    want = R.nearest_doubles(exact)
    assert got.tobytes() == want.tobytes(), f"{what}: first difference at {int(np.argmax(got != want))}"


def test_rope_init_default():
    for base in (1e4, 1e6, 5e5):
        for scaling in (None, {"rope_type": "default"}, {"type": "default", "factor": 8.0}):
            if scaling and "factor" in scaling:  # default reads no factor: ignored with a warning, as HF
                with pytest.warns(UserWarning, match="rope_type default does not read: factor"):
                    r = posenc.rope_init(128, base, scaling)
            else:
                r = posenc.rope_init(128, base, scaling)
            assert (r.rotary_dim, r.base, r.position_scale, r.attention_scale, r.freq) == (128, base, 1.0, 1.0, None)
            assert r.pairs == posenc.RopePairs.HALVES
    assert posenc.rope_init(64, 1e4, pairs="interleaved").pairs == posenc.RopePairs.INTERLEAVED
    assert posenc.Rope.llama2() == posenc.rope_init(128, 1e4)
    assert posenc.Rope.mistral_7b_v02() == posenc.rope_init(128, 1e6)
    assert posenc.Rope.qwen2() == posenc.rope_init(128, 1e6)
    assert posenc.Rope.gpt_neox_20b() == posenc.rope_init(24, 1e4)
    assert posenc.Rope.gpt_j_6b() == posenc.rope_init(64, 1e4, pairs="gptj")


def test_minimax_m3_preset():
    """Rope.minimax_m3(): MiniMax-M3's text partial RoPE, 64 rotated elements (of a 128 head), halves, base 5e6
    (MiniMaxM3VLTextConfig's rotary_dim and default_theta); its cos / sin at short and far positions are the
    correctly rounded values of 5e6^(-2i/64) p (MPFR), and it rotates only the first 64 of a 128-wide head."""
    r = posenc.Rope.minimax_m3()
    assert r == posenc.rope_init(64, 5e6)
    assert (r.rotary_dim, r.base, r.pairs, r.freq, r.attention_scale, r.axes) == (
        64, 5e6, posenc.RopePairs.HALVES, None, 1.0, 1)
    pos = np.array([0, 1, 7, 4095, 131071, 524287, 10 ** 6, 2 ** 30, 2 ** 31 - 1], np.int64)
    ref = R.RopeRef(64, 5e6)
    want = ref.cache(pos)
    got = posenc.rope_cache(r, positions=pos)
    assert_bits(np.concatenate(got, axis=1) if isinstance(got, tuple) else got, want)
    x = np.random.default_rng(5).standard_normal((len(pos), 2, 128)).astype(np.float32)
    y = x.copy()
    posenc.rope_qk(r, y, None, positions=pos)
    assert np.array_equal(y[..., 64:], x[..., 64:])
    assert_bits(y, R.rotate_tokens(x, pos, ref, "f32"))


@pytest.mark.parametrize("r,base,factor", [(128, 1e4, 2.0), (128, 1e4, 3.0), (128, 1e6, 1.5), (96, 1e4, 40.0),
                                           (64, 10000.3, 0.75), (2, 1e4, 7.0)])
def test_rope_init_linear(r, base, factor):
    rope = posenc.rope_init(r, base, {"rope_type": "linear", "factor": factor, "rope_theta": 123.0})
    check_freqs(rope, R.hf_linear(base, r, factor), f"linear {r} {base} {factor}")
    assert (rope.position_scale, rope.attention_scale) == (1.0, 1.0)


@pytest.mark.parametrize("r,base,factor,lmax", [(128, 1e4, 2.0, 4096), (128, 1e6, 4.0, 32768), (4, 1e4, 2.0, 4096),
                                                (128, 5e5, 0.5, 8192)])
def test_rope_init_dynamic(r, base, factor, lmax):
    for seq in (None, 0, lmax - 1, lmax, lmax + 1, 3 * lmax + 17, 100000, K - 1):
        kw = {} if seq is None else {"seq_len": seq}
        rope = posenc.rope_init(r, base, {"rope_type": "dynamic", "factor": factor}, max_position_embeddings=lmax,
                                **kw)
        assert rope.attention_scale == 1.0 and rope.base == base
        if seq is None or seq <= lmax:  # base' = base: the plain spec, as HF resets to its inv_freq
            assert rope.freq is None
        else:
            check_freqs(rope, R.hf_dynamic(base, r, factor, lmax, seq), f"dynamic seq_len {seq}")
    # max_position_embeddings inside the dict, the legacy "type" key
    rope = posenc.rope_init(r, base, {"type": "dynamic", "factor": factor, "max_position_embeddings": lmax},
                            seq_len=2 * lmax)
    check_freqs(rope, R.hf_dynamic(base, r, factor, lmax, 2 * lmax), "dynamic, dict keys")


YARN = [  # (r, base, dict, keywords, HF's arguments to hf_yarn)
    ("Qwen2 yarn 4 / 32768", 128, 1e6, {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768},
     {}, dict(factor=4.0, original=32768)),
    ("DeepSeek-V2", 64, 1e4, {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096,
                              "beta_fast": 32, "beta_slow": 1, "mscale": 0.707, "mscale_all_dim": 0.707}, {},
     dict(factor=40.0, original=4096, beta_fast=32.0, beta_slow=1.0, mscale=0.707, mscale_all_dim=0.707)),
    ("DeepSeek-V3", 64, 1e4, {"rope_type": "yarn", "factor": 40, "original_max_position_embeddings": 4096,
                              "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0}, {},
     dict(factor=40.0, original=4096, beta_fast=32.0, beta_slow=1.0, mscale=1.0, mscale_all_dim=1.0)),
    ("mscale 1.0 against mscale_all_dim 0.5", 64, 1e4, {"rope_type": "yarn", "factor": 16.0,
                                                       "original_max_position_embeddings": 4096, "mscale": 1.0,
                                                       "mscale_all_dim": 0.5}, {},
     dict(factor=16.0, original=4096, mscale=1.0, mscale_all_dim=0.5)),
    ("gpt-oss, truncate False", 64, 150000.0, {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0,
                                               "beta_slow": 1.0, "truncate": False,
                                               "original_max_position_embeddings": 4096}, {},
     dict(factor=32.0, original=4096, beta_fast=32.0, beta_slow=1.0, truncate=False)),
    ("explicit attention_factor", 128, 1e4, {"rope_type": "yarn", "factor": 8.0, "attention_factor": 0.9,
                                             "original_max_position_embeddings": 2048}, {},
     dict(factor=8.0, original=2048, attention_factor=0.9)),
    ("factor from max_position_embeddings (v5)", 128, 1e6, {"rope_type": "yarn"},
     dict(max_position_embeddings=131072, original_max_position_embeddings=32768), dict(factor=4.0, original=32768)),
    ("original from max_position_embeddings", 96, 1e4, {"rope_type": "yarn", "factor": 2.0},
     dict(max_position_embeddings=8192), dict(factor=2.0, original=8192)),
    ("high correction dimension past h - 1 (HF clamps to r - 1)", 32, 500.0,
     {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 131072}, {},
     dict(factor=8.0, original=131072)),
]


@pytest.mark.parametrize("case", YARN, ids=[c[0] for c in YARN])
def test_rope_init_yarn(case):
    name, r, base, scaling, kw, hf = case
    rope = posenc.rope_init(r, base, scaling, **kw)
    freqs, att = R.hf_yarn(base, r, **hf)
    check_freqs(rope, freqs, name)
    assert rope.attention_scale == R.round_f64(att), name
    if name.startswith("DeepSeek"):
        assert rope.attention_scale == 1.0


def test_yarn_presets():
    ds2 = posenc.Rope.deepseek_v2()
    assert ds2.pairs == posenc.RopePairs.INTERLEAVED and ds2.attention_scale == 1.0
    freqs, _ = R.hf_yarn(1e4, 64, 40.0, 4096, 32.0, 1.0, 0.707, 0.707)
    check_freqs(ds2, freqs, "deepseek_v2")
    assert posenc.Rope.deepseek_v3() == posenc.rope_init(64, 1e4, {
        "rope_type": "yarn", "factor": 40, "original_max_position_embeddings": 4096, "beta_fast": 32,
        "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0}, pairs="interleaved")
    assert posenc.Rope.qwen2(yarn=True) == posenc.rope_init(128, 1e6, YARN[0][3])


@pytest.mark.parametrize("r,base,factor,lff,hff,orig", [(128, 5e5, 8.0, 1.0, 4.0, 8192), (64, 5e5, 32.0, 1.0, 4.0, 8192),
                                                        (128, 1e4, 4.0, 2.0, 3.0, 4096)])
def test_rope_init_llama3(r, base, factor, lff, hff, orig):
    rope = posenc.rope_init(r, base, {"rope_type": "llama3", "factor": factor, "low_freq_factor": lff,
                                      "high_freq_factor": hff, "original_max_position_embeddings": orig})
    check_freqs(rope, R.hf_llama3(base, r, factor, lff, hff, orig), "llama3")
    assert rope.attention_scale == 1.0
    if (r, base, factor) == (128, 5e5, 8.0):
        assert rope == posenc.Rope.llama3_1()


def phi3_factors():
    """Phi-3-mini-128k's first release ("su") short and long factors, as Phi-3-vision-128k-instruct repeats
    them: originals.py's copy (the HF configs the drop-in modules are tested with; it imports torch)."""
    import originals
    return originals.PHI3_MINI_128K_SHORT_FACTOR, originals.PHI3_MINI_128K_LONG_FACTOR


@pytest.mark.parametrize("seq_len", [None, 1, 4096, 4097, 131072])
def test_rope_init_longrope_phi3_factor_from_max_position_embeddings(seq_len):
    # Phi-3: no factor in rope_scaling; HF derives 131072 / 4096 = 32 from the config's lengths
    PHI3_SHORT, PHI3_LONG = phi3_factors()
    scaling = {"type": "su", "short_factor": PHI3_SHORT, "long_factor": np.array(PHI3_LONG)}
    kw = {} if seq_len is None else {"seq_len": seq_len}
    rope = posenc.rope_init(96, 1e4, scaling, max_position_embeddings=131072, original_max_position_embeddings=4096,
                            **kw)
    ext = PHI3_LONG if (seq_len or 0) > 4096 else PHI3_SHORT
    freqs, att = R.hf_longrope(1e4, 96, ext, 32.0, 4096)
    check_freqs(rope, freqs, f"longrope seq_len {seq_len}")
    assert rope.attention_scale == R.round_f64(att)
    assert rope == posenc.Rope.phi3_mini_128k(seq_len or 0)
    # the same with "longrope", the lengths in the dict and an explicit factor
    scaling = {"rope_type": "longrope", "short_factor": PHI3_SHORT, "long_factor": PHI3_LONG, "factor": 32.0,
               "original_max_position_embeddings": 4096}
    assert posenc.rope_init(96, 1e4, scaling, **kw) == rope


def test_rope_init_longrope_attention_factor_and_no_scaling():
    PHI3_SHORT, PHI3_LONG = phi3_factors()
    scaling = {"rope_type": "longrope", "short_factor": PHI3_SHORT, "long_factor": PHI3_LONG, "factor": 1.0,
               "original_max_position_embeddings": 4096, "attention_factor": 1.25}
    rope = posenc.rope_init(96, 1e4, scaling, seq_len=8000)
    freqs, att = R.hf_longrope(1e4, 96, PHI3_LONG, 1.0, 4096, 1.25)
    check_freqs(rope, freqs, "longrope attention_factor")
    assert rope.attention_scale == 1.25
    del scaling["attention_factor"]
    assert posenc.rope_init(96, 1e4, scaling, seq_len=8000).attention_scale == 1.0  # factor 1: no scaling


def test_rope_init_output_drives_the_cache(isa):
    # a scheme's explicit frequencies and attention factor reach the kernels: the cache of a yarn rope
    rope = posenc.rope_init(64, 1e4, YARN[1][3], pairs="interleaved")
    ref = R.RopeRef.of(rope)
    cos, sin = posenc.rope_cache(rope, positions=POS)
    assert_bits(np.concatenate([cos, sin], axis=1), ref.cache(POS), "yarn cache")


_TRAPS = {}


def one_rounding_traps(fmt, ref):
    """(pairs, positions): random 16-bit (x, y) pairs whose rotation at their position, rounded to float32 first,
    would land on a midpoint of the 16-bit format and round to the wrong neighbour (about one in 2^15)."""
    if fmt in _TRAPS:
        return _TRAPS[fmt]
    rng = np.random.default_rng(4242 + len(fmt))
    found_x, found_pos = [], []
    for p in range(1, 200):
        if len(found_pos) >= 60:
            break
        c, s = ref.row(p)
        n = 40000
        if fmt == "bf16":
            x = (rng.integers(0, 2, (n, 2)) << 15) | (rng.integers(120, 131, (n, 2)) << 7) | rng.integers(0, 128, (n, 2))
        else:
            x = (rng.integers(0, 2, (n, 2)) << 15) | (rng.integers(12, 19, (n, 2)) << 10) | rng.integers(0, 1024, (n, 2))
        x = x.astype(np.uint16)
        v = R.widen(x, fmt).astype(np.float64)
        xr = v[:, 0] * float(c) - v[:, 1] * float(s)
        yr = v[:, 1] * float(c) + v[:, 0] * float(s)
        differ = (R.narrow_from_double(xr, fmt) != R.narrow_from_f32(xr.astype(np.float32), fmt)) | (
            R.narrow_from_double(yr, fmt) != R.narrow_from_f32(yr.astype(np.float32), fmt))
        for row in x[differ]:
            found_x.append(row)
            found_pos.append(p)
    _TRAPS[fmt] = (np.array(found_x, np.uint16), found_pos)
    return _TRAPS[fmt]


@pytest.mark.parametrize("fmt", ["bf16", "f16"])
def test_16bit_rotation_rounds_once_from_the_double(isa, fmt):
    # tests/test_rope.cpp: where rounding the rotated double through float32 would give the wrong 16-bit value
    rope = posenc.Rope(2, attention_scale=1.369)
    ref = R.RopeRef.of(rope)
    pairs, pos = one_rounding_traps(fmt, ref)
    assert len(pos) >= 20
    x = pairs.copy() if fmt == "bf16" else pairs.view(np.float16).copy()
    want = R.rotate_tokens(x, pos, ref, fmt)
    posenc.rope(rope, x, positions=pos)
    assert_bits(x, want, f"{fmt} one rounding")


# ---- the rotation by full-width tables (posenc_rope_tables_*) ------------------------------------------------

def _tables_want(x, cos, sin, pairs):
    """x [..., n, H, d] (or [n, d]) rotated by cos / sin [n, d] in float64, for data whose sums are exact there:
    the correctly rounded float32 is then the float of the double."""
    x = np.asarray(x, np.float64)
    d = x.shape[-1]
    if pairs == "halves":
        part = np.concatenate([-x[..., d // 2:], x[..., : d // 2]], -1)
    else:
        part = np.stack([-x[..., 1::2], x[..., 0::2]], -1).reshape(x.shape)
    c, s = np.asarray(cos, np.float64), np.asarray(sin, np.float64)
    if x.ndim > 2:
        c, s = c[:, None, :], s[:, None, :]
    return (x * c + part * s).astype(np.float32)


@pytest.mark.parametrize("pairs", ["interleaved", "halves"])
def test_rope_tables_numpy(isa, pairs):
    """posenc.rope_tables on NumPy rows: in place, into out, batch tables, shared rows; exact-sum data (few bits)
    so that the float64 formula is the reference; bad input raises and writes nothing."""
    g = np.random.default_rng(7)
    n, H, d = 5, 3, 12
    x = (g.integers(-64, 64, (2, n, H, d)) / 16).astype(np.float32)
    cos = (g.integers(-16, 16, (n, d)) / 16).astype(np.float32)
    sin = (g.integers(-16, 16, (n, d)) / 16).astype(np.float32)
    want = _tables_want(x, cos, sin, pairs)
    out = np.full_like(x, 7.0)
    assert posenc.rope_tables(x, cos, sin, pairs=pairs, out=out) is out
    assert_bits(out, want, "out")
    y = x.copy()
    posenc.rope_tables(y, cos, sin, pairs=pairs)  # in place
    assert_bits(y, want, "in place")
    # per-batch tables, and one row shared by every token (stride 0)
    cb = np.stack([cos, cos[::-1]])
    sb = np.stack([sin, sin[::-1]])
    out2 = np.empty_like(x)
    posenc.rope_tables(x, cb, sb, pairs=pairs, out=out2)
    assert_bits(out2[1], _tables_want(x[1], cos[::-1], sin[::-1], pairs), "batch 1 tables")
    c1, s1 = np.broadcast_to(cos[:1], (n, d)), np.broadcast_to(sin[:1], (n, d))
    out3 = np.empty_like(x)
    posenc.rope_tables(x, c1, s1, pairs=pairs, out=out3)
    assert_bits(out3, _tables_want(x, np.repeat(cos[:1], n, 0), np.repeat(sin[:1], n, 0), pairs), "shared row")
    # heads_first: [B, H, n, d]
    xt = np.ascontiguousarray(x.transpose(0, 2, 1, 3))
    out4 = np.empty_like(xt)
    posenc.rope_tables(xt, cos, sin, pairs=pairs, heads_first=True, out=out4)
    assert_bits(out4.transpose(0, 2, 1, 3), want, "heads first")
    # bad input: nothing written
    keep = out.copy()
    with pytest.raises(ValueError, match="pairs"):
        posenc.rope_tables(x, cos, sin, pairs="diagonal", out=out)
    with pytest.raises(ValueError, match="cos"):
        posenc.rope_tables(x, cos[:, :4], sin, pairs=pairs, out=out)
    with pytest.raises(TypeError):
        posenc.rope_tables(x, cos, sin, pairs=pairs, out=out.astype(np.float16))
    with pytest.raises(TypeError):
        posenc.rope_tables(x, cos.astype(np.float64), sin, pairs=pairs, out=out)
    big = np.zeros((n, H, d), np.float32)
    with pytest.raises(posenc.InvalidArgument):  # tables that are the output's own rows
        posenc.rope_tables(x[0], big[:, 0, :], sin, pairs=pairs, out=big)
    with pytest.raises(posenc.InvalidArgument):  # out over x, shifted by one element
        buf = np.zeros(x.size + 1, np.float32)
        posenc.rope_tables(buf[1:].reshape(x.shape), cos, sin, pairs=pairs, out=buf[:-1].reshape(x.shape))
    # per-batch tables inside another batch entry's output rows (the C call checks each entry's own only)
    both = np.zeros((2, n, H, d), np.float32)
    with pytest.raises(posenc.InvalidArgument):
        posenc.rope_tables(x, both[1, :, 0, :], sin, pairs=pairs, out=both)
    assert not both.any()
    assert_bits(out, keep, "untouched")


def test_rope_tables_bf16_f16_and_nan(isa):
    """16-bit rows: the float32 result rounded to nearest-even; a NaN element gives a NaN pair."""
    torch = pytest.importorskip("torch")
    x = torch.tensor([[1.0, 2.0, 3.0, float("nan")]]).reshape(1, 1, 4)
    cos = np.array([[0.5, 0.25, 1.0, 1.0]], np.float32)
    sin = np.array([[0.5, 0.5, 0.0, 0.0]], np.float32)
    for dt in (torch.bfloat16, torch.float16):
        out = torch.empty(1, 1, 4, dtype=dt)
        posenc.rope_tables(x.to(dt), cos, sin, out=out)
        got = out.float().numpy().reshape(-1)
        assert got[0] == 1.0 * 0.5 - 2.0 * 0.5 and got[1] == 2.0 * 0.25 + 1.0 * 0.5
        assert np.isnan(got[2]) and np.isnan(got[3])
