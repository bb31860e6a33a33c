"""MPFR-backed references for the posenc tests (gmpy2), independent of the library's arithmetic.

Mirrors the C suite's references (tests/support/reference.cpp, tests/test_rope.cpp's Exact, support/rope.hpp,
support/halves.hpp, tests/test_rope_init.cpp):

- table rows: w_i = base^(-i/D) (D = freq_denominator, or h = d_model // 2 when 0), the exact angle
  p * position_scale * w_i from the spec's doubles, to at least 256 bits below its binary point, sin and cos
  at >= 300 bits, each rounded once to float32 (nearest-even, subnormals included) straight from the
  high-precision value (never through a double); the layout's order; an odd d_model ends with +0.0; PAD rows
  are +0.0;
- bf16 / f16 tables: those float32 values rounded to nearest-even in the 16-bit format (posenc.h);
- the RoPE cache: f_i = base^(-2i/r) (1200 bits) or the explicit doubles, m cos(a_i), m sin(a_i) rounded once
  to float32;
- the rotation of posenc.h: x' = RN_T(RN64(x c - y s)), y' = RN_T(RN64(y c + x s)), the products exact, one
  rounding to double, then one rounding of that double to the row's format (float32, or bf16 / f16 directly
  from the double, as support/rope.hpp's narrow_half_from_double);
- fmaf(scale, x, pe) for add / embed / embed_learned, one rounding of the exact value;
- HF transformers' rope_type formulas (docs/rope.md "Every scheme") in real arithmetic, each value's nearest
  double;
- multi-axis RoPE (posenc.h "Multi-axis RoPE"): pair i of token t takes the position of its own axis,
  positions[axis[i]][t], and posenc_rope_sections' assignment written out from docs/api.md's table (the axis
  map, and the exponents of the frequencies VISION and STRIDED write, each frequency's nearest double).

Nothing here calls posenc.
"""
import hashlib
import math
import struct

import numpy as np
import pytest

gmpy2 = pytest.importorskip("gmpy2", reason="python3-gmpy2 (MPFR) is needed for the reference values")
from gmpy2 import mpfr  # noqa: E402

PAD = -(2 ** 63)
K2P31 = 2 ** 31


# gmpy2 2.2 (Debian unstable) deprecates local_context, warning on each call (millions in a test run); its
# contexts restore the previous one on leaving a with block. 2.1's (bookworm) do not: local_context there.
_CONTEXT_IS_LOCAL = tuple(int(v) for v in gmpy2.version().split(".")[:2]) >= (2, 2)


def ctx(prec):
    """A local context of `prec` bits, round to nearest (ties to even), no exponent limits worth mentioning."""
    if _CONTEXT_IS_LOCAL:
        return gmpy2.context(precision=int(prec), round=gmpy2.RoundToNearest)
    return gmpy2.local_context(gmpy2.context(), precision=int(prec), round=gmpy2.RoundToNearest)


def _ldexp(x, k):
    return gmpy2.mul_2exp(x, k) if k >= 0 else gmpy2.div_2exp(x, -k)


# ---- rounding of high-precision values --------------------------------------------------------------------

def round_binary(x, p, emin):
    """x (an mpfr, any precision) rounded to nearest-even with p significant bits and minimum normal exponent
    emin (x = 1.f * 2^e form), gradual underflow included; returned as a Python float (exact). No overflow
    handling: callers stay far below the format's largest value."""
    if x == 0:
        return -0.0 if gmpy2.is_signed(x) else 0.0
    neg = x < 0
    with ctx(max(x.precision, 64) + 16):
        a = abs(x)
        e, _ = gmpy2.frexp(a)  # a = m 2^e, m in [0.5, 1): the 1.f exponent is e - 1
        q = max(e - 1, emin) - (p - 1)  # the weight of the last bit kept
        n = gmpy2.rint(_ldexp(a, -q))  # exact scaling, then the one rounding (RNDN: ties to even)
        v = math.ldexp(int(n), q)  # exact: n <= 2^p
    return -v if neg else v


