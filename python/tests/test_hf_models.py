"""posenc.torch's rotary modules inside the real transformers: for every model family with a RoPE of its own, a
small random-weight model built from transformers' own config class (small widths, the family's real RoPE
settings), its rotary modules swapped for posenc.torch's as docs/python.md ("Use it inside transformers")
writes it, then:

- the logits of transformers' own forward at positions below 4096 within 1e-4 of vanilla's, relative to the
  largest (float32), and the same greedy tokens from generate() with the cache;
- the swapped module's cos/sin at positions 1e6 and 2^30 (M-RoPE: a different position on each axis) are the
  correctly rounded values of the exact ones, against mpfr_ref.py's MPFR reference (the family's frequencies in
  real arithmetic); vanilla's error there is measured and printed;
- a bf16 and an fp16 model: the swapped module's cos/sin have the original's dtype and device, and the model runs;
- the vision towers (Qwen2-VL, Qwen2.5-VL, Qwen3-VL, ERNIE-4.5-VL) give vanilla's output with their rotary swapped.

Needs transformers (Debian unstable's python3-transformers; scripts/test_transformers.sh runs it there); skipped
where it is not installed (bookworm has none). Nothing is downloaded: every model is made from a config here."""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import math  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import posenc.torch as pt  # noqa: E402

import mpfr_ref as R  # noqa: E402

FAR = (10 ** 6, 2 ** 30)
SEQ = 48  # prompt length of the logits check; its positions end just below 4096
GEN = 12  # tokens generate() adds


def note(line):
    """A measurement: printed, and kept in $POSENC_HF_NOTES when set (scripts/test_transformers.sh shows it)."""
    print(line)
    path = os.environ.get("POSENC_HF_NOTES")
    if path:
        with open(path, "a") as fh:
            fh.write(line + "\n")


def _small(**kw):
    """The widths every text model here shares (a 32-wide head unless the family sets its own)."""
    base = dict(vocab_size=256, hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, pad_token_id=0, bos_token_id=1, eos_token_id=None, tie_word_embeddings=False)
    base.update(kw)
    return base


# ---- the families --------------------------------------------------------------------------------------------
# Each: the config, how to build the model, the one line that swaps its rotary module (as docs/python.md gives
# it), where the text rotary is, and the exact frequencies (MPFR) with the attention factor of its RoPE at a
# sequence length (for the dynamic and longrope types).

