"""posenc.rope_init's vLLM schemes and rope_sections' ERNIE-4.5-VL and openPangu-VL layouts, against vLLM's
code re-typed in real arithmetic (gmpy2 at 400 bits), read at vLLM main (2026-11) under
vllm/model_executor/layers/rotary_embedding/: vLLM's ntk_scaling_rope.py, vLLM's deepseek_scaling_rope.py,
vLLM's grok1_scaling_rope.py, vLLM's telechat3_scaling_rope.py, vLLM's xdrope.py,
vLLM's phi3_long_rope_scaled_rope.py, vLLM's ernie45_vl_rope.py, vLLM's mrope_interleaved.py (openPangu-VL's
MRotaryEmbeddingInterleaved). The dicts are those get_rope (or Grok's model, which passes its rope_scaling to
Grok1ScalingRotaryEmbedding) reads."""
import math

import numpy as np
import pytest

import posenc
import mpfr_ref as R
from test_rope_api import data
from mpfr_ref import gmpy2, mpfr


def check_freqs(rope, exact, what):
    got = rope.freq
    assert got is not None, what
    want = R.nearest_doubles(exact)
    assert got.tobytes() == want.tobytes(), f"{what}: first difference at {int(np.argmax(got != want))}"


def nearest(x):
    return float(R.nearest_doubles([x])[0])


