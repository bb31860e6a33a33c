"""posenc.torch's functions on tensors: table, rows, add, embed, rope_cache, make_positions, rotate_half and
apply_rotary_pos_emb: shapes, dtypes, out=, strided views, and every value bit for bit against mpfr_ref (the
correctly rounded table, one fmaf rounding for add / embed)."""
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import posenc  # noqa: E402
import posenc.torch as pt  # noqa: E402

import mpfr_ref as R  # noqa: E402
import originals as O  # noqa: E402
from test_torch_support import FMT, assert_bits, bits, ref_rope  # noqa: E402

SPECS = {
    "vaswani": (lambda d: posenc.Spec.vaswani(d), lambda d: R.SpecRef(d, 0)),
    "fairseq": (lambda d: posenc.Spec.fairseq(d), lambda d: R.SpecRef(d, 1, 10000.0, d // 2 - 1)),
    "int": (lambda d: d, lambda d: R.SpecRef(d, 0)),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("spec", list(SPECS))
def test_table(spec, dtype):
    d, n = 18, 12
    make, ref = SPECS[spec]
    for first in (0, 1000, 2 ** 31 - n):
        t = pt.table(make(d), n, first, dtype=dtype)
        assert t.shape == (n, d) and t.dtype == dtype and t.is_contiguous()
        assert not t.requires_grad and t.grad_fn is None
        want = ref(d).table(first, n)
        assert_bits(t, want if dtype == torch.float32 else R.narrow_from_f32(want, FMT[dtype]), f"{spec} at {first}")


def test_table_out_strided_rows():
    """out= a view with a row stride (columns 3 .. 3 + d of a wider buffer): filled in place, returned, the
    other columns untouched."""
    d, n = 16, 7
    buf = torch.full((n, d + 5), 7.0)
    out = buf[:, 3:3 + d]
    got = pt.table(d, n, 40, out=out)
    assert got.data_ptr() == out.data_ptr()
    assert_bits(out, R.SpecRef(d).table(40, n), "out")
    assert (buf[:, :3] == 7).all() and (buf[:, 3 + d:] == 7).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_rows_any_shape_and_pad(dtype):
    d = 10
    positions = torch.tensor([[0, 5, posenc.PAD], [2 ** 31 - 1, 77, 3]])
    got = pt.rows(d, positions, dtype=dtype)
    assert got.shape == (2, 3, d) and got.dtype == dtype
    ref = R.SpecRef(d)
    want = np.stack([ref.row(int(p)) for p in positions.reshape(-1)]).reshape(2, 3, d)
    assert_bits(got, want if dtype == torch.float32 else R.narrow_from_f32(want, "bf16"), "rows")
    assert (bits(got[0, 2]) == 0).all(), "PAD: +0.0 row"
    out = torch.empty(2, 3, d, dtype=dtype)
    assert pt.rows(d, positions, out=out, dtype=dtype) is out
    assert_bits(out, got, "out=")
    assert_bits(pt.rows(d, [4, 5]), ref.rows([4, 5]), "a list of positions")


def fmaf_ref(scale, x, pe):
    return R.fmaf(np.float32(scale), np.asarray(x, np.float32), np.broadcast_to(pe, np.shape(x)))


@pytest.mark.parametrize("scale", [1.0, 2.5])
def test_add(scale):
    d, n, b = 12, 9, 3
    spec = posenc.Spec.vaswani(d)
    ref = R.SpecRef(d)
    x = torch.randn(b, n, d) * 3
    x0 = x.clone()
    y = pt.add(x, spec, scale=scale)
    assert y.shape == x.shape and y.is_contiguous() and y.data_ptr() != x.data_ptr()
    assert_bits(x, x0, "x untouched")
    assert_bits(y, fmaf_ref(scale, x.numpy(), ref.table(0, n)), "[b, n, d]")
    assert_bits(pt.add(x[0], spec, scale=scale, first=50), fmaf_ref(scale, x[0].numpy(), ref.table(50, n)),
                "[n, d], first")
    pos = torch.tensor([5, 0, 2 ** 31 - 1, posenc.PAD, 3, 3, 9, 1, 2])
    prow = np.stack([ref.row(int(p)) for p in pos])
    assert_bits(pt.add(x, spec, positions=pos, scale=scale), fmaf_ref(scale, x.numpy(), prow), "positions [n]")
    pos2 = torch.stack([pos, pos.flip(0), pos.roll(2)])
    p2 = np.stack([np.stack([ref.row(int(p)) for p in r]) for r in pos2])
    assert_bits(pt.add(x, spec, positions=pos2, scale=scale), fmaf_ref(scale, x.numpy(), p2), "positions [b, n]")
    xs = x.transpose(0, 1)  # [seq, batch, d], strided
    ys = pt.add(xs, spec, scale=scale, seq_first=True)
    assert ys.shape == xs.shape and ys.is_contiguous()
    assert_bits(ys, fmaf_ref(scale, xs.numpy(), ref.table(0, n)[:, None]), "seq_first")


@pytest.mark.parametrize("wdtype", [torch.float32, torch.bfloat16, torch.float16])
def test_embed(wdtype):
    vocab, d = 30, 18  # sqrt(18): the product is rounded in a two-step computation, not in fmaf
    spec = posenc.Spec.vaswani(d)
    ref = R.SpecRef(d)
    w = (torch.randn(vocab, d) * 2).to(wdtype)
    wf = w.float().numpy()  # exact widening
    s = math.sqrt(d)
    tok = torch.randint(0, vocab, (2, 11))
    y = pt.embed(tok, w, spec, scale=s)
    assert y.shape == (2, 11, d) and y.dtype == torch.float32 and not y.requires_grad
    assert_bits(y, fmaf_ref(s, wf[tok.numpy()], ref.table(0, 11)), "[b, n]")
    assert_bits(pt.embed(tok[0], w, spec, scale=s, first=2 ** 30),
                fmaf_ref(s, wf[tok[0].numpy()], ref.table(2 ** 30, 11)), "[n], first")
    pos = torch.tensor([[3, 1, 4, 1, 5, 9, 2, 6, 5, 3, posenc.PAD]] * 2)
    want = fmaf_ref(s, wf[tok.numpy()], np.stack([ref.rows([int(p) for p in r]) for r in pos]))
    assert_bits(pt.embed(tok, w, spec, scale=s, positions=pos), want, "positions")
    assert_bits(pt.embed(tok.int(), w, spec, scale=s), y, "int32 tokens")


def test_rope_cache():
    name = "qwen2_7b_yarn"
    rope = pt.RotaryEmbedding(O.original_configs()[name]).rope
    ref = ref_rope(name)
    pos = torch.tensor([[0, 7, 2 ** 31 - 1], [131072, posenc.PAD, 2048]])
    cos, sin = pt.rope_cache(rope, pos)
    assert cos.shape == sin.shape == (2, 3, 128) and cos.dtype == torch.float32
    assert not cos.requires_grad and cos.grad_fn is None
    want = np.stack([ref.row(int(p)) if p != posenc.PAD else np.zeros(128, np.float32) for p in pos.reshape(-1)])
    assert_bits(cos.reshape(6, 128)[:, :64], want[:, :64], "cos")
    assert_bits(sin.reshape(6, 128)[:, :64], want[:, 64:], "sin")
    assert (bits(cos[1, 1, :64]) == 0).all() and (bits(sin[1, 1, :64]) == 0).all(), "PAD: zeros"
    c32, s32 = pt.rope_cache(rope, pos[0].int())  # int32 position ids (no PAD: it is an int64 value)
    assert_bits(c32[..., :64], cos[0, :, :64], "int32 positions")
    assert_bits(s32[..., :64], sin[0, :, :64], "int32 positions")


def test_make_positions_is_fairseqs():
    tok = torch.tensor([[1, 1, 5, 6, 7], [5, 6, 1, 7, 1], [9, 9, 9, 9, 9]])
    for padding_idx in (1, 9):
        assert torch.equal(pt.make_positions(tok, padding_idx), O.make_positions(tok, padding_idx))
