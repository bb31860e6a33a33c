"""Multi-axis RoPE through the core API: Rope(axes=, axis=) (fields, equality, pickling, variants),
rope_sections against docs/api.md's table written out in mpfr_ref.section_map (every layout, random sections
including sums below r/2, the frequencies VISION and STRIDED write as MPFR's nearest doubles), and rope_cache /
rope / rope_qk with positions (A, n), the flat (A * n,) and (A, batch, n), bit for bit against MPFR's cos/sin
and posenc.h's rotation on every SIMD path and format; bad shapes and statuses, nothing written on error."""
import pickle

import numpy as np
import pytest

import posenc
import mpfr_ref as R
from helpers import assert_bits, bits, sentinel
from test_errors import raises_status
from test_rope_api import FMTS, data

K = 2 ** 31
PAD = posenc.PAD
S = posenc.Status
LAYOUTS = ["chunked", "interleaved", "vision", "strided", "interleaved_4", "alternating", "per_axis", "balanced"]


def vl_positions(seed, n, axes):
    """Positions (axes, n) as vision-language prompts make them: text runs (every axis equal), images (rows of
    consecutive columns, fixed rows and time; for two axes the (row, col) of a vision tower), a two-frame video,
    repeated decode positions, scattered far and negative values, padding tokens (PAD on axis 0, any value
    on the others), axes running backwards."""
    rng = np.random.default_rng(seed)
    cols = [[] for _ in range(axes)]
    cur = int(rng.integers(0, 50))

    def push(v):
        for a in range(axes):
            cols[a].append(int(v[a]))
    while len(cols[0]) < n:
        kind = int(rng.integers(0, 8))
        if kind < 2:
            ln = int(rng.integers(1, 20))
            for k in range(ln):
                push([cur + k] * axes)
            cur += ln
        elif kind < 4:
            rows, ncols, frames = int(rng.integers(1, 5)), int(rng.integers(1, 40)), 1 + int(rng.integers(0, 3) == 0)
            step = int(rng.integers(1, 50))
            for f in range(frames):
                for y in range(rows):
                    for x in range(ncols):
                        push([y, x] if axes == 2 else [cur + f * step, cur + y, cur + x, cur + 7][:axes])
            cur += max(rows, ncols) + (frames - 1) * step
        elif kind == 4:
            for _ in range(int(rng.integers(1, 5))):
                push([cur] * axes)
        elif kind == 5:
            v = [int(rng.integers(-K + 1, K)) for _ in range(axes)]
            v[0] = K - 1 if rng.integers(0, 4) == 0 else v[0]
            push(v)
        elif kind == 6:
            push([PAD] + [int(rng.integers(-500, 500)) for _ in range(axes - 1)])
        else:
            push([cur - 2 * a for a in range(axes)])
            push([cur + 2 + a for a in range(axes)])
            cur += 5
    return np.array([c[:n] for c in cols], np.int64)


def sectioned(rope, sections, layout):
    """rope_sections, checked against mpfr_ref.section_map: axes, the map, the frequencies (kept, or the
    correctly rounded doubles the layout writes), every other field kept."""
    got = posenc.rope_sections(rope, sections, layout)
    h = rope.rotary_dim // 2
    axes, axis, expo = R.section_map(LAYOUTS.index(layout), sections, h)
    assert got.axes == axes, (sections, layout)
    if axes == 1:
        assert got.axis is None
    else:
        assert got.axis.dtype == np.uint8 and got.axis.tolist() == axis, (sections, layout)
    if expo is None:
        assert (got.freq is None and rope.freq is None) or got.freq.tobytes() == rope.freq.tobytes()
    else:
        want = np.array([R.power(rope.base, num, den) for num, den in expo])
        assert got.freq.tobytes() == want.tobytes(), f"{layout} {sections}: frequencies"
    assert (got.rotary_dim, got.pairs, got.base, got.position_scale, got.attention_scale) == (
        rope.rotary_dim, rope.pairs, rope.base, rope.position_scale, rope.attention_scale)
    return got


# ---- the Rope object ----------------------------------------------------------------------------------------

