"""posenc.torch, the rotary embeddings of diffusers' image and video transformers: drop-ins with diffusers'
signatures, defaults, attributes, output shapes and dtypes (diffusers 0.40.0.dev0, 58eb52c0; docs/python.md).
Re-exported by posenc.torch.

  get_1d_rotary_pos_embed(dim, pos, theta=10000.0, use_real=False, linear_factor=1.0, ntk_factor=1.0,
                          repeat_interleave_real=True, freqs_dtype=torch.float32)    models/embeddings.py
  get_2d_rotary_pos_embed(embed_dim, crops_coords, grid_size, use_real=True, device=None, output_type="np")
  get_2d_rotary_pos_embed_from_grid(embed_dim, grid, use_real=False)                      (HunyuanDiT)
  apply_rotary_emb(x, freqs_cis, use_real=True, use_real_unbind_dim=-1, sequence_dim=2)
                                  the rotation by the given tables, correctly rounded (posenc.rope_tables)
  get_3d_rotary_pos_embed(embed_dim, crops_coords, grid_size, temporal_size, theta=10000, use_real=True,
                          grid_type="linspace", max_size=None, device=None)         (CogVideoX)
  FluxPosEmbed(theta, axes_dim)             forward(ids) -> (freqs_cos, freqs_sin)   diffusers transformer_flux.py
  WanRotaryPosEmbed(attention_head_dim, patch_size, max_seq_len, theta=10000.0)
                                  forward(hidden_states) -> (freqs_cos, freqs_sin)   diffusers transformer_wan.py
  HunyuanVideoRotaryPosEmbed(patch_size, patch_size_t, rope_dim, theta=256.0)
                                  forward(hidden_states) -> (freqs_cos, freqs_sin)
  QwenEmbedRope(theta, axes_dim, scale_rope=False)
                                  forward(video_fhw, device=None, max_txt_seq_len=None) -> (vid_freqs, txt_freqs)
                                                                     diffusers transformer_qwenimage.py
  LTXVideoRotaryPosEmbed(dim, base_num_frames=20, base_height=2048, base_width=2048, patch_size=1,
                         patch_size_t=1, theta=10000.0)
                                  forward(hidden_states, num_frames, height, width, rope_interpolation_scale,
                                          video_coords) -> (cos, sin)           diffusers transformer_ltx.py

Positions are taken as diffusers takes them (FluxPosEmbed: ``ids.float()``; get_1d_rotary_pos_embed: an int n is
``arange(n)``, an array or tensor its values as given; Wan: the integer frame, row and column indices). The
frequencies are exact: axis a of d_a dimensions turns pair k at theta^(-2k/d_a), with diffusers' ``theta *
ntk_factor`` (a double product, as diffusers forms it) and ``/ linear_factor``. Where every position is an
integer (|p| < 2^31: Flux's and Wan's grids, CogVideoX 1.5's), each cos / sin is the correctly rounded float32
of the exact angle, the same bits on every path. Fractional positions (CogVideoX 1.0's linspace grids, LTX's
scaled ones, HunyuanDiT's crops) are real-valued positions (posenc_rope_cache_real_f32): the position as
diffusers holds it (float32 upstream, exact in double) times the exact frequency, each cos / sin the correctly
rounded float32 of that exact angle too. The float32 ``freqs_dtype`` of diffusers (its path on MPS, and
HunyuanVideo's) is not reproduced: posenc computes the exact values its float64 path approximates.

What differs from diffusers: only the values (diffusers' float32 paths are off by up to |p f| 2^-24, its float64
path by an ulp of float32 where the double angle rounds across); ``use_real=False`` with a float64
``freqs_dtype`` returns complex128 from the double path (the angle in double, as diffusers computes it: a
complex128 result carries more than float32 can, so it is not rounded from posenc's floats); positions of
2^31 or more also take that double path.
"""
from __future__ import annotations

import functools
import sys
from typing import List, Optional, Sequence, Tuple, Union

import numpy as np
import torch
from torch import Tensor, nn

from . import _posenc as _p
from ._posenc import Rope

__all__ = ["get_1d_rotary_pos_embed", "get_2d_rotary_pos_embed", "get_2d_rotary_pos_embed_from_grid",
           "get_3d_rotary_pos_embed", "apply_rotary_emb", "FluxPosEmbed", "WanRotaryPosEmbed",
           "HunyuanVideoRotaryPosEmbed", "LTXVideoRotaryPosEmbed", "QwenEmbedRope"]


@functools.lru_cache(maxsize=64)
def _cached_rope(dims: Tuple[int, ...], theta: float, linear_factor: float = 1.0) -> Rope:
    """The spec of _per_axis_rope (or one axis / linear_factor), built once per key: the exact frequencies cost
    more than a small table."""
    if linear_factor != 1.0:  # theta^(-2k/dim) / linear_factor, each the double nearest the exact quotient
        return _p.rope_init(dims[0], theta, {"rope_type": "linear", "factor": linear_factor}, pairs="interleaved")
    return _per_axis_rope(dims, theta)


