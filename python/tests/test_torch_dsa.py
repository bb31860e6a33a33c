"""GLM-5's and DeepSeek-V4's RoPE in posenc.torch, against the re-typed upstream code (originals_dsa.py:
transformers 5.12.1, vLLM) and mpfr_ref.py's MPFR reference: rope_from_config's pairs from rope_interleave /
indexer_rope_interleave, DeepSeek-V4's "main" / "compress" parameters, DeepseekV4RotaryEmbedding (constructor,
buffers, forward, apply_rotary) and posenc.rope_init reading vLLM's V4 dict (mscale 0)."""
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import posenc  # noqa: E402
import posenc.torch as pt  # noqa: E402

import mpfr_ref as R  # noqa: E402
import originals_dsa as O  # noqa: E402

FAR = [0, 1, 4095, 65537, 10 ** 6, 2 ** 30]
YARN = {"type": "yarn", "factor": 16, "original_max_position_embeddings": 65536, "beta_fast": 32, "beta_slow": 1}


# ---- GLM-5: the pairs of rope_from_config --------------------------------------------------------------------

def glm5(**kw):
    """GLM-5's config.json (zai-org/GLM-5: rope_interleave and indexer_rope_interleave true), trimmed."""
    d = {"model_type": "glm_moe_dsa", "hidden_size": 6144, "num_attention_heads": 64, "kv_lora_rank": 512,
         "qk_rope_head_dim": 64,
         "qk_nope_head_dim": 192, "index_head_dim": 128, "max_position_embeddings": 202752,
         "rope_parameters": {"rope_type": "default", "rope_theta": 1e6}, "rope_interleave": True,
         "indexer_rope_interleave": True}
    d.update(kw)
    return {k: v for k, v in d.items() if v is not None}


def test_glm5_pairs_follow_the_keys():
    plain = posenc.Rope(64, base=1e6)
    assert pt.rope_from_config(glm5()) == plain.with_pairs("interleaved")
    assert pt.rope_from_config(glm5(), module="attention") == plain.with_pairs("interleaved")
    assert pt.rope_from_config(glm5(), module="indexer") == plain.with_pairs("interleaved")
    assert pt.rope_from_config(glm5(rope_interleave=False)) == plain
    assert pt.rope_from_config(glm5(indexer_rope_interleave=False), module="indexer") == plain
    # the indexer without its key: halves (transformers' indexer always, vLLM's default false)
    assert pt.rope_from_config(glm5(indexer_rope_interleave=None), module="indexer") == plain
    # MLA without the key: GPT-J, as vLLM reads it (getattr(config, "rope_interleave", True)); a config without MLA
    # and without the key (a Llama): halves, as before
    assert pt.rope_from_config(glm5(rope_interleave=None)) == plain.with_pairs("interleaved")
    assert pt.rope_from_config(glm5(rope_interleave=None, kv_lora_rank=None)) == plain
    # explicit pairs in any of the binding's spellings
    assert pt.rope_from_config(glm5(), pairs="GPTJ") == plain.with_pairs("interleaved")
    assert pt.rope_from_config(glm5(), pairs=1) == plain.with_pairs("interleaved")
    # explicit pairs agreeing with the key
    assert pt.rope_from_config(glm5(), pairs="interleaved") == plain.with_pairs("interleaved")


def test_glm5_refusals_name_the_key():
    with pytest.raises(ValueError, match="rope_interleave"):
        pt.rope_from_config(glm5(), pairs="halves")
    with pytest.raises(ValueError, match="indexer_rope_interleave"):
        pt.rope_from_config(glm5(), pairs="halves", module="indexer")
    with pytest.raises(ValueError, match="rope_interleave"):
        pt.rope_from_config(glm5(rope_interleave="yes"))
    with pytest.raises(ValueError, match="module"):
        pt.rope_from_config(glm5(), module="compressor")
    with pytest.raises(ValueError, match="indexer"):
        pt.rope_from_config({"head_dim": 64, "rope_theta": 1e4}, module="indexer")


