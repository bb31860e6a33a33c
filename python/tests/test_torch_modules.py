"""posenc.torch's drop-in table modules against the originals (originals.py): the tutorial PositionalEncoding,
its batch-first variant, fairseq's SinusoidalPositionalEmbedding, LSPE and ScaledEmbeddingWithPE.

Same constructor arguments, same forward signature, same shapes; at short positions the outputs agree to the
original's own float32 error (the per-element bound of test_torch_support: the original's angle error
|a32 - p w| plus 1.5U of sin/cos rounding, plus the roundings of the sums), and posenc's values are the
correctly rounded ones (bit-for-bit against mpfr_ref). At long positions posenc stays exact while the original
is off by ~1e-3 (131072) to ~1e-1 (2^20) and by O(1) at 2^31 - 1.
"""
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import posenc  # noqa: E402
import posenc.torch as pt  # noqa: E402

import mpfr_ref as R  # noqa: E402
import originals as O  # noqa: E402
from test_torch_support import (  # noqa: E402
    LONG, ORIGINAL_FLOOR, TABLE_ROUNDING, U, angle_error, assert_bits, assert_within, bits, f64, fairseq_rows,
    fairseq_w, halves, interleave, spacing32, stacked_rows, tutorial_rows, vaswani_w)


def vaswani_ref(d):
    return R.SpecRef(d, 0, 10000.0, 0.0, 1.0)


