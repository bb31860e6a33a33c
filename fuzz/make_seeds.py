#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_api (fuzz/corpus/): one input per kernel and situation, encoded the way
fuzz_api.cpp decodes its input, so that fuzzing starts from valid calls of every kernel and from each kind
of bad argument instead of having to discover the format. Run from the repository root after changing
the decoder:  python3 fuzz/make_seeds.py
"""
import base64
import os
import struct

KERNELS = ["table_f32", "table_bf16", "table_f16", "rows_f32", "rows_bf16", "rows_f16", "add_f32",
           "embed_f32", "embed_bf16", "embed_f16", "embed_learned_f32"]
REQUIRED = {3, 4, 5}        # rows_*: positions always explicit
OPTIONAL = {6, 7, 8, 9, 10}  # add, embed*: an extra byte chooses explicit positions


def seed(kernel, d=13, layout=0, n=5, first=3, vocab=7, pos_rows=12, gaps=(0, 1, 2), explicit=True,
         rows=None, base=b"\0", null=0, specials=0):
    """rows: per-row (position byte(s), token byte(s)); default: a run with one POSENC_PAD, tokens 0.."""
    # base (its mode byte, and an index into the decoder's special values), then 1e4's defaults for
    # freq_denominator (0) and position_scale (1)
    out = bytearray([kernel, d - 1, layout]) + base + bytes([0, 0, n, 0, first & 0xFF, vocab - 1, pos_rows - 1])
    out += bytes(gaps)  # out, x and learned-table strides: d + gap
    out += bytes([0, null])  # scale 1.0; the NULL selector
    if kernel in OPTIONAL:
        out.append(1 if explicit else 0)
    out += struct.pack("<Q", 0x243F6A8885A308D3) + bytes([specials])
    if rows is None:
        rows = [(bytes([0 if r != 2 else 130]), bytes([r % vocab])) for r in range(n)]
    for pos, tok in rows:
        out += pos + tok
    return bytes(out)


TIMES = ["timesteps_f32", "timesteps_bf16", "timesteps_f16", "timesteps_add_f32"]  # kernels 11 .. 14


def times_rows(kinds):
    """The bytes of one timestep per row, as fuzz_api.cpp decodes them (the first byte picks the kind)."""
    out = bytearray()
    for kind, v in kinds:
        if kind == "small":       # int8 + u8 / 256
            out += bytes([0, v & 0xFF, (v * 37) & 0xFF])
        elif kind == "sigma":     # u16 / 64
            out += bytes([100]) + struct.pack("<H", v)
        elif kind == "integer":   # int32
            out += bytes([150]) + struct.pack("<i", v)
        elif kind == "near2p31":  # +-(2^31 - 1 - u8 / 4)
            out += bytes([170 + (v & 1), 3])
        elif kind == "tiny":      # (1 + u8 / 256) 2^-(u8 % 120)
            out += bytes([190, 7, v])
        elif kind == "special":   # the decoder's special list
            out += bytes([210, v])
    return bytes(out)


ROPE = ["rope_cache_f32", "rope_f32", "rope_bf16", "rope_f16", "rope_qk_f32", "rope_qk_bf16", "rope_qk_f16",
        "rope_copy_f32", "rope_copy_bf16", "rope_copy_f16"]
COPY = {7, 8, 9}  # rope_copy_*: tensor 1 is the source, with x's heads (no head byte)


def rope_seed(kernel, r=64, pairs=0, m=0, freq=0, n=70, first=3, explicit=True, tail=0, layout=0, k_layout=0,
              heads=4, k_heads=2, k_mode=0, specials=0, positions=None, axes=1, axis_map=None, axis_positions=None,
              map_byte=1, k_raw=(40, 60)):
    """A RoPE call: the first byte 242 + kernel selects rope_one_input(); r = 2 (1 + byte % 48).
    axes > 1: a multi-axis spec (2 + byte % 3 axes) with axis_map (h bytes, taken mod axes; default i % axes)
    and, after axis 0's position bytes, per further axis a start byte (value - 100) and one byte per token
    (< 100 the same position, < 200 the next; default: axis 1 fixed, axis 2 consecutive, axis 3 fixed).
    rope_copy_* (COPY): k_layout is the source's layout (k_raw its raw strides, byte % 80 - 4, with layout 3);
    k_mode 0 puts the source after x, 1 makes it x itself (+ 4: x with another token stride), 2 + 4 o at
    element o, 3 + 4 NULL."""
    out = bytearray([242 + kernel, r // 2 - 1, pairs, 0, 0, m])  # base 1e4, position_scale 1, attention byte
    if 150 <= m < 200:
        out.append(0)  # the first of the usual attention scales, 1.369
    out.append(freq)  # bit 0: explicit frequencies; bit 1: decoded values (else 1 / (i + 1))
    if freq & 3 == 3:
        for i in range(r // 2):
            out += bytes([60 + i % 40]) + struct.pack("<H", 1000 * i + 1)  # 2^(k - 60) (1 + ...), both signs
    out += bytes([n, 0, first & 0xFF])  # n < 200: n % 80; first: int8
    out.append((1 if explicit else 0) | tail << 1)
    out.append(1)  # tensor 0 at element 1
    if kernel == 0:
        out += bytes([0, 10 if k_mode != 1 else 0])  # cos stride h; sin stride the cos stride (sm < 128) or h + 1
    else:
        out += bytes([heads - 1, layout]) + (bytes([40, 60]) if layout % 5 == 3 else b"")  # small raw strides
        if kernel in COPY:
            out += bytes([k_layout]) + (bytes(k_raw) if k_layout % 5 == 3 else b"")
        elif kernel >= 4:
            out += bytes([k_heads, k_layout]) + (bytes([40, 60]) if k_layout % 5 == 3 else b"")
    out.append(k_mode)
    out += struct.pack("<Q", 0x243F6A8885A308D3) + bytes([specials])
    if axes == 1:
        out.append(0)  # one axis
    else:
        out.append(162 + (axes - 2))  # 2 + byte % 3 axes
        out.append(map_byte)  # a map follows (8: its entry h/2 is a raw byte, which may be past the count)
        h = r // 2
        out += bytes(axis_map if axis_map is not None else [i % axes for i in range(h)])
    if positions is None:
        positions = [0 if t != 2 else 130 for t in range(n)]  # a run, one POSENC_PAD
    out += bytes(positions)
    for a in range(1, axes):
        if axis_positions is not None:
            out += bytes(axis_positions[a - 1])
        else:
            out += bytes([110 + a]) + bytes([0 if a != 2 else 150] * n)
    return bytes(out)


def parts(cuts=(), order=0x5851F42D4C957F2D, begin=0, end=0, bad=None):
    """The bytes fuzz_api.cpp reads after a call (posenc.h, "Parts of a call"): a cover of [0, n) cut at
    n / 2 and at each of `cuts` (up to 7, taken mod n + 1), run in an order drawn from `order`; then one
    part [begin, end) (taken mod n + 1), or with bad = 0..4 a range outside [0, n]: [-1, 0), [0, n + 1),
    [n, n - 1), [INT64_MIN, INT64_MAX), [n + 1, n + 1). Read only when the call made room for them, so
    they follow the rows of a call that reads its positions or tokens."""
    out = bytearray([len(cuts)]) + b"".join(struct.pack("<I", c) for c in cuts) + struct.pack("<Q", order)
    if bad is None:
        out += bytes([0]) + struct.pack("<II", begin, end)
    else:
        out += bytes([204 + bad])  # 204 % 6 == 0
    return bytes(out)


def main():
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
    os.makedirs(here, exist_ok=True)
    seeds = {}
    for k, name in enumerate(KERNELS):
        learned = k == 10
        for d, layout in ((1, 0), (13, 1), (40, 2), (67, 0)):
            seeds[f"{name}-d{d}-layout{layout}"] = seed(k, d=d, layout=layout, first=0 if learned else 3)
        seeds[f"{name}-nan-inputs"] = seed(k, d=33, specials=250, first=0 if learned else 3)
        seeds[f"{name}-base-nan"] = seed(k, base=bytes([232, 4]))  # the special list's NaN
        seeds[f"{name}-stride-short"] = seed(k, gaps=(200, 1, 2))  # d - 1
        seeds[f"{name}-stride-byte-overflow"] = seed(k, gaps=(205, 1, 2))
        bad_last = [(bytes([0]), bytes([0]))] * 4 + [(bytes([231, 1]), bytes([0]))]  # 2^31 + 1 last
        if not learned:
            seeds[f"{name}-position-2p31-last"] = seed(k, rows=bad_last)
        if k >= 7:
            bad_token = [(bytes([0]), bytes([0]))] * 4 + [(bytes([0]), bytes([240]))]  # token -1 last
            seeds[f"{name}-token-minus-1-last"] = seed(k, rows=bad_token, first=0 if learned else 3)
            seeds[f"{name}-implicit-positions"] = seed(k, explicit=False, first=0 if learned else 3)
        seeds[f"{name}-null-out"] = seed(k, null=241)
        seeds[f"{name}-n-zero"] = seed(k, n=0)
    for k, name in enumerate(ROPE):
        seeds[f"{name}-tokens-heads-dim"] = rope_seed(k)
        seeds[f"{name}-heads-tokens-dim"] = rope_seed(k, layout=2, k_layout=2, pairs=1, tail=3)
        seeds[f"{name}-fused-explicit-freq"] = rope_seed(k, k_mode=1, freq=3, m=150, r=40)
        seeds[f"{name}-r2-implicit"] = rope_seed(k, r=2, explicit=False, tail=1, pairs=1)
        seeds[f"{name}-nan-inputs"] = rope_seed(k, r=24, specials=250, n=9)
        seeds[f"{name}-decode-batch"] = rope_seed(k, n=12, positions=[0] + [160] * 11)  # one position repeated
        seeds[f"{name}-overlapping"] = rope_seed(k, k_mode=2 + 4 * 3, layout=3, n=5)
        seeds[f"{name}-position-2p31-last"] = rope_seed(k, n=5, positions=[0, 0, 0, 0, 231, 1])
        # multi-axis: an image row (axis 1 fixed, axis 2 consecutive), Qwen3-VL-like interleaving, a vision
        # tower's two axes, an axis past the count, PAD on axis 1 (refused)
        seeds[f"{name}-axes3-image-row"] = rope_seed(k, axes=3, n=70, axis_map=[0] * 8 + [1] * 12 + [2] * 12)
        seeds[f"{name}-axes3-interleaved"] = rope_seed(k, axes=3, n=20, pairs=1, explicit=False)
        seeds[f"{name}-axes2-vision"] = rope_seed(k, axes=2, r=40, n=30, axis_positions=[[100] + [150] * 30])
        seeds[f"{name}-axes4-bad-map"] = rope_seed(k, axes=4, r=8, n=4, axis_map=[0, 1, 9, 3], map_byte=8)
        seeds[f"{name}-axes2-pad-on-axis1"] = rope_seed(k, axes=2, r=8, n=4, axis_positions=[[100, 0, 0, 230, 0]])
        if k in COPY:  # the source: [H,T,D], in place, x shifted, NULL, rows overlapping, a negative stride
            seeds[f"{name}-src-htd-partial"] = rope_seed(k, k_layout=2, tail=3, n=20, pairs=1)
            seeds[f"{name}-in-place"] = rope_seed(k, k_mode=1, n=20)
            seeds[f"{name}-in-place-other-token-stride"] = rope_seed(k, k_mode=1 + 4, n=20)
            seeds[f"{name}-src-overlaps-x"] = rope_seed(k, k_mode=2 + 4 * 3, n=5)
            seeds[f"{name}-src-null"] = rope_seed(k, k_mode=3 + 4, n=5)
            seeds[f"{name}-src-rows-overlap"] = rope_seed(k, k_layout=3, k_raw=(5, 4), n=30, r=16)  # strides 1, 0
            seeds[f"{name}-src-negative-stride"] = rope_seed(k, k_layout=3, k_raw=(0, 60), n=5)  # token stride -4
    mixed = [("small", 3), ("sigma", 63968), ("integer", 999), ("near2p31", 0), ("near2p31", 1), ("tiny", 61),
             ("tiny", 119), ("special", 3), ("special", 5), ("special", 10), ("small", 250), ("sigma", 32)]
    for j, name in enumerate(TIMES):
        k = 11 + j
        for d, layout in ((1, 0), (20, 2), (67, 1)):
            seeds[f"{name}-d{d}-layout{layout}"] = seed(k, d=d, layout=layout, n=len(mixed), rows=[],
                                                         explicit=False) + times_rows(mixed)
        seeds[f"{name}-integers"] = seed(k, d=32, n=5, rows=[]) + times_rows([("integer", v) for v in (0, 1, -7, 1000000, 2147483647)])
        seeds[f"{name}-nan-last"] = seed(k, d=16, n=3, rows=[]) + times_rows([("small", 1), ("sigma", 5), ("special", 0)])
        seeds[f"{name}-2p31-first"] = seed(k, d=16, n=2, rows=[]) + times_rows([("special", 12), ("small", 1)])
    # parts of a call: a cover of seven cuts around the 65-row blocks and one row alone, a range past n, and a
    # part of a call whose last row is refused (it fails as the whole call does)
    for k, name in enumerate(KERNELS):
        learned = k == 10
        n = 14 if learned else 70  # learned positions stay inside a table of 16 rows (the decoder's largest)
        rows = [(bytes([0 if r != 10 else 130]), bytes([r % 7])) for r in range(n)]
        seeds[f"{name}-parts-cover"] = seed(k, n=n, rows=rows, first=0 if learned else 3, pos_rows=16) + \
            parts(cuts=(1, 64, 65, 66, 69, 5, 5), begin=n - 6, end=n - 5)
        seeds[f"{name}-parts-past-n"] = seed(k, first=0 if learned else 3) + parts(bad=1)
        if not learned:
            bad_last = [(bytes([0]), bytes([0]))] * 4 + [(bytes([231, 1]), bytes([0]))]
            seeds[f"{name}-parts-first-row-of-bad-call"] = seed(k, rows=bad_last) + parts(begin=0, end=1)
    for k, name in enumerate(ROPE):
        seeds[f"{name}-parts-cover"] = rope_seed(k, n=70) + parts(cuts=(1, 64, 65, 66, 69, 5, 5), begin=65, end=70)
        seeds[f"{name}-parts-axes3"] = rope_seed(k, axes=3, n=70, axis_map=[0] * 8 + [1] * 12 + [2] * 12) + \
            parts(cuts=(13, 31, 64), begin=30, end=40)
        seeds[f"{name}-parts-bad-range"] = rope_seed(k, n=9) + parts(bad=2)
        seeds[f"{name}-parts-first-token-of-bad-call"] = rope_seed(k, n=5, positions=[0, 0, 0, 0, 231, 1]) + \
            parts(begin=0, end=1)
    # the calls by given rows (fuzz_api.cpp, given_one_input): byte 241, then family / format, width, pairing,
    # tokens, heads (decode_heads), the head rows' tail, the two layouts (decode_layout), the table strides, the
    # placement, NULL, the part byte, a seed
    def given_seed(family, fmt, d=64, pairs=0, n=7, heads=3, tail=1, layout=0, src_layout=2, cm=1, sm=2,
                   place=0, null=0, part=0):
        return bytes([241, family + 3 * fmt, d // 2 - 1, pairs, n, heads, tail, layout, src_layout, cm, sm, place,
                      null, part]) + bytes(range(8))
    given = ("cached", "copy_cached", "tables")
    for family, fam in enumerate(given):
        for fmt, fmt_name in enumerate(("f32", "bf16", "f16")):
            seeds[f"given-{fam}-{fmt_name}"] = given_seed(family, fmt)
            seeds[f"given-{fam}-{fmt_name}-interleaved-odd-tail"] = given_seed(family, fmt, d=18, pairs=1, tail=2)
        seeds[f"given-{fam}-in-place"] = given_seed(family, 0, place=4)
        seeds[f"given-{fam}-src-one-over"] = given_seed(family, 0, place=5)
        seeds[f"given-{fam}-cos-over-x"] = given_seed(family, 0, place=6)
        seeds[f"given-{fam}-shared-table-row"] = given_seed(family, 0, cm=200, sm=200)  # stride 0
        seeds[f"given-{fam}-negative-table-stride"] = given_seed(family, 0, cm=230)
        seeds[f"given-{fam}-null-cos"] = given_seed(family, 0, null=250)
        seeds[f"given-{fam}-bad-range"] = given_seed(family, 0, part=241)
        seeds[f"given-{fam}-odd-width"] = given_seed(family, 0, d=66) [:2] + bytes([232, 3]) + \
            given_seed(family, 0)[3:]
    # inputs the fuzzer found, kept so that every run starts from them
    seeds["regress-rope-qk-f16-empty-tensor"] = base64.b64decode(  # 5a2a5e7: a row pointer from a NULL tensor
        "+B8BAAAFAOz/AwABAwACAADTCKOFiGo/JACjAQABAgABAgABAgABAgABAgABAgABAgABAgABAgABAgABAACCAAAAAAAAAAAAAAAAAAAA"
        "AABvAAAAAAAAAAAAAAAAAAAAAAAAAABwlpaWlpaWlpaWlpaWlpaWlpaWlpY=")
    for name, data in sorted(seeds.items()):
        with open(os.path.join(here, name), "wb") as fh:
            fh.write(data)
    print(f"{len(seeds)} seeds in {here}")


if __name__ == "__main__":
    main()