def _llama31():
    from transformers import LlamaConfig, LlamaForCausalLM
    c = LlamaConfig(**_small(max_position_embeddings=131072, rope_parameters={
        "rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
        "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}))
    return LlamaForCausalLM(c)


def _mistral():
    from transformers import MistralConfig, MistralForCausalLM
    return MistralForCausalLM(MistralConfig(**_small(max_position_embeddings=32768, sliding_window=None,
                                                     rope_parameters={"rope_type": "default", "rope_theta": 1e6})))


def _qwen2():
    from transformers import Qwen2Config, Qwen2ForCausalLM
    return Qwen2ForCausalLM(Qwen2Config(**_small(max_position_embeddings=32768,
                                                 rope_parameters={"rope_type": "default", "rope_theta": 1e6})))


def _qwen3():
    from transformers import Qwen3Config, Qwen3ForCausalLM
    return Qwen3ForCausalLM(Qwen3Config(**_small(head_dim=32, max_position_embeddings=40960,
                                                 rope_parameters={"rope_type": "default", "rope_theta": 1e6})))


PHI3_SHORT = [1.0 + 0.05 * i for i in range(16)]
PHI3_LONG = [1.0 + 1.5 * i for i in range(16)]


def _phi3():
    from transformers import Phi3Config, Phi3ForCausalLM
    c = Phi3Config(**_small(max_position_embeddings=131072, original_max_position_embeddings=4096,
                            rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0,
                                             "short_factor": PHI3_SHORT, "long_factor": PHI3_LONG}))
    return Phi3ForCausalLM(c)


DSV3_YARN = {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 40.0, "original_max_position_embeddings": 4096,
             "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0}


def _deepseek_v3():
    from transformers import DeepseekV3Config, DeepseekV3ForCausalLM
    c = DeepseekV3Config(**_small(num_key_value_heads=4, q_lora_rank=64, kv_lora_rank=32, qk_rope_head_dim=32,
                                  qk_nope_head_dim=32, v_head_dim=32, n_routed_experts=4, num_experts_per_tok=2,
                                  n_group=1, topk_group=1, moe_intermediate_size=64, first_k_dense_replace=1,
                                  max_position_embeddings=163840, rope_parameters=dict(DSV3_YARN)))
    return DeepseekV3ForCausalLM(c)


def _gpt_neox():
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM
    c = GPTNeoXConfig(**dict(_small(), num_key_value_heads=None, max_position_embeddings=2048 * 4,
                             rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                              "partial_rotary_factor": 0.25}))
    return GPTNeoXForCausalLM(c)


def _gemma3():
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig
    c = Gemma3TextConfig(**_small(head_dim=32, num_hidden_layers=2, sliding_window=16, max_position_embeddings=131072,
                                  layer_types=["sliding_attention", "full_attention"],
                                  rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                                                   "full_attention": {"rope_type": "linear", "factor": 8.0,
                                                                      "rope_theta": 1e6}}))
    return Gemma3ForCausalLM(c)


def _gemma4():
    from transformers import Gemma4ForCausalLM, Gemma4TextConfig
    c = Gemma4TextConfig(**_small(head_dim=32, global_head_dim=64, num_hidden_layers=2, sliding_window=16,
                                  max_position_embeddings=131072, layer_types=["sliding_attention", "full_attention"],
                                  hidden_size_per_layer_input=16, vocab_size_per_layer_input=256))
    return Gemma4ForCausalLM(c)


HUNYUAN = {"rope_type": "dynamic", "rope_theta": 10000.0, "alpha": 1000.0, "factor": 1.0, "beta_fast": 32,
           "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0}


def _hunyuan():
    from transformers import HunYuanDenseV1Config, HunYuanDenseV1ForCausalLM
    c = HunYuanDenseV1Config(**_small(head_dim=32, max_position_embeddings=32768, rope_parameters=dict(HUNYUAN)))
    return HunYuanDenseV1ForCausalLM(c)


def _hunyuan_moe():
    from transformers import HunYuanMoEV1Config, HunYuanMoEV1ForCausalLM
    c = HunYuanMoEV1Config(**_small(head_dim=32, max_position_embeddings=32768, num_experts=4, moe_topk=2,
                                    rope_parameters=dict(HUNYUAN)))
    return HunYuanMoEV1ForCausalLM(c)


def _glm5():
    from transformers import GlmMoeDsaConfig, GlmMoeDsaForCausalLM
    c = GlmMoeDsaConfig(**_small(num_key_value_heads=4, q_lora_rank=64, kv_lora_rank=32, qk_rope_head_dim=32,
                                 qk_nope_head_dim=32, v_head_dim=32, n_routed_experts=4, num_experts_per_tok=2,
                                 moe_intermediate_size=64, first_k_dense_replace=1, index_head_dim=64, index_n_heads=2,
                                 index_topk=16, max_position_embeddings=202752, rope_interleave=True,
                                 indexer_rope_interleave=True,
                                 rope_parameters={"rope_type": "default", "rope_theta": 1e6}))
    return GlmMoeDsaForCausalLM(c)


DSV4_YARN = {"type": "yarn", "factor": 16.0, "original_max_position_embeddings": 65536, "beta_fast": 32,
             "beta_slow": 1}


def _deepseek_v4():
    from transformers import DeepseekV4Config, DeepseekV4ForCausalLM
    kw = _small(num_hidden_layers=3, head_dim=64, partial_rotary_factor=0.5, q_lora_rank=64,
                                  o_groups=2, o_lora_rank=32, index_n_heads=2, index_head_dim=32, index_topk=8,
                                  sliding_window=16, n_routed_experts=4, num_experts_per_tok=2,
                                  moe_intermediate_size=64, hc_mult=2, num_key_value_heads=1,
                                  layer_types=["sliding_attention", "compressed_sparse_attention",
                                               "heavily_compressed_attention"],
                                  compress_rates={"compressed_sparse_attention": 4,
                                                  "heavily_compressed_attention": 8},
                                  mlp_layer_types=["hash_moe", "moe", "moe"], rope_theta=10000.0,
                                  compress_rope_theta=160000.0, max_position_embeddings=1048576,
                                  rope_scaling=dict(DSV4_YARN))
    kw.pop("intermediate_size")  # V4's attribute_map aliases it to moe_intermediate_size
    return DeepseekV4ForCausalLM(DeepseekV4Config(**kw))


def swap_v4(model):
    """docs/python.md's line for DeepSeek-V4: every DeepseekV4RotaryEmbedding (the model's, each compressor's and
    indexer's) replaced by posenc's."""
    for mod in list(model.modules()):
        for n, c in list(mod.named_children()):
            if type(c).__name__ == "DeepseekV4RotaryEmbedding":
                setattr(mod, n, pt.DeepseekV4RotaryEmbedding(model.config))


MINIMAX_TEXT = {"rope_type": "default", "rope_theta": 5e6, "partial_rotary_factor": 0.5}


def _minimax_text(**kw):
    """MiniMax-M3's text widths here: a 32-wide head of which partial_rotary_factor 0.5 rotates 16 (the real
    model's 64 of 128), base 5e6, small MoE and indexer sizes."""
    return _small(head_dim=32, max_position_embeddings=524288, rope_parameters=dict(MINIMAX_TEXT),
                  num_local_experts=4, num_experts_per_tok=2, dense_intermediate_size=256,
                  shared_intermediate_size=64, index_n_heads=2, index_head_dim=32, index_block_size=16,
                  index_topk_blocks=2, **kw)


def _minimax_m3():
    from transformers import MiniMaxM3VLForCausalLM, MiniMaxM3VLTextConfig
    return MiniMaxM3VLForCausalLM(MiniMaxM3VLTextConfig(**_minimax_text()))


def swap_text(model):
    """The one line of docs/python.md for the text families: the model's rotary module replaced by posenc's."""
    if type(model).__name__.startswith("DeepseekV4"):
        swap_v4(model)
        return model.model.rotary_emb
    inner = model.gpt_neox if hasattr(model, "gpt_neox") else model.model
    name = type(model).__name__
    cls = (pt.HunYuanDenseV1RotaryEmbedding if name.startswith("HunYuanDense") else
           pt.HunYuanMoEV1RotaryEmbedding if name.startswith("HunYuanMoE") else pt.RotaryEmbedding)
    inner.rotary_emb = cls(model.config)
    return inner.rotary_emb


def text_rotary(model):
    return (model.gpt_neox if hasattr(model, "gpt_neox") else model.model).rotary_emb


def _inv(base, r):
    return [R.inv_freq(base, r, i) for i in range(r // 2)]


# The exact RoPE of each family's rotary: (frequencies in real arithmetic, attention factor), at a sequence
# length seq (max position + 1), for a layer type; and the rotary width.
def exact_llama31(seq, layer_type=None):
    return R.hf_llama3(500000.0, 32, 8.0, 1.0, 4.0, 8192), 1.0


def exact_default(theta):
    return lambda seq, layer_type=None: (_inv(theta, 32), 1.0)


def exact_phi3(seq, layer_type=None):
    ext = PHI3_LONG if seq > 4096 else PHI3_SHORT
    return R.hf_longrope(10000.0, 32, ext, 131072 / 4096, 4096)


def exact_dsv3(seq, layer_type=None):
    y = DSV3_YARN
    return R.hf_yarn(10000.0, 32, y["factor"], y["original_max_position_embeddings"], y["beta_fast"], y["beta_slow"],
                     y["mscale"], y["mscale_all_dim"])


def exact_dsv4(seq, layer_type=None):
    if layer_type == "main":
        return _inv(10000.0, 32), 1.0
    y = DSV4_YARN
    return R.hf_yarn(160000.0, 32, y["factor"], y["original_max_position_embeddings"], y["beta_fast"],
                     y["beta_slow"], attention_factor=1.0)


def exact_neox(seq, layer_type=None):
    return _inv(10000.0, 8), 1.0


def exact_gemma3(seq, layer_type=None):
    if layer_type == "sliding_attention":
        return _inv(10000.0, 32), 1.0
    return R.hf_linear(1e6, 32, 8.0), 1.0


def exact_gemma4(seq, layer_type=None):
    if layer_type == "sliding_attention":
        return _inv(10000.0, 32), 1.0
    # proportional, partial_rotary_factor 0.25 of the 64-wide global head: 8 pairs turn, 24 stand still
    turning = int(0.25 * 64 // 2)
    return [R.inv_freq(1e6, 64, i) for i in range(turning)] + [0] * (32 - turning), 1.0


def exact_minimax(seq, layer_type=None):
    return _inv(5e6, 16), 1.0


def exact_hunyuan(seq, layer_type=None):
    if seq > 32768:  # upstream's growth: transformers' plain dynamic NTK for that length (no alpha)
        return R.hf_dynamic(10000.0, 32, 1.0, 32768, seq), 1.0
    with R.ctx(R.PREC):  # base * alpha^(d / (d - 2))
        lnb = R.gmpy2.log(R.mpfr(10000.0)) + R.gmpy2.log(R.mpfr(1000.0)) * 32 / 30
        return [R.gmpy2.exp(lnb * (-2 * i) / 32) for i in range(16)], 1.0


TEXT = {
    "llama3.1": (_llama31, exact_llama31, None),
    "mistral": (_mistral, exact_default(1e6), None),
    "qwen2": (_qwen2, exact_default(1e6), None),
    "qwen3": (_qwen3, exact_default(1e6), None),
    "phi3-longrope": (_phi3, exact_phi3, None),
    "deepseek-v3-yarn": (_deepseek_v3, exact_dsv3, None),
    "glm5-dsa": (_glm5, exact_default(1e6), None),
    "deepseek-v4": (_deepseek_v4, exact_dsv4, ("main", "compress")),
    "gpt-neox-partial": (_gpt_neox, exact_neox, None),
    "gemma3": (_gemma3, exact_gemma3, ("sliding_attention", "full_attention")),
    "gemma4-proportional": (_gemma4, exact_gemma4, ("sliding_attention", "full_attention")),
    "hunyuan-alpha": (_hunyuan, exact_hunyuan, None),
    "hunyuan-moe-alpha": (_hunyuan_moe, exact_hunyuan, None),
    "minimax-m3-partial": (_minimax_m3, exact_minimax, None),
}

_BUILT = {}


def twins(make, swap, seed, dtype=None):
    """(vanilla model, swapped model): two models from make() with the same weights (in dtype when given), the
    second's rotary modules swapped by swap."""
    torch.manual_seed(seed)
    vanilla = make().eval()
    swapped = make().eval()
    swapped.load_state_dict(vanilla.state_dict())
    if dtype is not None:
        vanilla, swapped = vanilla.to(dtype), swapped.to(dtype)
    swap(swapped)
    return vanilla, swapped


def built(name):
    """The twins of a text family (made once per run)."""
    if name not in _BUILT:
        _BUILT[name] = twins(TEXT[name][0], swap_text, 1234)
    return _BUILT[name]


class RefRotary(torch.nn.Module):
    """An independent rotary for the float64 reference model: cos / sin in float64 of p * f, f the nearest doubles
    of the family's frequencies in real arithmetic (mpfr_ref, the TEXT / VL tables here; nothing of posenc), times
    the attention factor, in the family's layout: "halves" (HF's cat(c, c)), "axes" (Qwen2-VL: a row per axis),
    "merged" (Qwen3-VL: pair i at its axis's position, halves), "pairs" (ERNIE: pair i at its axis's position,
    each value twice side by side)."""

    def __init__(self, freqs_of, layout="halves", axis=None):
        super().__init__()
        self.freqs_of, self.layout, self.axis = freqs_of, layout, axis

    def forward(self, x, position_ids, layer_type=None):
        seq = int(position_ids.max()) + 1
        freqs, att = self.freqs_of(seq, layer_type)
        f = torch.tensor([float(R.round_f64(R.mpfr(v))) for v in freqs], dtype=torch.float64)
        m = float(R.round_f64(R.mpfr(att)))
        pos = position_ids.double()
        if self.layout in ("merged", "pairs"):  # [3, b, s]: pair i at the position of its axis
            ang = torch.stack([pos[a] * f[i] for i, a in enumerate(self.axis)], dim=-1)
        else:  # [b, s] or Qwen2-VL's [3, b, s]: every pair at the row's position
            ang = pos.unsqueeze(-1) * f
        c, s = torch.cos(ang) * m, torch.sin(ang) * m
        if self.layout == "pairs":
            c, s = c.repeat_interleave(2, dim=-1), s.repeat_interleave(2, dim=-1)
        elif self.layout == "half":  # DeepSeek-V4: one value per pair
            pass
        else:
            c, s = torch.cat((c, c), dim=-1), torch.cat((s, s), dim=-1)
        return c.to(x.dtype), s.to(x.dtype)


def double_model(model, rotary):
    """The model in float64 with the reference rotary (RefRotary) in place of its own (model.model.rotary_emb,
    GPT-NeoX's model.gpt_neox.rotary_emb, a VL model's language_model.rotary_emb): the logits without float32's
    rounding in the model or in the RoPE angles, and nothing of posenc in them."""
    import copy
    m = copy.deepcopy(model).double()
    try:
        m.set_experts_implementation("eager")  # MoE models: torch's grouped matmul has no float64
    except (ValueError, RuntimeError, AttributeError, TypeError):
        pass  # a model without experts
    inner = m.gpt_neox if hasattr(m, "gpt_neox") else m.model
    inner = getattr(inner, "language_model", inner)
    if type(m).__name__.startswith("DeepseekV4"):  # every rotary of the model: its own, compressors', indexers'
        rotary.layout = "half"
        for mod in list(m.modules()):
            for n, c in list(mod.named_children()):
                if "RotaryEmbedding" in type(c).__name__:
                    setattr(mod, n, rotary)
        return m
    inner.rotary_emb = rotary
    return m


def check_logits(name, what, want, got, exact):
    """got (posenc's) within 1e-4 of want (vanilla's) relative to the largest; where vanilla's own float32 RoPE
    error moves its logits by more than half that from the float64 model's (exact), got is held to exact instead."""
    err, gap, own = relative(got, want), relative(want, exact), relative(got, exact)
    note("%s: %s: posenc vs vanilla %.3g relative to the largest (vanilla vs the float64 model %.3g, posenc %.3g)"
         % (name, what, err, gap, own))
    if gap <= 0.5e-4:
        assert err <= 1e-4, (name, what, err)
    else:  # the difference is vanilla's: posenc's logits are the float64 model's
        assert own <= 1e-4 and own < gap / 10, (name, what, err, gap, own)


def relative(a, b):
    a, b = a.double(), b.double()
    return float((a - b).abs().max() / b.abs().max())


def prompt(seed=7, n=SEQ):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(3, 250, (2, n), generator=g)


@pytest.mark.parametrize("name", sorted(TEXT))
def test_logits_and_generate(name):
    vanilla, swapped = built(name)
    assert type(text_rotary(swapped)).__module__.startswith("posenc")
    ids = prompt()
    with torch.no_grad():
        for start in (0, 4096 - SEQ):  # from the start, and positions up to 4095
            pos = torch.arange(start, start + SEQ).unsqueeze(0).expand(2, -1)
            want = vanilla(input_ids=ids, position_ids=pos).logits
            got = swapped(input_ids=ids, position_ids=pos).logits
            exact = double_model(vanilla, RefRotary(TEXT[name][1]))(input_ids=ids, position_ids=pos).logits
            check_logits(name, "logits at positions %d..%d" % (start, start + SEQ - 1), want, got, exact)
        a = vanilla.generate(ids[:, :16], max_new_tokens=GEN, do_sample=False, use_cache=True)
        b = swapped.generate(ids[:, :16], max_new_tokens=GEN, do_sample=False, use_cache=True)
    assert a.shape[1] == 16 + GEN
    assert torch.equal(a, b), (name, a, b)


def exact_ref(freqs, att, rotary_dim, rope):
    """mpfr_ref's RopeRef of the exact frequencies: a rope given by its base (posenc's rope.freq is None) turns by
    the real frequencies (posenc.h: the exact angle p * base^(-2i/r), scaled), one with explicit frequencies by
    their nearest doubles (posenc's rope.freq, checked equal here); the attention factor's nearest double."""
    m = float(R.round_f64(R.mpfr(att)))
    assert rope.attention_scale == m, (rope.attention_scale, m)
    ref = R.RopeRef(rotary_dim, attention_scale=m)
    if rope.freq is None:
        assert len(freqs) == rotary_dim // 2
        ref.f = [v if isinstance(v, type(R.mpfr(1))) else R.mpfr(v) for v in freqs]  # no rounding
    else:
        doubles = R.nearest_doubles(freqs)
        assert np.array_equal(np.asarray(rope.freq, np.float64), doubles), (list(rope.freq), doubles)
        ref.f = [R.mpfr(float(v), 64) for v in doubles]
    return ref


def rope_of(module, layer_type=None):
    return module.rope_for(layer_type) if isinstance(module, pt.RotaryEmbedding) else module.rope


@pytest.mark.parametrize("name", sorted(TEXT))
def test_far_positions_correctly_rounded(name):
    vanilla, swapped = built(name)
    make, exact, layer_types = TEXT[name]
    x = torch.zeros(1, 1, 8)
    for lt in layer_types or (None,):
        for p in FAR:  # one call per position: the dynamic and longrope types take their length from it
            pos = torch.tensor([[p]])
            args = (x, pos) if lt is None else (x, pos, lt)
            cos, sin = text_rotary(swapped)(*args)
            vcos, vsin = text_rotary(vanilla)(*args)
            assert cos.dtype == vcos.dtype == torch.float32 and cos.shape == vcos.shape, (cos.shape, vcos.shape)
            freqs, att = exact(p + 1, lt)
            half = isinstance(text_rotary(swapped), pt.DeepseekV4RotaryEmbedding)  # one value per pair
            r = cos.shape[-1] * (2 if half else 1)
            h = r // 2
            want = exact_ref(freqs, att, r, rope_of(text_rotary(swapped), lt)).cache([p])[0]
            c = cos.reshape(-1).numpy()
            s = sin.reshape(-1).numpy()
            assert np.array_equal(c[:h].view(np.uint32), want[:h].view(np.uint32)), (name, lt, p, c[:h], want[:h])
            assert np.array_equal(s[:h].view(np.uint32), want[h:].view(np.uint32)), (name, lt, p, s[:h], want[h:])
            if not half:
                assert np.array_equal(c[h:], c[:h]) and np.array_equal(s[h:], s[:h])  # HF's cat(freqs, freqs)
            verr = max(float(np.abs(vcos.reshape(-1).numpy()[:h].astype(np.float64) - want[:h]).max()),
                       float(np.abs(vsin.reshape(-1).numpy()[:h].astype(np.float64) - want[h:]).max()))
            note("%s%s: position %d: posenc's cos/sin correctly rounded; vanilla's largest error %.3g"
                  % (name, "" if lt is None else " " + lt, p, verr))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("name", sorted(TEXT))
def test_half_models(name, dtype):
    vanilla, swapped = twins(TEXT[name][0], swap_text, 99, dtype)
    lt = TEXT[name][2]
    x = torch.zeros(1, 4, 8, dtype=dtype)
    pos = torch.arange(4).unsqueeze(0)
    args = (x, pos) if lt is None else (x, pos, lt[-1])
    check_half(vanilla, swapped, text_rotary(vanilla)(*args), text_rotary(swapped)(*args), dtype)


def check_half(vanilla, swapped, want, got, dtype):
    """A bf16 / fp16 model's twins: the rotary's outputs (got, posenc's; want, vanilla's) of the same dtype (x's,
    or float32 where upstream's is: ERNIE), device and shape; the models' logits of dtype, finite, close."""
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.device == w.device and g.shape == w.shape, (g.dtype, w.dtype)
        assert g.dtype in (dtype, torch.float32)
    ids = prompt(n=8)
    with torch.no_grad():
        a = vanilla(input_ids=ids).logits
        b = swapped(input_ids=ids).logits
    assert a.dtype == b.dtype and bool(torch.isfinite(b.float()).all())
    # not bitwise: the cos/sin are rounded once from the exact values, vanilla's from float32 ones
    assert relative(b.float(), a.float()) < 0.05, relative(b.float(), a.float())


# ---- vision-language models: the text M-RoPE and the vision towers' rotary ------------------------------------

VL_TOKENS = dict(image_token_id=250, video_token_id=251, vision_start_token_id=252, vision_end_token_id=253)


def _qwen2vl():
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration
    c = Qwen2VLConfig(text_config=_small(max_position_embeddings=32768, rope_parameters={
        "rope_type": "default", "rope_theta": 1e6, "mrope_section": [4, 6, 6]}),
        vision_config=dict(depth=2, embed_dim=64, hidden_size=128, num_heads=4, patch_size=14, spatial_merge_size=2,
                           temporal_patch_size=2), **VL_TOKENS)
    return Qwen2VLForConditionalGeneration(c)


def _qwen25vl():
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration
    c = Qwen2_5_VLConfig(text_config=_small(max_position_embeddings=32768, rope_parameters={
        "rope_type": "default", "rope_theta": 1e6, "mrope_section": [4, 6, 6]}),
        vision_config=dict(depth=2, hidden_size=64, intermediate_size=128, num_heads=4, out_hidden_size=128,
                           window_size=56, fullatt_block_indexes=[1], patch_size=14, spatial_merge_size=2,
                           temporal_patch_size=2), **VL_TOKENS)
    return Qwen2_5_VLForConditionalGeneration(c)


def _qwen3vl():
    from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration
    c = Qwen3VLConfig(text_config=_small(head_dim=32, max_position_embeddings=262144, rope_parameters={
        "rope_type": "default", "rope_theta": 5e6, "mrope_section": [6, 5, 5], "mrope_interleaved": True}),
        vision_config=dict(depth=2, hidden_size=64, intermediate_size=128, num_heads=4, out_hidden_size=128,
                           num_position_embeddings=64, deepstack_visual_indexes=[1], patch_size=16,
                           spatial_merge_size=2, temporal_patch_size=2), **VL_TOKENS)
    return Qwen3VLForConditionalGeneration(c)


def _ernie45vl():
    from transformers import Ernie4_5_VLMoeConfig, Ernie4_5_VLMoeForConditionalGeneration
    c = Ernie4_5_VLMoeConfig(text_config=dict(_small(max_position_embeddings=131072, rope_parameters={
        "rope_type": "default", "rope_theta": 500000.0, "mrope_section": [6, 6, 4]}), moe_intermediate_size=[64, 64],
        moe_k=2, moe_num_experts=4, moe_num_shared_experts=1),
        vision_config=dict(depth=2, hidden_size=64, intermediate_size=128, num_heads=4, patch_size=14,
                           spatial_merge_size=2, temporal_merge_size=2),
        image_start_token_id=252, image_end_token_id=253, image_token_id=250, video_start_token_id=254,
        video_end_token_id=255, video_token_id=251)
    return Ernie4_5_VLMoeForConditionalGeneration(c)


def swap_vl(model):
    """docs/python.md's lines for the VL families: the text rotary, then the vision tower's."""
    text_config = model.config.text_config
    lm = model.model.language_model
    name = type(model).__name__
    if name.startswith("Qwen3VL"):
        lm.rotary_emb = pt.Qwen3VLTextRotaryEmbedding(text_config)
    elif name.startswith("Ernie4_5"):
        lm.rotary_emb = pt.Ernie4_5_VLMoeTextRotaryEmbedding(text_config)
    else:
        lm.rotary_emb = pt.Qwen2VLRotaryEmbedding(text_config)
    visual = model.model.visual if hasattr(model.model, "visual") else model.model.vision_tower
    visual.rotary_pos_emb = pt.VisionRotaryEmbedding(visual.rotary_pos_emb.dim, visual.rotary_pos_emb.theta)


def vision_tower(model):
    return model.model.visual if hasattr(model.model, "visual") else model.model.vision_tower


# (layout of the merged rows, posenc sections) of each family's text M-RoPE; None: Qwen2-VL's per-axis rows
VL = {
    "qwen2-vl": (_qwen2vl, 1e6, None, None),
    "qwen2.5-vl": (_qwen25vl, 1e6, None, None),
    "qwen3-vl": (_qwen3vl, 5e6, R.INTERLEAVED, [6, 5, 5]),
    "ernie-4.5-vl": (_ernie45vl, 500000.0, R.ALTERNATING, [4, 6, 6]),
}


def vl_ref_rotary(name):
    """RefRotary of a VL family's text M-RoPE (the VL table's theta and sections)."""
    make, theta, layout, sections = VL[name]
    if layout is None:
        return RefRotary(lambda seq, lt=None: (_inv(theta, 32), 1.0), "axes")
    _, axis, _ = R.section_map(layout, sections, 16)
    return RefRotary(lambda seq, lt=None: (_inv(theta, 32), 1.0), "pairs" if layout == R.ALTERNATING else "merged",
                     axis)


def built_vl(name):
    """The twins of a VL family (made once per run)."""
    key = "vl:" + name
    if key not in _BUILT:
        _BUILT[key] = twins(VL[name][0], swap_vl, 4321)
    return _BUILT[key]


def mrope_ids(n, start):
    """[3, 2, n] position ids below 4096: text rows, then a 4 x 6 image grid (height, width apart), as
    get_rope_index makes them."""
    t = torch.arange(start, start + n)
    h, w = t.clone(), t.clone()
    img = slice(8, 32)
    base = int(t[8])
    h[img] = base + torch.arange(24) // 6
    w[img] = base + torch.arange(24) % 6
    t[img] = base
    t[32:] = h[32:] = w[32:] = base + 6 + torch.arange(n - 32)
    return torch.stack((t, h, w)).unsqueeze(1).expand(3, 2, n).contiguous()


def first_tensor(out):
    if isinstance(out, torch.Tensor):
        return out
    for key in ("last_hidden_state", "pooler_output"):
        v = getattr(out, key, None)
        if isinstance(v, torch.Tensor):
            return v
    return out[0] if isinstance(out[0], torch.Tensor) else first_tensor(out[0])


@pytest.mark.parametrize("name", sorted(VL))
def test_vl_text_logits_and_generate(name):
    vanilla, swapped = built_vl(name)
    ids = prompt(n=SEQ)
    with torch.no_grad():
        for start in (0, 4096 - SEQ):
            pos = mrope_ids(SEQ, start)
            outs = []
            for m in (vanilla, swapped, double_model(vanilla, vl_ref_rotary(name))):
                hidden = m.model.language_model(input_ids=ids, position_ids=pos).last_hidden_state
                outs.append(m.lm_head(hidden))
            check_logits(name, "text logits, M-RoPE ids up to %d" % int(pos.max()), outs[0], outs[1], outs[2])
        a = vanilla.generate(input_ids=ids[:, :16], max_new_tokens=GEN, do_sample=False, use_cache=True)
        b = swapped.generate(input_ids=ids[:, :16], max_new_tokens=GEN, do_sample=False, use_cache=True)
    assert a.shape[1] == 16 + GEN
    assert torch.equal(a, b), (name, a, b)


def _pixels(visual, grid):
    cfg = visual.config
    t, h, w = grid
    patch = cfg.patch_size
    tp = getattr(cfg, "temporal_patch_size", 1) or 1
    g = torch.Generator().manual_seed(5)
    return torch.randn(t * h * w, cfg.in_channels * tp * patch * patch, generator=g)


@pytest.mark.parametrize("name", sorted(VL))
def test_vision_tower(name):
    vanilla, swapped = built_vl(name)
    grid = (1, 8, 12) if name != "ernie-4.5-vl" else (2, 8, 12)
    pixels = _pixels(vision_tower(vanilla), grid)
    thw = torch.tensor([grid])
    with torch.no_grad():
        want = first_tensor(vision_tower(vanilla)(pixels, grid_thw=thw))
        got = first_tensor(vision_tower(swapped)(pixels, grid_thw=thw))
    err = relative(got, want)
    note("%s: vision tower (%d x %d x %d patches): %.3g relative to the largest" % (name, *grid, err))
    assert got.shape == want.shape and err <= 1e-4


@pytest.mark.parametrize("name", sorted(VL))
def test_vl_far_positions_correctly_rounded(name):
    vanilla, swapped = built_vl(name)
    make, theta, layout, sections = VL[name]
    x = torch.zeros(1, 1, 8)
    rot_s, rot_v = swapped.model.language_model.rotary_emb, vanilla.model.language_model.rotary_emb
    for ps in ((10 ** 6, 2000, 77), (77, 10 ** 6, 2000), (2 ** 30, 12345, 678), (678, 2 ** 30, 12345)):
        pos = torch.tensor(ps).view(3, 1, 1)
        cos, sin = rot_s(x, pos)
        vcos, vsin = rot_v(x, pos)
        assert cos.dtype == vcos.dtype and cos.shape == vcos.shape, (cos.shape, vcos.shape)
        r = cos.shape[-1]
        h = r // 2
        one = exact_ref(_inv(theta, r), 1.0, r, rope_of(rot_s))
        if layout is None:  # Qwen2-VL: row a of every pair at axis a's position, HF's halves twice
            want = np.stack([one.row(p) for p in ps])
            c, s = cos.reshape(3, r).numpy(), sin.reshape(3, r).numpy()
            vc, vs = vcos.reshape(3, r).numpy(), vsin.reshape(3, r).numpy()
            got_c, got_s, v_c, v_s = c[:, :h], s[:, :h], vc[:, :h], vs[:, :h]
            assert np.array_equal(c[:, h:], got_c) and np.array_equal(s[:, h:], got_s)
            want_c, want_s = want[:, :h], want[:, h:]
        else:
            axes, axis, _ = R.section_map(layout, sections, h)
            row = R.AxesRef(one, axes, axis).token(list(ps))
            want_c, want_s = row[:h], row[h:]
            c, s = cos.reshape(r).numpy(), sin.reshape(r).numpy()
            vc, vs = vcos.reshape(r).numpy(), vsin.reshape(r).numpy()
            if layout == R.ALTERNATING:  # ERNIE: each pair's value twice, side by side
                got_c, got_s, v_c, v_s = c[0::2], s[0::2], vc[0::2], vs[0::2]
                assert np.array_equal(c[1::2], got_c) and np.array_equal(s[1::2], got_s)
            else:
                got_c, got_s, v_c, v_s = c[:h], s[:h], vc[:h], vs[:h]
                assert np.array_equal(c[h:], got_c) and np.array_equal(s[h:], got_s)
        assert np.array_equal(got_c.view(np.uint32), want_c.view(np.uint32)), (name, ps, got_c, want_c)
        assert np.array_equal(got_s.view(np.uint32), want_s.view(np.uint32)), (name, ps, got_s, want_s)
        verr = max(float(np.abs(v_c.astype(np.float64) - want_c).max()),
                   float(np.abs(v_s.astype(np.float64) - want_s).max()))
        note("%s: positions %s: posenc's cos/sin correctly rounded; vanilla's largest error %.3g" % (name, ps, verr))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("name", sorted(VL))
def test_vl_half_models(name, dtype):
    vanilla, swapped = twins(VL[name][0], swap_vl, 98, dtype)
    x = torch.zeros(1, 4, 8, dtype=dtype)
    pos = mrope_ids(40, 0)[:, :1, :4]
    check_half(vanilla, swapped, vanilla.model.language_model.rotary_emb(x, pos),
               swapped.model.language_model.rotary_emb(x, pos), dtype)


@pytest.mark.parametrize("name", sorted(TEXT) + ["vl:" + n for n in sorted(VL)])
def test_init_weights_after_swap(name):
    """transformers' _init_weights (from_pretrained's initialisation of missing weights, post_init) reaches every
    module whose class name has "RotaryEmbedding" and an original_inv_freq (not Gemma's per-layer-type ones: its
    own branches take only its classes): on posenc's it runs (v5's compute_default_rope_parameters for the
    default type, ROPE_INIT_FUNCTIONS otherwise), fills inv_freq with vanilla's values (zeroed before, to see it
    reached) and changes nothing posenc's forward computes."""
    if name.startswith("vl:"):
        vanilla, swapped = built_vl(name[3:])
        rot, vrot = swapped.model.language_model.rotary_emb, vanilla.model.language_model.rotary_emb
        pos = mrope_ids(40, 100)[:, :1]
    else:
        vanilla, swapped = twins(TEXT[name][0], swap_text, 6)  # new: no earlier call has moved their state
        rot, vrot = text_rotary(swapped), text_rotary(vanilla)
        pos = torch.arange(100, 140).unsqueeze(0)
    lt = TEXT.get(name, (None, None, None))[2]
    x = torch.zeros(1, 1, 8)
    args = (x, pos) if lt is None else (x, pos, lt[-1])
    before = [t.clone() for t in rot(*args)]
    reached = hasattr(rot, "original_inv_freq")
    assert reached == (lt is None), name
    if reached:
        rot.inv_freq.zero_()
    swapped._init_weights(rot)
    if reached:
        assert torch.allclose(rot.inv_freq, vrot.inv_freq, rtol=2.0 ** -21, atol=0), (name, rot.inv_freq)
    for b, a in zip(before, rot(*args)):
        assert torch.equal(a, b), name


@pytest.mark.parametrize("name", sorted(TEXT) + ["vl:" + n for n in sorted(VL)])
def test_module_members(name):
    """The swapped text rotary has the original's buffers (names, shapes, dtypes; values within HF's float32
    evaluation of the frequencies), the same original_inv_freq form (buffer or attribute), rope_type, attention
    scaling and cached lengths. Vision towers: the same inv_freq buffer, dim and theta."""
    # new models: the others' calls may have moved the dynamic / longrope state
    if name.startswith("vl:"):
        vanilla, swapped = twins(VL[name[3:]][0], swap_vl, 5)
        pairs = [(vanilla.model.language_model.rotary_emb, swapped.model.language_model.rotary_emb),
                 (vision_tower(vanilla).rotary_pos_emb, vision_tower(swapped).rotary_pos_emb)]
    else:
        vanilla, swapped = twins(TEXT[name][0], swap_text, 5)
        pairs = [(text_rotary(vanilla), text_rotary(swapped))]
    for v, s in pairs:
        vb, sb = dict(v.named_buffers()), dict(s.named_buffers())
        assert sorted(vb) == sorted(sb), (name, sorted(vb), sorted(sb))
        for key in vb:
            assert vb[key].shape == sb[key].shape and vb[key].dtype == sb[key].dtype, (name, key)
            assert torch.allclose(sb[key], vb[key], rtol=2.0 ** -21, atol=0), (name, key, sb[key], vb[key])
        assert s.state_dict().keys() == v.state_dict().keys()
        for attr in ("rope_type", "attention_scaling", "max_seq_len_cached", "original_max_seq_len", "mrope_section",
                     "dim", "theta", "layer_types"):
            if hasattr(v, attr):
                want, got = getattr(v, attr), getattr(s, attr)
                if isinstance(want, float):
                    assert got == pytest.approx(want, rel=1e-6), (name, attr, got, want)
                elif attr == "layer_types":  # upstream's a list (Gemma 3) or a set (Gemma 4), posenc's a list
                    assert set(got) == set(want), (name, got, want)
                else:
                    assert got == want, (name, attr, got, want)
        if hasattr(v, "original_inv_freq"):
            assert ("original_inv_freq" in sb) == ("original_inv_freq" in vb), name
            assert torch.allclose(s.original_inv_freq, v.original_inv_freq, rtol=2.0 ** -21, atol=0), name


# ---- MiniMax-M3-VL: its own vision tower 3-D RoPE (MiniMaxM3VL3DRotaryEmbedding), a 1-D text RoPE ------------

MINIMAX_VISION = dict(hidden_size=160, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
                      patch_size=14, temporal_patch_size=2, spatial_merge_size=2)  # head 80, as the real tower's
MINIMAX_IMAGE = 250


def _minimax_m3_vl():
    from transformers import MiniMaxM3SparseForConditionalGeneration, MiniMaxM3VLConfig
    c = MiniMaxM3VLConfig(text_config=_minimax_text(), vision_config=dict(MINIMAX_VISION),
                          image_token_index=MINIMAX_IMAGE, video_token_index=251, projector_hidden_size=128)
    return MiniMaxM3SparseForConditionalGeneration(c)


def swap_minimax_vl(model):
    """docs/python.md's lines for MiniMax-M3-VL: the text rotary (transformers' own RotaryEmbedding form), then
    the vision tower's 3-D one, with the arguments the tower gives it."""
    vc = model.config.vision_config
    model.model.language_model.rotary_emb = pt.RotaryEmbedding(model.config.text_config)
    model.model.vision_tower.rotary_emb = pt.MiniMaxM3VL3DRotaryEmbedding(
        vc.hidden_size // vc.num_attention_heads, theta=vc.rope_parameters["rope_theta"],
        spatial_merge_size=vc.spatial_merge_size)


def built_minimax_vl():
    if "minimax-vl" not in _BUILT:
        _BUILT["minimax-vl"] = twins(_minimax_m3_vl, swap_minimax_vl, 4321)
    return _BUILT["minimax-vl"]


def _minimax_pixels(grids):
    vc = MINIMAX_VISION
    n = sum(t * h * w for t, h, w in grids)
    g = torch.Generator().manual_seed(5)
    return torch.randn(n, 3 * vc["temporal_patch_size"] * vc["patch_size"] ** 2, generator=g)


MINIMAX_GRIDS = [(1, 8, 12), (2, 4, 6)]


def test_minimax_vl_vision_tower_and_logits():
    """The vision tower with posenc's rotary gives vanilla's output (two images, one of two frames), and the
    whole model's logits on a prompt holding both images' tokens are vanilla's; the text part greedy-generates
    the same tokens."""
    vanilla, swapped = built_minimax_vl()
    assert type(swapped.model.vision_tower.rotary_emb).__module__.startswith("posenc")
    pixels, thw = _minimax_pixels(MINIMAX_GRIDS), torch.tensor(MINIMAX_GRIDS)
    with torch.no_grad():
        want = vanilla.model.vision_tower(pixels, image_grid_thw=thw).last_hidden_state
        got = swapped.model.vision_tower(pixels, image_grid_thw=thw).last_hidden_state
    err = relative(got, want)
    note("minimax-m3-vl: vision tower (%s patches): %.3g relative to the largest" % (MINIMAX_GRIDS, err))
    assert got.shape == want.shape and err <= 1e-4
    n_img = sum(t * h * w for t, h, w in MINIMAX_GRIDS) // 4
    ids = prompt(n=SEQ + n_img)[:1]
    ids[0, 4:4 + n_img] = MINIMAX_IMAGE
    with torch.no_grad():
        a = vanilla(input_ids=ids, pixel_values=pixels, image_grid_thw=thw).logits
        b = swapped(input_ids=ids, pixel_values=pixels, image_grid_thw=thw).logits
        err = relative(b, a)
        note("minimax-m3-vl: logits with %d image tokens: %.3g relative to the largest" % (n_img, err))
        assert a.shape == b.shape and err <= 1e-4
        text = prompt()[:, :16]
        ga = vanilla.generate(input_ids=text, max_new_tokens=GEN, do_sample=False, use_cache=True)
        gb = swapped.generate(input_ids=text, max_new_tokens=GEN, do_sample=False, use_cache=True)
    assert ga.shape[1] == 16 + GEN and torch.equal(ga, gb), (ga, gb)


def test_minimax_vl_vision_rotary_correctly_rounded():
    """The swapped vision rotary's cos / sin, over a grid with rows and columns up to 4095 (sampled tokens), are
    the correctly rounded values of the exact ones (MPFR: theta^(-2k/26) per axis, nearest doubles; frame, row,
    column); vanilla's largest error there is measured."""
    vanilla, swapped = built_minimax_vl()
    rs, rv = swapped.model.vision_tower.rotary_emb, vanilla.model.vision_tower.rotary_emb
    grids = [(3, 4096, 2), (1, 2, 4096)]
    thw = torch.tensor(grids)
    cos, sin = rs(thw, torch.device("cpu"), torch.float32)
    vcos, vsin = rv(thw, torch.device("cpu"), torch.float32)
    assert cos.shape == vcos.shape == (3 * 4096 * 2 + 2 * 4096, 78) and cos.dtype == vcos.dtype
    half = 13
    freq = [R.power(10000.0, 2 * (j % half), 26) for j in range(39)]
    assert np.array_equal(np.asarray(rs.rope.freq, np.float64), np.array([float(v) for v in freq]))
    ref = R.AxesRef(R.RopeRef(78, freq=np.array([float(v) for v in freq])), 3, [j // half for j in range(39)])
    pos = []  # upstream's token order, loop by loop: frames, merge windows (2 x 2), rows, columns within
    for t, h, w in grids:
        pos += [(f, bh * 2 + i, bw * 2 + j) for f in range(t) for bh in range(h // 2) for bw in range(w // 2)
                for i in range(2) for j in range(2)]
    pos = np.array(pos, np.int64)
    assert np.array_equal(rs.position_ids(thw).numpy(), pos)
    pick = np.unique(np.concatenate([np.arange(0, len(pos), 97), np.arange(len(pos) - 40, len(pos)),
                                     np.arange(8190, 8200)]))
    want = np.stack([ref.token(list(pos[i])) for i in pick])
    c, s = cos.numpy()[pick], sin.numpy()[pick]
    assert np.array_equal(c[:, :39].view(np.uint32), want[:, :39].view(np.uint32))
    assert np.array_equal(s[:, :39].view(np.uint32), want[:, 39:].view(np.uint32))
    assert np.array_equal(c[:, 39:], c[:, :39]) and np.array_equal(s[:, 39:], s[:, :39])
    vc, vs = vcos.numpy()[pick].astype(np.float64), vsin.numpy()[pick].astype(np.float64)
    verr = max(np.abs(vc[:, :39] - want[:, :39]).max(), np.abs(vs[:, :39] - want[:, 39:]).max())
    note("minimax-m3-vl vision: rows / columns up to 4095: posenc's cos/sin correctly rounded; vanilla's largest "
         "error %.3g" % verr)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_minimax_vl_half(dtype):
    """A bf16 / fp16 MiniMax-M3-VL: the vision rotary's cos / sin have vanilla's dtype and shape (posenc's float32
    values rounded to it), and the tower runs to vanilla's output."""
    vanilla, swapped = twins(_minimax_m3_vl, swap_minimax_vl, 97, dtype)
    thw = torch.tensor(MINIMAX_GRIDS)
    for g, w in zip(swapped.model.vision_tower.rotary_emb(thw, torch.device("cpu"), dtype),
                    vanilla.model.vision_tower.rotary_emb(thw, torch.device("cpu"), dtype)):
        assert g.dtype == w.dtype == dtype and g.shape == w.shape and g.device == w.device
    pixels = _minimax_pixels(MINIMAX_GRIDS).to(dtype)
    with torch.no_grad():
        a = vanilla.model.vision_tower(pixels, image_grid_thw=thw).last_hidden_state
        b = swapped.model.vision_tower(pixels, image_grid_thw=thw).last_hidden_state
    assert a.dtype == b.dtype == dtype and bool(torch.isfinite(b.float()).all())
    assert relative(b.float(), a.float()) < 0.05, relative(b.float(), a.float())


def test_minimax_vl_members():
    """The swapped model's state_dict keys are vanilla's (neither vision rotary has buffers or parameters); the
    vision rotary's axis_dim, theta and spatial_merge_size are vanilla's; _init_weights runs on it."""
    vanilla, swapped = twins(_minimax_m3_vl, swap_minimax_vl, 5)
    assert list(swapped.state_dict()) == list(vanilla.state_dict())
    v, s = vanilla.model.vision_tower.rotary_emb, swapped.model.vision_tower.rotary_emb
    assert dict(s.named_buffers()) == {} == dict(v.named_buffers())
    want = (v.axis_dim, v.theta, v.spatial_merge_size)
    assert (s.axis_dim, s.theta, s.spatial_merge_size) == want == (26, 10000.0, 2)
    swapped._init_weights(s)
