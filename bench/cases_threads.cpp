// One call split across threads through posenc::work (include/posenc/posenc.hpp) and posenc/threads.hpp
// (issue 26, docs/threads.md): the same work run whole on the calling thread and split over two, as a
// paired ratio in one process (harness.hpp, add_pair: the two called alternately, the median of the
// per-pair time ratios), so the ratio is the speedup of the second thread.
//   <kernel>/<impl>/d=<d>/n=<n>[/...]/threads=1            work.run(0, units): the whole call, one thread
//   <kernel>/<impl>/d=<d>/n=<n>[/...]/threads=2            posenc::run_parallel(work, 2): pieces(2) pieces
//   <kernel>/<impl>/d=<d>/n=<n>[/...]/threads=2/split=2    always two halves (the second on a std::thread
//                                                          started and joined inside the timed call, as
//                                                          run_parallel does): the ladder that measures where
//                                                          splitting pays
// The targets (table 8192 x 1024, Llama-3-8B's prefill of 2048 tokens through rope_qk_f32) and a ladder of
// sizes for each family below and above the break-even, whose estimated cycles (work::cost) set
// kMinPieceCycles in posenc.hpp. Before timing, each case checks once that its split writes the bytes of
// the whole call (kSplitMismatch otherwise).
#include <cstring>
#include <exception>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "buffers.hpp"
#include "cases.hpp"
#include "harness.hpp"
#include "posenc/posenc.hpp"
#include "posenc/threads.hpp"

