"""diffusers' rotary embeddings of image and video transformers, re-typed from diffusers 0.40.0.dev0 (58eb52c0:
models/embeddings.py's get_1d_rotary_pos_embed, the Flux transformer's FluxPosEmbed, the Wan transformer's
WanRotaryPosEmbed) as those files write them; FluxPosEmbed takes the freqs_dtype diffusers picks for the device
(float64 on the CPU, float32 on MPS / NPU), here a constructor argument. Used by test_torch_diffusers.py and
bench/python/bench_torch.py."""
import numpy as np
import torch


def diffusers_get_1d(dim, pos, theta=10000.0, use_real=False, linear_factor=1.0, ntk_factor=1.0,
                     repeat_interleave_real=True, freqs_dtype=torch.float32):
    assert dim % 2 == 0
    if isinstance(pos, int):
        pos = torch.arange(pos)
    if isinstance(pos, np.ndarray):
        pos = torch.from_numpy(pos)
    theta = theta * ntk_factor
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=freqs_dtype, device=pos.device)[: (dim // 2)] / dim)) \
        / linear_factor
    freqs = torch.outer(pos, freqs)
    if use_real and repeat_interleave_real:
        cos = freqs.cos().repeat_interleave(2, dim=1, output_size=freqs.shape[1] * 2).float()
        sin = freqs.sin().repeat_interleave(2, dim=1, output_size=freqs.shape[1] * 2).float()
        return cos, sin
    if use_real:
        return torch.cat([freqs.cos(), freqs.cos()], dim=-1).float(), torch.cat([freqs.sin(), freqs.sin()], dim=-1).float()
    return torch.polar(torch.ones_like(freqs), freqs)


class DiffusersFluxPosEmbed(torch.nn.Module):
    def __init__(self, theta, axes_dim, freqs_dtype=torch.float64):
        super().__init__()
        self.theta = theta
        self.axes_dim = axes_dim
        self.freqs_dtype = freqs_dtype

    def forward(self, ids):
        n_axes = ids.shape[-1]
        cos_out, sin_out = [], []
        pos = ids.float()
        for i in range(n_axes):
            cos, sin = diffusers_get_1d(self.axes_dim[i], pos[:, i], theta=self.theta, repeat_interleave_real=True,
                                        use_real=True, freqs_dtype=self.freqs_dtype)
            cos_out.append(cos)
            sin_out.append(sin)
        return torch.cat(cos_out, dim=-1).to(ids.device), torch.cat(sin_out, dim=-1).to(ids.device)


class DiffusersWanRotaryPosEmbed(torch.nn.Module):
    def __init__(self, attention_head_dim, patch_size, max_seq_len, theta=10000.0):
        super().__init__()
        self.attention_head_dim = attention_head_dim
        self.patch_size = patch_size
        self.max_seq_len = max_seq_len
        h_dim = w_dim = 2 * (attention_head_dim // 6)
        t_dim = attention_head_dim - h_dim - w_dim
        self.t_dim, self.h_dim, self.w_dim = t_dim, h_dim, w_dim
        freqs_cos, freqs_sin = [], []
        for dim in [t_dim, h_dim, w_dim]:
            c, s = diffusers_get_1d(dim, max_seq_len, theta, use_real=True, repeat_interleave_real=True,
                                    freqs_dtype=torch.float64)
            freqs_cos.append(c)
            freqs_sin.append(s)
        self.register_buffer("freqs_cos", torch.cat(freqs_cos, dim=1), persistent=False)
        self.register_buffer("freqs_sin", torch.cat(freqs_sin, dim=1), persistent=False)

    def forward(self, hidden_states):
        batch_size, num_channels, num_frames, height, width = hidden_states.shape
        p_t, p_h, p_w = self.patch_size
        ppf, pph, ppw = num_frames // p_t, height // p_h, width // p_w
        split_sizes = [self.t_dim, self.h_dim, self.w_dim]
        freqs_cos = self.freqs_cos.split(split_sizes, dim=1)
        freqs_sin = self.freqs_sin.split(split_sizes, dim=1)
        fc = [freqs_cos[0][:ppf].view(ppf, 1, 1, -1).expand(ppf, pph, ppw, -1),
              freqs_cos[1][:pph].view(1, pph, 1, -1).expand(ppf, pph, ppw, -1),
              freqs_cos[2][:ppw].view(1, 1, ppw, -1).expand(ppf, pph, ppw, -1)]
        fs = [freqs_sin[0][:ppf].view(ppf, 1, 1, -1).expand(ppf, pph, ppw, -1),
              freqs_sin[1][:pph].view(1, pph, 1, -1).expand(ppf, pph, ppw, -1),
              freqs_sin[2][:ppw].view(1, 1, ppw, -1).expand(ppf, pph, ppw, -1)]
        return (torch.cat(fc, dim=-1).reshape(1, ppf * pph * ppw, 1, -1),
                torch.cat(fs, dim=-1).reshape(1, ppf * pph * ppw, 1, -1))
