"""posenc from Python: a toy decoder loop that does what a PyTorch inference loop does with positions, on
posenc's exact kernels.

  1. token embedding * sqrt(d) + sinusoidal PE for the prompt, fused (posenc.torch.embed);
  2. RoPE for a Llama-3.1-style config (HF config dict, llama3 scaling): the prompt's q/k rotated in place
     in one pass (prefill), then one token per step (decode), with a KV cache;
  3. the same rotation the HF way (cos/sin + apply_rotary_pos_emb) far into a long context, to show what
     float32 angles cost there.

Run: python3 examples/python/decode.py   (after `pip install --no-build-isolation .`; scripts/test_python.sh
runs it). Exits non-zero if a check fails.
"""
import math
import sys

import numpy as np
import torch

import posenc
import posenc.torch as pt

torch.manual_seed(0)
d_model, heads, kv_heads, head_dim, vocab = 256, 8, 2, 32, 1000
config = {  # the RoPE fields of an HF LlamaConfig (Llama 3.1's scaling, a small head)
    "hidden_size": heads * head_dim, "num_attention_heads": heads, "num_key_value_heads": kv_heads,
    "max_position_embeddings": 131072, "rope_theta": 500000.0,
    "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 8192},
}
print("posenc", posenc.__version__, "on", posenc.isa_name(posenc.active_isa()))

# 1. embedding + PE, fused: one pass over the embedding rows, no PE table
emb = torch.nn.Embedding(vocab, d_model)
prompt = torch.tensor([[17, 4, 256, 99, 3, 512, 8]])
x = pt.embed(prompt, emb.weight, posenc.Spec.vaswani(d_model), scale=math.sqrt(d_model))
reference = emb(prompt) * math.sqrt(d_model) + pt.table(d_model, prompt.size(1))
assert torch.allclose(x, reference, atol=1e-5), "embed"
print("embedding + PE:", tuple(x.shape), "max |difference from emb*sqrt(d) + table| = %.1e"
      % (x - reference).abs().max().item())

# 2. rotary: prefill, then decode with a KV cache
rotary = pt.RotaryEmbedding(config)
wq = torch.nn.Linear(d_model, heads * head_dim, bias=False)
wk = torch.nn.Linear(d_model, kv_heads * head_dim, bias=False)


def project(h):  # [batch, seq, d] -> q [batch, heads, seq, head_dim], k [batch, kv_heads, seq, head_dim]
    b, s, _ = h.shape
    q = wq(h).view(b, s, heads, head_dim).transpose(1, 2)
    k = wk(h).view(b, s, kv_heads, head_dim).transpose(1, 2)
    return q, k


with torch.no_grad():
    seq = prompt.size(1)
    q, k = project(x)
    q_ref, k_ref = q.clone(), k.clone()
    rotary.apply_rotary(q, k, torch.arange(seq)[None])  # in place, one pass for q and k
    cos, sin = rotary(q_ref, torch.arange(seq)[None])
    q_hf, k_hf = pt.apply_rotary_pos_emb(q_ref, k_ref, cos, sin)
    assert torch.allclose(q, q_hf, atol=1e-5) and torch.allclose(k, k_hf, atol=1e-5), "prefill"
    cache_k = [k]
    for step in range(4):  # decode: one token per step
        pos = seq + step
        h = torch.randn(1, 1, d_model)
        q1, k1 = project(h)
        rotary.apply_rotary(q1, k1, torch.tensor([[pos]]))
        cache_k.append(k1)
        keys = torch.cat(cache_k, dim=2).repeat_interleave(heads // kv_heads, dim=1)
        scores = (q1 @ keys.transpose(-1, -2)) / math.sqrt(head_dim)
        print("decode step %d (position %d): attention over %d keys, max weight %.3f"
              % (step, pos, keys.size(2), scores.softmax(-1).max().item()))

    # 3. far into the context: HF's float32 angle p * inv_freq versus posenc's exact one
    p = 120000
    q = torch.randn(1, heads, 1, head_dim)
    k = torch.randn(1, kv_heads, 1, head_dim)
    exact_q, _ = rotary.apply_rotary(q.clone(), k.clone(), torch.tensor([[p]]))
    inv = torch.tensor(rotary.rope.freq, dtype=torch.float32)  # the same frequencies, rounded to float32
    ang = (torch.tensor([float(p)]) * inv)  # HF: one float32 product per angle
    emb_ang = torch.cat((ang, ang))
    q_hf, _ = pt.apply_rotary_pos_emb(q, k, emb_ang.cos()[None, None], emb_ang.sin()[None, None])
    ang_exact = p * rotary.rope.freq  # doubles: within 1e-10 rad of the real angle here
    print("position %d: float32 angles off by up to %.1e rad; rotated q differs by up to %.1e"
          % (p, np.abs(ang.double().numpy() - ang_exact).max(), (q_hf - exact_q).abs().max().item()))
print("ok")
sys.exit(0)