def round_f32(x):
    """x (mpfr) correctly rounded to float32, as np.float32 (subnormals included, one rounding)."""
    return np.float32(round_binary(x, 24, -126))


def round_f64(x):
    """x (mpfr) correctly rounded to a double (ties to even, subnormals included)."""
    return round_binary(x, 53, -1022)


def f32_bits(a):
    return np.asarray(a, dtype=np.float32).view(np.uint32)


def narrow_from_double(v, fmt):
    """Doubles (array-like) rounded once, to nearest-even, to bfloat16 ("bf16") or binary16 ("f16") bit patterns
    (uint16), as tests/support/rope.hpp's narrow_half_from_double: values past the largest finite one become
    infinities; NaN gives the format's default quiet NaN."""
    p, emin, emax, bias = (8, -126, 127, 127) if fmt == "bf16" else (11, -14, 15, 15)
    v = np.asarray(v, dtype=np.float64)
    sign = np.where(np.signbit(v), 0x8000, 0).astype(np.uint32)
    inf_bits = ((1 << (15 - (p - 1))) - 1) << (p - 1)
    a = np.abs(v)
    finite = np.isfinite(a)
    af = np.where(finite, a, 0.0)
    _, e = np.frexp(af)
    e = np.maximum(e - 1, emin)  # af = 1.f 2^e
    with np.errstate(over="ignore"):
        q = np.rint(np.ldexp(af, (p - 1) - e))  # exact scaling; np.rint rounds ties to even
    carry = q == float(1 << p)
    q = np.where(carry, q / 2, q)
    e = e + carry
    mant = q.astype(np.uint32)
    normal = mant >= (1 << (p - 1))
    out = np.where(normal, sign | ((e + bias).astype(np.uint32) << (p - 1)) | (mant - (1 << (p - 1))), sign | mant)
    out = np.where(finite & (e > emax), sign | inf_bits, out)
    out = np.where(np.isinf(v), sign | inf_bits, out)
    out = np.where(np.isnan(v), inf_bits | (1 << (p - 2)), out)
    return out.astype(np.uint16)


def narrow_from_f32(v, fmt):
    """float32 values rounded to nearest-even in bf16 / f16 (posenc.h's tables)."""
    return narrow_from_double(np.asarray(v, dtype=np.float32).astype(np.float64), fmt)


def widen_bf16(bits):
    a = np.asarray(bits)
    assert a.dtype == np.uint16, "bfloat16 as uint16 bit patterns"
    return (a.astype(np.uint32) << 16).view(np.float32)


def widen_f16(bits):
    a = np.asarray(bits)
    if a.dtype != np.float16:
        a = a.astype(np.uint16).view(np.float16)
    return a.astype(np.float32)  # exact


def widen(a, fmt):
    if fmt == "f32":
        return np.asarray(a, dtype=np.float32)
    return widen_bf16(a) if fmt == "bf16" else widen_f16(a)


def _memo_row(memo, p, width, fill):
    """memo's row of `width` float32 at position p, made once: zeros at PAD, else fill(row, p) on zeros."""
    p = int(p)
    got = memo.get(p)
    if got is None:
        got = np.zeros(width, dtype=np.float32)
        if p != PAD:
            fill(got, p)
        memo[p] = got
    return got


# ---- the PE table ------------------------------------------------------------------------------------------

