// posenc/work.hpp: one call split across threads (docs/threads.md): unit_cost, the cost model every split
// uses (posenc::cost_model, shared with the Python binding), and posenc::work, which the C++ calls' _work
// builders return (posenc/posenc.hpp includes this header). posenc/threads.hpp runs a work on std::threads.
#ifndef POSENC_WORK_HPP
#define POSENC_WORK_HPP

#include <cstdint>
#include <memory>
#include <utility>

#include "posenc/posenc.h"
#include "posenc/types.hpp"

namespace posenc {

// ---- Splitting a call across threads (docs/threads.md) ---------------------------------------------------

/** What one unit (a row, or a RoPE token with all its heads) of a work costs, for a pool's cost model
 *  (ONNX Runtime's TensorOpCost{bytes_loaded, bytes_stored, compute_cycles}, TBB or OpenMP chunk sizes). */
struct unit_cost {
  double bytes_read;    /**< bytes read per unit: x rows, gathered table rows, q and k head rows, positions,
                             token ids, timesteps */
  double bytes_written; /**< bytes written per unit: the output row, or the rotated part of every head row */
  double values;        /**< correctly rounded sin and cos values made per unit (a RoPE token makes its r values
                             once for all its heads; learned positions make none) */
  double cycles;        /**< an estimate of the compute per unit in CPU cycles, from the per-value and
                             per-element costs measured by posenc-bench's threads cases (docs/threads.md) */
};

/** The cost model of a split (docs/threads.md, "Cost and threshold"), one for the C++ works and the Python
 *  binding: the compute estimate of unit_cost::cycles in cycles per value and per element on the AVX-512 path;
 *  other paths and CPUs differ by a small factor, which only moves where a split starts to pay. */
struct cost_model {
  static constexpr double turned = 2.0; /**< a table / cache value turned from its block's anchor */
  /** a value made where it is (timesteps, real-valued RoPE positions: the direct method's fast form, issue 25):
   *  measured 1.8 ns a value against 0.36 ns for a table value with its stores (timesteps 130 x 320 against a
   *  table 260 x 512, one thread, AMD EPYC); 40, the estimate before the fast form, split 32-row calls at a
   *  loss (0.59x-0.68x with two threads) */
  static constexpr double direct = 12.0;
  static constexpr double rotated = 1.0;  /**< an element of a q or k head row rotated in place */
  static constexpr double fused = 0.5;    /**< an element of a fused add or embedding gathered and added */
  static constexpr double per_byte = 0.1; /**< memory traffic, per byte read or written */
  /** a piece must carry at least this many estimated cycles for a split to pay (work::pieces): the break-even of
   *  two threads through posenc/threads.hpp, which starts and joins a std::thread per piece */
  static constexpr double min_piece_cycles = 200000.0;
  /** the rows engine's blocks of positions (rows of one anchor): splits of table and RoPE calls cut on them */
  static constexpr int64_t block_grain = 65;
  /** A row of a spec's table call: d elements of out_size bytes written, 2 floor(d/2) values of values_cost
   *  cycles, in_size bytes of x read per element (0: none), extra_read bytes of position or timestep. */
  static unit_cost row(int64_t d, double out_size, double in_size, double values_cost, double extra_read = 8) {
    const double h = double(d / 2), e = double(d);
    unit_cost c;
    c.bytes_read = e * in_size + extra_read;
    c.bytes_written = e * out_size;
    c.values = 2 * h;
    c.cycles = 2 * h * values_cost + (in_size > 0 ? e * fused : 0.0) + (c.bytes_read + c.bytes_written) * per_byte;
    return c;
  }
};

namespace detail {

// The library's own names for the public cost model.
struct cycle_costs {
  static constexpr double kTurned = cost_model::turned;
  static constexpr double kDirect = cost_model::direct;
  static constexpr double kRotated = cost_model::rotated;
  static constexpr double kFused = cost_model::fused;
  static constexpr double kPerByte = cost_model::per_byte;
};
constexpr double kMinPieceCycles = cost_model::min_piece_cycles;

// The call behind a work: run(begin, end) makes the _part call; immutable once built, so that a work and
// its copies can run pieces on any threads at once.
struct work_call {
  virtual ~work_call() = default;
  virtual posenc_status run(int64_t begin, int64_t end) const noexcept = 0;
};
template <class F>
struct work_call_of final : work_call {
  F fn;
  explicit work_call_of(F f) : fn(std::move(f)) {}
  posenc_status run(int64_t begin, int64_t end) const noexcept override { return fn(begin, end); }
};
struct work_access;

}  // namespace detail

/** One call of a kernel, checked and ready to be split across threads: units() rows (tables, fused calls,
 *  embeddings, timesteps, the RoPE cache) or tokens (RoPE rotations), of which run(begin, end) computes a
 *  range through the C ABI's _part function. Any ranges that cover [0, units()) once, run on any threads in
 *  any order, write exactly the bytes of the unsplit call.
 *
 *  Made by the *_work builders (table_f32_work, ..., rope::apply_work, rope::shift_work): a builder runs the
 *  wrapper's shape checks and the library's check of the whole call (its _part with begin == end, which also
 *  does a new spec's one-time setup) and throws posenc::error as the unsplit call would, having written
 *  nothing. After it returns, every range succeeds (a range outside [0, units()] excepted), unless memory
 *  runs out while the spec's cached frequency table had to be rebuilt (more than 16 other specs used in
 *  between): then the range writes nothing and returns POSENC_ERR_NO_MEMORY.
 *
 *  Lifetime: a work holds the caller's buffers as views (pointers, like the views it was built from) and its
 *  own copy of the spec or rope (with its frequencies and axis map); the buffers must outlive every run and
 *  must not change while pieces run, except the outputs the pieces write. Copies are cheap (they share one
 *  immutable call) and may run on any threads. A default-constructed work has no units. */
class work {
 public:
  work() noexcept = default;

