// ggml's RoPE frequencies and magnitude from ggml's float parameters, each the double nearest the real value
// of ggml's formula (rope_powers.hpp, ggml_rope_frequencies; posenc.h, posenc_rope_ggml_frequencies), on the
// exact evaluation the schemes share (rope_scheme.hpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "posenc/posenc.h"
#include "setup/mp.hpp"
#include "setup/rope_powers.hpp"
#include "setup/rope_scheme.hpp"

namespace posenc {
namespace detail {

using namespace scheme;

namespace {

// ggml_rope_frequencies (rope_powers.hpp). A correction dimension beyond +-2^40 acts on every pair index as
// +-infinity does; kFar stands for both.
constexpr int64_t kFar = int64_t(1) << 40;

// The extended real value of ggml's cd(beta) = n_dims ln(n_ctx_orig / (2 pi beta)) / (2 ln base), classified:
// kFinite (computed exactly by the caller), kPlusInf, kMinusInf, or kNaN, with IEEE's rules for the divisions
// by zero and logarithms of 0 or infinity that ggml's float arithmetic meets. The real ratio is never 1 (pi is
// transcendental), so ln never vanishes where the operands are finite and non-zero.
enum class Cd { kFinite, kPlusInf, kMinusInf, kNaN };
Cd classify_cd(float beta, int64_t n_ctx_orig, float base) {
  if (std::isnan(beta)) return Cd::kNaN;
  int log_sign;  // the sign of the ratio's log, -inf, +inf or finite: -1, 0 or 1
  bool finite = false;
  if (n_ctx_orig == 0) {
    if (beta == 0.0f) return Cd::kNaN;  // 0 / 0
    log_sign = -1;                      // +-0: ln is -inf
  } else if (beta == 0.0f || std::isinf(beta)) {
    if (std::isinf(beta))
      log_sign = -1;  // n / inf = +-0
    else if ((n_ctx_orig > 0) != std::signbit(beta))
      log_sign = 1;  // n / +-0 = +inf
    else
      return Cd::kNaN;  // ln(-inf)
  } else {
    if ((n_ctx_orig > 0) != (beta > 0.0f)) return Cd::kNaN;  // ln of a negative ratio
    finite = true;
    // the sign of ln(|n| / (2 pi |beta|)): |n| against 2 pi |beta|, never equal (pi is transcendental)
    const int n = kLimbs[0];
    const Num two_pi_beta = mp::mul(mp::ldexp(mp::pi(n), 1), mp::from_double(std::fabs(beta), n));
    const uint64_t an = n_ctx_orig < 0 ? uint64_t(0) - uint64_t(n_ctx_orig) : uint64_t(n_ctx_orig);
    log_sign = mp::cmp_abs(mp::from_u64(an, n), two_pi_beta) > 0 ? 1 : -1;
  }
  if (base == 1.0f) return log_sign < 0 ? Cd::kMinusInf : Cd::kPlusInf;  // ln base = +0: x / +0 keeps x's sign
  if (finite) return Cd::kFinite;
  return (log_sign > 0) == (base > 1.0f) ? Cd::kPlusInf : Cd::kMinusInf;
}

// ggml_rope_yarn_corr_dims on the real values: low = max(0, floor(cd(beta_fast))), or with ceil = false,
// high = min(n_dims - 1, ceil(cd(beta_slow))); an infinity becomes +-kFar. False where ggml's value is NaN.
bool ggml_corr_dim(Scheme &s, float beta, bool ceil, int64_t *out) {
  const int64_t top = s.r - 1;
  auto clamp = [&](int64_t v) { return ceil ? std::min(top, v) : std::max<int64_t>(0, v); };
  switch (classify_cd(beta, s.L0, float(s.base))) {
    case Cd::kNaN: return false;
    case Cd::kPlusInf: *out = clamp(kFar); return true;
    case Cd::kMinusInf: *out = clamp(-kFar); return true;
    case Cd::kFinite: break;
  }
  Scheme a = s;  // the ratio n_ctx_orig / (2 pi beta) as |n_ctx_orig| / (2 pi |beta|)
  a.L0 = s.L0 < 0 ? -s.L0 : s.L0;
  beta = std::fabs(beta);
  for (int k = 0;; ++k) {
    const Num c = a.cd(kLimbs[k], beta);
    if (!c.is_zero() && mp::exponent(c) > 41) {  // |cd| >= 2^40
      *out = clamp(c.neg ? -kFar : kFar);
      return true;
    }
    int64_t near = 0;
    int side = 0;
    if (!locate(a, beta, k, c, &near, &side)) continue;
    *out = clamp(ceil ? (side > 0 ? near + 1 : near) : (side < 0 ? near - 1 : near));
    return true;
  }
}

// The YaRN blend's factor (freq_scale + (1 - freq_scale) ext_factor ramp) times den, for ramp = num / den
// (integers): exact at 768 bits for float inputs (every product and the sum span fewer bits).
Num ggml_blend(int n, float fs, float ef, int64_t num, int64_t den) {
  const Num f = mp::from_double(fs, n);
  Num t = mp::mul_u64(f, uint64_t(den));
  if (num != 0) t = mp::add(t, mp::mul(mp::mul_u64(mp::from_double(ef, n), uint64_t(num)), mp::sub(one(n), f)));
  return t;
}

}  // namespace

posenc_status ggml_rope_frequencies(const GgmlRope &g, double *freq, double *attention) {
  if (g.n_dims < 2 || g.n_dims % 2 != 0 || g.pairs < 1) return POSENC_ERR_INVALID;
  if (g.n_ctx_orig < -(int64_t(1) << 31) || g.n_ctx_orig >= (int64_t(1) << 31)) return POSENC_ERR_INVALID;
  const float fs = g.freq_scale, ef = g.ext_factor;
  if (!positive_finite(g.freq_base) || !positive_finite(fs) || !std::isfinite(ef) || !positive_finite(g.attn_factor))
    return POSENC_ERR_INVALID;
  int64_t top = 0;
  for (int64_t i = 0; i < g.pairs; ++i) {
    const int64_t k = g.index ? g.index[i] : i;
    if (k < 0 || k >= (int64_t(1) << 31)) return POSENC_ERR_INVALID;
    top = std::max(top, k);
    if (g.factors && (!std::isfinite(g.factors[i]) || g.factors[i] == 0.0f)) return POSENC_ERR_INVALID;
  }
  Scheme s;
  s.r = g.n_dims;
  s.h = g.n_dims / 2;
  s.base = g.freq_base;
  s.L0 = g.n_ctx_orig;  // cd uses |n_ctx_orig| and |beta|: where it is finite, their signs agree

  // The ramp: low, high from the real correction dimensions; (high - i) / (high - low) between them when
  // high - low >= 1, else ggml's max(0.001, .) makes it a step at low (1 up to low, 0 after).
  int64_t low = 0, high = 0;
  if (ef != 0.0f && (!ggml_corr_dim(s, g.beta_fast, false, &low) || !ggml_corr_dim(s, g.beta_slow, true, &high)))
    return POSENC_ERR_INVALID;
  auto ramp = [&](int64_t i, int64_t *num, int64_t *den) {
    *den = 1;
    if (ef == 0.0f)
      *num = 0;
    else if (high - low >= 1) {
      *den = high - low;
      *num = std::min(std::max<int64_t>(high - i, 0), *den);
    } else {
      *num = i <= low ? 1 : 0;
    }
  };

  // The magnitude: attn_factor (1 - ln(freq_scale) / 10); it cancels only near freq_scale = e^10.
  double m = g.attn_factor;
  if (ef != 0.0f && fs != 1.0f) {
    const double t = std::fabs(std::log(double(fs))) / 10.0;
    m = round_verified(
        [&](int k) {
          const int n = kLimbs[k];
          return mp::mul(mp::from_double(g.attn_factor, n), mp::sub(one(n), mp::div_u64(mp::log(fs, n), 10)));
        },
        lost_bits(64.0 * (1.0 + t) / std::fmax(std::fabs(1.0 - t), 0x1p-900)));
  }
  if (!(m >= kMinAttention) || !(m <= kMaxAttention)) return POSENC_ERR_INVALID;

  // Each frequency: the power (as rope_powers, index k_i), times the blend (exact at 768 bits; the sum
  // cancels only when the blend is near 0, which its condition number pays for), over den c_i.
  const double G = std::fabs(std::log(double(g.freq_base)));
  const double power_amp = (1.0 + G * (1.0 + double(top) / double(s.h))) * 16.0 * double(s.h);
  auto value = [&](int64_t i) {
    int64_t num = 0, den = 1;
    ramp(i, &num, &den);
    const Num exact = ggml_blend(kLimbs[1], fs, ef, num, den);
    if (exact.is_zero()) return 0.0;
    const double terms =
        std::fabs(double(fs)) * double(den) + std::fabs(double(ef)) * double(num) * std::fabs(1.0 - double(fs));
    const double cond = terms / std::fabs(mp::to_double(exact));
    const int64_t k = g.index ? g.index[i] : i;
    const double c = g.factors ? double(g.factors[i]) : 1.0;
    return round_verified(
        [&](int lv) {
          const int n = kLimbs[lv];
          const Num v = mp::mul(s.freq(lv, k), ggml_blend(n, fs, ef, num, den));
          return div(v, mp::mul_u64(mp::from_double(c, n), uint64_t(den)));
        },
        lost_bits(power_amp * (1.0 + cond) * 8.0));
  };
  // The cheap range check in double: base^(-2k/n_dims) <= max(1, base^(-2 top / n_dims)), the blend below
  // 2^(128 + 31 + 129) / den, 1 / c_i below 2^149.
  if (!(std::fmax(0.0, -std::log2(double(g.freq_base))) * (double(top) / double(s.h)) + 289.0 + 149.0 < 998.0))
    for (int64_t i = 0; i < g.pairs; ++i)
      if (!(std::fabs(value(i)) < kMaxFrequency)) return POSENC_ERR_INVALID;
  for (int64_t i = 0; i < g.pairs; ++i) freq[i] = value(i);
  *attention = m;
  return POSENC_OK;
}

}  // namespace detail
}  // namespace posenc