def test_glm5_interleaved_rotation_is_transformers_up_to_its_order():
    """rope_from_config's GPT-J pairs rotate in place what transformers' apply_rotary_pos_emb_interleave rotates
    and then de-interleaves (evens, then odds): the same values in its order, so q.k is the same."""
    g = torch.Generator().manual_seed(3)
    q = torch.randn(1, 2, 5, 64, generator=g, dtype=torch.float64)
    k = torch.randn(1, 1, 5, 64, generator=g, dtype=torch.float64)
    pos = torch.tensor([[0, 7, 300, 4095, 65000]])
    rope = pt.rope_from_config(glm5())
    c, s = pt.rope_cache(rope, pos)  # first half written: one value per pair
    h = 32
    cos = torch.cat((c[..., :h], c[..., :h]), -1).double()
    sin = torch.cat((s[..., :h], s[..., :h]), -1).double()
    want_q, want_k = O.apply_rotary_pos_emb_interleave(q, k, cos, sin)
    gq, gk = q.float().clone(), k.float().clone()
    pt.apply_rotary(gq, gk, pos, rope)
    order = list(range(0, 64, 2)) + list(range(1, 64, 2))
    assert torch.allclose(gq[..., order].double(), want_q, atol=1e-5)
    assert torch.allclose(gk[..., order].double(), want_k, atol=1e-5)
    # the halves reading of the same config would not be (the bug this replaces)
    hq = q.float().clone()
    pt.apply_rotary(hq, None, pos, rope.with_pairs("halves"))
    assert not torch.allclose(hq[..., order].double(), want_q, atol=1e-3)


# ---- DeepSeek-V4: main / compress ----------------------------------------------------------------------------

def v4_json(**kw):
    """DeepSeek-V4-Flash's config.json, its RoPE fields (rope_scaling yarn, rope_theta, compress_rope_theta)."""
    d = {"model_type": "deepseek_v4", "hidden_size": 4096, "num_attention_heads": 64, "head_dim": 512,
         "qk_rope_head_dim": 64, "max_position_embeddings": 1048576, "rope_theta": 10000,
         "compress_rope_theta": 160000, "rope_scaling": dict(YARN), "compress_ratios": [0, 0, 4, 128]}
    d.update(kw)
    return d


def v4_compress_rope(pairs="interleaved"):
    return posenc.rope_init(64, 160000.0, {"rope_type": "yarn", "factor": 16.0, "original_max_position_embeddings":
                                           65536, "beta_fast": 32, "beta_slow": 1, "attention_factor": 1.0},
                            pairs=pairs)


def test_v4_rope_from_config():
    for cfg in (v4_json(), O.v4_config(rope_scaling=dict(YARN))):
        main = pt.rope_from_config(cfg, layer_type="main")
        assert main == posenc.Rope(64, pairs="interleaved", base=10000.0), main
        comp = pt.rope_from_config(cfg, layer_type="compress")
        assert comp == v4_compress_rope(), comp
        assert comp.attention_scale == 1.0
    with pytest.raises(ValueError, match="contradicts"):
        pt.rope_from_config(v4_json(), layer_type="main", pairs="halves")
    with pytest.raises(ValueError, match="layer_type"):
        pt.rope_from_config(v4_json(), layer_type="sliding_attention")
    # without rope_scaling the compressed layers are plain RoPE at compress_rope_theta (the config class's default)
    plain = v4_json(rope_scaling=None)
    assert pt.rope_from_config(plain, layer_type="compress") == posenc.Rope(64, pairs="interleaved", base=160000.0)


def test_v4_frequencies_exact():
    comp = pt.rope_from_config(v4_json(), layer_type="compress")
    freqs, att = R.hf_yarn(160000.0, 64, 16.0, 65536, 32, 1, attention_factor=1.0)
    assert np.array_equal(np.asarray(comp.freq, np.float64), R.nearest_doubles(freqs))
    assert float(R.round_f64(R.mpfr(att))) == comp.attention_scale == 1.0


