// The embedding step of a transformer encoder, done the way a CPU runtime does it. The sentence
// "My name is Grant" becomes token ids; row r of the model input is sqrt(d_model) * embedding[token r] + PE(r),
// written by the fused posenc_embed_f32 (no PE table is built), one call per range of rows, the ranges run
// on a thread pool. Every element is correctly rounded, so any split returns the bytes of a single call;
// the program checks that, and the fused definition fmaf(scale, x, pe), before it exits 0.
#include <posenc/posenc.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "thread_pool.hpp"

namespace {

constexpr int64_t kD = 64;  // d_model
constexpr int kShown = 6;   // columns printed per row

// Token id = index. A real runtime reads its tokenizer's vocabulary from the model files.
const std::vector<std::string> kVocab = {"<pad>", "<s>", "</s>", "<unk>", "my", "name", "is", "grant", "hello"};
constexpr int32_t kBos = 1, kEos = 2, kUnk = 3;

std::vector<int32_t> tokenize(const std::string &text) {
  std::vector<int32_t> ids = {kBos};
  std::istringstream words(text);
  for (std::string w; words >> w;) {
    std::transform(w.begin(), w.end(), w.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    const auto it = std::find(kVocab.begin(), kVocab.end(), w);
    ids.push_back(it == kVocab.end() ? kUnk : int32_t(it - kVocab.begin()));
  }
  ids.push_back(kEos);
  return ids;
}

// Stands in for the trained embedding matrix: small deterministic values in [-0.1, 0.1).
std::vector<float> toy_embeddings(int64_t vocab, int64_t d) {
  std::vector<float> table(vocab * d);
  uint32_t state = 2024;
  for (float &v : table) {
    state = state * 1664525u + 1013904223u;
    v = (float(state >> 8) / float(1u << 24) - 0.5f) * 0.2f;
  }
  return table;
}

}  // namespace

int main() {
  const std::string sentence = "My name is Grant";
  const std::vector<int32_t> tokens = tokenize(sentence);
  const int64_t n = int64_t(tokens.size()), vocab = int64_t(kVocab.size());
  const std::vector<float> table = toy_embeddings(vocab, kD);
  const posenc_spec spec = posenc_spec_default(kD);  // Vaswani et al.: interleaved, base 1e4, positions from 0
  const float scale = std::sqrt(float(kD));          // the sqrt(d_model) of Vaswani et al. section 3.4

  // Row ranges of uneven sizes on the pool; range k covers rows [lo, hi), which are positions lo .. hi - 1.
  ThreadPool pool(std::clamp(std::thread::hardware_concurrency(), 2u, 4u));
  const int64_t ranges = std::min<int64_t>(n, 4);
  std::vector<float> out(n * kD, 0.0f);
  std::vector<posenc_status> status(ranges, POSENC_OK);
  for (int64_t k = 0; k < ranges; ++k) {
    const int64_t lo = k * n / ranges, hi = (k + 1) * n / ranges;
    pool.submit([&, k, lo, hi] {
      status[k] = posenc_embed_f32(&spec, table.data(), vocab, kD, tokens.data() + lo, scale, nullptr, lo, hi - lo,
                                   out.data() + lo * kD, kD);
    });
  }
  pool.wait();
  for (posenc_status st : status)
    if (st != POSENC_OK) {
      std::fprintf(stderr, "posenc_embed_f32: %s\n", posenc_status_string(st));
      return 1;
    }

  std::printf("posenc %s on %s; \"%s\" ->", posenc_version(), posenc_isa_name(posenc_active_isa()), sentence.c_str());
  for (int32_t t : tokens) std::printf(" %d", t);
  std::printf("\nsqrt(%lld) * embedding + PE, first %d of %lld columns:\n", (long long)kD, kShown, (long long)kD);
  for (int64_t r = 0; r < n; ++r) {
    std::printf("  pos %lld %-6s", (long long)r, kVocab[tokens[r]].c_str());
    for (int c = 0; c < kShown; ++c) std::printf(" %+.5f", out[r * kD + c]);
    std::printf("\n");
  }

  // The same rows from one call, and from the definition: fmaf(scale, embedding, PE) with PE from its own table.
  std::vector<float> whole(n * kD), pe(n * kD);
  if (posenc_embed_f32(&spec, table.data(), vocab, kD, tokens.data(), scale, nullptr, 0, n, whole.data(), kD) !=
          POSENC_OK ||
      posenc_table_f32(&spec, 0, n, pe.data(), kD) != POSENC_OK)
    return 1;
  const bool same_as_single = std::memcmp(out.data(), whole.data(), out.size() * sizeof(float)) == 0;
  bool fused = true;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < kD; ++c) {
      const float want = std::fma(scale, table[tokens[r] * kD + c], pe[r * kD + c]);
      fused &= std::memcmp(&want, &out[r * kD + c], sizeof want) == 0;
    }
  std::printf("%lld row ranges on %zu threads == one call: %s; == fmaf(scale, x, PE): %s\n", (long long)ranges,
              pool.size(), same_as_single ? "yes" : "NO", fused ? "yes" : "NO");
  return same_as_single && fused ? 0 : 1;
}