class SpecRef:
    """The correctly rounded rows of one posenc spec (given by its fields), memoised per position."""

    def __init__(self, d_model, layout=0, base=10000.0, freq_denominator=0.0, position_scale=1.0):
        self.d = int(d_model)
        self.layout = int(layout)
        self.base = float(base)
        self.scale = float(position_scale)
        self.h = self.d // 2
        self.den = float(freq_denominator) if freq_denominator != 0.0 else float(self.h)
        self._w = {}
        self._rows = {}

    @classmethod
    def of(cls, spec):
        return cls(spec.d_model, int(spec.layout), spec.base, spec.freq_denominator, spec.position_scale)

    def _prec(self, i, p):
        # as reference.cpp: 320 bits + the angle's size + the exponent's size, + 64
        if p == 0 or self.scale == 0.0:
            return 384
        top = math.log2(abs(p)) + math.log2(abs(self.scale)) - i / self.den * math.log2(self.base)
        ex = abs(i / self.den * math.log(self.base))
        return int(320 + max(0.0, top) + math.log2(1.0 + ex) + 64)

    def angle(self, i, p):
        """The exact angle p * position_scale * base^(-i/D), to 256+ bits below its binary point."""
        prec = self._prec(i, p)
        with ctx(prec):
            e = mpfr(-i) / mpfr(self.den)  # -i / D
            w = mpfr(self.base) ** e
            return (w * mpfr(self.scale)) * p

    def pair(self, i, p):
        """(sin, cos) of pair i at position p, each a correctly rounded np.float32."""
        if p == 0 or self.scale == 0.0:
            return np.float32(0.0), np.float32(1.0)
        a = self.angle(i, p)
        with ctx(max(300, a.precision)):
            s, c = gmpy2.sin_cos(a)
        return round_f32(s), round_f32(c)

    def row(self, p):
        return _memo_row(self._rows, p, self.d, self._fill)

    def _fill(self, row, p):
        h = self.h
        for i in range(h):
            s, c = self.pair(i, p)
            if self.layout == 0:
                row[2 * i], row[2 * i + 1] = s, c
            elif self.layout == 1:
                row[i], row[h + i] = s, c
            else:
                row[i], row[h + i] = c, s

    def rows(self, positions):
        return np.stack([self.row(p) for p in positions]) if len(positions) else np.zeros((0, self.d), np.float32)

    def table(self, first, n):
        return self.rows(list(range(first, first + n)))


def table_in(ref_rows, fmt):
    """float32 reference rows in the format of a table call: float32, or bf16 / f16 bit patterns."""
    if fmt == "f32":
        return ref_rows
    return narrow_from_f32(ref_rows, fmt)


def sha256(a):
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


# ---- fmaf --------------------------------------------------------------------------------------------------

def fmaf(scale, x, y):
    """fmaf(scale, x, y) element-wise (float32 arrays; scale a float32 scalar): the exact scale * x + y rounded
    once to float32, NaN results as posenc.h specifies (the first NaN among x, y and scale, quieted; +qNaN
    for an invalid operation). The product is exact in double; the sum is exact as a double plus its error
    (TwoSum), and the double sum is corrected where it sits on a float32 midpoint (the only place where
    rounding twice differs from rounding once)."""
    scale = np.float32(scale)
    x = np.asarray(x, dtype=np.float32)
    y = np.asarray(y, dtype=np.float32)
    with np.errstate(all="ignore"):
        p = np.float64(scale) * x.astype(np.float64)  # exact
        yd = y.astype(np.float64)
        s = p + yd
        bp = s - yd
        err = (p - bp) + (yd - (s - bp))  # TwoSum: s + err == p + yd exactly (finite values)
        r = s.astype(np.float32)
        # s exactly halfway between two float32 neighbours, and the exact value off that midpoint: step
        lo = np.where(r.astype(np.float64) > s, np.nextafter(r, np.float32(-np.inf)), r)
        hi = np.nextafter(lo, np.float32(np.inf))
        mid = (lo.astype(np.float64) + hi.astype(np.float64)) / 2  # exact: float32 neighbours
        tie = np.isfinite(s) & (s == mid) & (err != 0)
        r = np.where(tie & (err > 0), hi, np.where(tie & (err < 0), lo, r))
    bad = np.isnan(r)
    if bad.any():
        r = r.copy()
        xb = x.view(np.uint32) | 0x00400000
        yb = y.view(np.uint32) | 0x00400000
        sb = np.uint32(np.array([scale], np.float32).view(np.uint32)[0] | 0x00400000)
        nanbits = np.where(np.isnan(x), xb, np.where(np.isnan(y), yb, np.where(np.isnan(scale), sb, 0x7FC00000)))
        r.view(np.uint32)[bad] = nanbits[bad] if np.ndim(nanbits) else nanbits
    return r


