// HF's dynamic NTK and vLLM's NTK alpha (docs/rope.md, "Every scheme"): base' = base X^(r/(r-2)), X = factor L / L0
// - factor + 1 with L = max(seq_len, L0), or X = alpha (HunYuan); f_i = base'^(-2i/r), evaluated from the real
// base' (its logarithm), never a rounded one.
#include "setup/rope_family.hpp"

namespace posenc {
namespace detail {
namespace scheme {
namespace {

posenc_status read(const posenc_rope_scaling &sc, Scheme &s, double *) {
  if (s.r == 2) return POSENC_ERR_INVALID;  // base' has the exponent r / (r - 2)
  if (sc.alpha != 0.0) {                    // base' = base alpha^(r / (r - 2)); factor and the lengths are not read
    if (!positive_finite(sc.alpha)) return POSENC_ERR_INVALID;
    s.alpha = sc.alpha;
    return POSENC_OK;
  }
  if (!positive_finite(sc.factor) || sc.original_max_positions < 1 || sc.seq_len < 0) return POSENC_ERR_INVALID;
  s.factor = sc.factor;
  s.L0 = sc.original_max_positions;
  s.L = sc.seq_len > s.L0 ? sc.seq_len : s.L0;
  return POSENC_OK;
}

// L == L0 (base' = base, as HF resets to its original inv_freq) or alpha 1: the default spec
bool plain(const Scheme &s, bool, double *) { return (s.alpha == 0.0 && s.L == s.L0) || s.alpha == 1.0; }

// base' = base X^(r/(r-2)), r/(r-2) <= 2: only alpha can make X < 1
double top(const Scheme &s) { return s.alpha != 0.0 ? 2.0 * std::fmax(0.0, -std::log2(s.alpha)) : 0.0; }

double amplification(const Scheme &s) {
  const double x = s.alpha != 0.0 ? 2.0 * std::fabs(std::log(s.alpha))
                                  : 2.0 * std::log1p(s.factor * (double(s.L - s.L0) / double(s.L0)));
  return plain_amplification(s) + x;
}

// G = ln base + (r / (r - 2)) ln X
void constants(Scheme &s, Scheme::Level &l, int n) {
  Num x;
  if (s.alpha != 0.0) {
    x = mp::from_double(s.alpha, n);
  } else {
    x = mp::mul(mp::from_double(s.factor, n), mp::from_i64(s.L - s.L0, n));
    x = mp::add(mp::div_u64(x, uint64_t(s.L0)), one(n));
  }
  const Num lx = mp::div_u64(mp::mul_u64(ln_num(x), uint64_t(s.h)), uint64_t(s.h - 1));
  l.G = mp::add(l.G, lx);
}

}  // namespace

const Family kFamilyDYNAMIC{false, nullptr, read, plain, top, amplification, constants, return_inv};

}  // namespace scheme
}  // namespace detail
}  // namespace posenc