def test_rope_axes_fields_equality_pickle_and_variants():
    r = posenc.Rope(8, "interleaved", base=5e5, position_scale=0.5, attention_scale=1.5, axes=3, axis=[0, 2, 1, 2])
    assert (r.axes, r.axis.tolist(), r.axis.dtype) == (3, [0, 2, 1, 2], np.uint8)
    a = r.axis
    a[0] = 2  # a copy
    assert r.axis[0] == 0
    assert posenc.Rope(8).axes == 1 and posenc.Rope(8).axis is None
    assert posenc.Rope(8, axis=[0, 0, 0, 0]) == posenc.Rope(8)  # one axis keeps no map: it can only hold zeros
    assert posenc.Rope(8, axis=np.zeros(4, np.int64)).axis is None
    assert pickle.loads(pickle.dumps(r)) == r
    assert r != posenc.Rope(8, "interleaved", base=5e5, position_scale=0.5, attention_scale=1.5, axes=3,
                            axis=[0, 2, 2, 1])
    assert r != posenc.Rope(8, "interleaved", base=5e5, position_scale=0.5, attention_scale=1.5, axes=4,
                            axis=[0, 2, 1, 2])
    for v in (r.with_pairs("halves"), r.with_position_scale(-0.5), r.with_attention_scale(1.0)):
        assert v.axes == 3 and v.axis.tolist() == [0, 2, 1, 2]
    assert r.with_position_scale(-0.5).position_scale == -0.5
    assert "axes=3, axis=[4 values]" in repr(r) and "axes" not in repr(posenc.Rope(8))
    # a one-axis state of posenc 0.2 (six fields) still loads
    state = posenc.Rope(8, base=5e5).__getstate__()
    assert len(state) == 8 and state[6:] == (1, None)
    old = posenc.Rope.__new__(posenc.Rope)
    old.__setstate__(state[:6])
    assert old == posenc.Rope(8, base=5e5)


def test_multi_axis_presets_of_the_sections():
    """The models' specs by their section sizes (docs/rope.md, "Multi-axis RoPE"), pickled with their maps."""
    qwen25 = sectioned(posenc.Rope(128, base=1e6), [16, 24, 24], "chunked")
    assert qwen25.axis.tolist() == [0] * 16 + [1] * 24 + [2] * 24 and qwen25.freq is None
    qwen3 = sectioned(posenc.Rope(128, base=5e6), [24, 20, 20], "interleaved")
    assert qwen3.axis[60:].tolist() == [0, 0, 0, 0] and qwen3.axis[:6].tolist() == [0, 1, 2, 0, 1, 2]
    vit = sectioned(posenc.Rope(80), [20, 20], "vision")
    assert vit.freq[:20].tobytes() == vit.freq[20:].tobytes()
    pix = sectioned(posenc.Rope(64), [16, 16], "strided")
    assert pix.freq[0] == 1.0 and pix.freq[16] == R.power(1e4, 2, 64)
    for r in (qwen25, qwen3, vit, pix):
        assert pickle.loads(pickle.dumps(r)) == r
    # the C++ wrapper's presets are these specs (posenc.hpp cites each model's values)
    assert posenc.Rope.qwen2_vl() == posenc.Rope.qwen2_5_vl() == qwen25
    assert posenc.Rope.qwen3_vl() == qwen3
    assert posenc.Rope.qwen2_vl_vision() == posenc.Rope.qwen2_5_vl_vision() == vit
    assert posenc.Rope.pixtral() == pix
    assert posenc.Rope.glm4v() == sectioned(posenc.Rope(64, "interleaved"), [8, 12, 12], "chunked")
    assert posenc.Rope.qwen3_vl_vision() == sectioned(posenc.Rope(72), [18, 18], "vision")
    assert posenc.Rope.llama4_vision() == sectioned(posenc.Rope(88, "interleaved"), [22, 22], "vision")


