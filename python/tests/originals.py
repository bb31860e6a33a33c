"""The PyTorch positional-encoding code people run today, written here from the public formulas.

These are the *originals* that the drop-in modules of ``posenc.torch`` are tested against. Each one
performs the same float32 operations, in the same order, as the public code it stands for, so that
its outputs carry the same rounding errors (the angle ``p * w`` formed in float32, ``exp``/``pow``
frequencies, ...). They are re-written from the formulas, not copied; the source each follows is
named at each definition.

Contents (all plain torch; tested with Debian's torch 1.13):

* ``PositionalEncoding(d_model, dropout=0.1, max_len=5000)``: the PyTorch tutorial's module,
  x of shape ``[seq, batch, d]``.
* ``PositionalEncodingBatchFirst(d_model, dropout=0.1, max_len=5000)``: the same table, x of shape
  ``[batch, seq, d]``.
* ``make_positions(tensor, padding_idx, onnx_trace=False)``,
  ``SinusoidalPositionalEmbedding(embedding_dim, padding_idx, init_size=1024, auto_expand=True)`` (main),
  ``SinusoidalPositionalEmbeddingV0123`` (v0.12.3) and ``PositionalEmbedding(...)`` (main's factory): fairseq.
* ``LearnableSinusoidalPositionalEncoding(d_model, dropout=0.1, max_len=5000, d_hid=None,
  activation="gelu", batch_first=False)``: LSPE, an FFN over the sinusoidal table, added to x.
* ``stacked_sincos_table(seq_len, d_model, base=10000.0)``, ``embed_with_pe(embedding, tokens, pe)``
  and ``ScaledEmbeddingWithPE(num_embeddings, d_model, max_len=5000, padding_idx=None)``: the
  ``torch.pow`` / ``torch.stack`` table and ``emb(tok) * sqrt(d) + pe[:seq]``.
* Hugging Face transformers' rotary embedding: ``ROPE_INIT_FUNCTIONS`` (default, linear, dynamic,
  yarn, longrope, llama3), ``LlamaRotaryEmbedding(config, device=None)``, ``rotate_half``,
  ``apply_rotary_pos_emb``; ``original_configs()`` with real model configs.

HF version followed: the 4.5x line with ``config.rope_scaling`` after transformers PR #40320
(v4.56/4.57, Aug 2025), i.e. yarn uses the given ``factor`` and ``rope_scaling``'s
``original_max_position_embeddings`` (issue #38224 describes the earlier override of ``factor`` by
``max_position_embeddings / original_max_position_embeddings``), the ``mscale``/``mscale_all_dim``
ratio and ``truncate``; dynamic NTK recomputes on growth and resets below the original length;
longrope switches short/long by the current length (``dynamic_rope_update``). Deviations, all
noted where they occur: a config may be a plain dict; ``"su"`` is read as ``"longrope"`` (HF does
that in ``Phi3Config``). Longrope without the top-level ``original_max_position_embeddings`` uses
``max_position_embeddings`` as 4.57 does; yarn needs ``factor`` (``KeyError`` otherwise). v5's code,
where these differ, is originals_hf5.py.
"""

import math
from typing import Any, Dict, Optional, Tuple

import torch
from torch import Tensor, nn

__all__ = [
    "PositionalEncoding",
    "PositionalEncodingBatchFirst",
    "make_positions",
    "SinusoidalPositionalEmbedding",
    "SinusoidalPositionalEmbeddingV0123",
    "PositionalEmbedding",
    "LearnableSinusoidalPositionalEncoding",
    "stacked_sincos_table",
    "embed_with_pe",
    "ScaledEmbeddingWithPE",
    "ROPE_INIT_FUNCTIONS",
    "LlamaRotaryEmbedding",
    "rotate_half",
    "apply_rotary_pos_emb",
    "original_configs",
]


# ---------------------------------------------------------------------------------------------------
# 1. The PyTorch tutorial's PositionalEncoding
#    pytorch/tutorials beginner_source/transformer_tutorial.py ("Language Modeling with nn.Transformer
#    and torchtext"), class PositionalEncoding.
# ---------------------------------------------------------------------------------------------------


def _tutorial_table(d_model: int, max_len: int) -> Tensor:
    """[max_len, d_model] interleaved table, with the tutorial's float32 operations.

    ``position`` is an int64 column; ``arange(0, d, 2)`` (int64) times the Python float
    ``-log(10000)/d`` is a float32 tensor; ``exp`` of it is ``div_term``; ``position * div_term``
    promotes the positions to float32 (exact below 2^24) and rounds the product once.
    """
    position = torch.arange(max_len).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe


class PositionalEncoding(nn.Module):
    """The tutorial's module: buffer ``pe`` of shape [max_len, 1, d_model], even columns
    ``sin(p * div_term)``, odd columns ``cos(p * div_term)``; ``forward(x)`` with x of shape
    [seq_len, batch, d_model] returns ``dropout(x + pe[:seq_len])``. Like the tutorial it needs an
    even ``d_model`` (the odd columns would be one short)."""

    def __init__(self, d_model: int, dropout: float = 0.1, max_len: int = 5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        # The tutorial fills pe[:, 0, 0::2] and pe[:, 0, 1::2] of a [max_len, 1, d] zeros tensor;
        # the values are the same elementwise operations as _tutorial_table's.
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.pe[: x.size(0)]
        return self.dropout(x)


class PositionalEncodingBatchFirst(nn.Module):
    """The same table for batch-first inputs, as the common variant writes it: buffer ``pe`` of
    shape [1, max_len, d_model]; ``forward(x)`` with x of shape [batch, seq_len, d_model] returns
    ``dropout(x + pe[:, :seq_len])``."""

    def __init__(self, d_model: int, dropout: float = 0.1, max_len: int = 5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(1, max_len, d_model)
        pe[0, :, 0::2] = torch.sin(position * div_term)
        pe[0, :, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.pe[:, : x.size(1)]
        return self.dropout(x)


# ---------------------------------------------------------------------------------------------------
# 2. fairseq: utils.make_positions, modules/sinusoidal_positional_embedding.py and
#    modules/positional_embedding.py, read at facebookresearch/fairseq main (3d262bb2, the module last
#    changed in ecbf110e, "Add an auto_expand option", Oct 2024) and at v0.12.3 (e16e44c6).
# ---------------------------------------------------------------------------------------------------


def make_positions(tensor: Tensor, padding_idx: int, onnx_trace: bool = False) -> Tensor:
    """fairseq's position numbers for a [bsz, seq] token tensor: real tokens are numbered
    ``padding_idx + 1, padding_idx + 2, ...`` along each row, padding tokens get ``padding_idx``
    (the table's zero row). An int32 mask, its cumulative sum along dim 1, times the mask, to int64,
    plus ``padding_idx``. ``onnx_trace`` is accepted for the signature and changes nothing."""
    mask = tensor.ne(padding_idx).int()
    return (torch.cumsum(mask, dim=1).type_as(mask) * mask).long() + padding_idx


def _fairseq_table(num_embeddings: int, embedding_dim: int, padding_idx: Optional[int] = None) -> Tensor:
    """``get_embedding`` (the same at main and v0.12.3): sin in the first ``dim // 2`` columns, cos in the
    next, frequencies ``exp(-k * log(10000) / (half_dim - 1))`` in float32, a zero last column for odd
    ``dim``, a zero row at ``padding_idx``."""
    half_dim = embedding_dim // 2
    step = math.log(10000) / (half_dim - 1)
    freq = torch.exp(torch.arange(half_dim, dtype=torch.float) * -step)
    ang = torch.arange(num_embeddings, dtype=torch.float).unsqueeze(1) * freq.unsqueeze(0)
    emb = torch.cat([torch.sin(ang), torch.cos(ang)], dim=1).view(num_embeddings, -1)
    if embedding_dim % 2 == 1:
        emb = torch.cat([emb, torch.zeros(num_embeddings, 1)], dim=1)
    if padding_idx is not None:
        emb[padding_idx, :] = 0
    return emb


class SinusoidalPositionalEmbedding(nn.Module):
    """fairseq main's module: ``__init__(embedding_dim, padding_idx, init_size=1024, auto_expand=True)``;
    ``weights`` is a non-persistent buffer (so the state_dict is empty and ``.to()`` / ``.double()`` /
    ``.half()`` convert it); ``_load_from_state_dict`` drops the old ``weights`` and ``_float_tensor``
    keys. ``forward(input)`` maps tokens [bsz, seq] to [bsz, seq, dim] through ``make_positions`` and
    ``index_select``; when ``padding_idx + 1 + seq`` rows are needed it builds a bigger table (converted to
    the buffer's dtype and device) and keeps it only with ``auto_expand``. With ``incremental_state`` every
    batch row gets the row of position ``timestep + 1`` (or ``seq``), [bsz, 1, dim]. The ``positions``
    argument is accepted and ignored, as fairseq ignores it. ``prepare_for_onnx_export_`` sets
    ``onnx_trace`` (the ONNX branches of forward are not re-typed here: they need a tracer)."""

    def __init__(self, embedding_dim: int, padding_idx: Optional[int], init_size: int = 1024, auto_expand: bool = True):
        super().__init__()
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx if padding_idx is not None else 0
        self.register_buffer("weights", _fairseq_table(init_size, embedding_dim, padding_idx), persistent=False)
        self.max_positions = int(1e5)
        self.auto_expand = auto_expand
        self.onnx_trace = False

    def prepare_for_onnx_export_(self) -> None:
        self.onnx_trace = True

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        for key in ("weights", "_float_tensor"):
            if prefix + key in state_dict:
                del state_dict[prefix + key]
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    get_embedding = staticmethod(_fairseq_table)

    def forward(self, input: Tensor, incremental_state: Optional[Any] = None, timestep: Optional[Tensor] = None,
                positions: Optional[Any] = None) -> Tensor:
        bsz, seq_len = input.size()[0], input.size()[1]
        max_pos = self.padding_idx + 1 + seq_len
        weights = self.weights
        if max_pos > self.weights.size(0):
            weights = _fairseq_table(max_pos, self.embedding_dim, self.padding_idx).to(self.weights)
            if self.auto_expand:
                self.weights = weights
        if incremental_state is not None:
            pos = timestep.view(-1)[0] + 1 if timestep is not None else seq_len
            return weights[self.padding_idx + pos, :].expand(bsz, 1, -1)
        positions = make_positions(input, self.padding_idx, onnx_trace=self.onnx_trace)
        return weights.index_select(0, positions.view(-1)).view(bsz, seq_len, -1).detach()


class SinusoidalPositionalEmbeddingV0123(nn.Module):
    """fairseq v0.12.3's module: ``__init__(embedding_dim, padding_idx, init_size=1024)``; ``weights`` is a
    plain attribute and ``_float_tensor`` a (persistent) buffer whose dtype and device ``weights`` follows at
    every call; the table grows in place when longer inputs come; ``positions`` is ignored."""

    def __init__(self, embedding_dim: int, padding_idx: Optional[int], init_size: int = 1024):
        super().__init__()
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx if padding_idx is not None else 0
        self.weights = _fairseq_table(init_size, embedding_dim, padding_idx)
        self.onnx_trace = False
        self.register_buffer("_float_tensor", torch.FloatTensor(1))
        self.max_positions = int(1e5)

    def prepare_for_onnx_export_(self) -> None:
        self.onnx_trace = True

    get_embedding = staticmethod(_fairseq_table)

    def forward(self, input: Tensor, incremental_state: Optional[Any] = None, timestep: Optional[Tensor] = None,
                positions: Optional[Any] = None) -> Tensor:
        bsz, seq_len = input.size()[0], input.size()[1]
        max_pos = self.padding_idx + 1 + seq_len
        if self.weights is None or max_pos > self.weights.size(0):
            self.weights = _fairseq_table(max_pos, self.embedding_dim, self.padding_idx)
        self.weights = self.weights.to(self._float_tensor)
        if incremental_state is not None:
            pos = timestep.view(-1)[0] + 1 if timestep is not None else seq_len
            return self.weights[self.padding_idx + pos, :].expand(bsz, 1, -1)
        positions = make_positions(input, self.padding_idx, onnx_trace=self.onnx_trace)
        return self.weights.index_select(0, positions.view(-1)).view(bsz, seq_len, -1).detach()


def PositionalEmbedding(num_embeddings: int, embedding_dim: int, padding_idx: int, learned: bool = False,
                        auto_expand: bool = True, module=SinusoidalPositionalEmbedding):
    """fairseq main's factory (the sinusoidal branch; ``module`` lets a test pass posenc's class): the table
    sized ``num_embeddings + padding_idx + 1``, ``auto_expand`` passed through."""
    if learned:
        raise NotImplementedError("the learned branch is an nn.Embedding, not re-typed here")
    return module(embedding_dim, padding_idx, init_size=num_embeddings + padding_idx + 1, auto_expand=auto_expand)


# ---------------------------------------------------------------------------------------------------
# 3. LSPE: learnable sinusoidal positional encoding
#    Source: G. Wang et al., "A Simple yet Effective Learnable Positional Encoding Method for Improving
#    Document Transformer Model", Findings of AACL-IJCNLP 2022 (aclanthology.org/2022.findings-aacl.42):
#    the sinusoidal encoding passed through a two-layer feed-forward network, whose output is the
#    position encoding added to the token embeddings. Public PyTorch versions differ in the hidden
#    width and the activation: SwethaSrikari/LearnablePositionalEncoding models/positional_encoding/
#    LSPE.py (hidden d_hid, sigmoid, dropout inside the FFN, applied to the tutorial's table) and a
#    layer "as described in" that paper with hidden width d and GELU. Both are this module with
#    (d_hid, activation) set accordingly; the default here is the second (d_hid = d_model, GELU).
# ---------------------------------------------------------------------------------------------------

_ACTIVATIONS = {"gelu": nn.GELU, "relu": nn.ReLU, "sigmoid": nn.Sigmoid, "tanh": nn.Tanh, "silu": nn.SiLU}


class LearnableSinusoidalPositionalEncoding(nn.Module):
    """LSPE: ``pe`` is the tutorial's fixed table (a buffer, [max_len, d_model]); ``ffn`` is
    ``Linear(d_model, d_hid) -> activation -> Linear(d_hid, d_model)`` (trainable). ``forward(x)``
    returns ``dropout(x + ffn(pe[:seq]))``, x of shape [seq, batch, d] (``batch_first=False``, the
    tutorial's) or [batch, seq, d]. The FFN is applied to the rows in use only; applied to the whole
    table first (as one public version does) the rows are the same up to GEMM blocking."""

    def __init__(self, d_model: int, dropout: float = 0.1, max_len: int = 5000, d_hid: Optional[int] = None,
                 activation: str = "gelu", batch_first: bool = False):
        super().__init__()
        d_hid = d_model if d_hid is None else d_hid
        self.d_model = d_model
        self.batch_first = batch_first
        self.dropout = nn.Dropout(p=dropout)
        self.ffn = nn.Sequential(nn.Linear(d_model, d_hid), _ACTIVATIONS[activation](), nn.Linear(d_hid, d_model))
        self.register_buffer("pe", _tutorial_table(d_model, max_len))

    def position_encoding(self, seq_len: int) -> Tensor:
        """The learned encoding of positions 0 .. seq_len - 1, [seq_len, d_model]."""
        return self.ffn(self.pe[:seq_len])

    def forward(self, x: Tensor) -> Tensor:
        if self.batch_first:
            x = x + self.position_encoding(x.size(1)).unsqueeze(0)
        else:
            x = x + self.position_encoding(x.size(0)).unsqueeze(1)
        return self.dropout(x)


# ---------------------------------------------------------------------------------------------------
# 4. The table "as people write it" and the embedding + PE
# ---------------------------------------------------------------------------------------------------


def stacked_sincos_table(seq_len: int, d_model: int, base: float = 10000.0) -> Tensor:
    """[seq_len, d_model] interleaved table built the way it is commonly hand-written:
    ``inv = 1 / torch.pow(base, arange(0, d, 2) / d)`` (float32; the Python-float base is rounded to
    float32 by the power), ``ang = pos * inv`` (float32 positions, one rounding),
    ``stack([sin(ang), cos(ang)], -1).flatten(-2)`` (columns sin, cos, sin, cos, ...)."""
    pos = torch.arange(seq_len, dtype=torch.float32).unsqueeze(1)
    inv = 1.0 / torch.pow(base, torch.arange(0, d_model, 2, dtype=torch.float32) / d_model)
    ang = pos * inv
    return torch.stack([torch.sin(ang), torch.cos(ang)], dim=-1).flatten(-2)


def embed_with_pe(embedding: nn.Embedding, tokens: Tensor, pe: Tensor) -> Tensor:
    """``embedding(tokens) * sqrt(d) + pe[:seq]`` for tokens [batch, seq] (or [seq]): the scale is
    the Python double ``math.sqrt(d)``, used by torch as float32; two float32 roundings per element
    (the product, then the sum)."""
    d = embedding.embedding_dim
    seq = tokens.size(-1)
    return embedding(tokens) * math.sqrt(d) + pe[:seq]


class ScaledEmbeddingWithPE(nn.Module):
    """An ``nn.Embedding`` followed by ``* sqrt(d_model) + pe[:seq]`` with the stacked table above;
    tokens [batch, seq] -> [batch, seq, d_model]."""

    def __init__(self, num_embeddings: int, d_model: int, max_len: int = 5000, padding_idx: Optional[int] = None):
        super().__init__()
        self.embedding = nn.Embedding(num_embeddings, d_model, padding_idx=padding_idx)
        self.register_buffer("pe", stacked_sincos_table(max_len, d_model))

    def forward(self, tokens: Tensor) -> Tensor:
        return embed_with_pe(self.embedding, tokens, self.pe)


# ---------------------------------------------------------------------------------------------------
# 5. Hugging Face transformers' rotary embedding
#    src/transformers/modeling_rope_utils.py (rope init functions, dynamic_rope_update) and
#    src/transformers/models/llama/modeling_llama.py (LlamaRotaryEmbedding, rotate_half,
#    apply_rotary_pos_emb); read at huggingface/transformers@0044e3b3 / @ef468064 (4.4x),
#    @5dd4a635 (modeling_llama), v5 in zucchini-nlp/transformers@26892c16, and 4.5x-derived copies
#    carrying the post-#40320 yarn. See the module docstring for the version followed.
# ---------------------------------------------------------------------------------------------------

_MISSING = object()


def _get(config: Any, name: str, default: Any = None) -> Any:
    """``config.name`` or ``config[name]``; ``default`` when absent."""
    if isinstance(config, dict):
        return config.get(name, default)
    return getattr(config, name, default)


def _has(config: Any, name: str) -> bool:
    """HF's ``hasattr(config, name)``; a dict has it when the key is present and not None."""
    return _get(config, name, _MISSING) not in (_MISSING, None)


def _rope_scaling(config: Any) -> Dict[str, Any]:
    rs = _get(config, "rope_scaling")
    return rs if isinstance(rs, dict) else {}


def _rope_type(config: Any) -> str:
    rs = _get(config, "rope_scaling")
    if not isinstance(rs, dict):
        return "default"
    t = rs.get("rope_type", rs.get("type"))
    if t is None:
        return "default"
    # Phi3Config turns the legacy "su" (and "yarn" for Phi-3) names into "longrope"; "su" is only Phi's.
    return "longrope" if t == "su" else t


def _rotary_dim(config: Any) -> int:
    """HF: ``head_dim = config.head_dim or hidden_size // num_attention_heads``, then
    ``dim = int(head_dim * partial_rotary_factor)``."""
    partial_rotary_factor = _get(config, "partial_rotary_factor", 1.0)
    if partial_rotary_factor is None:
        partial_rotary_factor = 1.0
    head_dim = _get(config, "head_dim") or _get(config, "hidden_size") // _get(config, "num_attention_heads")
    return int(head_dim * partial_rotary_factor)


def _compute_default_rope_parameters(config: Any = None, device: Optional[torch.device] = None,
                                     seq_len: Optional[int] = None) -> Tuple[Tensor, float]:
    """``inv_freq = 1 / base ** (arange(0, dim, 2) / dim)``: int64 arange converted to float32, the
    float32 quotient by ``dim``, the Python-float base raised to it (float32), the float32
    reciprocal. Attention factor 1."""
    base = _get(config, "rope_theta")
    dim = _rotary_dim(config)
    attention_factor = 1.0
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).to(device=device, dtype=torch.float) / dim))
    return inv_freq, attention_factor