def ntk(base, r, s, mixed_b=None):
    """NTKScalingRotaryEmbedding._compute_inv_freq."""
    with R.ctx(R.PREC):
        if mixed_b is None:
            b = mpfr(base) * mpfr(s)
            return [gmpy2.exp(gmpy2.log(b) * (-2 * i) / r) / gmpy2.exp(gmpy2.log(mpfr(s)) * 2 / r)
                    for i in range(r // 2)]
        a = gmpy2.log(mpfr(s)) / mpfr(r // 2) ** mpfr(mixed_b)
        return [R.inv_freq(base, r, i) / gmpy2.exp(a * mpfr(i + 1) ** mpfr(mixed_b)) for i in range(r // 2)]


def vllm_mask(base, r, original, e=1.0, bf=32.0, bs=1.0):
    """yarn_find_correction_range (floor / ceil, clamped) and (1 - yarn_linear_ramp_mask) * e."""
    with R.ctx(R.PREC):
        def dim(rot):
            return r * gmpy2.log(mpfr(original) / (mpfr(rot) * 2 * gmpy2.const_pi())) / (2 * gmpy2.log(mpfr(base)))
        low, high = max(gmpy2.floor(dim(bf)), mpfr(0)), min(gmpy2.ceil(dim(bs)), mpfr(r - 1))
        if low == high:
            high = high + mpfr(0.001)
        return [(1 - min(max((mpfr(j) - low) / (high - low), mpfr(0)), mpfr(1))) * mpfr(e) for j in range(r // 2)]


def yarn_blend(base, r, s, original, e=1.0, log=False, bf=32.0):
    """DeepseekScalingRotaryEmbedding._compute_inv_freq (Grok's "yarn" and "yarn_linear"); Grok's "yarn_log"."""
    with R.ctx(R.PREC):
        out = []
        for j, m in enumerate(vllm_mask(base, r, original, e, bf)):
            extra = R.inv_freq(base, r, j)
            inter = extra / mpfr(s)
            if log:
                out.append(gmpy2.exp(gmpy2.log(extra) * m + gmpy2.log(inter) * (1 - m)))
            else:
                out.append(inter * (1 - m) + extra * m)
        return out


def get_mscale(s, m=1.0, coef=(1, 10)):
    with R.ctx(R.PREC):
        return mpfr(1) if s <= 1 else coef[0] * mpfr(m) * gmpy2.log(mpfr(s)) / coef[1] + 1


def test_ntk_fixed_and_mixed():
    for s, b in ((4.0, None), (8.0, 0.625), (16.0, 2.5), (0.5, None)):
        scaling = {"rope_type": "ntk", "factor": s, "mixed_b": b}
        r = posenc.rope_init(128, 1e4, scaling)
        check_freqs(r, ntk(1e4, 128, s, b), f"ntk {scaling}")
        assert r.attention_scale == 1.0
    with pytest.raises(ValueError, match=r"scaling\['mixed_b'\]"):
        posenc.rope_init(128, 1e4, {"rope_type": "ntk", "factor": 2.0, "mixed_b": -1.0})
    with pytest.raises(posenc.InvalidArgument):  # mixed_b ln 64 past 2^30: refused at once
        posenc.rope_init(128, 1e4, {"rope_type": "ntk", "factor": 2.0, "mixed_b": 1e300})


def test_deepseek_yarn_as_vllm_applies_it():
    """vLLM's DeepSeek: mscale defaults to 1 and mscale_all_dim to 0, so a config giving mscale alone gets
    0.1 m ln s + 1 (HF ignores a lone mscale); attn_factor multiplies; extrapolation_factor scales the mask."""
    base, r, s, L0 = 1e4, 64, 40.0, 4096
    for extra, e in (({"mscale": 0.707, "mscale_all_dim": 0.707}, 1.0), ({"mscale": 0.707}, 1.0), ({}, 1.0),
                     ({"attn_factor": 1.25, "extrapolation_factor": 0.5, "mscale_all_dim": 0.5}, 0.5)):
        scaling = {"rope_type": "deepseek_yarn", "factor": s, "original_max_position_embeddings": L0, **extra}
        rope = posenc.rope_init(r, base, scaling)
        check_freqs(rope, yarn_blend(base, r, s, L0, e), f"deepseek_yarn {extra}")
        with R.ctx(R.PREC):
            att = get_mscale(s, extra.get("mscale", 1.0)) / get_mscale(s, extra.get("mscale_all_dim", 0.0))
            att = att * mpfr(extra.get("attn_factor", 1.0))
        assert rope.attention_scale == nearest(att), extra
    alias = posenc.rope_init(r, base, {"rope_type": "deepseek_llama_scaling", "factor": s,
                                       "original_max_position_embeddings": L0})
    assert alias == posenc.rope_init(r, base, {"rope_type": "deepseek_yarn", "factor": s,
                                               "original_max_position_embeddings": L0})
    with pytest.raises(ValueError, match=r"scaling\['truncate'\]"):
        posenc.rope_init(r, base, {"rope_type": "deepseek_yarn", "factor": s, "original_max_position_embeddings": L0,
                                   "truncate": False})


def test_grok_extra_methods():
    """Grok's rope_scaling (Grok1ScalingRotaryEmbedding(**rope_scaling)): scaling_factor, max_position_embeddings
    (the original length), extra_method; the mscale it computes is left out of the cache (attention 1)."""
    base, r = 208533496.0, 128
    grok = {"rope_type": "grok1", "scaling_factor": 16.0, "max_position_embeddings": 8192}
    rope = posenc.rope_init(r, base, grok)  # extra_method defaults to yarn_log
    check_freqs(rope, yarn_blend(base, r, 16.0, 8192, log=True), "grok yarn_log")
    assert rope.attention_scale == 1.0
    rope = posenc.rope_init(r, base, {**grok, "extra_method": "theta_scale", "beta_fast": 8})
    with R.ctx(R.PREC):
        two_pi = 2 * gmpy2.const_pi()
        g = gmpy2.log(mpfr(base)) * gmpy2.log(mpfr(8192) * 16 / two_pi) / gmpy2.log(mpfr(8192) / two_pi)
        want = [gmpy2.exp(g * (-2 * i) / r) for i in range(r // 2)]
    check_freqs(rope, want, "grok theta_scale")
    assert posenc.rope_init(r, base, {"rope_type": "theta_scale", "factor": 16.0,
                                      "original_max_position_embeddings": 8192}) == rope
    # Grok's dict holds the original length under max_position_embeddings: a caller's keyword does not move it
    assert posenc.rope_init(r, base, {**grok, "extra_method": "theta_scale"}, max_position_embeddings=131072) == rope
    for method in ("original", "bogus"):
        with pytest.raises(ValueError, match="extra_method"):
            posenc.rope_init(r, base, {**grok, "extra_method": method})


def grok_yarn_f64(base, r, s, L0, e=1.0, beta_fast=32, beta_slow=1):
    """Grok1ScalingRotaryEmbedding._compute_inv_freq's "yarn" / "yarn_linear" branch (one branch for both
    names; grok1_scaling_rope.py as stored at vllm-project/vllm e443db5a), in float64 where vLLM works in
    float32: base^(2j/r) as pos_freqs, 1 / pos_freqs extrapolated and
    1 / (s pos_freqs) interpolated, mixed by (1 - ramp) e, the ramp between yarn_find_correction_range's floor
    and ceil (clamped to [0, r - 1]) of the correction dimensions of beta_fast and beta_slow."""
    pos_freqs = float(base) ** (np.arange(0, r, 2, dtype=np.float64) / r)
    extra, inter = 1.0 / pos_freqs, 1.0 / (s * pos_freqs)

    def dim(rot):
        return r * math.log(L0 / (rot * 2 * math.pi)) / (2 * math.log(base))
    low, high = max(math.floor(dim(beta_fast)), 0), min(math.ceil(dim(beta_slow)), r - 1)
    if low == high:
        high += 0.001
    ramp = np.clip((np.arange(r // 2, dtype=np.float64) - low) / (high - low), 0.0, 1.0)
    mask = (1.0 - ramp) * e
    return inter * (1.0 - mask) + extra * mask


def grok_cache_f64(inv_freq, n):
    """_compute_cos_sin_cache without the mscale (the class leaves its multiplication out): [cos | sin]."""
    freqs = np.outer(np.arange(n, dtype=np.float64), inv_freq)
    return np.concatenate([np.cos(freqs), np.sin(freqs)], axis=1)


def test_grok_yarn_and_yarn_linear():
    """Grok's extra_method "yarn" and "yarn_linear": deepseek_yarn's frequencies (extrapolation_factor too),
    attention 1 whatever attn_factor says (Grok's mscale is not in its cache); each frequency the correctly
    rounded double of the real value, within a few ulps of the float64 re-typing, the cache its cos / sin."""
    base, r = 208533496.0, 128
    grok = {"rope_type": "grok1", "scaling_factor": 16.0, "max_position_embeddings": 8192}
    for method in ("yarn", "yarn_linear"):
        for extra, e in (({}, 1.0), ({"extrapolation_factor": 0.5, "beta_fast": 8, "attn_factor": 2.0}, 0.5)):
            scaling = {**grok, "extra_method": method, **extra}
            rope = posenc.rope_init(r, base, scaling)
            what = f"grok {method} {extra}"
            bf = extra.get("beta_fast", 32)
            check_freqs(rope, yarn_blend(base, r, 16.0, 8192, e, bf=bf), what)
            ref = grok_yarn_f64(base, r, 16.0, 8192, e, bf)
            np.testing.assert_allclose(rope.freq, ref, rtol=1e-14, atol=0, err_msg=what)
            assert rope.attention_scale == 1.0, what
            n = 4096
            got = posenc.rope_cache(rope, n, out=np.empty((n, r), np.float32))
            np.testing.assert_allclose(got, grok_cache_f64(ref, n), rtol=0, atol=2 ** -24, err_msg=what)
            # the same scheme as vLLM's DeepSeek class with its magnitude at 1
            assert rope == posenc.rope_init(r, base, {"rope_type": "deepseek_yarn", "factor": 16.0,
                                                      "original_max_position_embeddings": 8192,
                                                      "mscale": 1.0, "mscale_all_dim": 1.0,
                                                      **{k: v for k, v in extra.items() if k != "attn_factor"}})
    # the dict's max_position_embeddings is the original length, as for Grok's other methods
    assert posenc.rope_init(r, base, {**grok, "extra_method": "yarn"}, max_position_embeddings=131072) == \
        posenc.rope_init(r, base, {**grok, "extra_method": "yarn_linear"})
    with pytest.raises(ValueError, match="truncate"):
        posenc.rope_init(r, base, {**grok, "extra_method": "yarn", "truncate": False})


def test_telechat3():
    base, r, s, L0 = 1e6, 128, 4.0, 32768
    for attn in (None, 1.5):
        scaling = {"rope_type": "telechat3", "factor": s, "original_max_position_embeddings": L0}
        if attn:
            scaling["attn_factor"] = attn
        rope = posenc.rope_init(r, base, scaling)
        check_freqs(rope, yarn_blend(base, r, s, L0), "telechat3")
        with R.ctx(R.PREC):
            want = get_mscale(s, 1.0, (7, 100)) * mpfr(attn or 1.0)  # 0.07 ln s + 1
        assert rope.attention_scale == nearest(want)
        assert posenc.rope_init(r, base, {**scaling, "rope_type": "telechat3-yarn"}) == rope  # vLLM's name
    with pytest.raises(ValueError, match="truncate"):
        posenc.rope_init(r, base, {"rope_type": "telechat3", "factor": s, "original_max_position_embeddings": L0,
                                   "truncate": False})


def test_xdrope_hunyuan_vl():
    """vLLM's XDRotaryEmbedding: DynamicNTKAlpha frequencies, xdrope_section split as chunked sections (4 axes:
    the section k takes positions[k])."""
    scaling = {"rope_type": "xdrope", "alpha": 1000.0, "xdrope_section": [16, 16, 16, 16]}
    rope = posenc.rope_sections(posenc.rope_init(128, 1e4, scaling), scaling["xdrope_section"], "chunked")
    with R.ctx(R.PREC):
        lnb = gmpy2.log(mpfr(1e4)) + gmpy2.log(mpfr(1000.0)) * 128 / 126
        check_freqs(rope, [gmpy2.exp(lnb * (-2 * i) / 128) for i in range(64)], "xdrope")
    assert rope.axes == 4
    assert list(rope.axis) == [k for k in range(4) for _ in range(16)]
    with pytest.raises(ValueError, match="xdrope needs 'alpha'"):
        posenc.rope_init(128, 1e4, {"rope_type": "xdrope", "xdrope_section": [16, 16, 16, 16]})


def test_longrope_vllm_mscales():
    ext_s, ext_l = [1.0 + i / 64 for i in range(48)], [2.0 + i / 8 for i in range(48)]
    base = {"rope_type": "longrope", "short_factor": ext_s, "long_factor": ext_l, "factor": 32.0,
            "original_max_position_embeddings": 4096, "short_mscale": 1.25, "long_mscale": 1.243163121016122}
    assert posenc.rope_init(96, 1e4, base, seq_len=100).attention_scale == 1.25
    assert posenc.rope_init(96, 1e4, base, seq_len=5000).attention_scale == 1.243163121016122
    with pytest.raises(posenc.InvalidArgument):
        posenc.rope_init(96, 1e4, {**base, "attention_factor": 1.1})


def vllm_ernie_axis(section, h):
    """Ernie4_5_VLRotaryEmbedding: cos[..., :hw:2] from positions[1], cos[..., 1:hw:2] from positions[2],
    cos[..., -t:] from positions[0]."""
    sh, sw, st = section
    axis = [None] * h
    for c in range(0, sh + sw, 2):
        axis[c] = 1
    for c in range(1, sh + sw, 2):
        axis[c] = 2
    for c in range(h - st, h):
        axis[c] = 0
    return axis


def test_ernie45_vl_alternating_layout():
    """ERNIE-4.5-VL (head 128, GPT-J pairs, mrope_section [22, 22, 20] as h, w, t): posenc's sections are by
    axis, [t, h, w]. The axis map is vLLM's, and q/k rotated by posenc equal the exact rotation on that map."""
    base = posenc.rope_init(128, 5e5, pairs="interleaved")
    rope = posenc.rope_sections(base, [20, 22, 22], "alternating")
    assert rope.axes == 3
    assert list(rope.axis) == vllm_ernie_axis([22, 22, 20], 64)
    ref = R.AxesRef(R.RopeRef.of(base), 3, vllm_ernie_axis([22, 22, 20], 64))
    rng = np.random.default_rng(45)
    T = 12
    pos = np.stack([np.arange(T), rng.integers(0, 40, T), rng.integers(0, 40, T)]).astype(np.int64)
    q = rng.standard_normal((T, 4, 128)).astype(np.float32)
    k = rng.standard_normal((T, 2, 128)).astype(np.float32)
    want_q, want_k = R.rotate_tokens_axes(q, pos, ref, "f32"), R.rotate_tokens_axes(k, pos, ref, "f32")
    posenc.rope_qk(rope, q, k, positions=pos)
    assert q.tobytes() == want_q.tobytes() and k.tobytes() == want_k.tobytes()
    with pytest.raises(posenc.InvalidArgument):
        posenc.rope_sections(base, [20, 22, 20], "alternating")  # h != w


def get_mrope_interleaved_id_list(a, b, c, force_last=False):
    """MRotaryEmbeddingInterleaved.get_mrope_interleaved_id_list, re-typed: with force_last one unit of a is
    kept for the end; each step takes, among the modalities with some left and not the last one taken (all
    with some left if none), the min of (placed / count, k), a float quotient as vLLM's."""
    if force_last:
        a -= 1
    counts = {0: a, 1: b, 2: c}
    placed = {k: 0 for k in counts}
    rem = counts.copy()
    seq = []
    last = None
    for _ in range(a + b + c):
        cands = [k for k in rem if rem[k] > 0 and k != last]
        if not cands:
            cands = [k for k in rem if rem[k] > 0]
        best = min(cands, key=lambda k: (placed[k] / counts[k], k))
        seq.append(best)
        placed[best] += 1
        rem[best] -= 1
        last = best
    if force_last:
        seq.append(0)
    return seq


def vllm_openpangu_axis(mrope_section, h):
    """MRotaryEmbeddingInterleaved.__init__ and _rebuild_pos_emb: the id list of two sizes (h, w, 0) or three
    (t, h, w, force_last=True), mrope_dim = ids * 2, column c of cos_sin_cache[positions] (the h cos then the
    h sin) from position row mrope_dim[c]: pair i's cos and sin columns must share a row."""
    if len(mrope_section) == 2:
        ids = get_mrope_interleaved_id_list(mrope_section[0], mrope_section[1], 0)
    else:
        ids = get_mrope_interleaved_id_list(*mrope_section, force_last=True)
    mrope_dim = ids * 2
    assert len(mrope_dim) == 2 * h
    assert mrope_dim[:h] == mrope_dim[h:]
    return mrope_dim[:h]


def test_openpangu_balanced_layout_is_vllms_placement():
    """Every mrope_section of vLLM's two forms up to 40 pairs: rope_sections(..., "balanced") is vLLM's map."""
    assert get_mrope_interleaved_id_list(6, 5, 5, force_last=True) == [0, 1, 2] * 5 + [0]
    assert get_mrope_interleaved_id_list(2, 2, 0) == [0, 1, 0, 1]
    assert get_mrope_interleaved_id_list(2, 3, 3, force_last=True) == [0, 1, 2, 1, 2, 1, 2, 0]
    differ = []
    for h in range(1, 41):
        one = posenc.Rope(2 * h)
        for t in range(0, h + 1):
            for hh in range(0, h - t + 1):
                w = h - t - hh
                forms = [[t, hh]] if w == 0 else []
                if w > 0 and t > 0:
                    forms.append([t, hh, w])
                for section in forms:
                    rope = posenc.rope_sections(one, section, "balanced")
                    if list(rope.axis) != vllm_openpangu_axis(section, h) or rope.axes != len(section):
                        differ.append(section)
    assert differ == [], f"{len(differ)} sections differ, first {differ[:5]}"


def test_openpangu_rope_init_and_rotation():
    """get_rope's "openpangu" branch: default frequencies (rope_theta), mrope_section and a true
    mrope_interleaved required; q and k rotated by posenc on the balanced map equal the exact rotation."""
    scaling = {"rope_type": "openpangu", "mrope_section": [22, 21, 21], "mrope_interleaved": True}
    base = posenc.rope_init(128, 1e6, scaling)
    assert base == posenc.rope_init(128, 1e6)
    rope = posenc.rope_sections(base, scaling["mrope_section"], "balanced")
    axis = vllm_openpangu_axis([22, 21, 21], 64)
    assert rope.axes == 3 and list(rope.axis) == axis
    ref = R.AxesRef(R.RopeRef.of(base), 3, axis)
    rng = np.random.default_rng(77)
    T = 12
    pos = np.stack([np.arange(T), rng.integers(0, 40, T), rng.integers(0, 40, T)]).astype(np.int64)
    for n, fmt in enumerate(("f32", "bf16", "f16")):
        q, k = data(fmt, (T, 4, 128), 10 + n), data(fmt, (T, 2, 128), 20 + n)
        want_q, want_k = R.rotate_tokens_axes(q, pos, ref, fmt), R.rotate_tokens_axes(k, pos, ref, fmt)
        posenc.rope_qk(rope, q, k, positions=pos)
        assert q.tobytes() == want_q.tobytes() and k.tobytes() == want_k.tobytes(), fmt
    for bad in ({"rope_type": "openpangu", "mrope_section": [22, 21, 21]},
                {"rope_type": "openpangu", "mrope_section": [22, 21, 21], "mrope_interleaved": False},
                {"rope_type": "openpangu", "mrope_interleaved": True}):
        with pytest.raises(ValueError, match="openpangu needs 'mrope_section' and a true 'mrope_interleaved'"):
            posenc.rope_init(128, 1e6, bad)
    with pytest.raises(ValueError, match=r"\[t, h, 0\] with layout 'balanced'"):
        posenc.rope_sections(base, [22, 42, 0], "balanced")
    with pytest.raises(posenc.InvalidArgument):
        posenc.rope_sections(base, [0, 32, 32], "balanced")  # three sizes without t: refused
