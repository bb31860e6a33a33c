// Results do not depend on the caller's floating-point environment: flush-to-zero, denormals-are-zero
// and a directed rounding mode are set aside for the call and restored after it.
#include <catch2/catch.hpp>

#include <cfenv>
#include <cmath>
#include <cstring>
#include <vector>
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

#include "support/paths.hpp"

namespace {

uint64_t control_word() {
#if defined(__x86_64__)
  return _mm_getcsr() & ~0x3Fu;  // without the sticky flags
#elif defined(__aarch64__)
  uint64_t v;
  __asm__ volatile("mrs %0, fpcr" : "=r"(v));
  return v;
#else
  return 0;
#endif
}

void set_hostile_environment() {
  std::fesetround(FE_TOWARDZERO);
#if defined(__x86_64__)
  _mm_setcsr(_mm_getcsr() | 0x8040u);  // FTZ and DAZ
#elif defined(__aarch64__)
  uint64_t v;
  __asm__ volatile("mrs %0, fpcr" : "=r"(v));
  v |= (uint64_t(1) << 24) | (uint64_t(1) << 19);  // FZ, FZ16
  __asm__ volatile("msr fpcr, %0" : : "r"(v));
#endif
}

}  // namespace

TEST_CASE("flush-to-zero and directed rounding in the caller change nothing", "[fpenv]") {
  posenc_spec s = posenc_spec_default(64);
  s.position_scale = 1e-38;  // angles below 2^-126: float subnormal results
  posenc_spec t = posenc_spec_default(96);
  for (posenc_isa isa : ref::paths())
    ref::on_path(isa, [&] {
      std::vector<float> a(64 * 40), b(64 * 40), c(96 * 40), d(96 * 40);
      REQUIRE(posenc_table_f32(&s, -20, 40, a.data(), 64) == POSENC_OK);
      REQUIRE(posenc_table_f32(&t, 123456, 40, c.data(), 96) == POSENC_OK);
      const std::fenv_t saved = [] {
        std::fenv_t e;
        std::fegetenv(&e);
        return e;
      }();
      set_hostile_environment();
      const uint64_t hostile = control_word();
      REQUIRE(posenc_table_f32(&s, -20, 40, b.data(), 64) == POSENC_OK);
      REQUIRE(posenc_table_f32(&t, 123456, 40, d.data(), 96) == POSENC_OK);
      const uint64_t after = control_word();
      std::fesetenv(&saved);
      INFO("path " << posenc_isa_name(isa));
      CHECK(after == hostile);  // the caller's environment is back
      CHECK(std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
      CHECK(std::memcmp(c.data(), d.data(), c.size() * 4) == 0);
      bool subnormal = false;
      for (float v : a) subnormal = subnormal || (v != 0.0f && std::fabs(v) < 1.17549435e-38f);
      CHECK(subnormal);  // the subnormal results were really produced, not flushed
    });
}