@pytest.mark.parametrize("layout", LAYOUTS)
def test_rope_sections_every_layout_random_sections(layout):
    rng = np.random.default_rng(17 + LAYOUTS.index(layout))
    for trial in range(25):
        h = int(rng.integers(1, 70))
        used = 4 if layout == "interleaved_4" else int(rng.integers(1, 5))
        left = int(rng.integers(1, h + 1))  # the sum: at most h (below h repeats)
        s = []
        for a in range(used):
            v = left if a == used - 1 else int(rng.integers(0, left + 1))
            s.append(v)
            left -= v
        if layout == "vision" and 0 in s[:-1]:  # models have no empty section before a used one
            continue
        if layout == "alternating":  # height and width alike, three axes: [t, h, h] with 2 h + t <= r/2
            hw = int(rng.integers(0, h // 2 + 1))
            s = [int(rng.integers(0 if hw else 1, h - 2 * hw + 1)), hw, hw]
        if layout == "balanced":  # [t, h, w] with t >= 1, or two sizes [h, w]; no fourth
            t = int(rng.integers(1, h + 1))
            hh = int(rng.integers(0, h - t + 1))
            s = [t, hh, h - t - hh] if h - t - hh > 0 else [t, hh]
        base = float(rng.choice([1e4, 5e5, 1e6, 1.5]))
        rope = posenc.Rope(2 * h, rng.choice(["halves", "interleaved"]), base=base, attention_scale=0.75)
        sectioned(rope, s, layout)


def test_rope_sections_keep_scaled_frequencies_and_accept_every_spelling():
    yarn = posenc.Rope.qwen2(yarn=True)
    got = sectioned(yarn, [16, 24, 24], "chunked")
    assert got.freq.tobytes() == yarn.freq.tobytes() and got.attention_scale == yarn.attention_scale
    # VISION / STRIDED replace them (from base)
    assert sectioned(yarn, [32, 32], "vision").freq[0] == 1.0
    r = posenc.Rope(64)
    for spelling in (posenc.RopeLayout.INTERLEAVED, 1, "Interleaved", "INTERLEAVED"):
        assert posenc.rope_sections(r, [10, 11, 11], spelling) == posenc.rope_sections(r, [10, 11, 11], "interleaved")
    assert posenc.rope_sections(r, (5, 5, 0, 22), "interleaved-4") == posenc.rope_sections(r, [5, 5, 0, 22], 4)
    assert posenc.rope_sections(r, np.array([32])) .axes == 1  # one section: one axis
    assert posenc.rope_sections(r, [8, 0, 24]).axis.tolist() == [0] * 8 + [2] * 24
    again = posenc.rope_sections(posenc.rope_sections(r, [16, 16], "chunked"), [10, 11, 11], "interleaved")
    assert again == posenc.rope_sections(r, [10, 11, 11], "interleaved")  # a new map replaces the old


# ---- the cache ----------------------------------------------------------------------------------------------

AXES_ROPES = {
    "qwen2.5-vl chunked r128": lambda: posenc.rope_sections(posenc.Rope(128, base=1e6), [16, 24, 24]),
    "qwen3-vl interleaved r64 m0.7": lambda: posenc.rope_sections(posenc.Rope(64, base=5e6, attention_scale=0.7),
                                                                  [12, 10, 10], "interleaved"),
    "vit vision r40 interleaved pairs": lambda: posenc.rope_sections(posenc.Rope(40, "interleaved"), [10, 10],
                                                                     "vision"),
    "pixtral strided r32 scale 0.5": lambda: posenc.rope_sections(posenc.Rope(32, position_scale=0.5), [8, 8],
                                                                  "strided"),
    "imrope 4 axes r24 explicit": lambda: posenc.rope_sections(
        posenc.Rope(24, freq=R.odd_frequencies(12, 4)), [2, 3, 3, 1], "interleaved_4"),
    "hand map 3 axes, sum below h": lambda: posenc.Rope(20, base=5e5, axes=3, axis=[2, 0, 1, 1, 0, 2, 2, 0, 1, 0]),
    "openpangu balanced r64 m1.25": lambda: posenc.rope_sections(posenc.Rope(64, base=1e6, attention_scale=1.25),
                                                                 [12, 10, 10], "balanced"),
    "balanced two sizes r40 interleaved pairs": lambda: posenc.rope_sections(posenc.Rope(40, "interleaved"), [12, 8],
                                                                             "balanced"),
}
_REFS = {}


def rope_and_ref(name):
    if name not in _REFS:
        rope = AXES_ROPES[name]()
        _REFS[name] = (rope, R.AxesRef.of(rope))
    return _REFS[name]


@pytest.mark.parametrize("name", list(AXES_ROPES))
def test_multi_axis_cache(isa, name):
    rope, ref = rope_and_ref(name)
    h, A = rope.rotary_dim // 2, rope.axes
    pos = vl_positions(len(name), 90, A)
    want = ref.cache(pos)
    cos, sin = posenc.rope_cache(rope, positions=pos)
    assert cos.shape == (90, h)
    assert_bits(np.concatenate([cos, sin], 1), want, f"{name} (A, n)")
    # the flat axis-major form, vLLM's one table, a list; n given and agreeing
    vl = sentinel((90, 2 * h), np.float32)
    assert posenc.rope_cache(rope, 90, positions=pos.reshape(-1), out=vl) is vl
    assert_bits(vl, want, f"{name} flat")
    c2, s2 = posenc.rope_cache(rope, positions=pos[:, :7].tolist())
    assert_bits(np.concatenate([c2, s2], 1), want[:7], f"{name} list")
    # a run gives every axis first + t: the one-axis rows of the same frequencies
    run = ref.cache(np.broadcast_to(np.arange(-20, 30), (A, 50)))
    c3, s3 = posenc.rope_cache(rope, 50, -20)
    assert_bits(np.concatenate([c3, s3], 1), run, f"{name} run")


def test_agreeing_axes_give_the_one_axis_bytes(isa):
    """Text tokens (every axis the same position) rotate as the one-axis spec of the same frequencies: the same
    bytes, without MPFR."""
    one = posenc.Rope(128, base=1e6)
    for layout, sec in [("chunked", [16, 24, 24]), ("interleaved", [24, 20, 20]), ("interleaved_4", [20, 20, 20, 4])]:
        multi = posenc.rope_sections(one, sec, layout)
        p = np.array([0, 5, 4096, 131072, K - 1, -(K - 1), 77, 77, PAD])
        pm = np.stack([p] + [np.where(p == PAD, 3, p)] * (multi.axes - 1))  # PAD on axis 0 only
        c1 = posenc.rope_cache(one, positions=p)
        cm = posenc.rope_cache(multi, positions=pm)
        assert_bits(cm[0], c1[0], layout)
        assert_bits(cm[1], c1[1], layout)
        x = data("bf16", (9, 3, 130), 5)
        y = x.copy()
        posenc.rope(one, x, positions=p)
        posenc.rope(multi, y, positions=pm.reshape(-1))
        assert_bits(y, x, layout + " rotation")


# ---- the rotation -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("name", list(AXES_ROPES))
def test_multi_axis_rotation_every_layout(isa, name, fmt):
    rope, ref = rope_and_ref(name)
    r, A = rope.rotary_dim, rope.axes
    d = r + 3
    seed = 300 + len(name) + FMTS.index(fmt)
    # [T, H, D] with (A, T)
    pos = vl_positions(seed, 40, A)
    x = data(fmt, (40, 3, d), seed)
    want = R.rotate_tokens_axes(x, pos, ref, fmt)
    assert posenc.rope(rope, x, positions=pos) is x
    assert_bits(x, want, f"{name} {fmt} [T, H, D]")
    # [T, D] with the flat positions
    x = data(fmt, (40, d), seed + 1)
    want = R.rotate_tokens_axes(x, pos, ref, fmt)
    posenc.rope(rope, x, positions=pos.reshape(-1))
    assert_bits(x, want, f"{name} {fmt} [T, D] flat")
    # HF's [B, H, S, D] with position_ids (A, B, S): heads_first, and the transposed view
    pb = np.stack([vl_positions(seed + 2, 12, A), vl_positions(seed + 3, 12, A)], axis=1)
    x = data(fmt, (2, 3, 12, d), seed + 4)
    want = R.rotate_tokens_axes(x.transpose(0, 2, 1, 3), pb, ref, fmt).transpose(0, 2, 1, 3)
    y = x.copy()
    posenc.rope(rope, x, positions=pb, heads_first=True)
    assert_bits(x, want, f"{name} {fmt} [B, H, S, D] per-row positions")
    posenc.rope(rope, y.transpose(0, 2, 1, 3), positions=pb)
    assert_bits(y, want, f"{name} {fmt} [B, S, H, D] view")
    # (A, S) shared by the batch; a run from first
    x = data(fmt, (2, 12, 2, d), seed + 5)
    want = R.rotate_tokens_axes(x, pb[:, 0], ref, fmt)
    posenc.rope(rope, x, positions=pb[:, 0])
    assert_bits(x, want, f"{name} {fmt} shared")
    x = data(fmt, (2, 12, 2, d), seed + 6)
    want = R.rotate_tokens_axes(x, np.broadcast_to(np.arange(100, 112), (A, 12)), ref, fmt)
    posenc.rope(rope, x, first=100)
    assert_bits(x, want, f"{name} {fmt} run")


@pytest.mark.parametrize("fmt", FMTS)
def test_multi_axis_rope_qk_gqa_fused_qkv_and_tensors(isa, fmt):
    rope, ref = rope_and_ref("qwen2.5-vl chunked r128")
    pb = np.stack([vl_positions(40, 20, 3), vl_positions(41, 20, 3)], axis=1)  # (3, 2, 20)
    qkv = data(fmt, (2, 20, 8, 128), 42)  # q heads 0..3, k 4..5, v 6..7
    want = qkv.copy()
    want[:, :, :4] = R.rotate_tokens_axes(qkv[:, :, :4], pb, ref, fmt)
    want[:, :, 4:6] = R.rotate_tokens_axes(qkv[:, :, 4:6], pb, ref, fmt)
    q, k = posenc.rope_qk(rope, qkv[:, :, :4], qkv[:, :, 4:6], positions=pb)
    assert q.base is qkv or q.base is qkv.base
    assert_bits(qkv, want, f"{fmt} fused QKV, GQA 4/2, (A, B, S)")
    torch = pytest.importorskip("torch")
    from test_rope_api import to_torch
    x = data(fmt, (2, 4, 20, 128), 43)
    qt, kt = to_torch(x, fmt), to_torch(x[:, :1], fmt)
    posenc.rope_qk(rope, qt, kt, positions=torch.from_numpy(pb), heads_first=True)
    assert_bits(qt, R.rotate_tokens_axes(x.transpose(0, 2, 1, 3), pb, ref, fmt).transpose(0, 2, 1, 3), "torch q")
    assert_bits(kt, R.rotate_tokens_axes(x[:, :1].transpose(0, 2, 1, 3), pb, ref, fmt).transpose(0, 2, 1, 3),
                "torch k")


# ---- bad input ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kw", [dict(axes=0, axis=[0, 0, 0, 0]), dict(axes=5, axis=[0, 1, 2, 3]), dict(axes=-1),
                                dict(axes=2 ** 40), dict(axes=2), dict(axes=3, axis=[0, 1, 2, 3]),
                                dict(axes=1, axis=[0, 0, 1, 0]), dict(axes=3, axis=[0, 1, 256, 0]),
                                dict(axes=3, axis=[0, -1, 2, 0])])
