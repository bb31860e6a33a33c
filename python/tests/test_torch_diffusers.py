"""posenc.torch's diffusers drop-ins (get_1d_rotary_pos_embed, FluxPosEmbed, WanRotaryPosEmbed) against
diffusers' code re-typed in originals_diffusers.py (diffusers 0.40.0.dev0, 58eb52c0): the same shapes, dtypes and layouts; at integer positions every value is the correctly rounded
float32 of the exact angle (gmpy2 reference built from frequencies computed here, not by posenc), which
diffusers' float64 path agrees with to one float32 ulp; at fractional positions (CogVideoX 1.0's linspace,
LTX's scaled grids) the same: the correctly rounded float32 of the position as diffusers holds it times the
exact frequency (posenc's real-valued positions). apply_rotary_emb: every element the correctly rounded
float32 of x cos + x' sin from the given tables (gmpy2, planted float32 midpoints included), in every layout
diffusers accepts, then x's dtype; what the C call does not take runs diffusers' expression."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
import posenc.torch as pt  # noqa: E402
import mpfr_ref as R  # noqa: E402
from mpfr_ref import gmpy2, mpfr  # noqa: E402
import originals_diffusers as D  # noqa: E402
from originals_diffusers import DiffusersFluxPosEmbed, DiffusersWanRotaryPosEmbed, diffusers_get_1d  # noqa: E402


# ---- the exact reference -----------------------------------------------------------------------------------

def exact_tables(axes_dim, theta, positions):
    """(cos, sin) [n, sum(axes_dim)/2] float32: pair k of axis a at theta^(-2k/d_a) (the double nearest, computed
    here in gmpy2), correctly rounded cos / sin of p * f at the token's position on that axis."""
    freq, axis = [], []
    with R.ctx(R.PREC):
        for a, d in enumerate(axes_dim):
            for k in range(d // 2):
                freq.append(float(gmpy2.exp(gmpy2.log(mpfr(theta)) * (-2 * k) / d)))
                axis.append(a)
    return exact_explicit(freq, axis, positions)


def exact_explicit(freq, axis, positions):
    """(cos, sin) [n, len(freq)] float32: pair i at frequency freq[i] (doubles) and the position of axis axis[i]
    (integers or doubles, [A, n]), correctly rounded cos / sin of the exact product (gmpy2)."""
    ref = R.RopeRef(2 * len(freq), 10000.0, 1.0, freq, 1.0, 1)
    pos = np.asarray(positions, dtype=np.float64).reshape(max(axis) + 1, -1)
    n = pos.shape[1]
    cos = np.zeros((n, len(freq)), np.float32)
    sin = np.zeros((n, len(freq)), np.float32)
    for t in range(n):
        for i, a in enumerate(axis):
            cos[t, i], sin[t, i] = ref.pair(i, float(pos[a, t]))
    return torch.from_numpy(cos), torch.from_numpy(sin)


def ulps(a, b, floor=2.0 ** -126):
    """Largest distance in float32 ulps of the larger magnitude (floored at `floor`) between two tables."""
    a, b = a.double(), b.double()
    unit = torch.clamp(torch.maximum(a.abs(), b.abs()), min=floor) * 2.0 ** -23
    return float(((a - b).abs() / unit).max())


def flux_ids(text, rows, cols, first=0.0):
    txt = torch.zeros(text, 3)
    img = torch.zeros(rows, cols, 3)
    img[..., 0] = first
    img[..., 1] = img[..., 1] + torch.arange(rows)[:, None]
    img[..., 2] = img[..., 2] + torch.arange(cols)[None, :]
    return torch.cat((txt, img.reshape(rows * cols, 3)), dim=0)


def test_flux_pos_embed_exact_and_as_diffusers():
    ids = flux_ids(5, 12, 10, first=1.0)  # Flux Kontext's reference image has 1 in the first column
    mine, theirs = pt.FluxPosEmbed(10000, [16, 56, 56]), DiffusersFluxPosEmbed(10000, [16, 56, 56])
    assert (mine.theta, mine.axes_dim) == (10000, [16, 56, 56])
    assert list(mine.state_dict()) == list(theirs.state_dict()) == []
    c, s = mine(ids)
    dc, ds = theirs(ids)
    assert c.shape == dc.shape == (125, 128) and c.dtype == dc.dtype == torch.float32
    ec, es = exact_tables([16, 56, 56], 10000.0, ids.t().long())
    assert torch.equal(c, ec.repeat_interleave(2, dim=1)) and torch.equal(s, es.repeat_interleave(2, dim=1))
    assert ulps(c, dc) <= 1 and ulps(s, ds) <= 1
    c3, _ = mine(ids[None])  # 3-D ids: diffusers reads ids[0]
    assert torch.equal(c3, c)


def test_flux_at_1024_is_where_diffusers_float32_path_loses():
    """Flux's 1024 x 1024 image: 64 x 64 latent patches and 512 text tokens. diffusers' float64 path (CPU)
    agrees with the exact values to 1 ulp; its float32 path (MPS) is off by far more at the large angles."""
    ids = flux_ids(512, 64, 64)
    c, s = pt.FluxPosEmbed(10000, [16, 56, 56])(ids)
    rows = [0, 511, 512, 600, 4607]
    ec, es = exact_tables([16, 56, 56], 10000.0, ids[rows].t().long())
    assert torch.equal(c[rows], ec.repeat_interleave(2, dim=1))
    assert torch.equal(s[rows], es.repeat_interleave(2, dim=1))
    dc, ds = DiffusersFluxPosEmbed(10000, [16, 56, 56])(ids)
    assert ulps(c, dc) <= 1 and ulps(s, ds) <= 1


def test_get_1d_rotary_pos_embed_layouts_and_values():
    """Shapes and dtypes as diffusers' for each flag; values within 1 float32 ulp of diffusers' float64 path
    (its float32 path, the default freqs_dtype, is off by up to 167 ulps here: 2^-24 |p f| at p up to 300)."""
    for kwargs in ({}, {"use_real": True}, {"use_real": True, "repeat_interleave_real": False},
                   {"use_real": True, "linear_factor": 2.0}, {"use_real": True, "ntk_factor": 3.0},
                   {"freqs_dtype": torch.float64}, {"use_real": True, "freqs_dtype": torch.float64}):
        for pos in (37, np.arange(5, 40, 3), torch.arange(100, 300, 7), np.arange(5.0, 40.0, 3.0)):
            mine = pt.get_1d_rotary_pos_embed(32, pos, 10000.0, **kwargs)
            theirs = diffusers_get_1d(32, pos, 10000.0, **kwargs)
            precise = diffusers_get_1d(32, pos, 10000.0, **dict(kwargs, freqs_dtype=torch.float64))
            if isinstance(mine, tuple):
                assert all(m.shape == t.shape and m.dtype == t.dtype for m, t in zip(mine, theirs)), kwargs
                assert max(ulps(m, t) for m, t in zip(mine, precise)) <= 1, kwargs
            else:
                assert mine.shape == theirs.shape and mine.dtype == theirs.dtype, kwargs
                if mine.dtype == torch.complex64:
                    assert ulps(mine.real, precise.real) <= 1 and ulps(mine.imag, precise.imag) <= 1, kwargs
                else:  # complex128: the double path is diffusers' computation with float64 frequencies
                    assert float((mine - precise).abs().max()) <= 2 ** -40, kwargs
    # the exact values, at integer positions, with ntk_factor's double product as the base
    cos, sin = pt.get_1d_rotary_pos_embed(24, torch.tensor([0, 1, 99, 4095, 2 ** 20]), 10000.0, use_real=True,
                                          ntk_factor=3.0, repeat_interleave_real=False)
    ec, es = exact_tables([24], 10000.0 * 3.0, [[0, 1, 99, 4095, 2 ** 20]])
    assert torch.equal(cos[:, :12], ec) and torch.equal(cos[:, 12:], ec) and torch.equal(sin[:, :12], es)


def test_get_1d_fractional_positions_are_exact():
    """CogVideoX 1.0's linspace grids: fractional float32 positions, each cos / sin the correctly rounded float32
    of that position (exact in double) times the exact frequency; diffusers' float64 path within 1 ulp."""
    grid = torch.linspace(0, 30 * (45 - 1) / 45, 45, dtype=torch.float32)
    mine = pt.get_1d_rotary_pos_embed(24, grid, use_real=True)
    theirs = diffusers_get_1d(24, grid, use_real=True, freqs_dtype=torch.float64)
    assert ulps(mine[0], theirs[0]) <= 1 and ulps(mine[1], theirs[1]) <= 1
    ec, es = exact_tables([24], 10000.0, [grid.double().tolist()])
    assert torch.equal(mine[0], ec.repeat_interleave(2, dim=1)) and torch.equal(mine[1], es.repeat_interleave(2, dim=1))
    # a large fractional position (2^20 + 0.375), where the double angle of diffusers' float64 path has lost bits
    g = torch.Generator().manual_seed(5)
    far = torch.cat([torch.tensor([2.0 ** 20 + 0.375, -12345.5], dtype=torch.float64),
                     torch.rand(254, generator=g, dtype=torch.float64) * 2.0 ** 30])
    c, s = pt.get_1d_rotary_pos_embed(16, far, use_real=True, repeat_interleave_real=False)
    ec, es = exact_tables([16], 10000.0, [far.tolist()])
    assert torch.equal(c[:, :8], ec) and torch.equal(s[:, 8:], es)
    with pytest.raises(ValueError, match="not finite"):
        pt.get_1d_rotary_pos_embed(8, torch.tensor([1.5, float("nan")]), use_real=True)


def test_wan_rotary_pos_embed():
    mine, theirs = pt.WanRotaryPosEmbed(128, (1, 2, 2), 1024), DiffusersWanRotaryPosEmbed(128, (1, 2, 2), 1024)
    assert (mine.t_dim, mine.h_dim, mine.w_dim) == (theirs.t_dim, theirs.h_dim, theirs.w_dim) == (44, 42, 42)
    assert list(mine.state_dict()) == list(theirs.state_dict()) == []
    assert mine.freqs_cos.shape == theirs.freqs_cos.shape == (1024, 128)
    assert ulps(mine.freqs_cos, theirs.freqs_cos) <= 1 and ulps(mine.freqs_sin, theirs.freqs_sin) <= 1
    x = torch.zeros(1, 16, 21, 60, 104)  # Wan 480p, 81 frames: 21 latent frames of 60 x 104, patches 1 x 2 x 2
    c, s = mine(x)
    dc, ds = theirs(x)
    assert c.shape == dc.shape == (1, 21 * 30 * 52, 1, 128) and c.dtype == torch.float32
    assert ulps(c, dc) <= 1 and ulps(s, ds) <= 1
    tokens = [0, 1, 52, 30 * 52, 21 * 30 * 52 - 1]
    pos = [[t // (30 * 52) for t in tokens], [t // 52 % 30 for t in tokens], [t % 52 for t in tokens]]
    ec, es = exact_tables([44, 42, 42], 10000.0, pos)
    assert torch.equal(c[0, tokens, 0], ec.repeat_interleave(2, dim=1))
    assert torch.equal(s[0, tokens, 0], es.repeat_interleave(2, dim=1))
    with pytest.raises(ValueError, match="max_seq_len"):
        pt.WanRotaryPosEmbed(128, (1, 2, 2), 16)(torch.zeros(1, 16, 1, 40, 40))


def test_get_2d_rotary_pos_embed_both_grid_paths():
    """HunyuanDiT's 2-D RoPE: numpy's and torch's grids over a crop (fractional), as diffusers builds them."""
    for output_type in ("np", "pt"):
        for use_real in (True, False):
            args = (88, ((0, 0), (32, 32)), (32, 32))
            mine = pt.get_2d_rotary_pos_embed(*args, use_real=use_real, output_type=output_type)
            theirs = D.diffusers_get_2d(*args, use_real=use_real, output_type=output_type)
            precise = D.diffusers_get_2d(*args, use_real=use_real, output_type=output_type, freqs_dtype=torch.float64)
            if use_real:
                assert [m.shape for m in mine] == [t.shape for t in theirs] and mine[0].dtype == theirs[0].dtype
                assert max(ulps(m, t) for m, t in zip(mine, precise)) <= 1
            else:
                assert mine.shape == theirs.shape and mine.dtype == theirs.dtype
                assert ulps(mine.real, precise.real) <= 1 and ulps(mine.imag, precise.imag) <= 1
    # a crop whose grid is fractional: posenc is diffusers' float64 path
    c, _ = pt.get_2d_rotary_pos_embed(88, ((0, 0), (45, 40)), (32, 32), output_type="pt")
    assert c.shape == (1024, 88)


def test_get_3d_rotary_pos_embed_cogvideox():
    """CogVideoX 1.0 (linspace over a crop: fractional) and 1.5 (slice: integers, exact); diffusers' float32
    frequencies are off, its float64 path agrees to 1 ulp."""
    for kwargs in ({"crops_coords": ((0, 0), (30, 45)), "grid_size": (30, 45), "temporal_size": 13},
                   {"crops_coords": ((0, 0), (32, 48)), "grid_size": (30, 45), "temporal_size": 13},
                   {"crops_coords": None, "grid_size": (30, 45), "temporal_size": 13, "grid_type": "slice",
                    "max_size": (30, 45)}):
        c, s = pt.get_3d_rotary_pos_embed(64, **kwargs)
        dc, ds = D.diffusers_get_3d(64, **kwargs)
        pc, ps = D.diffusers_get_3d(64, freqs_dtype=torch.float64, **kwargs)
        assert c.shape == dc.shape == (13 * 30 * 45, 64) and c.dtype == dc.dtype == torch.float32
        assert ulps(c, pc) <= 1 and ulps(s, ps) <= 1, kwargs
    c, s = pt.get_3d_rotary_pos_embed(64, None, (30, 45), 13, grid_type="slice", max_size=(30, 45))
    tokens = [0, 44, 45 * 30, 13 * 30 * 45 - 1]
    pos = [[t // 1350 for t in tokens], [t // 45 % 30 for t in tokens], [t % 45 for t in tokens]]
    ec, es = exact_tables([16, 24, 24], 10000.0, pos)
    assert torch.equal(c[tokens], ec.repeat_interleave(2, dim=1)) and torch.equal(s[tokens], es.repeat_interleave(2, dim=1))


def test_hunyuan_video_rotary_pos_embed():
    mine = pt.HunyuanVideoRotaryPosEmbed(2, 1, [16, 56, 56])
    theirs = D.DiffusersHunyuanVideoRotaryPosEmbed(2, 1, [16, 56, 56])
    precise = D.DiffusersHunyuanVideoRotaryPosEmbed(2, 1, [16, 56, 56], freqs_dtype=torch.float64)
    assert (mine.patch_size, mine.patch_size_t, mine.rope_dim, mine.theta) == (2, 1, [16, 56, 56], 256.0)
    assert list(mine.state_dict()) == list(theirs.state_dict()) == []
    x = torch.zeros(1, 16, 9, 40, 60)  # 9 latent frames of 20 x 30 patches
    c, s = mine(x)
    dc, ds = theirs(x)
    pc, ps = precise(x)
    assert c.shape == dc.shape == (9 * 20 * 30, 128) and c.dtype == dc.dtype
    assert ulps(c, pc) <= 1 and ulps(s, ps) <= 1
    tokens = [0, 29, 600, 9 * 600 - 1]
    pos = [[t // 600 for t in tokens], [t // 30 % 20 for t in tokens], [t % 30 for t in tokens]]
    ec, es = exact_tables([16, 56, 56], 256.0, pos)
    assert torch.equal(c[tokens], ec.repeat_interleave(2, dim=1)) and torch.equal(s[tokens], es.repeat_interleave(2, dim=1))


def test_ltx_video_rotary_pos_embed():
    """LTX-Video: rising frequencies theta^(k / (n - 1)) pi / 2 at real-valued coordinates (2 g - 1); posenc's
    double path against diffusers' computation in float64 (1 ulp) and in float32 (as diffusers runs it: far
    off at the large frequencies)."""
    kwargs = dict(base_num_frames=20, base_height=2048, base_width=2048, patch_size=1, patch_size_t=1, theta=10000.0)
    for dim in (2048, 2050):  # LTX's inner_dim; one with the dim % 6 padding
        mine = pt.LTXVideoRotaryPosEmbed(dim, **kwargs)
        f32 = D.DiffusersLTXVideoRotaryPosEmbed(dim, **kwargs)
        f64 = D.DiffusersLTXVideoRotaryPosEmbed(dim, dtype=torch.float64, **kwargs)
        x = torch.zeros(2, 7 * 8 * 12, 16)
        scale = (torch.tensor(8 / 25.0), 32, 32)  # the pipeline's (temporal compression / frame rate, 32, 32)
        args = (x, 7, 8, 12, scale)
        c, s = mine(*args)
        dc, ds = f32(*args)
        pc, ps = f64(*args)
        assert c.shape == dc.shape == (2, 672, dim) and c.dtype == dc.dtype == torch.float32
        assert ulps(c, pc, 2.0 ** -12) <= 1 and ulps(s, ps, 2.0 ** -12) <= 1
        assert ulps(c, dc) > 1  # diffusers' float32 angles
        # exact: token t at grid (f, h, w), pair (k, a) at f_k (2 g_a - 1), f_k the double nearest the real
        # theta^(k / (n - 1)) pi / 2 (gmpy2)
        n = dim // 6
        with R.ctx(R.PREC):
            fk = [float(gmpy2.exp(gmpy2.log(mpfr(10000)) * k / (n - 1)) * gmpy2.const_pi() / 2) for k in range(n)]
        assert any(f != 10000.0 ** (k / (n - 1)) * (np.pi / 2.0) for k, f in enumerate(fk))  # pow's are not all
        for t in (0, 97, 671):
            idx = (t // 96, t // 12 % 8, t % 12)
            g = [float(torch.tensor(float(i), dtype=torch.float32) * torch.tensor(sc, dtype=torch.float32) * p / b)
                 for i, sc, p, b in zip(idx, (8 / 25.0, 32.0, 32.0), (1, 1, 1), (20, 2048, 2048))]
            ec, es = exact_explicit([f for f in fk for _ in range(3)], [a for _ in fk for a in range(3)],
                                    [[2 * v - 1] for v in g])
            pad = dim % 6
            assert torch.equal(c[0, t, pad:], ec[0].repeat_interleave(2)), (dim, t)
            assert torch.equal(s[0, t, pad:], es[0].repeat_interleave(2)), (dim, t)
        g = torch.Generator().manual_seed(dim)
        coords = torch.rand(2, 3, 50, generator=g) * torch.tensor([20.0, 2048, 2048])[None, :, None]
        c, s = mine(x, video_coords=coords)
        pc, ps = f64(x, video_coords=coords)
        # two double evaluations of angles up to 1.6e4 rad (frequencies rounded differently): 1 ulp, but near a
        # zero of cos or sin the absolute error (~1e-12) counts, hence the floor
        assert c.shape == (2, 50, dim) and ulps(c, pc, 2.0 ** -12) <= 1 and ulps(s, ps, 2.0 ** -12) <= 1
        if dim % 6:
            assert bool((c[..., : dim % 6] == 1).all()) and bool((s[..., : dim % 6] == 0).all())


def test_ltx_at_704x480x161_every_value_correctly_rounded():
    """LTX-Video's 704 x 480 x 161 video (a 21 x 15 x 22 latent, dim 2048, the pipeline's scale): every one of
    the 2 x 6930 x 2046 values is the correctly rounded one (the grid is separable: the 58 axis coordinates'
    values, by gmpy2, broadcast)."""
    F, H, W, dim = 21, 15, 22, 2048
    n = dim // 6
    scale = (torch.tensor(8 / 25.0), 32, 32)
    c, s = pt.LTXVideoRotaryPosEmbed(dim)(torch.zeros(1, F * H * W, 8), F, H, W, scale)
    with R.ctx(R.PREC):
        fk = [float(gmpy2.exp(gmpy2.log(mpfr(10000)) * k / (n - 1)) * gmpy2.const_pi() / 2) for k in range(n)]
    tables = []
    for size, sc, base in ((F, scale[0], 20), (H, scale[1], 2048), (W, scale[2], 2048)):
        g = (torch.arange(size, dtype=torch.float32) * sc * 1 / base).double() * 2 - 1
        tables.append(exact_explicit(fk, [0] * n, [g.numpy()]))  # [size, n] each
    for part in range(2):
        f, h, w = (t[part] for t in tables)
        want = torch.stack([f[:, None, None, :].expand(F, H, W, n), h[None, :, None, :].expand(F, H, W, n),
                            w[None, None, :, :].expand(F, H, W, n)], -1).reshape(F * H * W, 3 * n)
        got = (c if part == 0 else s)[0, :, dim % 6:]
        assert torch.equal(got, want.repeat_interleave(2, dim=1))


def test_qwen_embed_rope():
    """Qwen-Image: centred rows and columns (scale_rope), several images, the text after the largest index."""
    for scale_rope in (True, False):
        mine = pt.QwenEmbedRope(10000, [16, 56, 56], scale_rope=scale_rope)
        theirs = D.DiffusersQwenEmbedRope(10000, [16, 56, 56], scale_rope=scale_rope)
        precise = D.DiffusersQwenEmbedRope(10000, [16, 56, 56], scale_rope=scale_rope, dtype=torch.float64)
        assert mine.pos_freqs.shape == theirs.pos_freqs.shape and mine.pos_freqs.dtype == theirs.pos_freqs.dtype
        assert list(mine.state_dict()) == list(theirs.state_dict()) == []
        for fhw, txt in (((1, 64, 80), 77), ([(1, 32, 48), (1, 33, 47)], torch.tensor(12)), ([[(1, 9, 7), (2, 4, 6)]], 5)):
            v, t = mine(fhw, None, max_txt_seq_len=txt)
            dv, dt = theirs(fhw, None, max_txt_seq_len=txt)
            pv, ptx = precise(fhw, None, max_txt_seq_len=txt)
            assert v.shape == dv.shape and v.dtype == dv.dtype and t.shape == dt.shape and t.dtype == dt.dtype
            for a, b in ((v, pv), (t, ptx)):
                assert ulps(a.real, b.real.float()) <= 1 and ulps(a.imag, b.imag.float()) <= 1
        # exact at the centred positions: rows -3 .. 1 of a 5-high image, columns -2 .. 1 of a 4-wide one
        v, _ = mine((1, 5, 4), None, max_txt_seq_len=1)
        rows = list(range(20))
        pos = [[0] * 20, [r // 4 - (3 if scale_rope else 0) for r in rows], [r % 4 - (2 if scale_rope else 0) for r in rows]]
        ec, es = exact_tables([16, 56, 56], 10000.0, pos)
        assert torch.equal(v.real, ec) and torch.equal(v.imag, es)
    with pytest.raises(ValueError, match="max_txt_seq_len"):
        mine((1, 4, 4))


# ---- apply_rotary_emb: the rotation by the given tables --------------------------------------------------

def exact_rotation(rows, cos, sin, pairs):
    """rows, cos, sin [N, D] (finite values): element j of pair (u, v) becomes the correctly rounded float32 of
    x_j cos_j + x'_j sin_j, x' = -v for u and u for v (gmpy2, 1200 bits: the products and the sum exact)."""
    rows, cos, sin = (np.asarray(a, dtype=np.float64) for a in (rows, cos, sin))
    n, d = rows.shape
    h = d // 2
    out = np.empty((n, d), np.float32)
    with R.ctx(1200):
        for r in range(n):
            for i in range(h):
                ui, vi = (i, i + h) if pairs == "halves" else (2 * i, 2 * i + 1)
                u, v = rows[r, ui], rows[r, vi]
                for j, x, p in ((ui, u, -v), (vi, v, u)):
                    out[r, j] = R.round_f32(mpfr(x) * mpfr(cos[r, j]) + mpfr(p) * mpfr(sin[r, j]))
    return out


def bits16(t):
    return t.contiguous().view(torch.int16).numpy().view(np.uint16)


def rotation_case(seed, shape, s_axis, d, pairs, dtype):
    """x of `shape` (its sequence on axis s_axis) and float32 tables [S, d]: random values, and in token 0 of
    every row a planted float32 midpoint (u c = 3 K 2^-24, K odd) pushed by v s = +-2^-80, where one rounding
    of the double sum to float32 goes the wrong way half the time."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g) * 3
    S = shape[s_axis]
    cos = torch.rand(S, d, generator=g) * 2 - 1
    sin = torch.rand(S, d, generator=g) * 2 - 1
    if dtype == torch.float32:
        vi = d // 2 if pairs == "halves" else 1
        k = torch.randint(2 ** 24 // 6 + 1, 2 ** 25 // 6, x.select(s_axis, 0)[..., 0].shape, generator=g) * 2 + 1
        x.select(s_axis, 0)[..., 0] = k.float() * 2.0 ** -12
        push = torch.randint(0, 2, k.shape, generator=g) * 2 - 1
        x.select(s_axis, 0)[..., vi] = push.float() * 2.0 ** -40
        cos[0, 0], sin[0, 0] = 3 * 2.0 ** -12, 2.0 ** -40
    return x.to(dtype), cos, sin


@pytest.mark.parametrize("unbind", [-1, -2])
@pytest.mark.parametrize("sequence_dim", [1, 2])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_apply_rotary_emb_exact_in_every_layout(unbind, sequence_dim, dtype):
    """Every element the correctly rounded x cos + x' sin (then x's dtype), diffusers' shape and dtype; diffusers'
    own float32 expression is within an ulp of it."""
    B, H, S, d = 2, 3, 5, 18
    shape = (B, H, S, d) if sequence_dim == 2 else (B, S, H, d)
    pairs = "interleaved" if unbind == -1 else "halves"
    x, cos, sin = rotation_case(11 + unbind + 3 * sequence_dim, shape, sequence_dim, d, pairs, dtype)
    mine = pt.apply_rotary_emb(x, (cos, sin), use_real=True, use_real_unbind_dim=unbind, sequence_dim=sequence_dim)
    theirs = D.diffusers_apply_rotary_emb(x, (cos, sin), True, unbind, sequence_dim)
    assert mine.shape == theirs.shape and mine.dtype == theirs.dtype == dtype
    heads_first = x if sequence_dim == 2 else x.transpose(1, 2)  # [B, H, S, d]
    rows = heads_first.float().reshape(-1, d).numpy()
    tok = np.tile(np.arange(S), B * H)
    want = exact_rotation(rows, cos.numpy()[tok], sin.numpy()[tok], pairs)
    got = (mine if sequence_dim == 2 else mine.transpose(1, 2)).reshape(-1, d)
    if dtype == torch.float32:
        assert np.array_equal(got.numpy().view(np.uint32), want.view(np.uint32))
        # diffusers' float32 expression rounds each product and the sum: within 2^-23 (|x c| + |x' s|) of it
        th = (theirs if sequence_dim == 2 else theirs.transpose(1, 2)).reshape(-1, d).double().numpy()
        h = d // 2
        part = (np.concatenate([-rows[:, h:], rows[:, :h]], 1) if pairs == "halves" else
                np.stack([-rows[:, 1::2], rows[:, 0::2]], -1).reshape(-1, d)).astype(np.float64)
        scale = np.abs(rows) * np.abs(cos.numpy()[tok]) + np.abs(part) * np.abs(sin.numpy()[tok])
        assert np.all(np.abs(th - want) <= 2.0 ** -23 * scale + 2.0 ** -149)
    else:
        fmt = "bf16" if dtype == torch.bfloat16 else "f16"
        assert np.array_equal(bits16(got), R.narrow_from_f32(want, fmt))


def test_apply_rotary_emb_midpoints_where_one_rounding_fails():
    """The planted ties: posenc is exact on all of them; rounding the double sum once (what a fused float64
    evaluation gives) misses about half, and so does diffusers' float32 expression."""
    x, cos, sin = rotation_case(5, (1, 64, 3, 8), 2, 8, "interleaved", torch.float32)
    mine = pt.apply_rotary_emb(x, (cos, sin))
    u, v = x[0, :, 0, 0].double(), x[0, :, 0, 1].double()
    once = (u * cos[0, 0].double() - v * sin[0, 0].double()).float()  # one rounding of the double
    want = exact_rotation(torch.stack([u, v], -1).numpy(), np.tile(cos[0, :2].numpy(), (64, 1)),
                          np.tile(sin[0, :2].numpy(), (64, 1)), "interleaved")[:, 0]
    assert np.array_equal(mine[0, :, 0, 0].numpy(), want)
    assert 8 <= int((once.numpy() != want).sum()) <= 56


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("batch_freqs", [1, 2])
def test_apply_rotary_emb_complex_form(dtype, batch_freqs):
    """use_real=False (Lumina): x [B, S, H, D], freqs_cis complex64 [B or 1, S, D/2]: the exact complex product."""
    g = torch.Generator().manual_seed(3)
    B, S, H, d = 2, 4, 3, 12
    x = (torch.randn(B, S, H, d, generator=g) * 2).to(dtype)
    ang = torch.rand(batch_freqs, S, d // 2, generator=g, dtype=torch.float64) * 7
    freqs = torch.polar(torch.ones_like(ang), ang).to(torch.complex64)
    mine = pt.apply_rotary_emb(x, freqs, use_real=False)
    theirs = D.diffusers_apply_rotary_emb(x, freqs, use_real=False)
    assert mine.shape == theirs.shape and mine.dtype == theirs.dtype
    cos = freqs.real.repeat_interleave(2, -1).expand(B, S, d)  # [B, S, d]
    sin = freqs.imag.repeat_interleave(2, -1).expand(B, S, d)
    rows = x.float().reshape(B * S * H, d).numpy()
    c = cos[:, :, None, :].expand(B, S, H, d).reshape(-1, d).numpy()
    s = sin[:, :, None, :].expand(B, S, H, d).reshape(-1, d).numpy()
    want = exact_rotation(rows, c, s, "interleaved")
    got = mine.reshape(-1, d)
    if dtype == torch.float32:
        assert np.array_equal(got.numpy().view(np.uint32), want.view(np.uint32))
    else:
        assert np.array_equal(bits16(got), R.narrow_from_f32(want, "bf16"))


def test_apply_rotary_emb_what_diffusers_does_elsewhere():
    """Layouts the C call takes whatever their strides; what it does not take runs diffusers' expression."""
    x, cos, sin = rotation_case(9, (1, 6, 2, 8), 1, 8, "interleaved", torch.float32)
    base = pt.apply_rotary_emb(x, (cos, sin), sequence_dim=1)
    # a transposed view (diffusers' attention hands q over as [B, H, S, D] views of [B, S, H, D])
    assert torch.equal(pt.apply_rotary_emb(x.transpose(1, 2), (cos, sin), sequence_dim=2).transpose(1, 2), base)
    # one table row for every token, broadcast as diffusers broadcasts it
    one = pt.apply_rotary_emb(x, (cos[:1], sin[:1]), sequence_dim=1)
    assert torch.equal(one, pt.apply_rotary_emb(x, (cos[:1].expand(6, 8).clone(), sin[:1].expand(6, 8).clone()),
                                                 sequence_dim=1))
    # bfloat16 tables widen exactly, as diffusers' x.float() * cos promotes them
    cb, sb = cos.bfloat16(), sin.bfloat16()
    assert torch.equal(pt.apply_rotary_emb(x, (cb, sb), sequence_dim=1),
                       pt.apply_rotary_emb(x, (cb.float(), sb.float()), sequence_dim=1))
    # float64: diffusers' own values
    for args in ((x.double(), (cos, sin)), (x, (cos.double(), sin.double()))):
        assert torch.equal(pt.apply_rotary_emb(*args, sequence_dim=1),
                           D.diffusers_apply_rotary_emb(*args, sequence_dim=1))
    # a graph that needs gradients: diffusers' expression, gradients included
    xg = x.clone().requires_grad_(True)
    out = pt.apply_rotary_emb(xg, (cos, sin), sequence_dim=1)
    out.sum().backward()
    xr = x.clone().requires_grad_(True)
    D.diffusers_apply_rotary_emb(xr, (cos, sin), sequence_dim=1).sum().backward()
    assert torch.equal(xg.grad, xr.grad)
    with torch.no_grad():
        assert torch.equal(pt.apply_rotary_emb(xg, (cos, sin), sequence_dim=1), base)
    # the errors diffusers raises
    with pytest.raises(ValueError, match="sequence_dim=3"):
        pt.apply_rotary_emb(x, (cos, sin), sequence_dim=3)
    with pytest.raises(ValueError, match="use_real_unbind_dim=0"):
        pt.apply_rotary_emb(x, (cos, sin), use_real_unbind_dim=0)
    # a last axis with a stride, an empty x and a tensor carrying torch's negation bit: what diffusers gives
    wide = torch.zeros(1, 6, 2, 16)
    wide[..., ::2] = x
    assert torch.equal(pt.apply_rotary_emb(wide[..., ::2], (cos, sin), sequence_dim=1), base)
    empty = torch.zeros(1, 0, 2, 8)  # diffusers' reshape(..., -1, 2) refuses it: so does the drop-in
    for f in (pt.apply_rotary_emb, D.diffusers_apply_rotary_emb):
        with pytest.raises(RuntimeError, match="0 elements"):
            f(empty, (cos[:0], sin[:0]), sequence_dim=1)
    z = torch.complex(torch.zeros_like(x), -x)
    negated = z.conj().imag  # x, held as -(-x) with the negation bit set
    assert negated.is_neg() and torch.equal(pt.apply_rotary_emb(negated, (cos, sin), sequence_dim=1), base)
    # x itself is not written
    before = x.clone()
    pt.apply_rotary_emb(x, (cos, sin), sequence_dim=1)
    assert torch.equal(x, before)


def test_get_2d_rotary_pos_embed_from_grid_and_the_separable_grid_exact():
    """get_2d_rotary_pos_embed_from_grid with diffusers' output; get_2d_rotary_pos_embed (the separable grid)
    every value the correctly rounded cos / sin at the crop's fractional positions."""
    gh = np.linspace(0, 45, 6, endpoint=False, dtype=np.float32)
    gw = np.linspace(0, 40, 5, endpoint=False, dtype=np.float32)
    grid = np.stack(np.meshgrid(gw, gh), axis=0).reshape(2, 1, 6, 5)
    with R.ctx(R.PREC):
        freq = [float(gmpy2.exp(gmpy2.log(mpfr(10000.0)) * (-2 * k) / 44)) for k in range(22)]
    cw, sw = exact_explicit(freq, [0] * 22, [np.tile(gw, 6)])
    ch, sh = exact_explicit(freq, [0] * 22, [np.repeat(gh, 5)])
    want_cos = torch.cat([cw.repeat_interleave(2, 1), ch.repeat_interleave(2, 1)], 1)
    want_sin = torch.cat([sw.repeat_interleave(2, 1), sh.repeat_interleave(2, 1)], 1)
    for g in (grid, torch.from_numpy(grid)):
        for use_real in (True, False):
            mine = pt.get_2d_rotary_pos_embed_from_grid(88, g, use_real=use_real)
            theirs = D.diffusers_get_2d_from_grid(88, torch.from_numpy(grid) if isinstance(g, np.ndarray) else g,
                                                  use_real=use_real)
            if use_real:
                assert [m.shape for m in mine] == [t.shape for t in theirs] and mine[0].dtype == theirs[0].dtype
                assert torch.equal(mine[0], want_cos) and torch.equal(mine[1], want_sin)
            else:
                assert mine.shape == theirs.shape and mine.dtype == theirs.dtype
                assert torch.equal(mine.real, want_cos[:, 0::2]) and torch.equal(mine.imag, want_sin[:, 0::2])
    # the 2-D call's separable table: the same bytes as the general one on the same grid
    cos, sin = pt.get_2d_rotary_pos_embed(88, ((0, 0), (45, 40)), (6, 5), use_real=True, output_type="np")
    assert torch.equal(cos, want_cos) and torch.equal(sin, want_sin)
    comp = pt.get_2d_rotary_pos_embed(88, ((0, 0), (45, 40)), (6, 5), use_real=False, output_type="np")
    assert torch.equal(comp, torch.complex(want_cos[:, 0::2], want_sin[:, 0::2]))
