"""The RoPE code of GLM-5 (glm_moe_dsa) and DeepSeek-V4 (deepseek_v4), re-typed from their formulas (not copied)
for test_torch_dsa.py and test_hf_models.py.

transformers 5.12.1 (Debian unstable's python3-transformers; models/deepseek_v4/configuration_deepseek_v4.py and
modeling_deepseek_v4.py, models/glm_moe_dsa/modeling_glm_moe_dsa.py):

* ``v4_config(**fields)``: DeepseekV4Config.__post_init__'s RoPE part: rope_parameters {"main": default at
  rope_theta, "compress": the flat dict (rope_scaling) at compress_rope_theta, yarn with attention_factor 1
  unless given}, both with partial_rotary_factor (default qk_rope_head_dim / head_dim, else 64 / 512);
  ``_rope_type_labels = ("main", "compress")``.
* ``DeepseekV4RotaryEmbedding(config)``: no device argument; per label ``{label}_inv_freq`` and
  ``{label}_original_inv_freq`` (non-persistent) and ``{label}_attention_scaling``; the default type's
  frequencies ``1 / base^(arange(0, dim, 2) / dim)`` in float32 with dim = int(head_dim * partial_rotary_factor),
  the yarn type's from transformers' _compute_yarn_parameters with the label (originals_hf5._yarn);
  ``forward(x, position_ids, layer_type)`` returns cos / sin of the float32 angles inv_freq @ positions, times
  the attention scaling, WITHOUT cat(freqs, freqs): [batch, seq, dim / 2].
* ``v4_apply_rotary_pos_emb(x, cos, sin, unsqueeze_dim=1)``: cos / sin repeat-interleaved to dim, the last dim
  channels of x rotated by the GPT-J rotate_half (pairs (2i, 2i + 1)) in float32, cast back, the leading
  channels kept. The attention output is rotated back by ``v4_apply_rotary_pos_emb(o, cos, -sin)``.
* ``apply_rotary_pos_emb_interleave(q, k, cos, sin, unsqueeze_dim=1)`` (GLM-5's MLA, as DeepSeek-V3's): cos /
  sin halves of cat(freqs, freqs); pair i = (x[2i], x[2i + 1]); the output is [x1 c - x2 s | x2 c + x1 s] (the
  rotated evens, then the rotated odds: the pairs de-interleaved, q.k unchanged). GLM-5's indexer rotates the
  FIRST qk_rope_head_dim of its index_head_dim channels with the halves formula (apply_rotary_pos_emb);
  transformers reads neither rope_interleave nor indexer_rope_interleave.

vLLM (vllm-project/vllm; model_executor/models/deepseek_v4.py at 023da1fc, layers/rotary_embedding/
deepseek_scaling_rope.py at 00d678e1, models/deepseek_v2.py for GLM-5):

* ``vllm_v4_rope_parameters(config, compress_ratio)``: DeepseekV4Attention's dict for get_rope: the config's
  rope_parameters with rope_theta = compress_rope_theta for a compressed layer (ratio > 1), else rope_theta;
  rope_type "deepseek_yarn" (apply_yarn_scaling true, the default) unless "default"; mscale 0, mscale_all_dim 0;
  is_deepseek_v4 true; rope_dim = qk_rope_head_dim; is_neox_style False (GPT-J pairs). At that commit the
  sliding-window layers keep the yarn factor (only the base changes), where transformers' "main" is plain RoPE.
* ``vllm_deepseek_mscale(factor, mscale, mscale_all_dim, attn_factor)``: DeepseekScalingRotaryEmbedding's
  yarn_get_mscale(f, mscale) / yarn_get_mscale(f, mscale_all_dim) * attn_factor, yarn_get_mscale(f, m) =
  0.1 m ln f + 1 for f > 1 (so m = 0 gives 1).
* GLM-5 / DeepSeek-V3.2: the MLA rotary ``is_neox_style = not rope_interleave`` (default true: GPT-J), the
  indexer's ``is_neox_style = not indexer_rope_interleave`` (default false at the main branch read; GLM-5's
  published configs set both true).
"""
from __future__ import annotations

import math
from typing import Any, Optional, Tuple

import torch
from torch import Tensor, nn

import originals_hf5 as H


def v4_config(**fields: Any) -> H.V5Config:
    """A DeepSeek-V4 config object as DeepseekV4Config leaves it (the RoPE fields)."""
    head_dim = fields.setdefault("head_dim", 512)
    prf = fields.get("partial_rotary_factor")
    if prf is None:
        qk = fields.pop("qk_rope_head_dim", None)
        prf = qk / head_dim if qk is not None else 64 / 512
    fields["partial_rotary_factor"] = prf
    fields["qk_rope_head_dim"] = int(head_dim * prf)
    fields.setdefault("rope_theta", 10000.0)
    fields.setdefault("compress_rope_theta", 160000.0)
    fields.setdefault("max_position_embeddings", 1048576)
    fields.setdefault("hidden_size", 4096)  # DeepseekV4Config's defaults
    fields.setdefault("num_attention_heads", 64)
    rp = fields.pop("rope_parameters", None) or fields.pop("rope_scaling", None) or {}
    if isinstance(rp.get("main"), dict) and isinstance(rp.get("compress"), dict):
        nested = {"main": rp["main"], "compress": rp["compress"]}
    else:
        flat = {k: v for k, v in rp.items() if k not in ("main", "compress")}
        if "type" in flat:
            flat.setdefault("rope_type", flat["type"])
        main = {"rope_type": "default", "rope_theta": fields["rope_theta"], "partial_rotary_factor": prf}
        compress = dict(flat, rope_theta=fields["compress_rope_theta"], partial_rotary_factor=prf)
        compress.setdefault("rope_type", "default")
        if compress["rope_type"] == "yarn":
            compress.setdefault("attention_factor", 1.0)
        nested = {"main": main, "compress": compress}
    c = H.V5Config(model_type="deepseek_v4", rope_parameters=nested, _rope_type_labels=("main", "compress"),
                   **fields)
    return c


