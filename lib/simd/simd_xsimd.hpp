// What the x86 paths' kernel interfaces share (simd_avx2.hpp, simd_avx512.hpp): the operations xsimd gives on
// doubles and floats. Arithmetic on doubles goes through xsimd; what xsimd 8.1 does not offer (narrowing two
// double vectors into one float vector, lane shuffles, half-precision conversions) each ISA's file writes with
// intrinsics. Included only by isa_avx2.cpp / isa_avx512.cpp, each compiled with its own -m flags.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <xsimd/xsimd.hpp>

#include "simd/fast_check.hpp"

namespace posenc {

template <class A>
struct Simd;

// Operations that only depend on xsimd, shared by the x86 specialisations through inheritance. Fused
// multiply-adds are not among them: xsimd 8.1 has no AVX-512 fma kernel and silently falls back to an
// unfused x * y + z, which breaks the error-free transformations; each specialisation writes its own.
template <class A>
struct SimdXsimd {
  using D = xsimd::batch<double, A>;
  using F = xsimd::batch<float, A>;
  static constexpr int W = int(D::size);

  static D set(double x) { return D(x); }
  static D load(const double *p) { return D::load_aligned(p); }
  static void store(double *p, const D &v) { v.store_aligned(p); }
  // Keeps a loaded value in its register: without it GCC folds the load into each instruction that
  // uses the value, loading it again for each (values_rows.hpp, row_pass). No effect on the value.
  static void pin(D &v) { asm("" : "+v"(v.data)); }
  static D abs(const D &a) { return xsimd::abs(a); }
  static D min(const D &a, const D &b) { return xsimd::min(a, b); }
  static F splat(float x) { return F(x); }
  static F load_f(const float *p) { return F::load_unaligned(p); }
  static void store_f(float *p, const F &v) { v.store_unaligned(p); }
};

}  // namespace posenc