def test_invalid_axis_specs(kw):
    raises_status(S.ERR_INVALID, lambda: posenc.Rope(8, **kw))


def test_axis_argument_errors_of_the_binding():
    with pytest.raises(ValueError, match=r"axis: expected rotary_dim / 2 = 4 values, got 3"):
        posenc.Rope(8, axes=2, axis=[0, 1, 0])
    with pytest.raises(TypeError, match="axis: expected integers"):
        posenc.Rope(8, axes=2, axis=[0.0, 1.0, 0.0, 1.0])
    raises_status(S.ERR_INVALID, lambda: posenc.Rope(7, axes=2, axis=[0, 1, 0]))  # the C status, not a shape error


@pytest.mark.parametrize("sections,layout,status", [
    ([16, -1, 24], "chunked", S.ERR_INVALID), ([0, 0, 0], "chunked", S.ERR_INVALID),
    ([16, 24, 25], "chunked", S.ERR_INVALID), ([], "interleaved", S.ERR_INVALID),
    ([16, 24, 24], len(LAYOUTS), S.ERR_INVALID), ([16, 24, 24], -1, S.ERR_INVALID),
    ([21, 21, 21, 1], "balanced", S.ERR_INVALID), ([0, 32, 32], "balanced", S.ERR_INVALID)])
