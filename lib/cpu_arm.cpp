// AArch64 feature detection: Advanced SIMD is part of the architecture, so the NEON path is always
// usable.
#include <unistd.h>

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

// The non-x86 paths never stream; this only keeps the decision defined (glibc often reports 0 here).
uint64_t stream_threshold_bytes() {
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE), l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  return stream_threshold_for(l2 > 0 ? uint64_t(l2) : 0, l3 > 0 ? uint64_t(l3) : 0, 1);
}

}  // namespace detail
}  // namespace posenc
