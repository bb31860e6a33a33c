// AArch64 feature detection: Advanced SIMD is part of the architecture, so the NEON path is always
// usable.
#include "dispatch/cpu.hpp"

namespace posenc {
namespace detail {

CpuFeatures detect_cpu() {
  CpuFeatures f;
#if defined(__aarch64__)
  f.neon = true;
#endif
  return f;
}

// The non-x86 paths never stream; this only keeps the decision defined (glibc often reports 0 here).
CacheSizes cache_sizes() { return cache_sizes_from_sysconf(); }

}  // namespace detail
}  // namespace posenc
