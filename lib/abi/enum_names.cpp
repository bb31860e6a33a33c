// The names of the RoPE enumerations' values, from their one list each (lib/setup/enum_lists.hpp): posenc.h,
// "Names of the enumerations".
#include <cstring>

#include "abi/abi.hpp"
#include "posenc/posenc.h"
#include "setup/enum_lists.hpp"

namespace posenc {
namespace detail {
namespace {

#define POSENC_NAME(ENUM, name, ...) #name,
constexpr const char *kPairs[] = {POSENC_ROPE_PAIRS_LIST(POSENC_NAME)};
constexpr const char *kTypes[] = {POSENC_ROPE_TYPE_LIST(POSENC_NAME)};
constexpr const char *kLayouts[] = {POSENC_ROPE_LAYOUT_LIST(POSENC_NAME)};
#undef POSENC_NAME

// Each list is the enum in order: value k is the list's k-th line.
constexpr int kPairsCount = int(sizeof kPairs / sizeof kPairs[0]);
constexpr int kTypesCount = int(sizeof kTypes / sizeof kTypes[0]);
constexpr int kLayoutsCount = int(sizeof kLayouts / sizeof kLayouts[0]);
constexpr int index_of(int v) { return v; }
#define POSENC_CHECK_PAIRS(ENUM, name) int(POSENC_ROPE_##ENUM),
#define POSENC_CHECK_TYPES(ENUM, name, ...) int(POSENC_ROPE_TYPE_##ENUM),
#define POSENC_CHECK_LAYOUTS(ENUM, name) int(POSENC_SECTIONS_##ENUM),
constexpr int kPairValues[] = {POSENC_ROPE_PAIRS_LIST(POSENC_CHECK_PAIRS)};
constexpr int kTypeValues[] = {POSENC_ROPE_TYPE_LIST(POSENC_CHECK_TYPES)};
constexpr int kLayoutValues[] = {POSENC_ROPE_LAYOUT_LIST(POSENC_CHECK_LAYOUTS)};
#undef POSENC_CHECK_PAIRS
#undef POSENC_CHECK_TYPES
#undef POSENC_CHECK_LAYOUTS
template <int N>
constexpr bool in_order(const int (&v)[N]) {
  for (int k = 0; k < N; ++k)
    if (v[k] != index_of(k)) return false;
  return true;
}
static_assert(in_order(kPairValues), "POSENC_ROPE_PAIRS_LIST is posenc_rope_pairs in order");
static_assert(in_order(kTypeValues), "POSENC_ROPE_TYPE_LIST is posenc_rope_type in order");
static_assert(in_order(kLayoutValues), "POSENC_ROPE_LAYOUT_LIST is posenc_rope_layout in order");

// The rope types' definitions (setup/rope_types.hpp), column by column in posenc_rope_keys' order.
struct TypeRow {
  const char *column[6];
};
#define POSENC_ROW(ENUM, name, summary, fields, accepted, transformers, elsewhere, aliases) \
  TypeRow{{summary, fields, accepted, transformers, elsewhere, aliases}},
constexpr TypeRow kTypeRows[] = {POSENC_ROPE_TYPE_LIST(POSENC_ROW)};
#undef POSENC_ROW
static_assert(sizeof kTypeRows / sizeof kTypeRows[0] == sizeof kTypes / sizeof kTypes[0], "a row per rope type");
constexpr int kColumns = 6;

const char *name_in(const char *const *names, int count, int v) { return v >= 0 && v < count ? names[v] : nullptr; }

// The value named `name` ('-' read as '_'), or -1.
int find(const char *const *names, int count, const char *name) {
  for (int k = 0; k < count; ++k) {
    const char *a = names[k], *b = name;
    while (*a && (*a == *b || (*a == '_' && *b == '-'))) ++a, ++b;
    if (!*a && !*b) return k;
  }
  return -1;
}

template <class E>
posenc_status from_name(const char *const *names, int count, const char *name, E *out) {
  if (!name || !out) return POSENC_ERR_NULL;
  const int k = find(names, count, name);
  if (k < 0) return POSENC_ERR_INVALID;
  *out = E(k);
  return POSENC_OK;
}

}  // namespace
}  // namespace detail
}  // namespace posenc

using namespace posenc::detail;

extern "C" {

const char *posenc_rope_pairs_name(posenc_rope_pairs pairs) {
  int v = 0;
  std::memcpy(&v, &pairs, sizeof v);
  return name_in(kPairs, kPairsCount, v);
}
const char *posenc_rope_type_name(posenc_rope_type type) {
  int v = 0;
  std::memcpy(&v, &type, sizeof v);
  return name_in(kTypes, kTypesCount, v);
}
const char *posenc_rope_layout_name(posenc_rope_layout layout) {
  int v = 0;
  std::memcpy(&v, &layout, sizeof v);
  return name_in(kLayouts, kLayoutsCount, v);
}
const char *posenc_rope_type_keys(posenc_rope_type type, posenc_rope_keys which) {
  int v = 0, w = 0;
  std::memcpy(&v, &type, sizeof v);
  std::memcpy(&w, &which, sizeof w);
  if (v < 0 || v >= kTypesCount || w < 0 || w >= kColumns) return nullptr;
  const char *s = kTypeRows[v].column[w];
  return w == POSENC_ROPE_KEYS_TRANSFORMERS && std::strcmp(s, "-") == 0 ? nullptr : s;
}
posenc_status posenc_rope_pairs_from_name(const char *name, posenc_rope_pairs *out) {
  return from_name(kPairs, kPairsCount, name, out);
}
posenc_status posenc_rope_type_from_name(const char *name, posenc_rope_type *out) {
  return from_name(kTypes, kTypesCount, name, out);
}
posenc_status posenc_rope_layout_from_name(const char *name, posenc_rope_layout *out) {
  return from_name(kLayouts, kLayoutsCount, name, out);
}

}  // extern "C"
