// The exact evaluation the RoPE schemes share (lib/setup/rope_init.cpp's HF and vLLM schemes, lib/setup/rope_ggml.cpp's
// ggml scheme, lib/setup/rope_sections.cpp's powers through rope_powers): multi-precision helpers, Ziv's rounding
// to the nearest double (round_verified), and Scheme, a scheme's validated parameters with its per-precision
// constants. Each written double is the nearest to the formula's real value (rope_init.cpp says how).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "posenc/posenc.h"
#include "setup/mp.hpp"

namespace posenc {
namespace detail {
namespace scheme {

using mp::Num;

constexpr int kLevels = 3;
constexpr int kLimbs[kLevels] = {6, 12, 24};  // 384, 768, 1536 bits
constexpr double kMaxFrequency = 0x1p1000;    // the same bound as posenc_spec's |position_scale * w_i|
constexpr double kMinAttention = 0x1p-64, kMaxAttention = 0x1p64;

// The double nearest a, ties to even, subnormals included; |a| < 2^1024.
double round_double(const Num &a);
// 1 / b, sqrt(z), ln(x) at a's precision (mp.hpp's operations; relative error a few units of the last limb).
Num recip(const Num &b);
Num div(const Num &a, const Num &b);
Num sqrt_num(const Num &z);
Num ln_num(const Num &x);
// 1 at n limbs.
Num one(int n);
// Bits of relative error a value computed at any precision may carry, from an amplification estimate
// (condition number times op count); 48 bits cover mp::exp's squarings and the op chains.
int lost_bits(double amplification);
bool positive_finite(double x);

// The correctly rounded double of a quantity: eval(level) returns it at kLimbs[level] limbs with relative
// error below 2^(lost - 64 limbs). Verified levels start where that leaves 128 bits.
template <class Eval>
double round_verified(Eval &&eval, int lost) {
  int level = 0;
  while (level + 1 < kLevels && 64 * kLimbs[level] - lost < 128) ++level;
  for (;; ++level) {
    const Num a = eval(level);
    const bool last = level + 1 == kLevels;
    const int64_t k = 64 * int64_t(kLimbs[level]) - lost;
    if (k < 60) {
      if (last) return round_double(a);  // no useful bound: the best value there is
      continue;
    }
    const Num d = mp::ldexp(mp::abs(a), -k);
    const double lo = round_double(mp::sub(a, d)), hi = round_double(mp::add(a, d));
    if (std::memcmp(&lo, &hi, sizeof lo) == 0) return lo;
    // Still straddling the midpoint of two adjacent doubles at 1536 bits: the value is that midpoint (the
    // dynamic base can make one exactly), so ties go to even. Were it only within 2^-1400 of it, either
    // neighbour would still be within 1 ULP.
    if (last) {
      if (std::nextafter(lo, hi) != hi) return round_double(a);
      uint64_t b;
      std::memcpy(&b, &lo, sizeof b);
      return (b & 1) == 0 ? lo : hi;
    }
  }
}

// Everything a scheme needs, validated; then the per-precision constants, built on first use.
struct Scheme {
  int type = POSENC_ROPE_TYPE_DEFAULT;
  int64_t r = 0, h = 0;
  double base = 0, factor = 1;
  int64_t L0 = 0;
  // dynamic: L = max(seq_len, L0); or vLLM's NTK alpha (HunYuan), which replaces the length rule
  int64_t L = 0;
  double alpha = 0;
  // yarn
  double beta_fast = 32, beta_slow = 1;
  bool truncate = true;
  int64_t low_i = 0, high_i = 0;  // truncate: the clamped integer range
  bool equal_range = false;       // truncate: low == high (HF adds 0.001 to high)
  // llama3
  double lff = 0, hff = 0;
  // longrope
  const double *ext = nullptr;
  // proportional: the pairs below it rotate (as linear), the others have frequency 0
  int64_t rotated = 0;
  // vLLM's schemes: ntk's mixed_b (0: fixed NTK); the YaRN variants' extrapolation factor e in [0, 1]
  double mixed_b = 0, ext_factor = 1;
  int lost = 48;  // for the frequencies

  struct Level {
    bool ready = false;
    Num G;           // ln of the base of the power: base^(-2i/r) = exp(-(i/h) G)
    Num inv_factor;  // 1 / factor
    Num low, den;    // yarn without truncate: low and den = high - low (made positive, sign in den_neg)
    bool den_neg = false;
    Num c, lff, hff, band;          // llama3: c = L0 / (2 pi); band = hff - lff
    Num ln_s, ntk_c, ln_h, b, ext;  // ntk: ln factor, factor^(-1/h), ln h, mixed_b; the YaRN variants' e
    // base^(-2i/r) for consecutive i as a chain of products by rho = exp(-G / h): one multiplication per
    // pair instead of an exp, i relative roundings more (lost counts log2(h) bits for them)
    Num rho, cur;
    int64_t cur_i = -1;
  } lv[kLevels];

  Num cd(int n, double beta) const;  // YaRN's correction dimension for beta, at n limbs

  // The ramp of the floored / ceiled correction range: clamp((i - low) / (high - low), 0, 1), with HF's and
  // vLLM's high + 0.001 when low == high.
  Num ramp(int n, int64_t i) const;

  Level &level(int k);  // the constants at level k, made on first use

  // f_i at level k.
  Num freq(int k, int64_t i);
};

// Where a correction dimension c = cd(beta), computed at level k, lies among the integers: its nearest integer
// and the side of the rest (-1, 0, 1). False while the error interval still holds an integer (cd is
// transcendental, so it never is one); the last level decides all the same.
bool locate(const Scheme &s, double beta, int k, const Num &c, int64_t *near, int *side);

}  // namespace scheme
}  // namespace detail
}  // namespace posenc