def _compute_linear_scaling_rope_parameters(config: Any = None, device: Optional[torch.device] = None,
                                            seq_len: Optional[int] = None) -> Tuple[Tensor, float]:
    """The default ``inv_freq`` divided in place by ``factor`` (a second float32 rounding)."""
    factor = _rope_scaling(config)["factor"]
    inv_freq, attention_factor = _compute_default_rope_parameters(config, device, seq_len)
    inv_freq /= factor
    return inv_freq, attention_factor


def _compute_dynamic_ntk_parameters(config: Any = None, device: Optional[torch.device] = None,
                                    seq_len: Optional[Any] = None) -> Tuple[Tensor, float]:
    """Dynamic NTK: ``L = max(seq_len, max_position_embeddings)``,
    ``base' = base * (factor * L / max_pos - (factor - 1)) ** (dim / (dim - 2))``, then the default
    formula with ``base'``. With ``seq_len`` None or an int the new base is a Python double (rounded
    to float32 by the power); with a tensor ``seq_len`` (what the forward pass passes: max position
    + 1) every step is a float32 tensor operation, as in HF."""
    base = _get(config, "rope_theta")
    dim = _rotary_dim(config)
    max_position_embeddings = _get(config, "max_position_embeddings")
    factor = _rope_scaling(config)["factor"]
    attention_factor = 1.0

    if seq_len is None:
        seq_len = max_position_embeddings
    elif isinstance(seq_len, torch.Tensor):
        seq_len = torch.maximum(seq_len, torch.tensor(max_position_embeddings, dtype=seq_len.dtype,
                                                      device=seq_len.device))
    else:
        seq_len = max(seq_len, max_position_embeddings)

    base = base * ((factor * seq_len / max_position_embeddings) - (factor - 1)) ** (dim / (dim - 2))
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).to(device=device, dtype=torch.float) / dim))
    return inv_freq, attention_factor


