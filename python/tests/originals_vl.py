"""Hugging Face transformers' multi-axis rotary embeddings of vision-language models, written here from the
public code (as originals.py does for the one-axis ones): the *originals* that posenc.torch's multi-axis
drop-ins are tested against. Each performs the same float32 operations in the same order as the code it stands
for, so that its outputs carry the same rounding errors. Re-typed from /work/notes/hf-multiaxis-rope.md, which
describes transformers at 036266707c1c (v5, ~5.17; "C-new" there) and the v4 code it replaced; the version
each definition follows is named at it. Plain torch, tested with Debian's torch 1.13.

* ``Qwen2VLRotaryEmbedding(config, device=None)`` (also Qwen2.5-VL's text rotary) and
  ``apply_multimodal_rotary_pos_emb(q, k, cos, sin, mrope_section, unsqueeze_dim=1)``;
* ``Qwen3VLTextRotaryEmbedding(config, device=None)`` with ``apply_interleaved_mrope``, used with the one-axis
  ``apply_rotary_pos_emb`` (originals.py);
* ``VisionRotaryEmbedding(dim, theta=10000.0)`` (Qwen2-VL / Qwen2.5-VL / Qwen3-VL / GLM-4V vision towers:
  ``forward(seqlen)`` of v4, ``forward(position_ids)`` of v5), v4's ``rot_pos_emb`` (the block-major (row, col)
  ids and the table lookup) and ``apply_rotary_pos_emb_vision(q, k, cos, sin)``;
* ``get_vision_position_ids`` and ``get_rope_index`` (the 3-D position ids of a prompt, C-new's algorithm).
* ``MiniMaxM3VL3DRotaryEmbedding(head_dim, theta=10000.0, spatial_merge_size=1)`` and its
  ``apply_rotary_pos_emb_vision`` (``minimax_apply_rotary_pos_emb_vision`` here), MiniMax-M3-VL's vision tower
  3-D RoPE, re-typed from transformers 5.12.1's models/minimax_m3_vl/modeling_minimax_m3_vl.py (Debian
  unstable's python3-transformers).

Configs follow v4's layout (``rope_theta`` at the top, ``rope_scaling`` holding ``mrope_section``), with v4's
Qwen2VLConfig rewrite of the rope type ``"mrope"`` to ``"default"``; v5 reads the same values from
``rope_parameters``. ``dynamic_rope_update`` (on Qwen3-VL's forward) is not re-typed: the configs used with
these originals have the default rope type, where it does nothing.
"""
from typing import Any, List, Optional, Sequence, Tuple

import torch
from torch import Tensor, nn

import originals as O

__all__ = [
    "Qwen2VLRotaryEmbedding", "apply_multimodal_rotary_pos_emb", "Qwen3VLTextRotaryEmbedding",
    "apply_interleaved_mrope", "VisionRotaryEmbedding", "VisionRotaryEmbeddingV4", "VisionRotaryEmbeddingV5",
    "vision_pos_ids", "rot_pos_emb",
    "apply_rotary_pos_emb_vision", "get_vision_position_ids", "get_rope_index", "vl_configs",
    "MiniMaxM3VL3DRotaryEmbedding", "minimax_apply_rotary_pos_emb_vision",
]


def _config(config: Any) -> dict:
    """A dict copy with v4 Qwen2VLConfig's rewrite: rope_scaling type "mrope" is "default"."""
    cfg = dict(config)
    rs = dict(cfg.get("rope_scaling") or {})
    if rs.get("type") == "mrope":
        rs["type"] = "default"
    if rs.get("rope_type") == "mrope":
        rs["rope_type"] = "default"
    cfg["rope_scaling"] = rs
    return cfg


# ---- Qwen2-VL / Qwen2.5-VL text (modeling_qwen2_vl.py; v4 00b676f8 and C-new alike) -------------------------

