// The overlap decisions of the RoPE calls (rope_overlap.hpp).
#include "abi/rope_overlap.hpp"

#include <utility>

namespace posenc {
namespace detail {
namespace {

// The longest exact overlap pass a call may take (rows of a layout that does not nest, or token offsets
// times heads where q and k spans meet); beyond it the layout is refused without a decision. Nothing a
// runtime builds gets there, and a call cannot spend seconds in its argument checks.
constexpr int64_t kExactPass = int64_t(1) << 16;

// floor and ceil of p / q for q > 0
i128 floor_div(i128 p, i128 q) { return p >= 0 ? p / q : -((-p + q - 1) / q); }
i128 ceil_div(i128 p, i128 q) { return -floor_div(-p, q); }

// Whether some d2 in [lo2, hi2] has |c + d2 s2| < len (s2 >= 0).
bool hits(i128 c, i128 s2, i128 lo2, i128 hi2, i128 len) {
  if (lo2 > hi2) return false;
  if (s2 == 0) return c > -len && c < len;
  // -len < c + d2 s2 < len  <=>  (-len - c) / s2 < d2 < (len - c) / s2
  const i128 lo = floor_div(-len - c, s2) + 1, hi = ceil_div(len - c, s2) - 1;
  return (lo > lo2 ? lo : lo2) <= (hi < hi2 ? hi : hi2);
}

}  // namespace

// Whether two rows of one lattice overlap: some (da, db) != (0, 0), |da| < na, |db| < nb, with
// |da sa + db sb| < len. Rows nested inside each other's stride take O(1); otherwise one pass over the
// dimension with fewer rows.
bool self_overlaps(const Lattice &L) {
  int64_t n1 = L.na, s1 = L.sa, n2 = L.nb, s2 = L.sb;
  if (n1 == 1 && n2 == 1) return false;
  if (n1 == 1) return s2 < L.len;
  if (n2 == 1) return s1 < L.len;
  if (s1 > s2) {  // s1 the smaller stride
    std::swap(n1, n2);
    std::swap(s1, s2);
  }
  if (s1 >= L.len && i128(s2) >= i128(n1 - 1) * s1 + L.len) return false;  // nested: [T,H,D], [H,T,D], QKV
  if (n1 > n2) {                                                           // iterate over the shorter dimension
    std::swap(n1, n2);
    std::swap(s1, s2);
  }
  if (n1 > kExactPass) return true;  // refused undecided: the pass would take too long (docs/api.md)
  for (int64_t d1 = 0; d1 < n1; ++d1) {
    // d1 >= 0 covers the pairs with d1 < 0 by symmetry; at d1 = 0, only d2 >= 1
    const i128 lo2 = d1 == 0 ? 1 : -(i128(n2) - 1);
    if (hits(i128(d1) * s1, s2, lo2, n2 - 1, L.len)) return true;
  }
  return false;
}

// Whether a row of p overlaps a row of q (both non-empty). Disjoint extents settle it; so do equal outer
// strides whose per-row spans never meet; otherwise an exact pass when it is short, and a refusal when it
// is not (no real layout gets there: q and k in one buffer either share the token stride or lie apart).
bool cross_overlaps(Lattice p, Lattice q) {
  if (p.base + p.span() <= q.base || q.base + q.span() <= p.base) return false;
  if (p.na == 1 && q.na == 1) p.sa = q.sa = 1;  // one token: its stride does not matter
  if (p.sa != q.sa || p.sa <= 0) return true;
  // Same stride sa along a (tokens): p's row group a spans [0, P) from p.base + a sa, q's [0, Q) from
  // q.base + a' sa. They can meet only for da = a' - a with -Q < delta + da sa < P.
  const i128 P = i128(p.nb - 1) * p.sb + p.len, Q = i128(q.nb - 1) * q.sb + q.len;
  const i128 delta = q.base - p.base;
  i128 lo = floor_div(-Q - delta, p.sa) + 1, hi = ceil_div(P - delta, p.sa) - 1;
  if (lo < -(i128(p.na) - 1)) lo = -(i128(p.na) - 1);
  if (hi > i128(p.na) - 1) hi = i128(p.na) - 1;
  if (lo > hi) return false;
  if ((hi - lo + 1) * p.nb > kExactPass) return true;
  for (i128 da = lo; da <= hi; ++da)
    for (int64_t b = 0; b < p.nb; ++b)
      if (hits(delta + da * p.sa - i128(b) * p.sb, q.sb, 0, q.nb - 1, p.len)) return true;
  return false;
}

}  // namespace detail
}  // namespace posenc
