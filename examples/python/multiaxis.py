"""posenc from Python: multi-axis RoPE as a Qwen2.5-VL text model uses it.

  1. 3-D position ids (temporal, height, width) for a prompt of text, an image and text, HF's layout;
  2. the rotary embedding of posenc.torch in place of HF's: cos/sin for apply_multimodal_rotary_pos_emb, and the
     fused in-place rotation that needs none;
  3. the same image far into a long context, where HF's float32 angles are off;
  4. the context shift: dropping the first tokens of a KV cache by rotating the cached keys (posenc.rope_shift).

Run: python3 examples/python/multiaxis.py   (after `pip install --no-build-isolation .`; scripts/test_python.sh
runs it). Exits non-zero if a check fails.
"""
import torch

import posenc
import posenc.torch as pt

torch.manual_seed(0)
config = {"hidden_size": 3584, "num_attention_heads": 28, "num_key_value_heads": 4, "rope_theta": 1000000.0,
          "max_position_embeddings": 128000, "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}}


def prompt_positions(start, text_before, grid_h, grid_w, text_after):
    """[3, 1, seq]: text on all three axes, then an image (temporal fixed, height = row, width = column, each
    offset by the running position), then text from start + max(grid_h, grid_w) on."""
    rows = [[start + i] * 3 for i in range(text_before)]
    cur = start + text_before
    rows += [[cur, cur + r, cur + c] for r in range(grid_h) for c in range(grid_w)]
    cur += max(grid_h, grid_w)
    rows += [[cur + i] * 3 for i in range(text_after)]
    return torch.tensor(rows).t().unsqueeze(1)


# 1.-2. a short prompt: posenc's cos/sin in HF's function, and the fused rotation
rotary = pt.Qwen2_5_VLRotaryEmbedding(config)
pos = prompt_positions(0, 5, 4, 6, 3)
q, k = torch.randn(1, 28, pos.shape[-1], 128), torch.randn(1, 4, pos.shape[-1], 128)
cos, sin = rotary(q, pos)  # [3, 1, seq, 128]
q_hf, k_hf = pt.apply_multimodal_rotary_pos_emb(q, k, cos, sin, rotary.mrope_section)
q_fused, k_fused = q.clone(), k.clone()
rotary.apply_rotary(q_fused, k_fused, pos)
diff = max((q_fused - q_hf).abs().max().item(), (k_fused - k_hf).abs().max().item())
print("prompt of %d tokens (an image of 4 x 6): cos %s, fused vs cos/sin path %.1e" % (pos.shape[-1],
                                                                                      tuple(cos.shape), diff))
assert diff < 1e-5, "fused rotation"

# 3. the same image at position 1,000,000: HF's angle p * inv_freq in float32 against posenc's exact cos
far = prompt_positions(1000000, 5, 4, 6, 3)
exact, _ = rotary(q, far)
inv = rotary.inv_freq  # float32, as HF's buffer
hf = (far[..., None].float() * inv).cos()  # HF's freqs for each axis, float32
err = (torch.cat([hf, hf], -1) - exact).abs().max().item()
print("at position 1e6: HF-style float32 cos off by up to %.1e (posenc: correctly rounded)" % err)
assert err > 1e-3

# 4. the context shift: drop the first 5 tokens of the cache, keys move 5 positions back on every axis
keys = k.clone()
posenc.rope_qk(rotary.multi_rope, keys, None, positions=pos, heads_first=True)  # the cached keys
kept = keys[:, :, 5:].clone()
posenc.rope_shift(rotary.multi_rope, kept, -5, heads_first=True)
direct = k[:, :, 5:].clone()
posenc.rope_qk(rotary.multi_rope, direct, None, positions=pos[:, :, 5:] - 5, heads_first=True)
shift_err = (kept - direct).abs().max().item()
print("shift by -5 vs rotating at the new positions: %.1e (three float32 roundings)" % shift_err)
assert shift_err < 1e-5, "rope_shift"
print("ok")