  /** The rows or tokens of the call. */
  int64_t units() const noexcept { return units_; }
  /** The piece size worth having: 65 rows or tokens (the kernel's blocks of positions turned from one
   *  anchor: a piece that starts on a multiple of 65 makes the whole call's blocks, so a split costs no
   *  extra anchors), or 1 for calls without blocks (timesteps, learned positions). run_piece cuts pieces
   *  on multiples of it. */
  int64_t grain() const noexcept { return grain_; }
  /** The cost of one unit (unit_cost). */
  const unit_cost &cost() const noexcept { return cost_; }

  /** How many pieces to cut for at most max_workers threads: never more than max_workers, nor than the
   *  grains in the call (units() / grain(), rounded up), nor than the work's estimated cycles divided by
   *  the measured break-even of a piece (docs/threads.md); 1 for small calls, and for max_workers < 2. */
  int64_t pieces(int64_t max_workers) const noexcept {
    if (max_workers < 2 || units_ <= grain_) return 1;
    const int64_t grains = (units_ - 1) / grain_ + 1;
    const double by_work = double(units_) * cost_.cycles / detail::kMinPieceCycles;
    int64_t p = max_workers < grains ? max_workers : grains;
    if (by_work < double(p)) p = by_work < 1.0 ? 1 : int64_t(by_work);
    return p;
  }

  /** Units [begin, end) of piece k of `pieces`: the grains are dealt out as evenly as they go, so every
   *  piece but the last is a multiple of grain(); pieces past the grains are empty. {0, 0} when k is not
   *  in [0, pieces). */
  std::pair<int64_t, int64_t> piece(int64_t k, int64_t pieces) const noexcept {
    if (pieces < 1 || k < 0 || k >= pieces) return {0, 0};
    const uint64_t grains = units_ > 0 ? uint64_t((units_ - 1) / grain_ + 1) : 0, n = uint64_t(pieces);
    // the first grain of piece i, floor(grains i / n), without overflow: q i + floor(r i / n) with r < n
    const auto split = [&](int64_t i) {
      const uint64_t q = grains / n, r = grains % n, u = uint64_t(i);
      uint64_t g;
      if (n <= (uint64_t(1) << 32)) {
        g = q * u + r * u / n;  // r u < n^2 <= 2^64
      } else {
#ifdef __SIZEOF_INT128__
        g = q * u + uint64_t((unsigned __int128)r * u / n);
#else
        g = q * u + uint64_t((long double)r * (long double)u / (long double)n);
#endif
      }
      const uint64_t at = g * uint64_t(grain_);
      return at < uint64_t(units_) ? int64_t(at) : units_;
    };
    return {split(k), split(k + 1)};
  }

  /** Units [begin, end): the C _part call. POSENC_ERR_INVALID, writing nothing, unless
   *  0 <= begin <= end <= units(); begin == end writes nothing and returns POSENC_OK. Never throws. */
  posenc_status run(int64_t begin, int64_t end) const noexcept {
    if (begin < 0 || begin > end || end > units_) return POSENC_ERR_INVALID;
    if (begin == end || !call_) return POSENC_OK;
    return call_->run(begin, end);
  }
  /** Piece k of `pieces` (piece()): the ith / nth of ggml's threads and of an OpenMP loop. POSENC_ERR_INVALID,
   *  writing nothing, unless 0 <= k < pieces. */
  posenc_status run_piece(int64_t k, int64_t pieces) const noexcept {
    if (pieces < 1 || k < 0 || k >= pieces) return POSENC_ERR_INVALID;
    const std::pair<int64_t, int64_t> r = piece(k, pieces);
    return run(r.first, r.second);
  }

 private:
  friend struct detail::work_access;
  std::shared_ptr<const detail::work_call> call_;
  int64_t units_ = 0, grain_ = 1;
  unit_cost cost_{0, 0, 0, 0};
};

namespace detail {

// The builders' factory: the call fn(begin, end) of `units` rows or tokens, checked here by fn(0, 0) (the
// whole call's check), which throws posenc::error with its status.
struct work_access {
  template <class F>
  static work make(int64_t units, int64_t grain, const unit_cost &cost, F fn) {
    work w;
    w.units_ = units > 0 ? units : 0;
    w.grain_ = grain > 0 ? grain : 1;
    w.cost_ = cost;
    auto call = std::make_shared<const work_call_of<F>>(std::move(fn));
    check(call->run(0, 0));
    w.call_ = std::move(call);
    return w;
  }
};

constexpr int64_t kBlockGrain = cost_model::block_grain;  // Freq::kBlock (tests/test_internals.cpp)
inline unit_cost row_cost(int64_t d, double out_size, double in_size, double values_cost, double extra_read = 8) {
  return cost_model::row(d, out_size, in_size, values_cost, extra_read);
}

}  // namespace detail

}  // namespace posenc

#endif  // POSENC_WORK_HPP
