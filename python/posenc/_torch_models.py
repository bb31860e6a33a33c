"""posenc.torch's drop-ins for the rotary modules that transformers' HunYuan, ERNIE-4.5-VL, DeepSeek-V4 and
MiniMax-M3-VL models define for themselves (transformers 5.12.1's modeling_hunyuan_v1_dense.py /
modeling_hunyuan_v1_moe.py, modeling_ernie4_5_vl_moe.py, modeling_deepseek_v4.py and modeling_minimax_m3_vl.py):
the same constructor, forward, buffers and attributes, exact values. Imported into posenc.torch; use them from
there."""
from __future__ import annotations

import sys
from typing import Any, Optional, Tuple

import torch
from torch import Tensor

from . import _posenc as _p
from ._posenc import Rope
from .torch import (RotaryEmbedding, _DSV4_LABELS, _dsv4_view, _float_table, _get, _head_dim_or, _hf_cos_sin,
                    _init_rope, _inv_freq, _is_v5, _mrope_positions, _resolve, _rope_dict, _rope_type,
                    _rotary_positions, apply_rotary, apply_rotary_vision)


__all__ = ["HunYuanDenseV1RotaryEmbedding", "HunYuanMoEV1RotaryEmbedding", "Ernie4_5_VLMoeTextRotaryEmbedding",
           "DeepseekV4RotaryEmbedding", "MiniMaxM3VL3DRotaryEmbedding"]


class HunYuanDenseV1RotaryEmbedding(RotaryEmbedding):
    """transformers' HunYuanDenseV1RotaryEmbedding (also HunYuanMoEV1RotaryEmbedding), exact:
    ``HunYuanDenseV1RotaryEmbedding(config, device=None)``, ``forward(x, position_ids) -> (cos, sin)`` as
    RotaryEmbedding's. What differs from Llama's: a ``dynamic`` RoPE with ``alpha`` (HunYuan's configs; in
    ``rope_parameters`` for v5, ``rope_scaling`` with the top-level ``rope_theta`` for v4.57) starts from the
    NTK-alpha frequencies over ``config.head_dim``, ``rope_theta * alpha^(d / (d - 2))``, attention scaling 1.
    As upstream, a sequence longer than any before and past ``max_position_embeddings`` then takes transformers'
    plain dynamic NTK frequencies for its length (``factor``, no alpha), and one shorter than
    ``max_position_embeddings`` the alpha frequencies again: the bookkeeping of transformers v4.57 and v5.15.
    (5.12.1's dynamic update keeps the cached length under a wrong name for a module without layer types, so
    there every sequence past ``max_position_embeddings`` recomputes at its own length and a short one never goes
    back to alpha: a state that depends on the order of the calls, not followed.) Any other rope_type is read as
    RotaryEmbedding reads it."""

    def __init__(self, config: Any, device: Optional[torch.device] = None):
        key = "rope_parameters" if _is_v5(config) else "rope_scaling"
        rp = _rope_dict(config, key)
        alpha = None if rp is None else rp.get("alpha")
        self._alpha_rope: Optional[Rope] = None
        if rp is None or _rope_type(rp) != "dynamic" or not alpha:
            super().__init__(config, device)
            return
        # The module's other state (the growth path) is RotaryEmbedding's over the dict without alpha, which
        # transformers' dynamic initialiser does not read either; the starting frequencies are alpha's.
        plain = dict(rp)
        plain.pop("alpha")
        # without a factor upstream's growth fails (a KeyError past max_position_embeddings): here a ValueError
        # there (_update), and the plain state a default one
        self._factorless = plain.get("factor") is None
        if self._factorless:
            plain["rope_type"] = "default"
        super().__init__(_WithParameters(config, key, plain), device)
        self.config = config
        dim = _get(config, "head_dim")
        if not dim:
            raise ValueError("HunYuan's dynamic alpha RoPE reads config.head_dim; this config has none")
        self.dim = int(dim)
        # v5: rope_parameters['rope_theta']; v4.57: the config's rope_theta
        base = rp.get("rope_theta") if key == "rope_parameters" else _get(config, "rope_theta")
        if base is None:
            raise ValueError("%s: HunYuan's alpha RoPE needs rope_theta" % key)
        rope = self._alpha_rope = _p.rope_init(self.dim, float(base), {"rope_type": "dynamic", "alpha": float(alpha)})
        state = self._states[None]
        state.original_rope = state.rope = rope
        self.attention_scaling = rope.attention_scale
        self.register_buffer("inv_freq", _float_table(_inv_freq(rope), device), persistent=False)
        if key == "rope_parameters":
            self.register_buffer("original_inv_freq", self.inv_freq.clone(), persistent=False)
        else:
            self.original_inv_freq = self.inv_freq  # v4.57's plain attribute
        self.rope_type = "dynamic"

    def rope_init_fn(self, config: Any = None, device: Optional[torch.device] = None, seq_len: Optional[int] = None,
                     layer_type: Optional[str] = None, **unused: Any) -> Tuple[Tensor, float]:
        """RotaryEmbedding's, with the alpha frequencies for this module's config up to max_position_embeddings
        (what its buffers hold there)."""
        own = config is None or config is self.config
        if self._alpha_rope is not None and own and not unused and layer_type is None and (
                seq_len is None or self.original_max_seq_len is None or seq_len <= self.original_max_seq_len):
            return _float_table(_inv_freq(self._alpha_rope), device), 1.0
        return super().rope_init_fn(config, device, seq_len, layer_type, **unused)

    def _update(self, position_ids: Tensor, layer_type: Optional[str] = None) -> None:
        if getattr(self, "_factorless", False) and position_ids.numel():
            top = position_ids.max()
            seq_len = int(top) + 1 if not top.is_floating_point() else int(float(top)) + 1
            if self.max_seq_len_cached is not None and seq_len > self.max_seq_len_cached:
                raise ValueError("rope_parameters['factor']: HunYuan's dynamic RoPE past max_position_embeddings "
                                 "(%d) takes transformers' dynamic NTK frequencies, which need it"
                                 % self.max_seq_len_cached)
            return
        super()._update(position_ids, layer_type)


