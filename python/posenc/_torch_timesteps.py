"""posenc.torch, timestep embeddings (diffusion and flow-matching models): drop-ins for the functions and the
module people call, with their signatures, defaults, attributes and output shapes and dtypes, every value the
correctly rounded sin / cos of the exact angle t * scale * w_i (docs/timesteps.md). Re-exported by posenc.torch.

  get_timestep_embedding(timesteps, embedding_dim, flip_sin_to_cos=False, downscale_freq_shift=1, scale=1,
                         max_period=10000)                                  diffusers' (models/embeddings.py)
  Timesteps(num_channels, flip_sin_to_cos, downscale_freq_shift, scale=1)  diffusers' nn.Module, no buffers
  timestep_embedding(t, dim, max_period=10000)                              DiT's / latent diffusion's (cos first)
  flux_timestep_embedding(t, dim, max_period=10000, time_factor=1000.0)    Flux's timestep_embedding
  timesteps(spec, t, *, dtype=torch.float32, out=None)                      any posenc.Spec, any shape of t

Timesteps: a 1-D CPU tensor (as the originals require) of float64, float32, bfloat16, float16 or integers, taken
as the original takes it before its sinusoid: diffusers' and DiT's ``timesteps[:, None].float()`` (a float64 or
an integer above 2^24 rounded to float32), Flux's ``time_factor * t`` in t's dtype (bfloat16 timesteps: the
product rounded to bfloat16) and then ``.float()``; from there every value is exact. ``exact_input=True``
instead uses each timestep as given (converted exactly to double, Flux's product formed exactly inside the
angle): the embedding of the real timestep rather than of what the model sees. |t| < 2^31, finite (NaN and
infinities raise posenc.OutOfRange, an IndexError). Output: [N, dim], float32 (diffusers, DiT), or Flux's dtype
(that of time_factor * t when it is a float tensor: bfloat16 in its pipelines), on the CPU. Differentiable in
the timesteps (d sin(a) / dt = cos(a) * scale * w_i), as the originals are.

Configurations the originals cannot evaluate are refused with a ValueError naming them, where the original would
return NaN or a table posenc has no spec for: diffusers' downscale_freq_shift equal to embedding_dim // 2 (a
division by zero there) or above it (frequencies that grow with i).
"""
from __future__ import annotations

import functools
import math
import operator
import sys
from typing import Optional, Union

import torch
from torch import Tensor, nn

from . import _posenc as _p
from ._posenc import Spec

__all__ = ["get_timestep_embedding", "Timesteps", "timestep_embedding", "flux_timestep_embedding", "timesteps"]

SpecLike = Union[Spec, int]


def _dim(value, name: str) -> int:
    try:
        d = operator.index(value)
    except TypeError:
        raise TypeError("%s must be an int, got %r" % (name, value)) from None
    if d < 0:
        raise ValueError("%s %d is negative" % (name, d))
    return d


def _check_timesteps(t, what: str = "timesteps") -> Tensor:
    if not isinstance(t, Tensor):
        raise TypeError("%s: expected a torch.Tensor, got %s" % (what, type(t).__name__))
    if t.dim() != 1:
        raise ValueError("%s: expected a 1-D tensor of N timesteps, got shape %s" % (what, list(t.shape)))
    if t.device.type != "cpu":
        raise ValueError("posenc computes on the CPU (%s on %s)" % (what, t.device))
    if t.dtype == torch.bool or t.is_complex():
        raise TypeError("%s: expected real numbers, got %s" % (what, t.dtype))
    return t


class _Embed(torch.autograd.Function):
    """The rows as a function of the timesteps: d/dt sin(t s w_i) = cos(t s w_i) s w_i, d/dt cos = -sin s w_i.
    The frequencies of the backward are float64 (the forward's exactness is in the values, not the slope)."""

    @staticmethod
    def forward(ctx, t: Tensor, spec: Spec, dtype: torch.dtype) -> Tensor:
        out = _rows(spec, t.detach(), dtype)
        ctx.spec = spec
        ctx.save_for_backward(out)
        ctx.t_dtype = t.dtype
        return out

    @staticmethod
    def backward(ctx, grad: Tensor):
        (out,) = ctx.saved_tensors
        spec = ctx.spec
        h = spec.d_model // 2
        if h == 0:
            return torch.zeros(out.shape[0], dtype=ctx.t_dtype), None, None
        den = spec.freq_denominator if spec.freq_denominator != 0.0 else float(h)
        w = spec.position_scale * torch.pow(torch.tensor(spec.base, dtype=torch.float64),
                                            -torch.arange(h, dtype=torch.float64) / den)
        o, g = out.double(), grad.double()
        layout = int(spec.layout)
        if layout == int(_p.Layout.INTERLEAVED):
            sin, cos, gs, gc = o[:, 0:2 * h:2], o[:, 1:2 * h:2], g[:, 0:2 * h:2], g[:, 1:2 * h:2]
        elif layout == int(_p.Layout.SIN_COS_HALVES):
            sin, cos, gs, gc = o[:, :h], o[:, h:2 * h], g[:, :h], g[:, h:2 * h]
        else:
            cos, sin, gc, gs = o[:, :h], o[:, h:2 * h], g[:, :h], g[:, h:2 * h]
        return ((gs * cos - gc * sin) * w).sum(dim=1).to(ctx.t_dtype), None, None