def _yarn_get_mscale(scale: float, mscale: float = 1.0) -> float:
    if scale <= 1:
        return 1.0
    return 0.1 * mscale * math.log(scale) + 1.0


def _compute_yarn_parameters(config: Any, device: Optional[torch.device] = None,
                             seq_len: Optional[int] = None) -> Tuple[Tensor, float]:
    """YaRN (post-#40320 4.5x): correction dims ``dim * ln(L0 / (2 pi beta)) / (2 ln base)`` in
    Python doubles, floor/ceil unless ``truncate`` is false, clamped to [0, dim - 1]; a float32 ramp
    over the ``dim // 2`` pairs; ``inv = inv_interp * (1 - e) + inv_extrap * e`` with
    ``e = 1 - ramp``, all float32. Attention factor: the explicit ``attention_factor``, else the
    ``mscale``/``mscale_all_dim`` ratio when both are truthy, else ``0.1 ln(factor) + 1``."""
    rs = _rope_scaling(config)
    base = _get(config, "rope_theta")
    dim = _rotary_dim(config)
    factor = rs["factor"]  # 4.5x: required (KeyError without it; v5 derives it, originals_hf5.py)
    attention_factor = rs.get("attention_factor")
    mscale = rs.get("mscale")
    mscale_all_dim = rs.get("mscale_all_dim")
    original_max_position_embeddings = (rs.get("original_max_position_embeddings")
                                        or _get(config, "max_position_embeddings"))

    if attention_factor is None:
        if mscale and mscale_all_dim:
            attention_factor = float(_yarn_get_mscale(factor, mscale) / _yarn_get_mscale(factor, mscale_all_dim))
        else:
            attention_factor = _yarn_get_mscale(factor)

    beta_fast = rs.get("beta_fast") or 32
    beta_slow = rs.get("beta_slow") or 1

    def correction_dim(num_rotations: float) -> float:
        return (dim * math.log(original_max_position_embeddings / (num_rotations * 2 * math.pi))) / (2 * math.log(base))

    truncate = rs.get("truncate", True)
    low = correction_dim(beta_fast)
    high = correction_dim(beta_slow)
    if truncate:
        low = math.floor(low)
        high = math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001  # HF: "prevent singularity"
    ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low), 0, 1)

    pos_freqs = base ** (torch.arange(0, dim, 2).to(device=device, dtype=torch.float) / dim)
    inv_freq_extrapolation = 1.0 / pos_freqs
    inv_freq_interpolation = 1.0 / (factor * pos_freqs)
    inv_freq_extrapolation_factor = 1 - ramp.to(device=device, dtype=torch.float)
    inv_freq = (inv_freq_interpolation * (1 - inv_freq_extrapolation_factor)
                + inv_freq_extrapolation * inv_freq_extrapolation_factor)
    return inv_freq, attention_factor


