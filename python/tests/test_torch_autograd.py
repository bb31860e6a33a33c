"""Autograd through posenc.torch: tables and cos/sin are constants; x + pe passes the gradient to x (and LSPE to
its FFN); ScaledEmbeddingWithPE to the embedding weight as the original does; apply_rotary's backward is the
transpose of the rotation (the rotation by the opposite angle with the same float cos and the negated sin).

Why torch.autograd.gradcheck in double does not apply to the fused kernels directly: posenc's rotation and
fused add / embedding take float32 / bfloat16 / float16 only (double raises TypeError, checked below), and
gradcheck's finite differences need double (an eps of 1e-6 is below float32's resolution for values near 1).
So gradcheck runs where double applies: posenc.torch's HF-path functions (rotate_half, apply_rotary_pos_emb)
with posenc's cos/sin as constants, LSPE's FFN with double parameters, the PE modules' x + pe path for double
x. The float32 rotation is checked instead against the analytic transpose: its backward equals, bit for bit,
the double-precision gradient of HF's formula with the same (exact) cos/sin rounded once, and the
vector-Jacobian product satisfies <J u, v> = <u, J^T v> to the rounding of the two float32 results.
"""
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import posenc  # noqa: E402
import posenc.torch as pt  # noqa: E402
from torch.nn.utils import stateless  # noqa: E402

import mpfr_ref as R  # noqa: E402
import originals as O  # noqa: E402
from test_torch_support import U, assert_bits, assert_within, bits, f64, head_dim  # noqa: E402


def cfg(name):
    return O.original_configs()[name]


# ---- constants ---------------------------------------------------------------------------------------------

def test_tables_and_cos_sin_are_constants():
    with torch.enable_grad():
        for t in (pt.table(8, 4), pt.rows(8, torch.tensor([1, 2])), *pt.rope_cache(posenc.Rope(8), torch.arange(3)),
                  pt.SinusoidalPositionalEmbedding.get_embedding(10, 8, 1)):
            assert not t.requires_grad and t.grad_fn is None
        x = torch.randn(1, requires_grad=True)
        for name in ("llama2_7b", "phi3_mini_128k", "dynamic_llama2_7b_x2"):
            cos, sin = pt.RotaryEmbedding(cfg(name))(x, torch.tensor([[0, 5000]]))
            assert not cos.requires_grad and cos.grad_fn is None and not sin.requires_grad
        for m in (pt.PositionalEncoding(8), pt.PositionalEncodingBatchFirst(8),
                  pt.LearnableSinusoidalPositionalEncoding(8)):
            assert not m.pe.requires_grad and all(p is not m.pe for p in m.parameters())
        fs = pt.SinusoidalPositionalEmbedding(8, 1)
        assert list(fs.parameters()) == []
        y = fs(torch.tensor([[5, 6, 1]]))
        assert not y.requires_grad and y.grad_fn is None
        y = pt.PositionalEncoding(8, dropout=0.0)(torch.randn(3, 1, 8))  # x without grad: no graph either
        assert not y.requires_grad and y.grad_fn is None


# ---- x + pe ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("orig_cls,new_cls", [(O.PositionalEncoding, pt.PositionalEncoding),
                                              (O.PositionalEncodingBatchFirst, pt.PositionalEncodingBatchFirst)])
@pytest.mark.parametrize("train", [False, True])
def test_pe_modules_backward(orig_cls, new_cls, train):
    """d(x + pe)/dx = I; with dropout (train) the original's mask and scale: the gradients are the original's,
    bit for bit (the same RNG draws)."""
    d = 32
    orig, new = orig_cls(d, dropout=0.25, max_len=50), new_cls(d, dropout=0.25, max_len=50)
    orig.train(train)
    new.train(train)
    x = torch.randn(40, 3, d)
    g = torch.randn(40, 3, d)
    grads = []
    for m in (orig, new):
        xi = x.clone().requires_grad_()
        torch.manual_seed(9)
        y = m(xi)
        assert y.requires_grad and y.grad_fn is not None
        y.backward(g)
        grads.append(xi.grad)
    assert_bits(grads[1], grads[0], "x.grad")
    if not train:
        assert_bits(grads[1], g, "identity")


