"""Hugging Face transformers v5's rotary code, re-typed here from its formulas (not copied) for the conformance
tests of posenc.torch (test_torch_conformance.py); v4.57's is originals.py's section 5.

Read at 8b-is/transformers@07dc0bab (a fork carrying transformers' main of 2026, newer than v5.14: it has
Gemma 4's "proportional" RoPE and DeepSeek-V4; src/transformers/modeling_rope_utils.py and
models/llama/modeling_llama.py) and @6162a92b (models/gemma3/modeling_gemma3.py,
models/deepseek_v3/modeling_deepseek_v3.py); huggingface/transformers' stored files at older v5 commits agree
on everything re-typed here except the dynamic update's bookkeeping of max_seq_len_cached (see
dynamic_rope_update).

* ``V5Config(**fields)``: a config object with v5's ``standardize_rope_params`` (RotaryEmbeddingConfigMixin):
  one global rope_parameters dict, or one per layer type when its keys are a subset of ``layer_types``; the
  top-level ``rope_theta`` is a default, a top-level ``partial_rotary_factor`` replaces the dict's, and for
  llama3 / yarn / longrope a top-level ``original_max_position_embeddings`` replaces the dict's (global dict
  only) while a missing one defaults to ``max_position_embeddings``.
* ``ROPE_INIT_FUNCTIONS`` (linear, dynamic, yarn, longrope, llama3) taking ``layer_type``; every one reads its
  parameters, partial_rotary_factor included, from the (layer type's) rope_parameters dict. yarn and longrope
  derive a missing ``factor`` as max_position_embeddings / original; longrope's attention factor uses the
  explicit factor (v4.57 replaced it by that ratio whenever a top-level original length exists).
* ``LlamaRotaryEmbedding(config, device=None)``: buffers ``inv_freq`` and ``original_inv_freq`` (a clone),
  non-persistent; ``compute_default_rope_parameters`` uses ``head_dim`` whole (no partial rotary) and
  ``torch.arange(0, dim, 2, dtype=torch.float)``.
* ``Gemma3RotaryEmbedding(config, device=None)``: per layer type ``{t}_inv_freq``, ``{t}_original_inv_freq``
  buffers and ``{t}_attention_scaling``; ``forward(x, position_ids, layer_type)``.
* ``apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1)``: no position_ids argument; cos / sin unsqueezed
  only when their number of dimensions differs from q's.
* transformers v5.15.0's per-layer configs (the tag v5.15.0, 5eddc12e, read from the 8b-is/transformers mirror,
  which carries upstream's tags: integrations/heterogeneity/configuration_utils.py,
  models/gemma4/configuration_gemma4.py and modeling_gemma4.py, the init functions of modeling_rope_utils.py):
  ``Gemma4TextConfigV515(**fields)``, ``V515Config``, ``AmbiguousGlobalPerLayerAttributeError`` and
  ``Gemma4TextRotaryEmbeddingV515``; v5.14's Gemma 4 (global_head_dim an attribute, passed as head_dim_key) is
  ``Gemma4TextRotaryEmbedding``.
"""
import copy
import math
from typing import Any, Optional, Tuple

import torch
from torch import Tensor, nn

__all__ = ["V5Config", "ROPE_INIT_FUNCTIONS", "LlamaRotaryEmbedding", "Gemma3RotaryEmbedding",
           "Gemma4TextRotaryEmbedding", "rotate_half",
           "apply_rotary_pos_emb", "AmbiguousGlobalPerLayerAttributeError", "V515Config", "Gemma4TextConfigV515",
           "Gemma4TextRotaryEmbeddingV515"]


