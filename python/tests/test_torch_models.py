"""posenc.torch's drop-ins for the rotaries transformers' HunYuan and ERNIE-4.5-VL models define themselves
(python/posenc/_torch_models.py), without transformers: the configs as dicts in both formats, the values against
mpfr_ref.py. Inside the real transformers: test_hf_models.py (Debian unstable)."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import posenc.torch as pt  # noqa: E402

import mpfr_ref as R  # noqa: E402


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