def test_rope_sections_statuses(sections, layout, status):
    raises_status(status, lambda: posenc.rope_sections(posenc.Rope(128), sections, layout))


def test_rope_sections_argument_errors():
    r = posenc.Rope(128)
    with pytest.raises(ValueError, match="layout: unknown name 'diagonal'"):
        posenc.rope_sections(r, [16, 24, 24], "diagonal")
    with pytest.raises(ValueError, match=r"sections: expected at most 4 sizes \(one per axis\), got shape \(5,\)"):
        posenc.rope_sections(r, [1, 1, 1, 1, 1])
    with pytest.raises(ValueError, match="sections: expected at most 4 sizes"):
        posenc.rope_sections(r, [[16, 24], [24, 0]])
    with pytest.raises(TypeError, match="sections: expected integers, got dtype float64"):
        posenc.rope_sections(r, [16.0, 24.0, 24.0])


def test_multi_axis_position_shapes_are_named():
    rope = posenc.rope_sections(posenc.Rope(8), [2, 1, 1])  # 3 axes
    x = np.zeros((2, 5, 1, 8), np.float32)
    cases = [
        (np.zeros((2, 5), np.int64), r"expected shape \(3, 5\) \(3 axes, 5 tokens\), \(3, 2, 5\) \(one row per batch "
                                     r"entry\) or the flat axis-major \(15,\), got \(2, 5\)"),
        (np.zeros(5, np.int64), r"got \(5,\)"),
        (np.zeros((3, 3, 5), np.int64), r"got \(3, 3, 5\)"),
        (np.zeros((3, 2, 4), np.int64), r"got \(3, 2, 4\)"),
        (np.zeros((3, 1, 1, 5), np.int64), r"positions: expected 1 to 3 dimensions, got 4"),
    ]
    for p, msg in cases:
        with pytest.raises(ValueError, match=msg):
            posenc.rope(rope, x, positions=p)
        with pytest.raises(ValueError, match=msg):
            posenc.rope_qk(rope, x, x[:, :, :0], positions=p)
    with pytest.raises(ValueError, match=r"expected shape \(3, 5\) \(3 axes, 5 tokens\) or the flat"):
        posenc.rope(rope, x[0], positions=np.zeros((3, 2, 5), np.int64))  # no batch: no per-row form
    with pytest.raises(ValueError, match=r"positions: expected shape \(3, 4\) \(3 axes, 4 tokens\) or the flat "
                                         r"axis-major \(12,\), got \(14,\)"):
        posenc.rope_cache(rope, positions=np.zeros(14, np.int64))
    with pytest.raises(ValueError, match="positions: expected 1 to 2 dimensions, got 3"):
        posenc.rope_cache(rope, positions=np.zeros((3, 1, 4), np.int64))
    with pytest.raises(ValueError, match="rope_cache: n = 5 but 4 positions per axis"):
        posenc.rope_cache(rope, 5, positions=np.zeros((3, 4), np.int64))
    # floating positions are real-valued positions (python/tests/test_rope_real.py), their shapes checked alike
    with pytest.raises(ValueError, match=r"positions: expected shape \(3, 5\)"):
        posenc.rope(rope, x, positions=np.zeros((3, 6)))
    assert not x.any()