def twins(cfg):
    return O.DeepseekV4RotaryEmbedding(cfg), pt.DeepseekV4RotaryEmbedding(cfg)


def test_v4_module_members():
    cfg = O.v4_config(rope_scaling=dict(YARN))
    v, s = twins(cfg)
    vb, sb = dict(v.named_buffers()), dict(s.named_buffers())
    assert sorted(vb) == sorted(sb) == sorted(["main_inv_freq", "main_original_inv_freq", "compress_inv_freq",
                                               "compress_original_inv_freq"])
    for key in vb:
        assert vb[key].shape == sb[key].shape == (32,) and vb[key].dtype == sb[key].dtype == torch.float32
        assert torch.allclose(sb[key], vb[key], rtol=2.0 ** -21, atol=0), key
    assert s.state_dict().keys() == v.state_dict().keys() == set()
    assert s.layer_types == v.layer_types == ["main", "compress"]
    assert s.rope_type == v.rope_type == {"main": "default", "compress": "yarn"}
    for attr in ("main_attention_scaling", "compress_attention_scaling", "max_seq_len_cached",
                 "original_max_seq_len"):
        assert getattr(s, attr) == getattr(v, attr), attr
    inv, att = pt.DeepseekV4RotaryEmbedding.compute_default_rope_parameters(cfg, layer_type="main")
    assert torch.equal(inv, s.main_inv_freq) and att == 1.0
    with pytest.raises(TypeError):
        pt.DeepseekV4RotaryEmbedding(cfg, None)  # upstream's constructor takes the config alone
    with pytest.raises(ValueError, match="main"):
        pt.DeepseekV4RotaryEmbedding({"head_dim": 64, "rope_parameters": {"rope_type": "default", "rope_theta": 1e4}})


@pytest.mark.parametrize("label,base", [("main", 10000.0), ("compress", 160000.0)])
def test_v4_forward_exact(label, base):
    v, s = twins(O.v4_config(rope_scaling=dict(YARN)))
    pos = torch.tensor([FAR])
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.zeros(1, 1, 8, dtype=dtype)
        cos, sin = s(x, pos, label)
        vcos, vsin = v(x, pos, label)
        assert cos.shape == vcos.shape == (1, len(FAR), 32) and cos.dtype == vcos.dtype == dtype
    x = torch.zeros(1, 1, 8)
    cos, sin = s(x, pos, label)
    if label == "main":
        freqs, att = [R.inv_freq(base, 64, i) for i in range(32)], 1
    else:
        freqs, att = R.hf_yarn(base, 64, 16.0, 65536, 32, 1, attention_factor=1.0)
    ref = R.RopeRef(64, attention_scale=1.0)
    rope = s.rope_for(label)
    ref.f = freqs if rope.freq is None else [R.mpfr(float(d), 64) for d in R.nearest_doubles(freqs)]
    want = ref.cache(FAR)
    assert np.array_equal(cos[0].numpy().view(np.uint32), want[:, :32].view(np.uint32)), label
    assert np.array_equal(sin[0].numpy().view(np.uint32), want[:, 32:].view(np.uint32)), label
    # at positions 0 and 1 upstream's float32 angles agree
    vcos, vsin = v(x, pos[:, :2], label)
    assert torch.allclose(cos[:, :2], vcos, atol=1e-6) and torch.allclose(sin[:, :2], vsin, atol=1e-6)


