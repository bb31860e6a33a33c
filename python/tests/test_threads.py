"""Large calls split across threads (issue 26, docs/python.md "Threads"): every function of posenc and every
posenc.torch drop-in that calls a kernel gives, with 2, 3 and 7 threads, the bytes it gives with 1, on odd shapes
that split (asserted through posenc._posenc._split_stats); pieces that cross batch entries; errors raised before
any piece writes; calls from several Python threads at once; the default thread count; a forked child.

The split threshold is lowered to 0 here (_min_piece_cycles), so that every call of two grains (65-row blocks,
or single timestep rows) or more splits: the shapes stay small and the tests fast, and every cut the pool
makes is exercised. One test keeps the real threshold and checks that a large call splits and a small one not.
"""
import os
import sys
import threading

import numpy as np
import pytest

import posenc
from helpers import assert_bits, sentinel

P = posenc._posenc
THREADS = (2, 3, 7)
RNG = np.random.default_rng


MODE = {"runner": "pool"}


@pytest.fixture(params=["pool", "openmp"])
def split_all(request):
    """Every call of two grains or more splits; the thread count and threshold restored afterwards. Run twice:
    on the binding's own pool, and on OpenMP's team, which split calls use when torch has been imported."""
    old = P._min_piece_cycles(0)
    old_omp = P._use_openmp(request.param == "openmp")
    if request.param == "openmp":
        pytest.importorskip("torch")
    MODE["runner"] = request.param
    try:
        yield
    finally:
        P._min_piece_cycles(old)
        P._use_openmp(old_omp)
        MODE["runner"] = "pool"
        posenc.set_num_threads(None)


def copies(out):
    """The bytes of a result (an array, a tensor, or a tuple of them) as NumPy copies."""
    if isinstance(out, (tuple, list)):
        return [c for o in out if o is not None for c in copies(o)]
    if type(out).__module__.startswith("torch"):
        return [out.detach().clone()]
    return [np.array(out, copy=True)]


def same_at_every_count(make, what, min_pieces=2):
    """make() builds its inputs afresh and returns its outputs; their bytes at 2, 3 and 7 threads must be those
    at 1 thread, and each run at 2+ threads must have split (into min(threads, grains) pieces at least 2)."""
    posenc.set_num_threads(1)
    calls0 = P._split_stats()[0]
    want = copies(make())
    assert P._split_stats()[0] == calls0, f"{what}: split with one thread"
    for n in THREADS:
        posenc.set_num_threads(n)
        calls, pieces, _ = P._split_stats()
        omp = P._openmp_calls()
        got = copies(make())
        c2, p2, _ = P._split_stats()
        assert c2 > calls and p2 - pieces >= min_pieces * (c2 - calls), f"{what}: no split at {n} threads"
        if MODE["runner"] == "openmp":
            assert P._openmp_calls() - omp == c2 - calls, f"{what}: split calls not on OpenMP's team"
        else:
            assert P._openmp_calls() == omp, f"{what}: a split call on OpenMP's team"
        assert len(got) == len(want)
        for i, (g, w) in enumerate(zip(got, want)):
            assert_bits(g, w, f"{what}, {n} threads, output {i}")


# ---- the NumPy API ---------------------------------------------------------------------------------------------

D = 66  # an even width whose rows are not a multiple of any vector
N = 523  # 8 blocks of 65 and 3 rows: 9 grains, pieces of 1 to 4 blocks


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_table_rows(split_all, dtype):
    spec = posenc.Spec(D + 1, "sin_cos_halves", 1e4, 1.0, 0.5)  # odd d_model: a zero last column
    same_at_every_count(lambda: posenc.table(spec, N, first=1_000_001, dtype=dtype), "table " + dtype)
    out_dtype = np.float32 if dtype == "float32" else np.float16 if dtype == "float16" else np.uint16

    def strided():  # into every other row of a wider buffer, first negative
        buf = sentinel((2 * N, D + 40), out_dtype)
        posenc.table(D, N, first=-300, out=buf[::2, :D])
        return buf

    same_at_every_count(strided, "table out= " + dtype)
    pos = RNG(1).integers(-2**31 + 1, 2**31, N)
    pos[50:180] = np.arange(7, 137)  # a run across a block boundary
    pos[200:330] = 12345  # a repeated run
    pos[17] = pos[400] = posenc.PAD
    same_at_every_count(lambda: posenc.rows(D, pos, dtype=dtype), "rows " + dtype)


