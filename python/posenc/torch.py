"""posenc for PyTorch: CPU tensors in and out without copies (float32, bfloat16, float16), and drop-in
replacements for the positional-encoding code people run today, with the same constructor arguments,
forward signatures and state_dict keys, computing every value exactly (correctly rounded float32).

Modules (each documented below; docs/python.md has an example per module):
  PositionalEncoding(d_model, dropout=0.1, max_len=5000)        the PyTorch tutorial's, [seq, batch, d]
  PositionalEncodingBatchFirst(d_model, dropout=0.1, max_len=5000)               [batch, seq, d]
  SinusoidalPositionalEmbedding(embedding_dim, padding_idx, init_size=1024)      fairseq's
  LearnableSinusoidalPositionalEncoding(d_model, dropout=0.1, max_len=5000, d_hid=None,
                                        activation="gelu", batch_first=False)   LSPE: an FFN over the table
  ScaledEmbeddingWithPE(num_embeddings, d_model, max_len=5000, padding_idx=None) emb(tok) * sqrt(d) + pe, fused
  RotaryEmbedding(config, device=None)         HF's LlamaRotaryEmbedding: forward(x, position_ids) -> (cos, sin),
                                               every rope_type; .apply_rotary(q, k, position_ids) rotates in place
Functions: table, rows, add, embed, rope_cache, apply_rotary (in place, differentiable: its backward is the
inverse rotation), rotate_half / apply_rotary_pos_emb (HF's, for the cos/sin path).

Autograd: tables, cos and sin are constants (no gradient). add / the modules' x + pe pass the gradient to x;
embed to the embedding weight; apply_rotary to q and k (the transpose of a rotation is the rotation by the
opposite angle: the same float cos, -sin).
"""
from __future__ import annotations

import math
from typing import Any, Dict, Optional, Tuple, Union

import torch
from torch import Tensor, nn

from . import _posenc as _p
from ._posenc import PAD, Rope, Spec