class _WithParameters:
    """A config seen with another dict under key (rope_parameters or rope_scaling); every other attribute read
    through."""

    def __init__(self, config: Any, key: str, params: dict):
        self._config = config
        self._key = key
        self._params = params

    def __getattr__(self, name: str) -> Any:
        if name == self.__dict__.get("_key"):
            return self._params
        if isinstance(self._config, dict):
            if name in self._config:
                return self._config[name]
            raise AttributeError(name)
        return getattr(self._config, name)


HunYuanMoEV1RotaryEmbedding = HunYuanDenseV1RotaryEmbedding


class Ernie4_5_VLMoeTextRotaryEmbedding(torch.nn.Module):
    """transformers' Ernie4_5_VLMoeTextRotaryEmbedding (ERNIE-4.5-VL's text M-RoPE), exact:
    ``Ernie4_5_VLMoeTextRotaryEmbedding(config, device=None)``; ``forward(x, position_ids [3, batch, seq])``
    -> ``(cos, sin)`` [batch, seq, head_dim] float32 (as upstream, whatever x's dtype; on x's device), for
    upstream's ``apply_rotary_pos_emb`` (pairs (2i, 2i + 1), the interleaved rotate_half). Pair i rotates by
    frequency ``rope_theta^(-2i / head_dim)`` at the height position (axis 1) when i < 2 h and i is even, the
    width position (axis 2) when i < 2 h and i is odd, the temporal one (axis 0) after, for
    ``mrope_section = [h, w, t]`` (default [22, 22, 20], h == w): posenc's ALTERNATING layout. Buffers and
    attributes as upstream: ``inv_freq`` (non-persistent buffer, upstream's pre-rotated order: the even then
    the odd frequencies of the first 2 h, then the last t), ``original_inv_freq`` (a plain attribute),
    ``mrope_section``, ``attention_scaling`` 1, ``rope_type`` "default" (any other is refused, as upstream).
    ``apply_rotary(q, k, position_ids)`` rotates q and k in place, fused (autograd: the inverse rotation)."""

    def __init__(self, config: Any, device: Optional[torch.device] = None):
        super().__init__()
        self.max_seq_len_cached = _get(config, "max_position_embeddings")
        self.original_max_seq_len = self.max_seq_len_cached
        self.config = config
        rp = _rope_dict(config, "rope_parameters")
        if rp is None:
            raise ValueError("Ernie4_5_VLMoeTextRotaryEmbedding reads config.rope_parameters (transformers v5); "
                             "this config has none")
        self.rope_type = rp.get("rope_type", rp.get("type"))
        if self.rope_type != "default":
            raise ValueError("rope_type %r: ERNIE-4.5-VL's text rotary takes the default rope type only, as "
                             "transformers' does" % (self.rope_type,))
        one, self.mrope_section = self._parse(config)
        h_sec, w_sec, t_sec = self.mrope_section
        self.attention_scaling = 1.0
        self._rope = _p.rope_sections(one, [t_sec, h_sec, w_sec], "alternating")
        inv_freq, _ = self.compute_default_rope_parameters(config, device)
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.original_inv_freq = self.inv_freq

    @staticmethod
    def compute_default_rope_parameters(config: Any = None, device: Optional[torch.device] = None,
                                        seq_len: Optional[int] = None) -> Tuple[Tensor, float]:
        """Upstream's static method (transformers' _init_weights calls it): ``(inv_freq, 1.0)``, inv_freq in
        upstream's pre-rotated order (the even then the odd frequencies of the first h + w, then the last t),
        each the float32 nearest the real frequency ``rope_theta^(-2i / head_dim)``, on ``device``."""
        if config is None:
            raise TypeError("compute_default_rope_parameters: a config is needed (its rope_parameters, head_dim)")
        one, (h_sec, w_sec, _) = Ernie4_5_VLMoeTextRotaryEmbedding._parse(config)
        inv = _inv_freq(one)
        hw = h_sec + w_sec
        return _float_table(inv[:hw][0::2] + inv[:hw][1::2] + inv[hw:], device), 1.0

    @staticmethod
    def _parse(config: Any) -> Tuple[Rope, list]:
        """The one-axis Rope (interleaved pairs, rope_theta, head_dim) and mrope_section [h, w, t] of a config,
        each refused by name when missing or not ERNIE's."""
        rp = _rope_dict(config, "rope_parameters") or {}
        if rp.get("rope_theta") is None:
            raise ValueError("rope_parameters['rope_theta']: ERNIE-4.5-VL's text rotary needs it")
        dim = _head_dim_or(config, "head_dim", "Ernie4_5_VLMoeTextRotaryEmbedding")
        section = [int(s) for s in rp.get("mrope_section", [22, 22, 20])]
        if len(section) != 3:
            raise ValueError("mrope_section %s: ERNIE's is [h, w, t], three sizes" % (section,))
        h, w, t = section
        if h != w or min(section) < 0 or h + w + t != dim // 2:
            raise ValueError("mrope_section %s: ERNIE-4.5-VL pairs the height and width frequencies (h == w) and "
                             "the three cover head_dim / 2 = %d pairs" % (section, dim // 2))
        return Rope(dim, pairs="interleaved", base=float(rp["rope_theta"])), section

    @property
    def rope(self) -> Rope:
        """The posenc.Rope of 3 axes (interleaved pairs, ALTERNATING sections [t, h, w])."""
        return self._rope

    def forward(self, x: Tensor, position_ids: Tensor) -> Tuple[Tensor, Tensor]:
        """(cos, sin) [batch, seq, head_dim] float32 on x.device: each pair's value twice, side by side."""
        pos = _mrope_positions(position_ids)
        tokens = pos.shape[1:]
        r = self._rope.rotary_dim
        h = r // 2
        n = pos[0].numel()
        cos = torch.empty(n, h)
        sin = torch.empty(n, h)
        _p.rope_cache(self._rope, positions=pos.reshape(3, -1), out=(cos, sin))
        cos = cos.repeat_interleave(2, dim=-1).view(*tokens, r)
        sin = sin.repeat_interleave(2, dim=-1).view(*tokens, r)
        if x.device.type != "cpu":
            cos, sin = cos.to(x.device), sin.to(x.device)
        return cos, sin

    def apply_rotary(self, q: Tensor, k: Optional[Tensor], position_ids: Tensor,
                     unsqueeze_dim: int = 1) -> Tuple[Tensor, Optional[Tensor]]:
        """q and k rotated in place, fused: upstream's apply_rotary_pos_emb with the exact cos/sin, rounded once
        in q's dtype (upstream rounds its float32 result to q's dtype)."""
        return apply_rotary(q, k, _mrope_positions(position_ids), self._rope, unsqueeze_dim=unsqueeze_dim)


class DeepseekV4RotaryEmbedding(RotaryEmbedding):
    """transformers' DeepseekV4RotaryEmbedding (5.12.1's modeling_deepseek_v4.py), exact:
    ``DeepseekV4RotaryEmbedding(config)`` with a DeepseekV4Config (or its config.json as a dict, read as the
    config class reads it: rope_parameters {"main": default RoPE at rope_theta, "compress": rope_scaling's yarn
    at compress_rope_theta, attention_factor 1}, partial_rotary_factor qk_rope_head_dim / head_dim).
    ``forward(x, position_ids, layer_type)`` with layer_type "main" (the sliding-window layers) or "compress"
    (the compressed CSA / HCA layers, their compressors and the indexer) returns ``(cos, sin)``, each
    ``[batch, seq, rotary_dim / 2]`` in x.dtype on x.device: one value per GPT-J pair, no ``cat(freqs, freqs)``
    (upstream's apply_rotary_pos_emb repeat-interleaves them and rotates the trailing rotary_dim channels of a
    head), times the attention scaling, each the correctly rounded value of the exact angle. Buffers and
    attributes as upstream: ``main_inv_freq``, ``main_original_inv_freq``, ``compress_inv_freq``,
    ``compress_original_inv_freq`` (non-persistent: the state_dict is empty), ``{label}_attention_scaling``,
    ``rope_type`` (a dict), ``layer_types`` (the labels), ``max_seq_len_cached``, ``original_max_seq_len``,
    ``config``. ``apply_rotary(x, position_ids, layer_type, unsqueeze_dim=1, inverse=False)`` rotates the trailing
    rotary_dim channels of x in place, GPT-J pairs, fused (upstream's apply_rotary_pos_emb with these cos/sin,
    rounded once); inverse=True is upstream's ``apply_rotary_pos_emb(out, cos, -sin)`` on the attention
    output."""

    def __init__(self, config: Any):
        super().__init__(config)
        if list(self._states) != [lt for lt in _DSV4_LABELS if lt in self._states] or not self._states:
            raise ValueError("DeepseekV4RotaryEmbedding: rope_parameters keyed by 'main' / 'compress' (a "
                             "DeepseekV4Config); this config gives %s" % sorted(map(str, self._states)))
        self.layer_types = list(self._states)
        self._gptj: dict = {}

    @staticmethod
    def compute_default_rope_parameters(config: Any = None, device: Optional[torch.device] = None,
                                        seq_len: Optional[int] = None,
                                        layer_type: Optional[str] = None) -> Tuple[Tensor, float]:
        """Upstream's static method: ``(inv_freq, 1.0)`` for a label's default RoPE,
        ``rope_theta^(-2i / dim)`` with ``dim = int(head_dim * partial_rotary_factor)`` of
        ``config.rope_parameters[layer_type]``, each the float32 nearest the real frequency, on ``device``."""
        if config is None or layer_type is None:
            raise TypeError("compute_default_rope_parameters: a config and a layer_type ('main' / 'compress')")
        plan = _resolve(_dsv4_view(config), layer_type)
        if plan["rope_type"] != "default":
            raise ValueError("compute_default_rope_parameters: rope_parameters[%r] is %r, not 'default'"
                             % (layer_type, plan["rope_type"]))
        return _float_table(_inv_freq(_init_rope(plan)), device), 1.0

    def rope_for(self, layer_type: Optional[str] = None) -> Rope:
        """The posenc.Rope of a label, GPT-J pairs (the pairing of V4's heads)."""
        rope = self._state(layer_type).rope
        cached = self._gptj.get(layer_type)
        if cached is None or cached[0] is not rope:
            cached = self._gptj[layer_type] = (rope, rope.with_pairs("interleaved"))
        return cached[1]

    def forward(self, x: Tensor, position_ids: Tensor, layer_type: Optional[str] = None) -> Tuple[Tensor, Tensor]:
        """(cos, sin) [batch, seq, rotary_dim / 2] in x.dtype on x.device for position_ids [batch, seq]."""
        state = self._state(layer_type)
        pos = _rotary_positions(position_ids)
        self._update(pos, layer_type)
        h = state.rope.rotary_dim // 2
        shape = (*pos.shape, h)
        if x.is_meta or pos.is_meta:
            return torch.empty(shape, dtype=x.dtype, device="meta"), torch.empty(shape, dtype=x.dtype, device="meta")
        if pos.is_floating_point():  # fractional positions: double-precision angles (RotaryEmbedding's path)
            from .torch import _real_cos_sin
            cos, sin = _real_cos_sin(state.rope, pos, x)
            return cos[..., :h], sin[..., :h]
        flat = pos.reshape(-1)
        cos = torch.empty(flat.numel(), h)
        sin = torch.empty(flat.numel(), h)
        _p.rope_cache(state.rope, positions=flat, out=(cos, sin))
        cos, sin = cos.view(shape), sin.view(shape)
        if x.dtype != torch.float32 or x.device.type != "cpu":
            cos, sin = cos.to(device=x.device, dtype=x.dtype), sin.to(device=x.device, dtype=x.dtype)
        return cos, sin

    def apply_rotary(self, x: Tensor, position_ids: Tensor, layer_type: Optional[str] = None,  # type: ignore[override]
                     unsqueeze_dim: int = 1, inverse: bool = False) -> Tensor:
        """The trailing rotary_dim channels of x ([batch, heads, seq, head_dim] with unsqueeze_dim=1, or
        [batch, seq, heads, head_dim] with 2) rotated in place by GPT-J pairs (inverse: by the opposite angles),
        fused; returns x. Differentiable (autograd: the inverse rotation)."""
        self._state(layer_type)  # refuses a layer type the config has no parameters for
        pos = _rotary_positions(position_ids)
        self._update(pos, layer_type)
        if pos.is_floating_point():
            raise TypeError("DeepseekV4RotaryEmbedding.apply_rotary: integer position ids (forward takes others)")
        rope = self.rope_for(layer_type)
        if inverse:  # posenc_rope_inverse: the bytes of the forward rotation at -p
            rope = rope.inverse()
        r = rope.rotary_dim
        if x.size(-1) < r:
            raise ValueError("x: head_dim %d is narrower than the rotary width %d" % (x.size(-1), r))
        apply_rotary(x[..., x.size(-1) - r:], None, pos, rope, unsqueeze_dim=unsqueeze_dim)
        return x


class MiniMaxM3VL3DRotaryEmbedding(torch.nn.Module):
    """transformers' MiniMaxM3VL3DRotaryEmbedding (MiniMax-M3-VL's vision tower 3-D RoPE), exact:
    ``MiniMaxM3VL3DRotaryEmbedding(head_dim, theta=10000.0, spatial_merge_size=1)`` (the tower passes
    ``vision_config.rope_parameters["rope_theta"]`` and ``spatial_merge_size``); ``forward(grid_thw, device,
    dtype) -> (cos, sin)``, each [N, 3 * axis_dim] in ``dtype`` on ``device`` for the N patches of the images
    and videos of ``grid_thw`` [num, 3] (t, h, w), in upstream's order: frame by frame, each frame's rows and
    columns in spatial_merge_size x spatial_merge_size windows (h and w multiples of it). ``axis_dim`` =
    2 ((2 (head_dim // 2) // 3) // 2) elements per axis (26 of an 80 head): pair j < 3 axis_dim / 2 rotates
    elements j and j + 3 axis_dim / 2 (upstream's rotate_half over the first 3 axis_dim elements of a head, the
    rest passing through) at frequency ``theta^(-2k / axis_dim)``, k = j mod (axis_dim / 2), by the patch's
    frame (j < axis_dim / 2), row, then column: posenc's PER_AXIS sections [axis_dim / 2] * 3. Each cos / sin
    is the float32 nearest the exact one (frequencies rounded once to double, as posenc's per-axis layout),
    then ``.to(dtype)`` as upstream. No buffers (upstream recomputes ``inv_freq`` in every forward): an empty
    state_dict, as upstream's. Attributes ``axis_dim``, ``spatial_merge_size``, ``theta``; ``rope`` the
    posenc.Rope (3 axes); ``position_ids(grid_thw)`` the [N, 3] (frame, row, column) of each patch;
    ``apply_rotary(q, k, grid_thw)`` rotates q and k [N, heads, head_dim] in place, fused (autograd: the inverse
    rotation), leaving the elements past 3 axis_dim as they are."""

    def __init__(self, head_dim: int, theta: float = 10000.0, spatial_merge_size: int = 1):
        super().__init__()
        rope_dims = 2 * (head_dim // 2)
        self.axis_dim = 2 * ((rope_dims // 3) // 2)
        self.spatial_merge_size = spatial_merge_size
        self.theta = theta
        half = self.axis_dim // 2
        self._rope: Optional[Rope] = None
        if half > 0:
            self._rope = _p.rope_sections(Rope(3 * self.axis_dim, base=float(theta)), [half, half, half], "per_axis")

    @property
    def rope(self) -> Optional[Rope]:
        """The posenc.Rope: rotary_dim 3 axis_dim, halves, base theta, 3 axes (frame, row, column), PER_AXIS
        sections [axis_dim / 2] * 3 (None for a head of fewer than 6 elements, which upstream leaves unrotated)."""
        return self._rope

    def position_ids(self, grid_thw: Any) -> Tensor:
        """[N, 3] int64 (frame, row, column) of each patch, in upstream's token order."""
        m = int(self.spatial_merge_size)
        rows = grid_thw.tolist() if isinstance(grid_thw, Tensor) else [list(g) for g in grid_thw]
        out = []
        for thw in rows:
            if len(thw) != 3:
                raise ValueError("grid_thw: rows of (t, h, w), got %s" % (thw,))
            t, h, w = (int(v) for v in thw)
            if m < 1 or h % m or w % m:
                raise ValueError("grid_thw (%d, %d, %d): h and w must be multiples of spatial_merge_size %d, as "
                                 "upstream's merge windows need" % (t, h, w, m))
            hi = torch.arange(h).unsqueeze(1).expand(-1, w)
            hi = hi.reshape(h // m, m, w // m, m).permute(0, 2, 1, 3).flatten()
            wi = torch.arange(w).unsqueeze(0).expand(h, -1)
            wi = wi.reshape(h // m, m, w // m, m).permute(0, 2, 1, 3).flatten()
            ti = torch.arange(t).repeat_interleave(h * w)
            out.append(torch.stack([ti, hi.repeat(t), wi.repeat(t)], dim=-1))
        if not out:
            return torch.zeros(0, 3, dtype=torch.int64)
        return torch.cat(out)

    @torch.no_grad()
    def forward(self, grid_thw: Tensor, device: Any, dtype: torch.dtype) -> Tuple[Tensor, Tensor]:
        """(cos, sin), each [N, 3 axis_dim] in dtype on device: upstream's cat(freqs, freqs) layout, each value
        the exact one rounded to float32 (then to dtype, as upstream's ``.to(dtype)``)."""
        pos = self.position_ids(grid_thw)
        like = torch.empty(0, dtype=dtype, device=device)
        if self._rope is None:
            empty = torch.zeros(pos.shape[0], 0, dtype=dtype, device=device)
            return empty, empty.clone()
        return _hf_cos_sin(self._rope, pos.t().contiguous(), like)

    def apply_rotary(self, q: Tensor, k: Optional[Tensor], grid_thw: Tensor) -> Tuple[Tensor, Optional[Tensor]]:
        """q and k rotated in place, fused: upstream's apply_rotary_pos_emb_vision with the exact cos / sin,
        rounded once to q's format; the head's elements past 3 axis_dim pass through."""
        if self._rope is None:
            return q, k
        return apply_rotary_vision(q, k, self.position_ids(grid_thw), self._rope)


# posenc.torch's ``from ._torch_models import *`` takes the names above; they join its __all__ here.
_parent = sys.modules.get(__name__.rsplit(".", 1)[0] + ".torch")
if _parent is not None and isinstance(getattr(_parent, "__all__", None), list):
    _parent.__all__.extend(n for n in __all__ if n not in _parent.__all__)
del _parent
