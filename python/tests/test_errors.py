"""Errors: every C status raised as its posenc.Error subclass (InvalidArgument is a ValueError, OutOfRange an
IndexError, SizeOverflow an OverflowError, NoMemory a MemoryError, Unsupported a RuntimeError) with the
message posenc.status_string(status) and .status set, and every output byte-identical after the failing call
(batched calls whose bad input is in a later batch row included: the binding checks those before the first
C call). Argument errors of the binding itself (dtype, rank, shape, strides, read-only, overlap) raise
TypeError / ValueError with a message that names the argument."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

import posenc
from helpers import bits, sentinel

K = 2 ** 31
PAD = posenc.PAD
S = posenc.Status

CLASSES = {
    S.ERR_INVALID: (posenc.InvalidArgument, ValueError),
    S.ERR_OUT_OF_RANGE: (posenc.OutOfRange, IndexError),
    S.ERR_OVERFLOW: (posenc.SizeOverflow, OverflowError),
    S.ERR_UNSUPPORTED: (posenc.Unsupported, RuntimeError),
    S.ERR_NO_MEMORY: (posenc.NoMemory, MemoryError),
}
STRINGS = {
    S.OK: "ok",
    S.ERR_NULL: "a required pointer is NULL",
    S.ERR_INVALID: "invalid spec, size or stride",
    S.ERR_OUT_OF_RANGE: "position or token id out of range",
    S.ERR_OVERFLOW: "element or byte count overflows",
    S.ERR_UNSUPPORTED: "instruction set not available",
    S.ERR_NO_MEMORY: "out of memory",
}


def snapshot(*arrays):
    return [bits(a).copy() for a in arrays]


def raises_status(status, call, *outputs):
    """call() raises the class of `status` with its message and .status; every output keeps every byte."""
    cls, builtin = CLASSES[status]
    before = snapshot(*outputs)
    with pytest.raises(cls) as info:
        call()
    e = info.value
    assert isinstance(e, builtin) and isinstance(e, posenc.Error)
    assert e.status == status
    assert str(e) == posenc.status_string(status) == STRINGS[status]
    for k, (a, b) in enumerate(zip(snapshot(*outputs), before)):
        assert np.array_equal(a, b), f"output {k} was written by a failing call"
    return e


def test_exception_hierarchy_and_status_strings():
    for status, (cls, builtin) in CLASSES.items():
        assert issubclass(cls, posenc.Error) and issubclass(cls, builtin)
    assert issubclass(posenc.Error, Exception)
    for status, text in STRINGS.items():
        assert posenc.status_string(status) == text
    assert {s.name for s in STRINGS} == set(posenc.Status.__members__)


def test_version():
    v = posenc.version()
    parts = v.split(".")
    assert len(parts) == 3 and all(p.isdigit() for p in parts)
    assert posenc.__version__ == v


# ---- invalid specs ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("kw", [dict(d_model=0), dict(d_model=-3), dict(d_model=8, base=0.0), dict(d_model=8, base=-2.0),
                                dict(d_model=8, base=float("inf")), dict(d_model=8, base=float("nan")),
                                dict(d_model=8, freq_denominator=-1.0), dict(d_model=8, freq_denominator=float("nan")),
                                dict(d_model=8, position_scale=float("inf")), dict(d_model=8, position_scale=2.0 ** 1000),
                                dict(d_model=8, layout=7), dict(d_model=8, layout=-1)])
def test_invalid_specs(kw):
    raises_status(S.ERR_INVALID, lambda: posenc.Spec(**kw))


def test_invalid_int_spec_and_names():
    out = sentinel((3, 8), np.float32)
    raises_status(S.ERR_INVALID, lambda: posenc.table(0, 3))
    raises_status(S.ERR_INVALID, lambda: posenc.rows(-5, [1]))
    with pytest.raises(ValueError, match="layout: unknown name 'diagonal'"):
        posenc.Spec(8, "diagonal")
    with pytest.raises(TypeError, match="spec: expected a posenc.Spec or an int d_model"):
        posenc.table("8", 3, out=out)
    assert (bits(out) == 0x7FBADBAD).all()


@pytest.mark.parametrize("kw", [dict(rotary_dim=7), dict(rotary_dim=0), dict(rotary_dim=-2), dict(rotary_dim=8, base=0.0),
                                dict(rotary_dim=8, base=float("nan")), dict(rotary_dim=8, position_scale=float("nan")),
                                dict(rotary_dim=8, attention_scale=0.0), dict(rotary_dim=8, attention_scale=2.0 ** 65),
                                dict(rotary_dim=8, attention_scale=2.0 ** -65), dict(rotary_dim=8, pairs=2),
                                dict(rotary_dim=8, freq=[1.0, float("inf"), 1.0, 1.0]),
                                dict(rotary_dim=8, freq=[1.0, 2.0 ** 1000, 1.0, 1.0]), dict(rotary_dim=7, freq=[1.0])])
def test_invalid_ropes(kw):
    raises_status(S.ERR_INVALID, lambda: posenc.Rope(**kw))


def test_invalid_rope_arguments_of_the_binding():
    with pytest.raises(ValueError, match=r"freq: expected rotary_dim / 2 = 4 values, got 1"):
        posenc.Rope(8, freq=[1.0])
    with pytest.raises(ValueError, match="pairs: unknown name"):
        posenc.Rope(8, "diagonal")
    r = posenc.Rope(8)
    raises_status(S.ERR_INVALID, lambda: r.with_attention_scale(0.0))
    raises_status(S.ERR_INVALID, lambda: r.with_position_scale(float("inf")))


@pytest.mark.parametrize("r,scaling,kw", [
    (2, {"rope_type": "dynamic", "factor": 2.0}, dict(max_position_embeddings=10, seq_len=100)),
    (8, {"rope_type": "dynamic", "factor": 2.0}, dict(max_position_embeddings=10, seq_len=-1)),
    (8, {"rope_type": "linear", "factor": -2.0}, {}),
    (8, {"rope_type": "linear", "factor": 0.0}, {}),
    (8, {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 0}, {}),
    (8, {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 100, "beta_fast": 1.0,
         "beta_slow": 32.0}, {}),
    (8, {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 4.0, "high_freq_factor": 1.0,
         "original_max_position_embeddings": 8192}, {}),
    (8, {"rope_type": "longrope", "short_factor": [1, 1, 1, -1], "long_factor": [1, 1, 1, 1], "factor": 2.0,
         "original_max_position_embeddings": 100}, {}),
    (7, None, {}),
])
def test_invalid_rope_init(r, scaling, kw):
    raises_status(S.ERR_INVALID, lambda: posenc.rope_init(r, 1e4, scaling, **kw))


def test_invalid_rope_init_base_one_for_yarn():
    raises_status(S.ERR_INVALID, lambda: posenc.rope_init(8, 1.0, {"rope_type": "yarn", "factor": 2.0,
                                                                   "original_max_position_embeddings": 100}))


def test_rope_init_argument_errors_of_the_binding():
    with pytest.raises(ValueError, match="rope_type: unknown name 'mllama4'"):
        posenc.rope_init(8, 1e4, {"rope_type": "mllama4"})
    with pytest.raises(ValueError, match="longrope needs short_factor and long_factor"):
        posenc.rope_init(8, 1e4, {"rope_type": "longrope", "factor": 2.0})
    with pytest.raises(ValueError, match=r"short_factor: expected rotary_dim / 2 = 4 values, got 2"):
        posenc.rope_init(8, 1e4, {"rope_type": "longrope", "short_factor": [1, 1], "long_factor": [1] * 4})
    with pytest.raises(TypeError, match="scaling: expected a dict"):
        posenc.rope_init(8, 1e4, [("rope_type", "linear")])


# ---- kernel errors, outputs untouched ----------------------------------------------------------------------

def test_table_and_rows_errors():
    spec = posenc.Spec(8)
    out = sentinel((10, 8), np.float32)
    raises_status(S.ERR_INVALID, lambda: posenc.table(spec, -1))
    raises_status(S.ERR_OUT_OF_RANGE, lambda: posenc.table(spec, None, K - 5, out=out), out)
    raises_status(S.ERR_OUT_OF_RANGE, lambda: posenc.table(spec, None, -K, out=out), out)
    raises_status(S.ERR_OVERFLOW, lambda: posenc.table(posenc.Spec(2 ** 40), 2 ** 40))
    raises_status(S.ERR_OVERFLOW, lambda: posenc.table(spec, 2 ** 62))
    half = sentinel((10, 8), np.uint16)
    for pos in ([0] * 9 + [K], [-K] + [0] * 9, [PAD + 1] + [0] * 9, [0, 1, 2, 3, 4, 5, 6, 7, 8, 2 ** 40]):
        raises_status(S.ERR_OUT_OF_RANGE, lambda: posenc.rows(spec, pos, out=out), out)
        raises_status(S.ERR_OUT_OF_RANGE, lambda: posenc.rows(spec, np.array(pos), out=half), half)
    raises_status(S.ERR_OUT_OF_RANGE, lambda: posenc.rows(spec, [2 ** 63] * 10, out=out), out)  # a uint64 list


def test_index_arrays_beyond_the_target_type_are_out_of_range():
    # arrays.hpp: "Values outside the target type: an OUT_OF_RANGE error" -- a NumPy uint64 array included
    spec = posenc.Spec(8)
    out = sentinel((3, 8), np.float32)
    raises_status(S.ERR_OUT_OF_RANGE, lambda: posenc.rows(spec, np.array([0, 1, 2 ** 63], np.uint64), out=out), out)
    table = np.ones((4, 8), np.float32)
    raises_status(S.ERR_OUT_OF_RANGE, lambda: posenc.embed(spec, table, np.array([0, 1, 2 ** 31], np.uint64),
                                                           out=out), out)
    raises_status(S.ERR_OUT_OF_RANGE, lambda: posenc.embed(spec, table, np.array([0, 1, -(2 ** 31) - 1]), out=out),
                  out)


def test_table_argument_errors():
    spec = posenc.Spec(8)
    out = sentinel((4, 8), np.float32)
    before = bits(out).copy()
    cases = [
        (TypeError, "table: give n, or out= with n rows", lambda: posenc.table(spec)),
        (ValueError, r"out: expected shape \(3, 8\), got \(4, 8\)", lambda: posenc.table(spec, 3, out=out)),
        (ValueError, r"out: expected shape \(4, 9\), got \(4, 8\)", lambda: posenc.table(9, 4, out=out)),
        (TypeError, "out: expected dtype bfloat16, got float32", lambda: posenc.table(spec, 4, dtype="bfloat16",
                                                                                       out=out)),
        (TypeError, "dtype must be float32, bfloat16 or float16", lambda: posenc.table(spec, 4, dtype=np.float64)),
        (TypeError, "dtype must be float32, bfloat16 or float16", lambda: posenc.table(spec, 4, dtype="int32")),
        (TypeError, "out: dtype int32 is not one of float32, bfloat16, float16",
         lambda: posenc.table(spec, out=np.zeros((4, 8), np.int32))),
        (TypeError, "out: dtype float64 is not one of", lambda: posenc.rows(spec, [1], out=np.zeros((1, 8)))),
        (ValueError, "out: expected 2 dimensions, got 1", lambda: posenc.table(spec, out=out.ravel())),
        (ValueError, "out: the array is read-only", lambda: posenc.table(spec, 4, out=np.broadcast_to(out, (4, 8)))),
        (ValueError, "out: the last axis must be contiguous", lambda: posenc.table(
            spec, out=sentinel((4, 16), np.float32)[:, ::2])),
        (ValueError, "out: negative strides are not supported", lambda: posenc.table(spec, out=out[::-1])),
        (ValueError, "out: strides must be whole elements", lambda: posenc.table(
            spec, out=as_strided(out, (2, 8), (18, 4)))),
        (TypeError, "out: expected a NumPy array or a CPU torch.Tensor, got list",
         lambda: posenc.table(spec, 1, out=[[0.0] * 8])),
        (TypeError, "positions: expected integers, got dtype float64", lambda: posenc.rows(spec, [1.5])),
        (TypeError, "positions: expected integers, got dtype object", lambda: posenc.rows(spec, [2 ** 70])),
        (ValueError, "positions: expected 1 dimensions, got 2", lambda: posenc.rows(spec, [[1]])),
    ]
    for cls, msg, call in cases:
        with pytest.raises(cls, match=msg):
            call()
    assert np.array_equal(bits(out), before)


def test_add_errors_leave_out_and_x_untouched():
    spec = posenc.Spec(8)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 5, 8)).astype(np.float32)
    out = sentinel((3, 5, 8), np.float32)
    bad_later_row = np.array([[1, 2, 3, 4, 5], [1, 2, 3, 4, 5], [1, 2, 3, 4, K]])
    raises_status(S.ERR_OUT_OF_RANGE, lambda: posenc.add(spec, x, positions=bad_later_row, out=out), out, x)
    raises_status(S.ERR_OUT_OF_RANGE, lambda: posenc.add(spec, x, positions=bad_later_row, out=x), x)
    raises_status(S.ERR_OUT_OF_RANGE, lambda: posenc.add(spec, x, positions=[0, 1, 2, 3, -K], out=x), x)
    raises_status(S.ERR_OUT_OF_RANGE, lambda: posenc.add(spec, x, first=K - 4, out=out), out)
    raises_status(S.ERR_OUT_OF_RANGE, lambda: posenc.add(spec, x[0], first=K - 4, out=out[0]), out)
    raises_status(S.ERR_INVALID, lambda: posenc.add(0, x, out=out), out, x)
    cases = [
        (TypeError, "x: dtype float64 is not one of float32", lambda: posenc.add(spec, x.astype(np.float64))),
        (TypeError, "x: dtype float16 is not one of float32", lambda: posenc.add(spec, x.astype(np.float16))),
        (ValueError, "x: rows of 8 elements, the spec's d_model is 9", lambda: posenc.add(9, x)),
        (ValueError, "x: expected 2 to 3 dimensions, got 1", lambda: posenc.add(spec, x[0, 0])),
        (ValueError, "positions: expected 5 positions", lambda: posenc.add(spec, x, positions=[1, 2])),
        (ValueError, "positions: expected 5 positions", lambda: posenc.add(spec, x, positions=np.zeros((2, 5), int))),
        (ValueError, r"out: expected shape \(3, 5, 8\), got \(3, 5, 9\)",
         lambda: posenc.add(spec, x, out=np.zeros((3, 5, 9), np.float32))),
        (TypeError, "out: expected dtype float32, got float16",
         lambda: posenc.add(spec, x, out=np.zeros((3, 5, 8), np.float16))),
        (ValueError, r"out overlaps x \(only out is x is allowed\)", lambda: posenc.add(spec, x[:, 1:], out=x[:, :-1])),
        (ValueError, "x: the last axis must be contiguous", lambda: posenc.add(4, x[:, :, ::2])),
        (ValueError, "x: negative strides", lambda: posenc.add(spec, x[:, ::-1])),
        (TypeError, "x: expected a NumPy array or a CPU torch.Tensor, got list", lambda: posenc.add(spec, [[0.0] * 8])),
    ]
    before = snapshot(x, out)
    for cls, msg, call in cases:
        with pytest.raises(cls, match=msg):
            call()
    assert all(np.array_equal(a, b) for a, b in zip(snapshot(x, out), before))


def test_embed_errors_leave_out_untouched():
    spec = posenc.Spec(8)
    rng = np.random.default_rng(2)
    table = rng.standard_normal((10, 8)).astype(np.float32)
    out = sentinel((3, 5, 8), np.float32)
    tok = np.array([[1, 2, 3, 4, 5], [1, 2, 3, 4, 5], [1, 2, 3, 4, 10]])
    good_pos = np.arange(5)
    for t in (table, table.astype(np.float16), np.zeros((10, 8), np.uint16)):
        raises_status(S.ERR_OUT_OF_RANGE, lambda: posenc.embed(spec, t, tok, out=out), out)  # vocab, later row
        neg = tok % 10
        neg[2, 0] = -1
        raises_status(S.ERR_OUT_OF_RANGE, lambda: posenc.embed(spec, t, neg, positions=good_pos, out=out), out)
        raises_status(S.ERR_OUT_OF_RANGE, lambda: posenc.embed(spec, t, tok % 10, first=K - 3, out=out), out)
        raises_status(S.ERR_OUT_OF_RANGE, lambda: posenc.embed(spec, t, tok % 10, positions=[[0] * 5, [0] * 5,
                                                                                           [0, 0, 0, 0, -K]],
                                                               out=out), out)
        raises_status(S.ERR_OUT_OF_RANGE, lambda: posenc.embed(spec, t, tok[2], out=out[2]), out)
        raises_status(S.ERR_OUT_OF_RANGE, lambda: posenc.embed(spec, t, np.array([0, 0, 0, 0, 2 ** 40]), out=out[0]),
                      out)
    cases = [
        (ValueError, "table: rows of 8 elements, the spec's d_model is 9", lambda: posenc.embed(9, table, [1])),
        (TypeError, "table: dtype float64 is not one of", lambda: posenc.embed(spec, table.astype(np.float64), [1])),
        (TypeError, "tokens: expected integers, got dtype float64", lambda: posenc.embed(spec, table, [0.5])),
        (ValueError, "tokens: expected 1 to 2 dimensions, got 3", lambda: posenc.embed(spec, table, [[[1]]])),
        (ValueError, "out overlaps the embedding table", lambda: posenc.embed(spec, table, [1, 2], out=table[:2])),
        (ValueError, "positions: expected 5 positions", lambda: posenc.embed(spec, table, tok % 10, positions=[1])),
        (TypeError, "out: expected dtype float32, got bfloat16",
         lambda: posenc.embed(spec, table, [1], out=np.zeros((1, 8), np.uint16))),
    ]
    before = bits(out).copy()
    for cls, msg, call in cases:
        with pytest.raises(cls, match=msg):
            call()
    assert np.array_equal(bits(out), before)


def test_embed_learned_errors_leave_out_untouched():
    rng = np.random.default_rng(3)
    table = rng.standard_normal((10, 8)).astype(np.float32)
    pos_table = rng.standard_normal((6, 8)).astype(np.float32)
    out = sentinel((3, 5, 8), np.float32)
    tok = np.array([[1, 2, 3, 4, 5]] * 3)
    later = np.array([[0, 1, 2, 3, 4], [0, 1, 2, 3, 4], [0, 1, 2, 3, 6]])
    raises_status(S.ERR_OUT_OF_RANGE, lambda: posenc.embed_learned(table, tok, pos_table, positions=later, out=out),
                  out)
    raises_status(S.ERR_OUT_OF_RANGE, lambda: posenc.embed_learned(table, tok, pos_table, positions=later - 1,
                                                                   out=out), out)
    raises_status(S.ERR_OUT_OF_RANGE, lambda: posenc.embed_learned(table, tok, pos_table, first=2, out=out), out)
    raises_status(S.ERR_OUT_OF_RANGE, lambda: posenc.embed_learned(table, tok, pos_table, first=-1, out=out), out)
    raises_status(S.ERR_OUT_OF_RANGE, lambda: posenc.embed_learned(table, tok[0], pos_table, first=2, out=out[0]), out)
    bad_tok = tok.copy()
    bad_tok[2, 4] = 10
    raises_status(S.ERR_OUT_OF_RANGE, lambda: posenc.embed_learned(table, bad_tok, pos_table, out=out), out)
    with pytest.raises(ValueError, match="pos_table: rows of 4 elements, the spec's d_model is 8"):
        posenc.embed_learned(table, tok, pos_table[:, :4])
    with pytest.raises(ValueError, match="out overlaps the embedding or position table"):
        posenc.embed_learned(table, [0, 1], pos_table, out=pos_table[:2])
    with pytest.raises(TypeError, match="pos_table: dtype float16 is not one of float32"):
        posenc.embed_learned(table, [0], pos_table.astype(np.float16))
    assert (bits(out) == 0x7FBADBAD).all()


def test_rope_cache_errors_leave_out_untouched():
    r = posenc.Rope(8)
    buf = sentinel((5, 12), np.float32)
    raises_status(S.ERR_OUT_OF_RANGE, lambda: posenc.rope_cache(r, positions=[0, 1, 2, 3, K], out=buf[:, :8]), buf)
    raises_status(S.ERR_OUT_OF_RANGE, lambda: posenc.rope_cache(r, None, K - 2, out=(buf[:, :4], buf[:, 4:8])), buf)
    raises_status(S.ERR_INVALID, lambda: posenc.rope_cache(r, out=(buf[:, :4], buf[:, 2:6])), buf)  # cos meets sin
    raises_status(S.ERR_INVALID, lambda: posenc.rope_cache(r, out=(buf[:, :4], buf[:, :4])), buf)
    raises_status(S.ERR_INVALID, lambda: posenc.rope_cache(r, -1))
    cases = [
        (TypeError, "rope_cache: give n, positions, or out=", lambda: posenc.rope_cache(r)),
        (ValueError, r"out: expected \(cos, sin\)", lambda: posenc.rope_cache(r, 5, out=(buf[:, :4],))),
        (ValueError, r"out: expected shape \(5, 8\), got \(5, 12\)", lambda: posenc.rope_cache(r, 5, out=buf)),
        (ValueError, r"out\[1\]: expected shape \(5, 4\), got \(4, 4\)",
         lambda: posenc.rope_cache(r, 5, out=(buf[:, :4], buf[:4, 4:8]))),
        (TypeError, "out: expected dtype float32", lambda: posenc.rope_cache(r, 5, out=np.zeros((5, 8), np.float16))),
    ]
    for cls, msg, call in cases:
        with pytest.raises(cls, match=msg):
            call()
    assert (bits(buf) == 0x7FBADBAD).all()


def test_rope_errors_leave_q_and_k_untouched():
    r = posenc.Rope(8)
    rng = np.random.default_rng(4)
    for dt in (np.float32, np.float16, np.uint16):
        q = (rng.standard_normal((3, 5, 2, 8)) * 100).astype(dt)
        k = (rng.standard_normal((3, 5, 1, 8)) * 100).astype(dt)
        later = np.array([[1, 2, 3, 4, 5], [1, 2, 3, 4, 5], [1, 2, 3, 4, K]])
        raises_status(S.ERR_OUT_OF_RANGE, lambda: posenc.rope(r, q, positions=later), q)
        raises_status(S.ERR_OUT_OF_RANGE, lambda: posenc.rope_qk(r, q, k, positions=later), q, k)
        raises_status(S.ERR_OUT_OF_RANGE, lambda: posenc.rope_qk(r, q, k, first=K - 3), q, k)
        raises_status(S.ERR_OUT_OF_RANGE, lambda: posenc.rope(r, q[0], positions=[0, 1, 2, -K, 4]), q)
        raises_status(S.ERR_INVALID, lambda: posenc.rope_qk(r, q, q[:, :, 1:]), q)  # k rows are q rows
        raises_status(S.ERR_INVALID, lambda: posenc.rope_qk(r, q[0], q[0, :, 1:]), q)
        flat = q.reshape(-1)
        # token stride 0 with several tokens, batch stride 0 with several batch entries: overlapping rows
        raises_status(S.ERR_INVALID, lambda: posenc.rope(r, as_strided(flat, (3, 2, 8), (0, 16 * q.itemsize,
                                                                                          q.itemsize))), q)
        raises_status(S.ERR_INVALID, lambda: posenc.rope(r, as_strided(flat, (2, 3, 1, 8), (
            0, 8 * q.itemsize, 8 * q.itemsize, q.itemsize))), q)
        # batch entries that start inside each other (batch stride one token), a later batch entry
        raises_status(S.ERR_INVALID, lambda: posenc.rope(r, as_strided(flat, (3, 4, 1, 8), (
            8 * q.itemsize, 8 * q.itemsize, 8 * q.itemsize, q.itemsize))), q)
        # q and k that meet only across batch entries (q's entry 1 is k's entry 0): the C calls, one per entry,
        # cannot see it; the binding must
        raises_status(S.ERR_INVALID, lambda: posenc.rope_qk(r, q[0:2, :, 0:1], q[1:3, :, 0:1]), q)
        raises_status(S.ERR_INVALID, lambda: posenc.rope_qk(r, q[0:2], q[1:3, :, 1:]), q)
    q = np.zeros((3, 2, 8), np.float32)
    cases = [
        (ValueError, "x: head rows of 8 elements, shorter than rotary_dim 16", lambda: posenc.rope(posenc.Rope(16), q)),
        (ValueError, "x: negative strides are not supported", lambda: posenc.rope(r, q[::-1])),
        (ValueError, "x: the last axis must be contiguous", lambda: posenc.rope(r, np.zeros((3, 16), np.float32)[:, ::2])),
        (TypeError, "x: dtype float64 is not one of float32, bfloat16, float16", lambda: posenc.rope(r, q.astype(float))),
        (TypeError, "x: dtype int32 is not one of", lambda: posenc.rope(r, q.astype(np.int32))),
        (ValueError, "x: expected 2 to 4 dimensions, got 5", lambda: posenc.rope(r, q[None, None])),
        (ValueError, "x: expected 2 to 4 dimensions, got 1", lambda: posenc.rope(r, q[0, 0])),
        (ValueError, "x: the array is read-only", lambda: posenc.rope(r, np.broadcast_to(q, q.shape))),
        (TypeError, "q and k must have the same dtype", lambda: posenc.rope_qk(r, q, q.astype(np.float16))),
        (ValueError, "q and k must have the same batch and token counts", lambda: posenc.rope_qk(r, q, q[:2].copy())),
        (ValueError, "q: head rows of 8 elements, shorter than rotary_dim 16",
         lambda: posenc.rope_qk(posenc.Rope(16), q, np.zeros((3, 1, 16), np.float32))),
        (ValueError, "k: head rows of 4 elements", lambda: posenc.rope_qk(r, q, np.zeros((3, 1, 4), np.float32))),
        (ValueError, "positions: expected 3 positions", lambda: posenc.rope(r, q, positions=[1, 2])),
        (TypeError, "x: expected a NumPy array or a CPU torch.Tensor, got list", lambda: posenc.rope(r, [[0.0] * 8])),
    ]
    for cls, msg, call in cases:
        with pytest.raises(cls, match=msg):
            call()
    assert not q.any()


def test_torch_argument_errors():
    torch = pytest.importorskip("torch")
    r = posenc.Rope(8)
    x = torch.zeros(3, 8, requires_grad=True)
    with pytest.raises(ValueError, match="x: the tensor requires grad"):
        posenc.rope(r, x)
    with pytest.raises(ValueError, match="k: the tensor requires grad"):
        posenc.rope_qk(r, torch.zeros(3, 8), x)
    with pytest.raises(ValueError, match="out: the tensor requires grad"):
        posenc.table(8, out=x)
    assert posenc.add(8, x).shape == (3, 8)  # an input that requires grad is read, not written
    with pytest.raises(TypeError, match="x: the tensor must be on the CPU"):
        posenc.rope(r, torch.zeros(3, 8, device="meta"))
    with pytest.raises(TypeError, match="only strided"):
        posenc.add(8, torch.zeros(3, 8).to_sparse())
    with pytest.raises(TypeError, match="x: dtype torch.float64 is not one of float32"):
        posenc.add(8, torch.zeros(3, 8, dtype=torch.float64))
    with pytest.raises(ValueError, match="x: the last axis must be contiguous"):
        posenc.rope(r, torch.zeros(8, 3).t())
    out = torch.full((4, 8), 5.0)
    raises_status(S.ERR_OUT_OF_RANGE, lambda: posenc.table(8, first=K - 2, out=out), out)


# ---- ISA control: Unsupported and Invalid -------------------------------------------------------------------

def test_isa_functions():
    avail = posenc.available_isas()
    assert avail[0] == posenc.Isa.SCALAR
    assert posenc.active_isa() in avail
    for isa in posenc.Isa.__members__.values():
        assert posenc.isa_name(isa) == isa.name.lower()
        assert posenc.isa_name(isa.name.lower()) == isa.name.lower()
        assert posenc.isa_available(isa) == (isa in avail)
        assert posenc.isa_available(int(isa)) == (isa in avail)
    assert posenc.isa_name(99) == "unknown"
    assert posenc.isa_available(99) is False
    with pytest.raises(ValueError, match="isa: unknown name 'mmx'"):
        posenc.force_isa("mmx")


def test_forcing_an_unavailable_isa_is_unsupported_and_changes_nothing():
    missing = [i for i in posenc.Isa.__members__.values() if not posenc.isa_available(i)]
    if not missing:
        pytest.skip("every posenc.Isa is available here")
    before = posenc.active_isa()
    for isa in missing:
        raises_status(S.ERR_UNSUPPORTED, lambda: posenc.force_isa(isa))
        raises_status(S.ERR_UNSUPPORTED, lambda: posenc.force_isa(posenc.isa_name(isa)))
        assert posenc.active_isa() == before
    raises_status(S.ERR_INVALID, lambda: posenc.force_isa(99))
    raises_status(S.ERR_INVALID, lambda: posenc.force_isa(-1))
    assert posenc.active_isa() == before


def run_python(code, env=None):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=e,
                       timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def test_kernel_calls_on_an_unavailable_posenc_isa_raise_unsupported():
    # POSENC_ISA names a path this machine lacks: every kernel call raises Unsupported, nothing written
    missing = [i for i in posenc.Isa.__members__.values() if not posenc.isa_available(i)]
    if not missing:
        pytest.skip("every posenc.Isa is available here")
    name = posenc.isa_name(missing[0])
    out = run_python(f"""
        import numpy as np, posenc
        assert posenc.active_isa() == posenc.Isa.{missing[0].name}, posenc.active_isa()
        o = np.full((4, 8), 5.0, np.float32)
        x = np.ones((4, 8), np.float32)
        calls = [lambda: posenc.table(8, out=o), lambda: posenc.rows(8, [1, 2, 3, 4], out=o),
                 lambda: posenc.add(8, x, out=o), lambda: posenc.embed(8, x, [0, 1, 2, 3], out=o),
                 lambda: posenc.embed_learned(x, [0, 1, 2, 3], x, out=o),
                 lambda: posenc.rope_cache(posenc.Rope(8), out=o), lambda: posenc.rope(posenc.Rope(8), o),
                 lambda: posenc.rope_qk(posenc.Rope(8), o[:2], o[2:])]
        for c in calls:
            try:
                c()
            except posenc.Unsupported as e:
                assert isinstance(e, RuntimeError) and e.status == posenc.Status.ERR_UNSUPPORTED
                assert str(e) == "instruction set not available"
            else:
                raise AssertionError("no error")
        assert (o == 5.0).all() and (x == 1.0).all()
        posenc.force_isa("scalar")  # forcing an available path recovers
        assert posenc.table(8, 1)[0, 1] == 1.0
        print("ok")
    """, {"POSENC_ISA": name})
    assert out.strip() == "ok"


def test_no_memory_for_a_spec_whose_frequency_table_cannot_be_allocated():
    # tests/test_hardening.cpp: d_model = 2^60 asks for 2^63 bytes of frequency table; the out view is a
    # (1, 2^60) bfloat16 window over a 256-byte buffer (never touched: the call fails before writing). Run in a
    # child process, so that a library that did write could not take the test session down with it.
    out = run_python("""
        import numpy as np, posenc
        from numpy.lib.stride_tricks import as_strided
        buf = np.full(128, 0x5C5C, np.uint16)
        for d in (2 ** 60, 2 ** 61 - 2):
            view = as_strided(buf, (1, d), (0, 2))
            try:
                posenc.table(posenc.Spec(d), out=view)
            except posenc.NoMemory as e:
                assert isinstance(e, MemoryError) and e.status == posenc.Status.ERR_NO_MEMORY
                assert str(e) == posenc.status_string(posenc.Status.ERR_NO_MEMORY) == "out of memory"
            else:
                raise AssertionError("no error")
        assert (buf == 0x5C5C).all()
        print("ok")
    """)
    assert out.strip() == "ok"
