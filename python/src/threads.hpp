// Large calls split across threads (issue 26, docs/python.md "Threads"): the binding's own small pool, the thread count
// (set_num_threads, else torch's, else the CPUs), and run_split, which cuts one call (a batch loop of C calls) into
// pieces of whole 65-row blocks and runs them through the C ABI's _part functions with the GIL released. The C library
// starts no thread; this file is the only place the binding does.
#pragma once

#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "arrays.hpp"
#include "posenc/posenc.h"
#include "posenc/posenc.hpp"

namespace pyposenc {

class Pool;

/** A call to split: `batch` C calls of `n` units (rows or tokens) each, cut on multiples of `grain` (65, the kernel's
 *  blocks, or 1), each unit estimated at `unit_cycles` (posenc::unit_cost::cycles). */
struct Split {
  int64_t batch = 1, n = 0, grain = posenc::cost_model::block_grain;
  double unit_cycles = 0.0;
};

/** How many pieces to cut `s` into, the threads to run them on and the pool: 1 (and no pool) for a call too small to
 *  pay for a split, or with one thread. Needs the GIL (it may ask torch for its thread count). */
int64_t split_pieces(const Split &s, Pool **pool, int64_t *threads);

/** Runs piece(k) for k in [0, pieces) on threads - 1 of the pool's workers and the calling thread, and returns when all
 * are done (or all on the calling thread when the pool is busy with another call or shut down). Without the GIL. */
void pool_run(Pool *pool, int64_t pieces, int64_t threads, void (*piece)(void *, int64_t), void *ctx);

/** Counts a split call of `pieces` pieces (posenc._posenc._split_stats, for the tests). */
void note_split(int64_t pieces);

/** The estimated cycles of a timestep value (posenc::cost_model::direct, shared with the C++ works). */
constexpr double kTimestepValueCycles = posenc::cost_model::direct;

/** The cycles of a table row of d elements (posenc::cost_model::row): out_size bytes written per element, in_size read
 *  (0: none), values_cost per sin/cos value. */
inline double row_cycles(int64_t d, double out_size, double in_size, double values_cost, double extra_read = 8) {
  return posenc::cost_model::row(d, out_size, in_size, values_cost, extra_read).cycles;
}
/** The cycles of a RoPE token: r values made once, `elements` head-row elements of `size` bytes rotated (0 for the
 *  cache, whose r floats are written), positions of `axes` axes read (posenc::rope's costs). */
inline double rope_cycles(int64_t r, int64_t elements, double size, int64_t axes) {
  using c = posenc::cost_model;
  const double e = double(elements), read = e * size + 8.0 * double(axes > 0 ? axes : 1);
  const double written = elements ? e * size : double(r) * 4;
  return double(r) * c::turned + e * c::rotated + (read + written) * c::per_byte;
}

/** Runs part(b, begin, end) -> posenc_status over the rows [0, s.n) of every batch entry b in [0, s.batch), and raises
 *  the first error. Unsplit: with more than one batch entry, every entry's whole call checked first (part(b, 0, 0)),
 *  then part(b, 0, n) for each b in turn. Split: every batch entry's whole call checked first (part(b, 0, 0), on this
 * thread: an error raises having written nothing), then the pieces, each a run of whole grains of one or more batch
 * entries, on the pool. Any split writes the bytes of the unsplit call (docs/threads.md). */
template <class F>
void run_split(const Split &s, F &&part) {
  Pool *pool = nullptr;
  int64_t threads = 1;
  const int64_t pieces = split_pieces(s, &pool, &threads);
  posenc_status st = POSENC_OK;
  if (pieces <= 1) {
    py::gil_scoped_release nogil;
    // the batch axis is the binding's: the library checks every entry's whole call (part(b, 0, 0)) before the
    // first writes, so an error in a later entry leaves the output untouched (no second copy of its checks here)
    if (s.batch > 1)
      for (int64_t b = 0; b < s.batch && st == POSENC_OK; ++b) st = part(b, 0, 0);
    for (int64_t b = 0; b < s.batch && st == POSENC_OK; ++b) st = part(b, 0, s.n);
  } else {
    note_split(pieces);
    py::gil_scoped_release nogil;
    for (int64_t b = 0; b < s.batch && st == POSENC_OK; ++b) st = part(b, 0, 0);
    if (st == POSENC_OK) {
      struct Ctx {
        const Split &s;
        F &part;
        int64_t pieces;
        std::vector<posenc_status> status;
      } ctx{s, part, pieces, std::vector<posenc_status>(size_t(pieces), POSENC_OK)};
      pool_run(
          pool, pieces, threads,
          [](void *p, int64_t k) {
            Ctx &c = *static_cast<Ctx *>(p);
            // piece k: the global grains [G k / p, G (k + 1) / p) of the batch entries' grains laid end to end
            const int64_t per = (c.s.n - 1) / c.s.grain + 1, total = per * c.s.batch;
            // floor(total i / p) without overflow: q i + r i / p, r i < p^2
            const auto at = [&](int64_t i) {
              const int64_t q = total / c.pieces, r = total % c.pieces;
              return q * i + r * i / c.pieces;
            };
            for (int64_t g = at(k), end = at(k + 1); g < end;) {
              const int64_t b = g / per, j0 = g % per, j1 = std::min(per, j0 + (end - g));
              const int64_t lo = j0 * c.s.grain, hi = std::min(j1 * c.s.grain, c.s.n);
              const posenc_status r = c.part(b, lo, hi);
              if (r != POSENC_OK) {
                c.status[size_t(k)] = r;
                return;
              }
              g += j1 - j0;
            }
          },
          &ctx);
      for (posenc_status r : ctx.status)
        if (r != POSENC_OK) {
          st = r;
          break;
        }
    }
  }
  check(st);
}

}  // namespace pyposenc