def fairseq_ref(dim):
    return R.SpecRef(dim, 1, 10000.0, float(dim // 2 - 1), 1.0)  # sin | cos halves, D = h - 1


def tutorial_bound(positions, d):
    """Per-element bound of |posenc table - tutorial table| at positions (see test_torch_support)."""
    _, a = tutorial_rows(positions, d)
    return interleave(angle_error(a.numpy(), positions, vaswani_w(d))) + TABLE_ROUNDING


# ---- the helpers are the originals' own operations --------------------------------------------------------------

def test_row_helpers_are_the_originals_tables():
    """tutorial_rows / fairseq_rows / stacked_rows (used for long positions, where the originals would need a
    table of 2^31 rows) give the originals' tables bit for bit."""
    n = 300
    pe, _ = tutorial_rows(range(n), 64)
    assert_bits(pe, O._tutorial_table(64, n), "tutorial_rows")
    assert_bits(pe, O.PositionalEncoding(64, max_len=n).pe[:, 0], "tutorial module pe")
    assert_bits(pe, O.PositionalEncodingBatchFirst(64, max_len=n).pe[0], "batch-first pe")
    for dim in (16, 17):
        assert_bits(fairseq_rows(range(n), dim)[0], O.SinusoidalPositionalEmbedding.get_embedding(n, dim), "fairseq")
    assert_bits(stacked_rows(range(n), 64)[0], O.stacked_sincos_table(n, 64), "stacked")


# ---- the tutorial PositionalEncoding and the batch-first variant --------------------------------------------------

PE_PAIRS = [(O.PositionalEncoding, pt.PositionalEncoding, True),
            (O.PositionalEncodingBatchFirst, pt.PositionalEncodingBatchFirst, False)]


@pytest.mark.parametrize("orig_cls,new_cls,seq_first", PE_PAIRS, ids=["tutorial", "batch_first"])
def test_positional_encoding_matches_original(orig_cls, new_cls, seq_first):
    d, max_len, seq = 512, 2048, 2048
    torch.manual_seed(1)
    orig, new = orig_cls(d, dropout=0.1, max_len=max_len).eval(), new_cls(d, dropout=0.1, max_len=max_len).eval()
    assert new.pe.shape == orig.pe.shape and new.pe.dtype == orig.pe.dtype == torch.float32
    assert list(new.state_dict()) == list(orig.state_dict()) == ["pe"]
    table = new.pe.reshape(max_len, d)
    pos = np.arange(max_len)
    bound = tutorial_bound(pos, d)
    ratio = assert_within(f64(table), f64(orig.pe.reshape(max_len, d)), bound, "pe buffer vs the tutorial's")
    assert ratio > 0.5, "the bound should be tight: the tables differ by the original's angle error"
    ref = vaswani_ref(d)
    for p in (0, 1, 2, 3, 1000, 2047):
        assert_bits(table[p], ref.row(p), f"pe row {p}")

    x = torch.randn(seq, 3, d) if seq_first else torch.randn(3, seq, d)
    y_new, y_orig = new(x), orig(x)
    assert y_new.shape == y_orig.shape == x.shape and y_new.dtype == torch.float32
    # the fused add is x + pe with one rounding: the same bits as adding the exact buffer
    pe_b = table[:seq].unsqueeze(1) if seq_first else table[:seq].unsqueeze(0)
    assert_bits(y_new, x + pe_b, "fused x + pe")
    # against the original: |pe - pe'| + the two sums' half ulps
    b = torch.from_numpy(bound[:seq]).unsqueeze(1 if seq_first else 0).numpy()
    assert_within(f64(y_new), f64(y_orig), b + spacing32(np.maximum(f64(y_new), f64(y_orig))), "forward")
    # a shorter sequence, and a non-contiguous x (a transposed view)
    xs = torch.randn(3, 7, d).transpose(0, 1) if seq_first else torch.randn(7, 3, d).transpose(0, 1)
    assert_bits(new(xs), xs + (table[:7].unsqueeze(1) if seq_first else table[:7].unsqueeze(0)), "strided x")


@pytest.mark.parametrize("orig_cls,new_cls,seq_first", PE_PAIRS, ids=["tutorial", "batch_first"])
def test_positional_encoding_dropout_as_original(orig_cls, new_cls, seq_first):
    """In training mode both apply nn.Dropout to x + pe: the same RNG draws give the same mask and scale."""
    d, p = 64, 0.3
    orig, new = orig_cls(d, dropout=p, max_len=100).train(), new_cls(d, dropout=p, max_len=100).train()
    x = torch.randn(50, 2, d)  # [seq, batch, d] or [batch, seq, d]
    torch.manual_seed(7)
    yo = orig(x)
    torch.manual_seed(7)
    yn = new(x)
    assert torch.equal(yo == 0, yn == 0) and 0.2 < float((yn == 0).float().mean()) < 0.4
    # both scale x + pe (at most the PE bound + the sums' half ulps apart) by the same float32 1/(1-p), rounded
    bound = tutorial_bound(np.arange(50), d)[:, None] if seq_first else tutorial_bound(np.arange(2), d)[None]
    s = (1 + U) / (1 - p)
    r = np.abs(f64(yn)) / s
    assert_within(f64(yn), f64(yo), s * (bound + 2 * spacing32(r)) + spacing32(np.abs(f64(yn))), "dropout output")
    new.eval()
    assert_bits(new(x), x + (new.pe[:50] if seq_first else new.pe[:, :2]), "eval: no dropout")


@pytest.mark.parametrize("orig_cls,new_cls,seq_first", PE_PAIRS, ids=["tutorial", "batch_first"])
def test_positional_encoding_state_dict(orig_cls, new_cls, seq_first):
    """state_dict keys are the original's; an original checkpoint loads and is then used as loaded (its float32
    table: the outputs are the original's bit for bit), posenc's own checkpoint keeps the exact path."""
    d = 32
    orig, new = orig_cls(d, dropout=0.0, max_len=64), new_cls(d, dropout=0.0, max_len=64)
    x = torch.randn(20, 2, d)
    new.load_state_dict(orig.state_dict())
    assert_bits(new(x), orig(x), "after loading the original's table")
    exact = new_cls(d, dropout=0.0, max_len=64)
    new.load_state_dict(exact.state_dict())
    assert_bits(new(x), exact(x), "after loading posenc's table")
    assert_bits(new.pe, exact.pe, "pe")


def test_positional_encoding_other_dtypes_use_the_exact_buffer():
    """x of another dtype takes the original expression with the exact buffer (x + pe promotes as torch does)."""
    new = pt.PositionalEncoding(16, dropout=0.0, max_len=10)
    x = torch.randn(10, 2, 16, dtype=torch.float64)
    y = new(x)
    assert y.dtype == torch.float64
    assert torch.equal(y, x + new.pe.double())
    xh = torch.randn(10, 2, 16).to(torch.bfloat16)
    assert torch.equal(new(xh), xh + new.pe)


def test_batch_first_module_exact_at_131072():
    """The module itself at long positions (d = 32, max_len 131072 + 8: a 17 MB table each): its last rows are
    the correctly rounded values, the original's are off by > 4e-4 (measured: 7.0e-3 at d = 512 over 64 rows;
    at d = 32 the slow pairs are fewer)."""
    d, n = 32, 131072 + 8
    new = pt.PositionalEncodingBatchFirst(d, dropout=0.0, max_len=n)
    orig = O.PositionalEncodingBatchFirst(d, dropout=0.0, max_len=n)
    x = torch.zeros(1, n, d)
    y_new, y_orig = new(x)[0, -8:], orig(x)[0, -8:]
    ref = vaswani_ref(d)
    want = ref.rows(range(n - 8, n))
    assert_bits(y_new, want, "posenc rows at 131072..")
    err = np.abs(f64(y_orig) - want).max()
    assert err > ORIGINAL_FLOOR[131072], err
    assert_within(f64(y_orig), want, tutorial_bound(np.arange(n - 8, n), d), "original within its own bound")


@pytest.mark.parametrize("p", LONG)
def test_tutorial_table_long_positions(p):
    """pt.table(Spec.vaswani(512), 32, first=p) (what PositionalEncoding adds) is exact where the tutorial's
    float32 table is off: helper measurements 7.6e-3 at 131072, 5.6e-2 at 2^20 (d = 512); here the maximum over
    32 rows is asserted above ORIGINAL_FLOOR and below the original's own angle bound."""
    d, n = 512, 32
    first = min(p, 2 ** 31 - n)
    got = pt.table(posenc.Spec.vaswani(d), n, first)
    want = vaswani_ref(d).rows(range(first, first + n))
    assert_bits(got, want, f"table at {first}")
    orig, _ = tutorial_rows(range(first, first + n), d)
    err = float(np.abs(f64(orig) - want).max())
    assert err > ORIGINAL_FLOOR[p], f"the tutorial's error at {p}: {err}"
    if p < 2 ** 24:  # beyond, the angle bound in double is itself too coarse to be worth checking
        assert_within(f64(orig), want, tutorial_bound(np.arange(first, first + n), d), "original within its bound")


# ---- fairseq SinusoidalPositionalEmbedding ----------------------------------------------------------------------

def fairseq_bound(positions, dim):
    _, ang = fairseq_rows(positions, dim)
    return halves(angle_error(ang.numpy(), positions, fairseq_w(dim)), dim) + TABLE_ROUNDING


def padded_tokens(bsz, seq, padding_idx, seed=3):
    g = torch.Generator().manual_seed(seed)
    tok = torch.randint(padding_idx + 1, 1000, (bsz, seq), generator=g)
    tok[0, :5] = padding_idx  # left padding
    tok[1, -7:] = padding_idx  # right padding
    tok[2, 10] = padding_idx  # a hole
    return tok


@pytest.mark.parametrize("dim", [64, 33])
@pytest.mark.parametrize("padding_idx", [1, 0])
def test_fairseq_forward_matches_original(dim, padding_idx):
    """Tokens with left / right / inner padding, 40 of them with init_size 16 (the original grows its table)."""
    bsz, seq = 3, 40
    orig = O.SinusoidalPositionalEmbedding(dim, padding_idx, init_size=16)
    new = pt.SinusoidalPositionalEmbedding(dim, padding_idx, init_size=16)
    tok = padded_tokens(bsz, seq, padding_idx)
    yo, yn = orig(tok), new(tok)
    assert yn.shape == yo.shape == (bsz, seq, dim) and yn.dtype == yo.dtype == torch.float32
    assert not yn.requires_grad
    pos = O.make_positions(tok, padding_idx)
    pad = (tok == padding_idx).numpy()
    assert (bits(yn)[pad] == 0).all() and (f64(yo)[pad] == 0).all(), "padding rows are +0.0"
    ref = fairseq_ref(dim)
    want = np.stack([ref.row(int(q)) for q in pos.reshape(-1)]).reshape(bsz, seq, dim)
    want[pad] = 0
    assert_bits(yn, want, "posenc rows")
    bound = fairseq_bound(pos.reshape(-1).numpy(), dim).reshape(bsz, seq, dim)
    assert_within(f64(yn), f64(yo), bound, "vs fairseq")
    if dim % 2:
        assert (bits(yn)[..., -1] == 0).all(), "odd dim: the last column is zero"


@pytest.mark.parametrize("timestep", [None, 0, 5, 500])
def test_fairseq_incremental_decoding(timestep):
    """With incremental_state every batch row gets the row of position padding_idx + timestep + 1 (or + seq)."""
    dim, padding_idx, bsz = 32, 1, 4
    orig = O.SinusoidalPositionalEmbedding(dim, padding_idx)
    new = pt.SinusoidalPositionalEmbedding(dim, padding_idx)
    tok = torch.full((bsz, 1 if timestep is not None else 6), 7)
    ts = None if timestep is None else torch.tensor([timestep])
    yo = orig(tok, incremental_state={}, timestep=ts)
    yn = new(tok, incremental_state={}, timestep=ts)
    assert yn.shape == yo.shape == (bsz, 1, dim)
    p = padding_idx + (timestep + 1 if timestep is not None else 6)
    assert_bits(yn, np.broadcast_to(fairseq_ref(dim).row(p), (bsz, 1, dim)), f"row {p}")
    assert_within(f64(yn), f64(yo), fairseq_bound([p], dim)[None], "vs fairseq")


def test_fairseq_positions_argument_ignored_and_get_embedding():
    """fairseq (main and v0.12.3) accepts positions= and ignores it: the rows are make_positions' of the tokens."""
    dim, padding_idx = 20, 2
    orig = O.SinusoidalPositionalEmbedding(dim, padding_idx, init_size=64)
    new = pt.SinusoidalPositionalEmbedding(dim, padding_idx, init_size=64)
    tok = torch.full((2, 5), 9)
    tok[1, 0] = padding_idx
    positions = torch.tensor([[3, 4, 2, 60, 7], [2, 2, 10, 11, 12]])
    yo, yn = orig(tok, positions=positions), new(tok, positions=positions)
    assert_bits(yn, new(tok), "positions= ignored")
    pos = O.make_positions(tok, padding_idx)
    want = np.stack([fairseq_ref(dim).row(int(q)) if q != padding_idx else np.zeros(dim, np.float32)
                     for q in pos.reshape(-1)]).reshape(2, 5, dim)
    assert_bits(yn, want, "make_positions' rows")
    assert_within(f64(yn), f64(yo), fairseq_bound(pos.reshape(-1).numpy(), dim).reshape(2, 5, dim), "vs fairseq")
    # the weights buffer and the static get_embedding (row p is position p, the padding row zero)
    w_new = pt.SinusoidalPositionalEmbedding.get_embedding(64, dim, padding_idx)
    w_orig = O.SinusoidalPositionalEmbedding.get_embedding(64, dim, padding_idx)
    assert w_new.shape == w_orig.shape and (f64(w_new)[padding_idx] == 0).all()
    b = fairseq_bound(np.arange(64), dim)
    assert_within(f64(w_new), f64(w_orig), b, "get_embedding")
    assert_within(f64(new.weights), f64(orig.weights), b, "weights")
    assert list(new.state_dict()) == list(orig.state_dict()) == []


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_fairseq_half_module(dtype):
    """module.to(dtype) converts _float_tensor; the rows come in that dtype, rounded once from the exact float32."""
    dim, padding_idx = 32, 1
    orig = O.SinusoidalPositionalEmbedding(dim, padding_idx).to(dtype)
    new = pt.SinusoidalPositionalEmbedding(dim, padding_idx).to(dtype)
    tok = padded_tokens(3, 30, padding_idx)
    yo, yn = orig(tok), new(tok)
    assert yn.dtype == yo.dtype == dtype
    pos = O.make_positions(tok, padding_idx).reshape(-1)
    ref = fairseq_ref(dim)
    fmt = "f16" if dtype == torch.float16 else "bf16"
    want = np.stack([R.narrow_from_f32(ref.row(int(q)), fmt) if q != padding_idx else np.zeros(dim, np.uint16)
                     for q in pos]).reshape(3, 30, dim)
    assert_bits(yn, want, "rows in " + fmt)
    # both round float32 values at most the float32 bound apart: one step of the narrow format at most
    ulp16 = np.spacing(np.abs(f64(yo)).astype(np.float16)).astype(np.float64) if dtype == torch.float16 else \
        2.0 ** (np.floor(np.log2(np.maximum(np.abs(f64(yo)), 2.0 ** -126))) - 7)
    assert_within(f64(yn), f64(yo), fairseq_bound(pos.numpy(), dim).reshape(3, 30, dim) + ulp16, "vs fairseq")


@pytest.mark.parametrize("p", LONG[1:])
def test_fairseq_long_positions(p):
    """fairseq's rows far out (posenc.torch.rows with the module's spec, what its table holds there): exact, where
    fairseq's float32 rows are off by more than the floor."""
    dim, padding_idx = 64, 1
    new = pt.SinusoidalPositionalEmbedding(dim, padding_idx)
    positions = torch.tensor([p - 2, p - 1, p])
    yn = pt.rows(new.spec, positions)
    want = np.stack([fairseq_ref(dim).row(int(q)) for q in positions])
    assert_bits(yn, want, f"fairseq rows at {p}")
    yo, _ = fairseq_rows(positions, dim)
    err = float(np.abs(f64(yo) - want).max())
    assert err > ORIGINAL_FLOOR[p], err


@pytest.mark.parametrize("tokens,steps", [([0, 3, 4], [0, 1, 2]), ([5, 3, 4], [1, 2, 3])],
                         ids=["token_zero", "other_tokens"])
def test_fairseq_padding_idx_none(tokens, steps):
    dim = 8
    tok = torch.tensor([tokens])
    yo = O.SinusoidalPositionalEmbedding(dim, None)(tok)
    yn = pt.SinusoidalPositionalEmbedding(dim, None)(tok)
    assert_within(f64(yn), f64(yo), fairseq_bound(np.array(steps), dim)[None], "padding_idx None")


# ---- LSPE ---------------------------------------------------------------------------------------------------

LIPSCHITZ = {"gelu": 1.13, "sigmoid": 0.25}  # max |gelu'| = Phi(sqrt 2) + sqrt 2 phi(sqrt 2) = 1.1289; sigmoid 1/4
_ACT64 = {"gelu": lambda z: 0.5 * z * (1 + np.vectorize(math.erf)(z / math.sqrt(2))),
          "sigmoid": lambda z: 1 / (1 + np.exp(-z))}


def ffn_bound(ffn, activation, pe_a, pe_b):
    """|ffn(pe_a) - ffn(pe_b)|, both evaluated in float32, for inputs a small distance apart (float64 bound):
    first layer: |W1| |pe_a - pe_b| + the rounding of both GEMMs (Higham: |fl(w.x + b) - (w.x + b)| <=
    gamma_{n+1} (|w|.|x| + |b|), gamma_n = nU / (1 - nU)); the activation: Lipschitz L, each float32
    evaluation within 4U (|z| + |h|); second layer as the first."""
    W1, b1 = f64(ffn[0].weight), f64(ffn[0].bias)
    W2, b2 = f64(ffn[2].weight), f64(ffn[2].bias)

    def gamma(n):
        return (n + 1) * U / (1 - (n + 1) * U)

    A, B = f64(pe_a), f64(pe_b)
    z = A @ W1.T + b1
    dz = np.abs(A - B) @ np.abs(W1).T + gamma(W1.shape[1]) * (np.abs(A) @ np.abs(W1).T + np.abs(B) @ np.abs(W1).T
                                                                + 2 * np.abs(b1))
    h = _ACT64[activation](z)
    dh = LIPSCHITZ[activation] * dz + 8 * U * (np.abs(z) + dz + np.abs(h))
    mag = (np.abs(h) + dh) @ np.abs(W2).T + np.abs(b2)
    return dh @ np.abs(W2).T + gamma(W2.shape[1]) * 2 * mag


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("d_hid,activation", [(None, "gelu"), (96, "sigmoid")])
def test_lspe_state_dict_transfer(batch_first, d_hid, activation):
    d, max_len, seq = 64, 512, 300
    torch.manual_seed(11)
    orig = O.LearnableSinusoidalPositionalEncoding(d, 0.1, max_len, d_hid, activation, batch_first).eval()
    new = pt.LearnableSinusoidalPositionalEncoding(d, 0.1, max_len, d_hid, activation, batch_first).eval()
    assert list(new.state_dict()) == list(orig.state_dict())
    assert [p.shape for p in new.parameters()] == [p.shape for p in orig.parameters()]
    x = torch.randn(2, seq, d) if batch_first else torch.randn(seq, 2, d)

    # 1. the whole checkpoint (FFN and the original's float32 table): the original's outputs bit for bit
    new.load_state_dict(orig.state_dict())
    for a, b in zip(new.parameters(), orig.parameters()):
        assert_bits(a, b, "FFN parameter")
    assert_bits(new(x), orig(x), "whole checkpoint")

    # 2. the trained FFN onto posenc's exact table (the checkpoint without "pe")
    exact = pt.LearnableSinusoidalPositionalEncoding(d, 0.1, max_len, d_hid, activation, batch_first).eval()
    sd = {k: v for k, v in orig.state_dict().items() if k != "pe"}
    missing, unexpected = exact.load_state_dict(sd, strict=False)
    assert missing == ["pe"] and unexpected == []
    for a, b in zip(exact.parameters(), orig.parameters()):
        assert_bits(a, b, "FFN parameter")
    ref = vaswani_ref(d)
    for p in (0, 1, 299, 511):
        assert_bits(exact.pe[p], ref.row(p), f"exact pe row {p}")
    pe_o, pe_n = orig.pe[:seq], exact.pe[:seq]
    assert_within(f64(pe_n), f64(pe_o), tutorial_bound(np.arange(seq), d), "pe")
    yn, yo = exact(x), orig(x)
    fb = ffn_bound(orig.ffn, activation, pe_n, pe_o)
    fb = fb[None] if batch_first else fb[:, None]
    # (a worst-case bound: the measured difference uses ~1% of it, the GEMMs' rounding being ~sqrt(n) U, not n U)
    assert_within(f64(yn), f64(yo), fb + spacing32(np.maximum(np.abs(f64(yn)), np.abs(f64(yo)))), "forward")
    assert_bits(exact.position_encoding(seq), exact.ffn(exact.pe[:seq]), "position_encoding")


# ---- ScaledEmbeddingWithPE -------------------------------------------------------------------------------------

def stacked_bound(positions, d):
    _, a = stacked_rows(positions, d)
    return interleave(angle_error(a.numpy(), positions, vaswani_w(d))) + TABLE_ROUNDING


@pytest.mark.parametrize("padding_idx", [None, 0])
def test_scaled_embedding_matches_original(padding_idx):
    vocab, d, max_len, seq = 100, 80, 512, 200  # sqrt(80) is no power of two: e * s is rounded
    torch.manual_seed(5)
    orig = O.ScaledEmbeddingWithPE(vocab, d, max_len, padding_idx)
    new = pt.ScaledEmbeddingWithPE(vocab, d, max_len, padding_idx)
    new.embedding.load_state_dict(orig.embedding.state_dict())
    tok = torch.randint(0, vocab, (3, seq))
    tok[0, :9] = 0
    yo, yn = orig(tok), new(tok)
    assert yn.shape == yo.shape == (3, seq, d) and yn.dtype == torch.float32
    s32 = np.float32(math.sqrt(d))
    e = orig.embedding.weight.detach().numpy()[tok.numpy()]
    pe = vaswani_ref(d).rows(range(seq))
    assert_bits(yn, R.fmaf(s32, e, np.broadcast_to(pe, e.shape)), "fmaf(sqrt d, emb, exact pe)")
    # the original: RN(RN(e s) + pe'), pe' within the table bound: |pe' - pe| + half ulps of e s and both sums
    b = stacked_bound(np.arange(seq), d)[None] + 0.5 * spacing32(e * s32) + \
        spacing32(np.maximum(np.abs(f64(yo)), np.abs(f64(yn))))
    assert_within(f64(yn), f64(yo), b, "vs the original")
    # unbatched tokens [seq]
    assert_bits(new(tok[1]), yn[1], "tokens [seq]")
    assert orig(tok[1]).shape == new(tok[1]).shape


@pytest.mark.parametrize("p", LONG[1:])
def test_embed_long_positions(p):
    """The fused embedding at long positions (pt.embed with first=p): exact; the stacked float32 table off."""
    vocab, d, n = 50, 80, 4
    first = min(p, 2 ** 31 - n)
    w = torch.randn(vocab, d)
    tok = torch.randint(0, vocab, (n,))
    s32 = np.float32(math.sqrt(d))
    got = pt.embed(tok, w, posenc.Spec.vaswani(d), scale=math.sqrt(d), first=first)
    pe = vaswani_ref(d).rows(range(first, first + n))
    assert_bits(got, R.fmaf(s32, w.numpy()[tok.numpy()], pe), f"embed at {first}")
    orig = O.embed_with_pe(nn_embedding(w), tok, stacked_rows(range(first, first + n), d)[0])
    err = float(np.abs(f64(orig) - R.fmaf(s32, w.numpy()[tok.numpy()], pe)).max())
    assert err > ORIGINAL_FLOOR[p], err


def nn_embedding(w):
    e = torch.nn.Embedding(w.shape[0], w.shape[1])
    with torch.no_grad():
        e.weight.copy_(w)
    return e


def test_scaled_embedding_loads_original_checkpoint():
    orig = O.ScaledEmbeddingWithPE(10, 8)
    new = pt.ScaledEmbeddingWithPE(10, 8)
    new.load_state_dict(orig.state_dict())
    assert_bits(new.embedding.weight, orig.embedding.weight, "embedding")