def _longrope_original_max(config: Any) -> Tuple[int, bool]:
    """(L0, from the top-level attribute?) as v4.57's longrope reads it: the top-level
    ``original_max_position_embeddings``, else ``max_position_embeddings`` (rope_scaling's own
    ``original_max_position_embeddings`` is v5's place and is not read here)."""
    if _has(config, "original_max_position_embeddings"):
        return _get(config, "original_max_position_embeddings"), True
    return _get(config, "max_position_embeddings"), False


def _compute_longrope_parameters(config: Any, device: Optional[torch.device] = None,
                                 seq_len: Optional[int] = None) -> Tuple[Tensor, float]:
    """LongRoPE (Phi-3): ``inv = 1 / (ext * base ** (arange(0, dim, 2) / dim))`` with ``ext`` the
    float32 ``long_factor`` when ``seq_len > L0``, else ``short_factor``. A config with a top-level
    ``original_max_position_embeddings`` (Phi-3) has ``factor = max_position_embeddings / L0``.
    Attention factor: explicit, else ``sqrt(1 + ln(factor) / ln(L0))`` for factor > 1, else 1."""
    rs = _rope_scaling(config)
    base = _get(config, "rope_theta")
    dim = _rotary_dim(config)
    long_factor = rs["long_factor"]
    short_factor = rs["short_factor"]
    factor = rs.get("factor")
    attention_factor = rs.get("attention_factor")

    original_max_position_embeddings, top_level = _longrope_original_max(config)
    if top_level:
        factor = _get(config, "max_position_embeddings") / original_max_position_embeddings

    if attention_factor is None:
        if factor is None or factor <= 1.0:
            attention_factor = 1.0
        else:
            attention_factor = math.sqrt(1 + math.log(factor) / math.log(original_max_position_embeddings))

    if seq_len and seq_len > original_max_position_embeddings:
        ext_factors = torch.tensor(long_factor, dtype=torch.float32, device=device)
    else:
        ext_factors = torch.tensor(short_factor, dtype=torch.float32, device=device)
    inv_freq_shape = torch.arange(0, dim, 2, dtype=torch.int64, device=device).float() / dim
    inv_freq = 1.0 / (ext_factors * base ** inv_freq_shape)
    return inv_freq, attention_factor


