"""HF's call sequence for a Qwen2.5-VL text model, with posenc's rotary embedding swapped in.

As Qwen2_5_VLModel / Qwen2_5_VLTextModel do (originals_vl.py has HF's functions): the prompt's 3-D position ids
from get_rope_index (text, an image, text, a video, text; a left-padded second sample), the text model's
``position_embeddings = self.rotary_emb(hidden_states, position_ids)`` once, then every attention layer's
q_proj / k_proj, ``.view(b, s, -1, head_dim).transpose(1, 2)`` and
``apply_multimodal_rotary_pos_emb(q, k, cos, sin, self.rope_scaling["mrope_section"])``; then a decode step at
``past + rope_deltas``. The model is Qwen2.5-VL-7B's rotary (head_dim 128, rope_theta 1e6, mrope_section
[16, 24, 24]) with fewer heads and a narrower hidden size (the rotary sees only head_dim, theta and sections).

With ``model.rotary_emb = posenc.torch.Qwen2VLRotaryEmbedding(config)`` the same code gives HF's cos / sin within
HF's own float32 error at these short positions (the per-element bound of test_torch_support.hf_cos_sin_bound,
which the data reaches), the exact values bit for bit, and q / k within rotation_bound of HF's; the fused
``rotary_emb.apply_rotary(q, k, position_ids)`` in place of the cos / sin path gives the exact rotation.
"""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

import posenc.torch as pt  # noqa: E402

import mpfr_ref as R  # noqa: E402
import originals_vl as V  # noqa: E402
from test_torch_multiaxis import exact_rotated, merged_hf, rotation_bound_of  # noqa: E402
from test_torch_support import U, angle_error, assert_bits, assert_within, f64, hf_angles  # noqa: E402

