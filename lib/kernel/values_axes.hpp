// Rows of multi-axis RoPE (values_rows.hpp's engine with a position per pair): Axes, where a block's anchors
// stand when each pair takes the position of its axis, and run_axes, which cuts a call's tokens into blocks
// along which every axis moves by 0 or 1 per token. Members of a template on S (values_direct.hpp says why).
#pragma once

#include <cstdint>

#include "kernel/job.hpp"
#include "kernel/values_rows.hpp"

namespace posenc {

template <class S>
struct AxesRows : Rows<S> {
  using R = Rows<S>;
  using R::kBlock;
  using R::W;
  using typename R::D;
  using typename R::Uniform;

  // Multi-axis RoPE, pair j at the position of its axis axis[j], each axis moving by step[a] (0 or 1) from
  // row to row; lanes past the h pairs (padding) take axis 0.
  struct Axes {
    static constexpr bool kPerLane = true;
    const uint8_t *axis;
    int64_t h;
    int64_t pa[4], step[4];  // per axis: the anchor's position, the move per row
    int axis_of(int64_t j) const { return j < h ? axis[j] : 0; }
    D anchor(int64_t j) const {
      alignas(64) double d[W];
      for (int l = 0; l < W; ++l) d[l] = double(pa[axis_of(j + l)]);  // exact: |p| < 2^31
      return S::load(d);
    }
    // Per lane, a zero angle goes to the fallbacks, which settle it exactly (the direct method gives (+0, 1)).
    bool zero(int64_t) const { return false; }
    typename R::LanePositions at(int64_t j, int64_t k) const {
      typename R::LanePositions l;
      for (int i = 0; i < W; ++i) {
        const int a = axis_of(j + i);
        l.p[i] = pa[a] + step[a] * k;
      }
      return l;
    }
    // 1.0 for the lanes whose axis moves, 0.0 for the others: the turn mask of n pairs from j
    void masks(int64_t j, int64_t n, double *m) const {
      for (int64_t i = 0; i < n; ++i) m[i] = double(step[axis_of(j + i)]);
    }
  };

  // Multi-axis RoPE (job.axes = A > 1; token t's position on axis a at positions[a axis_stride + t], or
  // first + t on every axis; axis_stride is the whole call's n, which a part of a call keeps): blocks of up
  // to kBlock tokens along which every axis moves by 0 or 1 per token. A block whose axes all agree (text
  // tokens) is a one-position block, exactly as run_sink makes it; any other is anchored per axis (Axes):
  // the rows of an image row of Qwen2-VL (temporal and height fixed, width consecutive) share one anchor per
  // chunk, as consecutive text positions do.
  template <class K>
  static void run_axes(K &sink, const detail::Stream &job) {
    const int A = job.axes;
    auto pos = [&](int a, int64_t t) { return job.positions ? job.positions[a * job.axis_stride + t] : job.first + t; };
    int64_t r = 0;
    while (r < job.n) {
      int64_t p[4] = {0, 0, 0, 0}, step[4] = {0, 0, 0, 0};
      for (int a = 0; a < A; ++a) p[a] = pos(a, r);
      if (p[0] == POSENC_PAD) {
        sink.pad(r);
        ++r;
        continue;
      }
      // The moves from this token to the next (a PAD next token, or a move other than 0 or 1, ends the block).
      int64_t len = 1;
      bool moves = r + 1 < job.n && pos(0, r + 1) != POSENC_PAD;
      for (int a = 0; a < A && moves; ++a) {
        step[a] = pos(a, r + 1) - p[a];
        moves = step[a] == 0 || step[a] == 1;
      }
      if (!moves)
        for (int a = 0; a < A; ++a) step[a] = 0;  // a block of one token
      if (moves) {
        auto follows = [&](int64_t k) {
          for (int a = 0; a < A; ++a)
            if (pos(a, r + k) != p[a] + step[a] * k) return false;
          return true;
        };
        while (r + len < job.n && len < kBlock && follows(len)) ++len;
      }
      bool agree = true, still = true;
      for (int a = 0; a < A; ++a) {
        agree = agree && p[a] == p[0] && step[a] == step[0];
        still = still && step[a] == 0;
      }
      if (agree && still) {
        R::repeated(sink, job, r, len, Uniform{p[0]});
      } else if (agree) {
        R::segment(sink, job, r, len, Uniform{p[0] + len / 2});
      } else {
        Axes ax{job.axis, job.h, {0, 0, 0, 0}, {0, 0, 0, 0}};
        for (int a = 0; a < A; ++a) {
          ax.step[a] = len > 1 ? step[a] : 0;
          ax.pa[a] = p[a] + ax.step[a] * (len / 2);
        }
        if (still || len == 1)
          R::repeated(sink, job, r, len, ax);
        else
          R::segment(sink, job, r, len, ax);
      }
      r += len;
    }
    if (sink.staged) S::store_fence();
  }
};

}  // namespace posenc
