"""Bad input through posenc.torch: wrong device, dtype or shape raises a clear error (a TypeError / ValueError /
posenc.Error naming the argument), and the tensors given stay bit for bit as they were."""
import pytest

torch = pytest.importorskip("torch")

import posenc  # noqa: E402
import posenc.torch as pt  # noqa: E402

import originals as O  # noqa: E402
from test_torch_support import assert_bits  # noqa: E402

ROPE = posenc.Rope.llama2()


def qk(b=2, hq=2, hk=1, s=3, hd=128, dtype=torch.float32):
    torch.manual_seed(0)
    return torch.randn(b, hq, s, hd).to(dtype), torch.randn(b, hk, s, hd).to(dtype)


def pos(b=2, s=3):
    return torch.arange(s).unsqueeze(0).expand(b, s)


def untouched(*ts):
    saved = [t.detach().clone() for t in ts]

    def check():
        for t, s in zip(ts, saved):
            assert_bits(t, s, "left untouched")
    return check


# ---- apply_rotary ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("case", ["head_dim", "k_head_dim", "k_dtype", "double", "int", "meta", "last_axis",
                                  "positions_len", "k_tokens", "k_batch", "out_of_range", "overlap", "rank5"])
def test_apply_rotary_bad_input(case, grad):
    q, k = qk()
    p = pos()
    want = {"head_dim": (ValueError, "shorter than rotary_dim"), "k_head_dim": (ValueError, "shorter than rotary_dim"),
            "k_dtype": (TypeError, "same dtype"), "double": (TypeError, "float64"), "int": (TypeError, "int32"),
            "meta": (TypeError, "CPU"), "last_axis": (ValueError, "contiguous"),
            "positions_len": (ValueError, "positions"), "k_tokens": (ValueError, "token counts"),
            "k_batch": (ValueError, "batch"), "out_of_range": (IndexError, "out of range"),
            "overlap": (posenc.InvalidArgument, "invalid"), "rank5": (ValueError, "dimensions")}[case]
    if case == "head_dim":
        q = torch.randn(2, 2, 3, 64)  # head_dim 64 < rotary_dim 128
    elif case == "k_head_dim":
        k = torch.randn(2, 1, 3, 96)
    elif case == "k_dtype":
        k = k.to(torch.bfloat16)
    elif case == "double":
        q, k = q.double(), k.double()
    elif case == "int":
        q = q.to(torch.int32)
    elif case == "meta":
        q = torch.empty(2, 2, 3, 128, device="meta")
    elif case == "last_axis":
        q = torch.randn(2, 2, 128, 3).transpose(-1, -2)
    elif case == "positions_len":
        p = pos(2, 4)
    elif case == "k_tokens":
        k = torch.randn(2, 1, 4, 128)
    elif case == "k_batch":
        k = torch.randn(1, 1, 3, 128)
    elif case == "out_of_range":
        p = torch.tensor([[0, 1, 2], [0, 1, 2 ** 31]])  # the second batch row: nothing written in the first either
    elif case == "overlap":
        k = q
    elif case == "rank5":
        q = torch.randn(1, 2, 2, 3, 128)
    if grad and q.dtype.is_floating_point and q.device.type == "cpu":
        q = q.clone().requires_grad_() * 1  # non-leaf tensors requiring grad: the autograd path
        k = k.clone().requires_grad_() * 1 if case != "overlap" else q
    check = untouched(*[t for t in (q, k) if t.device.type == "cpu"])
    with pytest.raises(want[0], match=want[1]):
        pt.apply_rotary(q, k, p, ROPE)
    check()


def test_apply_rotary_module_partial_head():
    """RotaryEmbedding.apply_rotary with heads shorter than its rotary_dim (GPT-NeoX: 24 of 96 is fine, 16 not)."""
    emb = pt.RotaryEmbedding(O.original_configs()["gpt_neox_20b"])
    q = torch.randn(1, 2, 3, 16)
    check = untouched(q)
    with pytest.raises(ValueError, match="rotary_dim 24"):
        emb.apply_rotary(q, None, pos(1))
    check()


def test_apply_rotary_leaf_requiring_grad_untouched():
    q, _ = qk()
    q.requires_grad_()
    check = untouched(q)
    with pytest.raises(RuntimeError, match="leaf"):
        pt.apply_rotary(q, None, pos(), ROPE)
    check()


# ---- RotaryEmbedding -----------------------------------------------------------------------------------------

def test_rotary_embedding_device():
    """HF builds its rotary on any device (model loaders start on "meta"); so does posenc's: the buffers go there,
    a device torch lacks fails as torch fails (HF's would too). test_torch_conformance covers "meta" in full."""
    emb = pt.RotaryEmbedding(O.original_configs()["llama2_7b"], device="meta")
    assert emb.inv_freq.is_meta
    if not torch.cuda.is_available():
        with pytest.raises((AssertionError, RuntimeError)):
            pt.RotaryEmbedding(O.original_configs()["llama2_7b"], device="cuda")


def test_rotary_forward_other_device():
    emb = pt.RotaryEmbedding(O.original_configs()["llama2_7b"])
    x = torch.empty(1, device="meta")
    cos, sin = emb(x, torch.arange(3).unsqueeze(0))
    assert cos.device == x.device and cos.shape == (1, 3, 128)