__all__ = [
    "PositionalEncoding", "PositionalEncodingBatchFirst", "SinusoidalPositionalEmbedding",
    "LearnableSinusoidalPositionalEncoding", "ScaledEmbeddingWithPE", "RotaryEmbedding", "table", "rows", "add",
    "embed", "rope_cache", "apply_rotary", "rotate_half", "apply_rotary_pos_emb", "rope_from_config", "make_positions",
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


def _fast(x: Tensor) -> bool:
    return x.dtype == torch.float32 and x.device.type == "cpu" and x.layout == torch.strided and x.stride(-1) == 1


class _ExactPE(nn.Module):
    """The buffer ``pe`` filled with posenc's exact table, and the fused x + pe while it holds those values (a
    state_dict with other values, such as the original module's float32 table, is then used as loaded)."""

    def _set_table(self, spec: Spec, max_len: int, shape) -> None:
        self.spec = spec
        self.register_buffer("pe", table(spec, max_len).view(*shape))
        self._exact = True

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        exact = table(self.spec, self.pe.numel() // self.spec.d_model).view(self.pe.shape)
        self._exact = self.pe.dtype == torch.float32 and torch.equal(self.pe, exact)

    def _add(self, x: Tensor, seq_first: bool) -> Optional[Tensor]:
        """x + pe by the fused kernel; None when the fast path does not apply (the caller then adds the buffer)."""
        if not (x.dim() == 3 and self._exact and _fast(x) and x.size(-1) == self.spec.d_model
                and self.pe.device.type == "cpu"):
            return None
        if x.size(0 if seq_first else 1) > self.pe.numel() // self.spec.d_model:
            return None  # longer than max_len: the original's broadcast raises, and so does the fallback
        if seq_first and x.size(1) > 1:
            # [seq, batch, d] with a batch: the fused add would recompute each PE row per batch entry over
            # strided rows; adding the (exact) buffer is faster there (the report's Python section) and equal
            return None
        return add(x, self.spec, seq_first=seq_first)


class PositionalEncoding(_ExactPE):
    """The PyTorch tutorial's PositionalEncoding: buffer ``pe`` [max_len, 1, d_model] (the tutorial's
    interleaved sin/cos, here correctly rounded), ``forward(x)`` with x [seq, batch, d_model] returns
    ``dropout(x + pe[:seq])``. Float32 CPU inputs with batch 1 take posenc's fused add (exact PE computed on
    the fly, one pass over x); larger batches and other inputs the original expression with the exact
    buffer (faster there: one PE row serves the whole batch)."""

    def __init__(self, d_model: int, dropout: float = 0.1, max_len: int = 5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        self._set_table(Spec.vaswani(d_model), max_len, (max_len, 1, d_model))

    def forward(self, x: Tensor) -> Tensor:
        """dropout(x + pe[:seq]) for x [seq, batch, d_model]."""
        y = self._add(x, seq_first=True)
        if y is None:
            y = x + self.pe[: x.size(0)]
        return self.dropout(y)


class PositionalEncodingBatchFirst(_ExactPE):
    """The batch-first variant: buffer ``pe`` [1, max_len, d_model]; x [batch, seq, d_model];
    ``dropout(x + pe[:, :seq])``."""

    def __init__(self, d_model: int, dropout: float = 0.1, max_len: int = 5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        self._set_table(Spec.vaswani(d_model), max_len, (1, max_len, d_model))

    def forward(self, x: Tensor) -> Tensor:
        """dropout(x + pe[:, :seq]) for x [batch, seq, d_model]."""
        y = self._add(x, seq_first=False)
        if y is None:
            y = x + self.pe[:, : x.size(1)]
        return self.dropout(y)


# ---- fairseq -----------------------------------------------------------------------------------------------

def make_positions(tensor: Tensor, padding_idx: int) -> Tensor:
    """fairseq's utils.make_positions: padding_idx + 1 + the running count of non-pad tokens; pads keep
    padding_idx."""
    mask = tensor.ne(padding_idx).int()
    return (torch.cumsum(mask, dim=1).type_as(mask) * mask).long() + padding_idx


class SinusoidalPositionalEmbedding(nn.Module):
    """fairseq's SinusoidalPositionalEmbedding (sin|cos halves, frequencies 1e4^(-i/(h-1)), a zero column for
    an odd dim, zeros at padding_idx): ``forward(input, incremental_state=None, timestep=None, positions=None)``
    maps tokens [bsz, seq] to [bsz, seq, dim] (positions padding_idx + 1 + i over the non-pad tokens), or,
    decoding with incremental_state, to the one row [bsz, 1, dim] of position timestep + 1 (or seq). The rows
    are computed for the positions asked, exactly, at any length (no table to grow); ``weights`` holds the
    first init_size rows for code that reads it."""

    def __init__(self, embedding_dim: int, padding_idx: Optional[int], init_size: int = 1024):
        super().__init__()
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx if padding_idx is not None else 0
        self._zero_pad = padding_idx is not None  # fairseq zeroes the row only for a given padding_idx
        self.spec = Spec.fairseq(embedding_dim)
        self.weights = SinusoidalPositionalEmbedding.get_embedding(init_size, embedding_dim, padding_idx)
        self.onnx_trace = False
        self.register_buffer("_float_tensor", torch.FloatTensor(1))
        self.max_positions = int(1e5)

    @staticmethod
    def get_embedding(num_embeddings: int, embedding_dim: int, padding_idx: Optional[int] = None) -> Tensor:
        """fairseq's table of num_embeddings rows (row p is position p), exact."""
        emb = table(Spec.fairseq(embedding_dim), num_embeddings)
        if padding_idx is not None:
            emb[padding_idx, :] = 0
        return emb

    def forward(self, input: Tensor, incremental_state: Optional[Any] = None, timestep: Optional[Tensor] = None,
                positions: Optional[Tensor] = None) -> Tensor:
        """Tokens [bsz, seq] -> [bsz, seq, dim]; with incremental_state, the row of position timestep + 1
        (or seq), [bsz, 1, dim]; explicit positions are used as given (padding_idx -> zeros)."""
        bsz, seq_len = input.size(0), input.size(1)
        dtype = self._float_tensor.dtype
        if incremental_state is not None:
            pos = int(timestep.view(-1)[0]) + 1 if timestep is not None else seq_len
            row = rows(self.spec, torch.tensor([self.padding_idx + pos]), dtype=dtype)
            return row.view(1, 1, -1).expand(bsz, 1, -1)
        if positions is None:
            positions = make_positions(input, self.padding_idx)
        if self._zero_pad:
            positions = torch.where(positions == self.padding_idx, torch.full_like(positions, PAD), positions)
        return rows(self.spec, positions, dtype=dtype).view(bsz, seq_len, -1)


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

def _get(config: Any, name: str, default: Any = None) -> Any:
    v = config.get(name, default) if isinstance(config, dict) else getattr(config, name, default)
    return default if v is None else v


def _scaling(config: Any) -> Dict[str, Any]:
    rs = _get(config, "rope_scaling") or _get(config, "rope_parameters") or {}
    return dict(rs) if isinstance(rs, dict) else {}


def _rope_type(rs: Dict[str, Any]) -> str:
    t = rs.get("rope_type", rs.get("type")) or "default"
    return "longrope" if t == "su" else t


def _rotary_dim(config: Any) -> int:
    head_dim = _get(config, "head_dim") or _get(config, "hidden_size") // _get(config, "num_attention_heads")
    return int(head_dim * _get(config, "partial_rotary_factor", 1.0))


def rope_from_config(config: Any, seq_len: Optional[int] = None, pairs: str = "halves") -> Rope:
    """The posenc.Rope of an HF model config (a dict or an object with attributes: rope_theta, head_dim or
    hidden_size / num_attention_heads, partial_rotary_factor, max_position_embeddings, rope_scaling (or v5's
    rope_parameters) and Phi-3's top-level original_max_position_embeddings), for the current seq_len of the
    dynamic and longrope types. Each frequency and the attention factor are the correctly rounded values of
    HF's formulas (posenc.rope_init)."""
    rs = _scaling(config)
    kind = _rope_type(rs)
    base = float(rs.get("rope_theta") or _get(config, "rope_theta", 10000.0))
    max_pos = _get(config, "max_position_embeddings")
    original = rs.get("original_max_position_embeddings")
    top = _get(config, "original_max_position_embeddings")
    if kind == "longrope" and top:
        # Phi-3: the original length outside rope_scaling, and factor = max_position_embeddings / original
        original = top
        rs["factor"] = max_pos / top
    rs["rope_type"] = kind
    return _p.rope_init(_rotary_dim(config), base, rs, pairs=pairs, max_position_embeddings=max_pos,
                        original_max_position_embeddings=original or max_pos, seq_len=seq_len)


class RotaryEmbedding(nn.Module):
    """HF transformers' LlamaRotaryEmbedding, exact: ``RotaryEmbedding(config, device=None)``,
    ``forward(x, position_ids)`` -> ``(cos, sin)``, each [batch, seq, rotary_dim] in x.dtype (cos_i and sin_i
    twice, as HF's ``cat(freqs, freqs)``, times the attention scaling), for every rope_type of the config
    (default, linear, dynamic, yarn, llama3, longrope), with HF's runtime updates (dynamic: recomputed when the
    sequence grows past the cached length, reset below max_position_embeddings; longrope: the long factors
    while max(position_ids) + 1 > original_max_position_embeddings). Use the result with
    apply_rotary_pos_emb(q, k, cos, sin), or rotate q and k in place, fused, with
    ``self.apply_rotary(q, k, position_ids)``.

    The older signature RotaryEmbedding(dim, max_position_embeddings=2048, base=10000, device=None,
    scaling_factor=1.0, rope_type="default") is accepted too (a first argument that is an int)."""

    def __init__(self, config: Any = None, device: Optional[torch.device] = None, *, dim: Optional[int] = None,
                 max_position_embeddings: int = 2048, base: float = 10000.0, scaling_factor: float = 1.0,
                 rope_type: str = "default"):
        super().__init__()
        if isinstance(config, int):  # RotaryEmbedding(dim, max_position_embeddings, base, device, ...)
            config, dim = None, config
            if isinstance(device, int):
                device, max_position_embeddings = None, device
        if config is None:
            rs = {"rope_type": rope_type, "factor": scaling_factor} if rope_type != "default" else None
            config = {"head_dim": dim, "rope_theta": base, "max_position_embeddings": max_position_embeddings,
                      "rope_scaling": rs}
        if device is not None and torch.device(device).type != "cpu":
            raise ValueError("posenc computes on the CPU (device %s)" % device)
        self.config = config
        rs = _scaling(config)
        self.rope_type = _rope_type(rs)
        self.max_seq_len_cached = _get(config, "max_position_embeddings")
        self.original_max_seq_len = self.max_seq_len_cached
        self.original_rope = rope_from_config(config)
        self.rope = self.original_rope
        if self.rope_type == "longrope":
            self.longrope_original = _get(config, "original_max_position_embeddings") or \
                rs.get("original_max_position_embeddings") or self.max_seq_len_cached
        self._set_buffers()

    def _set_buffers(self) -> None:
        r = self.rope
        h = r.rotary_dim // 2
        inv = r.freq if r.freq is not None else [r.base ** (-2.0 * i / r.rotary_dim) for i in range(h)]
        self.register_buffer("inv_freq", torch.tensor(inv, dtype=torch.float64).float(), persistent=False)
        self.attention_scaling = r.attention_scale

    def _update(self, position_ids: Tensor) -> None:
        seq_len = int(position_ids.max()) + 1 if position_ids.numel() else 0
        if "dynamic" in self.rope_type:
            if seq_len > self.max_seq_len_cached:  # growth
                self.rope = rope_from_config(self.config, seq_len=seq_len)
                self.max_seq_len_cached = seq_len
                self._set_buffers()
            if seq_len < self.original_max_seq_len < self.max_seq_len_cached:  # reset
                self.rope = self.original_rope
                self.max_seq_len_cached = self.original_max_seq_len
                self._set_buffers()
        elif self.rope_type == "longrope":
            want_long = seq_len > self.longrope_original
            if want_long != (self.rope is not self.original_rope):
                if want_long:
                    if not hasattr(self, "long_rope"):
                        self.long_rope = rope_from_config(self.config, seq_len=self.longrope_original + 1)
                    self.rope = self.long_rope
                else:
                    self.rope = self.original_rope
                self._set_buffers()

    @torch.no_grad()
    def forward(self, x: Tensor, position_ids: Tensor) -> Tuple[Tensor, Tensor]:
        """(cos, sin) [batch, seq, rotary_dim] in x.dtype for position_ids [batch, seq] (HF's layout: the
        rotary_dim / 2 values twice, times the attention scaling). x only gives the dtype."""
        if self.rope_type in ("dynamic", "longrope"):
            self._update(position_ids)
        pos = _positions(position_ids)
        c, s = _p.rope_cache(self.rope, positions=pos.reshape(-1))
        c, s = torch.from_numpy(c), torch.from_numpy(s)
        shape = (*pos.shape, self.rope.rotary_dim)
        cos, sin = torch.cat((c, c), dim=-1).view(shape), torch.cat((s, s), dim=-1).view(shape)
        if x.dtype != torch.float32 or x.device.type != "cpu":
            return cos.to(device=x.device, dtype=x.dtype), sin.to(device=x.device, dtype=x.dtype)
        return cos, sin

    def apply_rotary(self, q: Tensor, k: Optional[Tensor], position_ids: Tensor,
                     unsqueeze_dim: int = 1) -> Tuple[Tensor, Optional[Tensor]]:
        """Rotates q and k in place with the current rope (after the same runtime update as forward)."""
        if self.rope_type in ("dynamic", "longrope"):
            self._update(position_ids)
        return apply_rotary(q, k, position_ids, self.rope, unsqueeze_dim=unsqueeze_dim)


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
    for the caller (RotaryEmbedding copies the first half there, HF's layout). posenc.PAD gives zeros."""
    pos = _positions(position_ids).reshape(-1)
    r = rope.rotary_dim
    cos = torch.empty(*position_ids.shape, r)
    sin = torch.empty(*position_ids.shape, r)
    n, h = pos.numel(), r // 2
    _p.rope_cache(rope, positions=pos, out=(cos.view(n, r)[:, :h], sin.view(n, r)[:, :h]))
    return cos, sin


class _Rotated(torch.autograd.Function):
    """Marks a tensor that apply_rotary has already rotated in place (all checks and the one fused pass over q
    and k happen before, on the detached tensors); its backward is the inverse rotation: the transpose of the
    rotation by a is the rotation by -a, the same float cos and the negated sin."""

    @staticmethod
    def forward(ctx, x: Tensor, positions: Tensor, rope: Rope, unsqueeze_dim: int) -> Tensor:
        ctx.mark_dirty(x)
        ctx.rope, ctx.unsqueeze_dim = rope, unsqueeze_dim
        ctx.save_for_backward(positions)
        return x

    @staticmethod
    def backward(ctx, g: Tensor):
        (positions,) = ctx.saved_tensors
        inverse = ctx.rope.with_position_scale(-ctx.rope.position_scale)
        g = g.contiguous().clone()
        _p.rope(inverse, g, positions=positions, heads_first=ctx.unsqueeze_dim == 1)
        return g, None, None, None


def apply_rotary(q: Tensor, k: Optional[Tensor], position_ids: Tensor, rope: Rope,
                 unsqueeze_dim: int = 1) -> Tuple[Tensor, Optional[Tensor]]:
    """Rotates q and k in place by posenc's fused kernel (posenc.rope_qk) and returns them. q, k: HF's
    [batch, heads, seq, head_dim] (unsqueeze_dim=1) or [batch, seq, heads, head_dim] (unsqueeze_dim=2), any
    strides with a contiguous last axis (views of a fused QKV projection are fine), float32, bfloat16 or
    float16, GQA head counts; position_ids [batch, seq] (or [seq]). Only the first rope.rotary_dim elements
    of each head row change; the result equals apply_rotary_pos_emb(q, k, cos, sin) with the exact cos/sin,
    rounded once (the contract's rotation). Differentiable in q and k (an autograd in-place op)."""
    positions = _positions(position_ids)
    if q.dim() == 4 and positions.dim() == 1:
        positions = positions.unsqueeze(0).expand(q.size(0), -1).contiguous()
    if unsqueeze_dim not in (1, 2):
        raise ValueError("unsqueeze_dim must be 1 ([batch, heads, seq, dim]) or 2 ([batch, seq, heads, dim])")
    grad = torch.is_grad_enabled() and (q.requires_grad or (k is not None and k.requires_grad))
    if grad:
        for t in (q, k):  # refused before anything is written, as torch's own in-place ops do
            if t is not None and t.is_leaf and t.requires_grad:
                raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    _p.rope_qk(rope, q.detach() if grad else q, None if k is None else (k.detach() if grad else k),
               positions=positions, heads_first=unsqueeze_dim == 1)
    if grad:
        # one single-output Function per tensor: q and k may be views (HF's .view().transpose(), fused QKV)
        if q.requires_grad:
            q = _Rotated.apply(q, positions, rope, unsqueeze_dim)
        if k is not None and k.requires_grad:
            k = _Rotated.apply(k, positions, rope, unsqueeze_dim)
    return q, k


def rotate_half(x: Tensor) -> Tensor:
    """HF's rotate_half: cat(-x2, x1) of the halves of the last axis."""
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def apply_rotary_pos_emb(q: Tensor, k: Tensor, cos: Tensor, sin: Tensor, position_ids: Optional[Tensor] = None,
                         unsqueeze_dim: int = 1) -> Tuple[Tensor, Tensor]:
    """HF's apply_rotary_pos_emb (out of place, elementwise in the tensors' dtype), for cos/sin from
    RotaryEmbedding.forward; apply_rotary is the fused, in-place, once-rounded equivalent."""
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