# ---- RoPE --------------------------------------------------------------------------------------------------

class RopeRef:
    """Correctly rounded m cos(a_i), m sin(a_i) of a RoPE spec (rotary_dim, base, position_scale, explicit
    frequencies or None, attention scale), memoised per position; rows are h cos then h sin."""

    def __init__(self, rotary_dim, base=10000.0, position_scale=1.0, freq=None, attention_scale=1.0, pairs=0):
        self.r = int(rotary_dim)
        self.h = self.r // 2
        self.base = float(base)
        self.scale = float(position_scale)
        self.m = float(attention_scale)
        self.pairs = int(pairs)
        self.f = []
        if freq is not None:
            freq = [float(v) for v in np.asarray(freq, dtype=np.float64).ravel()]
            assert len(freq) == self.h
            self.f = [mpfr(v, 64) for v in freq]  # exact
        else:
            with ctx(1200):
                for i in range(self.h):
                    self.f.append(mpfr(self.base) ** (mpfr(-2 * i) / self.r))
        self._rows = {}

    @classmethod
    def of(cls, rope):
        return cls(rope.rotary_dim, rope.base, rope.position_scale, rope.freq, rope.attention_scale, int(rope.pairs))

    def pair(self, i, p):
        """(cos, sin) of pair i at position p (not PAD), np.float32 each."""
        with ctx(128):
            ps = mpfr(p) * mpfr(self.scale)  # exact: 31 + 53 bits
        f = self.f[i]
        if ps == 0 or f == 0:
            with ctx(64):
                return round_f32(mpfr(self.m)), np.float32(0.0)
        with ctx(f.precision + 128):
            a = f * ps  # exact for explicit frequencies
        with ctx(400):
            s, c = gmpy2.sin_cos(a)
        with ctx(480):
            ms = s * mpfr(self.m)  # exact: 400 + 53 bits
            mc = c * mpfr(self.m)
        return round_f32(mc), round_f32(ms)

    def row(self, p):
        return _memo_row(self._rows, p, 2 * self.h, self._fill)

    def _fill(self, row, p):
        for i in range(self.h):
            row[i], row[self.h + i] = self.pair(i, p)

    def cache(self, positions):
        """(n, r): cos | sin per row (vLLM's cos_sin_cache layout)."""
        if not len(positions):
            return np.zeros((0, self.r), np.float32)
        return np.stack([self.row(p) for p in positions])


# ---- multi-axis RoPE -------------------------------------------------------------------------------------------

CHUNKED, INTERLEAVED, VISION, STRIDED, INTERLEAVED_4, ALTERNATING, PER_AXIS, BALANCED = range(8)


def section_map(layout, sections, h):
    """(A, axis [h] list, exponents) of posenc_rope_sections(sections, layout) for h = r/2 pairs, from docs/api.md's
    table: sector j = i mod S (S the sum); the axis of the sector; exponents None where the layout keeps the
    frequencies, else per pair (num, den) with f_i = base^(-num/den): VISION base^(-2k/h), STRIDED
    base^(-2(A k + a)/r), k = j - c_a (c_a the first sector of section a)."""
    s = [int(v) for v in sections] + [0] * (4 - len(sections))
    total = sum(s)
    starts = [sum(s[:a]) for a in range(4)]
    if layout in (INTERLEAVED, ALTERNATING):
        axes = 3
    elif layout == BALANCED:
        axes = 3 if s[2] > 0 else 2
    elif layout == INTERLEAVED_4:
        axes = 4
    else:
        axes = max(a for a in range(4) if s[a] > 0) + 1
    if layout == BALANCED:
        sectors = balanced_sectors(s, total)
    axis, expo = [], []
    for i in range(h):
        j = i % total
        chunk = max(a for a in range(4) if starts[a] <= j and s[a] > 0)
        if layout == INTERLEAVED:
            a = 1 if j % 3 == 1 and j < 3 * s[1] else 2 if j % 3 == 2 and j < 3 * s[2] else 0
        elif layout == INTERLEAVED_4:
            a = (1 if j % 3 == 1 and j < 3 * s[1] else 2 if j % 3 == 2 and j < 3 * s[2]
                 else 0 if j % 3 == 0 and j < 3 * s[0] else 3)
        elif layout == ALTERNATING:  # h w h w .. over 2 s1 sectors, then axis 0
            a = (1 + j % 2) if j < 2 * s[1] else 0
        elif layout == BALANCED:
            a = sectors[j]
        else:
            a = chunk
        axis.append(a)
        k = j - starts[chunk]
        if layout == VISION:
            expo.append((2 * k, h))
        elif layout == STRIDED:
            expo.append((2 * (axes * k + chunk), 2 * h))
        elif layout == PER_AXIS:  # base^(-k / s_a): the section's own width
            expo.append((k, s[chunk]))
    return axes, axis, (expo if layout in (VISION, STRIDED, PER_AXIS) else None)


