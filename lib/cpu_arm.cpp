// AArch64 feature detection: Advanced SIMD is part of the architecture, so the NEON path is always
// usable.
#include "cpu.hpp"

namespace posenc {
namespace detail {

CpuFeatures detect_cpu() {
  CpuFeatures f;
#if defined(__aarch64__)
  f.neon = true;
#endif
  return f;
}

}  // namespace detail
}  // namespace posenc
