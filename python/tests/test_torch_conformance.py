"""posenc.torch's drop-ins against the interfaces their originals have today (issue 24): HF transformers v5
(originals_hf5.py) and v4.57 (originals.py) rope code and rotary modules, fairseq's SinusoidalPositionalEmbedding
at main and v0.12.3 (originals.py), the PyTorch tutorial's PositionalEncoding (originals.py).

What is compared is what the caller sees: which frequencies (inv_freq buffers, within a few float32 ulps of
HF's float32 ones), which attention scaling, which rotary width, cos / sin at short positions (where HF's float32
error is below 2e-5, so any different parameter shows), buffer and attribute names, state_dict keys, dtypes,
signatures. Exactness itself is test_torch_rotary's and test_torch_modules' subject. The rule where v4 and v5
differ: the config's own format decides (rope_parameters: v5; rope_scaling: v4), each tested against its
version's code.
"""
import copy
import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import posenc
import posenc.torch as pt

import originals as O
import originals_hf5 as V
from helpers import assert_bits

SHORT = torch.arange(32).unsqueeze(0)


def close(got, want, tol=2e-5, what=""):
    g, w = got.detach().double(), want.detach().double()
    assert g.shape == w.shape, f"{what}: shape {tuple(g.shape)}, want {tuple(w.shape)}"
    err = float((g - w).abs().max()) if g.numel() else 0.0
    assert err <= tol, f"{what}: max difference {err:.3g} > {tol:.3g}"


def same_freqs(got, want, what=""):
    """posenc's inv_freq (correctly rounded float32) against HF's float32 formulas: a few ulps apart."""
    assert got.shape == want.shape, f"{what}: {tuple(got.shape)} frequencies, want {tuple(want.shape)}"
    rel = ((got.double() - want.double()).abs() / want.double().abs()).max()
    assert float(rel) < 2e-6, f"{what}: relative difference {float(rel):.3g}"


def v5(**fields):
    return V.V5Config(**copy.deepcopy(fields))


# ---- configs ------------------------------------------------------------------------------------------------

def gemma3_fields():
    """google/gemma-3-4b-it's text config in v5's format: rope_parameters per layer type."""
    return {"hidden_size": 2560, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
            "max_position_embeddings": 131072,
            "layer_types": (["sliding_attention"] * 5 + ["full_attention"]) * 5 + ["sliding_attention"] * 4,
            "rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
                                "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}}


SHORT48 = [1.0 + 0.02 * i for i in range(48)]
LONG48 = [1.0 + 0.7 * i for i in range(48)]


def phi4_mini_fields(fmt):
    """Phi-4-mini's shape: head 128 of which partial_rotary_factor 0.75 rotates (48 pairs), longrope, the
    original length 4096 at the top level (factor arrays made up here: the shape is what matters)."""
    base = {"hidden_size": 3072, "num_attention_heads": 24, "max_position_embeddings": 131072,
            "original_max_position_embeddings": 4096}
    rs = {"rope_type": "longrope", "short_factor": SHORT48, "long_factor": LONG48}
    if fmt == "v5":
        return dict(base, rope_parameters=dict(rs, rope_theta=1e4, partial_rotary_factor=0.75))
    return dict(base, rope_theta=1e4, partial_rotary_factor=0.75, rope_scaling=rs)


def deepseek_v3_json():
    """deepseek-ai/DeepSeek-V3's config.json (its RoPE fields): no head_dim, the rotary width qk_rope_head_dim."""
    return {"hidden_size": 7168, "num_attention_heads": 128, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
            "v_head_dim": 128, "max_position_embeddings": 163840, "rope_theta": 10000,
            "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0,
                             "original_max_position_embeddings": 4096, "type": "yarn"}}


def longrope_explicit_factor(fmt):
    """A top-level original length (4096; max / original = 32) and an explicit factor 16."""
    base = {"hidden_size": 3072, "num_attention_heads": 32, "max_position_embeddings": 131072,
            "original_max_position_embeddings": 4096}
    rs = {"rope_type": "longrope", "factor": 16.0, "short_factor": SHORT48, "long_factor": LONG48}
    if fmt == "v5":
        return dict(base, rope_parameters=dict(rs, rope_theta=1e4))
    return dict(base, rope_theta=1e4, rope_scaling=rs)


# ---- HF: Gemma 3's per-layer-type rope_parameters -----------------------------------------------------------

def test_gemma3_v5_per_layer_type():
    hf = V.Gemma3RotaryEmbedding(v5(**gemma3_fields()))
    new = pt.RotaryEmbedding(gemma3_fields())
    assert new.rope_type == hf.rope_type == {"full_attention": "linear", "sliding_attention": "default"}
    assert sorted(new.layer_types) == sorted(hf.layer_types)
    assert {n for n, _ in new.named_buffers()} == {n for n, _ in hf.named_buffers()}
    assert new.state_dict().keys() == hf.state_dict().keys() == set()
    x = torch.zeros(1)
    for lt in ("full_attention", "sliding_attention"):
        same_freqs(getattr(new, lt + "_inv_freq"), getattr(hf, lt + "_inv_freq"), lt)
        assert getattr(new, lt + "_attention_scaling") == getattr(hf, lt + "_attention_scaling") == 1.0
        (co, so), (cn, sn) = hf(x, SHORT, lt), new(x, SHORT, lt)
        close(cn, co, what=lt + " cos")
        close(sn, so, what=lt + " sin")
        assert new(x, SHORT, layer_type=lt)[0].shape == (1, 32, 256)
    # the two layer types differ, and each is the one-set config of its parameters, bit for bit
    full = pt.RotaryEmbedding({"head_dim": 256, "max_position_embeddings": 131072,
                               "rope_parameters": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6}})
    assert_bits(new(x, SHORT, "full_attention")[0], full(x, SHORT)[0], "full_attention = linear x8, theta 1e6")
    assert new.rope_for("sliding_attention") == posenc.Rope(256, base=1e4)
    with pytest.raises(ValueError, match="layer_type None: this config's rope_parameters are per layer type"):
        new(x, SHORT)
    with pytest.raises(ValueError, match="layer_type 'chunked_attention'"):
        new(x, SHORT, "chunked_attention")