class V5Config:
    """Attributes from the given fields (absent ones raise AttributeError, as on HF's configs), and v5's
    standardize_rope_params."""

    def __init__(self, **fields: Any):
        self.__dict__.update(fields)

    def standardize_rope_params(self) -> None:
        rope_theta = getattr(self, "rope_theta", None)
        partial_rotary_factor = getattr(self, "partial_rotary_factor", None)
        rp = getattr(self, "rope_parameters", None) or {}
        layer_types = getattr(self, "_rope_type_labels", getattr(self, "layer_types", None))
        if not (rp or rope_theta):
            return
        if layer_types is None or rp == {} or not set(rp.keys()).issubset(layer_types):
            rp.setdefault("rope_type", rp.get("type", "default"))
            rp.setdefault("rope_theta", rope_theta)
            if partial_rotary_factor is not None:
                rp["partial_rotary_factor"] = partial_rotary_factor
            if rp["rope_type"] in ["llama3", "yarn", "longrope"]:
                if hasattr(self, "original_max_position_embeddings"):
                    rp["original_max_position_embeddings"] = self.original_max_position_embeddings
                else:
                    rp.setdefault("original_max_position_embeddings", self.max_position_embeddings)
        else:
            for lt in set(layer_types):
                rp[lt].setdefault("rope_type", rp[lt].get("type", "default"))
                rp[lt].setdefault("rope_theta", rope_theta)
                if partial_rotary_factor is not None:
                    rp[lt]["partial_rotary_factor"] = partial_rotary_factor
                if rp[lt]["rope_type"] in ["llama3", "yarn", "longrope"]:
                    rp[lt].setdefault("original_max_position_embeddings", self.max_position_embeddings)
        self.rope_parameters = rp


def _params(config: Any, layer_type: Optional[str]) -> dict:
    config.standardize_rope_params()
    return config.rope_parameters[layer_type] if layer_type is not None else config.rope_parameters


def _dim(config: Any, rp: dict, use_or: bool = False) -> int:
    """head_dim * partial_rotary_factor; linear and llama3 read head_dim with ``or`` (a None falls back),
    dynamic / yarn / longrope with getattr's default."""
    if use_or:
        head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    else:
        head_dim = getattr(config, "head_dim", config.hidden_size // config.num_attention_heads)
    return int(head_dim * rp.get("partial_rotary_factor", 1.0))


def _arange_f32(dim: int, device: Any) -> Tensor:
    return torch.arange(0, dim, 2, dtype=torch.int64).to(device=device, dtype=torch.float)


def _linear(config: Any, device: Any = None, seq_len: Any = None, layer_type: Optional[str] = None):
    rp = _params(config, layer_type)
    factor = rp["factor"]
    base = rp["rope_theta"]
    dim = _dim(config, rp, use_or=True)
    inv_freq = 1.0 / (base ** (_arange_f32(dim, device) / dim))
    inv_freq /= factor
    return inv_freq, 1.0


def _dynamic(config: Any, device: Any = None, seq_len: Any = None, layer_type: Optional[str] = None):
    rp = _params(config, layer_type)
    base = rp["rope_theta"]
    dim = _dim(config, rp)
    factor = rp["factor"]
    max_pos = config.max_position_embeddings
    if seq_len is None:
        seq_len = max_pos
    elif isinstance(seq_len, torch.Tensor):
        seq_len = torch.maximum(seq_len, torch.tensor(max_pos, dtype=seq_len.dtype, device=seq_len.device))
    else:
        seq_len = max(seq_len, max_pos)
    base = base * ((factor * seq_len / max_pos) - (factor - 1)) ** (dim / (dim - 2))
    return 1.0 / (base ** (_arange_f32(dim, device) / dim)), 1.0


def _mscale(scale: float, mscale: float = 1.0) -> float:
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


def _yarn(config: Any, device: Any = None, seq_len: Any = None, layer_type: Optional[str] = None):
    rp = _params(config, layer_type)
    base = rp["rope_theta"]
    dim = _dim(config, rp)
    factor = rp["factor"]
    attention_factor = rp.get("attention_factor")
    mscale, mscale_all_dim = rp.get("mscale"), rp.get("mscale_all_dim")
    original = rp["original_max_position_embeddings"]
    if factor is None:
        factor = config.max_position_embeddings / original
    if attention_factor is None:
        if mscale and mscale_all_dim:
            attention_factor = float(_mscale(factor, mscale) / _mscale(factor, mscale_all_dim))
        else:
            attention_factor = _mscale(factor)
    beta_fast = rp.get("beta_fast") or 32
    beta_slow = rp.get("beta_slow") or 1

    def correction_dim(rot: float) -> float:
        return (dim * math.log(original / (rot * 2 * math.pi))) / (2 * math.log(base))

    truncate = config.rope_parameters.get("truncate", True)  # the outer dict, as v5 reads it
    low, high = correction_dim(beta_fast), correction_dim(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low), 0, 1)
    pos_freqs = base ** (torch.arange(0, dim, 2).to(device=device, dtype=torch.float) / dim)
    extra, inter = 1.0 / pos_freqs, 1.0 / (factor * pos_freqs)
    e = 1 - ramp.to(device=device, dtype=torch.float)
    return inter * (1 - e) + extra * e, attention_factor


