#include "buffers.hpp"

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace bench {
namespace {

struct Free {
  void operator()(void *p) const { std::free(p); }
};
struct Block {
  std::unique_ptr<void, Free> mem;
  size_t bytes = 0;
};

Block &grow(const std::string &role, size_t bytes) {
  static std::map<std::string, Block> blocks;
  Block &b = blocks[role];
  if (b.bytes < bytes) {
    const size_t rounded = (bytes + 4095) / 4096 * 4096;
    b.mem.reset();  // release first: the largest roles are hundreds of MiB
    b.mem.reset(std::aligned_alloc(4096, rounded));
    if (!b.mem) std::abort();
    std::memset(b.mem.get(), 0, rounded);  // fault every page in now
    b.bytes = rounded;
  }
  return b;
}

// xorshift64*: fast and fixed, so every run measures the same inputs.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed) {}
  uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545F4914F6CDD1DULL;
  }
  float unit() { return float(next() >> 40) * 0x1p-23f - 1.0f; }  // [-1, 1)
};

std::string key(const char *what, int64_t a, int64_t b) {
  return std::string(what) + ":" + std::to_string(a) + "x" + std::to_string(b);
}

// Fills a cached buffer once per key; fill(ptr, count) writes count elements.
template <class T, class Fill>
const T *cached(const std::string &k, int64_t count, Fill fill) {
  static std::map<std::string, bool> done;
  T *p = buffer_of<T>(k.c_str(), count);
  if (!done[k]) {
    fill(p, count);
    done[k] = true;
  }
  return p;
}

void fill_f32(float *p, int64_t count, uint64_t seed) {
  Rng g(seed);
  for (int64_t e = 0; e < count; ++e) p[e] = g.unit();
}

}  // namespace

void *buffer(const char *role, size_t bytes) { return grow(role, bytes).mem.get(); }

const float *embedding_f32(int64_t vocab, int64_t d) {
  return cached<float>(key("emb_f32", vocab, d), vocab * d, [](float *p, int64_t m) { fill_f32(p, m, 1); });
}

const uint16_t *embedding_bf16(int64_t vocab, int64_t d) {
  return cached<uint16_t>(key("emb_bf16", vocab, d), vocab * d, [](uint16_t *p, int64_t m) {
    Rng g(2);
    for (int64_t e = 0; e < m; ++e) {
      const float v = g.unit();
      uint32_t b;
      std::memcpy(&b, &v, 4);
      p[e] = uint16_t(b >> 16);  // a value in [-1, 1) truncated to bfloat16 is still one
    }
  });
}

const uint16_t *embedding_f16(int64_t vocab, int64_t d) {
  return cached<uint16_t>(key("emb_f16", vocab, d), vocab * d, [](uint16_t *p, int64_t m) {
    Rng g(3);
    for (int64_t e = 0; e < m; ++e) {  // sign, a normal exponent below 1.0, any mantissa
      const uint64_t r = g.next();
      p[e] = uint16_t(((r >> 63) << 15) | ((1 + (r >> 20) % 14) << 10) | (r & 0x3ff));
    }
  });
}

const int32_t *tokens(int64_t n, int64_t vocab) {
  return cached<int32_t>(key("tokens", n, vocab), n, [vocab](int32_t *p, int64_t m) {
    Rng g(4);
    for (int64_t r = 0; r < m; ++r) p[r] = int32_t(g.next() % uint64_t(vocab));
  });
}

const int64_t *positions(const char *kind, int64_t n) {
  const bool packed = std::strcmp(kind, "packed") == 0, step = std::strcmp(kind, "step") == 0;
  return cached<int64_t>(key(kind, n, 0), n, [packed, step](int64_t *p, int64_t m) {
    Rng g(5);
    for (int64_t r = 0; r < m; ++r) p[r] = step ? 1000 : packed ? r % 128 : int64_t(g.next() >> 44);
  });
}

const float *activations(int64_t n, int64_t d) {
  return cached<float>(key("x", n, d), n * d, [](float *p, int64_t m) { fill_f32(p, m, 6); });
}

const float *pe_table(int64_t d, int64_t n) {
  return cached<float>(key("pe", d, n), n * d, [d](float *p, int64_t m) {
    const posenc_spec s = posenc_spec_default(d);
    if (posenc_table_f32(&s, 0, m / d, p, d) != POSENC_OK) std::abort();
  });
}

}  // namespace bench