class Qwen2VLRotaryEmbedding(nn.Module):
    """``inv_freq`` from the rope type's init function (the default: ``1 / base ** (arange(0, dim, 2) / dim)`` in
    float32); ``forward(x, position_ids)`` with position_ids [3, bs, seq]: ``inv_freq[None, None, :, None]``
    expanded to [3, bs, dim/2, 1] times ``position_ids[:, :, None, :]`` in float32 (a matmul with inner
    dimension 1: one rounding of p * w), transposed to [3, bs, seq, dim/2], ``emb = cat(freqs, freqs)``,
    ``cos = emb.cos() * attention_scaling`` (and sin), then ``.to(x.dtype)``. No runtime update.
    ``original_inv_freq`` is v4's: a plain attribute naming the inv_freq tensor (so at v4.57.6, in Qwen2-VL,
    Qwen2.5-VL and Qwen3-VL alike; v5.0 to v5.15 register it as a non-persistent buffer, a clone)."""

    def __init__(self, config: Any, device: Optional[torch.device] = None):
        super().__init__()
        self.config = _config(config)
        self.rope_type = O._rope_type(self.config)
        inv_freq, self.attention_scaling = O.ROPE_INIT_FUNCTIONS[self.rope_type](self.config, device)
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.original_inv_freq = self.inv_freq

    def forward(self, x: Tensor, position_ids: Tensor) -> Tuple[Tensor, Tensor]:
        inv_freq_expanded = self.inv_freq[None, None, :, None].float().expand(3, position_ids.shape[1], -1, 1)
        position_ids_expanded = position_ids[:, :, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(2, 3)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = emb.cos() * self.attention_scaling
        sin = emb.sin() * self.attention_scaling
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


def apply_multimodal_rotary_pos_emb(q: Tensor, k: Tensor, cos: Tensor, sin: Tensor, mrope_section: List[int],
                                    unsqueeze_dim: int = 1) -> Tuple[Tensor, Tensor]:
    """``mrope_section * 2`` (the list repeated) splits cos / sin [3, bs, seq, dim] along the channels; chunk i
    takes axis i % 3; then HF's rotate_half formula in q's dtype."""
    mrope_section = mrope_section * 2
    cos = torch.cat([m[i % 3] for i, m in enumerate(cos.split(mrope_section, dim=-1))], dim=-1).unsqueeze(
        unsqueeze_dim)
    sin = torch.cat([m[i % 3] for i, m in enumerate(sin.split(mrope_section, dim=-1))], dim=-1).unsqueeze(
        unsqueeze_dim)
    q_embed = (q * cos) + (O.rotate_half(q) * sin)
    k_embed = (k * cos) + (O.rotate_half(k) * sin)
    return q_embed, k_embed


# ---- Qwen3-VL text (modeling_qwen3_vl.py @ C-new) -----------------------------------------------------------

def apply_interleaved_mrope(freqs: Tensor, mrope_section: List[int]) -> Tensor:
    """freqs [3, bs, seq, dim/2] -> [bs, seq, dim/2]: temporal everywhere, then height on the frequencies
    1, 4, .. below 3 * mrope_section[1] and width on 2, 5, .. below 3 * mrope_section[2]."""
    freqs_t = freqs[0]  # a view, written in place
    for dim, offset in enumerate((1, 2), start=1):
        length = mrope_section[dim] * 3
        idx = slice(offset, length, 3)
        freqs_t[..., idx] = freqs[dim, ..., idx]
    return freqs_t


class Qwen3VLTextRotaryEmbedding(nn.Module):
    """As Qwen2VLRotaryEmbedding, with ``mrope_section`` from the config (default [24, 20, 20]); forward expands
    2-D position_ids to [3, bs, seq], merges the axes with apply_interleaved_mrope before the cat, and returns
    cos / sin [bs, seq, dim]."""

    def __init__(self, config: Any, device: Optional[torch.device] = None):
        super().__init__()
        self.config = _config(config)
        self.rope_type = O._rope_type(self.config)
        inv_freq, self.attention_scaling = O.ROPE_INIT_FUNCTIONS[self.rope_type](self.config, device)
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.original_inv_freq = self.inv_freq
        self.mrope_section = self.config["rope_scaling"].get("mrope_section", [24, 20, 20])

    def forward(self, x: Tensor, position_ids: Tensor) -> Tuple[Tensor, Tensor]:
        if position_ids.ndim == 2:
            position_ids = position_ids[None, ...].expand(3, position_ids.shape[0], -1)
        inv_freq_expanded = self.inv_freq[None, None, :, None].float().expand(3, position_ids.shape[1], -1, 1)
        position_ids_expanded = position_ids[:, :, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(2, 3)
        freqs = apply_interleaved_mrope(freqs, self.mrope_section)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = emb.cos() * self.attention_scaling
        sin = emb.sin() * self.attention_scaling
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


# ---- the vision towers (modeling_qwen2_vl.py; v4 00b676f8 rot_pos_emb, C-new forward(position_ids)) ----------

class VisionRotaryEmbedding(nn.Module):
    """``inv_freq = 1 / theta ** (arange(0, dim, 2, dtype=float) / dim)`` (float32, dim/2 entries; dim =
    head_dim / 2). forward(seqlen), v4: ``outer(arange(seqlen, float32), inv_freq)`` [seqlen, dim/2];
    forward(position_ids [N, 2]), v5: ``(position_ids.unsqueeze(-1) * inv_freq).flatten(1)`` [N, dim] =
    [row * inv_freq | col * inv_freq] (int64 times float32: the position as a float32, one rounding)."""

    def __init__(self, dim: int, theta: float = 10000.0):
        super().__init__()
        self.dim, self.theta = dim, theta
        inv_freq = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float) / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, arg: Any) -> Tensor:
        if not isinstance(arg, Tensor) or arg.dim() == 0:  # v4's seqlen: an int or a 0-dim tensor
            seq = torch.arange(arg, device=self.inv_freq.device, dtype=self.inv_freq.dtype)
            return torch.outer(seq, self.inv_freq)
        return (arg.unsqueeze(-1) * self.inv_freq).flatten(1)