def balanced_sectors(s, total):
    """docs/api.md's BALANCED row: three sections (s2 > 0) keep sector S - 1 for axis 0 and share out s0 - 1, s1,
    s2 over the others, two share out s0, s1; in turn, the axis with sectors left of the smallest share
    placed / count (as exact fractions), not the previous sector's while another has some left, the lower on a
    tie."""
    from fractions import Fraction
    three = s[2] > 0
    count = [s[0] - 1, s[1], s[2]] if three else [s[0], s[1], 0]
    placed, out, prev = [0, 0, 0], [], None
    for _ in range(sum(count)):
        left = [a for a in range(3) if placed[a] < count[a]]
        pool = [a for a in left if a != prev] or left
        a = min(pool, key=lambda a: (Fraction(placed[a], count[a]), a))
        out.append(a)
        placed[a] += 1
        prev = a
    return out + [0] if three else out


def power(base, num, den):
    """The double nearest base^(-num/den) (MPFR at 1200 bits)."""
    with ctx(1200):
        return round_f64(mpfr(base) ** (mpfr(-num) / den))


class AxesRef:
    """A multi-axis RoPE spec's correctly rounded cos/sin rows: a RopeRef (frequencies, scales) and the axis map;
    pair i of a token rotates by its position on axis[i]. Memoised per (pair, position)."""

    def __init__(self, rope_ref, axes, axis):
        self.ref = rope_ref
        self.axes = int(axes)
        self.axis = [int(a) for a in axis] if axis is not None else [0] * rope_ref.h
        self.h, self.r, self.pairs = rope_ref.h, rope_ref.r, rope_ref.pairs
        self._pairs = {}

    @classmethod
    def of(cls, rope):
        return cls(RopeRef.of(rope), rope.axes, rope.axis)

    def pair(self, i, p):
        key = (i, int(p))
        got = self._pairs.get(key)
        if got is None:
            got = self._pairs[key] = self.ref.pair(i, int(p))
        return got

    def token(self, ps):
        """cos | sin (2h float32) of a token whose positions on the axes are ps (ps[0] == PAD: zeros)."""
        row = np.zeros(2 * self.h, dtype=np.float32)
        if int(ps[0]) == PAD:
            return row
        for i in range(self.h):
            row[i], row[self.h + i] = self.pair(i, ps[self.axis[i]])
        return row

    def cache(self, positions):
        """(n, r) rows for positions (A, n) (axis-major)."""
        pos = np.asarray(positions, np.int64).reshape(self.axes, -1)
        if pos.shape[1] == 0:
            return np.zeros((0, self.r), np.float32)
        return np.stack([self.token(pos[:, t]) for t in range(pos.shape[1])])


def _as_batches(x):
    """x shaped [T, D], [T, H, D] or [B, T, H, D] as [B, T, H, D], and x's own shape."""
    x = np.asarray(x)
    shape = x.shape
    if x.ndim == 2:
        x = x[:, None, :]
    if x.ndim == 3:
        x = x[None]
    return x, shape


