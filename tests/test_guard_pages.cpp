// Overruns and underruns that land outside any allocation: every buffer a kernel touches (output rows,
// activations, the embedding table with its first and last rows, the learned position table, the token
// and position arrays) is placed with its last byte right before a PROT_NONE page, and then with its first
// byte right after one. One byte read or written past either end faults and kills the test. Every kernel,
// every available path, widths 1..67 (every tail length of every vector width, twice over), row strides
// d .. d+3 (rows start at every alignment), all three layouts; the values are checked against the scalar
// path computed in ordinary memory, and the gaps between output rows against their canary.
#include <catch2/catch.hpp>

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <vector>

#include "support/calls.hpp"
#include "support/paths.hpp"

namespace {

using ref::Kernel;

// [PROT_NONE page][data pages][PROT_NONE page], from mmap, so nothing else is mapped right beside the data.
class GuardedRegion {
 public:
  explicit GuardedRegion(size_t data_pages) : page_(size_t(sysconf(_SC_PAGESIZE))), data_(data_pages * page_) {
    void *p = mmap(nullptr, data_ + 2 * page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(p != MAP_FAILED);
    base_ = static_cast<unsigned char *>(p);
    REQUIRE(mprotect(base_, page_, PROT_NONE) == 0);
    REQUIRE(mprotect(base_ + page_ + data_, page_, PROT_NONE) == 0);
  }
  ~GuardedRegion() { munmap(base_, data_ + 2 * page_); }
  GuardedRegion(const GuardedRegion &) = delete;
  GuardedRegion &operator=(const GuardedRegion &) = delete;

  // `bytes` bytes that end at the trailing guard (at_end) or begin at the leading one.
  unsigned char *place(size_t bytes, bool at_end) {
    REQUIRE(bytes <= data_);
    return at_end ? base_ + page_ + data_ - bytes : base_ + page_;
  }
  unsigned char *trailing_guard() { return base_ + page_ + data_; }

 private:
  size_t page_, data_;
  unsigned char *base_;
};

constexpr int64_t kRows = 3, kVocab = 3, kPosRows = 4, kMaxWidth = 67;

// Deterministic finite inputs, different in every element.
float input_value(size_t i) { return float(int(i * 37 % 101) - 50) / 32.0f; }

// The inputs of one call in ordinary memory, and the same call with every buffer moved into the regions.
struct Inputs {
  std::vector<unsigned char> x, pos_table;
  std::vector<int32_t> tokens;
  std::vector<int64_t> positions;
};

size_t extent(int64_t rows, int64_t stride, int64_t width) { return size_t((rows - 1) * stride + width); }

// The call of `kernel` at width d with strides d + (k + j) % 4, explicit positions on odd k (a POSENC_PAD
// row last), first + r on even k. Token ids include 0 and vocab - 1; learned positions include the table's
// first and last rows.
ref::Call make_call(Kernel kernel, const posenc_spec &spec, int k, Inputs &in) {
  const ref::KernelTraits &t = ref::traits(kernel);
  const int64_t d = spec.d_model;
  ref::Call c;
  c.kernel = kernel;
  c.spec = &spec;
  c.d_model = d;
  c.n = kRows;
  c.out_stride = d + k % 4;
  c.x_stride = d + (k + 1) % 4;
  c.pos_stride = d + (k + 2) % 4;
  c.scale = -1.5f;
  const bool explicit_positions = t.positions_required || (t.positions_optional && k % 2 == 1);
  if (t.has_pos_table) {
    c.first = 1;  // rows 1, 2, 3 = kPosRows - 1
    in.positions = {kPosRows - 1, 0, POSENC_PAD};
  } else {
    c.first = 5;
    in.positions = {5, 1000, POSENC_PAD};
  }
  in.tokens = {0, kVocab - 1, 1};
  const int64_t x_rows = t.has_activations ? kRows : t.has_table ? kVocab : 0;
  in.x.resize(x_rows ? extent(x_rows, c.x_stride, d) * t.in_size : 0);
  if (t.in_size == 4) {
    for (size_t i = 0; i < in.x.size() / 4; ++i) {
      const float v = input_value(i);
      std::memcpy(&in.x[4 * i], &v, 4);
    }
  } else {
    for (size_t i = 0; i < in.x.size() / 2; ++i) {
      const uint16_t h = uint16_t(0x3C00 + (i * 13 % 512));  // finite as binary16 and as bfloat16
      std::memcpy(&in.x[2 * i], &h, 2);
    }
  }
  in.pos_table.resize(t.has_pos_table ? extent(kPosRows, c.pos_stride, d) * 4 : 0);
  for (size_t i = 0; i < in.pos_table.size() / 4; ++i) {
    const float v = input_value(i + 7);
    std::memcpy(&in.pos_table[4 * i], &v, 4);
  }
  c.positions = explicit_positions ? in.positions.data() : nullptr;
  c.x = in.x.empty() ? nullptr : in.x.data();
  c.vocab = t.has_table ? kVocab : 0;
  c.tokens = t.has_table ? in.tokens.data() : nullptr;
  c.pos_table = t.has_pos_table ? reinterpret_cast<const float *>(in.pos_table.data()) : nullptr;
  c.pos_rows = t.has_pos_table ? kPosRows : 0;
  return c;
}

struct Regions {
  GuardedRegion out{1}, x{1}, pos_table{1}, tokens{1}, positions{1};
};

// Copies the call's inputs next to the guards (end or start) and points the call at them.
template <class T>
const T *move_next_to_guard(GuardedRegion &r, const T *src, size_t count, bool at_end) {
  if (!src) return nullptr;
  unsigned char *p = r.place(count * sizeof(T), at_end);
  std::memcpy(p, src, count * sizeof(T));
  return reinterpret_cast<const T *>(p);
}

}  // namespace

TEST_CASE("the guard pages fault on the first byte past them", "[guard]") {
  // Without this, a test that never faults would prove nothing: a child process touches the byte right
  // after a data page and must die (or, under a sanitizer, report and exit non-zero).
  GuardedRegion r(1);
  unsigned char *past = r.trailing_guard();
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {  // the default action, not Catch's or a sanitizer's handler: die by the signal
    signal(SIGSEGV, SIG_DFL);
    signal(SIGBUS, SIG_DFL);
    *reinterpret_cast<volatile unsigned char *>(past) = 1;
    _exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFSIGNALED(status));
  CHECK((WTERMSIG(status) == SIGSEGV || WTERMSIG(status) == SIGBUS));
}

TEST_CASE("no kernel reads or writes a byte outside its buffers, on any path, at any width", "[guard]") {
  Regions g;
  const std::vector<posenc_isa> isas = ref::paths();
  int64_t calls = 0;
  for (Kernel kernel : ref::kAllKernels) {
    const ref::KernelTraits &t = ref::traits(kernel);
    for (int64_t d = 1; d <= kMaxWidth; ++d)
      for (posenc_layout layout : {POSENC_INTERLEAVED, POSENC_SIN_COS_HALVES, POSENC_COS_SIN_HALVES}) {
        if (!t.has_spec && layout != POSENC_INTERLEAVED) continue;  // embed_learned has no layout
        posenc_spec spec = posenc_spec_default(d);
        spec.layout = layout;
        for (int k = 0; k < 4; ++k) {
          Inputs in;
          const ref::Call plain = make_call(kernel, spec, k, in);
          const size_t out_elems = extent(kRows, plain.out_stride, d);
          // the scalar path in ordinary memory is the reference
          std::vector<unsigned char> want(out_elems * t.out_size, 0x5C);
          ref::Call c = plain;
          c.out = want.data();
          ref::on_path(POSENC_ISA_SCALAR, [&] { REQUIRE(ref::invoke(c) == POSENC_OK); });
          for (bool at_end : {true, false}) {
            c = plain;
            c.positions = move_next_to_guard(g.positions, plain.positions, size_t(kRows), at_end);
            c.tokens = move_next_to_guard(g.tokens, plain.tokens, size_t(kRows), at_end);
            c.x = move_next_to_guard(g.x, static_cast<const unsigned char *>(plain.x), in.x.size(), at_end);
            c.pos_table = reinterpret_cast<const float *>(move_next_to_guard(
                g.pos_table, reinterpret_cast<const unsigned char *>(plain.pos_table), in.pos_table.size(), at_end));
            unsigned char *out = g.out.place(want.size(), at_end);
            c.out = out;
            for (posenc_isa isa : isas) {
              std::memset(out, 0x5C, want.size());
              ref::on_path(isa, [&] { REQUIRE(ref::invoke(c) == POSENC_OK); });
              ++calls;
              // row values and the canary in the stride gaps, byte for byte
              if (std::memcmp(out, want.data(), want.size()) != 0) {
                FAIL(t.name << " d " << d << " layout " << int(layout) << " stride gap " << k << " path "
                            << posenc_isa_name(isa) << (at_end ? " at the end" : " at the start")
                            << ": differs from the scalar path in ordinary memory");
              }
            }
            // inputs are read-only
            if (c.x) CHECK(std::memcmp(c.x, plain.x, in.x.size()) == 0);
            if (c.pos_table) CHECK(std::memcmp(c.pos_table, plain.pos_table, in.pos_table.size()) == 0);
          }
        }
      }
  }
  CHECK(calls > 10000);
}
