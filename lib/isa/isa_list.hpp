// The instruction-set paths, listed once. Everything that enumerates paths expands this list: dispatch
// (dispatch.cpp), the declarations and definitions of each path's entry points (isa_entry.hpp, one line per
// isa_<name>.cpp), the names of POSENC_ISA and posenc_isa_name. Outside the library, loops run to
// POSENC_ISA_COUNT (posenc.h); tools/check_isa_list.py holds the build, the tests and the Python enum to
// this list. docs/architecture.md, "Add an ISA", has the whole checklist.
//
//   X(ENUM, name, have): POSENC_ISA_<ENUM> is its posenc_isa value, `name` its one name everywhere
//   (namespace posenc::<name>, lib/isa/isa_<name>.cpp, POSENC_ISA=<name>, the meson option), `have` 1 when this
//   build compiled its unit (meson defines POSENC_HAVE_<ENUM> for those).
#pragma once

#include "posenc/posenc.h"

#ifndef POSENC_HAVE_AVX2
#define POSENC_HAVE_AVX2 0
#endif
#ifndef POSENC_HAVE_AVX512
#define POSENC_HAVE_AVX512 0
#endif
#ifndef POSENC_HAVE_NEON
#define POSENC_HAVE_NEON 0
#endif

#define POSENC_ISAS(X)                  \
  X(SCALAR, scalar, 1)                  \
  X(AVX2, avx2, POSENC_HAVE_AVX2)       \
  X(AVX512, avx512, POSENC_HAVE_AVX512) \
  X(NEON, neon, POSENC_HAVE_NEON)

namespace posenc {
namespace detail {

#define POSENC_ISA_ONE(E, n, have) +1
constexpr int kIsaCount = 0 POSENC_ISAS(POSENC_ISA_ONE);
#undef POSENC_ISA_ONE
static_assert(kIsaCount == POSENC_ISA_COUNT,
              "every posenc_isa enumerator of posenc.h needs its line in lib/isa/isa_list.hpp (and the other way)");

// Each line's enumerator is its index: the list is in the enum's order.
#define POSENC_ISA_VALUE(E, n, have) POSENC_ISA_##E,
constexpr posenc_isa kIsaValues[kIsaCount] = {POSENC_ISAS(POSENC_ISA_VALUE)};
#undef POSENC_ISA_VALUE
constexpr bool in_enum_order() {
  for (int i = 0; i < kIsaCount; ++i)
    if (int(kIsaValues[i]) != i) return false;
  return true;
}
static_assert(in_enum_order(), "lib/isa/isa_list.hpp lists the paths in posenc_isa's order, from 0");

#define POSENC_ISA_NAME(E, n, have) #n,
constexpr const char *kIsaNames[kIsaCount] = {POSENC_ISAS(POSENC_ISA_NAME)};
#undef POSENC_ISA_NAME

}  // namespace detail
}  // namespace posenc
