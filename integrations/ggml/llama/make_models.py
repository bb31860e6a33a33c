#!/usr/bin/python3
"""Writes small GGUF models with random weights for running posenc's ggml backend inside llama.cpp.

One model per architecture and weight type, each exercising one of ggml's RoPE modes the way llama.cpp's own
graphs call them (src/models/*.cpp of llama.cpp 0253fb21f):
  llama    GGML_ROPE_TYPE_NORMAL, with a llama3.1 `rope_freqs.weight` (frequency factors, ROPE src[2])
  qwen2    GGML_ROPE_TYPE_NEOX, q/k/v biases
  qwen2vl  GGML_ROPE_TYPE_MROPE (ggml_rope_multi), rope.dimension_sections, q/k/v biases
  qwen3vl  GGML_ROPE_TYPE_IMROPE (interleaved M-RoPE), q_norm/k_norm, no deepstack layers
each in F32 and F16 (2-D weights F16; norms, biases and rope_freqs stay F32, as llama.cpp's HF converter
writes them). Weights are normal(0, 1/sqrt(fan_in)) so that activations and logits stay O(1); the vocabulary
is a hand-made SentencePiece ("llama") one: <unk>, <s>, </s>, the 256 byte tokens and plain pieces. The
driver (llama_check.cpp) feeds token ids, so any vocabulary the loader accepts will do.

Needs gguf-py from the llama.cpp tarball on PYTHONPATH and numpy (Debian: python3-numpy, python3-yaml).
  make_models.py OUTDIR [--archs llama,qwen2,...] [--types f32,f16,q8_0] [--bench] [shape options]
Writes OUTDIR/<arch>-<type>.gguf (or <arch>-bench-<type>.gguf with --bench) and prints one path per line.
"""
import argparse
import math
import os
import sys

import numpy as np

try:
    import gguf
except ImportError:
    sys.exit("make_models.py: gguf-py not importable; put llama.cpp's gguf-py on PYTHONPATH")

ARCHS = ("llama", "qwen2", "qwen2vl", "qwen3vl")


