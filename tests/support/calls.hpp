// Every public kernel behind one call description, so that the hardening tests (bad-input matrix, guard
// pages, threads) can sweep all of them with one loop instead of one copy per function.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "posenc/posenc.h"

namespace ref {

enum class Kernel {
  kTableF32,
  kTableBF16,
  kTableF16,
  kRowsF32,
  kRowsBF16,
  kRowsF16,
  kAddF32,
  kEmbedF32,
  kEmbedBF16,
  kEmbedF16,
  kEmbedLearnedF32,
  kTimestepsF32,
  kTimestepsBF16,
  kTimestepsF16,
  kTimestepsAddF32,
};

extern const Kernel kAllKernels[15];

// Which arguments a kernel has, and the sizes of the elements its pointers address.
struct KernelTraits {
  const char *name;
  bool has_spec;            // everything but embed_learned, which takes d_model
  bool positions_required;  // rows_*: the positions array is the only source of positions
  bool positions_optional;  // add, embed*: explicit positions or first + r
  bool has_activations;     // add: x with x_stride, n rows
  bool has_table;           // embed*: vocab rows gathered by token id
  bool has_pos_table;       // embed_learned
  size_t in_size;           // bytes per element of x or the embedding table (0: none)
  size_t out_size;          // bytes per output element
  bool times;               // timesteps_*: real-valued positions, one double per row (no positions, no first)
};
const KernelTraits &traits(Kernel k);

// Every argument of every kernel; each kernel reads the ones it has. For the table sources, x is the
// embedding table and x_stride its row stride.
struct Call {
  Kernel kernel = Kernel::kTableF32;
  const posenc_spec *spec = nullptr;
  int64_t d_model = 0;  // embed_learned only; the others take spec->d_model
  int64_t first = 0, n = 0;
  const int64_t *positions = nullptr;
  const double *times = nullptr;  // timesteps_*
  const void *x = nullptr;
  int64_t x_stride = 0;
  int64_t vocab = 0;
  const int32_t *tokens = nullptr;
  float scale = 1.0f;
  const float *pos_table = nullptr;
  int64_t pos_rows = 0, pos_stride = 0;
  void *out = nullptr;
  int64_t out_stride = 0;
  // part: the call goes through the kernel's _part twin with [begin, end) (posenc.h, "Parts of a call")
  bool part = false;
  int64_t begin = 0, end = 0;
};
posenc_status invoke(const Call &c);

// How the hardening tests run a call: mode 0 the whole call, the others its _part twin on a range of the
// call's (possibly broken) n: [0, 0) (the check alone), [0, 1), the first half, the last row, the middle
// third. A part checks the whole call, so every mode must give the whole call's status; on an error
// nothing is written. With n <= 0 every part is [0, 0).
constexpr int kPartModes = 6;
inline const char *part_mode_name(int mode) {
  static const char *const names[kPartModes] = {"whole",      "part [0, 0)",   "part [0, 1)",
                                                "first half", "part [n-1, n)", "middle third"};
  return names[mode];
}
template <class C>
void set_part_mode(C &call, int mode) {
  call.part = mode != 0;
  const int64_t n = call.n;
  int64_t b = 0, e = 0;
  if (n > 0) {
    switch (mode) {
      case 2: e = 1; break;
      case 3: e = n / 2; break;
      case 4: b = n - 1, e = n; break;
      case 5: b = n / 3, e = n - n / 3; break;
      default: break;
    }
  }
  call.begin = b;
  call.end = e;
}

// A small valid call of any kernel with its inputs in ordinary memory, for tests that vary where the
// buffers live or who calls: `rows` rows; strides d + (variant + j) % 4 for out, x and the learned table
// (rows start at every alignment); explicit positions (a POSENC_PAD last of the first three) on odd
// variants, first + r on even ones; token ids 0 and vocab - 1 both used; learned positions reach the
// first and last rows of a table of max(kPosRows, rows) rows. The caller sets call.out (out_elements() elements of
// out_size bytes).
struct SmallCall {
  static constexpr int64_t kVocab = 3, kPosRows = 4;
  std::vector<unsigned char> x, pos_table;
  std::vector<int32_t> tokens;
  std::vector<int64_t> positions;
  std::vector<double> times;
  Call call;

  SmallCall(Kernel kernel, const posenc_spec &spec, int variant, int64_t rows = 3);
  SmallCall(const SmallCall &) = delete;  // call points into the vectors
  SmallCall &operator=(const SmallCall &) = delete;
  size_t out_elements() const;
};

// Bytes filled with a pattern, to prove that a call left them alone.
class Canary {
 public:
  explicit Canary(size_t bytes, unsigned char fill = 0xA5) : bytes_(bytes, fill), fill_(fill) {}
  unsigned char *data() { return bytes_.data(); }
  const unsigned char *data() const { return bytes_.data(); }
  size_t size() const { return bytes_.size(); }
  void reset() { bytes_.assign(bytes_.size(), fill_); }
  // Index of the first changed byte, or -1.
  std::ptrdiff_t first_change() const;
  bool intact() const { return first_change() < 0; }

 private:
  std::vector<unsigned char> bytes_;
  unsigned char fill_;
};

}  // namespace ref
