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

#ifdef POSENC_TEST_HOOKS
// Test builds only: tests/meson.build compiles this unit with POSENC_TEST_HOOKS into the test program
// posenc-hooked, ahead of the library archive, so that the archive's own dispatch object (which has no
// hook) is never linked there; the library and the installed tools never contain this. With
// POSENC_TEST_WRONG_PATH=ISA[:table|learned|rope], that path flips the lowest bit of the first element
// each kernel call of that kind writes (table: every table, rows, add and embed call; learned:
// embed_learned; rope: caches and rotations): one ULP wrong, which `posenc check` must report.
namespace hook {

constexpr int kTable = 1, kLearned = 2, kRope = 4;
struct Wrong {
  int isa = -1, kinds = 0;
};
const Wrong &wrong() {
  static const Wrong w = [] {
    Wrong r;
    const char *env = std::getenv("POSENC_TEST_WRONG_PATH");
    if (!env) return r;
    const char *colon = std::strchr(env, ':');
    const size_t len = colon ? size_t(colon - env) : std::strlen(env);
    for (int isa = 0; isa < kIsaCount; ++isa)
      if (std::strlen(kNames[isa]) == len && std::strncmp(env, kNames[isa], len) == 0) r.isa = isa;
    const char *kind = colon ? colon + 1 : "";
    r.kinds = !*kind ? kTable | kLearned | kRope
              : !std::strcmp(kind, "table") ? kTable
              : !std::strcmp(kind, "learned") ? kLearned
              : !std::strcmp(kind, "rope") ? kRope : 0;
    return r;
  }();
  return w;
}

void flip(void *p, Dst dst) {
  if (!p) return;
  if (dst == Dst::kF32) {
    uint32_t b;
    std::memcpy(&b, p, 4);
    b ^= 1;
    std::memcpy(p, &b, 4);
  } else {
    *static_cast<uint16_t *>(p) ^= 1;
  }
}

template <int kIsa>
struct Wrapped {
  static const Path &real() { return *compiled(kIsa); }
  static void run(const Job &j) {
    real().run(j);
    if (wrong().kinds & kTable) flip(j.out, j.dst);
  }
  static void run_learned(const LearnedJob &j) {
    real().run_learned(j);
    if (wrong().kinds & kLearned) flip(j.out, Dst::kF32);
  }
  static void run_rope(const RopeJob &j) {
    real().run_rope(j);
    if (!(wrong().kinds & kRope)) return;
    if (j.cache) flip(j.cos_out, Dst::kF32);
    else flip(j.t[0].heads ? j.t[0].x : j.t[1].x, j.dst);
  }
  static void fill_tables(Freq &f) { real().fill_tables(f); }
  static const Path *path() {
    static const Path p{run, run_learned, run_rope, fill_tables};
    return &p;
  }
};

// The path kernel calls use: the wrong one for the named ISA.
const Path *used(int isa) {
  if (isa != wrong().isa || !compiled(isa)) return compiled(isa);
  switch (isa) {
    case 0: return Wrapped<0>::path();
    case 1: return Wrapped<1>::path();
    case 2: return Wrapped<2>::path();
    default: return Wrapped<3>::path();
  }
}

}  // namespace hook
#endif

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

// Whether the active path came from POSENC_ISA or posenc_force_isa (path_choice; the state itself does
// not say).
std::atomic<bool> g_from_env{false}, g_forced{false};

// State: -1 unresolved; 0..3 the active path; kRefused + isa when POSENC_ISA asked for an unavailable
// path; kUnknownName when it named none.
constexpr int kUnresolved = -1, kRefused = 16, kUnknownName = 32;
std::atomic<int> g_state{kUnresolved};

int choose() {
  const char *env = std::getenv("POSENC_ISA");
  if (env != nullptr && env[0] != '\0') {
    for (int isa = 0; isa < kIsaCount; ++isa)
      if (std::strcmp(env, kNames[isa]) == 0) {
        if (!available(isa)) return kRefused + isa;
        g_from_env.store(true, std::memory_order_relaxed);  // the same in every thread that chooses
        return isa;
      }
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
#ifdef POSENC_TEST_HOOKS
  return s >= 0 && s < kIsaCount ? hook::used(s) : nullptr;
#else
  return s >= 0 && s < kIsaCount ? compiled(s) : nullptr;
#endif
}

bool isa_compiled(int isa) { return compiled(isa) != nullptr; }

PathChoice path_choice() {
  const int s = state();
  if (s == kUnknownName) return PathChoice::kEnvUnknown;
  if (s >= kRefused) return PathChoice::kEnvUnavailable;
  if (g_forced.load(std::memory_order_acquire)) return PathChoice::kForced;
  return g_from_env.load(std::memory_order_relaxed) ? PathChoice::kEnvironment : PathChoice::kBestAvailable;
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
  g_forced.store(true, std::memory_order_release);
  g_state.store(v, std::memory_order_release);
  return POSENC_OK;
}

}  // extern "C"
