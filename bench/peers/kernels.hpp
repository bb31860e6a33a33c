// The vector peers, written once over V, a small struct of intrinsics that each ISA unit defines in an
// anonymous namespace (V::Reg, kLanes, set1, loadu, mul, add, sub, storeu from LaneOps, and its own store_zip).
// Every template here takes V, so each instantiation is local to its unit and built with that unit's flags only.
#pragma once

// xsimd 8.1 defines two helpers of its large-argument sin/cos reduction as plain inline functions, not
// templates on the arch, so every ISA unit would emit a copy of the same symbol built with its own flags
// and the linker would keep one for all (the ODR trap of docs/architecture.md, "Who may include what": the AVX2 peer
// could end up running AVX-512 code). Each unit renames them to a name of its own before xsimd is seen.
#ifndef PEERS_UNIT
#error "define PEERS_UNIT (the ISA name) before including kernels.hpp"
#endif
#ifdef XSIMD_HPP
#error "kernels.hpp must be the first to include xsimd in a peer unit"
#endif
#define PEERS_CAT2(a, b) a##_##b
#define PEERS_CAT(a, b) PEERS_CAT2(a, b)
#define __kernel_rem_pio2 PEERS_CAT(kernel_rem_pio2, PEERS_UNIT)
#define __ieee754_rem_pio2 PEERS_CAT(ieee754_rem_pio2, PEERS_UNIT)
#include <xsimd/xsimd.hpp>
#undef __kernel_rem_pio2
#undef __ieee754_rem_pio2

#include "naive.hpp"
#include "row_loop.hpp"

namespace peers {
namespace {  // this header is included by one ISA unit each (PEERS_UNIT): LaneOps stays local to it, like V

// V's element-wise operations on the raw registers of xsimd's Arch (__m256, __m512, float32x4_t): through
// xsimd's batch, each is that ISA's one intrinsic (_mm256_mul_ps, vmulq_f32, ...), and Reg stays the register
// type SLEEF takes and returns. A unit's V derives from LaneOps and adds its interleaving store, store_zip.
template <class Arch>
struct LaneOps {
  using B = xsimd::batch<float, Arch>;
  using Reg = typename B::register_type;
  static constexpr int64_t kLanes = int64_t(B::size);
  static Reg set1(float x) { return B(x); }
  static Reg loadu(const float *p) { return B::load_unaligned(p); }
  static Reg mul(Reg a, Reg b) { return B(a) * B(b); }
  static Reg add(Reg a, Reg b) { return B(a) + B(b); }
  static Reg sub(Reg a, Reg b) { return B(a) - B(b); }
  static void storeu(float *p, Reg a) { B(a).store_unaligned(p); }
};

}  // namespace

// SLEEF sincos on the float32 angle fl(p * w); Sincos returns a struct of the sin and cos vectors (x, y).
template <class V, auto Sincos>
struct SleefKernel {
  static constexpr int64_t kLanes = V::kLanes;
  static typename V::Reg position(float p) { return V::set1(p); }
  static void put(typename V::Reg p, const float *w, float *o) {
    const auto sc = Sincos(V::mul(p, V::loadu(w)));
    V::store_zip(o, sc.x, sc.y);
  }
};

// xsimd's sincos on the same angle. xsimd 8.1's zip_lo/zip_hi only unpack within 128-bit halves, so the
// interleave is V's.
template <class V, class Arch>
struct XsimdKernel {
  using B = xsimd::batch<float, Arch>;
  static_assert(int64_t(B::size) == V::kLanes, "one register per step");
  static constexpr int64_t kLanes = V::kLanes;
  static B position(float p) { return B(p); }
  static void put(const B &p, const float *w, float *o) {
    const auto sc = xsimd::sincos(p * B::load_unaligned(w));
    V::store_zip(o, sc.first, sc.second);
  }
};

// The unit's entries: SLEEF u10 and u35, xsimd, and the naive passes compiled with the unit's flags.
template <class V, auto U10, auto U35, class Arch>
Unit make_unit(posenc_isa isa, const char *u10, const char *u35, const char *xs) {
  return Unit{{{u10, isa, fill_rows<SleefKernel<V, U10>>},
               {u35, isa, fill_rows<SleefKernel<V, U35>>},
               {xs, isa, fill_rows<XsimdKernel<V, Arch>>}},
              {isa, Naive<V>::three_pass, Naive<V>::two_pass, Naive<V>::fill}};
}

}  // namespace peers