def llama3_rope_factors(head_dim, base, factor=8.0, low=1.0, high=4.0, original=8192):
    """The frequency factors convert_hf_to_gguf.py writes for rope_scaling {"rope_type": "llama3"}
    (LlamaModel.generate_extra_tensors): float32 inverse frequencies, then per frequency 1, factor or the
    smooth interpolation between them; ggml divides the angle by the factor."""
    freqs = 1.0 / (np.float32(base) ** (np.arange(0, head_dim, 2, dtype=np.float32) / np.float32(head_dim)))
    low_wavelen = original / low
    high_wavelen = original / high
    out = []
    for freq in freqs.astype(np.float64):
        wavelen = 2 * math.pi / freq
        if wavelen < high_wavelen:
            out.append(1.0)
        elif wavelen > low_wavelen:
            out.append(factor)
        else:
            smooth = (original / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def mrope_sections(ref, half):
    """Scales a model's rope.dimension_sections (given for head_dim 128: 64 rotated pairs) to `half` pairs,
    keeping the sum equal to half (the first section takes the rounding)."""
    scaled = [int(round(s * half / sum(ref))) for s in ref]
    scaled[0] += half - sum(scaled)
    return scaled + [0] * (4 - len(scaled))


def vocab(n_vocab):
    toks = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL] + [gguf.TokenType.BYTE] * 256
    if n_vocab < len(toks) + 1:
        sys.exit("make_models.py: --n-vocab must be at least %d" % (len(toks) + 1))
    letters = "abcdefghijklmnopqrstuvwxyz"
    i = 0
    while len(toks) < n_vocab:
        # distinct pieces: "▁a", "▁b", ..., then two letters
        if i < len(letters):
            piece = "\u2581" + letters[i]
        else:
            j = i - len(letters)
            piece = letters[(j // 26) % 26] + letters[j % 26] + ("" if j < 676 else str(j // 676))
        toks.append(piece)
        types.append(gguf.TokenType.NORMAL)
        i += 1
    scores = [0.0] * 259 + [-float(k) for k in range(len(toks) - 259)]
    return toks, scores, [int(t) for t in types]


def write_model(path, arch, wtype, a, rng):
    n_embd, n_head, n_kv, hd, n_layer, n_ff, n_vocab = (a.n_embd, a.n_head, a.n_head_kv, a.head_dim, a.n_layer,
                                                        a.n_ff, a.n_vocab)
    qwen = arch != "llama"
    base = a.rope_base if a.rope_base else (1e6 if qwen else 10000.0)
    w = gguf.GGUFWriter(path, arch)
    w.add_name("posenc-test-%s" % arch)
    w.add_file_type({"f16": gguf.LlamaFileType.MOSTLY_F16, "q8_0": gguf.LlamaFileType.MOSTLY_Q8_0}.get(
        wtype, gguf.LlamaFileType.ALL_F32))
    w.add_context_length(a.ctx)
    w.add_embedding_length(n_embd)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_kv)
    w.add_rope_freq_base(base)
    w.add_layer_norm_rms_eps(1e-6 if qwen else 1e-5)
    w.add_rope_dimension_count(hd)
    if hd * n_head != n_embd:
        w.add_key_length(hd)
        w.add_value_length(hd)
    if arch == "llama":
        w.add_vocab_size(n_vocab)
    if arch == "qwen2vl":
        w.add_rope_dimension_sections(mrope_sections([16, 24, 24], hd // 2))
    if arch == "qwen3vl":
        w.add_rope_dimension_sections(mrope_sections([24, 20, 20], hd // 2))
        w.add_num_deepstack_layers(0)
    toks, scores, types = vocab(n_vocab)
    w.add_tokenizer_model("llama")
    w.add_token_list(toks)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)

    wdt = np.float16 if wtype == "f16" else np.float32

    def mat(rows, cols, scale=None):  # numpy (rows, cols) = ggml ne {cols, rows}: y = W x, fan_in cols
        s = 1.0 / math.sqrt(cols) if scale is None else scale
        return (rng.standard_normal((rows, cols), dtype=np.float32) * np.float32(s)).astype(wdt)

    def add(name, t):
        if wtype == "q8_0" and t.ndim == 2 and t.shape[1] % 32 == 0:
            qt = gguf.GGMLQuantizationType.Q8_0
            w.add_tensor(name, gguf.quants.quantize(t, qt), raw_dtype=qt)
        else:
            w.add_tensor(name, t)

    def vec(n, mean, sd):
        return (np.float32(mean) + rng.standard_normal(n, dtype=np.float32) * np.float32(sd)).astype(np.float32)

    add("token_embd.weight", mat(n_vocab, n_embd, 1.0))
    add("output_norm.weight", vec(n_embd, 1.0, 0.1))
    add("output.weight", mat(n_vocab, n_embd))
    if arch == "llama":
        add("rope_freqs.weight", llama3_rope_factors(hd, base))
    for il in range(n_layer):
        p = "blk.%d." % il
        add(p + "attn_norm.weight", vec(n_embd, 1.0, 0.1))
        add(p + "attn_q.weight", mat(n_head * hd, n_embd))
        add(p + "attn_k.weight", mat(n_kv * hd, n_embd))
        add(p + "attn_v.weight", mat(n_kv * hd, n_embd))
        if arch in ("qwen2", "qwen2vl"):
            add(p + "attn_q.bias", vec(n_head * hd, 0.0, 0.1))
            add(p + "attn_k.bias", vec(n_kv * hd, 0.0, 0.1))
            add(p + "attn_v.bias", vec(n_kv * hd, 0.0, 0.1))
        if arch == "qwen3vl":
            add(p + "attn_q_norm.weight", vec(hd, 1.0, 0.1))
            add(p + "attn_k_norm.weight", vec(hd, 1.0, 0.1))
        add(p + "attn_output.weight", mat(n_embd, n_head * hd))
        add(p + "ffn_norm.weight", vec(n_embd, 1.0, 0.1))
        add(p + "ffn_gate.weight", mat(n_ff, n_embd))
        add(p + "ffn_up.weight", mat(n_ff, n_embd))
        add(p + "ffn_down.weight", mat(n_embd, n_ff))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--archs", default=None, help="comma-separated subset of " + ",".join(ARCHS))
    ap.add_argument("--types", default="f32,f16", help="comma-separated: f32, f16, q8_0")
    ap.add_argument("--bench", action="store_true",
                    help="benchmark shapes (the report's llama.cpp section): the attention of Llama-3-8B for llama "
                         "(n_embd 4096, 32 heads x 128, 8 kv heads) and of Qwen2-7B / Qwen2-VL-7B for qwen2, qwen2vl "
                         "(n_embd 3584, 28 heads x 128, 4 kv heads), 1 layer, n_ff 1024, 512 tokens; archs "
                         "llama,qwen2,qwen2vl, Q8_0 (other options still override)")
    ap.add_argument("--n-embd", type=int)
    ap.add_argument("--n-head", type=int)
    ap.add_argument("--n-head-kv", type=int)
    ap.add_argument("--head-dim", type=int)
    ap.add_argument("--n-layer", type=int)
    ap.add_argument("--n-ff", type=int)
    ap.add_argument("--n-vocab", type=int)
    ap.add_argument("--ctx", type=int, help="context_length (training context) written to the model")
    ap.add_argument("--rope-base", type=float, default=0.0, help="default 10000 (llama), 1e6 (qwen*)")
    ap.add_argument("--seed", type=int, default=1234)
    a = ap.parse_args()
    small = dict(n_embd=256, n_head=4, n_head_kv=2, head_dim=64, n_layer=2, n_ff=512, n_vocab=384, ctx=8192)
    # the benchmark: real attention geometry (what RoPE rotates, what the scheduler splits around), the rest as
    # small as keeps a round of a 2048-token prompt short on 2 cores (one layer: 4 x 1 + 1 splits at decode)
    bench = dict(n_layer=1, n_ff=1024, n_vocab=512, ctx=8192)
    geometry = {"llama": dict(n_embd=4096, n_head=32, n_head_kv=8, head_dim=128),                # Llama-3-8B
                "qwen2": dict(n_embd=3584, n_head=28, n_head_kv=4, head_dim=128),                # Qwen2-7B
                "qwen2vl": dict(n_embd=3584, n_head=28, n_head_kv=4, head_dim=128),              # Qwen2-VL-7B
                "qwen3vl": dict(n_embd=4096, n_head=32, n_head_kv=8, head_dim=128)}              # Qwen3-VL-8B
    if a.archs is None:
        a.archs = "llama,qwen2,qwen2vl" if a.bench else ",".join(ARCHS)
    if a.bench and a.types == "f32,f16":
        a.types = "q8_0"
    given = {k: getattr(a, k) for k in list(small) if getattr(a, k) is not None}
    archs = a.archs.split(",")
    types = a.types.split(",")
    for x in archs:
        if x not in ARCHS:
            sys.exit("make_models.py: unknown arch %s" % x)
    for t in types:
        if t not in ("f32", "f16", "q8_0"):
            sys.exit("make_models.py: unknown type %s" % t)
    os.makedirs(a.outdir, exist_ok=True)
    for arch in archs:
        shape = dict(small, **bench, **geometry[arch]) if a.bench else dict(small)
        shape.update(given)
        for k, v in shape.items():
            setattr(a, k, v)
        if a.head_dim % 2 or a.n_head % a.n_head_kv:
            sys.exit("make_models.py: head_dim must be even and n_head a multiple of n_head_kv")
        for t in types:
            # the same weights for F32 and F16 of one arch (F16 is their rounding), different per arch
            rng = np.random.default_rng([a.seed, ARCHS.index(arch)])
            path = os.path.join(a.outdir, "%s%s-%s.gguf" % (arch, "-bench" if a.bench else "", t))
            write_model(path, arch, t, a, rng)
            print(path)


if __name__ == "__main__":
    main()
