// Building and caching the per-spec frequency tables (freq.hpp).
//
// u_i = frac4(2 s w_i / pi) with w_i = r^i, r = base^(-1/D): one exp and one log at the working precision,
// then one multiplication per pair. The precision covers the 256 bits kept below the point, the bits of
// the integer part that the reduction modulo 4 throws away (up to 1000 for the largest valid frequency),
// the error growth of the product chain (log2 h bits) and of exp (24 bits), plus guard bits.
#include "setup/freq.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <new>

#include "setup/freq_build.hpp"
#include "setup/mp.hpp"

namespace posenc {
namespace detail {
namespace {

constexpr double kMaxLog2Frequency = 1000.0;

int layout_value(const posenc_spec &spec) {
  int v = 0;
  static_assert(sizeof(spec.layout) == sizeof(int), "posenc_layout is int-sized");
  std::memcpy(&v, &spec.layout, sizeof v);
  return v;
}

double resolved_denominator(const posenc_spec &spec) {
  const int64_t h = spec.d_model / 2;
  return spec.freq_denominator == 0.0 ? double(h) : spec.freq_denominator;
}

// log2 of the largest |s w_i|, estimated in double; -inf when s == 0 or there are no pairs.
double max_log2_frequency(const posenc_spec &spec) {
  const int64_t h = spec.d_model / 2;
  if (h == 0 || spec.position_scale == 0.0) return -HUGE_VAL;
  const double log2r = -std::log2(spec.base) / resolved_denominator(spec);
  double m = std::log2(std::fabs(spec.position_scale));
  if (h > 1 && log2r > 0) m += double(h - 1) * log2r;
  return m;
}

}  // namespace

Freq::~Freq() { ::operator delete(storage, std::align_val_t(64)); }

namespace {
// Field by field, doubles by their bits (the struct may have padding).
bool same_fields(const posenc_spec &a, const posenc_spec &b) {
  return a.d_model == b.d_model && std::memcmp(&a.layout, &b.layout, sizeof a.layout) == 0 &&
         std::memcmp(&a.base, &b.base, sizeof a.base) == 0 &&
         std::memcmp(&a.freq_denominator, &b.freq_denominator, sizeof a.freq_denominator) == 0 &&
         std::memcmp(&a.position_scale, &b.position_scale, sizeof a.position_scale) == 0;
}
}  // namespace

posenc_status check_spec(const posenc_spec &spec) {
  // The last spec this thread found valid: a runtime passes the same spec on every step, and the
  // frequency bound below takes two logarithms (a fifth of a decode step's time at d = 64).
  thread_local posenc_spec last_valid{};
  thread_local bool have_last = false;
  if (have_last && same_fields(spec, last_valid)) return POSENC_OK;
  const int layout = layout_value(spec);
  if (spec.d_model < 1) return POSENC_ERR_INVALID;
  if (layout < POSENC_INTERLEAVED || layout > POSENC_COS_SIN_HALVES) return POSENC_ERR_INVALID;
  if (!(spec.base > 0.0) || !std::isfinite(spec.base)) return POSENC_ERR_INVALID;
  if (!(spec.freq_denominator >= 0.0) || !std::isfinite(spec.freq_denominator)) return POSENC_ERR_INVALID;
  if (!std::isfinite(spec.position_scale)) return POSENC_ERR_INVALID;
  if (!(max_log2_frequency(spec) < kMaxLog2Frequency)) return POSENC_ERR_INVALID;
  last_valid = spec;
  have_last = true;
  return POSENC_OK;
}

// The storage of a table of h pairs (all zero), with the key fields left to the caller; nullptr when
// memory ran out or the size cannot exist. values: room for the h explicit frequencies.
std::unique_ptr<Freq> allocate(int64_t h, bool values) {
  const int64_t padded = (h + Freq::kPad - 1) / Freq::kPad * Freq::kPad + Freq::kPad;
  // A d_model no memory could hold (api.cpp only bounds the caller's buffers) must fail here: a size that
  // wrapped around size_t would allocate a small block that the loops below write far past. No object is
  // larger than PTRDIFF_MAX, so such a request is refused without asking the allocator.
  size_t doubles, bytes, lanes;
  if (__builtin_mul_overflow(size_t(padded), size_t(8 + 2 * Freq::kSteps + (values ? 1 : 0)), &doubles) ||
      __builtin_mul_overflow(doubles, sizeof(double), &bytes) ||
      __builtin_mul_overflow(size_t(padded), 2 * sizeof(LaneExact), &lanes) ||
      __builtin_add_overflow(bytes, lanes, &bytes) || bytes > size_t(PTRDIFF_MAX))
    return nullptr;
  void *storage = ::operator new(bytes, std::align_val_t(64), std::nothrow);
  if (storage == nullptr) return nullptr;
  std::unique_ptr<Freq> f(new (std::nothrow) Freq);
  if (!f) {
    ::operator delete(storage, std::align_val_t(64));
    return nullptr;
  }
  // Everything zero but the rotation table, which fill_tables writes whole (41 KiB of the 48 at d = 128:
  // a new explicit spec's setup spent a fifth of its time here).
  const size_t table_bytes = sizeof(double) * size_t(2 * Freq::kSteps) * size_t(padded);
  const size_t head_bytes = sizeof(double) * size_t(5) * size_t(padded);
  std::memset(storage, 0, head_bytes);
  std::memset(static_cast<char *>(storage) + head_bytes + table_bytes, 0, bytes - head_bytes - table_bytes);
  f->storage = storage;
  f->h = h;
  f->padded = padded;
  double *d = static_cast<double *>(storage);
  f->u0 = d;
  f->u1 = d + padded;
  f->u2 = d + 2 * padded;
  f->slow = d + 3 * padded;
  f->reach = d + 4 * padded;
  f->step = d + 5 * padded;
  f->U0 = f->step + 2 * Freq::kSteps * padded;  // after the table: zeroed with the rest
  f->U1 = f->U0 + padded;
  f->U2 = f->U1 + padded;
  f->exact = reinterpret_cast<LaneExact *>(f->U2 + padded);
  f->whole = f->exact + padded;
  f->values = values ? reinterpret_cast<double *>(f->whole + padded) : nullptr;
  // Padding lanes get a generic angle so that their (never written) values rarely need a fallback.
  for (int64_t i = h; i < padded; ++i) f->u0[i] = 0.7390851332151607;
  return f;
}

// Limbs for frequencies up to 2^top: the 256 bits kept below the point, the bits of the integer part that
// the reduction modulo 4 throws away, chain_bits of error growth (the product chain of a base-derived
// spec, log2 h bits, and exp's 24), plus guard bits.
int limbs_for(double top, double chain_bits) {
  const double bits = 256 + 64 + 32 + std::max(0.0, top) + chain_bits + 8;
  return std::min(mp::kMaxLimbs, int(std::ceil(bits / 64.0)));
}

// U_i = 2 s w_i / pi unreduced, for real-valued positions (freq.hpp).
static void set_whole(Freq &f, int64_t i, const mp::Num &whole, int n) {
  const mp::Num w4 = mp::resize(whole, 4);
  LaneExact &ex = f.whole[i];
  std::memcpy(ex.m, w4.m, sizeof ex.m);
  ex.e = w4.e;
  ex.neg = w4.neg;
  ex.kind = kNormal;
  if (whole.is_zero() || whole.e < kTinyExponent || whole.e > 1024) return;  // the lane is slow anyway
  const double a = mp::to_double(whole);
  const mp::Num rest = mp::sub(whole, mp::from_double(a, n));
  const double b = rest.is_zero() ? 0.0 : mp::to_double(rest);
  f.U0[i] = a;
  f.U1[i] = b;
  f.U2[i] = b == 0.0 ? 0.0 : mp::to_double(mp::sub(rest, mp::from_double(b, n)));
}

// Pair i of the angle per position w = s w_i (exact or to the working precision of n limbs): u_i = frac4(2 w
// / pi) split into three doubles and a 256-bit copy, or marked for exact.cpp when negligible or tiny.
void set_pair(Freq &f, int64_t i, const mp::Num &w, bool negligible, bool neg, const mp::Num &two_over_pi, int n) {
  LaneExact &ex = f.exact[i];
  if (negligible || w.is_zero() || w.e < kNegligibleExponent) {
    ex.kind = kNegligible;
    ex.neg = neg;
    f.whole[i] = ex;
    f.slow[i] = HUGE_VAL;
    return;
  }
  const mp::Num whole = mp::mul(w, two_over_pi);
  set_whole(f, i, whole, n);
  const mp::Num u = mp::mod4_centered(whole);
  const mp::Num u4 = mp::resize(u, 4);
  std::memcpy(ex.m, u4.m, sizeof ex.m);
  ex.e = u4.e;
  ex.neg = u4.neg;
  ex.kind = kNormal;
  if (u.is_zero() || u.e < kTinyExponent) {
    f.slow[i] = HUGE_VAL;
  } else {
    const double a = mp::to_double(u);
    const mp::Num rest = mp::sub(u, mp::from_double(a, n));
    const double b = mp::to_double(rest);
    f.u0[i] = a;
    f.u1[i] = b;
    f.u2[i] = mp::to_double(mp::sub(rest, mp::from_double(b, n)));
  }
}

// What every table needs once its u_i are set: the clear-distance factors and the rotation table.
void finish(Freq &f, FillTables fill) {
  // The step angle is |u0| pi/2 radians (u is centred in [-2, 2)); the factor 1 + 2^-20 covers the
  // roundings here and of the product in Simd::clear_steps, whose - 1 is further margin (docs/math.md
  // section 5). A zero step (position_scale 0) never turns away from its anchor's exact (0, 1): reach 0.
  for (int64_t i = 0; i < f.padded; ++i)
    f.reach[i] =
        f.slow[i] != 0.0 || f.u0[i] == 0.0 ? 0.0 : 1.0 / (1.5707963267948966 * std::fabs(f.u0[i]) * (1.0 + 0x1p-20));
  // On the active path (vectorised: most of a new spec's setup time), by the caller's fill
  fill(f);
}

std::unique_ptr<Freq> build_frequencies(const posenc_spec &spec, FillTables fill) {
  const int64_t h = spec.d_model / 2;
  std::unique_ptr<Freq> f = allocate(h, false);
  if (!f) return nullptr;
  f->base = spec.base;
  f->denominator = resolved_denominator(spec);
  f->scale = spec.position_scale;

  const double s = spec.position_scale;
  if (h > 0 && s != 0.0) {
    const int n = limbs_for(std::ceil(max_log2_frequency(spec)) + 2.0, std::ceil(std::log2(double(h) + 1.0)));
    const double log2r = -std::log2(spec.base) / f->denominator;
    const bool r_vanishes = log2r < -1.0e6;  // every pair after the first is negligible
    mp::Num r = mp::zero(n);
    if (!r_vanishes && h > 1) {
      // x = -ln(base) / D, with D = Dm 2^De exactly: a division by the 53-bit integer Dm
      int de = 0;
      const double dm = std::frexp(f->denominator, &de);  // D = dm 2^de, dm in [1/2, 1)
      const uint64_t dmi = uint64_t(std::ldexp(dm, 53));
      mp::Num x = mp::div_u64(mp::log(spec.base, n), dmi);
      x = mp::neg(mp::ldexp(x, 53 - de));
      r = mp::exp(x);
    }
    const mp::Num two_over_pi = mp::two_over_pi(n);
    mp::Num w = mp::from_double(s, n);  // s w_i, i = 0
    for (int64_t i = 0; i < h; ++i) {
      set_pair(*f, i, w, i > 0 && r_vanishes, s < 0, two_over_pi, n);
      if (i + 1 < h) w = mp::mul(w, r);
    }
  }
  finish(*f, fill);
  return f;
}

posenc_status check_real_positions_spec(const posenc_spec &spec) {
  return max_log2_frequency(spec) < 52.0 ? POSENC_OK : POSENC_ERR_INVALID;
}

posenc_status check_explicit(const double *freq, int64_t h, double scale) {
  // |scale f_i| < 2^1000 without a logarithm per value (a decode step checks its spec every call): the
  // product of the magnitudes overflows to +inf rather than pass.
  const double s = std::fabs(scale), limit = std::ldexp(1.0, int(kMaxLog2Frequency));
  for (int64_t i = 0; i < h; ++i) {
    if (!std::isfinite(freq[i])) return POSENC_ERR_INVALID;
    if (!(std::fabs(freq[i]) * s < limit)) return POSENC_ERR_INVALID;
  }
  return POSENC_OK;
}

namespace {

// What identifies a table: a spec's base, resolved denominator and scale (any table with at least the
// pairs asked for serves), or RoPE's explicit frequencies and scale (the same h values, bit for bit).
struct Key {
  double base, denominator, scale;
  const double *values;  // explicit frequencies, or nullptr
  int64_t h;
  bool matches(const Freq &f) const {
    if (std::memcmp(&scale, &f.scale, sizeof scale) != 0) return false;
    if (values) return f.values && f.h == h && std::memcmp(values, f.values, sizeof(double) * size_t(h)) == 0;
    return !f.values && f.h >= h && std::memcmp(&base, &f.base, sizeof base) == 0 &&
           std::memcmp(&denominator, &f.denominator, sizeof denominator) == 0;
  }
};

// Shared cache: a few entries, least recently used out. A thread keeps its own references to what it
// used last, so the common path takes no lock and no atomic operation, and an entry stays alive while a
// thread still holds it even after the shared cache dropped it. Memory: at most kShared + kLocal entries
// per thread.
constexpr int kShared = 16;
constexpr int kLocal = 4;

struct SharedCache {
  std::mutex mu;
  std::shared_ptr<const Freq> slot[kShared];
  uint64_t used[kShared] = {};
  uint64_t clock = 0;
};

SharedCache &shared_cache() {
  static SharedCache c;
  return c;
}

struct LocalCache {
  std::shared_ptr<const Freq> slot[kLocal];
  int next = 0;
};

template <class Build>
std::shared_ptr<const Freq> shared_lookup(const Key &key, Build build) {
  SharedCache &c = shared_cache();
  std::lock_guard<std::mutex> lock(c.mu);
  ++c.clock;
  int victim = 0;
  for (int k = 0; k < kShared; ++k) {
    const std::shared_ptr<const Freq> &e = c.slot[k];
    if (e && key.matches(*e)) {
      c.used[k] = c.clock;
      return e;
    }
    if (c.used[k] < c.used[victim]) victim = k;
  }
  // A same-key entry with fewer pairs is replaced by the wider one.
  if (!key.values) {
    for (int k = 0; k < kShared; ++k)
      if (c.slot[k] && !c.slot[k]->values && std::memcmp(&key.base, &c.slot[k]->base, sizeof key.base) == 0 &&
          std::memcmp(&key.denominator, &c.slot[k]->denominator, sizeof key.denominator) == 0 &&
          std::memcmp(&key.scale, &c.slot[k]->scale, sizeof key.scale) == 0)
        victim = k;
  }
  std::unique_ptr<Freq> built = build();
  if (!built) return nullptr;
  try {
    c.slot[victim] = std::shared_ptr<const Freq>(built.release());
  } catch (...) {
    return nullptr;
  }
  c.used[victim] = c.clock;
  return c.slot[victim];
}

template <class Build>
const Freq *lookup(const Key &key, Build build) {
  thread_local LocalCache local;
  for (const auto &e : local.slot)
    if (e && key.matches(*e)) return e.get();
  std::shared_ptr<const Freq> e = shared_lookup(key, build);
  if (!e) return nullptr;
  local.slot[local.next] = std::move(e);
  const Freq *p = local.slot[local.next].get();
  local.next = (local.next + 1) % kLocal;
  return p;
}

}  // namespace

const Freq *frequencies(const posenc_spec &spec, FillTables fill) {
  const Key key{spec.base, resolved_denominator(spec), spec.position_scale, nullptr, spec.d_model / 2};
  return lookup(key, [&] { return build_frequencies(spec, fill); });
}

const Freq *explicit_frequencies(const double *freq, int64_t h, double scale, FillTables fill) {
  const Key key{0.0, 0.0, scale, freq, h};
  return lookup(key, [&] { return build_explicit(freq, h, scale, fill); });
}

}  // namespace detail
}  // namespace posenc