def test_add(split_all):
    x = RNG(2).standard_normal((3, 131, D)).astype(np.float32)  # 3 batch rows of 2 grains: pieces cross them
    same_at_every_count(lambda: posenc.add(D, x, first=7, scale=0.75), "add batch")
    pos = RNG(3).integers(0, 100000, (3, 131))
    pos[1, 5] = posenc.PAD
    same_at_every_count(lambda: posenc.add(D, x, positions=pos), "add per-row positions")
    same_at_every_count(lambda: posenc.add(D, x[1], positions=pos[0]), "add 2-D")

    def in_place():
        y = x.transpose(1, 0, 2).copy().transpose(1, 0, 2)  # seq-first memory, batch-strided view
        return posenc.add(D, y, positions=pos[2], out=y)

    same_at_every_count(in_place, "add in place")


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_embed(split_all, dtype):
    rng = RNG(4)
    table = rng.standard_normal((97, D)).astype(np.float32)
    if dtype == "bfloat16":
        table = (table.view(np.uint32) >> 16).astype(np.uint16)
    elif dtype == "float16":
        table = table.astype(np.float16)
    tok = rng.integers(0, 97, (5, 77)).astype(np.int32)  # 5 x 2 grains
    # into sentinels: a row no piece writes keeps them (a new array may reuse the last call's memory)
    same_at_every_count(lambda: posenc.embed(D, table, tok, first=3, scale=8.0, out=sentinel((5, 77, D), np.float32)),
                        "embed " + dtype)
    pos = rng.integers(0, 2**31 - 1, (5, 77))
    same_at_every_count(lambda: posenc.embed(D, table, tok[2], positions=pos[2]), "embed 1-D " + dtype)


def test_embed_learned(split_all):
    rng = RNG(5)
    table = rng.standard_normal((97, D)).astype(np.float32)
    pos_table = rng.standard_normal((300, D)).astype(np.float32)
    tok = rng.integers(0, 97, (3, 11)).astype(np.int32)  # no blocks: grains of one row
    same_at_every_count(lambda: posenc.embed_learned(table, tok, pos_table, first=5, scale=2.0,
                                                     out=sentinel((3, 11, D), np.float32)), "embed_learned")
    pos = rng.integers(0, 300, (3, 11))
    pos[0, 3] = posenc.PAD
    same_at_every_count(lambda: posenc.embed_learned(table, tok, pos_table, positions=pos), "embed_learned pos")


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_timesteps(split_all, dtype):
    t = RNG(6).uniform(-1000, 1000, 13)
    t[4] = 999.5
    spec = posenc.Spec.diffusers(D, flip_sin_to_cos=True, downscale_freq_shift=0.0)
    same_at_every_count(lambda: posenc.timesteps(spec, t, dtype=dtype), "timesteps " + dtype)
    out_dtype = np.float32 if dtype == "float32" else np.float16 if dtype == "float16" else np.uint16
    same_at_every_count(lambda: posenc.timesteps(spec, t, out=sentinel((13, D), out_dtype)), "timesteps out= " + dtype)


def test_timesteps_add(split_all):
    rng = RNG(7)
    x = rng.standard_normal((3, 5, D)).astype(np.float32)
    t = rng.uniform(0, 1000, (3, 5))
    spec = posenc.Spec.dit(D)
    same_at_every_count(lambda: posenc.timesteps_add(spec, x, t, scale=0.5), "timesteps_add")
    same_at_every_count(lambda: posenc.timesteps_add(spec, x, t[0]), "timesteps_add shared")


def test_rope_cache(split_all):
    rope = posenc.Rope.llama3_1(128)
    same_at_every_count(lambda: posenc.rope_cache(rope, N, first=123456), "rope_cache pair")
    same_at_every_count(lambda: posenc.rope_cache(rope, N, out=sentinel((N, 128), np.float32)), "rope_cache vLLM")
    m = posenc.Rope.qwen2_5_vl()
    pos = RNG(8).integers(0, 5000, (3, N))
    same_at_every_count(lambda: posenc.rope_cache(m, positions=pos), "rope_cache 3 axes")