def test_add_backward_scale():
    x = torch.randn(5, 16, requires_grad=True)
    g = torch.randn(5, 16)
    pt.add(x, 16, scale=2.5).backward(g)
    assert_bits(x.grad, (g * 2.5).numpy(), "scale * g")
    xs = torch.randn(3, 4, 16, requires_grad=True)  # seq_first
    pt.add(xs, 16, seq_first=True).backward(torch.ones(3, 4, 16))
    assert (xs.grad == 1).all()


@pytest.mark.parametrize("cls", [pt.PositionalEncoding, pt.PositionalEncodingBatchFirst])
def test_pe_modules_gradcheck_double(cls):
    """x in double takes the module's x + pe expression (the exact buffer): gradcheck applies."""
    m = cls(6, dropout=0.0, max_len=10)
    x = torch.randn(4, 2, 6, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(m, (x,))


# ---- LSPE --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("batch_first", [False, True])
def test_lspe_backward_as_original(batch_first):
    """With the original's checkpoint the gradients to x and to every FFN parameter are the original's, bit for
    bit; with posenc's exact table, the gradient to x is still g (x + ffn(pe)) and the FFN gets one."""
    d, seq = 16, 20
    torch.manual_seed(2)
    orig = O.LearnableSinusoidalPositionalEncoding(d, 0.0, 64, batch_first=batch_first)
    new = pt.LearnableSinusoidalPositionalEncoding(d, 0.0, 64, batch_first=batch_first)
    new.load_state_dict(orig.state_dict())
    x = torch.randn(3, seq, d) if batch_first else torch.randn(seq, 3, d)
    g = torch.randn(x.shape)
    xs = []
    for m in (orig, new):
        xi = x.clone().requires_grad_()
        m(xi).backward(g)
        xs.append(xi.grad)
    assert_bits(xs[1], xs[0], "x.grad")
    assert_bits(xs[1], g, "x.grad = g")
    for (n1, p1), (n2, p2) in zip(orig.named_parameters(), new.named_parameters()):
        assert n1 == n2 and p2.grad is not None
        assert_bits(p2.grad, p1.grad, n1 + ".grad")
    assert new.pe.grad is None


def test_lspe_gradcheck_double():
    """gradcheck over x and the four FFN parameters, in double (the FFN over the exact table)."""
    d = 6
    m = pt.LearnableSinusoidalPositionalEncoding(d, 0.0, 12, d_hid=5).double()
    assert m.pe.dtype == torch.float64
    names = [n for n, _ in m.named_parameters()]
    params = tuple(p.detach().clone().requires_grad_() for _, p in m.named_parameters())
    x = torch.randn(7, 2, d, dtype=torch.float64, requires_grad=True)

    def f(x, *ps):
        return stateless.functional_call(m, dict(zip(names, ps)), (x,))

    assert torch.autograd.gradcheck(f, (x, *params))


# ---- ScaledEmbeddingWithPE ------------------------------------------------------------------------------------

@pytest.mark.parametrize("padding_idx", [None, 0])
@pytest.mark.parametrize("repeats", [False, True])
def test_scaled_embedding_weight_grad(padding_idx, repeats):
    """d out / d weight[t] = sqrt(d) once per occurrence of t, nothing to padding_idx's row. Tokens without
    repeats: the original's gradient bit for bit. With repeats each row's gradient is a float32 sum of its
    k terms RN(g sqrt d) in an order that may differ: |difference| <= 2 gamma_(k-1) sum |terms|."""
    vocab, d = 40, 24
    torch.manual_seed(6)
    orig = O.ScaledEmbeddingWithPE(vocab, d, 64, padding_idx)
    new = pt.ScaledEmbeddingWithPE(vocab, d, 64, padding_idx)
    new.embedding.load_state_dict(orig.embedding.state_dict())
    tok = torch.randint(0, vocab, (3, 30)) if repeats else torch.randperm(vocab)[:30].view(2, 15)
    tok[0, 0] = 0
    g = torch.randn(*tok.shape, d)
    orig(tok).backward(g)
    new(tok).backward(g)
    go, gn = orig.embedding.weight.grad, new.embedding.weight.grad
    assert gn.shape == go.shape and gn.dtype == torch.float32
    if padding_idx is not None:
        assert (bits(gn[padding_idx]) == 0).all() and (bits(go[padding_idx]) == 0).all()
    if not repeats:
        assert_bits(gn, go, "weight.grad")
        return
    terms = f64(g.reshape(-1, d) * math.sqrt(d))  # RN(g s), as both compute it
    ids = tok.reshape(-1).numpy()
    keep = ids != (padding_idx if padding_idx is not None else -1)
    k = np.bincount(ids[keep], minlength=vocab)[:, None]
    mag = np.zeros((vocab, d))
    np.add.at(mag, ids[keep], np.abs(terms[keep]))
    gamma = np.maximum(k - 1, 0) * U / (1 - np.maximum(k - 1, 0) * U)
    exact = np.zeros((vocab, d))
    np.add.at(exact, ids[keep], terms[keep])
    assert_within(f64(gn), exact, gamma * mag, "posenc's sum")
    assert_within(f64(gn), f64(go), 2 * gamma * mag, "vs the original's sum")


# ---- apply_rotary ------------------------------------------------------------------------------------------

def exact_cos_sin64(rope, pos, r):
    """posenc's exact float32 cos/sin (HF layout, cat of the halves), widened to double: the constants of the
    double-precision reference."""
    cos, sin = pt.rope_cache(rope, pos)
    h = rope.rotary_dim // 2
    cos[..., h:], sin[..., h:] = cos[..., :h], sin[..., :h]
    return cos.double(), sin.double()


def reference_grads(q0, k0, gq, gk, rope, pos, unsqueeze_dim):
    """The gradient of sum(gq q') + sum(gk k') through HF's apply_rotary_pos_emb in double with posenc's cos/sin
    (a partial rotary_dim rotates the first r elements, the rest passes through): double values (the products
    of float32 / bf16 values are exact in double, then one double rounding per sum)."""
    r = rope.rotary_dim
    cos, sin = exact_cos_sin64(rope, pos, r)
    q = q0.detach().double().requires_grad_()
    k = k0.detach().double().requires_grad_()
    qr, kr = O.apply_rotary_pos_emb(q[..., :r], k[..., :r], cos, sin, unsqueeze_dim=unsqueeze_dim)
    qo, ko = torch.cat([qr, q[..., r:]], -1), torch.cat([kr, k[..., r:]], -1)
    ((qo * gq.double()).sum() + (ko * gk.double()).sum()).backward()
    return q.grad.numpy(), k.grad.numpy()


def rounded(a, dtype):
    """float64 values rounded once to dtype: float32 array, or bf16 / f16 bit patterns."""
    if dtype == torch.float32:
        return np.asarray(a, np.float64).astype(np.float32)
    return R.narrow_from_double(a, "bf16" if dtype == torch.bfloat16 else "f16")


@pytest.mark.parametrize("unsqueeze_dim", [1, 2])
@pytest.mark.parametrize("name,hq,hk,dtype", [("llama2_7b", 4, 4, torch.float32),
                                              ("qwen2_7b_yarn", 4, 2, torch.float32),
                                              ("gpt_neox_20b", 2, 2, torch.float32),
                                              ("llama3_1_8b", 4, 1, torch.bfloat16),
                                              ("phi3_mini_128k", 2, 2, torch.float16)])
def test_apply_rotary_backward_is_the_transpose(name, hq, hk, dtype, unsqueeze_dim):
    """q.grad / k.grad through the fused in-place rotation equal the double-precision gradient of HF's formula
    with the same cos/sin, rounded once to the tensor's format: bit for bit (the backward is the transposed
    rotation, x c + y s / y c - x s, with one rounding as the forward)."""
    torch.manual_seed(8)
    rope = pt.RotaryEmbedding(cfg(name)).rope
    hd = head_dim(cfg(name))
    b, s = 2, 12
    pos = torch.stack([torch.arange(s), torch.randint(0, 1 << 20, (s,))])
    shape = (lambda H: (b, H, s, hd)) if unsqueeze_dim == 1 else (lambda H: (b, s, H, hd))
    q0 = torch.randn(shape(hq)).to(dtype).requires_grad_()
    k0 = torch.randn(shape(hk)).to(dtype).requires_grad_()
    gq, gk = torch.randn(shape(hq)).to(dtype), torch.randn(shape(hk)).to(dtype)
    q, k = q0.clone(), k0.clone()  # in place on non-leaf tensors, as after a projection
    rq, rk = pt.apply_rotary(q, k, pos, rope, unsqueeze_dim=unsqueeze_dim)
    assert rq is q and rk is k and q.grad_fn is not None
    ((q * gq).sum() + (k * gk).sum()).backward() if dtype == torch.float32 else \
        torch.autograd.backward([q, k], [gq, gk])
    wq, wk = reference_grads(q0, k0, gq, gk, rope, pos, unsqueeze_dim)
    assert_bits(q0.grad, rounded(wq, dtype), "q.grad")
    assert_bits(k0.grad, rounded(wk, dtype), "k.grad")
    if rope.rotary_dim < hd:  # the pass-through part: the identity
        assert_bits(q0.grad[..., rope.rotary_dim:], gq[..., rope.rotary_dim:], "pass-through grad")


def test_apply_rotary_backward_k_only():
    """Only k requires a gradient (q is rotated in place too, without one)."""
    rope = posenc.Rope.llama2()
    pos = torch.arange(6).unsqueeze(0)
    q = torch.randn(1, 2, 6, 128)
    k0 = torch.randn(1, 2, 6, 128, requires_grad=True)
    k = k0.clone()
    gk = torch.randn(k.shape)
    q_before = q.clone()
    pt.apply_rotary(q, k, pos, rope)
    assert not torch.equal(q, q_before)
    k.backward(gk)
    _, wk = reference_grads(q_before, k0, torch.zeros_like(q), gk, rope, pos, 1)
    assert_bits(k0.grad, rounded(wk, torch.float32), "k.grad")


def test_apply_rotary_vjp_against_the_analytic_transpose():
    """<J u, v> = <u, J^T v> for the float32 rotation J (the rotation with the float cos/sin, a linear map):
    J u from the forward, J^T v from the backward, both rounded once per element (|err| <= U |value|), the
    dot products in double (their own error is below 1e-12 here). Also J^T J u = m^2 u up to the roundings
    (for the Llama 2 rope m = 1: the backward is the inverse rotation)."""
    rope = posenc.Rope.llama2()
    torch.manual_seed(12)
    pos = torch.randint(0, 2 ** 31 - 1, (1, 64))
    u = torch.randn(1, 4, 64, 128)
    v = torch.randn(1, 4, 64, 128)
    ju = u.clone()
    pt.apply_rotary(ju, None, pos, rope)
    u_leaf = u.clone().requires_grad_()
    x = u_leaf.clone()
    pt.apply_rotary(x, None, pos, rope)
    x.backward(v)
    jtv = u_leaf.grad
    lhs = float(np.sum(f64(ju) * f64(v)))
    rhs = float(np.sum(f64(u) * f64(jtv)))
    bound = U * (np.sum(np.abs(f64(ju) * f64(v))) + np.sum(np.abs(f64(u) * f64(jtv)))) + 1e-12
    assert abs(lhs - rhs) <= bound, (lhs, rhs, bound)
    # J^T (J u) = u (orthogonal J): two roundings of values of |u|'s size
    x2 = ju.clone().requires_grad_()
    y = x2.clone()
    pt.apply_rotary(y, None, pos, rope)
    y.backward(ju)
    assert_within(f64(x2.grad), f64(u), 3 * U * (np.abs(f64(u)) + np.abs(f64(ju))).max(), "J^T J u = u")


def test_hf_path_gradcheck_double_with_posenc_cos_sin():
    """posenc.torch.apply_rotary_pos_emb / rotate_half (HF's path, elementwise in the tensors' dtype) in double,
    with RotaryEmbedding's cos/sin (x double: the exact float32 values widened) as constants: gradcheck."""
    emb = pt.RotaryEmbedding(cfg("qwen2_7b_yarn"))
    pos = torch.tensor([[0, 3, 4095], [131072, 2 ** 20, 7]])
    q = torch.randn(2, 2, 3, 128, dtype=torch.float64, requires_grad=True)
    k = torch.randn(2, 1, 3, 128, dtype=torch.float64, requires_grad=True)
    cos, sin = emb(q, pos)
    assert cos.dtype == torch.float64 and not cos.requires_grad
    assert torch.autograd.gradcheck(lambda a, b: pt.apply_rotary_pos_emb(a, b, cos, sin), (q, k))
    qt = torch.randn(2, 3, 2, 128, dtype=torch.float64, requires_grad=True)  # unsqueeze_dim=2 layout
    assert torch.autograd.gradcheck(lambda a: pt.apply_rotary_pos_emb(a, a, cos, sin, unsqueeze_dim=2)[0], (qt,))


def test_fused_kernels_refuse_double():
    """Why gradcheck in double cannot run on the fused rotation / add / embedding: they refuse double."""
    with pytest.raises(TypeError):
        pt.apply_rotary(torch.zeros(1, 1, 2, 128, dtype=torch.float64, requires_grad=True) * 1, None,
                        torch.arange(2).unsqueeze(0), posenc.Rope.llama2())
    with pytest.raises(TypeError):
        pt.add(torch.zeros(2, 8, dtype=torch.float64, requires_grad=True), 8)
    with pytest.raises(TypeError):
        pt.embed(torch.tensor([1]), torch.zeros(3, 8, dtype=torch.float64, requires_grad=True), 8)


# apply_rotary with autograd on views (HF's q_proj(h).view(b, s, H, hd).transpose(1, 2), fused QKV views):
# one single-output Function per tensor (a Function that modifies a view in place may return only one).


def test_apply_rotary_backward_through_hf_views():
    rope = posenc.Rope.llama2()
    b, s, H, hd = 2, 5, 2, 128
    lin = torch.nn.Linear(16, H * hd)
    h = torch.randn(b, s, 16, requires_grad=True)
    q = lin(h).view(b, s, H, hd).transpose(1, 2)  # HF: a view
    pos = torch.arange(s).unsqueeze(0).expand(b, s)
    pt.apply_rotary(q, None, pos, rope)
    gq = torch.randn(q.shape)
    q.backward(gq)
    # reference: the same through HF's formula in double (cos/sin exact), the Linear's gradient in float32
    h2 = h.detach().clone().requires_grad_()
    q2 = lin(h2).view(b, s, H, hd).transpose(1, 2)
    cos, sin = exact_cos_sin64(rope, pos, 128)
    qr, _ = O.apply_rotary_pos_emb(q2.double(), q2.double(), cos, sin)
    qr.float().backward(gq)
    assert_within(f64(h.grad), f64(h2.grad), 1e-5 * np.abs(f64(h2.grad)).max(), "h.grad")


def test_apply_rotary_backward_fused_qkv():
    rope = posenc.Rope.llama2()
    b, s, H, hd = 1, 4, 2, 128
    x = torch.randn(b, s, 3 * H * hd, requires_grad=True)
    qkv = (x * 1).view(b, s, 3, H, hd)
    q, k = qkv[:, :, 0], qkv[:, :, 1]
    pos = torch.arange(s).unsqueeze(0)
    pt.apply_rotary(q, k, pos, rope, unsqueeze_dim=2)
    g = torch.randn(qkv.shape)
    qkv.backward(g)
    gv = x.grad.view(b, s, 3, H, hd)
    assert_bits(gv[:, :, 2], g[:, :, 2], "v's gradient passes through")
    wq, wk = reference_grads(torch.zeros(b, s, H, hd), torch.zeros(b, s, H, hd), g[:, :, 0], g[:, :, 1], rope, pos, 2)
    assert_bits(gv[:, :, 0], rounded(wq, torch.float32), "q part")
    assert_bits(gv[:, :, 1], rounded(wk, torch.float32), "k part")