class VisionRotaryEmbeddingV4(VisionRotaryEmbedding):
    """v4's module alone, forward(seqlen) as upstream writes it (the benchmarks' original)."""

    def forward(self, seqlen: Any) -> Tensor:
        seq = torch.arange(seqlen, device=self.inv_freq.device, dtype=self.inv_freq.dtype)
        return torch.outer(seq, self.inv_freq)


class VisionRotaryEmbeddingV5(VisionRotaryEmbedding):
    """v5's module alone, forward(position_ids) as upstream writes it (the benchmarks' original)."""

    def forward(self, position_ids: Tensor) -> Tensor:
        return (position_ids.unsqueeze(-1) * self.inv_freq).flatten(1)


def vision_pos_ids(grid_thw: Tensor, spatial_merge_size: int) -> Tensor:
    """v4 Qwen2VisionTransformerPretrainedModel.rot_pos_emb's (row, col) ids [N, 2]: per image, the rows and
    columns of its (h, w) patch grid in the merger's block-major order (m x m blocks), repeated for its t frames."""
    pos_ids = []
    m = spatial_merge_size
    for t, h, w in grid_thw.tolist():
        hpos_ids = torch.arange(h).unsqueeze(1).expand(-1, w)
        hpos_ids = hpos_ids.reshape(h // m, m, w // m, m).permute(0, 2, 1, 3).flatten()
        wpos_ids = torch.arange(w).unsqueeze(0).expand(h, -1)
        wpos_ids = wpos_ids.reshape(h // m, m, w // m, m).permute(0, 2, 1, 3).flatten()
        pos_ids.append(torch.stack([hpos_ids, wpos_ids], dim=-1).repeat(t, 1))
    return torch.cat(pos_ids, dim=0)


def rot_pos_emb(rotary: nn.Module, grid_thw: Tensor, spatial_merge_size: int) -> Tensor:
    """v4's rot_pos_emb: the table of positions 0 .. max(h, w) - 1 indexed by the ids, [N, dim]."""
    pos_ids = vision_pos_ids(grid_thw, spatial_merge_size)
    max_grid_size = grid_thw[:, 1:].max()  # a 0-dim tensor, as v4 passes it
    rotary_pos_emb_full = rotary(max_grid_size)
    return rotary_pos_emb_full[pos_ids].flatten(1)


def apply_rotary_pos_emb_vision(q: Tensor, k: Tensor, cos: Tensor, sin: Tensor) -> Tuple[Tensor, Tensor]:
    """q, k [N, heads, head_dim], cos / sin [N, head_dim] (``emb = cat(rpe, rpe)``, ``emb.cos()``): in float32,
    ``cos.unsqueeze(-2)``, HF's rotate_half formula, cast back to q's and k's dtypes."""
    orig_q_dtype = q.dtype
    orig_k_dtype = k.dtype
    q, k = q.float(), k.float()
    cos, sin = cos.unsqueeze(-2).float(), sin.unsqueeze(-2).float()
    q_embed = (q * cos) + (O.rotate_half(q) * sin)
    k_embed = (k * cos) + (O.rotate_half(k) * sin)
    return q_embed.to(orig_q_dtype), k_embed.to(orig_k_dtype)


# ---- MiniMax-M3-VL's vision tower (transformers 5.12.1, modeling_minimax_m3_vl.py) -------------------------------

class MiniMaxM3VL3DRotaryEmbedding(nn.Module):
    """``axis_dim = 2 * ((2 * (head_dim // 2) // 3) // 2)`` elements per axis; no buffers. ``forward(grid_thw,
    device, dtype)``: per image, the (frame, row, column) of its patches, rows and columns in
    spatial_merge_size x spatial_merge_size windows, as float32; ``inv_freq = 1 / theta ** (arange(0, axis_dim,
    2) / axis_dim)`` in float32 (recomputed at every call); ``freqs = cat([coords[:, i:i+1] * inv_freq for i in
    range(3)])`` (T | H | W), ``emb = cat([freqs, freqs])``, ``(emb.cos().to(dtype), emb.sin().to(dtype))``."""

    def __init__(self, head_dim: int, theta: float = 10000.0, spatial_merge_size: int = 1):
        super().__init__()
        rope_dims = 2 * (head_dim // 2)
        self.axis_dim = 2 * ((rope_dims // 3) // 2)
        self.spatial_merge_size = spatial_merge_size
        self.theta = theta

    def forward(self, grid_thw: Tensor, device: torch.device, dtype: torch.dtype) -> Tuple[Tensor, Tensor]:
        m = self.spatial_merge_size
        coords = []
        for t, h, w in grid_thw.tolist():
            hi = torch.arange(h).unsqueeze(1).expand(-1, w)
            hi = hi.reshape(h // m, m, w // m, m).permute(0, 2, 1, 3).flatten()
            wi = torch.arange(w).unsqueeze(0).expand(h, -1)
            wi = wi.reshape(h // m, m, w // m, m).permute(0, 2, 1, 3).flatten()
            ti = torch.arange(t).repeat_interleave(h * w)
            coords.append(torch.stack([ti, hi.repeat(t), wi.repeat(t)], dim=-1))
        coords = torch.cat(coords).to(device=device, dtype=torch.float32)
        inv_freq = 1.0 / (
            self.theta ** (torch.arange(0, self.axis_dim, 2, dtype=torch.float32, device=device) / self.axis_dim)
        )
        freqs = torch.cat([coords[:, i: i + 1] * inv_freq for i in range(3)], dim=-1)
        emb = torch.cat([freqs, freqs], dim=-1)
        return emb.cos().to(dtype), emb.sin().to(dtype)


def minimax_apply_rotary_pos_emb_vision(q: Tensor, k: Tensor, cos: Tensor,
                                        sin: Tensor) -> Tuple[Tensor, Tensor]:
    """MiniMax-M3-VL's apply_rotary_pos_emb_vision: q, k [batch, N, heads, head_dim], cos / sin [N, rot_dim];
    the first rot_dim elements of a head rotated (rotate_half over them, in the tensors' dtype), the rest
    passing through."""
    rot_dim = cos.shape[-1]
    cos, sin = cos[None, :, None, :], sin[None, :, None, :]
    q_rot, q_pass = q[..., :rot_dim], q[..., rot_dim:]
    k_rot, k_pass = k[..., :rot_dim], k[..., rot_dim:]
    q_rot = q_rot * cos + O.rotate_half(q_rot) * sin
    k_rot = k_rot * cos + O.rotate_half(k_rot) * sin
    return torch.cat([q_rot, q_pass], dim=-1), torch.cat([k_rot, k_pass], dim=-1)


# ---- the 3-D position ids (Qwen2VLModel.get_rope_index @ C-new) -------------------------------------------------

def get_vision_position_ids(start: int, grid_thw: Sequence[int], temp_merge_size: int = 1,
                            spatial_merge_size: int = 1, time_interval: int = 1) -> Tensor:
    """[3, t' h' w'] ids of one image / video: t' = t // temp_merge_size, h' = h // m, w' = w // m; temporal
    start + frame * time_interval, height start + row, width start + col; meshgrid order t, h, w."""
    t, h, w = (int(v) for v in grid_thw)
    pt = torch.arange(t // temp_merge_size) * time_interval
    ph = torch.arange(h // spatial_merge_size) + start
    pw = torch.arange(w // spatial_merge_size) + start
    grid = torch.stack(torch.meshgrid(pt, ph, pw, indexing="ij")).reshape(3, -1)
    grid[0] += start
    return grid


def get_rope_index(mm_token_type_ids: Tensor, image_grid_thw: Optional[Tensor] = None,
                   video_grid_thw: Optional[Tensor] = None, spatial_merge_size: int = 2,
                   time_intervals: Optional[Sequence[int]] = None,
                   attention_mask: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
    """(position_ids [3, bs, seq], mrope_position_deltas [bs, 1]). mm_token_type_ids: 0 text, 1 image, 2 video
    (the processor's). Per sample, over its valid tokens: a text run of length L takes cur + arange(L) on all three
    rows and cur += L; each image / video (its t h w / m^2 tokens, the grids consumed in order) takes
    get_vision_position_ids(cur, grid, 1, m, interval), then cur += max(h, w) // m. Padding slots stay 0. The
    delta is max(positions) + 1 - valid tokens. time_intervals: one per video (Qwen2.5-VL's
    second_per_grid_ts * tokens_per_second; Qwen2-VL 1)."""
    bs, seq = mm_token_type_ids.shape
    if attention_mask is None:
        attention_mask = torch.ones_like(mm_token_type_ids)
    position_ids = torch.zeros(3, bs, seq, dtype=torch.int64)
    deltas = torch.zeros(bs, 1, dtype=torch.int64)
    images = list(image_grid_thw.tolist()) if image_grid_thw is not None else []
    videos = list(video_grid_thw.tolist()) if video_grid_thw is not None else []
    intervals = list(time_intervals) if time_intervals is not None else [1] * len(videos)
    m = spatial_merge_size
    for b in range(bs):
        valid = attention_mask[b].bool()
        types = mm_token_type_ids[b][valid].tolist()
        out, cur, i = [], 0, 0
        while i < len(types):
            kind = types[i]
            if kind == 0:
                j = i
                while j < len(types) and types[j] == 0:
                    j += 1
                out.append(cur + torch.arange(j - i).expand(3, -1))
                cur += j - i
                i = j
                continue
            grid = images.pop(0) if kind == 1 else videos.pop(0)
            interval = 1 if kind == 1 else intervals.pop(0)
            ids = get_vision_position_ids(cur, grid, 1, m, interval)
            assert all(x == kind for x in types[i:i + ids.shape[1]]), "token types do not match the grids"
            out.append(ids)
            cur += max(grid[1], grid[2]) // m
            i += ids.shape[1]
        llm = torch.cat(out, dim=1)
        position_ids[:, b, valid] = llm
        deltas[b, 0] = int(llm.max()) + 1 - len(types)
    return position_ids, deltas


# ---- configs ----------------------------------------------------------------------------------------------------

def vl_configs() -> dict:
    """The text configs (RoPE fields) of the models, v4 layout. Values: config.json of Qwen/Qwen2-VL-7B-Instruct and
    Qwen/Qwen2.5-VL-7B-Instruct (hidden 3584, 28 heads, 4 kv heads, rope_theta 1e6, mrope_section [16, 24, 24],
    max_position_embeddings 32768 / 128000), Qwen2-VL-2B (hidden 1536, 12 heads, 2 kv heads), Qwen3-VL
    (head_dim 128, rope_theta 5e6, mrope_section [24, 20, 20]), as the C++ presets cite them; the yarn variant
    is an illustration of a scaled M-RoPE (no shipped checkpoint), for the attention factor."""
    return {
        "qwen2_vl_7b": {"hidden_size": 3584, "num_attention_heads": 28, "num_key_value_heads": 4,
                        "max_position_embeddings": 32768, "rope_theta": 1000000.0,
                        "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}},
        "qwen2_5_vl_7b": {"hidden_size": 3584, "num_attention_heads": 28, "num_key_value_heads": 4,
                          "max_position_embeddings": 128000, "rope_theta": 1000000.0,
                          "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}},
        "qwen2_vl_2b": {"hidden_size": 1536, "num_attention_heads": 12, "num_key_value_heads": 2,
                        "max_position_embeddings": 32768, "rope_theta": 1000000.0,
                        "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}},
        "qwen2_5_vl_yarn": {"hidden_size": 3584, "num_attention_heads": 28, "num_key_value_heads": 4,
                            "max_position_embeddings": 128000, "rope_theta": 1000000.0,
                            "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768,
                                             "mrope_section": [16, 24, 24]}},
        "qwen3_vl_8b": {"hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
                        "max_position_embeddings": 262144, "rope_theta": 5000000.0,
                        "rope_scaling": {"rope_type": "default", "mrope_section": [24, 20, 20],
                                         "mrope_interleaved": True}},
        "qwen3_vl_default_section": {"hidden_size": 2048, "num_attention_heads": 16, "head_dim": 128,
                                     "max_position_embeddings": 262144, "rope_theta": 5000000.0,
                                     "rope_scaling": {"rope_type": "default"}},
    }