def _compute_llama3_parameters(config: Any, device: Optional[torch.device] = None,
                               seq_len: Optional[int] = None) -> Tuple[Tensor, float]:
    """Llama 3.1: from the default ``inv_freq``, ``wavelen = 2 pi / inv`` (float32); long
    wavelengths (> L0 / low_freq_factor) divided by ``factor``, short ones (< L0 / high_freq_factor)
    kept, the band between blended with ``s = (L0 / wavelen - lff) / (hff - lff)``:
    ``(1 - s) * inv / factor + s * inv``; all float32 tensor operations."""
    inv_freq, attention_factor = _compute_default_rope_parameters(config, device, seq_len)
    rs = _rope_scaling(config)
    factor = rs["factor"]
    low_freq_factor = rs["low_freq_factor"]
    high_freq_factor = rs["high_freq_factor"]
    old_context_len = rs["original_max_position_embeddings"]

    low_freq_wavelen = old_context_len / low_freq_factor
    high_freq_wavelen = old_context_len / high_freq_factor

    wavelen = 2 * math.pi / inv_freq
    inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth_factor = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
    smoothed_inv_freq = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
    is_medium_freq = ~(wavelen < high_freq_wavelen) & ~(wavelen > low_freq_wavelen)
    inv_freq_llama = torch.where(is_medium_freq, smoothed_inv_freq, inv_freq_llama)
    return inv_freq_llama, attention_factor


ROPE_INIT_FUNCTIONS = {
    "default": _compute_default_rope_parameters,
    "linear": _compute_linear_scaling_rope_parameters,
    "dynamic": _compute_dynamic_ntk_parameters,
    "yarn": _compute_yarn_parameters,
    "longrope": _compute_longrope_parameters,
    "llama3": _compute_llama3_parameters,
}


