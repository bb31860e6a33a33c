// posenc_rope_init: the frequencies and attention scale of every HF transformers rope_type, evaluated from
// the real-valued formula (docs/rope.md, "Scalings") rather than from HF's float32 tensors.
//
// Each written f_i is the double nearest the formula's real value. The value is computed with the integer
// multi-precision of mp.hpp (the same bits on every architecture), with an a-priori bound on its relative
// error, and rounded only when the whole error interval rounds to one double (Ziv's strategy); otherwise the
// precision grows, 384 -> 768 -> 1536 bits. An interval that still straddles the midpoint of two doubles at
// 1536 bits is taken to be that midpoint (ties to even; a dynamic base can make one exactly); anything else
// left undecided there (absurd parameters) takes the nearest double of the 1536-bit value. libm is used only
// to size the precision and to decide whether the cheap frequency-range check suffices; neither choice can
// change a written bit.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "posenc/posenc.h"
#include "setup/enum_lists.hpp"
#include "setup/mp.hpp"
#include "setup/rope_family.hpp"
#include "setup/rope_powers.hpp"
#include "setup/rope_scheme.hpp"
#include "setup/rope_setup.hpp"

namespace posenc {
namespace detail {

using namespace scheme;

namespace {

int type_value(const posenc_rope_scaling &s) {
  int v = 0;
  static_assert(sizeof(s.type) == sizeof(int), "posenc_rope_type is int-sized");
  std::memcpy(&v, &s.type, sizeof v);
  return v;
}

#define POSENC_FAMILY_OF(ENUM, ...) &kFamily##ENUM,
const Family *const kFamilies[] = {POSENC_ROPE_TYPE_LIST(POSENC_FAMILY_OF)};  // setup/rope_types.hpp's order
#undef POSENC_FAMILY_OF
constexpr int kTypes = int(sizeof kFamilies / sizeof kFamilies[0]);

}  // namespace

namespace scheme {

const Family *family_of(int type) { return type >= 0 && type < kTypes ? kFamilies[type] : nullptr; }

double plain_amplification(const Scheme &s) { return 1.0 + std::fabs(std::log(s.base)); }
double factor_top(const Scheme &s) { return std::fmax(0.0, -std::log2(s.factor)); }
Num return_inv(Scheme &, Scheme::Level &, int, int64_t, const Num &inv) { return inv; }
bool never_plain(const Scheme &, bool, double *) { return false; }

posenc_status explicit_attention(double a, double *out) {
  if (!std::isfinite(a) || !(a >= kMinAttention) || !(a <= kMaxAttention)) return POSENC_ERR_INVALID;
  *out = a;
  return POSENC_OK;
}

}  // namespace scheme

// posenc_rope_init: the checks every type shares, in the documented order (NULL before INVALID), then the
// type's family (lib/setup/schemes/): its parameters and refusals, a plain spec, or each frequency rounded by
// Ziv's strategy from the family's exact evaluation.
posenc_status rope_init(posenc_rope *rope, int64_t rotary_dim, double base, const posenc_rope_scaling *scaling,
                        double *freq) {
  if (rope == nullptr) return POSENC_ERR_NULL;
  Scheme s;
  s.type = scaling == nullptr ? int(POSENC_ROPE_TYPE_DEFAULT) : type_value(*scaling);
  const Family *family = family_of(s.type);
  if (family == nullptr) return POSENC_ERR_INVALID;
  if (!family->array_optional && freq == nullptr) return POSENC_ERR_NULL;
  if (family->pointers) {
    const posenc_status st = family->pointers(*scaling);
    if (st != POSENC_OK) return st;
  }
  if (rotary_dim < 2 || rotary_dim % 2 != 0) return POSENC_ERR_INVALID;
  if (!positive_finite(base)) return POSENC_ERR_INVALID;
  s.r = rotary_dim;
  s.h = rotary_dim / 2;
  s.base = base;
  s.rotated = s.h;

  double attention = 1.0;
  static const posenc_rope_scaling kNone{};
  posenc_status st = family->read(scaling ? *scaling : kNone, s, &attention);
  if (st != POSENC_OK) return st;

  double position_scale = 1.0;
  if (family->plain(s, freq != nullptr, &position_scale)) {  // base^(-2i/r): no explicit frequencies
    posenc_rope out = posenc_rope_default(rotary_dim);
    out.base = base;
    out.position_scale = position_scale;
    *rope = out;
    return POSENC_OK;
  }

  s.lost = lost_bits(family->amplification(s) * 16.0 * double(s.h));
  const int64_t nonzero = s.rotated;  // proportional: the pairs past it have frequency 0
  auto value = [&](int64_t i) { return round_verified([&](int k) { return s.freq(k, i); }, s.lost); };
  // The cheap frequency-range check in double: no f_i can reach 2^1000 (1 bit of margin for libm)
  const bool surely_in_range = std::fmax(0.0, -std::log2(s.base)) + family->top(s) < 998.0;
  if (!surely_in_range)
    for (int64_t i = 0; i < nonzero; ++i)
      if (!(value(i) < kMaxFrequency)) return POSENC_ERR_INVALID;

  for (int64_t i = 0; i < s.h; ++i) freq[i] = i < nonzero ? value(i) : 0.0;
  posenc_rope out = posenc_rope_default(rotary_dim);
  out.base = base;
  out.freq = freq;
  out.attention_scale = attention;
  *rope = out;
  return POSENC_OK;
}

posenc_status rope_powers(int64_t rotary_dim, double base, int64_t n, PowerIndex index, double *out) {
  Scheme s;
  s.r = rotary_dim;
  s.h = rotary_dim / 2;
  s.base = base;
  int64_t top = 0;
  for (int64_t k = 0; k < n; ++k) top = std::max(top, index.of(index.ctx, k));
  // exp(-(i/h) G) loses (i/h) |G| of relative accuracy to G's error; the chain of products is not used
  // for indices out of sequence (each is exp of its own), so the usual count covers them
  const double G = std::fabs(std::log(base));
  s.lost = lost_bits((1.0 + G * (1.0 + double(top) / double(s.h))) * 16.0 * double(s.h));
  auto value = [&](int64_t i) { return round_verified([&](int k) { return s.freq(k, i); }, s.lost); };
  // The cheap range check (as surely_in_range): base^(-i/h) <= max(1, base^(-top/h))
  if (!(std::fmax(0.0, -std::log2(base)) * (double(top) / double(s.h)) < 998.0))
    for (int64_t k = 0; k < n; ++k)
      if (!(value(index.of(index.ctx, k)) < kMaxFrequency)) return POSENC_ERR_INVALID;
  for (int64_t k = 0; k < n; ++k) out[k] = value(index.of(index.ctx, k));
  return POSENC_OK;
}

}  // namespace detail
}  // namespace posenc
