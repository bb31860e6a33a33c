// Path selection (dispatch.hpp) and the ISA functions of the C ABI.
#include "dispatch.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "cpu.hpp"
#include "isa_entry.hpp"
#include "posenc/posenc.h"

namespace posenc {
namespace detail {
namespace {

constexpr int kIsaCount = 4;
const char *const kNames[kIsaCount] = {"scalar", "avx2", "avx512", "neon"};

// Which paths this build contains (meson defines POSENC_HAVE_<ISA> for the units it compiled).
const Path *compiled(int isa) {
  static const Path scalar_path{scalar::run, scalar::run_learned, scalar::run_rope, scalar::fill_tables};
#ifdef POSENC_HAVE_AVX2
  static const Path avx2_path{avx2::run, avx2::run_learned, avx2::run_rope, avx2::fill_tables};
#endif
#ifdef POSENC_HAVE_AVX512
  static const Path avx512_path{avx512::run, avx512::run_learned, avx512::run_rope, avx512::fill_tables};
#endif
#ifdef POSENC_HAVE_NEON
  static const Path neon_path{neon::run, neon::run_learned, neon::run_rope, neon::fill_tables};
#endif
  switch (isa) {
    case POSENC_ISA_SCALAR: return &scalar_path;
#ifdef POSENC_HAVE_AVX2
    case POSENC_ISA_AVX2: return &avx2_path;
#endif
#ifdef POSENC_HAVE_AVX512
    case POSENC_ISA_AVX512: return &avx512_path;
#endif
#ifdef POSENC_HAVE_NEON
    case POSENC_ISA_NEON: return &neon_path;
#endif
    default: return nullptr;
  }
}

bool supported(int isa) {
  static const CpuFeatures cpu = detect_cpu();
  switch (isa) {
    case POSENC_ISA_SCALAR: return true;
    case POSENC_ISA_AVX2: return cpu.avx2;
    case POSENC_ISA_AVX512: return cpu.avx512;
    case POSENC_ISA_NEON: return cpu.neon;
    default: return false;
  }
}

bool available(int isa) { return compiled(isa) != nullptr && supported(isa); }

// State: -1 unresolved; 0..3 the active path; kRefused + isa when POSENC_ISA asked for an unavailable
// path; kUnknownName when it named none.
constexpr int kUnresolved = -1, kRefused = 16, kUnknownName = 32;
std::atomic<int> g_state{kUnresolved};

int choose() {
  const char *env = std::getenv("POSENC_ISA");
  if (env != nullptr && env[0] != '\0') {
    for (int isa = 0; isa < kIsaCount; ++isa)
      if (std::strcmp(env, kNames[isa]) == 0) return available(isa) ? isa : kRefused + isa;
    return kUnknownName;
  }
  for (int isa : {POSENC_ISA_AVX512, POSENC_ISA_AVX2, POSENC_ISA_NEON})
    if (available(isa)) return isa;
  return POSENC_ISA_SCALAR;
}

int state() {
  int s = g_state.load(std::memory_order_acquire);
  if (s != kUnresolved) return s;
  int expected = kUnresolved;
  const int chosen = choose();  // the same answer in every thread: no harm if two compute it
  if (g_state.compare_exchange_strong(expected, chosen, std::memory_order_acq_rel)) return chosen;
  return expected;
}

}  // namespace

const Path *active_path() {
  const int s = state();
  return s >= 0 && s < kIsaCount ? compiled(s) : nullptr;
}

}  // namespace detail
}  // namespace posenc

using namespace posenc::detail;

extern "C" {

posenc_isa posenc_active_isa(void) {
  const int s = state();
  if (s < kIsaCount) return posenc_isa(s);
  if (s >= kRefused && s < kRefused + kIsaCount) return posenc_isa(s - kRefused);
  return POSENC_ISA_SCALAR;
}

const char *posenc_isa_name(posenc_isa isa) {
  const int v = int(isa);
  return v >= 0 && v < kIsaCount ? kNames[v] : "unknown";
}

int posenc_isa_available(posenc_isa isa) { return available(int(isa)) ? 1 : 0; }

posenc_status posenc_force_isa(posenc_isa isa) {
  const int v = int(isa);
  if (v < 0 || v >= kIsaCount) return POSENC_ERR_INVALID;
  if (!available(v)) return POSENC_ERR_UNSUPPORTED;
  g_state.store(v, std::memory_order_release);
  return POSENC_OK;
}

}  // extern "C"