def _rows(spec: Spec, t: Tensor, dtype: torch.dtype) -> Tensor:
    """[N, d_model] rows at the timesteps t (1-D), in dtype (float32, bfloat16, float16 directly; others from
    the float32 values)."""
    direct = dtype in (torch.float32, torch.bfloat16, torch.float16)
    out = torch.empty(t.shape[0], spec.d_model, dtype=dtype if direct else torch.float32)
    _p.timesteps(spec, t, out=out)
    return out if direct else out.to(dtype)


def _embed(spec: Optional[Spec], t: Tensor, dim: int, dtype: torch.dtype) -> Tensor:
    if spec is None:  # dim // 2 == 0: no pair; dim is what the original's zero padding leaves (see the callers)
        return torch.zeros(t.shape[0], dim, dtype=dtype)
    if torch.is_grad_enabled() and t.requires_grad:
        return _Embed.apply(t, spec, dtype)
    return _rows(spec, t, dtype)


# ---- diffusers ------------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=256)
def _diffusers_spec(embedding_dim: int, flip_sin_to_cos: bool, den: float, scale: float, max_period: float) -> Spec:
    return Spec(embedding_dim, "cos_sin_halves" if flip_sin_to_cos else "sin_cos_halves", max_period, den, scale)


def _diffusers(embedding_dim, flip_sin_to_cos, downscale_freq_shift, scale, max_period) -> Optional[Spec]:
    """The spec of a diffusers configuration (None: no pair), or a ValueError naming what diffusers cannot
    evaluate."""
    half_dim = _dim(embedding_dim, "embedding_dim") // 2
    if half_dim == 0:
        return None
    den = half_dim - float(downscale_freq_shift)
    if not math.isfinite(den):
        raise ValueError("downscale_freq_shift %r: not a finite number" % (downscale_freq_shift,))
    if den == 0:
        raise ValueError("downscale_freq_shift %r equals embedding_dim // 2 = %d: diffusers divides by zero there "
                         "(its first column is NaN)" % (downscale_freq_shift, half_dim))
    if den < 0:
        raise ValueError("downscale_freq_shift %r is above embedding_dim // 2 = %d: frequencies that grow with i, "
                         "which posenc has no spec for" % (downscale_freq_shift, half_dim))
    if not float(max_period) > 0:
        raise ValueError("max_period %r: diffusers takes its logarithm, it must be positive" % (max_period,))
    return _diffusers_spec(int(embedding_dim), bool(flip_sin_to_cos), den, float(scale), float(max_period))


def _as_float32(t: Tensor, exact_input: bool) -> Tensor:
    """The timesteps as diffusers' and DiT's ``t[:, None].float()`` see them (exact_input: as given)."""
    return t if exact_input or t.dtype == torch.float32 else t.float()


def get_timestep_embedding(timesteps: Tensor, embedding_dim: int, flip_sin_to_cos: bool = False,
                           downscale_freq_shift: float = 1, scale: float = 1, max_period: int = 10000, *,
                           exact_input: bool = False) -> Tensor:
    """diffusers' get_timestep_embedding, exact: [N, embedding_dim] float32 for N timesteps (a 1-D tensor, which
    may be fractional): sin | cos halves (cos | sin with flip_sin_to_cos) of t * scale * max_period^(-i / (half_dim -
    downscale_freq_shift)), half_dim = embedding_dim // 2, a zero column for an odd embedding_dim; t as
    diffusers' ``timesteps.float()`` has it (exact_input=True: as given)."""
    spec = _diffusers(embedding_dim, flip_sin_to_cos, downscale_freq_shift, scale, max_period)
    t = _as_float32(_check_timesteps(timesteps), exact_input)
    return _embed(spec, t, int(embedding_dim), torch.float32)


