// The implementations posenc is measured against, behind plain C++ signatures (no vector type crosses
// this header, so the per-ISA units stay the only code built with their -m flags).
//
// The sinusoidal peers do what frameworks do: the frequency w_i = position_scale * base^(-i/D) rounded
// once to float32 (or kept in double for libm), the angle formed as fl(p * w_i), one sincos call. They
// write the interleaved layout (s0 c0 s1 c1 ...), ending an odd row with 0.0 like posenc does.
#pragma once

#include <cstdint>
#include <vector>

#include "posenc/posenc.h"

namespace peers {

// What a framework computes once per spec: the frequencies in float32 and in double, padded with zeros
// to a multiple of 16 so that a vector loop may read a whole last vector.
// The ISA units read only the raw pointers: no std::vector code gets instantiated under their -m flags.
class Freqs {
 public:
  explicit Freqs(const posenc_spec &spec);
  Freqs(const Freqs &) = delete;
  Freqs &operator=(const Freqs &) = delete;
  int64_t d = 0, h = 0;
  const float *wf = nullptr;
  const double *wd = nullptr;

 private:
  std::vector<float> wf_;
  std::vector<double> wd_;
};

// n rows, row r for position positions[r] (or first + r when positions is NULL) at out + r * stride.
using TableFn = void (*)(const Freqs &f, const int64_t *positions, int64_t first, int64_t n, float *out,
                         int64_t stride);

// The naive embedding of frameworks, one pass over the whole output each: out[r] = table[tokens[r]];
// out *= scale; out += pe[r]. Rows are d floats, every stride is d.
using ThreePassFn = void (*)(const float *table, const int32_t *tokens, float scale, const float *pe, int64_t n,
                             int64_t d, float *out);
// The naive add of a precomputed PE table to activations: out = x * scale; out += pe (two passes).
using TwoPassFn = void (*)(const float *x, float scale, const float *pe, int64_t n, int64_t d, float *out);
// m floats set to value with plain vector stores (read-for-ownership included, unlike memset's string
// stores): the time a table kernel would take if its arithmetic were free.
using FillFn = void (*)(float *out, float value, int64_t m);

struct TablePeer {
  const char *name;  // "sleef_u35_avx2", ...: the report's column names
  posenc_isa needs;  // the path whose CPU features it needs (posenc_isa_available decides)
  TableFn fn;
};
struct PassPeer {
  posenc_isa isa;
  ThreePassFn three_pass;
  TwoPassFn two_pass;
  FillFn fill;
};

// What one ISA unit offers, as plain data (no container code is instantiated in those units); its RoPE peers
// are rope_unit()'s (rope.hpp).
struct Unit {
  TablePeer tables[3];  // sleef u10, sleef u35, xsimd; a null fn where the unit has fewer
  PassPeer passes;
};
struct RopeUnit;
namespace avx2 {
Unit unit();
RopeUnit rope_unit();
}  // namespace avx2
namespace avx512 {
Unit unit();
RopeUnit rope_unit();
}  // namespace avx512
namespace neon {
Unit unit();
RopeUnit rope_unit();
}  // namespace neon
namespace scalar {
Unit unit();
RopeUnit rope_unit();
}  // namespace scalar

// Every table peer this build compiled, whether or not this CPU runs it.
const std::vector<TablePeer> &table_peers();
// The naive passes built for the widest path this CPU runs (compiled per ISA, so they are vectorised as
// well as the compiler can for this machine).
PassPeer best_passes();

}  // namespace peers