def _longrope(config: Any, device: Any = None, seq_len: Any = None, layer_type: Optional[str] = None):
    rp = _params(config, layer_type)
    base = rp["rope_theta"]
    dim = _dim(config, rp)
    long_factor, short_factor = rp["long_factor"], rp["short_factor"]
    factor = rp.get("factor")
    attention_factor = rp.get("attention_factor")
    original = rp["original_max_position_embeddings"]
    if factor is None:
        factor = config.max_position_embeddings / original
    if attention_factor is None:
        attention_factor = 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(original))
    ext = torch.tensor(long_factor if seq_len and seq_len > original else short_factor, dtype=torch.float32,
                       device=device)
    shape = torch.arange(0, dim, 2, dtype=torch.int64, device=device).float() / dim
    return 1.0 / (ext * base ** shape), attention_factor


def _llama3(config: Any, device: Any = None, seq_len: Any = None, layer_type: Optional[str] = None):
    rp = _params(config, layer_type)
    base = rp["rope_theta"]
    dim = _dim(config, rp, use_or=True)
    inv_freq = 1.0 / (base ** (_arange_f32(dim, device) / dim))
    factor, lff, hff = rp["factor"], rp["low_freq_factor"], rp["high_freq_factor"]
    old = rp["original_max_position_embeddings"]
    low_wl, high_wl = old / lff, old / hff
    wavelen = 2 * math.pi / inv_freq
    inv_l = torch.where(wavelen > low_wl, inv_freq / factor, inv_freq)
    smooth = (old / wavelen - lff) / (hff - lff)
    smoothed = (1 - smooth) * inv_l / factor + smooth * inv_l
    medium = ~(wavelen < high_wl) * ~(wavelen > low_wl)
    return torch.where(medium, smoothed, inv_l), 1.0