def test_rotary_embedding_bad_config():
    base = {"head_dim": 64, "rope_theta": 1e4, "max_position_embeddings": 10}
    with pytest.raises(ValueError, match="rope_type"):
        pt.RotaryEmbedding(dict(base, rope_scaling={"type": "foo"}))
    with pytest.raises(posenc.InvalidArgument):
        pt.RotaryEmbedding(dict(base, head_dim=63))
    with pytest.raises(ValueError, match="short_factor"):
        pt.RotaryEmbedding(dict(base, rope_scaling={"type": "longrope", "factor": 2.0}))
    with pytest.raises(ValueError, match="short_factor"):
        pt.RotaryEmbedding(dict(base, rope_scaling={"type": "longrope", "factor": 2.0, "short_factor": [1.0] * 5,
                                                    "long_factor": [1.0] * 32}))


# ---- tables, add, embed ------------------------------------------------------------------------------------

def test_table_and_rows_bad_input_leave_out_untouched():
    out = torch.full((3, 8), 7.0)
    check = untouched(out)
    with pytest.raises(IndexError):
        pt.table(8, 3, 2 ** 31 - 2, out=out)  # the last row past 2^31 - 1
    with pytest.raises(ValueError, match="shape"):
        pt.table(8, 3, out=torch.full((3, 6), 7.0))
    with pytest.raises(TypeError, match="float64"):
        pt.table(8, 3, dtype=torch.float64)
    with pytest.raises(TypeError, match="CPU"):
        pt.table(8, 3, out=torch.empty(3, 8, device="meta"))
    with pytest.raises(IndexError):
        pt.rows(8, torch.tensor([1, 2 ** 31, 2]), out=out)
    with pytest.raises(TypeError, match="CPU"):
        pt.rows(8, torch.tensor([1], device="meta"))
    with pytest.raises(TypeError, match="float64"):
        pt.rows(8, torch.tensor([1]), dtype=torch.float64)
    with pytest.raises(posenc.InvalidArgument):
        pt.table(posenc.Spec(8, base=-1.0), 3, out=out)
    check()


def test_add_bad_input():
    x = torch.randn(2, 3, 8)
    check = untouched(x)
    with pytest.raises(TypeError, match="float32"):
        pt.add(x.half(), 8)
    with pytest.raises(ValueError, match="d_model is 8"):
        pt.add(torch.zeros(3, 6), 8)
    with pytest.raises(IndexError):
        pt.add(x, 8, positions=torch.tensor([[0, 1, 2], [0, 1, 2 ** 31]]))
    with pytest.raises(ValueError, match="positions"):
        pt.add(x, 8, positions=torch.tensor([0, 1]))
    with pytest.raises(TypeError, match="CPU"):
        pt.add(torch.zeros(2, 8, device="meta"), 8)
    with pytest.raises(ValueError, match="contiguous"):
        pt.add(torch.zeros(8, 2).t(), 8)
    check()


def test_embed_bad_input():
    w = torch.randn(10, 8)
    check = untouched(w)
    for tok in (torch.tensor([[1, 2, 10]]), torch.tensor([[-1, 2, 3]])):
        with pytest.raises(IndexError):
            pt.embed(tok, w, 8)
        with pytest.raises(IndexError):
            pt.embed(tok, w.clone().requires_grad_(), 8)
    with pytest.raises(TypeError, match="float64"):
        pt.embed(torch.tensor([1]), w.double(), 8)
    with pytest.raises(TypeError, match="integers"):
        pt.embed(torch.tensor([1.0]), w, 8)
    with pytest.raises(ValueError, match="d_model is 8"):
        pt.embed(torch.tensor([1]), torch.zeros(3, 6), 8)
    with pytest.raises(TypeError, match="CPU"):
        pt.embed(torch.tensor([1]), torch.zeros(3, 8, device="meta"), 8)
    check()


def test_rope_cache_bad_positions():
    with pytest.raises(IndexError):
        pt.rope_cache(ROPE, torch.tensor([[0, 2 ** 31]]))
    with pytest.raises(TypeError, match="CPU"):
        pt.rope_cache(ROPE, torch.tensor([0], device="meta"))


# ---- modules -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("orig_cls,new_cls", [(O.PositionalEncoding, pt.PositionalEncoding),
                                              (O.PositionalEncodingBatchFirst, pt.PositionalEncodingBatchFirst)])
def test_pe_modules_raise_as_the_original(orig_cls, new_cls):
    """Longer than max_len, or the wrong d_model: the same exception type as the original's broadcast."""
    orig, new = orig_cls(8, 0.0, max_len=10), new_cls(8, 0.0, max_len=10)
    for shape in ((11, 11, 8), (3, 3, 6)):
        x = torch.randn(shape)
        with pytest.raises(RuntimeError) as eo:
            orig(x)
        with pytest.raises(type(eo.value)):
            new(x)


def test_pe_module_on_another_device_uses_the_buffer():
    """Moved to another device (meta here, CUDA in practice) the module takes the x + pe expression there."""
    new = pt.PositionalEncoding(8, 0.0, max_len=10).to("meta")
    y = new(torch.empty(5, 2, 8, device="meta"))
    assert y.device.type == "meta" and y.shape == (5, 2, 8)


def test_scaled_embedding_bad_tokens():
    m = pt.ScaledEmbeddingWithPE(10, 8, max_len=6, padding_idx=0)
    with pytest.raises(IndexError, match="max_len"):
        m(torch.ones(1, 7, dtype=torch.int64))
    with pytest.raises(IndexError):
        m(torch.tensor([[1, 2, 10]]))
    with pytest.raises(TypeError, match="CPU"):
        m(torch.tensor([[1, 2]], device="meta"))
    o = O.ScaledEmbeddingWithPE(10, 8, max_len=6, padding_idx=0)
    with pytest.raises(IndexError):
        o(torch.tensor([[1, 2, 10]]))  # the original's nn.Embedding raises IndexError too