class LlamaRotaryEmbedding(nn.Module):
    """HF's rotary embedding. ``forward(x, position_ids)`` with ``position_ids`` [batch, seq]
    (int64) returns ``(cos, sin)``, each [batch, seq, dim] in ``x.dtype``: ``inv_freq[None, :, None]``
    expanded over the batch, times ``position_ids[:, None, :]`` converted to float32, as a batched
    matmul with inner dimension 1 (one float32 rounding of ``p * w``), autocast disabled; transposed
    to [batch, seq, dim/2], ``emb = cat(freqs, freqs)``, ``cos = emb.cos() * attention_scaling``
    (and sin), then cast to ``x.dtype``.

    Before that, as HF's ``dynamic_rope_update`` does: the dynamic type recomputes ``inv_freq`` with
    ``seq_len = max(position_ids) + 1`` (a tensor) when that exceeds the cached length, and goes back
    to the original ``inv_freq`` when it drops below ``max_position_embeddings`` after growing; longrope
    uses the long factors (computed once, with ``seq_len = L0 + 1``) while ``max(position_ids) + 1 > L0``
    and the short ones otherwise."""

    def __init__(self, config: Any, device: Optional[torch.device] = None):
        super().__init__()
        self.rope_type = _rope_type(config)
        self.max_seq_len_cached = _get(config, "max_position_embeddings")
        self.original_max_seq_len = _get(config, "max_position_embeddings")
        self.config = config
        self.rope_init_fn = ROPE_INIT_FUNCTIONS[self.rope_type]
        inv_freq, self.attention_scaling = self.rope_init_fn(self.config, device)
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.original_inv_freq = self.inv_freq

    def _dynamic_frequency_update(self, position_ids: Tensor, device: torch.device) -> None:
        seq_len = torch.max(position_ids) + 1
        if seq_len > self.max_seq_len_cached:  # growth
            inv_freq, self.attention_scaling = self.rope_init_fn(self.config, device, seq_len=seq_len)
            self.register_buffer("inv_freq", inv_freq, persistent=False)
            self.max_seq_len_cached = seq_len
        if seq_len < self.original_max_seq_len and self.max_seq_len_cached > self.original_max_seq_len:  # reset
            self.original_inv_freq = self.original_inv_freq.to(device)
            self.register_buffer("inv_freq", self.original_inv_freq, persistent=False)
            self.max_seq_len_cached = self.original_max_seq_len

    def _longrope_frequency_update(self, position_ids: Tensor, device: torch.device) -> None:
        seq_len = torch.max(position_ids) + 1
        original_max_position_embeddings, _ = _longrope_original_max(self.config)
        if seq_len > original_max_position_embeddings:
            if not hasattr(self, "long_inv_freq"):
                self.long_inv_freq, _ = self.rope_init_fn(self.config, device,
                                                          seq_len=original_max_position_embeddings + 1)
            self.register_buffer("inv_freq", self.long_inv_freq, persistent=False)
        else:
            self.original_inv_freq = self.original_inv_freq.to(device)
            self.register_buffer("inv_freq", self.original_inv_freq, persistent=False)

    @torch.no_grad()
    def forward(self, x: Tensor, position_ids: Tensor) -> Tuple[Tensor, Tensor]:
        if "dynamic" in self.rope_type:
            self._dynamic_frequency_update(position_ids, device=x.device)
        elif self.rope_type == "longrope":
            self._longrope_frequency_update(position_ids, device=x.device)

        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1).to(x.device)
        position_ids_expanded = position_ids[:, None, :].float()
        device_type = x.device.type if isinstance(x.device.type, str) and x.device.type != "mps" else "cpu"
        with torch.autocast(device_type=device_type, enabled=False):  # float32 angles (HF PR #29285)
            freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
            emb = torch.cat((freqs, freqs), dim=-1)
            cos = emb.cos() * self.attention_scaling
            sin = emb.sin() * self.attention_scaling
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


def rotate_half(x: Tensor) -> Tensor:
    """``cat(-x2, x1)`` of the two halves of the last dimension."""
    half = x.shape[-1] // 2
    x1 = x[..., :half]
    x2 = x[..., half:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q: Tensor, k: Tensor, cos: Tensor, sin: Tensor, position_ids: Optional[Tensor] = None,
                         unsqueeze_dim: int = 1) -> Tuple[Tensor, Tensor]:
    """``q * cos + rotate_half(q) * sin`` (and k), elementwise in the tensors' dtype (three roundings
    per output in bf16/f16). cos/sin [batch, seq, dim] are unsqueezed at ``unsqueeze_dim`` (1 for
    q [batch, heads, seq, dim], 2 for [batch, seq, heads, dim]). ``position_ids`` is unused, as in HF
    since 4.4x."""
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


# ---------------------------------------------------------------------------------------------------
# 6. Real model configs (the RoPE-relevant fields of each checkpoint's config.json), the same models
#    as include/posenc/posenc.hpp's rope presets; the values agree with those presets.
# ---------------------------------------------------------------------------------------------------

# Phi-3-mini-128k-instruct, first (April 2024) config.json, rope_scaling "type": "su" (48 pairs each);
# the same arrays as posenc::detail::kPhi3Mini128kShort / kPhi3Mini128kLong. Seen verbatim in the
# Phi-3-vision-128k-instruct config that diffusers' OmniGen pipeline test carries
# (tests/pipelines/omnigen/test_pipeline_omnigen.py). The July 2024 update ships other arrays.
PHI3_MINI_128K_SHORT_FACTOR = [
    1.05, 1.05, 1.05, 1.1, 1.1, 1.1, 1.2500000000000002, 1.2500000000000002, 1.4000000000000004,
    1.4500000000000004, 1.5500000000000005, 1.8500000000000008, 1.9000000000000008, 2.000000000000001,
    2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001,
    2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001,
    2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001,
    2.000000000000001, 2.000000000000001, 2.000000000000001, 2.1000000000000005, 2.1000000000000005, 2.2,
    2.3499999999999996, 2.3499999999999996, 2.3499999999999996, 2.3499999999999996, 2.3999999999999995,
    2.3999999999999995, 2.6499999999999986, 2.6999999999999984, 2.8999999999999977, 2.9499999999999975,
    3.049999999999997, 3.049999999999997, 3.049999999999997,
]
PHI3_MINI_128K_LONG_FACTOR = [
    1.0299999713897705, 1.0499999523162842, 1.0499999523162842, 1.0799999237060547, 1.2299998998641968,
    1.2299998998641968, 1.2999999523162842, 1.4499999284744263, 1.5999999046325684, 1.6499998569488525,
    1.8999998569488525, 2.859999895095825, 3.68999981880188, 5.419999599456787, 5.489999771118164,
    5.489999771118164, 9.09000015258789, 11.579999923706055, 15.65999984741211, 15.769999504089355,
    15.789999961853027, 18.360000610351562, 21.989999771118164, 23.079999923706055, 30.009998321533203,
    32.35000228881836, 32.590003967285156, 35.56000518798828, 39.95000457763672, 53.840003967285156,
    56.20000457763672, 57.95000457763672, 59.29000473022461, 59.77000427246094, 59.920005798339844,
    61.190006256103516, 61.96000671386719, 62.50000762939453, 63.3700065612793, 63.48000717163086,
    63.48000717163086, 63.66000747680664, 63.850006103515625, 64.08000946044922, 64.760009765625,
    64.80001068115234, 64.81001281738281, 64.81001281738281,
]


