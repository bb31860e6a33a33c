// Grok-1's theta_scale (docs/rope.md, "vLLM's schemes"): base' = base^(ln(L0 s / 2 pi) / ln(L0 / 2 pi)), f_i =
// base'^(-2i/r); attention 1.
#include "setup/rope_family.hpp"

namespace posenc {
namespace detail {
namespace scheme {
namespace {

posenc_status read(const posenc_rope_scaling &sc, Scheme &s, double *) {
  // ln(L0 / 2 pi) must be positive (L0 >= 7)
  if (!positive_finite(sc.factor) || sc.original_max_positions < 7) return POSENC_ERR_INVALID;
  s.factor = sc.factor;
  s.L0 = sc.original_max_positions;
  return POSENC_OK;
}

double ln_ratio(const Scheme &s) { return std::log(double(s.L0)) - std::log(2.0 * M_PI); }  // ln(L0 / 2 pi)

double top(const Scheme &s) {  // exp(-(i/h) G) <= max(1, exp(-G))
  const double d = ln_ratio(s);
  return std::fmax(0.0, -std::log2(s.base) * (d + std::log(s.factor)) / d);
}

// |G| = |ln base (d + ln s) / d|, and the cancellation in d scales G's error
double amplification(const Scheme &s) {
  const double d = ln_ratio(s), num = d + std::log(s.factor), lns = std::fabs(std::log(s.factor));
  return 1.0 + std::fabs(std::log(s.base) * num / d) +
         std::fabs(std::log(s.base)) * (std::log(double(s.L0)) + 4.0 + lns) * (1.0 + std::fabs(num / d)) / d;
}

void constants(Scheme &s, Scheme::Level &l, int n) {  // ln base' = ln base ln(L0 s / 2 pi) / ln(L0 / 2 pi)
  const Num d = mp::sub(ln_num(mp::from_i64(s.L0, n)), ln_num(mp::ldexp(mp::pi(n), 1)));
  l.G = div(mp::mul(l.G, mp::add(d, l.ln_s)), d);
}

}  // namespace

const Family kFamilyTHETA_SCALE{false, nullptr, read, never_plain, top, amplification, constants, return_inv};

}  // namespace scheme
}  // namespace detail
}  // namespace posenc
