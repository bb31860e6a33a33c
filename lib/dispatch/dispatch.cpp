// Path selection (dispatch.hpp) and the ISA functions of the C ABI.
#include "dispatch/dispatch.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "dispatch/cpu.hpp"
#include "isa/isa_entry.hpp"
#include "isa/isa_list.hpp"
#include "posenc/posenc.h"

namespace posenc {
namespace detail {
namespace {

const char *const *const kNames = kIsaNames;

// A path's entry points when this build has its unit (isa_list.hpp's `have`), else none. The generic lambda
// names the unit's functions only when called: a path not compiled in is never referred to.
template <int kHave, class Make>
const Path *path_if(Make make) {
  if constexpr (kHave != 0) {
    static const Path p = make(0);
    return &p;
  } else {
    return nullptr;
  }
}

// Which paths this build contains.
const Path *compiled(int isa) {
#define POSENC_ISA_CASE(E, n, have) \
  case POSENC_ISA_##E:              \
    return path_if<have>([](auto) { return Path{n::run, n::run_learned, n::run_rope, n::fill_tables}; });
  switch (isa) {
    POSENC_ISAS(POSENC_ISA_CASE)
    default: return nullptr;
  }
#undef POSENC_ISA_CASE
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
    r.kinds = !*kind                          ? kTable | kLearned | kRope
              : !std::strcmp(kind, "table")   ? kTable
              : !std::strcmp(kind, "learned") ? kLearned
              : !std::strcmp(kind, "rope")    ? kRope
                                              : 0;
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
    if (j.cache)
      flip(j.cos_out, Dst::kF32);
    else
      flip(j.t[0].heads ? j.t[0].x : j.t[1].x, j.dst);
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
#define POSENC_ISA_CASE(E, n, have) \
  case POSENC_ISA_##E: return Wrapped<POSENC_ISA_##E>::path();
  switch (isa) {
    POSENC_ISAS(POSENC_ISA_CASE)
    default: return nullptr;
  }
#undef POSENC_ISA_CASE
}

}  // namespace hook
#endif

bool supported(int isa) {
  static const CpuFeatures cpu = detect_cpu();
#define POSENC_ISA_CASE(E, n, have) \
  case POSENC_ISA_##E: return cpu.n;
  switch (isa) {
    POSENC_ISAS(POSENC_ISA_CASE)
    default: return false;
  }
#undef POSENC_ISA_CASE
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

void fill_tables(Freq &f) {
  const Path *path = active_path();
  if (path)
    path->fill_tables(f);
  else
    scalar::fill_tables(f);
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
