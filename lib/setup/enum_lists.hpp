// The one list of each RoPE enumeration's values (as lib/isa/isa_list.hpp is for the paths): X(ENUM, name) per
// value (the rope types' rows carry more: X(ENUM, name, ...)), in the enum's order, ENUM the suffix of the C
// enumerator and name the one spelling every interface uses (posenc_rope_*_name, posenc_rope_*_from_name, the `posenc`
// tool, the Python binding's strings and enum classes). tools/check_enum_lists.py (meson test enum-lists) checks
// posenc.h's and posenc.hpp's enums against these lists and fails on a hand-written list of the names elsewhere
// (docs/architecture.md, "Add a layout").
#pragma once

// posenc_rope_pairs: POSENC_ROPE_<ENUM>
#define POSENC_ROPE_PAIRS_LIST(X) \
  X(HALVES, halves)               \
  X(INTERLEAVED, interleaved)

// posenc_rope_type: POSENC_ROPE_TYPE_<ENUM>, X(ENUM, name, ...): each type's one definition, the rest of its row
// (setup/rope_types.hpp)
#include "setup/rope_types.hpp"

// posenc_rope_layout: POSENC_SECTIONS_<ENUM>
#define POSENC_ROPE_LAYOUT_LIST(X) \
  X(CHUNKED, chunked)              \
  X(INTERLEAVED, interleaved)      \
  X(VISION, vision)                \
  X(STRIDED, strided)              \
  X(INTERLEAVED_4, interleaved_4)  \
  X(ALTERNATING, alternating)      \
  X(PER_AXIS, per_axis)            \
  X(BALANCED, balanced)