def rotated(rope, shape_q, shape_k, dtype, seed, heads_first=False, positions=None, fused=False):
    def make():
        rng = RNG(seed)
        np_dtype = np.uint16 if dtype == "bfloat16" else np.dtype(dtype)
        if fused:  # views of one QKV buffer: (tokens, heads, dim) with token stride 6 x 32
            n = shape_q[0]
            buf = rng.standard_normal((n, 6 * 32)).astype(np.float32)
            q, k = buf[:, :128].reshape(n, 4, 32), buf[:, 128:192].reshape(n, 2, 32)
            posenc.rope_qk(rope, q, k, positions=positions)
            return buf
        q = rng.standard_normal(shape_q).astype(np.float32)
        k = rng.standard_normal(shape_k).astype(np.float32) if shape_k else None
        if dtype == "bfloat16":
            q = (q.view(np.uint32) >> 16).astype(np.uint16)
            k = None if k is None else (k.view(np.uint32) >> 16).astype(np.uint16)
        else:
            q = q.astype(np_dtype)
            k = None if k is None else k.astype(np_dtype)
        if k is None:
            return posenc.rope(rope, q, positions=positions, heads_first=heads_first, first=77)
        return posenc.rope_qk(rope, q, k, positions=positions, heads_first=heads_first)

    return make


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_rope(split_all, dtype):
    rope = posenc.Rope.llama3_1(64)
    same_at_every_count(rotated(rope, (N, 3, 72), None, dtype, 9), "rope " + dtype)
    same_at_every_count(rotated(rope, (2, 5, 131, 64), (2, 1, 131, 64), dtype, 10, heads_first=True),
                        "rope_qk HF layout " + dtype)
    pos = RNG(11).integers(0, 2**31 - 1, (2, 131))
    pos[1, :70] = 40000
    same_at_every_count(rotated(rope, (2, 131, 5, 64), (2, 131, 1, 64), dtype, 12, positions=pos),
                        "rope_qk per-row positions " + dtype)


def test_rope_multi_axis_and_fused(split_all):
    m = posenc.Rope.qwen2_5_vl()
    pos = RNG(13).integers(0, 3000, (3, 2, 131))
    pos[0, 1, 9] = posenc.PAD
    same_at_every_count(rotated(m, (2, 3, 131, 128), (2, 1, 131, 128), "float32", 14, heads_first=True,
                                positions=pos), "M-RoPE")
    g = posenc.Rope.gpt_j_6b()
    r = posenc.Rope(32, "interleaved")
    same_at_every_count(rotated(r, (N,), None, "float32", 15, fused=True), "fused QKV")
    same_at_every_count(rotated(g, (N, 2, 256), (N, 1, 256), "float32", 16), "GPT-J partial")


def test_rope_shift(split_all):
    rope = posenc.Rope.llama3_1(64)

    def shift(delta):
        def make():
            keys = RNG(17).standard_normal((2, 3, 131, 64)).astype(np.float32)
            return posenc.rope_shift(rope, keys, delta, heads_first=True)
        return make

    same_at_every_count(shift(-1024), "rope_shift")
    same_at_every_count(shift(RNG(18).integers(-5000, 5000, (2, 131))), "rope_shift per token")


# ---- what a split must keep ------------------------------------------------------------------------------------


def test_pieces_cover_batches_unevenly(split_all):
    """3 batch rows of 2 grains at 4 and 5 pieces: pieces begin inside a batch row and cross into the next."""
    x = RNG(19).standard_normal((3, 131, D)).astype(np.float32)
    posenc.set_num_threads(1)
    want = posenc.add(D, x, first=11)
    for n in (4, 5, 6):
        posenc.set_num_threads(n)
        assert_bits(posenc.add(D, x, first=11), want, f"{n} pieces")