class Timesteps(nn.Module):
    """diffusers' Timesteps, exact: ``Timesteps(num_channels, flip_sin_to_cos, downscale_freq_shift, scale=1)``
    with the same attributes (num_channels, flip_sin_to_cos, downscale_freq_shift, scale; no parameters or
    buffers, an empty state_dict); ``forward(timesteps)`` is get_timestep_embedding(timesteps, num_channels,
    flip_sin_to_cos, downscale_freq_shift, scale) with max_period 10000: [N, num_channels] float32 (Stable
    Diffusion's UNet: Timesteps(320, True, 0)). A configuration get_timestep_embedding refuses is refused here."""

    def __init__(self, num_channels: int, flip_sin_to_cos: bool, downscale_freq_shift: float, scale: int = 1, *,
                 exact_input: bool = False):
        super().__init__()
        self.num_channels = num_channels
        self.flip_sin_to_cos = flip_sin_to_cos
        self.downscale_freq_shift = downscale_freq_shift
        self.scale = scale
        self.exact_input = bool(exact_input)  # posenc's: the timesteps as given, not as diffusers' float()
        _diffusers(num_channels, flip_sin_to_cos, downscale_freq_shift, scale, 10000)  # refused now, not at forward

    def forward(self, timesteps: Tensor) -> Tensor:
        """[N, num_channels] float32 for the 1-D timesteps."""
        return get_timestep_embedding(timesteps, self.num_channels, flip_sin_to_cos=self.flip_sin_to_cos,
                                      downscale_freq_shift=self.downscale_freq_shift, scale=self.scale,
                                      exact_input=self.exact_input)


# ---- DiT / latent diffusion, Flux -----------------------------------------------------------------------------

@functools.lru_cache(maxsize=256)
def _flux_spec(dim: int, max_period: float, time_factor: float) -> Spec:
    return Spec.flux(dim, max_period, time_factor)


def _dit_spec(dim: int, max_period, time_factor) -> Optional[Spec]:
    if dim // 2 == 0:
        return None
    if not float(max_period) > 0:
        raise ValueError("max_period %r: the formula takes its logarithm, it must be positive" % (max_period,))
    return _flux_spec(dim, float(max_period), float(time_factor))


def timestep_embedding(t: Tensor, dim: int, max_period: int = 10000, *, exact_input: bool = False) -> Tensor:
    """DiT's TimestepEmbedder.timestep_embedding (and latent diffusion's timestep_embedding, GLIDE's), exact:
    [N, dim] float32 for N timesteps (a 1-D tensor, which may be fractional): cos | sin halves of
    t * max_period^(-i / half), half = dim // 2, a zero column for an odd dim (none for dim 1, as DiT's code
    cuts it from an empty embedding: [N, 0]); t as DiT's ``t[:, None].float()`` has it (exact_input=True: as
    given)."""
    d = _dim(dim, "dim")
    spec = _dit_spec(d, max_period, 1.0)
    # dim 1: DiT's zero column is cut from an empty embedding, [N, 0], and so is this
    return _embed(spec, _as_float32(_check_timesteps(t, "t"), exact_input), d if spec else 0, torch.float32)


def flux_timestep_embedding(t: Tensor, dim: int, max_period: int = 10000, time_factor: float = 1000.0, *,
                            exact_input: bool = False) -> Tensor:
    """Flux's timestep_embedding (flux/modules/layers.py), exact: DiT's formula at Flux's ``time_factor * t``,
    [N, dim], returned in the dtype of time_factor * t when that is a float tensor (bfloat16 timesteps give
    bfloat16, as Flux's ``embedding.to(t)``), float32 otherwise. As Flux, the product is formed in that dtype
    (bfloat16 timesteps: 1000 t rounded to bfloat16, spacing 4 near 1000) and then taken as float32; from
    there exact. exact_input=True forms t * time_factor * w_i exactly instead, from t as given."""
    d = _dim(dim, "dim")
    t = _check_timesteps(t, "t")
    scaled = torch.result_type(t, time_factor)
    dtype = scaled if scaled.is_floating_point else torch.float32
    if exact_input:
        spec = _dit_spec(d, max_period, time_factor)
        return _embed(spec, t, d if spec else 0, dtype)  # dim 1: [N, 0], as DiT's
    spec = _dit_spec(d, max_period, 1.0)
    return _embed(spec, (time_factor * t).float(), d if spec else 0, dtype)


# ---- any spec ------------------------------------------------------------------------------------------------

def timesteps(spec: SpecLike, t: Tensor, *, dtype: torch.dtype = torch.float32,
              out: Optional[Tensor] = None) -> Tensor:
    """posenc.timesteps for a tensor of any shape: t.shape + (d_model,), in dtype float32, bfloat16 or float16
    (or out=, a preallocated tensor of that shape). t: float64 (used as it is), float32 / bfloat16 / float16 /
    integers (converted exactly). A constant: no gradient (the drop-ins above are differentiable)."""
    if not isinstance(t, Tensor):
        t = torch.as_tensor(t)
    flat = t.reshape(-1)
    d = spec if isinstance(spec, int) else spec.d_model
    if out is None:
        out = torch.empty(*t.shape, d, dtype=dtype)
    _p.timesteps(spec, flat, out=out.view(flat.numel(), d))
    return out


# posenc.torch's ``from ._torch_timesteps import *`` takes the names above; they join its __all__ here, so that
# torch.py needs that one line (``from posenc.torch import *`` then has them too).
_parent = sys.modules.get(__name__.rsplit(".", 1)[0] + ".torch")
if _parent is not None and isinstance(getattr(_parent, "__all__", None), list):
    _parent.__all__.extend(n for n in __all__ if n not in _parent.__all__)
del _parent
