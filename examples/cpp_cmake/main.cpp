// posenc from C++17 through the header-only wrapper: framework conventions as named specs, views over
// the buffers, and errors as exceptions. Exits non-zero if anything differs from what the contract promises.
#include <posenc/posenc.hpp>

#include <cstdio>
#include <cstring>
#include <vector>

namespace {

constexpr int64_t kD = 8;

void print(const char *title, posenc::rows_view<const float> rows) {
  std::printf("%s\n", title);
  for (int64_t r = 0; r < rows.rows(); ++r) {
    for (int64_t c = 0; c < rows.cols(); ++c) std::printf(" %+.5f", rows(r, c));
    std::printf("\n");
  }
}

}  // namespace

int main() {
  int bad = std::strcmp(posenc::version(), POSENC_PACKAGE_VERSION) != 0;
  std::printf("posenc %s (CMake package %s), path %s\n", posenc::version(), POSENC_PACKAGE_VERSION,
              posenc::isa_name(posenc::active_isa()));

  // fairseq: a right-padded sentence (padding_idx 1); padding tokens get an all-zero row.
  const std::vector<int32_t> tokens = {0, 31, 7, 2, 1, 1};
  std::vector<int64_t> positions(tokens.size());
  posenc::fairseq_positions(tokens, 1, positions);
  std::vector<float> fairseq(tokens.size() * kD);
  const posenc::rows_view<float> fv(fairseq.data(), int64_t(tokens.size()), kD);
  posenc::rows_f32(posenc::spec::fairseq(kD), positions, fv);
  print("fairseq, tokens 0 31 7 2 <pad> <pad>:", fv);
  for (int64_t c = 0; c < kD; ++c) bad |= fv(4, c) != 0.0f || fv(5, c) != 0.0f;

  // CTranslate2 counts positions from 1; ggml encodes diffusion timesteps, cos half first.
  std::vector<float> ct2(2 * kD), ggml(2 * kD);
  posenc::table_f32(posenc::spec::ctranslate2(kD), 1, posenc::rows_view<float>(ct2.data(), 2, kD));
  print("CTranslate2, positions 1 and 2:", posenc::rows_view<const float>(ct2.data(), 2, kD));
  const std::vector<int64_t> timesteps = {999, 0};
  posenc::rows_f32(posenc::spec::ggml_timestep(kD, 10000.0), timesteps, posenc::rows_view<float>(ggml.data(), 2, kD));
  print("ggml timestep_embedding, t = 999 and 0:", posenc::rows_view<const float>(ggml.data(), 2, kD));
  bad |= ggml[kD] != 1.0f;  // t = 0: cos 0 = 1 leads the row

  // A refusal is an exception carrying the C status; the output keeps its bytes.
  const std::vector<float> kept = ct2;
  try {
    posenc::table_f32(posenc::spec::tensor2tensor(kD, 0.0, 1.0e4), 0, posenc::rows_view<float>(ct2.data(), 2, kD));
    bad = 1;
  } catch (const posenc::error &e) {
    std::printf("tensor2tensor with min_timescale 0: %s\n", e.what());
    bad |= e.status() != POSENC_ERR_INVALID || ct2 != kept;
  }
  if (bad) std::fprintf(stderr, "cpp_example: unexpected values\n");
  return bad;
}
