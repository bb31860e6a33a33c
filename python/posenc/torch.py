"""posenc for PyTorch: CPU tensors in and out without copies (float32, bfloat16, float16), and drop-in
replacements for the positional-encoding code people run today, with the same constructor arguments,
forward signatures and state_dict keys, computing every value exactly (correctly rounded float32).

Modules (each documented below; docs/python.md has an example per module):
  PositionalEncoding(d_model, dropout=0.1, max_len=5000)        the PyTorch tutorial's, [seq, batch, d]
  PositionalEncodingBatchFirst(d_model, dropout=0.1, max_len=5000)               [batch, seq, d]
  SinusoidalPositionalEmbedding(embedding_dim, padding_idx, init_size=1024, auto_expand=True)  fairseq main's
  LearnableSinusoidalPositionalEncoding(d_model, dropout=0.1, max_len=5000, d_hid=None,
                                        activation="gelu", batch_first=False)   LSPE: an FFN over the table
  ScaledEmbeddingWithPE(num_embeddings, d_model, max_len=5000, padding_idx=None) emb(tok) * sqrt(d) + pe, fused
  RotaryEmbedding(config, device=None)         HF's LlamaRotaryEmbedding (v5 and v4 configs, Gemma 3's per layer
                                               type): forward(x, position_ids, layer_type=None) -> (cos, sin),
                                               every rope_type; .apply_rotary(q, k, position_ids) rotates in place
  Qwen2VLRotaryEmbedding(config) (= Qwen2_5_VLRotaryEmbedding)   HF's Qwen2-VL / Qwen2.5-VL text M-RoPE:
                                               forward(x, position_ids [3, b, s]) -> cos, sin [3, b, s, head_dim]
  Qwen3VLTextRotaryEmbedding(config)           HF's Qwen3-VL text M-RoPE (interleaved): cos, sin [b, s, head_dim]
  VisionRotaryEmbedding(dim, theta=10000.0)    HF's vision-tower 2-D RoPE: forward((row, col) ids) -> angle table;
                                               HF's float32 op; .exact_angles(ids), .cos_sin(ids),
                                               .apply_rotary(q, k, ids) exact
  HunYuanDenseV1RotaryEmbedding(config) (= HunYuanMoEV1RotaryEmbedding)   HunYuan's NTK-alpha dynamic RoPE
  Ernie4_5_VLMoeTextRotaryEmbedding(config)    ERNIE-4.5-VL's text 3-D RoPE: cos, sin [b, s, head_dim] float32
  OpenPanguVLTextRotaryEmbedding(config)       openPangu-VL's M-RoPE (vLLM's rope_type "openpangu", balanced):
                                               cos, sin [b, s, rotary_dim]
  DeepseekV4RotaryEmbedding(config)            DeepSeek-V4's "main" / "compress" RoPE: cos, sin [b, s, r / 2]
  MiniMaxM3VL3DRotaryEmbedding(head_dim, theta=10000.0, spatial_merge_size=1)   MiniMax-M3-VL's vision 3-D RoPE:
                                               forward(grid_thw, device, dtype) -> cos, sin [N, 3 axis_dim]
  (docs/python.md, "Use it inside transformers": the line that swaps each model family's module)
Functions: table, rows, add, embed, rope_cache, apply_rotary (in place, differentiable: its backward is the
inverse rotation; multi-axis position ids too), apply_rotary_vision, rotate_half / apply_rotary_pos_emb /
apply_multimodal_rotary_pos_emb / apply_rotary_pos_emb_vision (HF's, for the cos/sin path).

Autograd: tables, cos and sin are constants (no gradient). add / the modules' x + pe pass the gradient to x;
embed to the embedding weight; apply_rotary to q and k (the transpose of a rotation is the rotation by the
opposite angle: the same float cos, -sin).
"""
from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Mapping
from typing import Any, Dict, Optional, Tuple, Union

import torch
from torch import Tensor, nn

from . import _posenc as _p
from ._posenc import PAD, Rope, Spec

__all__ = [
    "PositionalEncoding", "PositionalEncodingBatchFirst", "SinusoidalPositionalEmbedding",
    "LearnableSinusoidalPositionalEncoding", "ScaledEmbeddingWithPE", "RotaryEmbedding", "table", "rows", "add",
    "embed", "rope_cache", "apply_rotary", "rotate_half", "apply_rotary_pos_emb", "rope_from_config", "make_positions",
    "Qwen2VLRotaryEmbedding", "Qwen2_5_VLRotaryEmbedding", "Qwen3VLTextRotaryEmbedding", "VisionRotaryEmbedding",
    "Qwen2_5_VisionRotaryEmbedding", "Qwen3VLVisionRotaryEmbedding", "apply_multimodal_rotary_pos_emb",
    "apply_rotary_pos_emb_vision", "apply_rotary_vision", "OpenPanguVLTextRotaryEmbedding",
]

SpecLike = Union[Spec, int]


# ---- tables ------------------------------------------------------------------------------------------------

def table(spec: SpecLike, n: int, first: int = 0, *, dtype: torch.dtype = torch.float32,
          out: Optional[Tensor] = None) -> Tensor:
    """The [n, d_model] table of positions first .. first+n-1 (posenc.table) as a tensor of dtype float32,
    bfloat16 or float16 (out= a preallocated one). A constant: no gradient."""
    if out is None:
        if n < 0:
            return _p.table(spec, n, first)  # raises the C library's InvalidArgument
        d = spec if isinstance(spec, int) else spec.d_model
        out = torch.empty(n, d, dtype=dtype)
    _p.table(spec, n, first, out=out)
    return out


def rows(spec: SpecLike, positions: Tensor, *, dtype: torch.dtype = torch.float32,
         out: Optional[Tensor] = None) -> Tensor:
    """One row per position (posenc.rows) for positions of any shape: the result is positions.shape + (d,).
    posenc.PAD gives a zero row."""
    positions = _positions(positions)
    flat = positions if positions.dim() == 1 else positions.reshape(-1)
    if out is None and dtype != torch.bfloat16:
        # a NumPy result shared as a tensor: the cheapest way to a new tensor for a one-row decode step
        # (torch 1.13 has no uint16, so bfloat16 rows go through out= below)
        res = torch.from_numpy(_p.rows(spec, flat, dtype=dtype))
        return res if positions.dim() == 1 else res.view(*positions.shape, res.size(-1))
    d = spec if isinstance(spec, int) else spec.d_model
    if out is None:
        out = torch.empty(*positions.shape, d, dtype=dtype)
    _p.rows(spec, flat, out=out.view(flat.numel(), d))
    return out


# ---- x + PE ------------------------------------------------------------------------------------------------

class _AddPE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: Tensor, spec: SpecLike, positions: Optional[Tensor], first: int, scale: float,
                seq_first: bool) -> Tensor:
        ctx.scale = scale
        return _add_into(x.detach(), spec, positions, first, scale, seq_first)

    @staticmethod
    def backward(ctx, grad: Tensor):
        g = grad if ctx.scale == 1.0 else grad * ctx.scale
        return g, None, None, None, None, None


def _add_into(x: Tensor, spec: SpecLike, positions: Optional[Tensor], first: int, scale: float,
              seq_first: bool) -> Tensor:
    """x + PE into a new contiguous tensor of x's shape; seq_first: x is [seq, batch, d]."""
    out = torch.empty(x.shape, dtype=torch.float32)
    if seq_first:
        _p.add(spec, x.transpose(0, 1), positions=positions, first=first, scale=scale, out=out.transpose(0, 1))
    else:
        _p.add(spec, x, positions=positions, first=first, scale=scale, out=out)
    return out


def add(x: Tensor, spec: SpecLike, *, positions: Optional[Tensor] = None, first: int = 0,
        scale: float = 1.0, seq_first: bool = False) -> Tensor:
    """fmaf(scale, x, PE(position)) for float32 x of shape [n, d] or [batch, n, d] ([seq, batch, d] with
    seq_first=True), any row and batch strides; positions None (first, first+1, ...), [n] or [batch, n].
    A new contiguous tensor of x's shape; differentiable in x."""
    if torch.is_grad_enabled() and x.requires_grad:
        return _AddPE.apply(x, spec, positions, first, scale, seq_first)
    return _add_into(x.detach(), spec, positions, first, scale, seq_first)


def _exact_table(spec: Spec, n: int, dtype: torch.dtype) -> Tensor:
    """posenc's [n, d] table in dtype: float32 correctly rounded, bfloat16 / float16 posenc's narrow tables (the
    float32 values rounded to the format), float64 the float32 values (posenc has no double tables), as the
    originals' float32 tables converted by .double()."""
    if dtype in (torch.float32, torch.bfloat16, torch.float16):
        return table(spec, n, dtype=dtype)
    return table(spec, n).to(dtype)