def gemma4_fields():
    """A Gemma 4 text config (google/gemma-4 checkpoints' shape, v5 format): sliding layers with heads of 256
    (default RoPE, theta 1e4), full-attention layers with heads of global_head_dim 512 and proportional RoPE
    (theta 1e6, partial_rotary_factor 0.25)."""
    return {"hidden_size": 2816, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 256,
            "global_head_dim": 512, "max_position_embeddings": 262144,
            "layer_types": (["sliding_attention"] * 5 + ["full_attention"]) * 5,
            "rope_parameters": {"full_attention": {"partial_rotary_factor": 0.25, "rope_type": "proportional",
                                                   "rope_theta": 1e6},
                                "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}}


def test_gemma4_v5_proportional_per_layer_type():
    """Gemma 4: the full-attention layers' proportional RoPE over global_head_dim (64 of 256 pairs turn, 192
    have frequency 0), the sliding layers' default RoPE over head_dim; HF's buffers, names and shapes; cos / sin
    within HF's float32 error, exactly 1 / 0 on the still pairs; the exact spec is posenc's gemma4 preset."""
    hf = V.Gemma4TextRotaryEmbedding(v5(**gemma4_fields()))
    new = pt.RotaryEmbedding(gemma4_fields())
    assert new.rope_type == hf.rope_type == {"full_attention": "proportional", "sliding_attention": "default"}
    assert {n for n, _ in new.named_buffers()} == {n for n, _ in hf.named_buffers()}
    full_new, full_hf = new.full_attention_inv_freq, hf.full_attention_inv_freq
    assert full_new.shape == full_hf.shape == (256,)
    assert torch.equal(full_new[64:], torch.zeros(192)) and torch.equal(full_hf[64:], torch.zeros(192))
    same_freqs(full_new[:64], full_hf[:64], "full_attention, the turning pairs")
    same_freqs(new.sliding_attention_inv_freq, hf.sliding_attention_inv_freq, "sliding_attention")
    assert new.rope_for("full_attention") == posenc.rope_init(512, 1e6, {"rope_type": "proportional",
                                                                          "partial_rotary_factor": 0.25})
    assert new.rope_for("sliding_attention") == posenc.Rope(256, base=1e4)
    x = torch.zeros(1)
    far = torch.tensor([[0, 1, 4095, 262143]])
    for lt, width in (("full_attention", 512), ("sliding_attention", 256)):
        (co, so), (cn, sn) = hf(x, SHORT, lt), new(x, SHORT, lt)
        assert cn.shape == co.shape == (1, 32, width)
        close(cn, co, what=lt + " cos")
        close(sn, so, what=lt + " sin")
    cn, sn = new(x, far, "full_attention")
    for half in (slice(64, 256), slice(320, 512)):
        assert torch.equal(cn[..., half], torch.ones_like(cn[..., half]))
        assert torch.equal(sn[..., half], torch.zeros_like(sn[..., half]))
    q, k = torch.randn(1, 4, 4, 512), torch.randn(1, 2, 4, 512)
    q0, k0 = q.clone(), k.clone()
    new.apply_rotary(q, k, far, layer_type="full_attention")
    assert torch.equal(q[..., 64:256], q0[..., 64:256]) and torch.equal(k[..., 320:], k0[..., 320:])
    assert not torch.equal(q[..., 1:64], q0[..., 1:64])
    # the v4 format has no proportional type: refused by name
    v4 = dict(gemma4_fields(), partial_rotary_factor=0.25, rope_scaling={"rope_type": "proportional"})
    v4.pop("rope_parameters")
    v4.pop("layer_types")
    with pytest.raises(ValueError, match="rope_type 'proportional'"):
        pt.RotaryEmbedding(v4)


def test_gemma4_v5_15_per_layer_config():
    """transformers v5.15's Gemma4TextConfig keeps no global_head_dim: it is the head_dim of the full-attention
    layers' per_layer_config, and config.head_dim raises AmbiguousGlobalPerLayerAttributeError. Its rotary reads
    each layer type's config.per_layer_config[layer_type]; posenc reads it the same way, and gets the frequencies
    of v5.14's form. Its config.json (to_dict) holds the overrides by zero-padded layer index."""
    fields = dict(gemma4_fields(), num_hidden_layers=30)
    cfg = V.Gemma4TextConfigV515(**copy.deepcopy(fields))
    with pytest.raises(V.AmbiguousGlobalPerLayerAttributeError):
        cfg.head_dim
    hf = V.Gemma4TextRotaryEmbeddingV515(cfg)
    new = pt.RotaryEmbedding(cfg)
    assert new.rope_type == hf.rope_type == {"full_attention": "proportional", "sliding_attention": "default"}
    assert {n for n, _ in new.named_buffers()} == {n for n, _ in hf.named_buffers()}
    assert new.full_attention_inv_freq.shape == hf.full_attention_inv_freq.shape == (256,)
    same_freqs(new.full_attention_inv_freq[:64], hf.full_attention_inv_freq[:64], "v5.15 full_attention")
    same_freqs(new.sliding_attention_inv_freq, hf.sliding_attention_inv_freq, "v5.15 sliding_attention")
    x = torch.zeros(1)
    v514 = pt.RotaryEmbedding(gemma4_fields())
    for lt, width in (("full_attention", 512), ("sliding_attention", 256)):
        (co, so), (cn, sn) = hf(x, SHORT, lt), new(x, SHORT, lt)
        assert cn.shape == co.shape == (1, 32, width)
        close(cn, co, what="v5.15 " + lt + " cos")
        close(sn, so, what="v5.15 " + lt + " sin")
        assert new.rope_for(lt) == v514.rope_for(lt), lt
    # the dict v5.15 writes: per_layer_config by layer index, no global_head_dim
    saved = {k: v for k, v in fields.items() if k != "global_head_dim"}
    saved["per_layer_config"] = {"%02d" % i: {"head_dim": 512} for i, lt in enumerate(fields["layer_types"])
                                 if lt == "full_attention"}
    from_json, as_object = pt.RotaryEmbedding(saved), pt.RotaryEmbedding(SimpleNamespace(**saved))
    for lt in ("full_attention", "sliding_attention"):
        assert from_json.rope_for(lt) == as_object.rope_for(lt) == v514.rope_for(lt), lt
    # global_head_dim equal to head_dim: no override is left, every layer type reads the whole config
    narrow = V.Gemma4TextConfigV515(**dict(copy.deepcopy(fields), global_head_dim=256))
    assert narrow.head_dim == 256
    assert pt.RotaryEmbedding(narrow).rope_for("full_attention") == posenc.rope_init(
        256, 1e6, {"rope_type": "proportional", "partial_rotary_factor": 0.25})
    # the layers of one type must agree, as v5.15's view requires
    saved["per_layer_config"]["11"] = {"head_dim": 384}
    with pytest.raises(ValueError, match="per_layer_config: layers 5 and 11"):
        pt.RotaryEmbedding(saved)


def test_keys_transformers_ignores_are_ignored_with_a_warning():
    """RotaryEmbedding follows transformers: a key its init function does not read (vLLM's "short_mscale" of
    Phi-3.5-MoE, HunYuan's "alpha") is ignored with a warning, not applied and not refused."""
    base = {"hidden_size": 3072, "num_attention_heads": 32, "max_position_embeddings": 131072,
            "original_max_position_embeddings": 4096}
    rs = {"rope_type": "longrope", "short_factor": SHORT48, "long_factor": LONG48, "rope_theta": 1e4}
    plain = pt.RotaryEmbedding(dict(base, rope_parameters=dict(rs)))
    with pytest.warns(UserWarning, match="does not read: long_mscale, short_mscale"):
        phi35 = pt.RotaryEmbedding(dict(base, rope_parameters=dict(rs, short_mscale=1.1, long_mscale=1.2)))
    assert phi35.rope == plain.rope and phi35.attention_scaling == plain.attention_scaling
    with pytest.warns(UserWarning, match="does not read: alpha"):
        pt.RotaryEmbedding({"head_dim": 128, "max_position_embeddings": 32768,
                            "rope_parameters": {"rope_type": "dynamic", "factor": 1.0, "alpha": 1000.0,
                                                "rope_theta": 1e4}})


def test_gemma3_v5_object_and_apply_rotary():
    """An HF-style config object (attributes) works as the dict does; apply_rotary takes layer_type."""
    obj = v5(**gemma3_fields())
    new = pt.RotaryEmbedding(obj)
    ref = pt.RotaryEmbedding(gemma3_fields())
    x = torch.zeros(1)
    assert_bits(new(x, SHORT, "full_attention")[0], ref(x, SHORT, "full_attention")[0], "object == dict")
    q = torch.randn(1, 8, 32, 256)
    k = torch.randn(1, 4, 32, 256)
    cos, sin = new(x, SHORT, "sliding_attention")
    qw, kw = pt.apply_rotary_pos_emb(q, k, cos, sin)
    new.apply_rotary(q, k, SHORT, layer_type="sliding_attention")
    close(q, qw, 1e-5, "fused vs formula, q")
    close(k, kw, 1e-5, "fused vs formula, k")


def test_gemma3_v4_format_is_the_global_rotary():
    """v4's Gemma 3 config (rope_theta, rope_scaling, rope_local_base_freq): HF v4 builds the global rotary from
    it (and a local one from a copy with rope_local_base_freq); posenc's module is the global one, v4's."""
    cfg = {"hidden_size": 2560, "num_attention_heads": 8, "head_dim": 256, "max_position_embeddings": 131072,
           "rope_theta": 1e6, "rope_local_base_freq": 1e4, "rope_scaling": {"rope_type": "linear", "factor": 8.0}}
    hf, new = O.LlamaRotaryEmbedding(cfg), pt.RotaryEmbedding(cfg)
    same_freqs(new.inv_freq, hf.inv_freq, "v4 global")
    close(new(torch.zeros(1), SHORT)[0], hf(torch.zeros(1), SHORT)[0], what="v4 global cos")


def test_per_layer_dicts_without_layer_types_refused():
    """Without layer_types listing its keys v5 reads such a dict as one global dict with default RoPE (base
    10000): posenc refuses it, naming the key."""
    fields = gemma3_fields()
    del fields["layer_types"]
    with pytest.raises(ValueError, match=r"rope_parameters\['full_attention'\]"):
        pt.RotaryEmbedding(fields)
    fields["layer_types"] = ["full_attention"]  # does not list sliding_attention
    with pytest.raises(ValueError, match=r"rope_parameters\['(full|sliding)_attention'\]"):
        pt.RotaryEmbedding(fields)


# ---- HF: partial_rotary_factor, head_dim, longrope's attention factor ----------------------------------------

def test_partial_rotary_factor_inside_rope_parameters():
    hf_inv, hf_att = V.ROPE_INIT_FUNCTIONS["longrope"](v5(**phi4_mini_fields("v5")))
    new = pt.RotaryEmbedding(phi4_mini_fields("v5"))
    assert new.rope.rotary_dim == 96 and new.inv_freq.shape == (48,)
    same_freqs(new.inv_freq, hf_inv, "v5 longrope, partial 0.75 in rope_parameters")
    assert new.attention_scaling == pytest.approx(hf_att, rel=1e-12)
    assert new(torch.zeros(1), SHORT)[0].shape == (1, 32, 96)
    # v4: the top-level partial_rotary_factor, as v4.57 reads it
    old = pt.RotaryEmbedding(phi4_mini_fields("v4"))
    ho = O.LlamaRotaryEmbedding(phi4_mini_fields("v4"))
    assert old.rope.rotary_dim == 96
    same_freqs(old.inv_freq, ho.inv_freq, "v4 longrope, partial 0.75 at the top")
    # a top-level value replaces the dict's in v5 (standardize_rope_params)
    both = phi4_mini_fields("v5")
    both["partial_rotary_factor"] = 0.5
    hb, _ = V.ROPE_INIT_FUNCTIONS["longrope"](v5(**dict(both, rope_parameters=dict(
        both["rope_parameters"], short_factor=SHORT48[:32], long_factor=LONG48[:32]))))
    assert hb.shape == (32,)
    with pytest.raises(ValueError, match="short_factor"):
        pt.RotaryEmbedding(both)  # 48 factors for 32 pairs: refused as HF would misread them


def test_partial_rotary_factor_only_in_rope_scaling_refused():
    """v4 reads partial_rotary_factor at the top level only: inside rope_scaling it would be ignored."""
    cfg = phi4_mini_fields("v4")
    del cfg["partial_rotary_factor"]
    cfg["rope_scaling"] = dict(cfg["rope_scaling"], partial_rotary_factor=0.75)
    with pytest.raises(ValueError, match=r"rope_scaling\['partial_rotary_factor'\]"):
        pt.RotaryEmbedding(cfg)
    cfg = dict(O.original_configs()["llama2_7b"], rope_scaling={"rope_type": "default", "rope_theta": 5e5})
    with pytest.raises(ValueError, match=r"rope_scaling\['rope_theta'\]"):
        pt.RotaryEmbedding(cfg)


def test_deepseek_v3_config_json():
    """The config.json dict (no head_dim) rotates qk_rope_head_dim = 64 as HF's config object (head_dim 64)."""
    cfg = deepseek_v3_json()
    new = pt.RotaryEmbedding(cfg)
    assert new.rope.rotary_dim == 64
    hf = O.LlamaRotaryEmbedding(dict(cfg, head_dim=64))  # v4.57's DeepseekV3Config sets head_dim to it
    same_freqs(new.inv_freq, hf.inv_freq, "DeepSeek-V3 yarn")
    assert new.attention_scaling == pytest.approx(hf.attention_scaling, rel=1e-12)
    close(new(torch.zeros(1), SHORT)[0], hf(torch.zeros(1), SHORT)[0], what="DeepSeek-V3 cos")
    # v5: DeepseekV3Config likewise; the v5 format of the same model
    v5cfg = dict(cfg, rope_parameters=dict(cfg.pop("rope_scaling"), rope_theta=cfg.pop("rope_theta")))
    hf5, att5 = V.ROPE_INIT_FUNCTIONS["yarn"](v5(**dict(v5cfg, head_dim=64)))
    new5 = pt.RotaryEmbedding(v5cfg)
    same_freqs(new5.inv_freq, hf5, "DeepSeek-V3 yarn, v5")
    assert new5.attention_scaling == pytest.approx(att5, rel=1e-12)
    with pytest.raises(ValueError, match="head_dim 192 and qk_rope_head_dim 64"):
        pt.RotaryEmbedding(dict(deepseek_v3_json(), head_dim=192))


@pytest.mark.parametrize("fmt", ["v4", "v5"])
def test_longrope_attention_factor_per_format(fmt):
    """A top-level original length with an explicit factor 16: v4.57 replaces the factor by max / original = 32
    (attention factor 1.1902), v5 keeps 16 (1.1547)."""
    cfg = longrope_explicit_factor(fmt)
    new = pt.RotaryEmbedding(cfg)
    if fmt == "v5":
        inv, att = V.ROPE_INIT_FUNCTIONS["longrope"](v5(**cfg))
        want = math.sqrt(1 + math.log(16) / math.log(4096))
    else:
        inv, att = O.ROPE_INIT_FUNCTIONS["longrope"](cfg)
        want = math.sqrt(1 + math.log(32) / math.log(4096))
    assert att == pytest.approx(want, rel=1e-15)
    assert new.attention_scaling == pytest.approx(att, rel=1e-12)
    same_freqs(new.inv_freq, inv, fmt)
    # the switch to the long factors past the original length, against each version's module
    hf = V.LlamaRotaryEmbedding(v5(**cfg)) if fmt == "v5" else O.LlamaRotaryEmbedding(cfg)
    for p in (4095, 4096, 5000, 100):
        pos = torch.tensor([[0, 1, p]])
        x = torch.zeros(1)
        (co, _), (cn, _) = hf(x, pos), new(x, pos)
        close(cn[:, :2], co[:, :2], what=f"{fmt} at max position {p}")
        same_freqs(new.inv_freq, hf.inv_freq, f"{fmt} inv_freq after max position {p}")


def test_v4_longrope_original_only_in_rope_scaling():
    """v4.57 reads longrope's original length at the top level only (else max_position_embeddings); v5 reads
    rope_parameters'. The same numbers in the two formats give each version's frequencies and switch."""
    rs = {"rope_type": "longrope", "factor": 8.0, "short_factor": SHORT48, "long_factor": LONG48,
          "original_max_position_embeddings": 4096}
    base = {"hidden_size": 3072, "num_attention_heads": 32, "max_position_embeddings": 32768}
    c4 = dict(base, rope_theta=1e4, rope_scaling=rs)
    c5 = dict(base, rope_parameters=dict(rs, rope_theta=1e4))
    n4, n5 = pt.RotaryEmbedding(c4), pt.RotaryEmbedding(c5)
    h4, h5 = O.LlamaRotaryEmbedding(c4), V.LlamaRotaryEmbedding(v5(**c5))
    assert n4.attention_scaling == pytest.approx(h4.attention_scaling, rel=1e-12)
    assert n5.attention_scaling == pytest.approx(h5.attention_scaling, rel=1e-12)
    assert n4.attention_scaling != pytest.approx(n5.attention_scaling, rel=1e-6)
    pos = torch.tensor([[0, 5000]])  # past 4096, below 32768: v5 switches to the long factors, v4 does not
    for new, hf, what in ((n4, h4, "v4"), (n5, h5, "v5")):
        new(torch.zeros(1), pos)
        hf(torch.zeros(1), pos)
        same_freqs(new.inv_freq, hf.inv_freq, what)
    assert not torch.equal(n4.inv_freq, n5.inv_freq)


def test_yarn_factor_per_format():
    """yarn without factor: v5 derives max / original; v4.57 raises KeyError, posenc refuses naming the key."""
    rs = {"rope_type": "yarn", "original_max_position_embeddings": 4096}
    base = {"hidden_size": 4096, "num_attention_heads": 32, "head_dim": 128, "max_position_embeddings": 32768}
    c5 = dict(base, rope_parameters=dict(rs, rope_theta=1e6))
    inv, att = V.ROPE_INIT_FUNCTIONS["yarn"](v5(**dict(c5, rope_parameters=dict(c5["rope_parameters"],
                                                                                  factor=None))))
    new = pt.RotaryEmbedding(c5)
    same_freqs(new.inv_freq, inv, "v5 yarn, factor derived")
    assert new.attention_scaling == pytest.approx(att, rel=1e-12)
    with pytest.raises(ValueError, match=r"rope_scaling\['factor'\]"):
        pt.RotaryEmbedding(dict(base, rope_theta=1e6, rope_scaling=rs))


def test_unknown_rope_type_and_bad_shapes_refused():
    base = {"head_dim": 64, "max_position_embeddings": 4096}
    with pytest.raises(ValueError, match="rope_type"):
        pt.RotaryEmbedding(dict(base, rope_parameters={"rope_type": "xdrope", "rope_theta": 1e4}))
    with pytest.raises(ValueError, match="rope_parameters: expected a dict"):
        pt.RotaryEmbedding(dict(base, rope_parameters=[("rope_type", "default")]))
    with pytest.raises(ValueError, match="layer_type .full_attention.: this config has one set of RoPE parameters"):
        pt.RotaryEmbedding(dict(base, rope_theta=1e4))(torch.zeros(1), SHORT, "full_attention")


# ---- HF: construction, buffers, position ids, apply_rotary_pos_emb ----------------------------------------------

def llama_v5_fields():
    return {"hidden_size": 4096, "num_attention_heads": 32, "head_dim": 128, "max_position_embeddings": 131072,
            "rope_parameters": {"rope_type": "llama3", "rope_theta": 5e5, "factor": 8.0, "low_freq_factor": 1.0,
                                "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}}


def test_meta_device_then_materialised():
    """HF builds on "meta" (model loaders do, then materialise): the buffers are meta, forward on a meta x gives
    meta cos / sin of the right shape; to_empty() and posenc's values come back in the buffers."""
    hf = V.LlamaRotaryEmbedding(v5(**llama_v5_fields()), device="meta")
    new = pt.RotaryEmbedding(llama_v5_fields(), device="meta")
    assert hf.inv_freq.is_meta and new.inv_freq.is_meta and new.original_inv_freq.is_meta
    xm = torch.empty(2, 5, 4096, device="meta")
    cos, sin = new(xm, torch.arange(5).unsqueeze(0).expand(2, -1))
    assert cos.is_meta and cos.shape == (2, 5, 128) and sin.is_meta
    cpu = pt.RotaryEmbedding(llama_v5_fields())
    new.to_empty(device="cpu")
    assert_bits(new.inv_freq, cpu.inv_freq, "inv_freq after to_empty")
    assert_bits(new.original_inv_freq, cpu.original_inv_freq, "original_inv_freq after to_empty")
    assert_bits(new(torch.zeros(1), SHORT)[0], cpu(torch.zeros(1), SHORT)[0], "forward after to_empty")
    same_freqs(new.inv_freq, V.LlamaRotaryEmbedding(v5(**llama_v5_fields())).inv_freq, "llama3 v5")


def test_buffers_and_original_inv_freq():
    """v5: inv_freq and original_inv_freq, both non-persistent buffers; a dynamic update changes inv_freq only,
    the reset restores original_inv_freq's values."""
    cfg = {"hidden_size": 1024, "num_attention_heads": 16, "head_dim": 64, "max_position_embeddings": 256,
           "rope_parameters": {"rope_type": "dynamic", "factor": 2.0, "rope_theta": 1e4}}
    hf, new = V.LlamaRotaryEmbedding(v5(**cfg)), pt.RotaryEmbedding(cfg)
    assert {n for n, _ in new.named_buffers()} == {n for n, _ in hf.named_buffers()} == \
        {"inv_freq", "original_inv_freq"}
    assert new.state_dict().keys() == hf.state_dict().keys() == set()
    first = new.original_inv_freq.clone()
    assert_bits(new.inv_freq, first, "at init")
    x = torch.zeros(1)
    for p in (1000, 2000, 100):
        pos = torch.tensor([[0, p]])
        hf(x, pos)
        new(x, pos)
        same_freqs(new.inv_freq, hf.inv_freq, f"dynamic after {p}")
        assert_bits(new.original_inv_freq, first, "original_inv_freq unchanged")
        assert new.max_seq_len_cached == int(hf.max_seq_len_cached), p
    assert_bits(new.inv_freq, first, "reset below max_position_embeddings")


def test_float_position_ids():
    """HF takes float position ids (position_ids.float()): integer-valued ones give posenc's exact (integer)
    values, fractional ones double-precision values close to HF's."""
    cfg = O.original_configs()["llama3_1_8b"]
    hf, new = O.LlamaRotaryEmbedding(cfg), pt.RotaryEmbedding(cfg)
    x = torch.zeros(1)
    pos = torch.tensor([[0, 1, 7, 100, 4095]])
    for dt in (torch.float32, torch.float64, torch.float16):  # float16 holds 4095 as 4096, as HF reads it
        assert_bits(new(x, pos.to(dt))[0], new(x, pos.to(dt).long())[0], f"{dt} integer-valued ids")
    assert_bits(new(x, pos.float())[0], new(x, pos)[0], "float32 ids")
    frac = torch.tensor([[0.5, 1.25, 10.75, 31.5]])
    (co, so), (cn, sn) = hf(x, frac), new(x, frac)
    close(cn, co, what="fractional cos")
    close(sn, so, what="fractional sin")
    q, k = torch.randn(1, 4, 4, 128), torch.randn(1, 2, 4, 128)
    want = pt.apply_rotary_pos_emb(q, k, cn, sn)
    new.apply_rotary(q, k, frac)
    assert_bits(q, want[0], "apply_rotary at fractional ids = the formula with forward's cos/sin")


def test_apply_rotary_pos_emb_signatures():
    """v5: (q, k, cos, sin, unsqueeze_dim=1); v4: (q, k, cos, sin, position_ids=None, unsqueeze_dim=1)."""
    rp = pt.RotaryEmbedding(O.original_configs()["llama2_7b"])
    cos, sin = rp(torch.zeros(1), torch.arange(6).unsqueeze(0).expand(2, -1))
    q_bshd, k_bshd = torch.randn(2, 6, 4, 128), torch.randn(2, 6, 2, 128)
    q_bhsd, k_bhsd = q_bshd.transpose(1, 2), k_bshd.transpose(1, 2)
    want2 = V.apply_rotary_pos_emb(q_bshd, k_bshd, cos, sin, 2)
    got2 = pt.apply_rotary_pos_emb(q_bshd, k_bshd, cos, sin, 2)  # v5's fifth argument
    assert_bits(got2[0], want2[0], "v5 unsqueeze_dim=2, positional")
    assert_bits(got2[1], want2[1], "v5 unsqueeze_dim=2, k")
    want1 = O.apply_rotary_pos_emb(q_bhsd, k_bhsd, cos, sin)
    ids = torch.arange(6).unsqueeze(0)
    for args, kwargs in [((None,), {}), ((ids,), {}), ((), {"position_ids": ids}), ((), {"unsqueeze_dim": 1}),
                         ((1,), {})]:
        got = pt.apply_rotary_pos_emb(q_bhsd, k_bhsd, cos, sin, *args, **kwargs)
        assert_bits(got[0], want1[0], f"{args} {kwargs}")
    got = pt.apply_rotary_pos_emb(q_bshd, k_bshd, cos, sin, ids, 2)  # v4's six positional arguments
    assert_bits(got[0], O.apply_rotary_pos_emb(q_bshd, k_bshd, cos, sin, ids, 2)[0], "v4 (position_ids, 2)")
    # v5 accepts cos / sin already unsqueezed
    assert_bits(pt.apply_rotary_pos_emb(q_bhsd, k_bhsd, cos[:, None], sin[:, None])[0], want1[0], "4-D cos")
    with pytest.raises(TypeError, match="unsqueeze_dim"):
        pt.apply_rotary_pos_emb(q_bhsd, k_bhsd, cos, sin, 1, 2)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_apply_rotary_pos_emb_large_is_the_formula(dtype):
    """Past _SPLIT_MIN elements the products and sums are taken in fewer passes: the formula's bits."""
    rp = pt.RotaryEmbedding(O.original_configs()["llama3_1_8b"])
    pos = torch.arange(300).unsqueeze(0) * 37
    cos, sin = rp(torch.zeros(1, dtype=dtype), pos)
    q = torch.randn(1, 300, 8, 128).to(dtype).transpose(1, 2)
    k = torch.randn(1, 300, 2, 128).to(dtype).transpose(1, 2)
    assert q.numel() >= pt._SPLIT_MIN
    got, want = pt.apply_rotary_pos_emb(q, k, cos, sin), V.apply_rotary_pos_emb(q, k, cos, sin)
    assert got[0].dtype == dtype
    assert_bits(got[0], want[0], f"q {dtype}")
    assert_bits(got[1], want[1], f"k {dtype}")
    mixed = pt.apply_rotary_pos_emb(q.float(), k.float(), cos, sin)  # float32 q with narrow cos/sin: promotion
    assert_bits(mixed[0], V.apply_rotary_pos_emb(q.float(), k.float(), cos, sin)[0], "promoted")


def test_v4_45_positional_signature():
    """RotaryEmbedding(128, 4096, 500000.0): v4.45's (dim, max_position_embeddings, base); config= wins there."""
    new = pt.RotaryEmbedding(128, 4096, 500000.0)
    assert new.max_seq_len_cached == 4096 and new.rope == posenc.Rope(128, base=5e5)
    cfg = {"head_dim": 128, "rope_theta": 5e5, "max_position_embeddings": 4096}
    assert_bits(new(torch.zeros(1), SHORT)[0], pt.RotaryEmbedding(cfg)(torch.zeros(1), SHORT)[0], "== config")
    close(new(torch.zeros(1), SHORT)[0], O.LlamaRotaryEmbedding(cfg)(torch.zeros(1), SHORT)[0], what="vs HF")
    lin = pt.RotaryEmbedding(64, 2048, 10000, None, 4.0, "linear")
    assert lin.rope_type == "linear" and lin.rope == posenc.rope_init(64, 1e4, {"rope_type": "linear", "factor": 4.0})
    assert pt.RotaryEmbedding(64, config=cfg).rope.rotary_dim == 128
    with pytest.raises(TypeError, match="at most 7 positional"):
        pt.RotaryEmbedding(64, 2048, 1e4, None, 1.0, "default", None, 5)
    with pytest.raises(TypeError, match="unexpected keyword argument 'foo'"):
        pt.RotaryEmbedding(cfg, foo=1)


# ---- fairseq --------------------------------------------------------------------------------------------------

def fairseq_tokens(bsz=3, seq=40, pad=1):
    g = torch.Generator().manual_seed(11)
    tok = torch.randint(pad + 1, 1000, (bsz, seq), generator=g)
    tok[0, :4] = pad
    tok[-1, -3:] = pad
    return tok


def test_fairseq_main_factory_auto_expand():
    """main's PositionalEmbedding factory passes auto_expand; False keeps the table, True grows it as main."""
    for auto in (True, False):
        orig = O.PositionalEmbedding(16, 32, 1, auto_expand=auto)
        new = O.PositionalEmbedding(16, 32, 1, auto_expand=auto, module=pt.SinusoidalPositionalEmbedding)
        assert new.auto_expand is auto and new.weights.shape == orig.weights.shape == (18, 32)
        tok = fairseq_tokens(seq=40)
        close(new(tok), orig(tok), 2e-5, f"auto_expand={auto}")
        assert new.weights.shape == orig.weights.shape == ((42, 32) if auto else (18, 32))


def test_fairseq_state_dicts_load_strictly():
    new = pt.SinusoidalPositionalEmbedding(32, 1)
    main = O.SinusoidalPositionalEmbedding(32, 1)
    old = O.SinusoidalPositionalEmbeddingV0123(32, 1)
    assert list(new.state_dict()) == list(main.state_dict()) == []
    assert list(old.state_dict()) == ["_float_tensor"]
    new.load_state_dict(main.state_dict(), strict=True)  # main's empty state_dict
    new.load_state_dict(old.state_dict(), strict=True)  # v0.12.3's, as main loads it
    new.load_state_dict({"weights": torch.zeros(3, 32), "_float_tensor": torch.zeros(1)}, strict=True)
    main.load_state_dict(new.state_dict(), strict=True)
    tok = fairseq_tokens()
    assert_bits(new(tok), pt.SinusoidalPositionalEmbedding(32, 1)(tok), "unchanged by the loads")


@pytest.mark.parametrize("convert,dtype", [("double", torch.float64), ("half", torch.float16),
                                           ("bfloat16", torch.bfloat16), ("float", torch.float32)])
def test_fairseq_dtype_conversions(convert, dtype):
    """module.double() etc. then forward: main's dtype (its weights buffer is converted); the rows are posenc's
    table in that dtype (float64: the float32 values)."""
    new = getattr(pt.SinusoidalPositionalEmbedding(32, 1, init_size=16), convert)()
    main = getattr(O.SinusoidalPositionalEmbedding(32, 1, init_size=16), convert)()
    old = O.SinusoidalPositionalEmbeddingV0123(32, 1, init_size=16).to(dtype)
    tok = fairseq_tokens()  # 40 tokens: past init_size, the table grows
    yn, ym, yo = new(tok), main(tok), old(tok)
    assert yn.dtype == ym.dtype == yo.dtype == dtype
    tol = {torch.float64: 2e-5, torch.float32: 2e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}[dtype]
    close(yn, ym, tol, convert)
    pos = O.make_positions(tok, 1)
    exact = pt.SinusoidalPositionalEmbedding.get_embedding(64, 32, 1)
    want = exact.to(dtype) if dtype in (torch.float64, torch.float32) else \
        pt.table(posenc.Spec.fairseq(32), 64, dtype=dtype)
    want = want.clone()
    want[1] = 0
    assert_bits(yn.contiguous().view(-1, 32).float() if dtype == torch.float64 else yn.reshape(-1, 32),
                want[pos.reshape(-1)].float() if dtype == torch.float64 else want[pos.reshape(-1)], convert)
    step = new(tok[:, :1], incremental_state={}, timestep=torch.tensor([30]))
    assert step.dtype == dtype and step.shape == (3, 1, 32)


def test_fairseq_onnx_export_flag():
    new, main = pt.SinusoidalPositionalEmbedding(32, 1), O.SinusoidalPositionalEmbedding(32, 1)
    new.prepare_for_onnx_export_()
    main.prepare_for_onnx_export_()
    assert new.onnx_trace and main.onnx_trace
    tok = fairseq_tokens()
    assert_bits(new(tok), pt.SinusoidalPositionalEmbedding(32, 1)(tok), "the traceable branch, same rows")


def test_fairseq_v0123_positions_and_decode():
    """v0.12.3's module: the same rows (make_positions), decoding the row of timestep + 1."""
    new, old = pt.SinusoidalPositionalEmbedding(32, 1), O.SinusoidalPositionalEmbeddingV0123(32, 1)
    tok = fairseq_tokens()
    close(new(tok), old(tok), 2e-5, "forward")
    ts = torch.tensor([17])
    close(new(tok[:, :1], incremental_state={}, timestep=ts), old(tok[:, :1], incremental_state={}, timestep=ts),
          2e-5, "decode")


# ---- the PyTorch tutorial ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("convert,dtype", [("double", torch.float64), ("half", torch.float16),
                                           ("bfloat16", torch.bfloat16)])
@pytest.mark.parametrize("batch", [1, 8])
def test_tutorial_dtype_after_conversion(convert, dtype, batch):
    """x + pe with torch's promotion, as the tutorial: float64 after .double(), float32 for a float32 x after
    .half(); every batch size adds the same table (the module's, exact in its dtype)."""
    new = getattr(pt.PositionalEncoding(32, dropout=0.0, max_len=64), convert)().eval()
    orig = getattr(O.PositionalEncoding(32, dropout=0.0, max_len=64), convert)().eval()
    x = torch.randn(20, batch, 32)
    yn, yo = new(x), orig(x)
    assert yn.dtype == yo.dtype == torch.promote_types(torch.float32, dtype)
    assert_bits(new.pe, pt.table(posenc.Spec.vaswani(32), 64, dtype=dtype if dtype != torch.float64
                                 else torch.float32).to(dtype).view(64, 1, 32), "pe exact in " + convert)
    if dtype == torch.float64:
        assert torch.equal(yn, x + new.pe[:20])
    else:
        assert_bits(yn, x + new.pe[:20], "x + pe")
    one = new(x[:, :1])
    assert torch.equal(one, yn[:, :1]), "batch 1 and batch %d add the same table" % batch
    close(yn.float(), yo.float(), {torch.float64: 2e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}[dtype], "vs")


def test_tutorial_batch_first_dtype_after_double():
    new = pt.PositionalEncodingBatchFirst(32, dropout=0.0, max_len=64).double().eval()
    orig = O.PositionalEncodingBatchFirst(32, dropout=0.0, max_len=64).double().eval()
    x = torch.randn(2, 20, 32)
    assert new(x).dtype == orig(x).dtype == torch.float64
    back = new.float()
    assert_bits(back.pe, pt.table(posenc.Spec.vaswani(32), 64).view(1, 64, 32), ".float() back: exact again")
    assert_bits(back(x), pt.add(x, posenc.Spec.vaswani(32)), "and the fused add again")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_narrow_tables_and_back(dtype):
    """.half() / .bfloat16() give posenc's narrow tables (the exact float32 values rounded to the format, as
    torch's conversion does); .float() afterwards gives the exact float32 table back, not the narrow values
    widened (the original modules keep the narrow values)."""
    tut = pt.PositionalEncoding(512, max_len=4096).to(dtype)
    fs = pt.SinusoidalPositionalEmbedding(512, 1, init_size=4096).to(dtype)
    narrow_v = pt.table(posenc.Spec.vaswani(512), 4096, dtype=dtype)
    narrow_f = pt.table(posenc.Spec.fairseq(512), 4096, dtype=dtype)
    narrow_f[1] = 0
    assert_bits(tut.pe.view(4096, 512), narrow_v, "tutorial pe")
    assert_bits(fs.weights, narrow_f, "fairseq weights")
    exact_v, exact_f = pt.table(posenc.Spec.vaswani(512), 4096), pt.SinusoidalPositionalEmbedding.get_embedding(
        4096, 512, 1)
    assert not torch.equal(narrow_v.float(), exact_v)
    assert_bits(tut.float().pe.view(4096, 512), exact_v, "tutorial pe back in float32")
    assert_bits(fs.float().weights, exact_f, "fairseq weights back in float32")
    orig = O.PositionalEncoding(512, max_len=4096).to(dtype).float()
    assert torch.equal(orig.pe.view(4096, 512), orig.pe.view(4096, 512).to(dtype).float()), "the original's stays narrow"


def test_v4_original_inv_freq_is_an_attribute():
    """transformers v4.57's LlamaRotaryEmbedding names the inv_freq tensor by a plain attribute original_inv_freq
    (v5: a buffer, test_buffers_and_original_inv_freq): a rope_scaling config gives the v4 form, through a
    dynamic growth and its reset (where v4 makes the original tensor inv_freq again)."""
    cfg = {"hidden_size": 1024, "num_attention_heads": 16, "head_dim": 64, "max_position_embeddings": 256,
           "rope_theta": 1e4, "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}}
    hf, new = O.LlamaRotaryEmbedding(cfg), pt.RotaryEmbedding(cfg)
    assert [n for n, _ in new.named_buffers()] == [n for n, _ in hf.named_buffers()] == ["inv_freq"]
    assert new.original_inv_freq is new.inv_freq and hf.original_inv_freq is hf.inv_freq
    x = torch.zeros(1)
    for p in (1000, 100):
        pos = torch.tensor([[0, p]])
        hf(x, pos)
        new(x, pos)
        same_freqs(new.inv_freq, hf.inv_freq, f"dynamic after {p}")
        assert (new.inv_freq is new.original_inv_freq) == (hf.inv_freq is hf.original_inv_freq), p
    for m in (hf, new):
        m.to(torch.float64)
        assert m.inv_freq.dtype == torch.float64 and m.original_inv_freq.dtype == torch.float32


def test_compute_default_rope_parameters():
    """transformers v5's static compute_default_rope_parameters, which its _init_weights calls on every rotary
    module of the default type: the module's own inv_freq values (posenc's), attention factor 1; a config of
    another rope_type is refused, naming it."""
    cfg = {"hidden_size": 1024, "num_attention_heads": 16, "head_dim": 64, "max_position_embeddings": 4096,
           "rope_parameters": {"rope_type": "default", "rope_theta": 5e5, "partial_rotary_factor": 0.5}}
    m = pt.RotaryEmbedding(cfg)
    inv, att = pt.RotaryEmbedding.compute_default_rope_parameters(cfg)
    assert att == 1.0 and inv.dtype == torch.float32 and inv.shape == (16,)
    assert_bits(inv, m.inv_freq, "compute_default_rope_parameters")
    same_freqs(inv, 1.0 / (5e5 ** (torch.arange(0, 32, 2, dtype=torch.float64) / 32)), "default, 32 of 64 rotate")
    with pytest.raises(ValueError, match="llama3"):
        pt.RotaryEmbedding.compute_default_rope_parameters(llama_v5_fields())