CONFIG = {"hidden_size": 512, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 128,
          "max_position_embeddings": 128000, "rope_theta": 1000000.0,
          "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}}
SPATIAL_MERGE = 2


class Attention(nn.Module):
    """The RoPE part of HF's Qwen2_5_VLAttention.forward."""

    def __init__(self, config):
        super().__init__()
        self.head_dim = config["head_dim"]
        self.q_proj = nn.Linear(config["hidden_size"], config["num_attention_heads"] * self.head_dim, bias=True)
        self.k_proj = nn.Linear(config["hidden_size"], config["num_key_value_heads"] * self.head_dim, bias=True)
        self.rope_scaling = config["rope_scaling"]

    def project(self, hidden_states):
        b, s, _ = hidden_states.shape
        q = self.q_proj(hidden_states).view(b, s, -1, self.head_dim).transpose(1, 2)
        k = self.k_proj(hidden_states).view(b, s, -1, self.head_dim).transpose(1, 2)
        return q, k

    def forward(self, hidden_states, position_embeddings):
        q, k = self.project(hidden_states)
        cos, sin = position_embeddings
        return V.apply_multimodal_rotary_pos_emb(q, k, cos, sin, self.rope_scaling["mrope_section"])


class TextModel(nn.Module):
    """Qwen2_5_VLTextModel's order: the rotary once per forward, its (cos, sin) handed to every layer."""

    def __init__(self, config, layers=2):
        super().__init__()
        self.rotary_emb = V.Qwen2VLRotaryEmbedding(config)
        self.layers = nn.ModuleList(Attention(config) for _ in range(layers))

    def forward(self, hidden_states, position_ids):
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        return [layer(hidden_states, position_embeddings) for layer in self.layers], position_embeddings


def prompt():
    """mm_token_type_ids [2, seq] and the grids: 12 text tokens, an image of 28 x 40 patches (280 tokens after the
    2 x 2 merge), 9 text, a 4-frame video of 16 x 20 patches (320 tokens, time interval 2), 7 text; the second
    sample is the same prompt without its video, left-padded to the same length."""
    image, video = torch.tensor([[1, 28, 40]]), torch.tensor([[4, 16, 20]])
    first = [0] * 12 + [1] * 280 + [0] * 9 + [2] * 320 + [0] * 7
    second = [0] * 12 + [1] * 280 + [0] * 16
    seq = len(first)
    types = torch.tensor([first, [0] * (seq - len(second)) + second])
    mask = torch.tensor([[1] * seq, [0] * (seq - len(second)) + [1] * len(second)])
    return types, mask, image, video


@pytest.fixture(scope="module")
def run():
    torch.manual_seed(2025)
    types, mask, image, video = prompt()
    images = torch.cat([image, image])
    position_ids, deltas = V.get_rope_index(types, images, video, SPATIAL_MERGE, time_intervals=[2],
                                            attention_mask=mask)
    hidden = torch.randn(2, types.shape[1], CONFIG["hidden_size"])
    model = TextModel(CONFIG)
    with torch.no_grad():
        hf_qk, hf_cs = model(hidden, position_ids)
        model.rotary_emb = pt.Qwen2VLRotaryEmbedding(CONFIG)  # the swap
        pe_qk, pe_cs = model(hidden, position_ids)
    return dict(position_ids=position_ids, deltas=deltas, hidden=hidden, model=model, mask=mask,
                hf_qk=hf_qk, hf_cs=hf_cs, pe_qk=pe_qk, pe_cs=pe_cs)


def exact_ref():
    ref = R.RopeRef(128, 1e6)
    ref.w = np.array([float(v) for v in ref.f])
    return ref


def test_the_prompt_positions(run):
    """get_rope_index's ids as HF builds them: text consecutive on all axes, the image's rows and columns, the
    video's frames every 2 positions, text after max(h, w) / 2 = 20 (image) and 10 (video) positions; padding
    slots 0; deltas max + 1 - tokens."""
    p = run["position_ids"]
    assert p.shape == (3, 2, 628)
    assert p[:, 0, :12].tolist() == [list(range(12))] * 3
    img = p[:, 0, 12:292]
    assert img[0].unique().tolist() == [12] and img[1].max() == 12 + 13 and img[2].max() == 12 + 19
    assert p[:, 0, 292].tolist() == [32, 32, 32]
    vid = p[:, 0, 301:621]
    assert vid[0].unique().tolist() == [41, 43, 45, 47] and vid[2].max() == 41 + 9
    assert p[:, 0, 621].tolist() == [51] * 3
    assert (p[:, 1, :320] == 0).all() and p[:, 1, 320].tolist() == [0, 0, 0]
    assert run["deltas"].tolist() == [[58 - 628], [48 - 308]]


def test_swapped_rotary_gives_hfs_cos_sin(run):
    cos_o, sin_o = run["hf_cs"]
    cos_n, sin_n = run["pe_cs"]
    pos = run["position_ids"]
    assert cos_n.shape == cos_o.shape == (3, 2, 628, 128) and cos_n.dtype == cos_o.dtype
    ref = exact_ref()
    flat = pos.reshape(-1).numpy()
    a32 = hf_angles(V.Qwen2VLRotaryEmbedding(CONFIG).inv_freq.numpy(), flat)
    bound = (angle_error(a32, flat, ref.w) + 4 * U).reshape(3, 2, 628, 64)
    ratio = max(assert_within(f64(cos_n[..., :64]), f64(cos_o[..., :64]), bound, "cos"),
                assert_within(f64(sin_n[..., :64]), f64(sin_o[..., :64]), bound, "sin"))
    assert ratio > 0.5, "HF's own float32 error is the bound: the data reaches it"
    sample = np.unique(flat)
    want = ref.cache(list(sample))
    got = pt.Qwen2VLRotaryEmbedding(CONFIG)(torch.zeros(1), torch.from_numpy(sample)[None, None].expand(3, 1, -1))
    assert_bits(got[0][0, 0, :, :64], want[:, :64], "exact cos at every position of the prompt")
    assert_bits(got[1][0, 0, :, :64], want[:, 64:], "exact sin")


def test_swapped_rotary_gives_hfs_q_and_k(run):
    pos = run["position_ids"]
    cos_o, sin_o = run["hf_cs"]
    mc, ms = merged_hf(cos_o, sin_o, [16, 24, 24])
    rotary = pt.Qwen2VLRotaryEmbedding(CONFIG)
    ref = R.AxesRef(exact_ref(), 3, rotary.multi_rope.axis)
    cache = ref.cache(pos.reshape(3, -1).numpy())
    ce, se = cache[:, :64].reshape(2, 628, 64), cache[:, 64:].reshape(2, 628, 64)
    for layer, (qo, ko), (qn, kn) in zip(run["model"].layers, run["hf_qk"], run["pe_qk"]):
        with torch.no_grad():
            q, k = layer.project(run["hidden"])
        # both through HF's formula: HF's cos / sin against the exact ones, three roundings on each side
        bq = rotation_bound_of(q, mc, ms, ce, se, 1, U, exact_roundings=3)
        bk = rotation_bound_of(k, mc, ms, ce, se, 1, U, exact_roundings=3)
        assert_within(f64(qn), f64(qo), bq, "q, swapped vs HF")
        assert_within(f64(kn), f64(ko), bk, "k, swapped vs HF")
        # the fused apply in place of cos / sin: the exact rotation, on HF's transposed views
        want_q, want_k = exact_rotated(q, ref, pos, True), exact_rotated(k, ref, pos, True)
        bq, bk = rotation_bound_of(q, mc, ms, ce, se, 1, U), rotation_bound_of(k, mc, ms, ce, se, 1, U)
        with torch.no_grad():
            rotary.apply_rotary(q, k, pos)
        assert_bits(q, want_q, "fused q")
        assert_bits(k, want_k, "fused k")
        assert_within(f64(q), f64(qo), bq, "fused q vs HF")
        assert_within(f64(k), f64(ko), bk, "fused k vs HF")


def test_decode_step(run):
    """The next token at its text position plus rope_deltas on all three axes (HF's compute_3d_position_ids with
    cached deltas: cumsum(attention_mask) - 1 for the padded batch)."""
    mask = torch.cat([run["mask"], torch.ones(2, 1, dtype=run["mask"].dtype)], dim=1)
    text = (mask.cumsum(-1) - 1)[:, -1:]  # [2, 1]: 628 and 308
    step = (text + run["deltas"]).unsqueeze(0).expand(3, -1, -1)  # [3, 2, 1]
    assert step[:, :, 0].tolist() == [[58, 48]] * 3, "the positions after each sample's last token"
    hidden = torch.randn(2, 1, CONFIG["hidden_size"])
    co, so = V.Qwen2VLRotaryEmbedding(CONFIG)(hidden, step)
    cn, sn = pt.Qwen2VLRotaryEmbedding(CONFIG)(hidden, step)
    ref = exact_ref()
    want = ref.cache([58, 48])
    assert_bits(cn[0, :, 0, :64], want[:, :64], "decode cos")
    a32 = hf_angles(V.Qwen2VLRotaryEmbedding(CONFIG).inv_freq.numpy(), [58, 48])
    bound = angle_error(a32, [58, 48], ref.w) + 4 * U
    assert_within(f64(cn[0, :, 0, :64]), f64(co[0, :, 0, :64]), bound, "decode cos vs HF")
    assert_within(f64(sn[2, :, 0, :64]), f64(so[2, :, 0, :64]), bound, "decode sin vs HF")