def _v4_default(config: Any, device: Any = None, seq_len: Any = None, layer_type: Optional[str] = None):
    rp = config.rope_parameters[layer_type]
    base = rp["rope_theta"]
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    dim = int(head_dim * rp.get("partial_rotary_factor", 1.0))
    return 1.0 / (base ** (H._arange_f32(dim, device) / dim)), 1.0


class DeepseekV4RotaryEmbedding(nn.Module):
    def __init__(self, config: Any):
        super().__init__()
        self.max_seq_len_cached = config.max_position_embeddings
        self.original_max_seq_len = config.max_position_embeddings
        self.config = config
        self.layer_types = [k for k, v in config.rope_parameters.items() if isinstance(v, dict)]
        self.rope_type = {}
        for lt in self.layer_types:
            self.rope_type[lt] = config.rope_parameters[lt]["rope_type"]
            fn = _v4_default if self.rope_type[lt] == "default" else {"yarn": H._yarn}[self.rope_type[lt]]
            inv_freq, scaling = fn(config, layer_type=lt)
            self.register_buffer(lt + "_inv_freq", inv_freq, persistent=False)
            self.register_buffer(lt + "_original_inv_freq", inv_freq.clone(), persistent=False)
            setattr(self, lt + "_attention_scaling", scaling)

    @torch.no_grad()
    def forward(self, x: Tensor, position_ids: Tensor, layer_type: Optional[str] = None) -> Tuple[Tensor, Tensor]:
        inv = getattr(self, layer_type + "_inv_freq")
        scaling = getattr(self, layer_type + "_attention_scaling")
        inv = inv[None, :, None].float().expand(position_ids.shape[0], -1, 1).to(x.device)
        freqs = (inv @ position_ids[:, None, :].float()).transpose(1, 2)
        return (freqs.cos() * scaling).to(dtype=x.dtype), (freqs.sin() * scaling).to(dtype=x.dtype)


def rotate_half_gptj(x: Tensor) -> Tensor:
    return torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2)


def v4_apply_rotary_pos_emb(x: Tensor, cos: Tensor, sin: Tensor, unsqueeze_dim: int = 1) -> Tensor:
    cos = cos.repeat_interleave(2, dim=-1).unsqueeze(unsqueeze_dim)
    sin = sin.repeat_interleave(2, dim=-1).unsqueeze(unsqueeze_dim)
    r = cos.shape[-1]
    nope, rope = x[..., :-r], x[..., -r:]
    rotated = ((rope.float() * cos) + (rotate_half_gptj(rope).float() * sin)).to(x.dtype)
    return torch.cat([nope, rotated], dim=-1)


def apply_rotary_pos_emb_interleave(q: Tensor, k: Tensor, cos: Tensor, sin: Tensor, unsqueeze_dim: int = 1):
    cos = cos[..., : cos.shape[-1] // 2].unsqueeze(unsqueeze_dim)
    sin = sin[..., : sin.shape[-1] // 2].unsqueeze(unsqueeze_dim)
    out = []
    for t in (q, k):
        t1, t2 = t[..., 0::2], t[..., 1::2]
        out.append(torch.cat([t1 * cos - t2 * sin, t2 * cos + t1 * sin], dim=-1))
    return out[0], out[1]


def vllm_v4_rope_parameters(config: dict, compress_ratio: int) -> dict:
    """vLLM's DeepseekV4Attention dict for get_rope (from a config whose rope_parameters is the flat yarn dict)."""
    rp = dict(config["rope_parameters"])
    rp["rope_theta"] = config["compress_rope_theta"] if compress_ratio > 1 else config["rope_theta"]
    if rp["rope_type"] != "default":
        rp["rope_type"] = "deepseek_yarn" if rp.get("apply_yarn_scaling", True) else "deepseek_llama_scaling"
    rp["mscale"] = 0
    rp["mscale_all_dim"] = 0
    rp["is_deepseek_v4"] = True
    rp["rope_dim"] = config["qk_rope_head_dim"]
    return rp


def vllm_get_mscale(scale: float, mscale: float = 1.0) -> float:
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


def vllm_deepseek_mscale(factor: float, mscale: float = 1.0, mscale_all_dim: float = 0.0,
                         attn_factor: float = 1.0) -> float:
    return float(vllm_get_mscale(factor, float(mscale)) / vllm_get_mscale(factor, float(mscale_all_dim)) * attn_factor)
