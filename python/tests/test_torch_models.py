"""posenc.torch's drop-ins for the rotaries transformers' HunYuan, ERNIE-4.5-VL and MiniMax-M3-VL models define
themselves (python/posenc/_torch_models.py), without transformers: the configs as dicts in both formats, the
values against mpfr_ref.py, MiniMax-M3-VL's vision rotary against its re-typed original (originals_vl.py).
Inside the real transformers: test_hf_models.py (Debian unstable)."""
import inspect
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import posenc.torch as pt  # noqa: E402

import mpfr_ref as R  # noqa: E402
import originals_vl as OV  # noqa: E402


def hunyuan(v5, **rope):
    rope = dict({"rope_type": "dynamic", "alpha": 1000.0, "factor": 1.0}, **rope)
    cfg = {"head_dim": 32, "hidden_size": 128, "num_attention_heads": 4, "max_position_embeddings": 32768}
    if v5:
        cfg["rope_parameters"] = dict(rope, rope_theta=10000.0)
    else:
        cfg.update(rope_theta=10000.0, rope_scaling=rope)
    return cfg


def alpha_freqs(theta, alpha, d):
    """theta * alpha^(d / (d - 2)), its frequencies in real arithmetic."""
    with R.ctx(R.PREC):
        lnb = R.gmpy2.log(R.mpfr(theta)) + R.gmpy2.log(R.mpfr(alpha)) * d / (d - 2)
        return [R.gmpy2.exp(lnb * (-2 * i) / d) for i in range(d // 2)]


def cos_at(m, p):
    cos, sin = m(torch.zeros(1, 1, 8), torch.tensor([[p]]))
    return cos[0, 0, :16].numpy(), sin[0, 0, :16].numpy()


def exact_at(freqs, p):
    ref = R.RopeRef(32)
    ref.f = list(freqs)
    row = ref.row(p)
    return row[:16], row[16:]


@pytest.mark.parametrize("v5", [True, False], ids=["rope_parameters", "rope_scaling"])
def test_hunyuan_alpha_in_both_formats(v5):
    """alpha is read from v5's rope_parameters and from v4.57's rope_scaling (with the top-level rope_theta),
    never dropped: the cos/sin are the correctly rounded values at theta * alpha^(d/(d-2)); original_inv_freq is
    v5's buffer or v4's attribute; past max_position_embeddings the plain dynamic NTK of the longest length
    seen, back to alpha below it (v4.57's and v5.15's bookkeeping)."""
    m = pt.HunYuanDenseV1RotaryEmbedding(hunyuan(v5))
    assert ("original_inv_freq" in dict(m.named_buffers())) == v5
    assert m.attention_scaling == 1.0 and m.rope_type == "dynamic"
    alpha = alpha_freqs(10000.0, 1000.0, 32)
    for p, freqs in ((4000, alpha),
                     (40000, R.hf_dynamic(10000.0, 32, 1.0, 32768, 40001)),
                     (35000, R.hf_dynamic(10000.0, 32, 1.0, 32768, 40001)),  # shorter: the grown ones kept
                     (100, alpha)):                                           # below max: alpha again
        got, want = cos_at(m, p), exact_at(freqs, p)
        for g, w in zip(got, want):
            assert np.array_equal(g.view(np.uint32), w.view(np.uint32)), (v5, p, g, w)
    inv, att = m.rope_init_fn()
    assert att == 1.0 and torch.allclose(inv.double(), torch.tensor([float(f) for f in alpha], dtype=torch.float64),
                                         rtol=2.0 ** -24, atol=0)


def test_hunyuan_without_factor():
    """No factor: alpha's frequencies below max_position_embeddings; past it, where upstream fails on the missing
    key, a ValueError naming it."""
    cfg = hunyuan(True)
    del cfg["rope_parameters"]["factor"]
    m = pt.HunYuanDenseV1RotaryEmbedding(cfg)
    got, want = cos_at(m, 5000), exact_at(alpha_freqs(10000.0, 1000.0, 32), 5000)
    assert np.array_equal(got[0].view(np.uint32), want[0].view(np.uint32))
    with pytest.raises(ValueError, match="factor"):
        m(torch.zeros(1), torch.tensor([[40000]]))


def test_ernie_layout_and_buffers():
    """ERNIE-4.5-VL's text rotary: pair i turns by theta^(-2i/d) at the height position (even i < 2h), the width
    position (odd i < 2h) or the temporal one, each value twice side by side; float32 whatever x's dtype;
    inv_freq in upstream's pre-rotated order, original_inv_freq a plain attribute; another rope_type or an
    mrope_section whose h and w differ refused by name."""
    cfg = {"head_dim": 32, "hidden_size": 128, "num_attention_heads": 4, "max_position_embeddings": 4096,
           "rope_parameters": {"rope_type": "default", "rope_theta": 500000.0, "mrope_section": [6, 6, 4]}}
    m = pt.Ernie4_5_VLMoeTextRotaryEmbedding(cfg)
    assert [n for n, _ in m.named_buffers()] == ["inv_freq"] and m.original_inv_freq is m.inv_freq
    f = [R.inv_freq(500000.0, 32, i) for i in range(16)]
    pre = f[:12][0::2] + f[:12][1::2] + f[12:]
    assert torch.equal(m.inv_freq, torch.tensor([float(R.round_f32(v)) for v in pre], dtype=torch.float32))
    ps = (10 ** 6, 2000, 77)  # t, h, w
    cos, sin = m(torch.zeros(1, 1, 8, dtype=torch.bfloat16), torch.tensor(ps).view(3, 1, 1))
    assert cos.dtype == torch.float32 and cos.shape == (1, 1, 32)
    ref = R.RopeRef(32)
    ref.f = f
    for i in range(16):
        axis = (1 + i % 2) if i < 12 else 0
        c, s = ref.pair(i, ps[axis])
        assert cos[0, 0, 2 * i] == cos[0, 0, 2 * i + 1] == torch.tensor(float(c)), i
        assert sin[0, 0, 2 * i] == sin[0, 0, 2 * i + 1] == torch.tensor(float(s)), i
    with pytest.raises(ValueError, match="rope_type"):
        pt.Ernie4_5_VLMoeTextRotaryEmbedding(dict(cfg, rope_parameters={"rope_type": "linear", "factor": 2.0,
                                                                        "rope_theta": 5e5}))
    with pytest.raises(ValueError, match="mrope_section"):
        pt.Ernie4_5_VLMoeTextRotaryEmbedding(dict(cfg, rope_parameters={"rope_type": "default", "rope_theta": 5e5,
                                                                        "mrope_section": [8, 4, 4]}))


# ---- MiniMax-M3-VL's vision tower 3-D RoPE ----------------------------------------------------------------------

MINIMAX_GRIDS = [(1, 8, 12), (2, 4, 6), (3, 2, 2)]  # (t, h, w) of the images / videos of one call


def minimax_exact(head_dim, theta):
    """(AxesRef, axis_dim) of MiniMax-M3-VL's vision RoPE from its definition alone (nothing of posenc): pair j of
    the 3 axis_dim / 2 turns at the double nearest theta^(-2k / axis_dim), k = j mod (axis_dim / 2), by the
    frame (j < axis_dim / 2), the row, then the column."""
    axis_dim = 2 * ((2 * (head_dim // 2) // 3) // 2)
    half = axis_dim // 2
    freq = [R.power(theta, 2 * (j % half), axis_dim) for j in range(3 * half)]
    ref = R.RopeRef(3 * axis_dim, base=theta, freq=np.array([float(v) for v in freq]))
    return R.AxesRef(ref, 3, [j // half for j in range(3 * half)]), axis_dim


def minimax_positions(grids, m):
    """[N, 3] (frame, row, column) of upstream's token order, written out loop by loop."""
    out = []
    for t, h, w in grids:
        for f in range(t):
            for bh in range(h // m):
                for bw in range(w // m):
                    for i in range(m):
                        for j in range(m):
                            out.append((f, bh * m + i, bw * m + j))
    return np.array(out, np.int64)


def check_minimax_exact(cos, sin, pos, ref, r):
    """The number of cos / sin values (of the r / 2 pairs, both halves) that are not ref's correctly rounded
    ones."""
    h = r // 2
    want = np.stack([ref.token(list(p)) for p in pos])
    c, s = cos.numpy(), sin.numpy()
    bad = int((c[:, :h].view(np.uint32) != want[:, :h].view(np.uint32)).sum())
    bad += int((s[:, :h].view(np.uint32) != want[:, h:].view(np.uint32)).sum())
    bad += int((c[:, h:] != c[:, :h]).sum() + (s[:, h:] != s[:, :h]).sum())  # upstream's cat(freqs, freqs)
    return bad


def test_minimax_vl_3d_structure():
    """The constructor's arguments and defaults, forward's signature, the attributes, the (absent) buffers and
    state_dict, and the outputs' shape, dtype and device are upstream's, for heads 80 (MiniMax-M3-VL's:
    hidden 1280 / 16 heads), 64, 72 and an odd 81."""
    def params(f):
        return [(p.name, p.default) for p in inspect.signature(f).parameters.values()]
    assert params(pt.MiniMaxM3VL3DRotaryEmbedding.__init__) == params(OV.MiniMaxM3VL3DRotaryEmbedding.__init__) == [
        ("self", inspect.Parameter.empty), ("head_dim", inspect.Parameter.empty), ("theta", 10000.0),
        ("spatial_merge_size", 1)]
    assert list(inspect.signature(pt.MiniMaxM3VL3DRotaryEmbedding.forward).parameters) == [
        "self", "grid_thw", "device", "dtype"]
    assert pt.MiniMaxM3VL3DRotaryEmbedding.__name__ == "MiniMaxM3VL3DRotaryEmbedding"
    assert "MiniMaxM3VL3DRotaryEmbedding" in pt.__all__
    thw = torch.tensor(MINIMAX_GRIDS)
    for head_dim, theta, m in ((80, 10000.0, 2), (64, 10000.0, 1), (72, 500.0, 2), (81, 10000.0, 1)):
        got = pt.MiniMaxM3VL3DRotaryEmbedding(head_dim, theta=theta, spatial_merge_size=m)
        want = OV.MiniMaxM3VL3DRotaryEmbedding(head_dim, theta=theta, spatial_merge_size=m)
        assert (got.axis_dim, got.theta, got.spatial_merge_size) == (want.axis_dim, want.theta, want.spatial_merge_size)
        assert dict(got.named_buffers()) == {} == dict(want.named_buffers())
        assert list(got.state_dict()) == [] == list(want.state_dict())
        assert list(got.parameters()) == []
        for dtype in (torch.float32, torch.bfloat16, torch.float16):
            for g, w in zip(got(thw, torch.device("cpu"), dtype), want(thw, torch.device("cpu"), dtype)):
                assert g.shape == w.shape and g.dtype == w.dtype == dtype and g.device == w.device, (g.shape, w.shape)
    d = pt.MiniMaxM3VL3DRotaryEmbedding(80)
    assert (d.axis_dim, d.rope.rotary_dim, d.theta, d.spatial_merge_size) == (26, 78, 10000.0, 1)
    with pytest.raises(ValueError, match="spatial_merge_size"):
        pt.MiniMaxM3VL3DRotaryEmbedding(80, spatial_merge_size=2)(torch.tensor([[1, 3, 4]]), "cpu", torch.float32)


@pytest.mark.parametrize("head_dim,theta,m", [(80, 10000.0, 2), (64, 10000.0, 1), (72, 500.0, 2)])
def test_minimax_vl_3d_exact(head_dim, theta, m):
    """Every cos / sin is the correctly rounded value of the exact one (MPFR; the frequencies' nearest doubles, as
    posenc's per-axis layout, checked equal to the Rope's), at upstream's positions (the merge windows, written
    out here loop by loop); upstream's float32 values are within their bound: the angle's float32 error
    (inv_freq's float32 pow and division, the product's rounding: 4 ulps of the angle) plus cos's own (2^-22).
    bf16 / fp16: posenc's float32 values rounded to the format, as upstream's .to(dtype)."""
    mod = pt.MiniMaxM3VL3DRotaryEmbedding(head_dim, theta, m)
    orig = OV.MiniMaxM3VL3DRotaryEmbedding(head_dim, theta, m)
    ref, axis_dim = minimax_exact(head_dim, theta)
    assert mod.rope.axes == 3 and list(mod.rope.axis) == ref.axis
    assert np.array_equal(np.asarray(mod.rope.freq, np.float64), np.asarray([float(v) for v in ref.ref.f]))
    thw = torch.tensor(MINIMAX_GRIDS)
    pos = minimax_positions(MINIMAX_GRIDS, m)
    assert torch.equal(mod.position_ids(thw), torch.from_numpy(pos))
    cos, sin = mod(thw, torch.device("cpu"), torch.float32)
    assert check_minimax_exact(cos, sin, pos, ref, 3 * axis_dim) == 0
    vcos, vsin = orig(thw, torch.device("cpu"), torch.float32)
    h = 3 * axis_dim // 2
    want = np.stack([ref.token(list(p)) for p in pos]).astype(np.float64)
    err = max(np.abs(vcos.numpy()[:, :h] - want[:, :h]).max(), np.abs(vsin.numpy()[:, :h] - want[:, h:]).max())
    top = float(pos.max())  # the largest angle: the largest position times frequency 1
    assert err <= top * 4 * 2.0 ** -24 + 2.0 ** -22, err
    for dtype in (torch.bfloat16, torch.float16):
        c, s = mod(thw, torch.device("cpu"), dtype)
        assert torch.equal(c, cos.to(dtype)) and torch.equal(s, sin.to(dtype))


def test_minimax_vl_3d_mutations_caught():
    """The exactness check above tells the module's layout from its near misses: the axes in another order
    (row, frame, column), the VISION layout (exponents over 3 axis_dim / 2 instead of axis_dim), rows and columns
    without the merge windows: each gives hundreds of wrong values."""
    from posenc import Rope, rope_sections
    thw = torch.tensor(MINIMAX_GRIDS)
    pos = minimax_positions(MINIMAX_GRIDS, 2)
    ref, axis_dim = minimax_exact(80, 10000.0)
    mod = pt.MiniMaxM3VL3DRotaryEmbedding(80, 10000.0, 2)
    good = mod(thw, "cpu", torch.float32)
    assert check_minimax_exact(*good, pos, ref, 78) == 0
    swapped = pt.MiniMaxM3VL3DRotaryEmbedding(80, 10000.0, 2)
    swapped.position_ids = lambda g: mod.position_ids(g)[:, [1, 0, 2]]
    vision = pt.MiniMaxM3VL3DRotaryEmbedding(80, 10000.0, 2)
    vision._rope = rope_sections(Rope(78, base=10000.0), [13, 13, 13], "vision")
    flat = pt.MiniMaxM3VL3DRotaryEmbedding(80, 10000.0, 1)
    counts = {}
    for name, m in (("axes swapped", swapped), ("vision layout", vision), ("no merge windows", flat)):
        counts[name] = check_minimax_exact(*m(thw, "cpu", torch.float32), pos, ref, 78)
    print("MiniMax-M3-VL vision rotary mutations, wrong values of %d: %s" % (2 * pos.shape[0] * 78, counts))
    assert all(n > 100 for n in counts.values()), counts


def test_minimax_vl_3d_apply_rotary():
    """apply_rotary(q, k, grid_thw) rotates the first 78 elements of each 80-wide head in place, each the exact
    rotation rounded once (MPFR), and leaves the last two as they are; upstream's
    apply_rotary_pos_emb_vision with posenc's cos / sin (float64 arithmetic) lands within 2 ulps of it."""
    mod = pt.MiniMaxM3VL3DRotaryEmbedding(80, 10000.0, 2)
    thw = torch.tensor([(2, 4, 6)])
    pos = minimax_positions([(2, 4, 6)], 2)
    g = torch.Generator().manual_seed(3)
    q = torch.randn(pos.shape[0], 2, 80, generator=g)
    k = torch.randn(pos.shape[0], 1, 80, generator=g)
    q0, k0 = q.clone(), k.clone()
    ref, _ = minimax_exact(80, 10000.0)
    qq, kk = mod.apply_rotary(q, k, thw)
    assert qq is q and kk is k
    want_q = R.rotate_tokens_axes(q0[..., :78].numpy(), pos.T, ref, "f32")
    assert np.array_equal(q[..., :78].numpy().view(np.uint32), np.asarray(want_q, np.float32).view(np.uint32))
    assert torch.equal(q[..., 78:], q0[..., 78:]) and torch.equal(k[..., 78:], k0[..., 78:])
    cos, sin = mod(thw, "cpu", torch.float64)
    uq, uk = OV.minimax_apply_rotary_pos_emb_vision(q0.double()[None], k0.double()[None], cos, sin)
    assert torch.allclose(uq[0].float(), q, rtol=2.0 ** -22, atol=2.0 ** -22)
    assert torch.allclose(uk[0].float(), k, rtol=2.0 ** -22, atol=2.0 ** -22)