def test_multi_axis_statuses_leave_everything_untouched():
    rope = posenc.rope_sections(posenc.Rope(8), [2, 1, 1])
    rng = np.random.default_rng(9)
    for dt in (np.float32, np.float16, np.uint16):
        q = (rng.standard_normal((3, 5, 2, 8)) * 100).astype(dt)
        k = (rng.standard_normal((3, 5, 1, 8)) * 100).astype(dt)
        good = np.tile(np.arange(5), (3, 3, 1))  # (3 axes, 3 batch rows, 5)
        for a, v in [(0, K), (1, K), (2, -K), (1, PAD), (2, PAD)]:  # PAD is allowed on axis 0 only
            bad = good.copy()
            bad[a, 2, 4] = v  # the last batch row: the binding checks it before the first row is written
            raises_status(S.ERR_OUT_OF_RANGE, lambda: posenc.rope(rope, q, positions=bad), q)
            raises_status(S.ERR_OUT_OF_RANGE, lambda: posenc.rope_qk(rope, q, k, positions=bad), q, k)
            raises_status(S.ERR_OUT_OF_RANGE, lambda: posenc.rope_qk(rope, q, k, positions=bad[:, 2]), q, k)
        raises_status(S.ERR_OUT_OF_RANGE, lambda: posenc.rope(rope, q, first=K - 3), q)
        raises_status(S.ERR_INVALID, lambda: posenc.rope_qk(rope, q, q[:, :, 1:], positions=good), q)
    ok = good.copy()
    ok[0, 1, 2] = PAD  # a padding token: fine, and left as it was
    before = q.copy()
    posenc.rope(rope, q, positions=ok)
    assert_bits(q[1, 2], before[1, 2], "PAD token")
    assert not np.array_equal(bits(q[1, 1]), bits(before[1, 1]))
    buf = sentinel((4, 8), np.float32)
    raises_status(S.ERR_OUT_OF_RANGE, lambda: posenc.rope_cache(rope, positions=[[0] * 4, [0, 0, PAD, 0], [0] * 4],
                                                              out=buf), buf)
