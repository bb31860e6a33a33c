// The x86 feature decision, a pure function of cpuid/xgetbv values: built on every architecture so the
// detection tests can run it on synthetic CPUs everywhere.
#include "cpu.hpp"

namespace posenc {
namespace detail {

CpuFeatures decide_x86(const X86Registers &r) {
  CpuFeatures f;
  const bool osxsave = (r.leaf1_ecx >> 27) & 1;
  const bool avx = (r.leaf1_ecx >> 28) & 1, fma = (r.leaf1_ecx >> 12) & 1, f16c = (r.leaf1_ecx >> 29) & 1;
  if (!osxsave || r.max_leaf < 7) return f;
  const bool ymm_saved = (r.xcr0 & 0x6) == 0x6;    // SSE and AVX state
  const bool zmm_saved = (r.xcr0 & 0xE6) == 0xE6;  // plus opmask, ZMM_Hi256, Hi16_ZMM
  const uint32_t b = r.leaf7_ebx;
  const bool avx2 = (b >> 5) & 1;
  f.avx2 = avx && fma && f16c && avx2 && ymm_saved;
  const bool avx512 = ((b >> 16) & 1) && ((b >> 17) & 1) && ((b >> 28) & 1) && ((b >> 30) & 1) && ((b >> 31) & 1);
  f.avx512 = f.avx2 && avx512 && zmm_saved;
  return f;
}

}  // namespace detail
}  // namespace posenc