def _proportional(config: Any, device: Any = None, seq_len: Any = None, layer_type: Optional[str] = None,
                  head_dim_key: str = "head_dim"):
    """Gemma 4's: over the whole head (head_dim_key's value, else hidden / heads), the first
    int(p * head_dim // 2) pairs at 1 / base^(2i / head_dim) in float32, zeros after, all divided by factor."""
    rp = _params(config, layer_type)
    head_dim = getattr(config, head_dim_key, None) or config.hidden_size // config.num_attention_heads
    base = rp["rope_theta"]
    factor = rp.get("factor", 1.0)
    rotated = int(rp.get("partial_rotary_factor", 1.0) * head_dim // 2)
    inv_freq = 1.0 / (base ** (torch.arange(0, 2 * rotated, 2, dtype=torch.int64).to(device=device,
                                                                                   dtype=torch.float) / head_dim))
    still = head_dim // 2 - rotated
    if still > 0:
        inv_freq = torch.cat((inv_freq, torch.zeros(still, dtype=torch.float32, device=device)), dim=0)
    inv_freq /= factor
    return inv_freq, 1.0


ROPE_INIT_FUNCTIONS = {"linear": _linear, "dynamic": _dynamic, "yarn": _yarn, "longrope": _longrope,
                       "llama3": _llama3, "proportional": _proportional}


def _update(self: Any, position_ids: Tensor, device: Any, layer_type: Optional[str] = None) -> None:
    """dynamic_rope_update's two updates (the newest bookkeeping: the cached length kept per prefix, so a
    global rotary's max_seq_len_cached follows growth as in v4; some earlier v5 releases stored it under
    "None_max_seq_len_cached" instead)."""
    seq_len = torch.max(position_ids) + 1
    rope_type = self.rope_type if layer_type is None else self.rope_type[layer_type]
    prefix = "" if layer_type is None else layer_type + "_"
    original_inv_freq = getattr(self, prefix + "original_inv_freq")
    if "dynamic" in rope_type:
        cached = getattr(self, prefix + "max_seq_len_cached", self.max_seq_len_cached)
        if seq_len > cached:
            inv_freq, self.attention_scaling = ROPE_INIT_FUNCTIONS[rope_type](self.config, device, seq_len=seq_len,
                                                                               layer_type=layer_type)
            self.register_buffer(prefix + "inv_freq", inv_freq, persistent=False)
            setattr(self, prefix + "max_seq_len_cached", seq_len)
        if seq_len < self.original_max_seq_len and cached > self.original_max_seq_len:
            self.register_buffer(prefix + "inv_freq", original_inv_freq.to(device), persistent=False)
            setattr(self, prefix + "max_seq_len_cached", self.original_max_seq_len)
    elif rope_type == "longrope":
        rp = self.config.rope_parameters if layer_type is None else self.config.rope_parameters[layer_type]
        original = rp["original_max_position_embeddings"]
        if seq_len > original:
            if not hasattr(self, prefix + "long_inv_freq"):
                long_inv_freq, _ = ROPE_INIT_FUNCTIONS[rope_type](self.config, device, seq_len=original + 1,
                                                                  layer_type=layer_type)
                setattr(self, prefix + "long_inv_freq", long_inv_freq)
            self.register_buffer(prefix + "inv_freq", getattr(self, prefix + "long_inv_freq"), persistent=False)
        else:
            self.register_buffer(prefix + "inv_freq", original_inv_freq.to(device), persistent=False)


def _cos_sin(inv_freq: Tensor, scaling: float, x: Tensor, position_ids: Tensor) -> Tuple[Tensor, Tensor]:
    inv = inv_freq[None, :, None].expand(position_ids.shape[0], -1, 1).to(dtype=torch.float, device=x.device)
    pos = position_ids[:, None, :].float()
    freqs = (inv @ pos).transpose(1, 2)
    emb = torch.cat((freqs, freqs), dim=-1)
    return (emb.cos() * scaling).to(dtype=x.dtype), (emb.sin() * scaling).to(dtype=x.dtype)


class LlamaRotaryEmbedding(nn.Module):
    def __init__(self, config: Any, device: Any = None):
        super().__init__()
        self.max_seq_len_cached = config.max_position_embeddings
        self.original_max_seq_len = config.max_position_embeddings
        self.config = config
        config.standardize_rope_params()
        self.rope_type = config.rope_parameters["rope_type"]
        fn = self.compute_default_rope_parameters if self.rope_type == "default" else \
            ROPE_INIT_FUNCTIONS[self.rope_type]
        inv_freq, self.attention_scaling = fn(config, device)
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.register_buffer("original_inv_freq", inv_freq.clone(), persistent=False)

    @staticmethod
    def compute_default_rope_parameters(config: Any, device: Any = None, **kwargs: Any):
        base = config.rope_parameters["rope_theta"]
        dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
        return (1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float) / dim))).to(device), 1.0

    @torch.no_grad()
    def forward(self, x: Tensor, position_ids: Tensor) -> Tuple[Tensor, Tensor]:
        if "dynamic" in self.rope_type or self.rope_type == "longrope":
            _update(self, position_ids, x.device)
        return _cos_sin(self.inv_freq, self.attention_scaling, x, position_ids)