class _ExactPE(nn.Module):
    """The buffer ``pe`` filled with posenc's exact table (a state_dict with other values, such as the original
    module's float32 table, is used as loaded). The module's dtype conversions (.double(), .half(), .to(dtype))
    refill the buffer with posenc's table in the new dtype while it holds posenc's table: the same values as the
    conversion, except that a conversion back to float32 (.half().float()) gives the exact table again, not the
    narrow values widened."""

    def _set_table(self, spec: Spec, max_len: int, shape) -> None:
        self.spec = spec
        self.register_buffer("pe", table(spec, max_len).view(*shape))
        self._exact = True

    def _exact_pe(self, dtype: torch.dtype) -> Tensor:
        return _exact_table(self.spec, self.pe.numel() // self.spec.d_model, dtype).view(self.pe.shape)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        self._exact = self.pe.is_floating_point() and not self.pe.is_meta and \
            torch.equal(self.pe.cpu(), self._exact_pe(self.pe.dtype))

    def _apply(self, fn, *args, **kwargs):
        dtype = self.pe.dtype
        out = super()._apply(fn, *args, **kwargs)
        if self._exact and self.pe.dtype != dtype and self.pe.is_floating_point() and not self.pe.is_meta:
            self.pe.copy_(self._exact_pe(self.pe.dtype))
        return out


class PositionalEncoding(_ExactPE):
    """The PyTorch tutorial's PositionalEncoding: buffer ``pe`` [max_len, 1, d_model] (the tutorial's
    interleaved sin/cos, here correctly rounded), ``forward(x)`` with x [seq, batch, d_model] returns
    ``dropout(x + pe[:seq])``, the tutorial's own expression on the exact buffer: its work is one broadcast add,
    which posenc's fused add (PE computed on the fly) does not beat at any batch (the report's Python section),
    and the result's dtype is torch's promotion of x and pe, as the tutorial's (float64 after .double(), x's
    dtype after .half() for a float32 x)."""

    def __init__(self, d_model: int, dropout: float = 0.1, max_len: int = 5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        self._set_table(Spec.vaswani(d_model), max_len, (max_len, 1, d_model))

    def forward(self, x: Tensor) -> Tensor:
        """dropout(x + pe[:seq]) for x [seq, batch, d_model]."""
        return self.dropout(x + self.pe[: x.size(0)])


class PositionalEncodingBatchFirst(_ExactPE):
    """The batch-first variant: buffer ``pe`` [1, max_len, d_model]; x [batch, seq, d_model];
    ``dropout(x + pe[:, :seq])``, the original expression on the exact buffer (one broadcast add, which PyTorch
    spreads over its threads; posenc.torch.add, the fused add with the PE computed on the fly, is there for
    callers who want no table)."""

    def __init__(self, d_model: int, dropout: float = 0.1, max_len: int = 5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        self._set_table(Spec.vaswani(d_model), max_len, (1, max_len, d_model))

    def forward(self, x: Tensor) -> Tensor:
        """dropout(x + pe[:, :seq]) for x [batch, seq, d_model]."""
        return self.dropout(x + self.pe[:, : x.size(1)])


# ---- fairseq -----------------------------------------------------------------------------------------------

def make_positions(tensor: Tensor, padding_idx: int, onnx_trace: bool = False) -> Tensor:
    """fairseq's utils.make_positions: padding_idx + 1 + the running count of non-pad tokens; pads keep
    padding_idx (int64). The same values in four ops (fairseq's int32 casts serve ONNX and XLA)."""
    if onnx_trace:
        mask = tensor.ne(padding_idx).int()
        return (torch.cumsum(mask, dim=1).type_as(mask) * mask).long() + padding_idx
    mask = tensor.ne(padding_idx)
    return torch.cumsum(mask, dim=1).mul_(mask).add_(padding_idx)


class SinusoidalPositionalEmbedding(nn.Module):
    """fairseq's SinusoidalPositionalEmbedding at its main branch (and v0.12.3's, whose checkpoints load): sin|cos
    halves, frequencies 1e4^(-i/(h-1)), a zero column for an odd dim, zeros at padding_idx, here correctly
    rounded. ``SinusoidalPositionalEmbedding(embedding_dim, padding_idx, init_size=1024, auto_expand=True)``;
    ``weights``: the table, a non-persistent buffer (it follows .to(), .double(), .half(), refilled with posenc's
    table in the new dtype, so .half().float() is exact again), so the state_dict is empty as main's, and a v0.12.3
    checkpoint's ``_float_tensor`` and an old ``weights`` key are dropped on load as main drops them.
    ``forward(input, incremental_state=None, timestep=None, positions=None)`` maps tokens [bsz, seq] to
    [bsz, seq, dim] by make_positions (padding_idx + 1 + the count of non-pad tokens; ``positions`` is ignored,
    as fairseq ignores it) and the table's rows, the work fairseq does: one index_select, handed to PyTorch (a
    gather posenc cannot beat by recomputing the rows), after make_positions in four ops instead of seven. With
    incremental_state, the row of position timestep + 1 (or seq), [bsz, 1, dim]. Past the table the rows are
    made exactly (posenc.table) and kept when auto_expand, as main does. prepare_for_onnx_export_() switches to
    fairseq's traceable expressions."""

    def __init__(self, embedding_dim: int, padding_idx: Optional[int], init_size: int = 1024,
                 auto_expand: bool = True):
        super().__init__()
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx if padding_idx is not None else 0
        self._zero_pad = padding_idx  # fairseq zeroes the row only for a given padding_idx
        self.spec = Spec.fairseq(embedding_dim)
        self.register_buffer("weights", SinusoidalPositionalEmbedding.get_embedding(init_size, embedding_dim,
                                                                                     padding_idx), persistent=False)
        self.max_positions = int(1e5)
        self.auto_expand = auto_expand
        self.onnx_trace = False
        self._exact = True

    def prepare_for_onnx_export_(self) -> None:
        """fairseq's switch to the ONNX-traceable expressions of forward (onnx_trace = True)."""
        self.onnx_trace = True

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        for key in ("weights", "_float_tensor"):  # v0.12.3's and older checkpoints' keys, as main drops them
            state_dict.pop(prefix + key, None)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def _table(self, n: int, dtype: torch.dtype) -> Tensor:
        emb = _exact_table(self.spec, n, dtype)
        if self._zero_pad is not None:
            emb[self._zero_pad, :] = 0
        return emb

    def _apply(self, fn, *args, **kwargs):
        dtype = self.weights.dtype
        out = super()._apply(fn, *args, **kwargs)
        w = self.weights
        if self._exact and w.dtype != dtype and w.is_floating_point() and not w.is_meta:
            w.copy_(self._table(w.size(0), w.dtype))
        return out

    @staticmethod
    def get_embedding(num_embeddings: int, embedding_dim: int, padding_idx: Optional[int] = None) -> Tensor:
        """fairseq's table of num_embeddings rows (row p is position p), exact."""
        emb = table(Spec.fairseq(embedding_dim), num_embeddings)
        if padding_idx is not None:
            emb[padding_idx, :] = 0
        return emb

    def forward(self, input: Tensor, incremental_state: Optional[Any] = None, timestep: Optional[Tensor] = None,
                positions: Optional[Any] = None) -> Tensor:
        """Tokens [bsz, seq] -> [bsz, seq, dim]; with incremental_state, the row of position timestep + 1
        (or seq), [bsz, 1, dim]."""
        bsz, seq_len = input.size(0), input.size(1)
        max_pos = self.padding_idx + 1 + seq_len
        weights = self.weights
        if max_pos > weights.size(0):
            # the rows past the table, exact; kept only with auto_expand (main: mutating a module's buffer may
            # trouble threads)
            weights = self._table(max_pos, weights.dtype).to(weights.device)
            if self.auto_expand:
                self.weights = weights
        if incremental_state is not None:
            pos = timestep.view(-1)[0] + 1 if timestep is not None else seq_len
            if self.onnx_trace:
                return weights.index_select(index=self.padding_idx + pos, dim=0).unsqueeze(1).repeat(bsz, 1, 1)
            p = self.padding_idx + int(pos)
            if p >= weights.size(0):  # fairseq would index past its table; the row is computed instead
                return self._table(p + 1, weights.dtype)[p].to(weights.device).expand(bsz, 1, -1)
            return weights[p, :].expand(bsz, 1, -1)
        positions = make_positions(input, self.padding_idx, onnx_trace=self.onnx_trace)
        if self.onnx_trace:
            import torch.onnx.operators

            flat = weights.detach().index_select(0, positions.view(-1))
            shape = torch.cat((torch.tensor([bsz]), torch.tensor([seq_len]), torch.tensor([-1], dtype=torch.long)))
            return torch.onnx.operators.reshape_from_tensor_shape(flat, shape)
        return weights.index_select(0, positions.view(-1)).view(bsz, seq_len, -1).detach()


# ---- LSPE --------------------------------------------------------------------------------------------------

_ACTIVATIONS = {"gelu": nn.GELU, "relu": nn.ReLU, "sigmoid": nn.Sigmoid, "tanh": nn.Tanh, "silu": nn.SiLU}


class LearnableSinusoidalPositionalEncoding(nn.Module):
    """LSPE (Wang et al., Findings of AACL 2022): ``ffn = Linear(d_model, d_hid) -> activation ->
    Linear(d_hid, d_model)`` (trainable) over the exact sinusoidal table ``pe`` [max_len, d_model] (a buffer,
    no gradient); ``forward(x) = dropout(x + ffn(pe[:seq]))`` with x [seq, batch, d] (or [batch, seq, d] with
    batch_first). Gradients reach x and the FFN."""

    def __init__(self, d_model: int, dropout: float = 0.1, max_len: int = 5000, d_hid: Optional[int] = None,
                 activation: str = "gelu", batch_first: bool = False):
        super().__init__()
        d_hid = d_model if d_hid is None else d_hid
        self.d_model = d_model
        self.batch_first = batch_first
        self.dropout = nn.Dropout(p=dropout)
        self.ffn = nn.Sequential(nn.Linear(d_model, d_hid), _ACTIVATIONS[activation](), nn.Linear(d_hid, d_model))
        self.register_buffer("pe", table(Spec.vaswani(d_model), max_len))

    def position_encoding(self, seq_len: int) -> Tensor:
        """The learned encoding of positions 0 .. seq_len - 1, [seq_len, d_model]."""
        return self.ffn(self.pe[:seq_len])

    def forward(self, x: Tensor) -> Tensor:
        """dropout(x + ffn(pe[:seq])), broadcast over the batch."""
        if self.batch_first:
            x = x + self.position_encoding(x.size(1)).unsqueeze(0)
        else:
            x = x + self.position_encoding(x.size(0)).unsqueeze(1)
        return self.dropout(x)


# ---- embedding + PE ----------------------------------------------------------------------------------------

class _Embed(torch.autograd.Function):
    @staticmethod
    def forward(ctx, weight: Tensor, tokens: Tensor, spec: SpecLike, scale: float, positions: Optional[Tensor],
                first: int, padding_idx: Optional[int]) -> Tensor:
        w = weight.detach()
        d = w.size(1)
        out = torch.empty(*tokens.shape, d, dtype=torch.float32)
        _p.embed(spec, w, tokens, positions=positions, first=first, scale=scale, out=out)
        ctx.save_for_backward(tokens)
        ctx.scale, ctx.padding_idx, ctx.weight_shape, ctx.weight_dtype = scale, padding_idx, w.shape, w.dtype
        return out

    @staticmethod
    def backward(ctx, grad: Tensor):
        (tokens,) = ctx.saved_tensors
        g = grad.reshape(-1, ctx.weight_shape[1]) * ctx.scale
        ids = tokens.reshape(-1).long()
        if ctx.padding_idx is not None:
            g = g * ids.ne(ctx.padding_idx).unsqueeze(1)
        gw = torch.zeros(ctx.weight_shape, dtype=torch.float32).index_add_(0, ids, g)
        return gw.to(ctx.weight_dtype), None, None, None, None, None, None


def embed(tokens: Tensor, weight: Tensor, spec: SpecLike, *, scale: float = 1.0, positions: Optional[Tensor] = None,
          first: int = 0, padding_idx: Optional[int] = None) -> Tensor:
    """The fused embedding fmaf(scale, weight[tokens], PE(position)) (posenc.embed), float32 [*tokens.shape, d];
    weight float32, bfloat16 or float16 [vocab, d]. Differentiable in weight (padding_idx rows get no gradient,
    as nn.Embedding's)."""
    if torch.is_grad_enabled() and weight.requires_grad:
        return _Embed.apply(weight, tokens, spec, scale, positions, first, padding_idx)
    out = torch.empty(*tokens.shape, weight.size(1), dtype=torch.float32)
    return _p.embed(spec, weight.detach(), tokens, positions=positions, first=first, scale=scale, out=out)


class ScaledEmbeddingWithPE(nn.Module):
    """``nn.Embedding(num_embeddings, d_model, padding_idx)`` then ``* sqrt(d_model) + pe[:seq]``, fused into
    one pass (no PE table is read): tokens [batch, seq] or [seq] -> float32 [..., d_model]. The scale is
    math.sqrt(d_model) rounded to float32 and the result one fmaf per element (the original rounds the product
    and the sum). max_len bounds the positions as the original's table does."""

    def __init__(self, num_embeddings: int, d_model: int, max_len: int = 5000, padding_idx: Optional[int] = None):
        super().__init__()
        self.embedding = nn.Embedding(num_embeddings, d_model, padding_idx=padding_idx)
        self.spec = Spec.vaswani(d_model)
        self.max_len = max_len
        self.scale = math.sqrt(d_model)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        # the original's checkpoint carries its float32 table "pe"; the fused kernel computes it exactly
        state_dict.pop(prefix + "pe", None)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def forward(self, tokens: Tensor) -> Tensor:
        """sqrt(d_model) * embedding(tokens) + PE(0 .. seq-1), fused: [..., seq] -> float32 [..., seq, d_model]."""
        if tokens.size(-1) > self.max_len:
            raise IndexError("sequence of %d tokens is longer than max_len %d" % (tokens.size(-1), self.max_len))
        return embed(tokens, self.embedding.weight, self.spec, scale=self.scale,
                     padding_idx=self.embedding.padding_idx)


# ---- rotary embeddings -------------------------------------------------------------------------------------
#
# Config formats (docs/python.md, "Conformance"): a config with ``rope_parameters`` is read as transformers v5
# reads it (modeling_rope_utils.py's RotaryEmbeddingConfigMixin.standardize_rope_params and the rope init
# functions), one with ``rope_scaling`` (or neither) as v4.57 reads it. Where the two disagree the config's own
# format decides. A shape neither version reads the same way raises ValueError naming the key.

_SCALED = ("llama3", "yarn", "longrope")
# The keys transformers' init function of each rope_type reads (besides those every type may carry, _EVERY).
# Others, vLLM's "alpha" for dynamic or "short_mscale" for longrope among them, transformers ignores with a
# warning ("Unrecognized keys"): so does RotaryEmbedding, where posenc.rope_init alone refuses vLLM's keys by
# name (docs/rope.md, "The keys of a scaling dict").
_HF_READS = {name: tuple(row["transformers"]) for name, row in _p.rope_types().items()
             if row["transformers"] is not None}  # each rope type's one definition (posenc_rope_type_keys)
_EVERY = ("rope_type", "type", "rope_theta", "partial_rotary_factor", "mrope_section", "mrope_interleaved",
          "max_position_embeddings", "original_max_position_embeddings", "seq_len", "truncate")
_DEFAULT_THETA = 10000.0  # HF's RotaryEmbeddingConfigMixin.default_theta (v5) / LlamaConfig's rope_theta (v4)


def _get(config: Any, name: str, default: Any = None) -> Any:
    v = config.get(name, default) if isinstance(config, dict) else getattr(config, name, default)
    return default if v is None else v


def _rope_dict(config: Any, key: str) -> Optional[Dict[str, Any]]:
    v = _get(config, key)
    if v is None:
        return None
    if not isinstance(v, Mapping):
        raise ValueError("%s: expected a dict of RoPE parameters, got %s" % (key, type(v).__name__))
    return dict(v)


def _is_v5(config: Any) -> bool:
    """transformers v5's format: the config carries rope_parameters (v4.57 and before: rope_scaling)."""
    return _get(config, "rope_parameters") is not None


_DSV4_LABELS = ("main", "compress")


def _is_dsv4(config: Any) -> bool:
    """DeepSeek-V4's config (transformers 5.12.1's DeepseekV4Config, or its config.json as a dict): RoPE
    parameters keyed by the labels "main" / "compress", not by layer type."""
    labels = _get(config, "_rope_type_labels")
    return _get(config, "model_type") == "deepseek_v4" or (labels is not None and tuple(labels) == _DSV4_LABELS)


def _dsv4_view(config: Any) -> Any:
    """A DeepSeek-V4 config as DeepseekV4Config.__post_init__ leaves it (transformers 5.12.1's
    configuration_deepseek_v4.py): rope_parameters {"main": default RoPE at rope_theta, "compress": the
    config's rope_scaling / flat rope_parameters at compress_rope_theta, yarn with attention_factor 1 unless
    given}, both with partial_rotary_factor = qk_rope_head_dim / head_dim (default 64 / 512). A config already
    nested (a DeepseekV4Config object) is returned as it is; anything else too."""
    if not _is_dsv4(config):
        return config
    rp = _get(config, "rope_parameters")
    if isinstance(rp, Mapping) and isinstance(rp.get("main"), Mapping) and isinstance(rp.get("compress"), Mapping):
        return config
    d = dict(config) if isinstance(config, Mapping) else dict(vars(config))
    head_dim = int(d.get("head_dim") or 512)
    prf = d.get("partial_rotary_factor")
    if prf is None:
        qk = d.get("qk_rope_head_dim")
        prf = qk / head_dim if qk is not None else 64 / 512
    flat = dict(rp) if isinstance(rp, Mapping) else dict(d.get("rope_scaling") or {})
    flat = {k: v for k, v in flat.items() if k not in _DSV4_LABELS}
    if "type" in flat and "rope_type" not in flat:  # transformers' rope_scaling -> rope_parameters conversion
        flat["rope_type"] = flat["type"]
    main = {"rope_type": "default", "rope_theta": d.get("rope_theta", 10000.0), "partial_rotary_factor": prf}
    compress = dict(flat, rope_theta=d.get("compress_rope_theta", 160000.0), partial_rotary_factor=prf)
    compress.setdefault("rope_type", "default")
    if compress["rope_type"] == "yarn":
        compress.setdefault("attention_factor", 1.0)
    d.pop("rope_scaling", None)
    d.update(rope_parameters={"main": main, "compress": compress}, partial_rotary_factor=prf, head_dim=head_dim,
             _rope_type_labels=_DSV4_LABELS)
    return d


def _layer_types(config: Any) -> Optional[list]:
    """The per-layer-type RoPE parameters' keys, as v5's standardize_rope_params finds them (a config's
    _rope_type_labels, else its layer_types), or None when rope_parameters is one global dict. DeepSeek-V4's
    labels "main" / "compress": its rotary takes the keys whose values are dicts (the config's standardisation
    leaves rope_type / rope_theta beside them)."""
    config = _dsv4_view(config)
    rp = _rope_dict(config, "rope_parameters")
    if not rp:
        return None
    if _is_dsv4(config):
        return [k for k in _DSV4_LABELS if isinstance(rp.get(k), Mapping)]
    labels = _get(config, "_rope_type_labels") or _get(config, "layer_types")
    if labels is not None and set(rp) <= set(labels):
        return sorted(set(labels))
    for key, value in rp.items():
        if isinstance(value, dict):
            raise ValueError(
                "rope_parameters[%r]: a dict of parameters per layer type needs the config's layer_types to list "
                "every key of rope_parameters (transformers v5 reads it as one global dict otherwise, with default "
                "RoPE); this config's layer_types: %s" % (key, labels))
    return None


def _layer_config(config: Any, layer_type: str) -> Tuple[Any, bool]:
    """The config a layer type's RoPE is read from, and whether the config has transformers v5.15's per-layer
    view. v5.15 keeps the attributes that differ between layers in per_layer_config (Gemma 4: global_head_dim
    becomes the full-attention layers' head_dim) and raises on a read of them from the whole config; its init
    functions and Gemma 4's rotary read config.per_layer_config[layer_type] instead, a copy with that type's
    overrides. Where the view raises ValueError (a type no layer has, or whose layers differ) the init functions
    read the whole config, whose per-layer attributes then raise. v5.14's view takes layer indices only (a
    TypeError for a name), and v5.14 reads nothing per layer. A dict (v5.15's config.json, or an object made
    from one) holds the overrides under per_layer_config, keyed by layer index; layers of one type that differ
    there are a ValueError, since the dict's global values would be read without complaint."""
    per_layer = _get(config, "per_layer_config")
    if per_layer is None:
        return config, False
    if not isinstance(per_layer, Mapping):  # an HF config's view
        try:
            return per_layer[layer_type], True
        except TypeError:
            return config, False
        except ValueError:
            return config, True
    if not isinstance(config, Mapping):
        config = dict(vars(config))
    types = config.get("layer_types") or ()
    if layer_type not in types:
        return config, True
    # as v5.15: an override equal to the config's own value is no override; the layers of one type must agree
    overrides = {int(i): {k: v for k, v in o.items() if k not in config or config[k] != v}
                 for i, o in per_layer.items()}
    layers = [i for i, t in enumerate(types) if t == layer_type]
    for i in layers[1:]:
        if overrides.get(i, {}) != overrides.get(layers[0], {}):
            raise ValueError("per_layer_config: layers %d and %d are both %r and differ (%s, %s); transformers "
                             "v5.15 reads one config per layer type" % (
                                 layers[0], i, layer_type, overrides.get(layers[0], {}), overrides.get(i, {})))
    layer = {k: v for k, v in config.items() if k != "per_layer_config"}
    layer.update(overrides.get(layers[0], {}))
    return layer, True


def _scaling(config: Any) -> Dict[str, Any]:
    """The config's global RoPE dict: rope_parameters (v5) or rope_scaling (v4), a copy ({} when none)."""
    return dict((_rope_dict(config, "rope_parameters") if _is_v5(config) else _rope_dict(config, "rope_scaling"))
                or {})


def _rope_type(rs: Dict[str, Any]) -> str:
    t = rs.get("rope_type", rs.get("type")) or "default"
    return "longrope" if t == "su" else t


def _head_dim_or(config: Any, key: str, what: str) -> int:
    """HF's ``getattr(config, key, None) or hidden_size // num_attention_heads`` (v5's head_dim_key), or a
    ValueError naming what asked when the config has neither."""
    hd = _get(config, key)
    if hd:
        return int(hd)
    hidden, heads = _get(config, "hidden_size"), _get(config, "num_attention_heads")
    if not hidden or not heads:
        raise ValueError("%s: the config has neither %s nor hidden_size and num_attention_heads" % (what, key))
    return int(hidden) // int(heads)


def _head_dim(config: Any) -> int:
    """HF's head_dim: config.head_dim, else hidden_size // num_attention_heads. DeepSeek's config classes set
    head_dim = qk_rope_head_dim (the rotary part of MLA's heads), which a config.json carries only as
    qk_rope_head_dim."""
    hd, qk = _get(config, "head_dim"), _get(config, "qk_rope_head_dim")
    if qk is not None:
        if hd is not None and int(hd) != int(qk):
            raise ValueError("head_dim %s and qk_rope_head_dim %s: HF's DeepSeek configs set head_dim to "
                             "qk_rope_head_dim, the rotary width; which one rotates is ambiguous here" % (hd, qk))
        return int(qk)
    if hd:
        return int(hd)
    hidden, heads = _get(config, "hidden_size"), _get(config, "num_attention_heads")
    if hidden is None or heads is None:
        raise ValueError("head_dim: the config has none, nor hidden_size and num_attention_heads to derive it")
    return int(hidden) // int(heads)


def _resolve(config: Any, layer_type: Optional[str] = None) -> Dict[str, Any]:
    """The RoPE of a config (of one layer type) as its transformers version computes it: rope_type, rotary_dim,
    base, the scaling dict for posenc.rope_init (factor and original length resolved), max_position_embeddings
    and the longrope switch length."""
    per_layer = False
    config = _dsv4_view(config)
    dsv4 = _is_dsv4(config)
    if layer_type is not None and _is_v5(config):
        config, per_layer = _layer_config(config, layer_type)
    max_pos = _get(config, "max_position_embeddings")
    top_original = _get(config, "original_max_position_embeddings")
    top_prf = _get(config, "partial_rotary_factor")
    if _is_v5(config):
        outer = _rope_dict(config, "rope_parameters")
        if layer_type is None:
            rs = dict(outer)
        else:
            if layer_type not in outer or outer[layer_type] is None:
                raise ValueError("layer_type %r: rope_parameters has parameters for %s" % (
                    layer_type, sorted(k for k, v in outer.items() if v is not None)))
            rs = dict(outer[layer_type])
        kind = _rope_type(rs)
        base = rs.get("rope_theta") or _get(config, "rope_theta") or _DEFAULT_THETA
        # standardize_rope_params: a top-level partial_rotary_factor replaces the dict's; the init functions then
        # read the dict's
        prf = top_prf if top_prf is not None else rs.get("partial_rotary_factor")
        original = rs.get("original_max_position_embeddings")
        if kind in _SCALED and layer_type is None and top_original is not None:
            original = top_original  # standardize_rope_params: the top-level value wins (Phi-3)
        original = original or max_pos
        factor = rs.get("factor")
        if kind in ("yarn", "longrope") and factor is None and max_pos and original:
            factor = max_pos / original  # v5: a missing factor is the ratio of the lengths
        truncate = outer.get("truncate", True)  # v5's yarn reads config.rope_parameters, the outer dict
        switch = original
    else:
        if layer_type is not None:
            raise ValueError("layer_type %r: this config has no per-layer-type rope_parameters (transformers v4 "
                             "builds one rotary module per set of parameters)" % (layer_type,))
        rs = dict(_rope_dict(config, "rope_scaling") or {})
        for key in ("rope_theta", "partial_rotary_factor"):
            if rs.get(key) is not None and rs[key] != _get(config, key):
                raise ValueError(
                    "rope_scaling[%r] = %r: transformers v4 reads %s from the top level of the config (here %r) and "
                    "ignores it in rope_scaling; put it there, or use v5's rope_parameters" % (
                        key, rs[key], key, _get(config, key)))
        kind = _rope_type(rs)
        base = _get(config, "rope_theta") or _DEFAULT_THETA
        prf = top_prf
        factor = rs.get("factor")
        original = max_pos
        switch = max_pos
        if kind in ("linear", "dynamic", "yarn", "llama3") and factor is None:
            raise ValueError("rope_scaling['factor']: rope_type %r needs it (transformers v4 reads "
                             "rope_scaling['factor'])" % kind)
        if kind == "yarn":
            original = rs.get("original_max_position_embeddings") or max_pos
        elif kind == "llama3":
            original = rs.get("original_max_position_embeddings")
            if original is None:
                raise ValueError("rope_scaling['original_max_position_embeddings']: llama3 needs it")
        elif kind == "longrope":
            if top_original is not None:
                # v4.57: Phi-3's top-level original length, and factor = max_position_embeddings / it
                original = switch = top_original
                factor = max_pos / top_original
            elif factor is None and rs.get("attention_factor") is None:
                raise ValueError("rope_scaling['factor']: longrope without a top-level "
                                 "original_max_position_embeddings needs it (transformers v4)")
        truncate = rs.get("truncate", True)
    scaling = {k: v for k, v in rs.items() if k not in ("type", "rope_theta", "partial_rotary_factor")}
    if kind not in _HF_READS:  # transformers' ROPE_INIT_FUNCTIONS has no such key (vLLM's names among them)
        raise ValueError("rope_type %r: not one of transformers' rope types (%s); posenc.rope_init takes vLLM's "
                         "schemes" % (kind, ", ".join(sorted(_HF_READS))))
    if kind in _HF_READS:
        ignored = sorted(k for k in scaling if k not in _HF_READS[kind] and k not in _EVERY)
        if ignored:
            warnings.warn("rope_parameters: keys that transformers' rope_type %r does not read: %s (ignored, as "
                          "transformers ignores them with a warning)" % (kind, ", ".join(ignored)), stacklevel=4)
            scaling = {k: v for k, v in scaling.items() if k not in ignored}
    scaling["rope_type"] = kind
    scaling["truncate"] = truncate
    if factor is not None:
        scaling["factor"] = factor
    if original:
        scaling["original_max_position_embeddings"] = original
    if kind == "proportional":
        if not _is_v5(config):
            raise ValueError("rope_type 'proportional' (Gemma 4) is transformers v5's: give the config's "
                             "rope_parameters, not rope_scaling")
        # v5 _compute_proportional_rope_parameters: the whole head rotates, int(p * head_dim // 2) of its pairs
        # with a frequency; Gemma 4's full-attention layers read global_head_dim (head_dim_key), and without
        # it, as HF's `or`, hidden_size // num_attention_heads. v5.15 has no global_head_dim: the layer type's
        # config (_layer_config) carries the full-attention layers' width as its head_dim.
        key = "global_head_dim" if layer_type == "full_attention" and not per_layer else "head_dim"
        scaling["partial_rotary_factor"] = 1.0 if prf is None else float(prf)
        rotary_dim = _head_dim_or(config, key, "rope_type 'proportional'")
    elif dsv4:
        # DeepSeek-V4: head_dim is the whole 512-wide head and qk_rope_head_dim (a runtime attribute of its config)
        # the rotary part; transformers' init functions take int(head_dim * partial_rotary_factor)
        rotary_dim = int(_head_dim_or(config, "head_dim", "DeepSeek-V4's RoPE") * (1.0 if prf is None else prf))
    else:
        rotary_dim = int(_head_dim(config) * (1.0 if prf is None else prf))
    return {"format": "v5" if _is_v5(config) else "v4", "rope_type": kind, "rotary_dim": rotary_dim,
            "base": float(base), "scaling": scaling, "max_pos": max_pos, "original": original, "switch": switch}


def _init_rope(plan: Dict[str, Any], seq_len: Optional[int] = None, pairs: str = "halves") -> Rope:
    return _p.rope_init(plan["rotary_dim"], plan["base"], dict(plan["scaling"]), pairs=pairs,
                        max_position_embeddings=plan["max_pos"], original_max_position_embeddings=plan["original"],
                        seq_len=seq_len)


_PAIR_KEYS = {None: "rope_interleave", "attention": "rope_interleave", "indexer": "indexer_rope_interleave"}


def _config_pairs(config: Any, pairs: Optional[str], module: Optional[str]) -> str:
    """The pairing of a config's RoPE for posenc's core API: the caller's pairs, checked against the config's own
    switch where it has one (rope_interleave of DeepSeek-V2/V3 and GLM-5's MLA, indexer_rope_interleave of the
    DSA indexer: true = GPT-J pairs (2i, 2i + 1), false = halves, as vLLM reads them); DeepSeek-V4's pairs are
    GPT-J's always. A switch that is not a bool, or pairs that contradict it, raise ValueError naming the key."""
    if module not in _PAIR_KEYS:
        raise ValueError("module %r: one of None / 'attention' (the attention's RoPE) or 'indexer' (the DSA "
                         "indexer's, GLM-5 / DeepSeek-V3.2)" % (module,))
    key = _PAIR_KEYS[module]
    if _is_dsv4(config):
        want: Optional[str] = "interleaved"  # transformers' and vLLM's V4: GPT-J pairs on the trailing dims
        where = "DeepSeek-V4's RoPE (GPT-J pairs in transformers' and vLLM's code)"
    else:
        flag = _get(config, key)
        if module == "indexer" and flag is None and _get(config, "index_head_dim") is None:
            raise ValueError("module 'indexer': this config has no DSA indexer (no indexer_rope_interleave, no "
                             "index_head_dim)")
        if flag is not None and not isinstance(flag, bool):
            raise ValueError("%s: %r is not a bool (true: GPT-J pairs, false: halves)" % (key, flag))
        if flag is None and module == "indexer":
            want = "halves"  # transformers' GLM-5 indexer always, vLLM's default false
        elif flag is None:
            # MLA (a kv_lora_rank: DeepSeek-V2/V3/V3.2, GLM-5) without the key: GPT-J pairs, as vLLM reads it
            # (getattr(config, "rope_interleave", True)), transformers' DeepseekV3Config defaults it and GLM-5's MLA
            # rotates always; any other config has no switch
            want = "interleaved" if _get(config, "kv_lora_rank") is not None else None
        else:
            want = "interleaved" if flag else "halves"
        where = "the config's %s = %s" % (key, "absent" if flag is None else str(flag).lower())
    if pairs is None:
        return want or "halves"
    given = _p.Rope(2, pairs=pairs).pairs.name.lower()  # "neox", "GPTJ", 1, RopePairs...: the binding's reading
    if want is not None and given != want:
        raise ValueError("pairs=%r contradicts %s, which asks for %r pairs" % (pairs, where, want))
    return pairs


def rope_from_config(config: Any, seq_len: Optional[int] = None, pairs: Optional[str] = None,
                     layer_type: Optional[str] = None, module: Optional[str] = None) -> Rope:
    """The posenc.Rope of an HF model config (a dict or an object with attributes), of one layer type for v5's
    per-layer-type rope_parameters (Gemma 3; DeepSeek-V4's "main" / "compress"), for the current seq_len of the
    dynamic and longrope types. A config with rope_parameters is read as transformers v5 reads it, one with
    rope_scaling (or neither) as v4.57 does (docs/python.md, "Conformance"). Each frequency and the attention
    factor are the correctly rounded values of HF's formulas (posenc.rope_init).

    pairs: None takes them from the config: rope_interleave (DeepSeek-V2/V3, GLM-5's MLA) true gives GPT-J
    pairs ("interleaved"), false halves, absent GPT-J for an MLA config (one with kv_lora_rank, as vLLM reads it)
    and halves for any other; module="indexer" reads indexer_rope_interleave instead (the DSA indexer of GLM-5 /
    DeepSeek-V3.2; absent: halves); DeepSeek-V4 is GPT-J's. Explicit pairs that contradict the
    config's switch raise ValueError naming it (docs/python.md, "Which runtime's convention")."""
    config = _dsv4_view(config)
    return _init_rope(_resolve(config, layer_type), seq_len, _config_pairs(config, pairs, module))


class _RopeState:
    """One set of RoPE parameters of a RotaryEmbedding (the config's, or one layer type's) and its runtime state
    (HF's dynamic_rope_update)."""

    def __init__(self, config: Any, layer_type: Optional[str]):
        self.plan = _resolve(config, layer_type)
        self.rope_type = self.plan["rope_type"]
        self.original_rope = self.rope = _init_rope(self.plan)
        self.long_rope: Optional[Rope] = None
        self.max_seq_len_cached = self.plan["max_pos"]

    def update(self, seq_len: int, original_max_seq_len: Optional[int]) -> bool:
        """HF's dynamic / longrope update for max(position_ids) + 1 = seq_len; True when the rope changed."""
        before = self.rope
        if "dynamic" in self.rope_type:
            if self.max_seq_len_cached is not None and seq_len > self.max_seq_len_cached:  # growth
                self.rope = _init_rope(self.plan, seq_len)
                self.max_seq_len_cached = seq_len
            if original_max_seq_len is not None and seq_len < original_max_seq_len < self.max_seq_len_cached:
                self.rope = self.original_rope  # reset
                self.max_seq_len_cached = original_max_seq_len
        elif self.rope_type == "longrope":
            if seq_len > self.plan["switch"]:
                if self.long_rope is None:
                    self.long_rope = _init_rope(self.plan, self.plan["switch"] + 1)
                self.rope = self.long_rope
            else:
                self.rope = self.original_rope
        return self.rope is not before


_LEGACY_ARGS = ("dim", "max_position_embeddings", "base", "device", "scaling_factor", "rope_type", "config")


def _rotary_args(args: tuple, kwargs: dict) -> Tuple[Any, Any]:
    """(config, device) from HF's signatures: (config, device=None) of v4.46+ and v5, or v4.45's
    (dim=None, max_position_embeddings=2048, base=10000, device=None, scaling_factor=1.0, rope_type="default",
    config=None), chosen by an int (or dim=) first."""
    first_int = bool(args) and isinstance(args[0], int) and not isinstance(args[0], bool)
    if first_int or "dim" in kwargs:
        v = {"dim": None, "max_position_embeddings": 2048, "base": 10000, "device": None, "scaling_factor": 1.0,
             "rope_type": "default", "config": None}
        names = _LEGACY_ARGS
    else:
        v = {"config": None, "device": None, "layer_type": None}
        names = ("config", "device")
    if len(args) > len(names):
        raise TypeError("RotaryEmbedding takes at most %d positional arguments (%s), got %d"
                        % (len(names), ", ".join(names), len(args)))
    v.update(zip(names, args))
    for key, value in kwargs.items():
        if key not in v:
            raise TypeError("RotaryEmbedding got an unexpected keyword argument %r" % key)
        if key in names[:len(args)]:
            raise TypeError("RotaryEmbedding got multiple values for argument %r" % key)
        v[key] = value
    if v["config"] is None and names is _LEGACY_ARGS:
        if v["dim"] is None:
            raise TypeError("RotaryEmbedding: dim (or a config) is required")
        rs = None if v["rope_type"] == "default" else {"rope_type": v["rope_type"], "factor": v["scaling_factor"]}
        v["config"] = {"head_dim": v["dim"], "rope_theta": v["base"], "rope_scaling": rs,
                       "max_position_embeddings": v["max_position_embeddings"]}
    if v["config"] is None:
        raise TypeError("RotaryEmbedding: a config (an HF config object or a dict) is required")
    return v["config"], v["device"]


def _float_table(values: Any, device: Any) -> Tensor:
    t = torch.tensor(list(values), dtype=torch.float64).float()
    return t if device is None else t.to(device)


def _inv_freq(rope: Rope) -> list:
    if rope.freq is not None:
        return list(rope.freq)
    return [rope.base ** (-2.0 * i / rope.rotary_dim) for i in range(rope.rotary_dim // 2)]


class RotaryEmbedding(nn.Module):
    """HF transformers' rotary embedding (LlamaRotaryEmbedding and the models that share it, Gemma 3's per
    layer type), exact: ``RotaryEmbedding(config, device=None)``, ``forward(x, position_ids, layer_type=None)`` ->
    ``(cos, sin)``, each [batch, seq, rotary_dim] in x.dtype on x.device (cos_i and sin_i twice, as HF's
    ``cat(freqs, freqs)``, times the attention scaling), for every rope_type (default, linear, dynamic, yarn,
    llama3, longrope) with HF's runtime updates (dynamic: recomputed when the sequence grows past the cached
    length, reset below max_position_embeddings; longrope: the long factors while max(position_ids) + 1 exceeds
    the original length). A config with ``rope_parameters`` is read as transformers v5 reads it, one with
    ``rope_scaling`` as v4.57 does; v5's per-layer-type rope_parameters (keyed by the config's layer_types)
    give one set of frequencies per layer type, chosen by ``layer_type`` (v5's Gemma 3), with HF's buffers
    ``{layer_type}_inv_freq``, each read from ``config.per_layer_config[layer_type]`` where the config has
    v5.15's per-layer view (Gemma 4). Position ids may be integers or floats (integer-valued floats take the
    exact path; fractional ones are evaluated in double precision). The buffer ``inv_freq`` is placed on
    ``device``, "meta" included, and ``original_inv_freq`` is a buffer too for a v5 config, a plain attribute
    naming the ``inv_freq`` tensor for a v4 one (as v4.57); the values always come from posenc's CPU kernels. Use the result with apply_rotary_pos_emb(q, k, cos, sin), or rotate q and k in place, fused, with
    ``self.apply_rotary(q, k, position_ids)``.

    The v4.45 signature RotaryEmbedding(dim, max_position_embeddings=2048, base=10000, device=None,
    scaling_factor=1.0, rope_type="default", config=None) is accepted too (a first argument that is an int)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__()
        config, device = _rotary_args(args, kwargs)
        self.config = config
        self.max_seq_len_cached = _get(config, "max_position_embeddings")
        self.original_max_seq_len = self.max_seq_len_cached
        self._states: Dict[Optional[str], _RopeState] = {}
        types = _layer_types(config)
        if types is None:
            state = self._states[None] = _RopeState(config, None)
            self.rope_type: Any = state.rope_type
            self.attention_scaling = state.rope.attention_scale
            self.register_buffer("inv_freq", _float_table(_inv_freq(state.rope), device), persistent=False)
            if _is_v5(config):
                self.register_buffer("original_inv_freq", self.inv_freq.clone(), persistent=False)
            else:
                # v4.57's rotaries name the inv_freq tensor by a plain attribute where v5 registers a buffer: as
                # v4, original_inv_freq is then outside named_buffers(), and .to() / to_empty() leave it be
                self.original_inv_freq = self.inv_freq
        else:
            self.layer_types = types
            self.rope_type = {}
            outer = _rope_dict(_dsv4_view(config), "rope_parameters")
            for lt in types:
                if outer.get(lt) is None:
                    continue  # as HF's Gemma3RotaryEmbedding: no rotary for that layer type
                state = self._states[lt] = _RopeState(config, lt)
                self.rope_type[lt] = state.rope_type
                setattr(self, lt + "_attention_scaling", state.rope.attention_scale)
                self.register_buffer(lt + "_inv_freq", _float_table(_inv_freq(state.rope), device), persistent=False)
                self.register_buffer(lt + "_original_inv_freq", getattr(self, lt + "_inv_freq").clone(),
                                     persistent=False)

    # -- state --------------------------------------------------------------------------------------------------

    def _state(self, layer_type: Optional[str]) -> _RopeState:
        try:
            return self._states[layer_type]
        except KeyError:
            if None in self._states:
                raise ValueError("layer_type %r: this config has one set of RoPE parameters (no per-layer-type "
                                 "rope_parameters)" % (layer_type,)) from None
            raise ValueError("layer_type %r: this config's rope_parameters are per layer type; pass one of %s"
                             % (layer_type, sorted(self._states))) from None

    def _module_config(self, config: Any) -> Any:
        """config as this module's constructor reads it (the VL text rotaries rewrite theirs)."""
        return config

    def rope_init_fn(self, config: Any = None, device: Optional[torch.device] = None, seq_len: Optional[int] = None,
                     layer_type: Optional[str] = None, **unused: Any) -> Tuple[Tensor, float]:
        """transformers v4's ``self.rope_init_fn`` (``ROPE_INIT_FUNCTIONS[rope_type]``, called as
        ``rope_init_fn(config, device, seq_len=...)`` by v4's dynamic update): ``(inv_freq, attention_scaling)``
        for ``config`` (this module's when None or its own), at ``seq_len`` for the dynamic and longrope types;
        inv_freq float32 on ``device``, each the float32 nearest posenc's correctly rounded frequency (the
        values this module's ``inv_freq`` buffer holds), not HF's float32 evaluation."""
        if unused:
            raise TypeError("rope_init_fn: unexpected arguments %s" % sorted(unused))
        if config is None or config is self.config:
            plan = self._state(layer_type).plan
        else:
            plan = _resolve(self._module_config(config), layer_type)
        rope = _init_rope(plan, seq_len)
        return _float_table(_inv_freq(rope), device), rope.attention_scale

    @staticmethod
    def compute_default_rope_parameters(config: Any = None, device: Optional[torch.device] = None,
                                        seq_len: Optional[int] = None) -> Tuple[Tensor, float]:
        """transformers v5's static ``compute_default_rope_parameters`` of the rotary modules (what its
        ``_init_weights`` calls for a module whose rope_type is "default"): ``(inv_freq, 1.0)`` for ``config``
        read as RotaryEmbedding reads it (rope_theta, head_dim, partial_rotary_factor), float32 on ``device``:
        the float32 nearest each real frequency, the values this module's buffer holds. seq_len unused."""
        if config is None:
            raise TypeError("compute_default_rope_parameters: a config is needed (its rope_theta and head_dim)")
        plan = _resolve(config)
        if plan["rope_type"] != "default":
            raise ValueError("compute_default_rope_parameters: the config's rope_type is %r, not 'default'"
                             % plan["rope_type"])
        return _float_table(_inv_freq(_init_rope(plan)), device), 1.0

    @property
    def rope(self) -> Rope:
        """The posenc.Rope of the current frequencies (one set of parameters; rope_for(layer_type) otherwise)."""
        return self._state(None).rope

    def rope_for(self, layer_type: Optional[str] = None) -> Rope:
        """The posenc.Rope of the current frequencies of layer_type (None: the config's one set)."""
        return self._state(layer_type).rope

    def _set_buffers(self, layer_type: Optional[str]) -> None:
        state = self._states[layer_type]
        name = "inv_freq" if layer_type is None else layer_type + "_inv_freq"
        old = getattr(self, name)
        original = getattr(self, "original_inv_freq", None) if layer_type is None else None
        if state.rope is state.original_rope and original is not None and "original_inv_freq" not in self._buffers:
            # v4's reset: the original tensor itself becomes inv_freq again (moved to inv_freq's device)
            self.original_inv_freq = original.to(old.device)
            self.register_buffer(name, self.original_inv_freq, persistent=False)
        else:
            new = torch.tensor(_inv_freq(state.rope), dtype=torch.float64).to(dtype=old.dtype)
            self.register_buffer(name, new.to(old.device), persistent=False)
        if layer_type is None:
            self.attention_scaling = state.rope.attention_scale
            self.max_seq_len_cached = state.max_seq_len_cached
        else:
            setattr(self, layer_type + "_attention_scaling", state.rope.attention_scale)
        if state.long_rope is not None and state.rope is state.long_rope:
            setattr(self, "long_inv_freq" if layer_type is None else layer_type + "_long_inv_freq",
                    getattr(self, name))

    def _update(self, position_ids: Tensor, layer_type: Optional[str] = None) -> None:
        """HF's dynamic_rope_update for these position ids (dynamic and longrope types only)."""
        state = self._states.get(layer_type) if layer_type in self._states else self._state(layer_type)
        if state.rope_type not in ("dynamic", "longrope") or position_ids.numel() == 0:
            return
        top = position_ids.max()
        seq_len = int(math.floor(float(top))) + 1 if top.is_floating_point() else int(top) + 1
        if state.update(seq_len, self.original_max_seq_len):
            self._set_buffers(layer_type)

    def _apply(self, fn, *args, **kwargs):
        # to_empty() / a load from "meta": buffers that held no values get posenc's again
        meta = {name for name, b in self._buffers.items() if b is not None and b.is_meta}
        out = super()._apply(fn, *args, **kwargs)
        for lt, state in self._states.items():
            prefix = "" if lt is None else lt + "_"
            for name, rope in ((prefix + "inv_freq", state.rope), (prefix + "original_inv_freq", state.original_rope)):
                b = self._buffers.get(name)
                if name in meta and b is not None and not b.is_meta:
                    b.copy_(torch.tensor(_inv_freq(rope), dtype=torch.float64).to(b.dtype))
        return out

    # -- forward ------------------------------------------------------------------------------------------------

    def forward(self, x: Tensor, position_ids: Tensor, layer_type: Optional[str] = None) -> Tuple[Tensor, Tensor]:
        """(cos, sin) [batch, seq, rotary_dim] in x.dtype for position_ids [batch, seq] (HF's layout: the
        rotary_dim / 2 values twice, times the attention scaling); layer_type selects v5's per-layer-type
        parameters. x gives the dtype and the device."""
        state = self._state(layer_type)
        pos = _rotary_positions(position_ids)
        self._update(pos, layer_type)
        if x.is_meta or pos.is_meta:
            shape = (*pos.shape, state.rope.rotary_dim)
            return (torch.empty(shape, dtype=x.dtype, device="meta"), torch.empty(shape, dtype=x.dtype, device="meta"))
        if pos.is_floating_point():
            return _real_cos_sin(state.rope, pos, x)
        return _hf_cos_sin(state.rope, pos, x)

    def apply_rotary(self, q: Tensor, k: Optional[Tensor], position_ids: Tensor, unsqueeze_dim: int = 1,
                     layer_type: Optional[str] = None) -> Tuple[Tensor, Optional[Tensor]]:
        """Rotates q and k in place with the current rope (after the same runtime update as forward)."""
        state = self._state(layer_type)
        pos = _rotary_positions(position_ids)
        self._update(pos, layer_type)
        if pos.is_floating_point():  # fractional positions: HF's formula with forward's cos/sin, written back
            cos, sin = _real_cos_sin(state.rope, pos if pos.dim() > 1 else pos.unsqueeze(0), q)
            r = state.rope.rotary_dim
            for t in (q, k):
                if t is not None:
                    t[..., :r].copy_(apply_rotary_pos_emb(t[..., :r], t[..., :r], cos, sin, unsqueeze_dim)[0])
            return q, k
        return apply_rotary(q, k, pos, state.rope, unsqueeze_dim=unsqueeze_dim)


def _rotary_positions(position_ids: Any) -> Tensor:
    """HF's position ids as posenc takes them: integers as int64; floating-point ids as int64 when every value is
    an integer (the exact path), else as float64 (the double-precision path)."""
    pos = position_ids if isinstance(position_ids, Tensor) else torch.as_tensor(position_ids)
    if pos.requires_grad:  # the forwards run without no_grad's cost (2.5 us a call): nothing of theirs is tracked
        pos = pos.detach()
    if pos.is_complex():
        raise TypeError("position_ids must be real, got %s" % pos.dtype)
    if not pos.is_floating_point():
        return pos if pos.dtype == torch.int64 else pos.long()
    if pos.is_meta:
        return pos
    if not bool(torch.isfinite(pos).all()):
        raise ValueError("position_ids: not finite")
    p64 = pos.double()
    if bool((p64 == torch.floor(p64)).all()):
        return p64.long()
    return p64


def _hf_cos_sin(rope: Rope, pos: Tensor, x: Tensor) -> Tuple[Tensor, Tensor]:
    """HF's (cos, sin) from posenc's exact cache: each [*tokens, rotary_dim], the rotary_dim / 2 values twice
    (HF's cat(freqs, freqs), written so by the binding: rope_cache(twice=True)), in x.dtype on x.device. pos:
    int64 [*tokens], or [A, *tokens] for a rope of A axes (each token's cos_i / sin_i at its position on
    axis[i])."""
    tokens = pos.shape[1:] if rope.axes > 1 else pos.shape
    flat = pos.reshape(rope.axes, -1) if rope.axes > 1 else pos.reshape(-1)
    n, r = flat.shape[-1], rope.rotary_dim
    cos = torch.empty(n, r)
    sin = torch.empty(n, r)
    _p.rope_cache(rope, positions=flat, out=(cos, sin), twice=True)
    shape = (*tokens, r)
    if x.dtype != torch.float32 or x.device.type != "cpu":
        return cos.view(shape).to(device=x.device, dtype=x.dtype), sin.view(shape).to(device=x.device, dtype=x.dtype)
    return cos.view(shape), sin.view(shape)


def _real_cos_sin(rope: Rope, pos: Tensor, x: Tensor) -> Tuple[Tensor, Tensor]:
    """(cos, sin) as _hf_cos_sin for fractional (float64) positions of a one-axis rope: each angle p * f in double
    (f the nearest double of the exact frequency), its cos / sin in double, times the attention scale, rounded
    to float32 (not the correctly rounded guarantee of the integer path: the double angle's error is about
    |p f| 2^-53)."""
    freq = torch.tensor(_inv_freq(rope), dtype=torch.float64)
    ang = pos.to(torch.float64).unsqueeze(-1) * freq
    scale = rope.attention_scale
    c, s = (torch.cos(ang) * scale).float(), (torch.sin(ang) * scale).float()
    cos, sin = torch.cat((c, c), dim=-1), torch.cat((s, s), dim=-1)
    return cos.to(device=x.device, dtype=x.dtype), sin.to(device=x.device, dtype=x.dtype)


def _positions(position_ids: Tensor) -> Tensor:
    """Integer positions as int64; floating point ones are refused rather than truncated."""
    if isinstance(position_ids, Tensor) and position_ids.dtype == torch.int64:
        return position_ids
    position_ids = torch.as_tensor(position_ids)
    if position_ids.is_floating_point() or position_ids.is_complex():
        raise TypeError("positions must be integers, got %s" % position_ids.dtype)
    return position_ids if position_ids.dtype == torch.int64 else position_ids.long()


def rope_cache(rope: Rope, position_ids: Tensor) -> Tuple[Tensor, Tensor]:
    """cos and sin for positions of any shape, [*position_ids.shape, rotary_dim], float32: the first
    rotary_dim / 2 columns hold cos_i (sin_i) of the pairs; the other half is left unwritten (uninitialised)
    for the caller (RotaryEmbedding copies the first half there, HF's layout). posenc.PAD gives zeros. For a
    rope of A axes, position_ids are [A, *tokens] (axis first, HF's [3, batch, seq]) and the result is
    [*tokens, rotary_dim]."""
    pos = _positions(position_ids)
    A = rope.axes
    if A > 1 and (pos.dim() < 2 or pos.size(0) != A):
        raise ValueError("position_ids: expected [%d, ...] for a rope of %d axes, got %s" % (A, A, list(pos.shape)))
    tokens = pos.shape[1:] if A > 1 else pos.shape
    pos = pos.reshape(A, -1) if A > 1 else pos.reshape(-1)
    r = rope.rotary_dim
    cos = torch.empty(*tokens, r)
    sin = torch.empty(*tokens, r)
    n, h = pos.shape[-1], r // 2
    _p.rope_cache(rope, positions=pos, out=(cos.view(n, r)[:, :h], sin.view(n, r)[:, :h]))
    return cos, sin


class _Rotated(torch.autograd.Function):
    """Marks a tensor that apply_rotary has already rotated in place (all checks and the one fused pass over q
    and k happen before, on the detached tensors); its backward is the inverse rotation: the transpose of the
    rotation by a is the rotation by -a, the same float cos and the negated sin."""

    @staticmethod
    def forward(ctx, x: Tensor, positions: Tensor, rope: Rope, heads_first: bool) -> Tensor:
        ctx.mark_dirty(x)
        ctx.rope, ctx.heads_first = rope, heads_first
        ctx.save_for_backward(positions)
        return x

    @staticmethod
    def backward(ctx, g: Tensor):
        (positions,) = ctx.saved_tensors
        inverse = ctx.rope.with_position_scale(-ctx.rope.position_scale)
        g = g.contiguous().clone()
        _p.rope(inverse, g, positions=positions, heads_first=ctx.heads_first)
        return g, None, None, None


def apply_rotary(q: Tensor, k: Optional[Tensor], position_ids: Tensor, rope: Rope,
                 unsqueeze_dim: int = 1) -> Tuple[Tensor, Optional[Tensor]]:
    """Rotates q and k in place by posenc's fused kernel (posenc.rope_qk) and returns them. q, k: HF's
    [batch, heads, seq, head_dim] (unsqueeze_dim=1) or [batch, seq, heads, head_dim] (unsqueeze_dim=2), any
    strides with a contiguous last axis (views of a fused QKV projection are fine), float32, bfloat16 or
    float16, GQA head counts; position_ids [batch, seq] (or [seq]). For a multi-axis rope of A axes (M-RoPE)
    position_ids are HF's [A, batch, seq], or [batch, seq] / [seq] text ids (every axis the same position, as
    HF's text models expand them). Only the first rope.rotary_dim elements of each head row change; the result
    equals apply_rotary_pos_emb(q, k, cos, sin) with the exact cos/sin, rounded once (the contract's rotation).
    Differentiable in q and k (an autograd in-place op)."""
    positions = _positions(position_ids)
    if rope.axes > 1 and positions.dim() < 3:
        positions = positions.unsqueeze(0).expand(rope.axes, *positions.shape).contiguous()
    elif q.dim() == 4 and positions.dim() == 1:
        positions = positions.unsqueeze(0).expand(q.size(0), -1).contiguous()
    if unsqueeze_dim not in (1, 2):
        raise ValueError("unsqueeze_dim must be 1 ([batch, heads, seq, dim]) or 2 ([batch, seq, heads, dim])")
    return _rotate_in_place(q, k, positions, rope, unsqueeze_dim == 1)


def _rotate_in_place(q: Tensor, k: Optional[Tensor], positions: Tensor, rope: Rope,
                     heads_first: bool) -> Tuple[Tensor, Optional[Tensor]]:
    """posenc.rope_qk on q and k in place, positions as the core API takes them; with autograd when q or k
    requires a gradient (the backward: the inverse rotation)."""
    grad = torch.is_grad_enabled() and (q.requires_grad or (k is not None and k.requires_grad))
    if grad:
        for t in (q, k):  # refused before anything is written, as torch's own in-place ops do
            if t is not None and t.is_leaf and t.requires_grad:
                raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    _p.rope_qk(rope, q.detach() if grad else q, None if k is None else (k.detach() if grad else k),
               positions=positions, heads_first=heads_first)
    if grad:
        # one single-output Function per tensor: q and k may be views (HF's .view().transpose(), fused QKV)
        if q.requires_grad:
            q = _Rotated.apply(q, positions, rope, heads_first)
        if k is not None and k.requires_grad:
            k = _Rotated.apply(k, positions, rope, heads_first)
    return q, k


def rotate_half(x: Tensor) -> Tensor:
    """HF's rotate_half: cat(-x2, x1) of the halves of the last axis."""
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def apply_rotary_pos_emb(q: Tensor, k: Tensor, cos: Tensor, sin: Tensor, *args: Any,
                         unsqueeze_dim: Optional[int] = None, position_ids: Optional[Tensor] = None
                         ) -> Tuple[Tensor, Tensor]:
    """HF's apply_rotary_pos_emb: q * cos + rotate_half(q) * sin (and k), out of place, elementwise in the
    tensors' dtype, for cos/sin from RotaryEmbedding.forward; apply_rotary is the fused, in-place, once-rounded
    equivalent. Both signatures: v5's (q, k, cos, sin, unsqueeze_dim=1) and v4's (q, k, cos, sin,
    position_ids=None, unsqueeze_dim=1); a fifth positional argument that is an int is v5's unsqueeze_dim, a
    tensor or None v4's (unused) position_ids. cos / sin are unsqueezed at unsqueeze_dim unless they already
    have q's number of dimensions (v5). Large inputs take the same products and sums in fewer passes (q * cos,
    then the two halves' products subtracted / added in place): the same operations on the same values, the
    same bits as the formula."""
    if len(args) > 2:
        raise TypeError("apply_rotary_pos_emb takes at most 6 positional arguments")
    if args:
        if isinstance(args[0], int) and not isinstance(args[0], bool):
            if len(args) > 1:
                raise TypeError("apply_rotary_pos_emb: v5's fifth argument is unsqueeze_dim; v4's sixth follows "
                                "position_ids (a tensor or None), got an int fifth and a sixth")
            if unsqueeze_dim is not None:
                raise TypeError("apply_rotary_pos_emb got multiple values for argument 'unsqueeze_dim'")
            unsqueeze_dim = args[0]
        else:
            if position_ids is not None:
                raise TypeError("apply_rotary_pos_emb got multiple values for argument 'position_ids'")
            if len(args) > 1:
                if unsqueeze_dim is not None:
                    raise TypeError("apply_rotary_pos_emb got multiple values for argument 'unsqueeze_dim'")
                unsqueeze_dim = args[1]
    if unsqueeze_dim is None:
        unsqueeze_dim = 1
    if cos.dim() != q.dim():
        cos = cos.unsqueeze(unsqueeze_dim)
    if sin.dim() != q.dim():
        sin = sin.unsqueeze(unsqueeze_dim)
    return _rotate_formula(q, cos, sin), _rotate_formula(k, cos, sin)


_SPLIT_MIN = 1 << 15  # below this many elements the formula's five ops cost less than the split's call overhead


def _rotate_formula(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """x * cos + rotate_half(x) * sin. With cat(-x2, x1) * sin = cat(-(x2 * s1), x1 * s2) (negation is exact),
    the first half is x1 c1 - x2 s1 and the second x2 c2 + x1 s2, each product and the sum rounded once in the
    result dtype as in the formula; large inputs compute them that way without rotate_half's copies."""
    h = x.shape[-1] // 2
    if (x.numel() < _SPLIT_MIN or x.shape[-1] % 2 or cos.shape[-1] != x.shape[-1] or sin.shape[-1] != x.shape[-1]
            or cos.dtype != sin.dtype or (torch.is_grad_enabled() and (x.requires_grad or cos.requires_grad or sin.requires_grad))):
        return (x * cos) + (rotate_half(x) * sin)
    out = x * cos
    if out.shape != torch.broadcast_shapes(x.shape, sin.shape):
        return out + (rotate_half(x) * sin)
    out[..., :h].sub_(x[..., h:] * sin[..., :h])
    out[..., h:].add_(x[..., :h] * sin[..., h:])
    return out


# ---- multi-axis rotary embeddings of vision-language models ------------------------------------------------

def _text_config(config: Any) -> Any:
    """A VL model's text config: config.text_config when it has one (v5, Qwen3-VL), else the config itself."""
    text = _get(config, "text_config")
    return config if text is None else text


def _mrope_config(config: Any, default_theta: float) -> Dict[str, Any]:
    """The config dict RotaryEmbedding reads, from a VL text config (an object or a dict, rope_scaling or v5's
    rope_parameters): the rope type "mrope" is "default" (HF's Qwen2VLConfig rewrites it), the model class's
    default rope_theta when the config has none; mrope_section stays in the dict (rope_init ignores it)."""
    rs = _scaling(config)
    if rs.get("rope_type", rs.get("type")) in (None, "mrope"):
        rs.pop("type", None)
        rs["rope_type"] = "default"
    out = {name: _get(config, name) for name in ("head_dim", "hidden_size", "num_attention_heads",
                                                  "max_position_embeddings", "original_max_position_embeddings")}
    out["partial_rotary_factor"] = _get(config, "partial_rotary_factor") or rs.get("partial_rotary_factor") or 1.0
    out["rope_theta"] = float(rs.get("rope_theta") or _get(config, "rope_theta") or default_theta)
    if _is_v5(config):  # the config's own format decides how RotaryEmbedding reads it
        out["rope_parameters"] = dict(rs, rope_theta=out["rope_theta"])
    else:
        out["rope_scaling"] = rs
    return out


def _mrope_positions(position_ids: Tensor, axes: int = 3) -> Tensor:
    """HF's M-RoPE position ids [axes, batch, seq]; [batch, seq] text ids give every axis the same positions
    (as HF's text models expand them). Any other shape: ValueError naming it."""
    pos = _positions(position_ids)
    if pos.dim() == 2:
        return pos.unsqueeze(0).expand(axes, -1, -1)
    if pos.dim() != 3 or pos.size(0) != axes:
        raise ValueError("position_ids: expected [%d, batch, seq] (or [batch, seq] text ids), got %s"
                         % (axes, list(pos.shape)))
    return pos


class _MultiAxisRotary(RotaryEmbedding):
    """The text rotary of a vision-language model: RotaryEmbedding's one-axis spec of the config (its rope_type,
    attention factor, inv_freq buffer, runtime updates) and, for the fused apply, that spec with the model's
    sections (``multi_rope``, rebuilt when the frequencies change)."""

    _default_theta = 10000.0

    def __init__(self, config: Any, device: Optional[torch.device] = None):
        text = _text_config(config)
        super().__init__(self._module_config(config), device)
        self.mrope_section = self._section_of(_scaling(text).get("mrope_section"))
        self._multi: Optional[Tuple[Rope, Rope]] = None

    def _section_of(self, section: Any) -> Optional[list]:
        return None if section is None else [int(s) for s in section]

    def _module_config(self, config: Any) -> Any:
        return _mrope_config(_text_config(config), self._default_theta)

    @staticmethod
    def compute_default_rope_parameters(config: Any = None, device: Optional[torch.device] = None,
                                        seq_len: Optional[int] = None) -> Tuple[Tensor, float]:
        """transformers v5's ``compute_default_rope_parameters`` of the VL text rotaries (Qwen2-VL, Qwen2.5-VL,
        Qwen3-VL): ``(inv_freq, 1.0)`` with ``inv_freq[i] = rope_theta^(-2i / dim)`` for
        ``dim = head_dim`` (else ``hidden_size // num_attention_heads``) and ``rope_theta`` from
        ``config.rope_parameters`` (v5; a v4 config's top-level ``rope_theta`` too), float32 on ``device``:
        the float32 nearest each real frequency, where HF's float32 evaluation can be an ulp off. As upstream,
        no scaling, no partial rotary factor, seq_len unused."""
        if config is None:
            raise TypeError("compute_default_rope_parameters: a config is needed (its rope_theta and head_dim)")
        params = _get(config, "rope_parameters") or {}
        base = params.get("rope_theta") if isinstance(params, Mapping) else None
        base = _get(config, "rope_theta") if base is None else base
        if base is None:
            raise ValueError("compute_default_rope_parameters: the config has no rope_theta "
                             "(rope_parameters['rope_theta'] in v5, rope_theta in v4)")
        dim = _head_dim_or(config, "head_dim", "compute_default_rope_parameters")
        return _float_table(_inv_freq(Rope(dim, base=float(base))), device), 1.0

    @property
    def multi_rope(self) -> Rope:
        """The posenc.Rope of 3 axes for the current frequencies (posenc.rope_sections of self.rope)."""
        if self._multi is None or self._multi[0] is not self.rope:
            self._multi = (self.rope, self._sectioned(self.rope))
        return self._multi[1]

    def _sectioned(self, rope: Rope) -> Rope:
        raise NotImplementedError


class Qwen2VLRotaryEmbedding(_MultiAxisRotary):
    """HF transformers' Qwen2VLRotaryEmbedding, the text rotary of Qwen2-VL and Qwen2.5-VL
    (Qwen2_5_VLRotaryEmbedding is the same class), exact: ``Qwen2VLRotaryEmbedding(config, device=None)`` with
    the text config (an HF config object or a dict; one with a ``text_config`` is descended into), rope_theta
    default 1e6, rope type from ``rope_scaling`` / ``rope_parameters`` ("mrope" read as "default", as HF's
    config does), mrope_section from there too. ``forward(x, position_ids)`` with position_ids [3, batch, seq]
    (temporal, height, width; [batch, seq] text ids are expanded to the three rows) returns HF's ``(cos, sin)``,
    each [3, batch, seq, head_dim] in x.dtype: row a holds cos_i / sin_i of every pair at the token's position
    on axis a (twice, HF's cat(freqs, freqs)), times the attention scaling, each the correctly rounded value
    of the exact angle; ``apply_multimodal_rotary_pos_emb(q, k, cos, sin, mrope_section)`` then takes each
    section from its axis. ``apply_rotary(q, k, position_ids)`` rotates q and k in place, fused, by the chunked
    sections of mrope_section without making cos/sin (autograd: the inverse rotation). As HF's forward, no
    runtime frequency update."""

    _default_theta = 1e6

    def _sectioned(self, rope: Rope) -> Rope:
        if self.mrope_section is None:
            raise ValueError("mrope_section: the config has none (HF's attention reads "
                             "rope_parameters['mrope_section'])")
        h = rope.rotary_dim // 2
        if len(self.mrope_section) != 3 or sum(self.mrope_section) != h:
            raise ValueError("mrope_section %s: three sections summing to rotary_dim / 2 = %d (HF splits the "
                             "channels by mrope_section * 2)" % (self.mrope_section, h))
        return _p.rope_sections(rope, self.mrope_section, "chunked")

    def forward(self, x: Tensor, position_ids: Tensor) -> Tuple[Tensor, Tensor]:
        """(cos, sin) [3, batch, seq, head_dim] in x.dtype for position_ids [3, batch, seq] (or [batch, seq])."""
        return _hf_cos_sin(self.rope, _mrope_positions(position_ids), x)

    def apply_rotary(self, q: Tensor, k: Optional[Tensor], position_ids: Tensor,
                     unsqueeze_dim: int = 1) -> Tuple[Tensor, Optional[Tensor]]:
        """q and k rotated in place, fused: apply_multimodal_rotary_pos_emb with the exact cos/sin, rounded once."""
        return apply_rotary(q, k, _mrope_positions(position_ids), self.multi_rope, unsqueeze_dim=unsqueeze_dim)


Qwen2_5_VLRotaryEmbedding = Qwen2VLRotaryEmbedding


class Qwen3VLTextRotaryEmbedding(_MultiAxisRotary):
    """HF transformers' Qwen3VLTextRotaryEmbedding, exact: ``Qwen3VLTextRotaryEmbedding(config, device=None)``
    (rope_theta default 5e5, mrope_section from rope_scaling / rope_parameters, default [24, 20, 20]).
    ``forward(x, position_ids)`` with position_ids [3, batch, seq] (or [batch, seq], expanded) returns
    ``(cos, sin)`` [batch, seq, head_dim] in x.dtype, the axes interleaved as HF's apply_interleaved_mrope does:
    frequency f takes the height position when f % 3 == 1 and f < 3 * mrope_section[1], the width position when
    f % 3 == 2 and f < 3 * mrope_section[2], the temporal one otherwise; use them with the ordinary
    apply_rotary_pos_emb. ``apply_rotary(q, k, position_ids)``: the same rotation in place, fused (autograd).
    With HF's runtime update of dynamic / longrope frequencies (its dynamic_rope_update decorator)."""

    _default_theta = 5e5

    def apply_interleaved_mrope(self, freqs: Tensor, mrope_section: Any) -> Tensor:
        """transformers' Qwen3-VL helper, with its behaviour: freqs [3, batch, seq, head_dim / 2] (one row of
        angles per axis) -> [batch, seq, head_dim / 2], frequency f from the height row when f % 3 == 1 and
        f < 3 * mrope_section[1], from the width row when f % 3 == 2 and f < 3 * mrope_section[2], from the
        temporal row otherwise. As upstream, the result is freqs[0], written in place."""
        out = freqs[0]
        for axis in (1, 2):
            picked = slice(axis, 3 * int(mrope_section[axis]), 3)
            out[..., picked] = freqs[axis, ..., picked]
        return out

    def _section_of(self, section: Any) -> Optional[list]:
        section = [24, 20, 20] if section is None else [int(s) for s in section]
        if len(section) != 3:
            raise ValueError("mrope_section %s: expected three sections" % (section,))
        return section

    def _sectioned(self, rope: Rope) -> Rope:
        h = rope.rotary_dim // 2
        _, s1, s2 = self.mrope_section
        if s1 < 0 or s2 < 0:
            raise ValueError("mrope_section %s: negative sections" % (self.mrope_section,))
        # HF's rule reads only s1 and s2, and those only up to the frequencies there are: f % 3 == 1 below 3 s1
        # (at most (h + 1) // 3 of them), f % 3 == 2 below 3 s2 (at most h // 3). With the sum h the sectors are
        # the frequencies themselves, so posenc's interleaved layout is HF's map for any mrope_section.
        s1, s2 = min(s1, (h + 1) // 3), min(s2, h // 3)
        return _p.rope_sections(rope, [h - s1 - s2, s1, s2], "interleaved")

    def forward(self, x: Tensor, position_ids: Tensor) -> Tuple[Tensor, Tensor]:
        """(cos, sin) [batch, seq, head_dim] in x.dtype for position_ids [3, batch, seq] (or [batch, seq])."""
        pos = _mrope_positions(position_ids)
        if self.rope_type in ("dynamic", "longrope"):
            self._update(pos)
        return _hf_cos_sin(self.multi_rope, pos, x)

    def apply_rotary(self, q: Tensor, k: Optional[Tensor], position_ids: Tensor,
                     unsqueeze_dim: int = 1) -> Tuple[Tensor, Optional[Tensor]]:
        """q and k rotated in place, fused: apply_rotary_pos_emb with forward's cos/sin, exact, rounded once."""
        pos = _mrope_positions(position_ids)
        if self.rope_type in ("dynamic", "longrope"):
            self._update(pos)
        return apply_rotary(q, k, pos, self.multi_rope, unsqueeze_dim=unsqueeze_dim)


class OpenPanguVLTextRotaryEmbedding(_MultiAxisRotary):
    """openPangu-VL's text M-RoPE as vLLM computes it (``MRotaryEmbeddingInterleaved``, which vLLM's ``get_rope``
    builds for ``rope_type`` "openpangu"; transformers has no such class), exact:
    ``OpenPanguVLTextRotaryEmbedding(config, device=None)`` with the text config (rope_scaling or
    rope_parameters; rope_theta default 1e4, vLLM's; partial_rotary_factor narrows the rotary dim). The dict must
    have ``rope_type`` "openpangu", ``mrope_section`` of two sizes [h, w] or three [t, h, w] summing to
    rotary_dim / 2 and a true ``mrope_interleaved``, as vLLM requires; anything else is a ValueError naming it.
    The frequencies are the default ones; pair i turns by the position row vLLM's
    ``get_mrope_interleaved_id_list`` gives it (posenc's "balanced" layout: three sizes keep the last pair for t,
    two take rows 0 and 1). ``forward(x, position_ids)`` with position_ids [3, batch, seq] (vLLM's rows; [batch,
    seq] text ids are expanded) returns ``(cos, sin)`` [batch, seq, rotary_dim] in x.dtype, each pair's value
    twice (the halves layout of vLLM's cos / sin chunks), for the ordinary ``apply_rotary_pos_emb``;
    ``apply_rotary(q, k, position_ids)`` rotates in place, fused (autograd)."""

    _default_theta = 10000.0

    def __init__(self, config: Any, device: Optional[torch.device] = None):
        super().__init__(config, device)
        self.multi_rope  # the sections checked now, not at the first call

    def _module_config(self, config: Any) -> Any:
        rs = _scaling(_text_config(config))
        kind = rs.get("rope_type", rs.get("type"))
        if kind != "openpangu":
            raise ValueError("rope_type %r: OpenPanguVLTextRotaryEmbedding reads vLLM's rope_type 'openpangu' "
                             "(MRotaryEmbeddingInterleaved)" % (kind,))
        if rs.get("mrope_section") is None or not rs.get("mrope_interleaved"):
            raise ValueError("rope_type 'openpangu' needs mrope_section and a true mrope_interleaved (vLLM's "
                             "get_rope refuses it otherwise); got mrope_section %r, mrope_interleaved %r"
                             % (rs.get("mrope_section"), rs.get("mrope_interleaved")))
        unknown = sorted(k for k in rs if k not in _EVERY)
        if unknown:
            raise ValueError("rope_type 'openpangu': keys MRotaryEmbeddingInterleaved does not read: %s"
                             % ", ".join(unknown))
        out = _mrope_config(_text_config(config), self._default_theta)
        key = "rope_parameters" if "rope_parameters" in out else "rope_scaling"
        out[key] = dict(out[key], rope_type="default")
        out[key].pop("type", None)
        return out

    def _section_of(self, section: Any) -> Optional[list]:
        section = [int(s) for s in section]
        if len(section) not in (2, 3) or min(section) < 0:
            raise ValueError("mrope_section %s: two or three non-negative sizes (vLLM's MRotaryEmbeddingInterleaved)"
                             % (section,))
        if len(section) == 3 and (section[0] == 0 or section[2] == 0):
            raise ValueError("mrope_section %s: three sizes [t, h, w] need t > 0 and w > 0 in posenc's balanced "
                             "layout (vLLM would invent a t pair, or read w == 0 apart from two sizes)" % (section,))
        return section

    def _sectioned(self, rope: Rope) -> Rope:
        h = rope.rotary_dim // 2
        if sum(self.mrope_section) != h:
            raise ValueError("mrope_section %s: the sum must equal rotary_dim / 2 = %d (vLLM's check)"
                             % (self.mrope_section, h))
        return _p.rope_sections(rope, self.mrope_section, "balanced")

    def _rows(self, position_ids: Tensor) -> Tensor:
        return _mrope_positions(position_ids)[:self.multi_rope.axes]

    def forward(self, x: Tensor, position_ids: Tensor) -> Tuple[Tensor, Tensor]:
        """(cos, sin) [batch, seq, rotary_dim] in x.dtype for position_ids [3, batch, seq] (or [batch, seq])."""
        return _hf_cos_sin(self.multi_rope, self._rows(position_ids), x)

    def apply_rotary(self, q: Tensor, k: Optional[Tensor], position_ids: Tensor,
                     unsqueeze_dim: int = 1) -> Tuple[Tensor, Optional[Tensor]]:
        """q and k rotated in place, fused: apply_rotary_pos_emb with forward's cos/sin, exact, rounded once."""
        return apply_rotary(q, k, self._rows(position_ids), self.multi_rope, unsqueeze_dim=unsqueeze_dim)


def apply_multimodal_rotary_pos_emb(q: Tensor, k: Tensor, cos: Tensor, sin: Tensor, mrope_section: list,
                                    unsqueeze_dim: int = 1) -> Tuple[Tensor, Tensor]:
    """HF's apply_multimodal_rotary_pos_emb (Qwen2-VL / Qwen2.5-VL; out of place, elementwise in the tensors'
    dtype), for cos/sin [3, batch, seq, head_dim] from Qwen2VLRotaryEmbedding.forward: the channels split by
    mrope_section * 2, chunk i from axis i % 3, then HF's rotate_half formula. Qwen2VLRotaryEmbedding.apply_rotary
    is the fused, in-place, once-rounded equivalent."""
    sections = list(mrope_section) * 2
    cos = torch.cat([m[i % 3] for i, m in enumerate(cos.split(sections, dim=-1))], dim=-1).unsqueeze(unsqueeze_dim)
    sin = torch.cat([m[i % 3] for i, m in enumerate(sin.split(sections, dim=-1))], dim=-1).unsqueeze(unsqueeze_dim)
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


# The float32 nearest p * f for the vision angle table: p * f rounded to double is within 2^-52 of it (f the
# nearest double of the real frequency, then the product's own rounding), so its float32 rounding is the
# correct one unless a float32 midpoint lies that close; those (about one in 2^27) are decided in decimal.
_MIDPOINT_MARGIN = 2.0 ** -50


def _exact_angles(positions: Tensor, freq: Any, base: float, den: int) -> Tensor:
    """[*positions.shape, K] float32: each the float32 nearest the real p * base^(-2k/den) (freq: the K nearest
    doubles of those frequencies). The double products rounded to float32 are that nearest value unless one lies
    within 2^-50 of a float32 midpoint; such a product has the 29 bits that float32 drops within a few units of
    2^28 (the midpoint's pattern, in any binade of normal numbers), so a test of those bits on the whole table
    (three tensor ops) leaves the decimal decision to the rare table that has one."""
    f = [float(x) for x in freq]
    v = positions.to(torch.float64).unsqueeze(-1) * torch.tensor(f, dtype=torch.float64)
    # integer positions: every nonzero product is at least min(f) in magnitude, a normal float32 when min(f) is
    if min(f, default=1.0) > 2.0 ** -100 and v.numel():
        # (bits - 2^28 + 64) mod 2^29 <= 128: the dropped bits within 64 units of the midpoint's pattern
        near = torch.bitwise_and(v.view(torch.int64) + (64 - (1 << 28)), (1 << 29) - 1).le_(128)
        if not bool(near.any()):
            return v.float()
    return _exact_angles_slow(positions, freq, base, den)


def _exact_angles_slow(positions: Tensor, freq: Any, base: float, den: int) -> Tensor:
    """_exact_angles element by element: the midpoint test on every product, decimal arithmetic where needed."""
    import numpy as np

    p = positions.numpy().astype(np.float64)[..., None]  # exact: |p| < 2^53
    f = np.asarray(freq, np.float64)
    v = p * f
    r = v.astype(np.float32)
    toward = np.where(v > r.astype(np.float64), np.float32(np.inf), np.float32(-np.inf))
    other = np.nextafter(r, toward)
    mid = (r.astype(np.float64) + other.astype(np.float64)) / 2  # exact: float32 neighbours
    near = np.abs(v - mid) <= _MIDPOINT_MARGIN * np.abs(v)
    if near.any():
        import decimal

        with decimal.localcontext() as ctx:
            ctx.prec = 60
            ln_base = decimal.Decimal(base).ln()
            for idx in zip(*np.nonzero(near)):
                k = int(idx[-1])
                fk = (ln_base * decimal.Decimal(-2 * k) / decimal.Decimal(int(den))).exp()
                exact = decimal.Decimal(int(p[idx[:-1] + (0,)])) * fk
                lo, hi = sorted((float(r[idx]), float(other[idx])))
                m = decimal.Decimal(float(mid[idx]))
                if exact != m:
                    r[idx] = hi if exact > m else lo
                else:  # a tie (a rational frequency): to the even significand
                    r[idx] = lo if (np.float32(lo).view(np.uint32) & 1) == 0 else hi
    return torch.from_numpy(r)


def _is_seqlen(x: Any) -> bool:
    """v4's vision ``forward(seqlen)`` argument: an int, or an integer 0-dim tensor (``grid_thw[:, 1:].max()``)."""
    if isinstance(x, Tensor):
        if x.dim() != 0:
            return False
        if x.dtype.is_floating_point or x.dtype.is_complex or x.dtype == torch.bool:
            raise ValueError("seqlen: an integer, got a 0-dim %s tensor" % x.dtype)
        return True
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


class VisionRotaryEmbedding(nn.Module):
    """HF transformers' VisionRotaryEmbedding(dim, theta=10000.0), the 2-D RoPE of the Qwen2-VL, Qwen2.5-VL,
    Qwen3-VL and GLM-4V vision towers (built with dim = head_dim / 2; Qwen2_5_VisionRotaryEmbedding and
    Qwen3VLVisionRotaryEmbedding are the same). ``inv_freq`` (buffer, not persistent): the dim / 2 frequencies
    theta^(-2k/dim), each the float32 nearest the real value. ``forward`` is HF's own op on that buffer, so it
    costs what HF's does: ``forward(position_ids)`` with (row, col) ids [N, 2] returns the angle table
    [N, dim] = [row * inv_freq | col * inv_freq] (float32 products, as HF), ``forward(seqlen)`` (the v4 API:
    an int or a 0-dim integer tensor, by position or keyword) ``outer(arange(seqlen), inv_freq)``.
    ``exact_angles(position_ids)`` gives each angle as the float32 nearest the exact product
    p * theta^(-2k/dim) instead (slower: several float64 passes). HF takes cos / sin
    of cat(table, table) in float32, so its values carry the angle's float32 rounding; ``cos_sin(position_ids)``
    gives them exactly (each [N, 2 dim] float32, the correctly rounded cos / sin of the exact angles), and
    ``apply_rotary(q, k, position_ids)`` rotates q and k [N, heads, 2 dim] in place, fused (autograd), as
    apply_rotary_pos_emb_vision would with those. ``rope``: the posenc.Rope (2 axes, VISION sections
    [dim / 2, dim / 2] of rotary_dim 2 dim)."""

    def __init__(self, dim: int, theta: float = 10000.0, device: Optional[torch.device] = None):
        super().__init__()
        if dim < 2 or dim % 2:
            raise ValueError("dim %d: HF's table is cat'ed with itself to head_dim = 2 dim, dim must be even" % dim)
        if device is not None and torch.device(device).type != "cpu":
            raise ValueError("posenc computes on the CPU (device %s)" % device)
        self.dim, self.theta = dim, theta
        self.rope = _p.rope_sections(Rope(2 * dim, base=float(theta)), [dim // 2, dim // 2], "vision")
        freq = self.rope.freq[: dim // 2]
        self.register_buffer("inv_freq", torch.tensor(freq, dtype=torch.float64).float(), persistent=False)

    def _ids(self, position_ids: Tensor) -> Tensor:
        pos = _positions(position_ids)
        if pos.dim() != 2 or pos.size(1) != 2:
            raise ValueError("position_ids: expected (row, col) ids [N, 2], got %s" % list(pos.shape))
        return pos

    def forward(self, position_ids: Union[int, Tensor, None] = None, seqlen: Union[int, Tensor, None] = None) -> Tensor:
        """[N, dim] angles for (row, col) ids [N, 2] (v5), or [seqlen, dim / 2] for a seqlen (v4's
        ``forward(seqlen)``: an int, or the 0-dim tensor v4's towers pass, ``grid_thw[:, 1:].max()``; by
        position or by the keyword ``seqlen``): HF's float32 products with posenc's inv_freq (HF's whole work is
        this one op; posenc hands it to the same op, with no wrapper of its own around it)."""
        # the buffer straight from _buffers: nn.Module's attribute lookup of a buffer costs about 0.5 us, more
        # than the argument checks, so the call stays no slower than HF's (docs/python.md)
        inv_freq = self._buffers["inv_freq"]
        if type(position_ids) is Tensor and position_ids.dim() == 2 and position_ids.size(1) == 2 and seqlen is None:
            return (position_ids.unsqueeze(-1) * inv_freq).flatten(1)
        if seqlen is not None:
            if position_ids is not None:
                raise TypeError("VisionRotaryEmbedding.forward: position_ids (v5) or seqlen (v4), not both")
            position_ids = seqlen
        if position_ids is None:
            raise TypeError("VisionRotaryEmbedding.forward: missing position_ids (v5) or seqlen (v4)")
        if _is_seqlen(position_ids):
            seq = torch.arange(position_ids, device=inv_freq.device, dtype=inv_freq.dtype)
            return torch.outer(seq, inv_freq)
        position_ids = self._ids(position_ids)  # a sequence converted, or a wrong shape refused by name
        return (position_ids.unsqueeze(-1) * inv_freq).flatten(1)

    @torch.no_grad()
    def exact_angles(self, position_ids: Union[int, Tensor]) -> Tensor:
        """forward's table with each angle the float32 nearest the exact product p * theta^(-2k/dim) (the product
        in double, the rare one within 2^-50 of a float32 midpoint decided in decimal arithmetic)."""
        freq = self.rope.freq[: self.dim // 2]
        if _is_seqlen(position_ids):
            return _exact_angles(torch.arange(int(position_ids)), freq, self.theta, self.dim)
        pos = self._ids(position_ids)
        return _exact_angles(pos, freq, self.theta, self.dim).flatten(1)

    @torch.no_grad()
    def cos_sin(self, position_ids: Tensor) -> Tuple[Tensor, Tensor]:
        """The exact (cos, sin), each [N, 2 dim] float32: what HF's emb.cos(), emb.sin() approximate."""
        return _hf_cos_sin(self.rope, self._ids(position_ids).t(), torch.zeros(0))

    def apply_rotary(self, q: Tensor, k: Optional[Tensor], position_ids: Tensor) -> Tuple[Tensor, Optional[Tensor]]:
        """q and k [N, heads, 2 dim] rotated in place, fused, by the (row, col) ids [N, 2]."""
        return apply_rotary_vision(q, k, position_ids, self.rope)


Qwen2_5_VisionRotaryEmbedding = VisionRotaryEmbedding
Qwen3VLVisionRotaryEmbedding = VisionRotaryEmbedding


def apply_rotary_pos_emb_vision(q: Tensor, k: Tensor, cos: Tensor, sin: Tensor) -> Tuple[Tensor, Tensor]:
    """HF's apply_rotary_pos_emb_vision (out of place): q, k [N, heads, head_dim] in float32 with cos / sin
    [N, head_dim] unsqueezed at -2, HF's rotate_half formula, cast back to q's and k's dtypes."""
    q_dtype, k_dtype = q.dtype, k.dtype
    q, k = q.float(), k.float()
    cos, sin = cos.unsqueeze(-2).float(), sin.unsqueeze(-2).float()
    return (q * cos + rotate_half(q) * sin).to(q_dtype), (k * cos + rotate_half(k) * sin).to(k_dtype)


def apply_rotary_vision(q: Tensor, k: Optional[Tensor], position_ids: Tensor,
                        rope: Rope) -> Tuple[Tensor, Optional[Tensor]]:
    """Rotates the vision tokens' q and k [N, heads, head_dim] (or [N, head_dim]) in place by posenc's fused
    kernel and returns them: position_ids [N, A] (HF's (row, col) ids: A = rope.axes columns), rope a 2-D spec
    (VisionRotaryEmbedding.rope, posenc.Rope.qwen2_vl_vision(), ...). Each element is the exact rotation
    rounded once to q's format (HF rounds in float32 and then again to the format). Differentiable in q and k."""
    pos = _positions(position_ids)
    if pos.dim() != 2 or pos.size(1) != rope.axes:
        raise ValueError("position_ids: expected [N, %d] for a rope of %d axes, got %s"
                         % (rope.axes, rope.axes, list(pos.shape)))
    return _rotate_in_place(q, k, pos.t().contiguous(), rope, False)


from ._torch_timesteps import *  # noqa: E402,F401,F403  timestep embeddings (diffusers, DiT, Flux); they join __all__
from ._torch_diffusers import *  # noqa: E402,F401,F403  diffusers' image and video RoPE; they join __all__
from ._torch_models import *  # noqa: E402,F401,F403  the models' own rotary modules; they join __all__
