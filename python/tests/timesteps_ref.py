"""References for the timestep tests (gmpy2 / MPFR through mpfr_ref.py; nothing here calls posenc):

- ``exact_rows(spec, ts)``: the rows of a spec at real-valued timesteps, each element the correctly rounded
  float32 of sin / cos of the exact angle t * position_scale * base^(-i/D), t the given double (posenc.h,
  "Real-valued positions"); t = +-0 gives the row of position 0;
- ``formula_bound(...)``: how far a framework's float32 formula may be from the exact value, per element, derived
  from its operations (below), for the tests against the originals at short timesteps.
"""
import math

import numpy as np

import mpfr_ref as R

U = 2.0 ** -24  # float32's unit roundoff


def exact_rows(spec, ts):
    """(len(ts), d_model) float32: the correctly rounded rows at the doubles ts."""
    ref = R.SpecRef.of(spec)
    h, layout = ref.h, ref.layout
    out = np.zeros((len(ts), ref.d), np.float32)
    for r, t in enumerate(ts):
        t = float(t)
        for i in range(h):
            s, c = ref.pair(i, t)  # pair() gives (0, 1) at t == 0 (either sign), as position 0
            if layout == 0:
                out[r, 2 * i], out[r, 2 * i + 1] = s, c
            elif layout == 1:
                out[r, i], out[r, h + i] = s, c
            else:
                out[r, i], out[r, h + i] = c, s
    return out


def exact_angles(ts, scale, max_period, den, h):
    """|t * scale * max_period^(-i / den)| in double (a bound's magnitude, not a reference): (n, h)."""
    w = np.exp(-math.log(max_period) * np.arange(h, dtype=np.float64) / den)
    return np.abs(np.asarray(ts, np.float64)[:, None] * float(scale) * w[None, :])


def formula_bound(ts, scale, max_period, den, h, layout, d, pre_scaled=False):
    """Per element of a (n, d) row table: the largest |original - exact| the float32 formula
    ``sin/cos(fl(scale * fl(fl(t) * fl(exp(fl(fl(-ln(max_period) * i) / den))))))`` can reach, with torch's exp
    and sin / cos within 1 ulp (2u relative, u = 2^-24) and each product and quotient rounded once (u):

    - the exponent x_i = -ln(max_period) i / den is formed with three roundings (ln(max_period) to float32, the
      product, the quotient): |x_i| 3u off, which exp turns into a relative error of |x_i| 3u, plus exp's 2u;
    - the angle: that frequency, times t (u) and times scale (u; or, pre_scaled, t * time_factor rounded first:
      u): relative error (3 |x_i| + 5) u, and the float32 timestep itself (t rounded to float32 when it is
      not one: u more, not counted: the tests give float32 timesteps);
    - sin and cos have slope at most 1: |a| (3 |x_i| + 5) u, plus their own 2u, plus posenc's half ulp (u).

    The exact values are posenc's (bit for bit against MPFR elsewhere); this bounds the originals' distance."""
    a = exact_angles(ts, scale, max_period, den, h)
    x = math.log(max_period) * np.arange(h, dtype=np.float64) / den
    per_pair = a * (3 * x[None, :] + 5 + (1 if pre_scaled else 0)) * U + 3 * U
    out = np.zeros((a.shape[0], d), np.float64)
    if layout == 0:
        out[:, 0:2 * h:2], out[:, 1:2 * h:2] = per_pair, per_pair
    else:
        out[:, :h], out[:, h:2 * h] = per_pair, per_pair
    return out