def test_errors_write_nothing(split_all):
    """A bad token or position in the last batch row raises before any piece writes."""
    posenc.set_num_threads(7)
    table = RNG(20).standard_normal((50, D)).astype(np.float32)
    tok = np.zeros((4, 200), np.int32)
    tok[3, 199] = 50
    out = sentinel((4, 200, D), np.float32)
    with pytest.raises(posenc.OutOfRange):
        posenc.embed(D, table, tok, out=out)
    assert (out.view(np.uint32) == 0x7FBADBAD).all()
    pos = np.zeros((2, 300), np.int64)
    pos[1, -1] = 2**31
    q = sentinel((2, 300, 2, 64), np.float32)
    with pytest.raises(posenc.OutOfRange):
        posenc.rope_qk(posenc.Rope.llama2(64), q, None, positions=pos)
    assert (q.view(np.uint32) == 0x7FBADBAD).all()
    t = np.full(40, 5.0)
    t[-1] = np.nan
    o = sentinel((40, D), np.float32)
    with pytest.raises(posenc.OutOfRange):
        posenc.timesteps(D, t, out=o)
    assert (o.view(np.uint32) == 0x7FBADBAD).all()


def test_the_real_threshold():
    """Without the tests' threshold: a large call splits at 2 threads, a small one runs whole."""
    posenc.set_num_threads(2)
    try:
        calls = P._split_stats()[0]
        posenc.table(64, 100)
        assert P._split_stats()[0] == calls
        posenc.table(1024, 2048)
        assert P._split_stats()[0] == calls + 1
    finally:
        posenc.set_num_threads(None)


def test_calls_from_several_threads(split_all):
    """Python threads calling at once (the pool serves one call; the others run theirs alone): the same bytes."""
    posenc.set_num_threads(3)
    rope = posenc.Rope.llama3_1(64)
    want_t = posenc.table(D, N, first=5)
    want_r = posenc.rope_cache(rope, N)
    errors = []

    def worker(i):
        try:
            for _ in range(20):
                assert_bits(posenc.table(D, N, first=5), want_t, "table")
                c, s = posenc.rope_cache(rope, N)
                assert_bits(c, want_r[0], "cos")
                assert_bits(s, want_r[1], "sin")
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_thread_count():
    posenc.set_num_threads(5)
    assert posenc.get_num_threads() == 5
    posenc.set_num_threads(0)
    default = posenc.get_num_threads()
    posenc.set_num_threads(None)
    assert posenc.get_num_threads() == default
    if "torch" in sys.modules:
        assert default == sys.modules["torch"].get_num_threads()
    else:
        assert default == len(os.sched_getaffinity(0))
    with pytest.raises(ValueError):
        posenc.set_num_threads(-1)


def test_follows_torch():
    torch = pytest.importorskip("torch")
    old = torch.get_num_threads()
    try:
        for n in (1, 3):
            torch.set_num_threads(n)
            assert posenc.get_num_threads() == n
        posenc.set_num_threads(2)  # set explicitly: torch's no longer counts
        assert posenc.get_num_threads() == 2
    finally:
        torch.set_num_threads(old)
        posenc.set_num_threads(None)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_forked_child(split_all):
    """The parent's workers do not exist in a forked child: the child starts its own and gets the same bytes."""
    posenc.set_num_threads(3)
    want = posenc.table(D, N)  # the pool has started
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            got = posenc.table(D, N)
            code = 0 if np.array_equal(got.view(np.uint32), want.view(np.uint32)) else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


# ---- posenc.torch ----------------------------------------------------------------------------------------------


