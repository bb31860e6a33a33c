// vLLM's NTK scaling (docs/rope.md, "vLLM's schemes"): f_i = (base s)^(-2i/r) s^(-2/r); with mixed_b = b > 0,
// f_i = base^(-2i/r) s^(-((i+1)/h)^b).
#include "setup/rope_family.hpp"

namespace posenc {
namespace detail {
namespace scheme {
namespace {

posenc_status read(const posenc_rope_scaling &sc, Scheme &s, double *) {
  if (!positive_finite(sc.factor)) return POSENC_ERR_INVALID;
  if (sc.mixed_b != 0.0 && !positive_finite(sc.mixed_b)) return POSENC_ERR_INVALID;
  // ((i + 1) / h)^b = exp(b ln((i + 1) / h)): mp::exp takes |x| < 2^40; past b ln h = 2^30 every pair but the
  // last has lambda = 1 to far below any precision (a degenerate scheme), refused
  if (sc.mixed_b != 0.0 && !(sc.mixed_b * std::log(double(s.h)) < 0x1p30)) return POSENC_ERR_INVALID;
  s.factor = sc.factor;
  s.mixed_b = sc.mixed_b;
  return POSENC_OK;
}

double top(const Scheme &s) { return 2.0 * factor_top(s); }  // s^(-(i+1)/h) <= 1/s

// G + ln s; mixed: ln s ((i+1)/h)^b through two exps
double amplification(const Scheme &s) {
  const double lns = std::fabs(std::log(s.factor));
  return plain_amplification(s) + lns + 4.0 * lns * (2.0 + s.mixed_b * (std::log(double(s.h)) + 1.0));
}

void constants(Scheme &s, Scheme::Level &l, int n) {
  if (s.mixed_b == 0.0) {  // (base s)^(-2i/r) s^(-2/r)
    l.G = mp::add(l.G, l.ln_s);
    l.ntk_c = mp::exp(mp::neg(mp::div_u64(l.ln_s, uint64_t(s.h))));
  } else {
    l.ln_h = ln_num(mp::from_i64(s.h, n));
    l.b = mp::from_double(s.mixed_b, n);
  }
}

Num freq(Scheme &s, Scheme::Level &l, int n, int64_t i, const Num &inv) {
  if (s.mixed_b == 0.0) return mp::mul(inv, l.ntk_c);
  // inv / lambda_i, lambda_i = exp(a (i + 1)^b) with a = ln s / h^b: s^(((i + 1) / h)^b)
  const Num t = mp::exp(mp::mul(l.b, mp::sub(ln_num(mp::from_i64(i + 1, n)), l.ln_h)));
  return mp::mul(inv, mp::exp(mp::neg(mp::mul(l.ln_s, t))));
}

}  // namespace

const Family kFamilyNTK{false, nullptr, read, never_plain, top, amplification, constants, freq};

}  // namespace scheme
}  // namespace detail
}  // namespace posenc
