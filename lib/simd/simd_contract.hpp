// The operation set every path's Simd<A> must provide (simd_scalar.hpp, simd_avx2.hpp, simd_avx512.hpp, simd_neon.hpp),
// checked when the kernel is instantiated for it (kernel.hpp): a new ISA that lacks one gets a message naming the
// operation, not an error deep inside a template. docs/architecture.md, "The SIMD operation set", says what
// each does; simd_scalar.hpp is the reference implementation, one pair per "vector".
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

// The traits name vector types (__m256d, float32x4_t) as template arguments, which GCC reports as dropping
// their alignment attributes: harmless here, where they only appear in unevaluated operands.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wignored-attributes"

namespace posenc {
namespace simd_contract {

template <class S>
using D = typename S::D;  // W doubles
template <class S>
using F = typename S::F;  // 2W floats
template <class S>
using H = typename S::H;  // W floats
template <class T>
T &val();  // a value of type T in an unevaluated operand

// has_<op><S>: S::op can be called with these arguments.
#define POSENC_SIMD_OP(op, ...)         \
  template <class S, class = void>      \
  struct has_##op : std::false_type {}; \
  template <class S>                    \
  struct has_##op<S, std::void_t<decltype(S::op(__VA_ARGS__))>> : std::true_type {};

// doubles
POSENC_SIMD_OP(set, 1.0)
POSENC_SIMD_OP(load, val<const double *>())
POSENC_SIMD_OP(store, val<double *>(), val<D<S>>())
POSENC_SIMD_OP(pin, val<D<S>>())
POSENC_SIMD_OP(fma, val<D<S>>(), val<D<S>>(), val<D<S>>())
POSENC_SIMD_OP(fms, val<D<S>>(), val<D<S>>(), val<D<S>>())
POSENC_SIMD_OP(fnma, val<D<S>>(), val<D<S>>(), val<D<S>>())
POSENC_SIMD_OP(abs, val<D<S>>())
POSENC_SIMD_OP(min, val<D<S>>(), val<D<S>>())
POSENC_SIMD_OP(quadrant, val<D<S>>(), val<D<S>>(), val<D<S>>(), val<D<S>>(), val<D<S>>())
POSENC_SIMD_OP(any_nan_d, val<D<S>>(), val<D<S>>())
// doubles to floats, and the acceptance test (fast_check.hpp)
POSENC_SIMD_OP(narrow2, val<D<S>>(), val<D<S>>())
POSENC_SIMD_OP(narrow2_zip, val<D<S>>(), val<D<S>>(), val<typename S::Consts>())
POSENC_SIMD_OP(consts)
POSENC_SIMD_OP(pin_consts, val<typename S::Consts>())
POSENC_SIMD_OP(decided, val<D<S>>(), val<D<S>>(), val<F<S>>(), val<typename S::Consts>())
POSENC_SIMD_OP(same_bits, val<F<S>>(), val<F<S>>())
POSENC_SIMD_OP(zip, val<F<S>>())
POSENC_SIMD_OP(narrow, val<D<S>>())
POSENC_SIMD_OP(narrow_odd, val<D<S>>())
POSENC_SIMD_OP(widen, val<H<S>>())
// floats
POSENC_SIMD_OP(splat, 1.0f)
POSENC_SIMD_OP(combine, val<H<S>>(), val<H<S>>())
POSENC_SIMD_OP(lo, val<F<S>>())
POSENC_SIMD_OP(hi, val<F<S>>())
POSENC_SIMD_OP(fmaf, val<F<S>>(), val<F<S>>(), val<F<S>>())
POSENC_SIMD_OP(mulf, val<F<S>>(), val<F<S>>())
POSENC_SIMD_OP(any_nan, val<F<S>>())
POSENC_SIMD_OP(any_bf16_tie, val<H<S>>())
POSENC_SIMD_OP(any_f32_tie, val<D<S>>())
POSENC_SIMD_OP(narrow_sum, val<D<S>>(), val<D<S>>())
// memory: floats, halves (bf16 / f16 bits), streaming
POSENC_SIMD_OP(load_f, val<const float *>())
POSENC_SIMD_OP(store_f, val<float *>(), val<F<S>>())
POSENC_SIMD_OP(load_h, val<const float *>())
POSENC_SIMD_OP(store_h, val<float *>(), val<H<S>>())
POSENC_SIMD_OP(load_h_bf16, val<const uint16_t *>())
POSENC_SIMD_OP(load_h_f16, val<const uint16_t *>())
POSENC_SIMD_OP(store_h_bf16, val<uint16_t *>(), val<H<S>>())
POSENC_SIMD_OP(store_h_bf16_finite, val<uint16_t *>(), val<H<S>>())
POSENC_SIMD_OP(store_h_f16, val<uint16_t *>(), val<H<S>>())
POSENC_SIMD_OP(load2_bf16, val<const uint16_t *>(), val<const uint16_t *>())
POSENC_SIMD_OP(load2_f16, val<const uint16_t *>(), val<const uint16_t *>())
POSENC_SIMD_OP(store2_bf16, val<uint16_t *>(), val<uint16_t *>(), val<F<S>>())
POSENC_SIMD_OP(store2_f16, val<uint16_t *>(), val<uint16_t *>(), val<F<S>>())
POSENC_SIMD_OP(stream_f, val<float *>(), val<F<S>>())
POSENC_SIMD_OP(stream_h, val<float *>(), val<H<S>>())
POSENC_SIMD_OP(stream_copy, val<float *>(), val<const float *>(), int64_t(0))
POSENC_SIMD_OP(store_fence)
// the rotation of interleaved pairs (simd_rotate.hpp, RotateSteps::interleaved), on the paths with W > 1
POSENC_SIMD_OP(swap_pairs, val<D<S>>())
// the quad pass's (values_rows.hpp), on the paths with kQuadPass
POSENC_SIMD_OP(decided_window, val<D<S>>(), val<D<S>>())
POSENC_SIMD_OP(clear_steps, val<D<S>>(), val<D<S>>(), val<D<S>>())
#undef POSENC_SIMD_OP

template <class S, class = void>
struct has_types : std::false_type {};
template <class S>
struct has_types<S, std::void_t<typename S::D, typename S::F, typename S::H, typename S::Consts, decltype(S::W),
                                decltype(S::kCanStream), decltype(S::kQuadPass)>> : std::true_type {};

// One static_assert per operation, so that the compiler names the missing one.
template <class S>
constexpr bool check() {
  static_assert(has_types<S>::value, "Simd<A> must define D, F, H, Consts, W, kCanStream and kQuadPass");
#define POSENC_REQUIRE(op)          \
  static_assert(has_##op<S>::value, \
                "Simd<A> lacks the operation " #op " (docs/architecture.md, \"The SIMD operation set\")")
  POSENC_REQUIRE(set);
  POSENC_REQUIRE(load);
  POSENC_REQUIRE(store);
  POSENC_REQUIRE(pin);
  POSENC_REQUIRE(fma);
  POSENC_REQUIRE(fms);
  POSENC_REQUIRE(fnma);
  POSENC_REQUIRE(abs);
  POSENC_REQUIRE(min);
  POSENC_REQUIRE(quadrant);
  POSENC_REQUIRE(any_nan_d);
  POSENC_REQUIRE(narrow2);
  POSENC_REQUIRE(narrow2_zip);
  POSENC_REQUIRE(consts);
  POSENC_REQUIRE(pin_consts);
  POSENC_REQUIRE(decided);
  POSENC_REQUIRE(same_bits);
  POSENC_REQUIRE(zip);
  POSENC_REQUIRE(narrow);
  POSENC_REQUIRE(narrow_odd);
  POSENC_REQUIRE(widen);
  POSENC_REQUIRE(splat);
  POSENC_REQUIRE(combine);
  POSENC_REQUIRE(lo);
  POSENC_REQUIRE(hi);
  POSENC_REQUIRE(fmaf);
  POSENC_REQUIRE(mulf);
  POSENC_REQUIRE(any_nan);
  POSENC_REQUIRE(any_bf16_tie);
  POSENC_REQUIRE(any_f32_tie);
  POSENC_REQUIRE(narrow_sum);
  POSENC_REQUIRE(load_f);
  POSENC_REQUIRE(store_f);
  POSENC_REQUIRE(load_h);
  POSENC_REQUIRE(store_h);
  POSENC_REQUIRE(load_h_bf16);
  POSENC_REQUIRE(load_h_f16);
  POSENC_REQUIRE(store_h_bf16);
  POSENC_REQUIRE(store_h_bf16_finite);
  POSENC_REQUIRE(store_h_f16);
  POSENC_REQUIRE(load2_bf16);
  POSENC_REQUIRE(load2_f16);
  POSENC_REQUIRE(store2_bf16);
  POSENC_REQUIRE(store2_f16);
  POSENC_REQUIRE(stream_f);
  POSENC_REQUIRE(stream_h);
  POSENC_REQUIRE(stream_copy);
  POSENC_REQUIRE(store_fence);
  if constexpr (S::W > 1) {
    POSENC_REQUIRE(swap_pairs);
  }
  if constexpr (S::kQuadPass) {
    POSENC_REQUIRE(decided_window);
    POSENC_REQUIRE(clear_steps);
  }
#undef POSENC_REQUIRE
  return true;
}

}  // namespace simd_contract
}  // namespace posenc

#pragma GCC diagnostic pop