namespace bench {
namespace {

// The second half of the units on a thread started here, the first on the calling thread: run_parallel's
// mechanics with two pieces, whatever pieces(2) says and whatever the grain (a call of fewer than two grains
// is split too: the ladder measures where a split starts to pay).
posenc_status two_pieces(const posenc::work &w) {
  const int64_t half = w.units() / 2;
  posenc_status s1 = POSENC_OK;
  std::thread t([&] { s1 = w.run(half, w.units()); });
  const posenc_status s0 = w.run(0, half);
  t.join();
  return s0 != POSENC_OK ? s0 : s1;
}

posenc_status parallel(const posenc::work &w, int threads) {
  try {
    posenc::run_parallel(w, threads);
    return POSENC_OK;
  } catch (const posenc::error &e) {
    return e.status();
  }
}

// The split of w into two pieces writes the bytes of the whole call: checked once per case name, on `bytes`
// bytes at `out` (the whole call's output, or the tensors it rotates in place, restored before each run).
bool split_same(const std::string &name, const posenc::work &w, void *out, size_t bytes) {
  static std::set<std::string> checked;
  if (!checked.insert(name).second) return true;
  unsigned char *o = static_cast<unsigned char *>(out);
  std::vector<unsigned char> start(o, o + bytes), whole;
  if (w.run(0, w.units()) != POSENC_OK) return false;
  whole.assign(o, o + bytes);
  std::memcpy(o, start.data(), bytes);
  if (two_pieces(w) != POSENC_OK) return false;
  const bool same = std::memcmp(o, whole.data(), bytes) == 0;
  std::memcpy(o, start.data(), bytes);
  return same;
}

// Registers the three cases of one work (whole, run_parallel(2), two pieces) and the two pairs against the
// whole call. make() builds the work on prepared buffers, returning it with its output's place and size.
struct Made {
  posenc::work w;
  void *out;
  size_t bytes;
};
void add_three(Case base, const std::function<Made()> &make) {
  const std::string id = base.kernel + "/" + base.impl + "/" + std::to_string(base.d) + "x" + std::to_string(base.n);
  std::string names[3];
  for (int mode = 0; mode < 3; ++mode) {
    Case c = base;
    c.extra.push_back({"threads", mode == 0 ? "1" : "2"});
    if (mode == 2) c.extra.push_back({"split", "2"});
    c.prepare = [make, mode, id]() -> Work {
      const Made m = make();
      if (!split_same(id, m.w, m.out, m.bytes)) return [] { return kSplitMismatch; };
      const posenc::work w = m.w;
      if (mode == 0) return [w] { return w.run(0, w.units()); };
      if (mode == 1) return [w] { return parallel(w, 2); };
      return [w] { return two_pieces(w); };
    };
    std::string name = c.kernel + "/" + c.impl + "/d=" + std::to_string(c.d) + "/n=" + std::to_string(c.n);
    for (const auto &kv : c.extra) name += "/" + kv.first + "=" + kv.second;
    names[mode] = name;
    add(std::move(c));
  }
  add_pair(names[0], names[1]);
  add_pair(names[0], names[2]);
}

void add_table(const Shape &s, posenc_isa best) {
  Case c = on_path(best, make_case("table_f32", posenc_isa_name(best), s.d, s.n, sizeof(float)));
  add_three(c, [s] {
    float *out = buffer_of<float>("out", s.d * s.n);
    return Made{posenc::table_f32_work(posenc::spec(s.d), s.first, posenc::rows_view<float>(out, s.n, s.d)), out,
                sizeof(float) * size_t(s.d * s.n)};
  });
}

void add_times(const Shape &s, posenc_isa best) {
  Case c = on_path(best, make_case("timesteps_f32", posenc_isa_name(best), s.d, s.n, sizeof(float)));
  add_three(c, [s] {
    static std::vector<double> t;
    if (int64_t(t.size()) < s.n)
      for (int64_t r = int64_t(t.size()); r < s.n; ++r) t.push_back(999.0 - 0.976 * double(r % 1024));
    float *out = buffer_of<float>("out", s.d * s.n);
    return Made{posenc::timesteps_f32_work(posenc::spec::dit(s.d), posenc::array_view<const double>(t.data(), s.n),
                                           posenc::rows_view<float>(out, s.n, s.d)),
                out, sizeof(float) * size_t(s.d * s.n)};
  });
}

void add_embed(const Shape &s, posenc_isa best, int64_t vocab) {
  Case c = on_path(best, make_case("embed_f32", posenc_isa_name(best), s.d, s.n, 2 * sizeof(float)));
  c.extra.push_back({"vocab", std::to_string(vocab)});
  add_three(c, [s, vocab] {
    const float *table = embedding_f32(vocab, s.d);
    const int32_t *tok = tokens(s.n, vocab);
    float *out = buffer_of<float>("out", s.d * s.n);
    return Made{posenc::embed_f32_work(posenc::spec(s.d), posenc::rows_view<const float>(table, vocab, s.d),
                                       posenc::array_view<const int32_t>(tok, s.n), 22.6f, posenc::positions(0),
                                       posenc::rows_view<float>(out, s.n, s.d)),
                out, sizeof(float) * size_t(s.d * s.n)};
  });
}

// Llama-3-8B's layout: a fused QKV buffer [n, q + 2 k heads, 128], positions 0 .. n-1, base 5e5.
void add_rope(const RopeShape &s, posenc_isa best) {
  const double bytes_per_element =
      2.0 * sizeof(float) * double(s.q_heads + s.k_heads) * double(s.r) / double(s.head_dim);
  Case c = on_path(best, make_case("rope_qk_f32", posenc_isa_name(best), s.head_dim, s.n, bytes_per_element));
  c.elements = double(s.n) * double(s.q_heads + s.k_heads) * double(s.r);
  c.extra = {
      {"r", std::to_string(s.r)}, {"q", std::to_string(s.q_heads)}, {"k", std::to_string(s.k_heads)}, {"pos", s.pos}};
  add_three(c, [s] {
    const int64_t D = s.head_dim, count = s.n * (s.q_heads + 2 * s.k_heads) * D;
    float *buf = buffer_of<float>("qkv_threads", count);
    static std::set<float *> filled;
    if (filled.insert(buf).second)  // values in [-1, 1): rotations keep them there
      for (int64_t e = 0; e < count; ++e) buf[e] = float((e * 2654435761u) % 2001) / 1000.0f - 1.0f;
    const posenc::rope rope = posenc::rope::init(s.r, s.base);
    const posenc::work w =
        rope.apply_work(posenc::positions(0), posenc::heads_view<float>::fused_q(buf, s.n, s.q_heads, s.k_heads, D),
                        posenc::heads_view<float>::fused_k(buf, s.n, s.q_heads, s.k_heads, D));
    return Made{w, buf, sizeof(float) * size_t(count)};
  });
}

}  // namespace

void add_threads_cases(const Plan &plan) {
  const posenc_isa best = paths().back();
  for (const Shape &s : plan.threads_table) add_table(s, best);
  for (const Shape &s : plan.threads_times) add_times(s, best);
  for (const Shape &s : plan.threads_embed) add_embed(s, best, plan.vocab);
  for (const RopeShape &s : plan.threads_rope) add_rope(s, best);
}

}  // namespace bench