class Gemma3RotaryEmbedding(nn.Module):
    _full_head_dim_key: Optional[str] = None  # Gemma 4 passes its own for proportional full-attention layers

    def __init__(self, config: Any, device: Any = None):
        super().__init__()
        self.max_seq_len_cached = config.max_position_embeddings
        self.original_max_seq_len = config.max_position_embeddings
        self.config = config
        config.standardize_rope_params()
        self.layer_types = list(set(config.layer_types))
        self.rope_type = {}
        for lt in self.layer_types:
            rp = config.rope_parameters[lt]
            if rp is None:
                continue
            self.rope_type[lt] = rp["rope_type"]
            inv_freq, scaling = self._layer_inv_freq(config, lt, rp, device)
            self.register_buffer(lt + "_inv_freq", inv_freq, persistent=False)
            self.register_buffer(lt + "_original_inv_freq", inv_freq.clone(), persistent=False)
            setattr(self, lt + "_attention_scaling", scaling)

    def _layer_inv_freq(self, config: Any, lt: str, rp: dict, device: Any):
        """(inv_freq, attention scaling) of layer type lt, whose parameters are rp."""
        fn = self.compute_default_rope_parameters if rp["rope_type"] == "default" else \
            ROPE_INIT_FUNCTIONS[rp["rope_type"]]
        kwargs = {}
        if self._full_head_dim_key and lt == "full_attention" and rp["rope_type"] == "proportional":
            kwargs["head_dim_key"] = self._full_head_dim_key
        return fn(config, device, layer_type=lt, **kwargs)

    @staticmethod
    def compute_default_rope_parameters(config: Any, device: Any = None, layer_type: Optional[str] = None,
                                        **kwargs: Any):
        base = config.rope_parameters[layer_type]["rope_theta"]
        dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
        return (1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float) / dim))).to(device), 1.0

    @torch.no_grad()
    def forward(self, x: Tensor, position_ids: Tensor, layer_type: str) -> Tuple[Tensor, Tensor]:
        rope_type = self.rope_type[layer_type]
        if "dynamic" in rope_type or rope_type == "longrope":
            _update(self, position_ids, x.device, layer_type)
        return _cos_sin(getattr(self, layer_type + "_inv_freq"), getattr(self, layer_type + "_attention_scaling"),
                        x, position_ids)


class Gemma4TextRotaryEmbedding(Gemma3RotaryEmbedding):
    """Gemma 3's per-layer-type rotary; a proportional full-attention layer's init gets
    head_dim_key="global_head_dim" (its heads are global_head_dim wide, the sliding ones head_dim)."""
    _full_head_dim_key = "global_head_dim"


# ---- v5.15: per-layer configs (HeterogeneousConfigMixin) ------------------------------------------------------

class AmbiguousGlobalPerLayerAttributeError(RuntimeError):
    """v5.15: a per-layer attribute read from the whole config (a RuntimeError: getattr's default does not
    catch it)."""


class _PerLayerConfigView:
    """v5.15's config.per_layer_config: ``[i]`` the config of layer i, ``[layer_type]`` the config of every layer
    of that type (a ValueError when config.layer_types does not list it, or when its layers' overrides differ);
    the whole config itself when it has no overrides."""

    def __init__(self, config: "V515Config"):
        self._config = config

    def __getitem__(self, key: Any) -> Any:
        config = self._config
        overrides = config.__dict__.get("_per_layer_overrides")
        if isinstance(key, str):
            layer_types = getattr(config, "layer_types", None)
            if layer_types is None or key not in layer_types:
                raise ValueError("layer type %r not in config.layer_types" % (key,))
            if overrides is None:
                return config
            first = overrides.get(layer_types.index(key), {})
            for i, lt in enumerate(layer_types):
                if lt == key and overrides.get(i, {}) != first:
                    raise ValueError("layer type %r is not the same on every layer (layer %d differs)" % (key, i))
            return config._layer(first)
        if overrides is None:
            return config
        return config._layer(overrides.get(key, {}))