def _rotate_kept(x, pos, cache, ref, fmt):
    """x [B, T, H, D] rotated by ref's rows cache(pos[:, b][:, keep]) of each batch entry's tokens at positions
    pos (A, B, T) but the PAD ones (axis 0), which keep their values."""
    out = np.array(x, copy=True)
    h = ref.h
    for b in range(x.shape[0]):
        keep = pos[0, b] != PAD
        if not keep.any():
            continue
        cs = cache(pos[:, b][:, keep])
        out[b, keep] = rotate_rows(x[b, keep], cs[:, None, :h], cs[:, None, h:], ref.pairs, fmt)
    return out


def rotate_tokens_axes(x, positions, ref, fmt):
    """The expected result of posenc.rope with a multi-axis spec (an AxesRef) on x shaped [T, D], [T, H, D] or
    [B, T, H, D], positions (A, T) (every batch entry) or (A, B, T); PAD tokens (axis 0) keep their values."""
    x, shape = _as_batches(x)
    pos = np.asarray(positions, np.int64)
    if pos.ndim == 2:
        pos = np.broadcast_to(pos[:, None, :], (pos.shape[0], x.shape[0], pos.shape[1]))
    return _rotate_kept(x, pos, ref.cache, ref, fmt).reshape(shape)


def _quiet_bits(a, fmt):
    """float32 bit patterns of format-fmt elements (f16 given as uint16 bits), NaNs quieted (the payload widened
    as the C reference does)."""
    a = np.asarray(a)
    if fmt == "f32":
        b = a.view(np.uint32).astype(np.uint32)
    elif fmt == "bf16":
        b = a.astype(np.uint32) << 16
    else:
        h = a.astype(np.uint32)
        b = ((h & 0x8000) << 16) | 0x7F800000 | ((h & 0x3FF) << 13)
    return b | 0x00400000


def rotate_rows(rows, cos, sin, pairs, fmt):
    """posenc.h's rotation of head rows `rows` (array [..., >= r] of float32, bf16 uint16 bits, or float16 / its
    uint16 bits) by the float32 cos/sin (broadcastable to [..., h]); returns a new array of the same type. Only
    the first r = 2h elements change. Where the formula gives NaN, posenc.h's NaN rule (tests/test_rope.cpp
    nan_results): the first NaN among x and y, quieted, else +qNaN, narrowed to bf16 / f16 keeping the sign
    and the top of the payload."""
    h = np.shape(cos)[-1]
    rows = np.asarray(rows)
    out = np.array(rows.view(np.uint16) if rows.dtype == np.float16 else rows, copy=True)  # f16 as bits
    with np.errstate(invalid="ignore"):
        v = widen(out, fmt).astype(np.float64)
    if int(pairs) == 0:
        ix, iy = np.arange(h), np.arange(h) + h
    else:
        ix, iy = 2 * np.arange(h), 2 * np.arange(h) + 1
    x, y = v[..., ix], v[..., iy]
    c = np.asarray(cos, np.float32).astype(np.float64)
    s = np.asarray(sin, np.float32).astype(np.float64)
    with np.errstate(all="ignore"):
        xr = x * c - y * s  # both products exact in double: one rounding of the exact sum
        yr = y * c + x * s
        if fmt == "f32":
            nx, ny = xr.astype(np.float32), yr.astype(np.float32)
        else:
            nx, ny = narrow_from_double(xr, fmt), narrow_from_double(yr, fmt)
    if np.isnan(xr).any() or np.isnan(yr).any():
        b = np.where(np.isnan(x), _quiet_bits(out[..., ix], fmt),
                     np.where(np.isnan(y), _quiet_bits(out[..., iy], fmt), np.uint32(0x7FC00000)))
        b = np.broadcast_to(b, xr.shape).astype(np.uint32)
        if fmt == "f32":
            rule = b.view(np.float32)
        elif fmt == "bf16":
            rule = (b >> 16).astype(np.uint16)
        else:
            rule = (((b >> 16) & 0x8000) | 0x7C00 | ((b >> 13) & 0x3FF)).astype(np.uint16)
        nx = np.where(np.isnan(xr), rule, nx)
        ny = np.where(np.isnan(yr), rule, ny)
    out[..., ix] = nx
    out[..., iy] = ny
    return out.view(np.float16) if rows.dtype == np.float16 else out