def test_v4_apply_rotary_and_inverse():
    """apply_rotary: upstream's v4 apply_rotary_pos_emb (trailing channels, GPT-J pairs) with the exact cos / sin,
    rounded once; inverse=True: upstream's (out, cos, -sin)."""
    cfg = O.v4_config(head_dim=128, partial_rotary_factor=0.5, rope_scaling=dict(YARN))
    s = pt.DeepseekV4RotaryEmbedding(cfg)
    g = torch.Generator().manual_seed(5)
    x = torch.randn(2, 3, 6, 128, generator=g)
    pos = torch.tensor([[0, 5, 99, 4095, 70000, 10 ** 6]] * 2)
    for label in ("main", "compress"):
        cos, sin = s(x, pos, label)
        want = O.v4_apply_rotary_pos_emb(x.double(), cos.double(), sin.double())
        got = s.apply_rotary(x.clone(), pos, label)
        assert torch.equal(got[..., :64], x[..., :64])
        assert torch.allclose(got.double(), want, atol=2e-6), label
        back = O.v4_apply_rotary_pos_emb(want, cos.double(), -sin.double())
        inv = s.apply_rotary(got.clone(), pos, label, inverse=True)
        assert torch.allclose(inv.double(), back, atol=4e-6)
        assert torch.allclose(inv, x, atol=4e-6)
        # bit for bit: MPFR's rotation of the trailing 64 channels by the spec's angles (R.rotate_tokens), and by
        # the opposite angles for inverse=True; the leading channels untouched
        rope = s.rope_for(label)
        xs = x.numpy().transpose(0, 2, 1, 3)  # [batch, seq, heads, dim], tokens first as rotate_tokens takes them
        p = pos[0].tolist()
        exact = R.rotate_tokens(np.ascontiguousarray(xs[..., 64:]), p, R.RopeRef.of(rope), "f32")
        assert np.array_equal(got.numpy().transpose(0, 2, 1, 3)[..., 64:].view(np.uint32), exact.view(np.uint32))
        undo = R.rotate_tokens(exact, p, R.RopeRef.of(rope.with_position_scale(-rope.position_scale)), "f32")
        assert np.array_equal(inv.numpy().transpose(0, 2, 1, 3)[..., 64:].view(np.uint32), undo.view(np.uint32))
        # [batch, seq, heads, dim] with unsqueeze_dim=2
        xt = x.transpose(1, 2).contiguous()
        got2 = s.apply_rotary(xt.clone(), pos, label, unsqueeze_dim=2)
        assert torch.equal(got2.transpose(1, 2), got)


# ---- posenc.rope_init: vLLM's V4 dict ------------------------------------------------------------------------

def test_rope_init_reads_vllms_v4_dict():
    config = {"rope_parameters": dict(YARN, rope_type="yarn"), "rope_theta": 10000.0, "compress_rope_theta": 160000.0,
              "qk_rope_head_dim": 64}
    for ratio, base in ((4, 160000.0), (128, 160000.0), (1, 10000.0)):
        d = O.vllm_v4_rope_parameters(config, ratio)
        assert d["mscale"] == 0 and d["mscale_all_dim"] == 0 and d["rope_type"] == "deepseek_yarn"
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # every key read: none ignored
            rope = posenc.rope_init(64, d["rope_theta"], d, pairs="interleaved")
        assert rope.attention_scale == O.vllm_deepseek_mscale(16.0, 0, 0) == 1.0
        # the frequencies: vLLM's YaRN blend with e = 1 is HF's truncated yarn, MPFR's (R.hf_yarn)
        freqs, _ = R.hf_yarn(base, 64, 16.0, 65536, 32.0, 1.0)
        assert rope.freq.tobytes() == R.nearest_doubles(freqs).tobytes()
    d = O.vllm_v4_rope_parameters(config, 4)
    assert np.array_equal(posenc.rope_init(64, 160000.0, d, pairs="interleaved").freq, v4_compress_rope().freq)
    # mscale 0 beside a nonzero mscale_all_dim: vLLM's 1 / (0.1 m ln f + 1) has no form in posenc's struct
    with pytest.raises(ValueError, match="mscale_all_dim"):
        posenc.rope_init(64, 160000.0, dict(d, mscale_all_dim=1.0))
    # vLLM's rope_dim is the rotary width
    with pytest.raises(ValueError, match="rope_dim"):
        posenc.rope_init(32, 160000.0, d)
    # mscale 0 alone (mscale_all_dim unset): vLLM's 1 / 1 as well
    alone = {k: v for k, v in d.items() if k != "mscale_all_dim"}
    assert posenc.rope_init(64, 160000.0, alone).attention_scale == 1.0