class V515Config(V5Config):
    """A V5Config with v5.15's per_layer_config ({layer index: {attribute: value}}, indices as ints or strings):
    overrides equal to the global value are dropped, then the layers left empty; the attributes still
    overridden are per-layer, and reading one from the config raises AmbiguousGlobalPerLayerAttributeError.
    A layer's config is a copy with its overrides set and no per-layer state."""

    def __init__(self, per_layer_config: Optional[dict] = None, **fields: Any):
        super().__init__(**fields)
        if per_layer_config is not None:
            overrides = {int(i): copy.deepcopy(o) for i, o in per_layer_config.items()}
            for o in overrides.values():
                for k in [k for k, v in o.items() if k in self.__dict__ and self.__dict__[k] == v]:
                    del o[k]
            self.__dict__["_per_layer_overrides"] = {i: o for i, o in overrides.items() if o}

    def __getattribute__(self, key: str) -> Any:
        overrides = object.__getattribute__(self, "__dict__").get("_per_layer_overrides")
        if overrides and any(key in o for o in overrides.values()):
            raise AmbiguousGlobalPerLayerAttributeError(
                "'%s' is a per-layer attribute and may vary across layers: read config.per_layer_config[i].%s"
                % (key, key))
        return object.__getattribute__(self, key)

    @property
    def per_layer_config(self) -> _PerLayerConfigView:
        return _PerLayerConfigView(self)

    def _layer(self, overrides: dict) -> "V515Config":
        out = copy.copy(self)
        out.__dict__.pop("_per_layer_overrides", None)
        out.__dict__.update(overrides)
        return out


class Gemma4TextConfigV515(V515Config):
    """v5.15's Gemma4TextConfig, its RoPE fields: global_head_dim is not kept; without an explicit
    per_layer_config it becomes the head_dim override of every full-attention layer (with
    num_global_key_value_heads, when given, their num_key_value_heads). rope_parameters standardized as HF's
    post-init does."""

    def __init__(self, **fields: Any):
        global_head_dim = fields.pop("global_head_dim", 512)
        num_global_kv = fields.pop("num_global_key_value_heads", None)
        if "per_layer_config" not in fields:
            layer = {"head_dim": global_head_dim}
            if num_global_kv is not None and fields.get("attention_k_eq_v", True):
                layer["num_key_value_heads"] = num_global_kv
            fields["per_layer_config"] = {i: dict(layer) for i, lt in enumerate(fields["layer_types"])
                                          if lt == "full_attention"}
        super().__init__(**fields)
        self.standardize_rope_params()


def _per_layer(fn: Any) -> Any:
    """v5.15's init functions begin by reading config.per_layer_config[layer_type] (a ValueError keeps the
    whole config); proportional then reads head_dim there (head_dim_key's default)."""
    def init(config: Any, device: Any = None, seq_len: Any = None, layer_type: Optional[str] = None, **kwargs: Any):
        if layer_type is not None:
            try:
                config = config.per_layer_config[layer_type]
            except ValueError:
                pass
        return fn(config, device, seq_len, layer_type, **kwargs)
    return init


class Gemma4TextRotaryEmbeddingV515(Gemma3RotaryEmbedding):
    """v5.15's Gemma4TextRotaryEmbedding: each layer type's inv_freq from ``config.per_layer_config[layer_type]``
    (no head_dim_key: that config's head_dim is the layer type's width), the default type by
    compute_default_rope_parameters on it; buffers and forward as Gemma 3's."""

    def _layer_inv_freq(self, config: Any, lt: str, rp: dict, device: Any):
        fn = self.compute_default_rope_parameters if rp["rope_type"] == "default" else \
            _per_layer(ROPE_INIT_FUNCTIONS[rp["rope_type"]])
        return fn(config.per_layer_config[lt], device, layer_type=lt)


def rotate_half(x: Tensor) -> Tensor:
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q: Tensor, k: Tensor, cos: Tensor, sin: Tensor, unsqueeze_dim: int = 1):
    if cos.ndim != q.ndim:
        cos = cos.unsqueeze(unsqueeze_dim)
    if sin.ndim != q.ndim:
        sin = sin.unsqueeze(unsqueeze_dim)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)