def rotate_tokens(x, positions, rope_ref, fmt):
    """The expected result of posenc.rope on x shaped [T, D], [T, H, D] or [B, T, H, D] (a logical copy) at
    `positions` ([T] or [B, T]); PAD tokens keep their values."""
    x, shape = _as_batches(x)
    pos = np.asarray(positions, np.int64)
    if pos.ndim == 1:
        pos = np.broadcast_to(pos, x.shape[:2])

    def one_axis(p):
        return rope_ref.cache([int(q) for q in p[0]])

    return _rotate_kept(x, pos[None], one_axis, rope_ref, fmt).reshape(shape)


# ---- HF's rope_type formulas (docs/rope.md "Every scheme"), real arithmetic ---------------------------------

PREC = 400


def inv_freq(base, r, i):
    """base^(-2i/r) at PREC bits."""
    with ctx(PREC):
        return gmpy2.exp(gmpy2.log(mpfr(base)) * (-2 * i) / r)


def hf_linear(base, r, factor):
    with ctx(PREC):
        return [inv_freq(base, r, i) / mpfr(factor) for i in range(r // 2)]


def hf_dynamic(base, r, factor, lmax, seq):
    L = max(seq, lmax)
    with ctx(PREC):
        x = mpfr(factor) * L / lmax - (mpfr(factor) - 1)
        lnb = gmpy2.log(mpfr(base)) + gmpy2.log(x) * r / (r - 2)  # ln base'
        return [gmpy2.exp(lnb * (-2 * i) / r) for i in range(r // 2)]


def hf_get_mscale(scale, m=1.0):
    with ctx(PREC):
        if scale <= 1.0:
            return mpfr(1)
        return gmpy2.log(mpfr(scale)) * mpfr(m) / 10 + 1


def hf_yarn(base, r, factor, original, beta_fast=0.0, beta_slow=0.0, mscale=0.0, mscale_all_dim=0.0,
            truncate=True, attention_factor=0.0):
    """(frequencies, attention factor) of HF's _compute_yarn_parameters (v5)."""
    bf = beta_fast or 32.0
    bs = beta_slow or 1.0
    with ctx(PREC):
        def correction_dim(rot):  # r ln(L0 / (2 pi rot)) / (2 ln base)
            return r * gmpy2.log(mpfr(original) / (2 * gmpy2.const_pi() * mpfr(rot))) / (2 * gmpy2.log(mpfr(base)))

        low, high = correction_dim(bf), correction_dim(bs)
        if truncate:
            low, high = gmpy2.floor(low), gmpy2.ceil(high)
        low = max(low, mpfr(0))
        high = min(high, mpfr(r - 1))
        if low == high:
            high = high + mpfr(0.001)  # HF's double 0.001
        freqs = []
        for j in range(r // 2):
            ramp = (mpfr(j) - low) / (high - low)
            ramp = min(max(ramp, mpfr(0)), mpfr(1))
            extra = inv_freq(base, r, j)
            inter = extra / mpfr(factor)
            ef = 1 - ramp
            freqs.append(inter * (1 - ef) + extra * ef)
        if attention_factor:
            att = mpfr(attention_factor)
        elif mscale and mscale_all_dim:
            att = hf_get_mscale(factor, mscale) / hf_get_mscale(factor, mscale_all_dim)
        else:
            att = hf_get_mscale(factor, 1.0)
    return freqs, att


def hf_llama3(base, r, factor, lff, hff, old_context):
    out = []
    with ctx(PREC):
        low_wl = mpfr(old_context) / mpfr(lff)
        high_wl = mpfr(old_context) / mpfr(hff)
        for i in range(r // 2):
            inv = inv_freq(base, r, i)
            wavelen = 2 * gmpy2.const_pi() / inv
            if wavelen > low_wl:
                out.append(inv / mpfr(factor))
            elif wavelen < high_wl:
                out.append(inv)
            else:
                sm = (mpfr(old_context) / wavelen - mpfr(lff)) / (mpfr(hff) - mpfr(lff))
                out.append((1 - sm) * inv / mpfr(factor) + sm * inv)
    return out


def hf_longrope(base, r, ext, factor, original, attention_factor=0.0):
    with ctx(PREC):
        freqs = [inv_freq(base, r, i) / mpfr(float(ext[i])) for i in range(r // 2)]
        if attention_factor:
            att = mpfr(attention_factor)
        elif factor <= 1.0:
            att = mpfr(1)
        else:
            att = gmpy2.sqrt(1 + gmpy2.log(mpfr(factor)) / gmpy2.log(mpfr(original)))
    return freqs, att


def nearest_doubles(values):
    return np.array([round_f64(v) for v in values], dtype=np.float64)


# ---- portable generators of the C suite's golden inputs (tests/test_rope.cpp) --------------------------------

M64 = (1 << 64) - 1


class SplitMix:
    def __init__(self, seed):
        self.s = seed & M64

    def __call__(self):
        self.s = (self.s + 0x9E3779B97F4A7C15) & M64
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return z ^ (z >> 31)


def _f32(v):
    return np.float32(v)


def fill(fmt, count, seed, specials=False):
    """test_rope.cpp's fill(): `count` elements of format fmt (float32 array, or uint16 bits)."""
    rng = SplitMix(seed)
    if fmt == "f32":
        out = np.empty(count, np.float32)
        pats = [0x7FC00000, 0xFFC12345, 0x7F800001, 0x7F800000, 0xFF800000, 0x7FA00000]
        for e in range(count):
            r = rng()
            kind = r % 64
            v = _f32(((r >> 40) - (1 << 23)) / float(1 << 21))
            if kind == 0:
                v = _f32(0.0)
            elif kind == 1:
                v = _f32(-0.0)
            elif kind == 2:
                v = _f32(3.0e38)
            elif kind == 3:
                v = _f32(-1.5e-40)
            elif kind == 4:
                v = _f32(r >> 40) * _f32(1e-30)  # a float32 product, as in C
            if specials and 5 <= kind < 9:
                v = np.array([pats[(r >> 20) % 6]], np.uint32).view(np.float32)[0]
            out[e] = v
        return out
    out = np.empty(count, np.uint16)
    exp_mask = 0x7F80 if fmt == "bf16" else 0x7C00
    for e in range(count):
        r = rng()
        kind = r % 64
        v = (r >> 24) & 0xFFFF
        if (v & exp_mask) == exp_mask and not (specials and kind < 16):
            v &= ~0x4000 & 0xFFFF
        if fmt == "bf16" and not specials and kind > 4:
            v = (v & 0x807F) | ((0x3C00 + ((r >> 8) % 0x600)) & 0xFFFF & 0x7F80)
        out[e] = v
    return out


def packed(seed, n):
    """test_rope.cpp's packed(): positions of packed sequences with repeats and padding."""
    rng = SplitMix(seed)
    p = []
    nxt = 0
    while len(p) < n:
        r = rng()
        if r % 13 == 0:
            nxt = 0
        if r % 17 == 1:
            p.append(PAD)
        elif r % 11 == 2 and p:
            p.append(3 if p[-1] == PAD else p[-1])
        else:
            p.append(nxt)
            nxt += 1
    return p[:n]


def odd_frequencies(h, seed):
    """test_rope.cpp's odd_frequencies(): explicit frequencies of every size and sign."""
    fixed = [1.0, 0.0, -0.25, 5e-324, 1e-300, 3.0e-10, 1e6, -1e15, 2.0 ** 52 + 1, 3.141592653589793,
             1.5707963267948966, 1e100, -7.5e-5, 0.1, 2.0]
    rng = SplitMix(seed)
    f = []
    for i in range(h):
        if i < len(fixed):
            f.append(fixed[i])
        else:
            r = rng()
            mant = 1.0 + float(r >> 12) * 2.0 ** -52
            f.append(math.ldexp(-mant if r & 1 else mant, int((r >> 1) % 81) - 40))
    return f


def float_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]
