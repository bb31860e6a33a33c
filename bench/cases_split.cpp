// One call's rows split over two std::threads, each making the same call on its half: what a runtime's
// thread pool does, valid because any row range of a call returns the same bytes as the whole call. Each
// case checks that once (bytes of the split against bytes of one whole call) before it is timed. The
// threads are started and joined inside the timed region, as a pool-less caller would.
#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <thread>

#include "buffers.hpp"
#include "cases.hpp"
#include "harness.hpp"

namespace bench {
namespace {

// part(a, b) computes rows [a, b); the two halves run on two threads.
template <class Part>
posenc_status on_two_threads(int64_t n, const Part &part) {
  posenc_status s0 = POSENC_OK, s1 = POSENC_OK;
  std::thread t0([&] { s0 = part(0, n / 2); });
  std::thread t1([&] { s1 = part(n / 2, n); });
  t0.join();
  t1.join();
  return s0 != POSENC_OK ? s0 : s1;
}

// The split of `part` over rows of `row_bytes` equals one whole call (checked once per case).
template <class Part>
bool split_matches(const std::string &name, int64_t n, size_t row_bytes, void *out, const Part &part) {
  static std::set<std::string> checked;
  if (!checked.insert(name).second) return true;
  void *whole = buffer("split_reference", row_bytes * size_t(n));
  std::memset(out, 0xA5, row_bytes * size_t(n));  // nothing left over from another case can pass
  if (part(0, n) != POSENC_OK) return false;
  std::memcpy(whole, out, row_bytes * size_t(n));
  std::memset(out, 0x5A, row_bytes * size_t(n));
  if (on_two_threads(n, part) != POSENC_OK) return false;
  return std::memcmp(whole, out, row_bytes * size_t(n)) == 0;
}

Case split_case(const char *kernel, const std::string &impl, const Shape &s, double bytes_per_element) {
  Case c = make_case(kernel, impl, s.d, s.n, bytes_per_element);
  c.extra.push_back({"threads", "2"});
  return c;
}

// Wraps part into timed work on two threads, after the one-time check when `check` is set.
template <class Part>
Work split_work(const std::string &name, const Shape &s, float *out, bool check, Part part) {
  if (check && !split_matches(name, s.n, sizeof(float) * size_t(s.d), out, part)) return [] { return kSplitMismatch; };
  return [s, part] { return on_two_threads(s.n, part); };
}

void add_table(const Shape &s, posenc_isa best) {
  Case c = on_path(best, split_case("table_f32", posenc_isa_name(best), s, sizeof(float)));
  c.prepare = [s, name = "table" + std::to_string(s.d) + "x" + std::to_string(s.n)] {
    const posenc_spec spec = posenc_spec_default(s.d);
    float *out = buffer_of<float>("out", s.d * s.n);
    return split_work(name, s, out, true, [spec, out, s](int64_t a, int64_t b) {
      return posenc_table_f32(&spec, a, b - a, out + a * s.d, s.d);
    });
  };
  add(std::move(c));
  Case m = split_case("table_f32", "memset", s, sizeof(float));
  m.prepare = [s] {
    float *out = buffer_of<float>("out", s.d * s.n);
    return split_work("", s, out, false, [out, s](int64_t a, int64_t b) {
      std::memset(out + a * s.d, 0, sizeof(float) * size_t((b - a) * s.d));
      return POSENC_OK;
    });
  };
  add(std::move(m));
}

void add_embed(const Shape &s, posenc_isa best, int64_t vocab) {
  Case c = on_path(best, split_case("embed_f32", posenc_isa_name(best), s, 2 * sizeof(float)));
  c.extra.insert(c.extra.begin(), {"vocab", std::to_string(vocab)});
  Case g = c;
  c.prepare = [s, vocab, name = "embed" + std::to_string(s.d) + "x" + std::to_string(s.n)] {
    const posenc_spec spec = posenc_spec_default(s.d);
    const float *table = embedding_f32(vocab, s.d);
    const int32_t *tok = tokens(s.n, vocab);
    float *out = buffer_of<float>("out", s.d * s.n);
    const float scale = std::sqrt(float(s.d));
    return split_work(name, s, out, true, [=](int64_t a, int64_t b) {
      return posenc_embed_f32(&spec, table, vocab, s.d, tok + a, scale, nullptr, a, b - a, out + a * s.d, s.d);
    });
  };
  add(std::move(c));
  g.impl = "memcpy_gather";
  g.isa = POSENC_ISA_SCALAR;
  g.forces_path = false;
  g.prepare = [s, vocab] {
    const float *table = embedding_f32(vocab, s.d);
    const int32_t *tok = tokens(s.n, vocab);
    float *out = buffer_of<float>("out", s.d * s.n);
    return split_work("", s, out, false, [=](int64_t a, int64_t b) {
      for (int64_t r = a; r < b; ++r)
        std::memcpy(out + r * s.d, table + int64_t(tok[r]) * s.d, sizeof(float) * size_t(s.d));
      return POSENC_OK;
    });
  };
  add(std::move(g));
}

}  // namespace

void add_split_cases(const Plan &plan) {
  const posenc_isa best = paths().back();
  for (const Shape &s : plan.split_table) add_table(s, best);
  for (const Shape &s : plan.split_embed) add_embed(s, best, plan.vocab);
}

}  // namespace bench
