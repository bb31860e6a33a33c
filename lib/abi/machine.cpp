// posenc_machine_info: this build and this machine as the library sees them (posenc.h, "This build and this
// machine"): the paths compiled in, why the active one is active, the CPU facts the choice combines, the
// cache sizes and the non-temporal threshold derived from them. `posenc info` prints it.
#include <cstdint>

#include "abi/abi.hpp"
#include "dispatch/cpu.hpp"
#include "dispatch/dispatch.hpp"
#include "posenc/posenc.h"

namespace posenc {
namespace detail {
namespace {

constexpr const char *kFeatureNames[POSENC_FEATURE_COUNT] = {
    "osxsave",  "avx",      "fma",      "f16c",         "avx2",         "avx512f", "avx512cd",
    "avx512dq", "avx512bw", "avx512vl", "os-ymm-state", "os-zmm-state", "neon"};

uint32_t bit(posenc_feature f, bool on = true) { return on ? uint32_t(1) << unsigned(f) : 0u; }

posenc_path_reason reason_of(PathChoice c) {
  switch (c) {
    case PathChoice::kBestAvailable: return POSENC_PATH_BEST_AVAILABLE;
    case PathChoice::kEnvironment: return POSENC_PATH_ENVIRONMENT;
    case PathChoice::kForced: return POSENC_PATH_FORCED;
    case PathChoice::kEnvUnavailable: return POSENC_PATH_ENV_UNAVAILABLE;
    case PathChoice::kEnvUnknown: break;
  }
  return POSENC_PATH_ENV_UNKNOWN;
}

void features(posenc_machine &m) {
#if defined(__x86_64__)
  const X86Flags x = x86_flags(read_x86_registers());
  m.features_known = (uint32_t(1) << 12) - 1;  // OSXSAVE .. OS_ZMM_STATE
  m.features = bit(POSENC_FEATURE_OSXSAVE, x.osxsave) | bit(POSENC_FEATURE_AVX, x.avx) |
               bit(POSENC_FEATURE_FMA, x.fma) | bit(POSENC_FEATURE_F16C, x.f16c) | bit(POSENC_FEATURE_AVX2, x.avx2) |
               bit(POSENC_FEATURE_AVX512F, x.avx512f) | bit(POSENC_FEATURE_AVX512CD, x.avx512cd) |
               bit(POSENC_FEATURE_AVX512DQ, x.avx512dq) | bit(POSENC_FEATURE_AVX512BW, x.avx512bw) |
               bit(POSENC_FEATURE_AVX512VL, x.avx512vl) | bit(POSENC_FEATURE_OS_YMM_STATE, x.ymm_state) |
               bit(POSENC_FEATURE_OS_ZMM_STATE, x.zmm_state);
#else
  m.features_known = bit(POSENC_FEATURE_NEON);
  m.features = bit(POSENC_FEATURE_NEON, detect_cpu().neon);
#endif
}

}  // namespace
}  // namespace detail
}  // namespace posenc

using namespace posenc::detail;

extern "C" {

posenc_status posenc_machine_info(posenc_machine *out) {
  return guarded([&] {
    if (!out) return POSENC_ERR_NULL;
    posenc_machine m{};
    (void)posenc_active_isa();  // resolves the choice, as a first kernel call would
    for (int v = POSENC_ISA_SCALAR; v < POSENC_ISA_COUNT; ++v)
      if (isa_compiled(v)) m.compiled |= uint32_t(1) << unsigned(v);
    m.reason = reason_of(path_choice());
    features(m);
    const CacheSizes c = cache_sizes();
    m.l1d = c.l1d;
    m.l2 = c.l2;
    m.l3 = c.l3;
    m.l3_sharing = c.l3_sharing;
    m.cache_source = c.source;
    m.stream_threshold = stream_threshold_bytes();
    *out = m;
    return POSENC_OK;
  });
}

const char *posenc_feature_name(posenc_feature f) {
  const int v = int(f);
  return v >= 0 && v < POSENC_FEATURE_COUNT ? kFeatureNames[v] : nullptr;
}

}  // extern "C"
