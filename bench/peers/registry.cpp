// Frequencies as a framework computes them, and the lists of peers (tables, naive passes, RoPE) this build and
// this CPU can run.
#include <cmath>

#include "peers.hpp"
#include "rope.hpp"

namespace peers {

Freqs::Freqs(const posenc_spec &spec) : d(spec.d_model), h(spec.d_model / 2) {
  const double den = spec.freq_denominator == 0.0 ? double(h) : spec.freq_denominator;
  const int64_t padded = (h + 15) / 16 * 16;
  wf_.assign(size_t(padded), 0.0f);
  wd_.assign(size_t(padded), 0.0);
  for (int64_t i = 0; i < h; ++i) {
    wd_[size_t(i)] = spec.position_scale * std::pow(spec.base, -double(i) / den);
    wf_[size_t(i)] = float(wd_[size_t(i)]);  // the best float32 frequency: kind to the float peers
  }
  wf = wf_.data();
  wd = wd_.data();
}

namespace {

// The units meson compiled, widest first (PEERS_HAVE_<ISA> mirrors the library's paths): each ISA's table peers
// and naive passes, and its RoPE peers.
struct Compiled {
  Unit unit;
  RopeUnit rope;
};
const std::vector<Compiled> &compiled() {
  static const std::vector<Compiled> all = {
#ifdef PEERS_HAVE_AVX512
      {avx512::unit(), avx512::rope_unit()},
#endif
#ifdef PEERS_HAVE_AVX2
      {avx2::unit(), avx2::rope_unit()},
#endif
#ifdef PEERS_HAVE_NEON
      {neon::unit(), neon::rope_unit()},
#endif
      {scalar::unit(), scalar::rope_unit()}};
  return all;
}

}  // namespace

const std::vector<TablePeer> &table_peers() {
  static const std::vector<TablePeer> all = [] {
    std::vector<TablePeer> out;
    for (const Compiled &c : compiled())
      for (const TablePeer &t : c.unit.tables)
        if (t.fn) out.push_back(t);
    return out;
  }();
  return all;
}

PassPeer best_passes() {
  for (const Compiled &c : compiled())
    if (posenc_isa_available(c.unit.passes.isa)) return c.unit.passes;
  return scalar::unit().passes;
}

const std::vector<RopeUnit> &rope_units() {
  static const std::vector<RopeUnit> all = [] {
    std::vector<RopeUnit> out;
    for (const Compiled &c : compiled()) out.push_back(c.rope);
    return out;
  }();
  return all;
}

RopeUnit best_rope() {
  for (const Compiled &c : compiled())
    if (posenc_isa_available(c.rope.isa)) return c.rope;
  return scalar::rope_unit();
}

}  // namespace peers
