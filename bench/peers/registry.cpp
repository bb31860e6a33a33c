// Frequencies as a framework computes them, and the list of peers this build and this CPU can run.
#include <cmath>

#include "peers.hpp"

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

// The units meson compiled, widest first (PEERS_HAVE_<ISA> mirrors the library's paths).
std::vector<Unit> units() {
  std::vector<Unit> u;
#ifdef PEERS_HAVE_AVX512
  u.push_back(avx512::unit());
#endif
#ifdef PEERS_HAVE_AVX2
  u.push_back(avx2::unit());
#endif
#ifdef PEERS_HAVE_NEON
  u.push_back(neon::unit());
#endif
  u.push_back(scalar::unit());
  return u;
}

}  // namespace

const std::vector<TablePeer> &table_peers() {
  static const std::vector<TablePeer> all = [] {
    std::vector<TablePeer> out;
    for (const Unit &u : units())
      for (const TablePeer &t : u.tables)
        if (t.fn) out.push_back(t);
    return out;
  }();
  return all;
}

PassPeer best_passes() {
  for (const Unit &u : units())
    if (posenc_isa_available(u.passes.isa)) return u.passes;
  return scalar::unit().passes;
}

}  // namespace peers
