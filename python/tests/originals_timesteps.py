"""The timestep embeddings of diffusion and flow-matching models, written here from the public code (as
originals.py does for the positional encodings): the *originals* that posenc.torch's timestep drop-ins are
tested and timed against. Each performs the same float32 operations in the same order as the code it stands
for, so that its outputs carry the same rounding errors. Plain torch, tested with Debian's torch 1.13.

* ``get_timestep_embedding(timesteps, embedding_dim, flip_sin_to_cos=False, downscale_freq_shift=1, scale=1,
  max_period=10000)`` and ``Timesteps(num_channels, flip_sin_to_cos, downscale_freq_shift, scale=1)``:
  huggingface/diffusers src/diffusers/models/embeddings.py (commit 58eb52c0, 2026);
* ``timestep_embedding(t, dim, max_period=10000)``: facebookresearch/DiT models.py,
  ``TimestepEmbedder.timestep_embedding`` (commit ed81ce22, 2023; GLIDE's, as latent diffusion's);
* ``flux_timestep_embedding(t, dim, max_period=10000, time_factor=1000.0)``: black-forest-labs/flux
  src/flux/modules/layers.py ``timestep_embedding`` (commit 802fb471, 2025);
* ``sinusoids(length, channels, max_timescale=10000)``: openai/whisper whisper/model.py (commit c0d2f624, 2025).
"""
import math

import numpy as np
import torch
from torch import nn

__all__ = ["get_timestep_embedding", "Timesteps", "timestep_embedding", "flux_timestep_embedding", "sinusoids"]


def get_timestep_embedding(
    timesteps: torch.Tensor,
    embedding_dim: int,
    flip_sin_to_cos: bool = False,
    downscale_freq_shift: float = 1,
    scale: float = 1,
    max_period: int = 10000,
) -> torch.Tensor:
    """diffusers: the exponent -log(max_period) * arange(half_dim) (float32) / (half_dim - shift), exp of it,
    timesteps.float() times it, times scale, then cat(sin, cos), swapped halves when flipped, a zero column for
    an odd dim."""
    assert len(timesteps.shape) == 1, "Timesteps should be a 1d-array"

    half_dim = embedding_dim // 2
    exponent = -math.log(max_period) * torch.arange(
        start=0, end=half_dim, dtype=torch.float32, device=timesteps.device
    )
    exponent = exponent / (half_dim - downscale_freq_shift)

    emb = torch.exp(exponent)
    emb = timesteps[:, None].float() * emb[None, :]

    # scale embeddings
    emb = scale * emb

    # concat sine and cosine embeddings
    emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=-1)

    # flip sine and cosine embeddings
    if flip_sin_to_cos:
        emb = torch.cat([emb[:, half_dim:], emb[:, :half_dim]], dim=-1)

    # zero pad
    if embedding_dim % 2 == 1:
        emb = torch.nn.functional.pad(emb, (0, 1, 0, 0))
    return emb


class Timesteps(nn.Module):
    """diffusers' module: four attributes, no parameters or buffers; forward calls get_timestep_embedding with
    max_period at its default."""

    def __init__(self, num_channels: int, flip_sin_to_cos: bool, downscale_freq_shift: float, scale: int = 1):
        super().__init__()
        self.num_channels = num_channels
        self.flip_sin_to_cos = flip_sin_to_cos
        self.downscale_freq_shift = downscale_freq_shift
        self.scale = scale

    def forward(self, timesteps: torch.Tensor) -> torch.Tensor:
        t_emb = get_timestep_embedding(
            timesteps,
            self.num_channels,
            flip_sin_to_cos=self.flip_sin_to_cos,
            downscale_freq_shift=self.downscale_freq_shift,
            scale=self.scale,
        )
        return t_emb


def timestep_embedding(t, dim, max_period=10000):
    """DiT: freqs = exp(-log(max_period) * arange(half) (float32) / half), args = t.float() * freqs,
    cat(cos, sin), a zero column for an odd dim."""
    half = dim // 2
    freqs = torch.exp(
        -math.log(max_period) * torch.arange(start=0, end=half, dtype=torch.float32) / half
    ).to(device=t.device)
    args = t[:, None].float() * freqs[None]
    embedding = torch.cat([torch.cos(args), torch.sin(args)], dim=-1)
    if dim % 2:
        embedding = torch.cat([embedding, torch.zeros_like(embedding[:, :1])], dim=-1)
    return embedding


def flux_timestep_embedding(t, dim, max_period=10000, time_factor: float = 1000.0):
    """Flux: t = time_factor * t (in t's dtype), then DiT's formula, cast to that t's dtype when it is a float."""
    t = time_factor * t
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(start=0, end=half, dtype=torch.float32) / half).to(
        t.device
    )

    args = t[:, None].float() * freqs[None]
    embedding = torch.cat([torch.cos(args), torch.sin(args)], dim=-1)
    if dim % 2:
        embedding = torch.cat([embedding, torch.zeros_like(embedding[:, :1])], dim=-1)
    if torch.is_floating_point(t):
        embedding = embedding.to(t)
    return embedding


def sinusoids(length, channels, max_timescale=10000):
    """Whisper: log_timescale_increment = log(max_timescale) / (channels // 2 - 1) (NumPy, double),
    inv_timescales = exp(-increment * arange(channels // 2)), scaled_time = arange(length)[:, None] * inv,
    cat(sin, cos)."""
    assert channels % 2 == 0
    log_timescale_increment = np.log(max_timescale) / (channels // 2 - 1)
    inv_timescales = torch.exp(-log_timescale_increment * torch.arange(channels // 2))
    scaled_time = torch.arange(length)[:, np.newaxis] * inv_timescales[np.newaxis, :]
    return torch.cat([torch.sin(scaled_time), torch.cos(scaled_time)], dim=1)