def original_configs() -> Dict[str, Dict[str, Any]]:
    """Config dicts (fresh copies) for ``LlamaRotaryEmbedding`` / ``ROPE_INIT_FUNCTIONS``, keyed by
    name; the posenc preset each matches is given in the comment."""
    return {
        # meta-llama/Llama-2-7b-hf; posenc::rope::llama2() (r 128, base 1e4).
        "llama2_7b": {
            "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 32,
            "max_position_embeddings": 4096, "rope_theta": 10000.0, "rope_scaling": None,
        },
        # meta-llama/Llama-3.1-8B; posenc::rope::llama3_1() (r 128, base 5e5, llama3 8 / 1 / 4 / 8192).
        "llama3_1_8b": {
            "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
            "max_position_embeddings": 131072, "rope_theta": 500000.0,
            "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                             "original_max_position_embeddings": 8192, "rope_type": "llama3"},
        },
        # mistralai/Mistral-7B-Instruct-v0.2; posenc::rope::mistral_7b_v02() (r 128, base 1e6).
        "mistral_7b_v02": {
            "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
            "max_position_embeddings": 32768, "rope_theta": 1000000.0, "rope_scaling": None,
        },
        # Qwen/Qwen2-7B-Instruct with the model card's long-context setting;
        # posenc::rope::qwen2(128, true) (base 1e6, yarn factor 4, original 32768, truncate).
        "qwen2_7b_yarn": {
            "hidden_size": 3584, "num_attention_heads": 28, "num_key_value_heads": 4,
            "max_position_embeddings": 32768, "rope_theta": 1000000.0,
            "rope_scaling": {"factor": 4.0, "original_max_position_embeddings": 32768, "type": "yarn"},
        },
        # microsoft/Phi-3-mini-128k-instruct (April 2024); posenc::rope::phi3_mini_128k(seq_len)
        # (r 96, base 1e4, factor 131072 / 4096 = 32, original 4096, these arrays).
        "phi3_mini_128k": {
            "hidden_size": 3072, "num_attention_heads": 32, "num_key_value_heads": 32,
            "max_position_embeddings": 131072, "original_max_position_embeddings": 4096, "rope_theta": 10000.0,
            "rope_scaling": {"long_factor": list(PHI3_MINI_128K_LONG_FACTOR),
                             "short_factor": list(PHI3_MINI_128K_SHORT_FACTOR), "type": "su"},
        },
        # deepseek-ai/DeepSeek-V2 (rope part of MLA: qk_rope_head_dim 64; HF's DeepSeek configs set
        # head_dim to it); posenc::rope::deepseek_v2() (yarn 40 / 4096 / 32 / 1, mscale 0.707 both).
        "deepseek_v2": {
            "hidden_size": 5120, "num_attention_heads": 128, "qk_rope_head_dim": 64, "head_dim": 64,
            "max_position_embeddings": 163840, "rope_theta": 10000.0,
            "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 0.707,
                             "mscale_all_dim": 0.707, "original_max_position_embeddings": 4096, "type": "yarn"},
        },
        # deepseek-ai/DeepSeek-V3; posenc::rope::deepseek_v3() (as V2 with mscale 1.0 both).
        "deepseek_v3": {
            "hidden_size": 7168, "num_attention_heads": 128, "qk_rope_head_dim": 64, "head_dim": 64,
            "max_position_embeddings": 163840, "rope_theta": 10000.0,
            "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0,
                             "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096, "type": "yarn"},
        },
        # EleutherAI/gpt-neox-20b: rotary_pct 0.25 of head 96 (HF's GPTNeoXConfig calls it
        # rotary_pct; written here as partial_rotary_factor); posenc::rope::gpt_neox_20b() (r 24).
        "gpt_neox_20b": {
            "hidden_size": 6144, "num_attention_heads": 64, "partial_rotary_factor": 0.25,
            "max_position_embeddings": 2048, "rope_theta": 10000.0, "rope_scaling": None,
        },
        # Linear example: Llama-2-7B with rope_scaling {"factor": 4.0, "type": "linear"}, the setting
        # lmsys/vicuna-7b-v1.5-16k ships (not re-checked in an indexed copy). No posenc preset:
        # posenc_rope_init linear, factor 4.
        "linear_llama2_7b_x4": {
            "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 32,
            "max_position_embeddings": 4096, "rope_theta": 10000.0,
            "rope_scaling": {"factor": 4.0, "type": "linear"},
        },
        # Dynamic NTK example: Llama-2-7B with {"type": "dynamic", "factor": 2.0}, as HF's RoPE
        # scaling docs and tests write it (an illustration, not a shipped checkpoint). No posenc
        # preset: posenc_rope_init dynamic, factor 2, original_max_positions 4096, seq_len.
        "dynamic_llama2_7b_x2": {
            "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 32,
            "max_position_embeddings": 4096, "rope_theta": 10000.0,
            "rope_scaling": {"factor": 2.0, "type": "dynamic"},
        },
    }
