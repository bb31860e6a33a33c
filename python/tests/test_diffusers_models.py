"""posenc.torch inside diffusers' own Flux transformer (skipped where diffusers is not installed: Debian has no
diffusers package, so CI skips it; run it with diffusers on the path, e.g. a checkout's src/). The swap is the one
docs/python.md gives: the module's apply_rotary_emb and the model's pos_embed. A small random
FluxTransformer2DModel runs its forward with and without them: the attention processors must call posenc's
apply_rotary_emb for q and k of every block, and the output must agree with diffusers' within the rotation's
rounding (float32: diffusers' expression is within 2^-23 (|x cos| + |x' sin|) of posenc's correctly rounded
values; bf16: a q or k element an ulp apart now and then)."""
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("diffusers")
from diffusers.models.transformers import transformer_flux as flux  # noqa: E402

import posenc.torch as pt  # noqa: E402


def _inputs(dtype):
    g = torch.Generator().manual_seed(0)
    H = W = 16
    img_ids = torch.zeros(H, W, 3)
    img_ids[..., 1] = torch.arange(H)[:, None]
    img_ids[..., 2] = torch.arange(W)[None, :]
    return dict(hidden_states=torch.randn(1, H * W, 16, generator=g).to(dtype),
                encoder_hidden_states=torch.randn(1, 12, 32, generator=g).to(dtype),
                pooled_projections=torch.randn(1, 32, generator=g).to(dtype), timestep=torch.tensor([0.5]),
                img_ids=img_ids.reshape(-1, 3), txt_ids=torch.zeros(12, 3), return_dict=False)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_flux_transformer_with_posenc_rope(monkeypatch, dtype):
    torch.manual_seed(0)
    model = flux.FluxTransformer2DModel(patch_size=1, in_channels=16, num_layers=2, num_single_layers=2,
                                        attention_head_dim=64, num_attention_heads=4, joint_attention_dim=32,
                                        pooled_projection_dim=32, axes_dims_rope=(8, 28, 28)).eval().to(dtype)
    args = _inputs(dtype)
    with torch.no_grad():
        ref = model(**args)[0]
    calls = []

    original = flux.apply_rotary_emb

    def counted(x, freqs, **k):  # each call against diffusers' own on the same q or k and tables
        calls.append(k.get("sequence_dim"))
        out, theirs = pt.apply_rotary_emb(x, freqs, **k), original(x, freqs, **k)
        # |cos|, |sin| <= 1: diffusers' float32 value is within 2^-23 * 2 max|x| of the exact one; bf16 rounds
        # both to a neighbour at most
        bound = (2.0 ** -22 if dtype == torch.float32 else 2.0 ** -7) * float(x.float().abs().max())
        assert float((out.float() - theirs.float()).abs().max()) <= bound
        return out
    monkeypatch.setattr(flux, "apply_rotary_emb", counted)
    monkeypatch.setattr(model, "pos_embed", pt.FluxPosEmbed(10000, list(model.pos_embed.axes_dim)))
    with torch.no_grad():
        got = model(**args)[0]
    assert calls == [1] * 8  # q and k of 2 double-stream and 2 single-stream blocks, [B, S, H, D]
    assert got.shape == ref.shape and got.dtype == ref.dtype
    # one rounding of q or k that differs (bf16: an ulp of 2^-8) moves the output by about that much
    tol = 1e-5 if dtype == torch.float32 else 2.0 ** -7
    assert float((got.float() - ref.float()).abs().max()) <= tol * float(ref.float().abs().max())
