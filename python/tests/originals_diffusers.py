"""diffusers' rotary embeddings of image and video transformers, re-typed from diffusers 0.40.0.dev0 (58eb52c0:
models/embeddings.py's get_1d_rotary_pos_embed, the Flux transformer's FluxPosEmbed, the Wan transformer's
WanRotaryPosEmbed) as those files write them; FluxPosEmbed takes the freqs_dtype diffusers picks for the device
(float64 on the CPU, float32 on MPS / NPU), here a constructor argument. Used by test_torch_diffusers.py and
bench/python/bench_torch.py."""
import math

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


def diffusers_get_2d_from_grid(embed_dim, grid, use_real=False, freqs_dtype=torch.float32):
    assert embed_dim % 4 == 0
    emb_h = diffusers_get_1d(embed_dim // 2, grid[0].reshape(-1), use_real=use_real, freqs_dtype=freqs_dtype)
    emb_w = diffusers_get_1d(embed_dim // 2, grid[1].reshape(-1), use_real=use_real, freqs_dtype=freqs_dtype)
    if use_real:
        return torch.cat([emb_h[0], emb_w[0]], dim=1), torch.cat([emb_h[1], emb_w[1]], dim=1)
    return torch.cat([emb_h, emb_w], dim=1)


def diffusers_get_2d(embed_dim, crops_coords, grid_size, use_real=True, device=None, output_type="np",
                     freqs_dtype=torch.float32):
    """get_2d_rotary_pos_embed; freqs_dtype (diffusers: get_1d's default float32) selectable for the tests."""
    if output_type == "np":  # _get_2d_rotary_pos_embed_np
        start, stop = crops_coords
        grid_h = np.linspace(start[0], stop[0], grid_size[0], endpoint=False, dtype=np.float32)
        grid_w = np.linspace(start[1], stop[1], grid_size[1], endpoint=False, dtype=np.float32)
        grid = np.meshgrid(grid_w, grid_h)
        grid = np.stack(grid, axis=0)
        grid = grid.reshape([2, 1, *grid.shape[1:]])
        return diffusers_get_2d_from_grid(embed_dim, grid, use_real=use_real, freqs_dtype=freqs_dtype)
    start, stop = crops_coords
    grid_h = torch.linspace(start[0], stop[0] * (grid_size[0] - 1) / grid_size[0], grid_size[0], device=device,
                            dtype=torch.float32)
    grid_w = torch.linspace(start[1], stop[1] * (grid_size[1] - 1) / grid_size[1], grid_size[1], device=device,
                            dtype=torch.float32)
    grid = torch.meshgrid(grid_w, grid_h, indexing="xy")
    grid = torch.stack(grid, dim=0)
    grid = grid.reshape([2, 1, *grid.shape[1:]])
    return diffusers_get_2d_from_grid(embed_dim, grid, use_real=use_real, freqs_dtype=freqs_dtype)


def diffusers_get_3d(embed_dim, crops_coords, grid_size, temporal_size, theta=10000, use_real=True,
                     grid_type="linspace", max_size=None, device=None, freqs_dtype=torch.float32):
    """get_3d_rotary_pos_embed; freqs_dtype (diffusers: get_1d's default float32) selectable for the tests."""
    if grid_type == "linspace":
        start, stop = crops_coords
        grid_size_h, grid_size_w = grid_size
        grid_h = torch.linspace(start[0], stop[0] * (grid_size_h - 1) / grid_size_h, grid_size_h, device=device,
                                dtype=torch.float32)
        grid_w = torch.linspace(start[1], stop[1] * (grid_size_w - 1) / grid_size_w, grid_size_w, device=device,
                                dtype=torch.float32)
        grid_t = torch.linspace(0, temporal_size * (temporal_size - 1) / temporal_size, temporal_size, device=device,
                                dtype=torch.float32)
    else:
        max_h, max_w = max_size
        grid_size_h, grid_size_w = grid_size
        grid_h = torch.arange(max_h, device=device, dtype=torch.float32)
        grid_w = torch.arange(max_w, device=device, dtype=torch.float32)
        grid_t = torch.arange(temporal_size, device=device, dtype=torch.float32)
    dim_t, dim_h, dim_w = embed_dim // 4, embed_dim // 8 * 3, embed_dim // 8 * 3
    t_cos, t_sin = diffusers_get_1d(dim_t, grid_t, theta=theta, use_real=True, freqs_dtype=freqs_dtype)
    h_cos, h_sin = diffusers_get_1d(dim_h, grid_h, theta=theta, use_real=True, freqs_dtype=freqs_dtype)
    w_cos, w_sin = diffusers_get_1d(dim_w, grid_w, theta=theta, use_real=True, freqs_dtype=freqs_dtype)
    if grid_type == "slice":
        t_cos, t_sin = t_cos[:temporal_size], t_sin[:temporal_size]
        h_cos, h_sin = h_cos[:grid_size_h], h_sin[:grid_size_h]
        w_cos, w_sin = w_cos[:grid_size_w], w_sin[:grid_size_w]

    def combine(ft, fh, fw):
        ft = ft[:, None, None, :].expand(-1, grid_size_h, grid_size_w, -1)
        fh = fh[None, :, None, :].expand(temporal_size, -1, grid_size_w, -1)
        fw = fw[None, None, :, :].expand(temporal_size, grid_size_h, -1, -1)
        return torch.cat([ft, fh, fw], dim=-1).view(temporal_size * grid_size_h * grid_size_w, -1)

    return combine(t_cos, h_cos, w_cos), combine(t_sin, h_sin, w_sin)


class DiffusersHunyuanVideoRotaryPosEmbed(torch.nn.Module):
    def __init__(self, patch_size, patch_size_t, rope_dim, theta=256.0, freqs_dtype=torch.float32):
        super().__init__()
        self.patch_size = patch_size
        self.patch_size_t = patch_size_t
        self.rope_dim = rope_dim
        self.theta = theta
        self.freqs_dtype = freqs_dtype  # diffusers: get_1d's default float32

    def forward(self, hidden_states):
        batch_size, num_channels, num_frames, height, width = hidden_states.shape
        rope_sizes = [num_frames // self.patch_size_t, height // self.patch_size, width // self.patch_size]
        axes_grids = []
        for i in range(3):
            axes_grids.append(torch.arange(0, rope_sizes[i], device=hidden_states.device, dtype=torch.float32))
        grid = torch.meshgrid(*axes_grids, indexing="ij")
        grid = torch.stack(grid, dim=0)
        freqs = []
        for i in range(3):
            freqs.append(diffusers_get_1d(self.rope_dim[i], grid[i].reshape(-1), self.theta, use_real=True,
                                          freqs_dtype=self.freqs_dtype))
        return torch.cat([f[0] for f in freqs], dim=1), torch.cat([f[1] for f in freqs], dim=1)


class DiffusersLTXVideoRotaryPosEmbed(torch.nn.Module):
    """LTXVideoRotaryPosEmbed (transformer_ltx.py); dtype (diffusers: float32 throughout) selectable for the
    tests."""

    def __init__(self, dim, base_num_frames=20, base_height=2048, base_width=2048, patch_size=1, patch_size_t=1,
                 theta=10000.0, dtype=torch.float32):
        super().__init__()
        self.dim = dim
        self.base_num_frames = base_num_frames
        self.base_height = base_height
        self.base_width = base_width
        self.patch_size = patch_size
        self.patch_size_t = patch_size_t
        self.theta = theta
        self.dtype = dtype

    def _prepare_video_coords(self, batch_size, num_frames, height, width, rope_interpolation_scale, device):
        grid_h = torch.arange(height, dtype=torch.float32, device=device)
        grid_w = torch.arange(width, dtype=torch.float32, device=device)
        grid_f = torch.arange(num_frames, dtype=torch.float32, device=device)
        grid = torch.meshgrid(grid_f, grid_h, grid_w, indexing="ij")
        grid = torch.stack(grid, dim=0)
        grid = grid.unsqueeze(0).repeat(batch_size, 1, 1, 1, 1)
        if rope_interpolation_scale is not None:
            grid[:, 0:1] = grid[:, 0:1] * rope_interpolation_scale[0] * self.patch_size_t / self.base_num_frames
            grid[:, 1:2] = grid[:, 1:2] * rope_interpolation_scale[1] * self.patch_size / self.base_height
            grid[:, 2:3] = grid[:, 2:3] * rope_interpolation_scale[2] * self.patch_size / self.base_width
        grid = grid.flatten(2, 4).transpose(1, 2)
        return grid

    def forward(self, hidden_states, num_frames=None, height=None, width=None, rope_interpolation_scale=None,
                video_coords=None):
        batch_size = hidden_states.size(0)
        if video_coords is None:
            grid = self._prepare_video_coords(batch_size, num_frames, height, width,
                                              rope_interpolation_scale=rope_interpolation_scale,
                                              device=hidden_states.device)
        else:
            grid = torch.stack([video_coords[:, 0] / self.base_num_frames, video_coords[:, 1] / self.base_height,
                                video_coords[:, 2] / self.base_width], dim=-1)
        start = 1.0
        end = self.theta
        freqs = self.theta ** torch.linspace(math.log(start, self.theta), math.log(end, self.theta), self.dim // 6,
                                             device=hidden_states.device, dtype=self.dtype)
        freqs = freqs * math.pi / 2.0
        freqs = freqs * (grid.to(self.dtype).unsqueeze(-1) * 2 - 1)
        freqs = freqs.transpose(-1, -2).flatten(2)
        cos_freqs = freqs.cos().repeat_interleave(2, dim=-1)
        sin_freqs = freqs.sin().repeat_interleave(2, dim=-1)
        if self.dim % 6 != 0:
            cos_padding = torch.ones_like(cos_freqs[:, :, : self.dim % 6])
            sin_padding = torch.zeros_like(cos_freqs[:, :, : self.dim % 6])
            cos_freqs = torch.cat([cos_padding, cos_freqs], dim=-1)
            sin_freqs = torch.cat([sin_padding, sin_freqs], dim=-1)
        return cos_freqs.float(), sin_freqs.float()


class DiffusersQwenEmbedRope(torch.nn.Module):
    """QwenEmbedRope (transformer_qwenimage.py) without its lru caches and device bookkeeping; dtype (diffusers:
    float32 frequencies) selectable for the tests."""

    def __init__(self, theta, axes_dim, scale_rope=False, dtype=torch.float32):
        super().__init__()
        self.theta = theta
        self.axes_dim = axes_dim
        self.dtype = dtype
        pos_index = torch.arange(4096)
        neg_index = torch.arange(4096).flip(0) * -1 - 1
        self.pos_freqs = torch.cat([self.rope_params(pos_index, d, self.theta) for d in self.axes_dim], dim=1)
        self.neg_freqs = torch.cat([self.rope_params(neg_index, d, self.theta) for d in self.axes_dim], dim=1)
        self.scale_rope = scale_rope

    def rope_params(self, index, dim, theta=10000):
        assert dim % 2 == 0
        freqs = torch.outer(index, 1.0 / torch.pow(theta, torch.arange(0, dim, 2).to(self.dtype).div(dim)))
        return torch.polar(torch.ones_like(freqs), freqs)

    def forward(self, video_fhw, device=None, max_txt_seq_len=None):
        if isinstance(video_fhw, list):
            video_fhw = video_fhw[0]
        if not isinstance(video_fhw, list):
            video_fhw = [video_fhw]
        vid_freqs = []
        max_vid_index = 0
        for idx, fhw in enumerate(video_fhw):
            frame, height, width = fhw
            vid_freqs.append(self._compute_video_freqs(frame, height, width, idx))
            if self.scale_rope:
                max_vid_index = max(height // 2, width // 2, max_vid_index)
            else:
                max_vid_index = max(height, width, max_vid_index)
        max_txt_seq_len_int = int(max_txt_seq_len)
        txt_freqs = self.pos_freqs[max_vid_index: max_vid_index + max_txt_seq_len_int, ...]
        return torch.cat(vid_freqs, dim=0), txt_freqs

    def _compute_video_freqs(self, frame, height, width, idx=0):
        seq_lens = frame * height * width
        freqs_pos = self.pos_freqs.split([x // 2 for x in self.axes_dim], dim=1)
        freqs_neg = self.neg_freqs.split([x // 2 for x in self.axes_dim], dim=1)
        freqs_frame = freqs_pos[0][idx: idx + frame].view(frame, 1, 1, -1).expand(frame, height, width, -1)
        if self.scale_rope:
            freqs_height = torch.cat([freqs_neg[1][-(height - height // 2):], freqs_pos[1][: height // 2]], dim=0)
            freqs_height = freqs_height.view(1, height, 1, -1).expand(frame, height, width, -1)
            freqs_width = torch.cat([freqs_neg[2][-(width - width // 2):], freqs_pos[2][: width // 2]], dim=0)
            freqs_width = freqs_width.view(1, 1, width, -1).expand(frame, height, width, -1)
        else:
            freqs_height = freqs_pos[1][:height].view(1, height, 1, -1).expand(frame, height, width, -1)
            freqs_width = freqs_pos[2][:width].view(1, 1, width, -1).expand(frame, height, width, -1)
        freqs = torch.cat([freqs_frame, freqs_height, freqs_width], dim=-1).reshape(seq_lens, -1)
        return freqs.clone().contiguous()


def diffusers_apply_rotary_emb(x, freqs_cis, use_real=True, use_real_unbind_dim=-1, sequence_dim=2):
    """embeddings.py's apply_rotary_emb as written."""
    if use_real:
        cos, sin = freqs_cis  # [S, D]
        if sequence_dim == 2:
            cos = cos[None, None, :, :]
            sin = sin[None, None, :, :]
        elif sequence_dim == 1:
            cos = cos[None, :, None, :]
            sin = sin[None, :, None, :]
        else:
            raise ValueError(f"`sequence_dim={sequence_dim}` but should be 1 or 2.")
        cos, sin = cos.to(x.device), sin.to(x.device)
        if use_real_unbind_dim == -1:
            x_real, x_imag = x.reshape(*x.shape[:-1], -1, 2).unbind(-1)  # [B, H, S, D//2]
            x_rotated = torch.stack([-x_imag, x_real], dim=-1).flatten(3)
        elif use_real_unbind_dim == -2:
            x_real, x_imag = x.reshape(*x.shape[:-1], 2, -1).unbind(-2)  # [B, H, S, D//2]
            x_rotated = torch.cat([-x_imag, x_real], dim=-1)
        else:
            raise ValueError(f"`use_real_unbind_dim={use_real_unbind_dim}` but should be -1 or -2.")
        out = (x.float() * cos + x_rotated.float() * sin).to(x.dtype)
        return out
    else:
        x_rotated = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        freqs_cis = freqs_cis.unsqueeze(2)
        x_out = torch.view_as_real(x_rotated * freqs_cis).flatten(3)
        return x_out.type_as(x)
