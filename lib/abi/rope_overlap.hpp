// Whether the head rows of a RoPE call overlap (rope_api.cpp's checks; docs/rope.md, "Checks"): rows as
// lattices of byte ranges, decided exactly in 128-bit arithmetic, in O(1) for the layouts runtimes build and by
// a bounded pass otherwise.
#pragma once

#include <cstdint>

namespace posenc {
namespace detail {

using i128 = __int128;

// A lattice of rows: row (a, b) at base + a sa + b sb bytes for a < na, b < nb, each len bytes.
struct Lattice {
  i128 base;
  int64_t na, sa, nb, sb, len;
  i128 span() const { return i128(na - 1) * sa + i128(nb - 1) * sb + len; }  // bytes from base
};

// Whether two rows of one lattice overlap (refused undecided, as overlapping, past kExactPass rows).
bool self_overlaps(const Lattice &L);
// Whether a row of p overlaps a row of q (both non-empty).
bool cross_overlaps(Lattice p, Lattice q);

}  // namespace detail
}  // namespace posenc