def test_torch_drop_ins(split_all):
    torch = pytest.importorskip("torch")
    import posenc.torch as pt

    spec = posenc.Spec.vaswani(D)
    same_at_every_count(lambda: pt.table(spec, N, first=9), "pt.table")
    same_at_every_count(lambda: pt.table(spec, N, dtype=torch.bfloat16), "pt.table bf16")
    same_at_every_count(lambda: pt.rows(spec, torch.arange(N).reshape(1, N) * 3), "pt.rows")
    same_at_every_count(lambda: pt.PositionalEncoding(D, max_len=N).pe, "PositionalEncoding.pe")
    same_at_every_count(lambda: pt.SinusoidalPositionalEmbedding(D, 1, init_size=N).weights, "fairseq weights")
    same_at_every_count(lambda: pt.LearnableSinusoidalPositionalEncoding(D, max_len=N).pe, "LSPE pe")
    x = torch.from_numpy(RNG(21).standard_normal((3, 131, D)).astype(np.float32))
    same_at_every_count(lambda: pt.add(x, spec, first=2), "pt.add")
    w = torch.from_numpy(RNG(22).standard_normal((97, D)).astype(np.float32))
    tok = torch.from_numpy(RNG(23).integers(0, 97, (3, 131)))
    same_at_every_count(lambda: pt.embed(tok, w, spec, scale=3.0), "pt.embed")
    torch.manual_seed(0)
    mod = pt.ScaledEmbeddingWithPE(97, D)
    with torch.no_grad():
        same_at_every_count(lambda: mod(tok), "ScaledEmbeddingWithPE")

    cfg = {"hidden_size": 256, "num_attention_heads": 4, "max_position_embeddings": 8192, "rope_theta": 5e5,
           "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                            "original_max_position_embeddings": 8192}}
    rot = pt.RotaryEmbedding(cfg)
    ids = torch.arange(131).reshape(1, 131).repeat(2, 1) + torch.tensor([[0], [1000]])
    same_at_every_count(lambda: rot(torch.zeros(1), ids), "RotaryEmbedding.forward")
    # pt.rope_cache writes the first rotary_dim / 2 columns and leaves the rest to the caller
    same_at_every_count(lambda: [c[..., :32] for c in pt.rope_cache(rot.rope, ids)], "pt.rope_cache")

    def apply():
        g = torch.Generator().manual_seed(24)
        q, k = torch.randn(2, 4, 131, 64, generator=g), torch.randn(2, 2, 131, 64, generator=g)
        return rot.apply_rotary(q, k, ids)

    same_at_every_count(apply, "RotaryEmbedding.apply_rotary")

    def apply_bf16():
        g = torch.Generator().manual_seed(25)
        q = torch.randn(2, 131, 4, 64, generator=g).bfloat16()
        return pt.apply_rotary(q, None, ids, rot.rope, unsqueeze_dim=2)

    same_at_every_count(apply_bf16, "apply_rotary bf16")

    qcfg = {"hidden_size": 512, "num_attention_heads": 4, "rope_theta": 1e6,
            "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}}
    mpos = torch.from_numpy(RNG(26).integers(0, 4000, (3, 2, 131)))
    for cls in (pt.Qwen2VLRotaryEmbedding, pt.Qwen3VLTextRotaryEmbedding):
        q_rot = cls(qcfg)
        same_at_every_count(lambda: q_rot(torch.zeros(1), mpos), cls.__name__ + ".forward")

        def apply_m():
            g = torch.Generator().manual_seed(27)
            q, k = torch.randn(2, 4, 131, 128, generator=g), torch.randn(2, 1, 131, 128, generator=g)
            return q_rot.apply_rotary(q, k, mpos)

        same_at_every_count(apply_m, cls.__name__ + ".apply_rotary")

    vis = pt.VisionRotaryEmbedding(20)
    vids = torch.from_numpy(RNG(28).integers(0, 64, (N, 2)))
    same_at_every_count(lambda: vis.cos_sin(vids), "VisionRotaryEmbedding.cos_sin")

    def apply_v():
        g = torch.Generator().manual_seed(29)
        q, k = torch.randn(N, 3, 40, generator=g), torch.randn(N, 3, 40, generator=g)
        return vis.apply_rotary(q, k, vids)

    same_at_every_count(apply_v, "VisionRotaryEmbedding.apply_rotary")

    t = torch.from_numpy(RNG(30).uniform(0, 1000, 13))
    same_at_every_count(lambda: pt.get_timestep_embedding(t, 320, flip_sin_to_cos=True, downscale_freq_shift=0),
                        "get_timestep_embedding")
    same_at_every_count(lambda: pt.Timesteps(256, True, 1)(t), "Timesteps")
    same_at_every_count(lambda: pt.timestep_embedding(t, 256), "timestep_embedding")
    same_at_every_count(lambda: pt.flux_timestep_embedding(t.float().bfloat16() / 1000, 256), "flux bf16")
    same_at_every_count(lambda: pt.timesteps(spec, t.reshape(13, 1)), "pt.timesteps")