def _per_axis_rope(dims: Sequence[int], theta: float) -> Rope:
    """The posenc spec of diffusers' per-axis RoPE: axes of dims[a] dimensions (even), each at theta^(-2k/d_a),
    adjacent pairs (diffusers' repeat_interleave layout), the axes one after another."""
    for d in dims:
        if int(d) != d or d < 2 or d % 2:
            raise ValueError("dim: %r is not a positive even width (diffusers asserts dim %% 2 == 0)" % (d,))
    if len(dims) > 4:
        raise ValueError("axes_dim: posenc takes up to 4 axes, got %d" % len(dims))
    base = _p.Rope(int(sum(dims)), pairs="interleaved", base=float(theta))
    return _p.rope_sections(base, [int(d) // 2 for d in dims], "per_axis")


def _integer_positions(pos: Tensor) -> Optional[Tensor]:
    """pos as int64 when every value is an integer of magnitude below 2^31, else None (real positions); a
    position that is not finite raises ValueError."""
    if not pos.is_floating_point():
        p = pos.long()
        return p if p.numel() == 0 or int(p.abs().max()) < 2 ** 31 else None
    p64 = pos.double()
    r = torch.round(p64)
    if torch.equal(p64, r) and (r.numel() == 0 or float(r.abs().max()) < 2 ** 31):  # NaN is never equal
        return r.long()
    if not bool(torch.isfinite(p64).all()):
        raise ValueError("positions: not finite")
    return None


def _cos_sin(rope: Rope, pos: Tensor) -> Tuple[Tensor, Tensor]:
    """(cos, sin), each [n, r/2] float32, for positions [A, n] (A = rope.axes; [n] for one axis): the exact cache
    at integer positions, or at real ones (the same guarantee); the double path only past 2^31."""
    h = rope.rotary_dim // 2
    n = pos.shape[-1]
    ints = _integer_positions(pos)
    real = None
    if ints is None:
        real = pos.double()
        if real.numel() and float(real.abs().max()) >= 2 ** 31:
            real = None
    if ints is not None or real is not None:
        p = ints if ints is not None else real
        cos, sin = torch.empty(n, h), torch.empty(n, h)
        if n:
            _p.rope_cache(rope, positions=p.reshape(rope.axes, n) if rope.axes > 1 else p.reshape(n), out=(cos, sin))
        return cos, sin
    ang = _double_angles(rope, pos)
    return torch.cos(ang).float(), torch.sin(ang).float()


_DOUBLE_TABLES: dict = {}


def _interleaved(rope: Rope, pos: Tensor, device) -> Tuple[Tensor, Tensor]:
    """diffusers' repeat-interleaved (cos, sin) tables, [n, r] float32 on device: _cos_sin's, each pair twice."""
    cos, sin = _cos_sin(rope, pos)
    return cos.repeat_interleave(2, dim=1).to(device), sin.repeat_interleave(2, dim=1).to(device)


def _double_tables(rope: Rope) -> Tuple[Tensor, Optional[Tensor]]:
    """The double path's per-pair frequencies (times position_scale) and axis index of a spec, kept per spec
    object (the specs themselves are built once: _cached_rope, the modules' constructors)."""
    key = id(rope)
    got = _DOUBLE_TABLES.get(key)
    if got is None or got[0] is not rope:
        freq = torch.tensor(list(rope.freq) if rope.freq is not None else
                            [rope.base ** (-2.0 * i / rope.rotary_dim) for i in range(rope.rotary_dim // 2)],
                            dtype=torch.float64) * rope.position_scale
        axis = torch.tensor(list(rope.axis), dtype=torch.long) if rope.axes > 1 else None
        if len(_DOUBLE_TABLES) > 256:
            _DOUBLE_TABLES.clear()
        got = _DOUBLE_TABLES[key] = (rope, freq, axis)
    return got[1], got[2]


def _double_angles(rope: Rope, pos: Tensor) -> Tensor:
    """p * f in double, [n, r/2]: pair i at its axis's position."""
    freq, axis = _double_tables(rope)
    p = pos.double().reshape(rope.axes, -1)
    if axis is not None:
        return p[axis].t() * freq  # [n, h]: pair i takes p[axis[i]]
    return torch.outer(p[0], freq)


def get_1d_rotary_pos_embed(dim: int, pos: Union[np.ndarray, int, Tensor], theta: float = 10000.0,
                            use_real: bool = False, linear_factor: float = 1.0, ntk_factor: float = 1.0,
                            repeat_interleave_real: bool = True,
                            freqs_dtype: torch.dtype = torch.float32) -> Union[Tensor, Tuple[Tensor, Tensor]]:
    """diffusers' get_1d_rotary_pos_embed: use_real and repeat_interleave_real: (cos, sin) [S, dim] float32,
    c0 c0 c1 c1 ..; use_real alone: [cos, cos] halves; else complex [S, dim/2] (complex64, or complex128 when
    diffusers' outer product is float64, a float64 freqs_dtype or float64 positions: from the double path)."""
    assert dim % 2 == 0
    if isinstance(pos, int):
        pos = torch.arange(pos)
    if isinstance(pos, np.ndarray):
        pos = torch.from_numpy(pos)
    if not isinstance(pos, Tensor):
        pos = torch.as_tensor(pos)
    device = pos.device
    theta = theta * ntk_factor  # as diffusers forms it: a double product
    rope = _cached_rope((int(dim),), float(theta), float(linear_factor))
    flat = pos.reshape(-1)
    if not use_real:
        # diffusers' torch.outer(pos, freqs) promotes: float64 positions or frequencies give complex128
        if torch.promote_types(pos.dtype, freqs_dtype) == torch.float64:
            ang = _double_angles(rope, flat.cpu())
            out = torch.polar(torch.ones_like(ang), ang)
        else:
            cos, sin = _cos_sin(rope, flat.cpu())
            out = torch.complex(cos, sin)
        return out.to(device)
    if repeat_interleave_real:
        return _interleaved(rope, flat.cpu(), device)
    cos, sin = _cos_sin(rope, flat.cpu())
    return torch.cat([cos, cos], dim=-1).to(device), torch.cat([sin, sin], dim=-1).to(device)


def _linspace_grid(start: float, stop: float, size: int, device: Optional[torch.device]) -> Tensor:
    """diffusers' grid: torch.linspace(start, stop * (size - 1) / size, size) in float32 (np.linspace's
    endpoint=False)."""
    return torch.linspace(start, stop * (size - 1) / size, size, device=device, dtype=torch.float32)


def get_2d_rotary_pos_embed(embed_dim: int, crops_coords, grid_size, use_real: bool = True,
                            device: Optional[torch.device] = None, output_type: str = "np"):
    """diffusers' get_2d_rotary_pos_embed (HunyuanDiT): grids over the crop, w first in the meshgrid (grid[0] holds
    the columns), the first embed_dim // 2 channels from grid[0], the rest from grid[1]; (cos, sin) [H W,
    embed_dim] float32, or complex [H W, embed_dim / 2]. output_type "np" builds the grids with numpy's
    float32 linspace (endpoint=False), as diffusers' deprecated path does."""
    start, stop = crops_coords
    if output_type == "np":
        grid_h = torch.from_numpy(np.linspace(start[0], stop[0], grid_size[0], endpoint=False, dtype=np.float32))
        grid_w = torch.from_numpy(np.linspace(start[1], stop[1], grid_size[1], endpoint=False, dtype=np.float32))
    else:
        grid_h = _linspace_grid(start[0], stop[0], grid_size[0], device)
        grid_w = _linspace_grid(start[1], stop[1], grid_size[1], device)
    assert embed_dim % 4 == 0
    return _separable_2d(embed_dim, grid_w, grid_h, use_real, device if output_type != "np" else None)


def _separable_2d(embed_dim: int, grid_w: Tensor, grid_h: Tensor, use_real: bool, device) -> Union[Tensor,
                                                                                                  Tuple[Tensor, Tensor]]:
    """The table of diffusers' meshgrid(grid_w, grid_h) grid: row i W + j holds, in its first embed_dim // 2
    channels, the 1-D rotary embedding of grid_w[j], then that of grid_h[i]. The grid is separable: the values
    of the W + H coordinates are made once (exact, at the float32 positions as given) and broadcast into one
    buffer, instead of H W rows of each half."""
    half = embed_dim // 2
    w, h = grid_w.numel(), grid_h.numel()
    rope = _cached_rope((half,), 10000.0, 1.0)
    cos, sin = _cos_sin(rope, torch.cat([grid_w.reshape(-1), grid_h.reshape(-1)]).cpu())  # [W + H, half / 2]
    if use_real:
        both = torch.stack([cos, sin]).repeat_interleave(2, dim=2)  # [2, W + H, half]
        out = torch.empty(2, h, w, embed_dim)
        out[:, :, :, :half] = both[:, None, :w, :]
        out[:, :, :, half:] = both[:, w:, None, :]
        out = out.view(2, h * w, embed_dim)
        if device is not None:
            out = out.to(device)
        return out[0], out[1]
    c = torch.complex(cos, sin)
    out = torch.empty(h, w, half, dtype=torch.complex64)
    out[:, :, : half // 2] = c[None, :w, :]
    out[:, :, half // 2:] = c[w:, None, :]
    out = out.view(h * w, half)
    return out.to(device) if device is not None else out


def get_3d_rotary_pos_embed(embed_dim: int, crops_coords, grid_size, temporal_size: int, theta: int = 10000,
                            use_real: bool = True, grid_type: str = "linspace", max_size=None,
                            device: Optional[torch.device] = None) -> Tuple[Tensor, Tensor]:
    """diffusers' get_3d_rotary_pos_embed (CogVideoX): axes of embed_dim // 4 (time) and embed_dim // 8 * 3 (height,
    width) channels; "linspace" grids over the crop (1.0: fractional) or "slice" grids (1.5: integers); (cos,
    sin) [T H W, embed_dim'] float32, time-major, each axis's block repeat-interleaved."""
    if use_real is not True:
        raise ValueError(" `use_real = False` is not currently supported for get_3d_rotary_pos_embed")
    grid_size_h, grid_size_w = grid_size
    if grid_type == "linspace":
        start, stop = crops_coords
        grid_h = _linspace_grid(start[0], stop[0], grid_size_h, device)
        grid_w = _linspace_grid(start[1], stop[1], grid_size_w, device)
        grid_t = _linspace_grid(0, temporal_size, temporal_size, device)
    elif grid_type == "slice":
        max_h, max_w = max_size
        grid_h = torch.arange(grid_size_h, device=device, dtype=torch.float32)  # diffusers: arange(max_h)[:h]
        grid_w = torch.arange(grid_size_w, device=device, dtype=torch.float32)
        grid_t = torch.arange(temporal_size, device=device, dtype=torch.float32)
        if grid_size_h > max_h or grid_size_w > max_w:
            raise ValueError("grid_size %s past max_size %s" % (tuple(grid_size), tuple(max_size)))
    else:
        raise ValueError("Invalid value passed for `grid_type`.")
    dims = (embed_dim // 4, embed_dim // 8 * 3, embed_dim // 8 * 3)
    # One cache call for the three axes' 1-D tables: rows 0 .. m - 1 hold axis a's grid (its last value repeated
    # past its length), the per-axis spec gives each pair its axis's position.
    grids = (grid_t, grid_h, grid_w)
    m = max(g.numel() for g in grids)
    pos = torch.zeros(3, m)  # rows past an axis's length: position 0, unused
    for a, g in enumerate(grids):
        pos[a, : g.numel()] = g
    both = torch.stack(_cos_sin(_cached_rope(dims, float(theta), 1.0), pos))  # [2, m, 32]: cos, sin
    # each axis's rows broadcast over the others, its pairs repeat-interleaved; cos and sin in one pass
    t, h, w = (part[:, : g.numel()].repeat_interleave(2, dim=2)
               for part, g in zip(both.split([d // 2 for d in dims], dim=2), grids))
    shape = (2, temporal_size, grid_size_h, grid_size_w)
    out = torch.cat([t[:, :, None, None, :].expand(*shape, -1), h[:, None, :, None, :].expand(*shape, -1),
                     w[:, None, None, :, :].expand(*shape, -1)], dim=-1)
    out = out.view(2, temporal_size * grid_size_h * grid_size_w, -1).to(device or "cpu")
    return out[0], out[1]


def get_2d_rotary_pos_embed_from_grid(embed_dim: int, grid, use_real: bool = False):
    """diffusers' get_2d_rotary_pos_embed_from_grid (HunyuanDiT): grid [2, ...] (NumPy or tensor), the first
    embed_dim // 2 channels from grid[0]'s positions, the rest from grid[1]'s: (cos, sin) [N, embed_dim] float32
    (use_real, repeat-interleaved), else complex64 [N, embed_dim / 2]; each value correctly rounded at the
    positions as given (fractional ones too)."""
    assert embed_dim % 4 == 0
    if isinstance(grid, np.ndarray):
        grid = torch.from_numpy(grid)
    emb_h = get_1d_rotary_pos_embed(embed_dim // 2, grid[0].reshape(-1), use_real=use_real)
    emb_w = get_1d_rotary_pos_embed(embed_dim // 2, grid[1].reshape(-1), use_real=use_real)
    if use_real:
        return torch.cat([emb_h[0], emb_w[0]], dim=1), torch.cat([emb_h[1], emb_w[1]], dim=1)
    return torch.cat([emb_h, emb_w], dim=1)


_FORMATS = (torch.float32, torch.bfloat16, torch.float16)


def _diffusers_apply(x: Tensor, freqs_cis, use_real: bool, use_real_unbind_dim: int, sequence_dim: int) -> Tensor:
    """diffusers' own expression (apply_rotary_emb, 58eb52c0), for what posenc's C call does not take: tensors
    off the CPU, float64 operands, gradients, shapes only broadcasting makes fit."""
    if use_real:
        cos, sin = freqs_cis
        if sequence_dim == 2:
            cos, sin = cos[None, None, :, :], sin[None, None, :, :]
        else:
            cos, sin = cos[None, :, None, :], sin[None, :, None, :]
        cos, sin = cos.to(x.device), sin.to(x.device)
        if use_real_unbind_dim == -1:
            x_real, x_imag = x.reshape(*x.shape[:-1], -1, 2).unbind(-1)
            x_rotated = torch.stack([-x_imag, x_real], dim=-1).flatten(3)
        else:
            x_real, x_imag = x.reshape(*x.shape[:-1], 2, -1).unbind(-2)
            x_rotated = torch.cat([-x_imag, x_real], dim=-1)
        return (x.float() * cos + x_rotated.float() * sin).to(x.dtype)
    x_rotated = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    x_out = torch.view_as_real(x_rotated * freqs_cis.unsqueeze(2)).flatten(3)
    return x_out.type_as(x)


def _table(t: Tensor, shape: Tuple[int, int]) -> Optional[Tensor]:
    """A float32 CPU table of `shape` (rows may repeat) from a table diffusers broadcasts to it, or None."""
    if t.device.type != "cpu" or t.dtype not in _FORMATS or t.ndim != 2:
        return None
    try:
        t = t.expand(shape)
    except RuntimeError:
        return None
    t = t.float().resolve_neg()  # bfloat16 / float16 widen exactly, as diffusers' x.float() * cos does
    return t if t.stride(-1) == 1 else t.contiguous()


def _grad(*ts: Tensor) -> bool:
    return torch.is_grad_enabled() and any(t.requires_grad for t in ts)


def apply_rotary_emb(x: Tensor, freqs_cis: Union[Tensor, Tuple[Tensor, Tensor]], use_real: bool = True,
                     use_real_unbind_dim: int = -1, sequence_dim: int = 2) -> Tensor:
    """diffusers' apply_rotary_emb: x [B, H, S, D] (sequence_dim 2) or [B, S, H, D] (sequence_dim 1); use_real:
    freqs_cis = (cos, sin) [S, D], pairs adjacent (use_real_unbind_dim -1: Flux, CogVideoX, HunyuanDiT, ...) or
    halves (-2: Stable Audio, OmniGen, CogView4, Cosmos); else freqs_cis complex [B or 1, S, D / 2] with x
    [B, S, H, D] (Lumina). Returns a new tensor of x's dtype: each element the correctly rounded float32 of
    x cos + x' sin from the given tables (x' the pair partner, -x_imag or x_real as diffusers stacks them), then
    rounded to x's dtype, in one pass (posenc_rope_tables_*). Where that call does not apply (x or the tables
    off the CPU, float64 x or tables, complex128 freqs, a graph that needs gradients, tables that fit only by
    broadcasting x up) diffusers' own expression runs, with diffusers' values."""
    if use_real:
        if sequence_dim not in (1, 2):
            raise ValueError(f"`sequence_dim={sequence_dim}` but should be 1 or 2.")
        if use_real_unbind_dim not in (-1, -2):
            raise ValueError(f"`use_real_unbind_dim={use_real_unbind_dim}` but should be -1 or -2.")
        cos, sin = freqs_cis
        ok = x.device.type == "cpu" and x.dtype in _FORMATS and x.ndim == 4 and not _grad(x, cos, sin)
        if ok and x.shape[-1] % 2 == 0 and x.numel():
            shape = (x.shape[sequence_dim], x.shape[-1])
            c, s = _table(cos, shape), _table(sin, shape)
            if c is not None and s is not None:
                src = x.resolve_neg() if x.stride(-1) == 1 else x.resolve_neg().contiguous()
                out = torch.empty_like(src)
                _p.rope_tables(src, c, s, pairs="interleaved" if use_real_unbind_dim == -1 else "halves",
                               heads_first=sequence_dim == 2, out=out)
                return out
        return _diffusers_apply(x, freqs_cis, use_real, use_real_unbind_dim, sequence_dim)
    f = freqs_cis
    if (x.device.type == "cpu" and x.dtype in _FORMATS and x.ndim == 4 and x.shape[-1] % 2 == 0 and x.numel()
            and isinstance(f, Tensor) and f.dtype == torch.complex64 and f.device.type == "cpu" and f.ndim == 3
            and f.shape[1:] == (x.shape[1], x.shape[-1] // 2) and f.shape[0] in (1, x.shape[0])
            and not _grad(x, f)):
        ri = torch.view_as_real(f.resolve_conj().resolve_neg())  # [Bf, S, D/2, 2]: cos, sin of each pair
        c = ri[..., 0].repeat_interleave(2, dim=-1)
        s = ri[..., 1].repeat_interleave(2, dim=-1)
        if f.shape[0] == 1:
            c, s = c[0], s[0]
        src = x.resolve_neg() if x.stride(-1) == 1 else x.resolve_neg().contiguous()
        out = torch.empty_like(src)
        _p.rope_tables(src, c.contiguous(), s.contiguous(), pairs="interleaved", heads_first=False, out=out)
        return out
    return _diffusers_apply(x, freqs_cis, use_real, use_real_unbind_dim, sequence_dim)


class FluxPosEmbed(nn.Module):
    """diffusers' FluxPosEmbed(theta, axes_dim): forward(ids [S, A]) -> (freqs_cos, freqs_sin), each
    [S, sum(axes_dim)] float32 on ids' device, axis a's block repeat-interleaved; ids.float() as diffusers
    takes them (Flux's image ids are integers: exact). No parameters or buffers, as the original."""

    def __init__(self, theta: int, axes_dim: List[int]):
        super().__init__()
        self.theta = theta
        self.axes_dim = axes_dim
        self._rope = _per_axis_rope(list(axes_dim), float(theta))

    def forward(self, ids: Tensor) -> Tuple[Tensor, Tensor]:
        """(freqs_cos, freqs_sin) of ids [S, A] (or [1, S, A]), each [S, sum(axes_dim)] float32 on ids' device."""
        if ids.ndim == 3:  # diffusers: 3-D ids are deprecated and read as ids[0]
            ids = ids[0]
        n_axes = ids.shape[-1]
        if n_axes != len(self.axes_dim):
            raise ValueError("ids: %d columns for %d axes (axes_dim %s)" % (n_axes, len(self.axes_dim),
                                                                          list(self.axes_dim)))
        return _interleaved(self._rope, ids.float().cpu().t(), ids.device)


class WanRotaryPosEmbed(nn.Module):
    """diffusers' WanRotaryPosEmbed(attention_head_dim, patch_size, max_seq_len, theta=10000.0): t_dim, h_dim,
    w_dim and the non-persistent buffers freqs_cos / freqs_sin ([max_seq_len, head_dim] float32: positions
    0 .. max_seq_len - 1 of each axis, repeat-interleaved), here exact; forward(hidden_states [B, C, F, H, W])
    -> (freqs_cos, freqs_sin), each [1, F/p_t * H/p_h * W/p_w, 1, head_dim], frame-major."""

    def __init__(self, attention_head_dim: int, patch_size: Tuple[int, int, int], max_seq_len: int,
                 theta: float = 10000.0):
        super().__init__()
        self.attention_head_dim = attention_head_dim
        self.patch_size = patch_size
        self.max_seq_len = max_seq_len
        h_dim = w_dim = 2 * (attention_head_dim // 6)
        t_dim = attention_head_dim - h_dim - w_dim
        self.t_dim, self.h_dim, self.w_dim = t_dim, h_dim, w_dim
        # positions 0 .. max_seq_len - 1 on the three axes at once (the per-axis spec: diffusers' three 1-D
        # tables side by side), in one storage (forward slices both in one pass); the buffers are its halves
        rope = _cached_rope((t_dim, h_dim, w_dim), float(theta))
        self._both = torch.stack(_interleaved(rope, torch.arange(max_seq_len).expand(3, -1), None))
        self.register_buffer("freqs_cos", self._both[0], persistent=False)
        self.register_buffer("freqs_sin", self._both[1], persistent=False)

    def forward(self, hidden_states: Tensor) -> Tuple[Tensor, Tensor]:
        """(freqs_cos, freqs_sin) of the latent [B, C, F, H, W]'s patches, each [1, F H W / (p_t p_h p_w), 1,
        head_dim], frame-major."""
        _, _, num_frames, height, width = hidden_states.shape
        p_t, p_h, p_w = self.patch_size
        ppf, pph, ppw = num_frames // p_t, height // p_h, width // p_w
        if max(ppf, pph, ppw) > self.max_seq_len:
            raise ValueError("hidden_states: %d x %d x %d patches, past max_seq_len %d (diffusers' tables end there)"
                             % (ppf, pph, ppw, self.max_seq_len))
        both = self._both
        if both.data_ptr() != self.freqs_cos.data_ptr() or both[1].data_ptr() != self.freqs_sin.data_ptr():
            both = torch.stack([self.freqs_cos, self.freqs_sin])  # moved or replaced buffers: not one storage
        f, h, w = both.split([self.t_dim, self.h_dim, self.w_dim], dim=2)
        shape = (2, ppf, pph, ppw)
        out = torch.cat([f[:, :ppf, None, None, :].expand(*shape, -1), h[:, None, :pph, None, :].expand(*shape, -1),
                         w[:, None, None, :ppw, :].expand(*shape, -1)], dim=-1)
        out = out.reshape(2, 1, ppf * pph * ppw, 1, -1)
        return out[0], out[1]


class HunyuanVideoRotaryPosEmbed(nn.Module):
    """diffusers' HunyuanVideoRotaryPosEmbed(patch_size, patch_size_t, rope_dim, theta=256.0): forward(hidden_states
    [B, C, F, H, W]) -> (freqs_cos, freqs_sin), each [F' H' W', sum(rope_dim)] float32 over the patches' integer
    (frame, row, column) grid, time-major, each axis's block repeat-interleaved; exact where diffusers computes
    the frequencies and angles in float32."""

    def __init__(self, patch_size: int, patch_size_t: int, rope_dim: List[int], theta: float = 256.0) -> None:
        super().__init__()
        self.patch_size = patch_size
        self.patch_size_t = patch_size_t
        self.rope_dim = rope_dim
        self.theta = theta
        self._rope = _per_axis_rope(list(rope_dim), float(theta))

    def forward(self, hidden_states: Tensor) -> Tuple[Tensor, Tensor]:
        """(freqs_cos, freqs_sin) of the latent's patch grid, on hidden_states' device."""
        _, _, num_frames, height, width = hidden_states.shape
        sizes = [num_frames // self.patch_size_t, height // self.patch_size, width // self.patch_size]
        grid = torch.stack(torch.meshgrid(*[torch.arange(n) for n in sizes], indexing="ij"), dim=0).reshape(3, -1)
        return _interleaved(self._rope, grid, hidden_states.device)


_PI = "3.14159265358979323846264338327950288419716939937510582097494459230781640628620899862803482534211706798"


@functools.lru_cache(maxsize=16)
def _ltx_freqs(theta: float, n: int) -> Tuple[float, ...]:
    """LTX's n frequencies, each the double nearest the real theta^(k / (n - 1)) pi / 2 (theta the double given;
    pi / 2 alone for n = 1): decimal arithmetic at 60 and then 90 digits (exp and ln correctly rounded there),
    taken where the two give the same double, else at more digits."""
    from decimal import Decimal, localcontext

    def at(digits: int) -> Tuple[float, ...]:
        with localcontext() as ctx:
            ctx.prec = digits
            half_pi, lt = Decimal(_PI) / 2, Decimal(theta).ln()
            return tuple(float((lt * k / (n - 1)).exp() * half_pi) if n > 1 else float(+half_pi) for k in range(n))

    digits, got = 60, at(60)
    while True:
        more = at(digits + 30)
        if more == got:
            return got
        digits, got = digits + 30, more


@functools.lru_cache(maxsize=16)
def _ltx_rope(freqs: Tuple[float, ...]) -> Rope:
    """One axis at LTX's explicit frequencies f_k (adjacent pairs; the axes are positions of it)."""
    return _p.Rope(2 * len(freqs), pairs="interleaved", freq=list(freqs))


class LTXVideoRotaryPosEmbed(nn.Module):
    """diffusers' LTXVideoRotaryPosEmbed: pair (k, a) of the dim // 6 frequencies f_k = theta^(k / (n - 1)) pi / 2
    (rising from pi / 2) and the three axes a turns by f_k (2 g_a - 1), g the token's grid coordinate as diffusers
    makes it (float32: the patch indices times rope_interpolation_scale times the patch size over the base size,
    or video_coords over the base sizes); (cos, sin) [B, S, dim] float32, each pair repeat-interleaved, the
    dim % 6 padding (cos 1, sin 0) in front. f_k is the double nearest the real theta^(k / (n - 1)) pi / 2
    (_ltx_freqs), 2 g - 1 is exact, and each cos / sin is the correctly rounded float32 of their exact product
    (real-valued positions, posenc_rope_cache_real_f32), where diffusers forms everything in float32."""

    def __init__(self, dim: int, base_num_frames: int = 20, base_height: int = 2048, base_width: int = 2048,
                 patch_size: int = 1, patch_size_t: int = 1, theta: float = 10000.0) -> None:
        super().__init__()
        self.dim = dim
        self.base_num_frames = base_num_frames
        self.base_height = base_height
        self.base_width = base_width
        self.patch_size = patch_size
        self.patch_size_t = patch_size_t
        self.theta = theta

    def _axis_coords(self, a: int, size: int, rope_interpolation_scale, device=None) -> Tensor:
        """Axis a's coordinates as diffusers' grid holds them: arange(size) in float32 times the scale's entry,
        the patch size, over the base size (elementwise float32 operations: the meshgrid's values)."""
        patch, base = ((self.patch_size_t, self.base_num_frames), (self.patch_size, self.base_height),
                       (self.patch_size, self.base_width))[a]
        g = torch.arange(size, dtype=torch.float32, device=device)
        return g if rope_interpolation_scale is None else g * rope_interpolation_scale[a] * patch / base

    def _prepare_video_coords(self, batch_size: int, num_frames: int, height: int, width: int,
                              rope_interpolation_scale, device) -> Tensor:
        """diffusers' [B, F H W, 3] grid of coordinates."""
        axes = [self._axis_coords(a, n, rope_interpolation_scale, device)
                for a, n in enumerate((num_frames, height, width))]
        grid = torch.stack(torch.meshgrid(*axes, indexing="ij"), dim=0)
        return grid.reshape(3, -1).t().unsqueeze(0).expand(batch_size, -1, -1)

    def forward(self, hidden_states: Tensor, num_frames: Optional[int] = None, height: Optional[int] = None,
                width: Optional[int] = None, rope_interpolation_scale=None,
                video_coords: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
        """(cos, sin) of the video's grid (or of video_coords [B, 3, S]), each [B, S, dim] float32."""
        batch_size = hidden_states.size(0)
        n = self.dim // 6
        rope = _ltx_rope(_ltx_freqs(float(self.theta), n))

        def cos_sin(x: Tensor) -> Tuple[Tensor, Tensor]:  # x: positions 2 g - 1 (exact in double), any shape
            c, s = _cos_sin(rope, x.reshape(-1))
            return c.reshape(*x.shape, n), s.reshape(*x.shape, n)
        if video_coords is None:
            # The grid is separable: each axis's coordinates are its 1-D arange under the same float32 operations
            # as diffusers' meshgrid (elementwise, so the same values); cos / sin per axis value, then gathered.
            axes = []
            for a, size in enumerate((num_frames, height, width)):
                g = self._axis_coords(a, size, rope_interpolation_scale)
                axes.append(cos_sin(g.cpu().double() * 2 - 1))  # [size, n] each, 2 g - 1 exact
            shape = (num_frames, height, width, n)
            out = []
            for k in range(2):
                f, h, w = (t[k] for t in axes)
                table = torch.stack([f[:, None, None, :].expand(shape), h[None, :, None, :].expand(shape),
                                     w[None, None, :, :].expand(shape)], dim=-1)  # [F, H, W, n, 3]
                table = table.reshape(1, num_frames * height * width, 3 * n).repeat_interleave(2, dim=-1)
                out.append(table.expand(batch_size, -1, -1))
            cos, sin = out
            pad = self.dim % 6
            if pad:
                cos = torch.cat([torch.ones(batch_size, cos.shape[1], pad), cos], dim=-1)
                sin = torch.cat([torch.zeros(batch_size, sin.shape[1], pad), sin], dim=-1)
            return cos.contiguous().to(hidden_states.device), sin.contiguous().to(hidden_states.device)
        else:
            grid = torch.stack([video_coords[:, 0] / self.base_num_frames, video_coords[:, 1] / self.base_height,
                                video_coords[:, 2] / self.base_width], dim=-1)
        c, s = cos_sin(grid.cpu().double() * 2 - 1)  # [B, S, 3, n] each, exact 2 g - 1
        cos = c.transpose(-1, -2).flatten(2).repeat_interleave(2, dim=-1)  # [B, S, 3 n]: per frequency, 3 axes
        sin = s.transpose(-1, -2).flatten(2).repeat_interleave(2, dim=-1)
        pad = self.dim % 6
        if pad:
            cos = torch.cat([torch.ones_like(cos[:, :, :pad]), cos], dim=-1)
            sin = torch.cat([torch.zeros_like(sin[:, :, :pad]), sin], dim=-1)
        return cos.to(hidden_states.device), sin.to(hidden_states.device)


class QwenEmbedRope(nn.Module):
    """diffusers' QwenEmbedRope(theta, axes_dim, scale_rope=False) (Qwen-Image): the attributes pos_freqs and
    neg_freqs (complex64 [4096, sum(axes_dim) / 2]: positions 0 .. 4095 and -4096 .. -1 on every axis, each
    axis at its own width's frequencies), here exact; forward(video_fhw, device, max_txt_seq_len) ->
    (vid_freqs [F H W, ...], txt_freqs [max_txt_seq_len, ...]): frames idx .., rows and columns from 0, or
    centred (-(n - n // 2) .. n // 2 - 1) with scale_rope, text on every axis from the largest image index."""

    _TABLE = 4096

    def __init__(self, theta: int, axes_dim: List[int], scale_rope: bool = False):
        super().__init__()
        self.theta = theta
        self.axes_dim = axes_dim
        self.scale_rope = scale_rope
        self._rope = _per_axis_rope(list(axes_dim), float(theta))
        n = self._TABLE
        both = torch.arange(-n, n).expand(len(axes_dim), -1)  # -4096 .. 4095 on every axis
        cos, sin = _cos_sin(self._rope, both)
        table = torch.complex(cos, sin)
        self.neg_freqs, self.pos_freqs = table[:n], table[n:]
        self._device_freqs: dict = {}

    def rope_params(self, index: Tensor, dim: int, theta: float = 10000) -> Tensor:
        """complex64 [len(index), dim / 2]: the exact e^(i p theta^(-2k/dim)) of each index p (integers)."""
        assert dim % 2 == 0
        return get_1d_rotary_pos_embed(dim, index, theta)

    def _get_device_freqs(self, device: Optional[torch.device]) -> Tuple[Tensor, Tensor]:
        """pos_freqs and neg_freqs on device (once per device; Neuron: the angles, as diffusers sends them)."""
        got = self._device_freqs.get(device)
        if got is None:
            pos, neg = self.pos_freqs, self.neg_freqs
            if device is not None and torch.device(device).type == "neuron":
                pos, neg = torch.angle(pos), torch.angle(neg)
            got = self._device_freqs[device] = (pos.to(device), neg.to(device))
        return got

    def _axis_rows(self, table_pos: Tensor, table_neg: Tensor, positions: range) -> Tensor:
        """Rows of one axis's columns at the positions (negative ones from neg_freqs)."""
        if positions.start < -self._TABLE or positions.stop > self._TABLE:
            raise ValueError("QwenEmbedRope: positions %d .. %d past its tables' %d" % (
                positions.start, positions.stop - 1, self._TABLE))
        parts = []
        if positions.start < 0:
            parts.append(table_neg[self._TABLE + positions.start: self._TABLE + min(positions.stop, 0)])
        if positions.stop > 0:
            parts.append(table_pos[max(positions.start, 0): positions.stop])
        return torch.cat(parts) if len(parts) > 1 else parts[0]

    @functools.lru_cache(maxsize=128)
    def _compute_video_freqs(self, frame: int, height: int, width: int, idx: int = 0,
                             device: Optional[torch.device] = None) -> Tensor:
        """The image's [frame height width, sum(axes_dim) / 2] table."""
        pos, neg = self._get_device_freqs(device) if device is not None else (self.pos_freqs, self.neg_freqs)
        cols = [d // 2 for d in self.axes_dim]
        pos_axes, neg_axes = pos.split(cols, dim=1), neg.split(cols, dim=1)

        def span(n):
            return range(-(n - n // 2), n // 2) if self.scale_rope else range(0, n)

        f = self._axis_rows(pos_axes[0], neg_axes[0], range(idx, idx + frame))
        h = self._axis_rows(pos_axes[1], neg_axes[1], span(height))
        w = self._axis_rows(pos_axes[2], neg_axes[2], span(width))
        shape = (frame, height, width)
        out = torch.cat([f[:, None, None, :].expand(*shape, -1), h[None, :, None, :].expand(*shape, -1),
                         w[None, None, :, :].expand(*shape, -1)], dim=-1)
        return out.reshape(frame * height * width, -1).contiguous()

    def forward(self, video_fhw, device: Optional[torch.device] = None,
                max_txt_seq_len: Union[int, Tensor, None] = None) -> Tuple[Tensor, Tensor]:
        """(vid_freqs, txt_freqs) of the images of video_fhw ((frame, height, width), a list of them, or a batch's
        list whose first entry is used, as diffusers does)."""
        if max_txt_seq_len is None:
            raise ValueError("`max_txt_seq_len` must be provided.")
        if isinstance(video_fhw, list):
            video_fhw = video_fhw[0]
        if not isinstance(video_fhw, list):
            video_fhw = [video_fhw]
        vid, top = [], 0
        for idx, (frame, height, width) in enumerate(video_fhw):
            vid.append(self._compute_video_freqs(frame, height, width, idx, device))
            top = max(height // 2, width // 2, top) if self.scale_rope else max(height, width, top)
        pos, _ = self._get_device_freqs(device)
        txt = int(max_txt_seq_len)
        if top + txt > self._TABLE:
            raise ValueError("QwenEmbedRope: text positions %d .. %d past its tables' %d" % (top, top + txt - 1,
                                                                                             self._TABLE))
        return torch.cat(vid, dim=0), pos[top: top + txt, ...]


# posenc.torch's ``from ._torch_diffusers import *`` takes the names above; they join its __all__ here.
_parent = sys.modules.get(__name__.rsplit(".", 1)[0] + ".torch")
if _parent is not None and isinstance(getattr(_parent, "__all__", None), list):
    _parent.__all__.extend(n for n in __all__ if n not in _parent.__all__)
del _parent
