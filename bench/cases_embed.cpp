// The fused kernels against what a framework does without them: the naive passes over a precomputed PE
// table, and the memory bound, a memcpy of the same rows (gathered by token for the embeddings).
#include <cmath>
#include <cstring>

#include "buffers.hpp"
#include "cases.hpp"
#include "harness.hpp"
#include "peers/peers.hpp"

namespace bench {
namespace {

// Input bytes per output element (the gathered row, the activations, plus the learned position table):
// the same for every impl of a kernel, so bytes/s ratios are time ratios.
double in_size(const std::string &kernel) { return kernel == "embed_learned_f32" ? 8.0 : 4.0; }

Case embed_case(const std::string &kernel, const std::string &impl, const Shape &s, int64_t vocab, double in_bytes) {
  Case c = make_case(kernel, impl, s.d, s.n, in_bytes + sizeof(float));
  if (vocab > 0) c.extra = {{"vocab", std::to_string(vocab)}};
  return c;
}

// What every embedding case reads and writes: T is the table's element type.
template <class T>
struct Inputs {
  const T *table;
  const int32_t *tok;
  const float *pe;  // positions 0 .. n-1: the naive passes' PE table, the learned kernel's position table
  float *out;
  float scale;  // sqrt(d), as Vaswani, fairseq and Marian scale embeddings
};
template <class T>
using TableOf = const T *(*)(int64_t, int64_t);

template <class T>
Inputs<T> inputs(const Shape &s, int64_t vocab, TableOf<T> table_of, bool with_pe) {
  return {table_of(vocab, s.d), tokens(s.n, vocab), with_pe ? pe_table(s.d, s.n) : nullptr,
          buffer_of<float>("out", s.d * s.n), std::sqrt(float(s.d))};
}

template <class T>
using EmbedCall = posenc_status (*)(const posenc_spec *, const T *, int64_t, int64_t, const int32_t *, float,
                                    const int64_t *, int64_t, int64_t, float *, int64_t);

// posenc_embed_f32 / _bf16 / _f16 on every path.
template <class T>
void add_posenc_embed(const char *kernel, EmbedCall<T> call, TableOf<T> table_of, const Shape &s, int64_t vocab) {
  for (posenc_isa isa : paths()) {
    Case c = on_path(isa, embed_case(kernel, posenc_isa_name(isa), s, vocab, sizeof(T)));
    c.prepare = [=] {
      const posenc_spec spec = posenc_spec_default(s.d);
      const Inputs<T> in = inputs<T>(s, vocab, table_of, false);
      return Work([=] { return call(&spec, in.table, vocab, s.d, in.tok, in.scale, nullptr, 0, s.n, in.out, s.d); });
    };
    add(std::move(c));
  }
}

void add_learned(const Shape &s, int64_t vocab) {
  for (posenc_isa isa : paths()) {
    Case c =
        on_path(isa, embed_case("embed_learned_f32", posenc_isa_name(isa), s, vocab, in_size("embed_learned_f32")));
    c.prepare = [=] {
      const Inputs<float> in = inputs<float>(s, vocab, embedding_f32, true);
      return Work([=] {
        return posenc_embed_learned_f32(s.d, in.table, vocab, s.d, in.tok, in.scale, in.pe, s.n, s.d, nullptr, 0, s.n,
                                        in.out, s.d);
      });
    };
    add(std::move(c));
  }
}

// The naive three passes (gather, scale, add the PE table): the peer of embed_f32 and embed_learned_f32.
void add_three_pass(const char *kernel, const Shape &s, int64_t vocab) {
  const peers::PassPeer passes = peers::best_passes();
  Case c = embed_case(kernel, "naive_3pass", s, vocab, in_size(kernel));
  c.isa = passes.isa;
  c.prepare = [=] {
    const Inputs<float> in = inputs<float>(s, vocab, embedding_f32, true);
    return Work([=] {
      passes.three_pass(in.table, in.tok, in.scale, in.pe, s.n, s.d, in.out);
      return POSENC_OK;
    });
  };
  add(std::move(c));
}

// The bound: the same rows gathered by token with memcpy, no arithmetic.
void add_gather(const char *kernel, const Shape &s, int64_t vocab) {
  Case c = embed_case(kernel, "memcpy_gather", s, vocab, in_size(kernel));
  c.prepare = [=] {
    const Inputs<float> in = inputs<float>(s, vocab, embedding_f32, false);
    return Work([=] {
      for (int64_t r = 0; r < s.n; ++r)
        std::memcpy(in.out + r * s.d, in.table + int64_t(in.tok[r]) * s.d, sizeof(float) * size_t(s.d));
      return POSENC_OK;
    });
  };
  add(std::move(c));
}

// posenc_add_f32 (scale 1, as x + pe in the seeds' module), the naive two passes, and a memcpy of x.
void add_activation_cases(const Shape &s) {
  for (posenc_isa isa : paths()) {
    Case c = on_path(isa, embed_case("add_f32", posenc_isa_name(isa), s, 0, in_size("add_f32")));
    c.prepare = [=] {
      const posenc_spec spec = posenc_spec_default(s.d);
      const float *x = activations(s.n, s.d);
      float *out = buffer_of<float>("out", s.d * s.n);
      return Work([=] { return posenc_add_f32(&spec, x, s.d, 1.0f, nullptr, 0, s.n, out, s.d); });
    };
    add(std::move(c));
  }
  const peers::PassPeer passes = peers::best_passes();
  Case naive = embed_case("add_f32", "naive_2pass", s, 0, in_size("add_f32"));
  naive.isa = passes.isa;
  naive.prepare = [=] {
    const float *x = activations(s.n, s.d), *pe = pe_table(s.d, s.n);
    float *out = buffer_of<float>("out", s.d * s.n);
    return Work([=] {
      passes.two_pass(x, 1.0f, pe, s.n, s.d, out);
      return POSENC_OK;
    });
  };
  add(std::move(naive));
  Case copy = embed_case("add_f32", "memcpy", s, 0, in_size("add_f32"));
  copy.prepare = [=] {
    const float *x = activations(s.n, s.d);
    float *out = buffer_of<float>("out", s.d * s.n);
    return Work([=] {
      std::memcpy(out, x, sizeof(float) * size_t(s.d * s.n));
      return POSENC_OK;
    });
  };
  add(std::move(copy));
}

}  // namespace

void add_embed_cases(const Plan &plan) {
  const int64_t v = plan.vocab;
  for (const Shape &s : plan.embed) {
    add_posenc_embed<float>("embed_f32", posenc_embed_f32, embedding_f32, s, v);
    add_three_pass("embed_f32", s, v);
    add_gather("embed_f32", s, v);
    add_posenc_embed<uint16_t>("embed_bf16", posenc_embed_bf16, embedding_bf16, s, v);
    add_posenc_embed<uint16_t>("embed_f16", posenc_embed_f16, embedding_f16, s, v);
    add_learned(s, v);
    add_three_pass("embed_learned_f32", s, v);
    add_gather("embed_learned_f32", s, v);
  }
  for (const Shape &s : plan.add) add_activation_cases(s);
}

}  // namespace bench
