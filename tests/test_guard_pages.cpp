// Overruns and underruns that land outside any allocation: every buffer a kernel touches (output rows,
// activations, the embedding table with its first and last rows, the learned position table, the token
// and position arrays) is placed with its last byte right before a PROT_NONE page, and then with its first
// byte right after one. One byte read or written past either end faults and kills the test. Every kernel,
// every available path, widths 1..67, row strides d .. d+3 (rows start at many alignments), all three
// layouts; the values are checked against the scalar path computed in ordinary memory, and the gaps
// between output rows against their canary. Every call also runs as one _part call per row or token (the
// last first), each reading the whole call's arrays against the guards (posenc.h, "Parts of a call").
#include <catch2/catch.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "support/calls.hpp"
#include "support/paths.hpp"
#include "support/rope.hpp"

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

 private:
  size_t page_, data_;
  unsigned char *base_;
};

// 67: every tail length of the widest vector (16 floats) four times over, and odd widths throughout.
constexpr int64_t kMaxWidth = 67;

// One region per buffer, so that each can sit against its own guard in the same call.
struct Regions {
  GuardedRegion out{1}, x{1}, pos_table{1}, tokens{1}, positions{1}, axis{1}, times{1};
};

// Copies the call's inputs next to the guards (end or start) and points the call at them.
template <class T>
const T *move_next_to_guard(GuardedRegion &r, const T *src, size_t count, bool at_end) {
  if (!src) return nullptr;
  unsigned char *p = r.place(count * sizeof(T), at_end);
  std::memcpy(p, src, count * sizeof(T));
  return reinterpret_cast<const T *>(p);
}

// Runs c (a ref::Call or a ref::RopeCall) whole, or with `parts` as one part per row or token, the last first;
// every call must succeed.
template <class Call>
void whole_or_parts(const Call &c, bool parts) {
  if (!parts) {
    REQUIRE(ref::invoke(c) == POSENC_OK);
    return;
  }
  Call p = c;
  p.part = true;
  for (int64_t r = c.n - 1; r >= 0; --r) {
    p.begin = r;
    p.end = r + 1;
    REQUIRE(ref::invoke(p) == POSENC_OK);
  }
}

}  // namespace

TEST_CASE("the guard pages are inaccessible right at the buffer boundaries", "[guard]") {
  // Without this, a test that never faults would prove nothing. The kernel itself is asked, through
  // write() from each address: EFAULT for the first byte of each guard, success for the bytes right inside.
  // (A process that touched the guard would have to be forked and watched; under qemu-user, which runs
  // the NEON tests, such a process hangs instead of dying, and so would the run on a real overrun.)
  GuardedRegion r(1);
  int fd[2];
  REQUIRE(pipe(fd) == 0);
  const auto readable = [&](const unsigned char *p) {
    errno = 0;
    const ssize_t n = write(fd[1], p, 1);
    return n == 1 ? 0 : errno;
  };
  unsigned char *first = r.place(1, false), *last = r.place(1, true);
  CHECK(readable(first) == 0);
  CHECK(readable(last) == 0);
  CHECK(readable(last + 1) == EFAULT);
  CHECK(readable(first - 1) == EFAULT);
  close(fd[0]);
  close(fd[1]);
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
          const ref::SmallCall in(kernel, spec, k);
          const ref::Call &plain = in.call;
          const size_t out_elems = in.out_elements();
          // the scalar path in ordinary memory is the reference
          std::vector<unsigned char> want(out_elems * t.out_size, 0x5C);
          ref::Call c = plain;
          c.out = want.data();
          ref::on_path(POSENC_ISA_SCALAR, [&] { REQUIRE(ref::invoke(c) == POSENC_OK); });
          for (bool at_end : {true, false}) {
            c = plain;
            c.positions = move_next_to_guard(g.positions, plain.positions, in.positions.size(), at_end);
            c.times = move_next_to_guard(g.times, plain.times, in.times.size(), at_end);
            c.tokens = move_next_to_guard(g.tokens, plain.tokens, in.tokens.size(), at_end);
            c.x = move_next_to_guard(g.x, static_cast<const unsigned char *>(plain.x), in.x.size(), at_end);
            c.pos_table = reinterpret_cast<const float *>(move_next_to_guard(
                g.pos_table, reinterpret_cast<const unsigned char *>(plain.pos_table), in.pos_table.size(), at_end));
            unsigned char *out = g.out.place(want.size(), at_end);
            c.out = out;
            for (posenc_isa isa : isas)
              for (bool parts : {false, true}) {  // the whole call, then its rows one part each, the last first
                std::memset(out, 0x5C, want.size());
                ref::on_path(isa, [&] { whole_or_parts(c, parts); });
                ++calls;
                // row values and the canary in the stride gaps, byte for byte
                if (std::memcmp(out, want.data(), want.size()) != 0) {
                  FAIL(t.name << " d " << d << " layout " << int(layout) << " stride gap " << k << " path "
                              << posenc_isa_name(isa) << (at_end ? " at the end" : " at the start")
                              << (parts ? ", row by row as parts" : "")
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

// ---- RoPE ---------------------------------------------------------------------------------------------

namespace {

using ref::RopeKernel;

// One tensor of a RoPE call: n tokens of `heads` rows, head_dim = r + tail (the tail is never touched),
// token stride heads * head_dim + gap. The last row ends after its r rotated elements: the buffer ends
// there, so a write or read of the last row's tail faults.
struct RopeTensor {
  int64_t heads, head_dim, gap;
  int64_t token_stride() const { return heads * head_dim + gap; }
  int64_t elements(int64_t n, int64_t r) const { return ref::rope_extent(n, heads, token_stride(), head_dim, r); }
};

void fill_rope_input(unsigned char *p, size_t bytes, size_t es, uint32_t salt) {
  for (size_t e = 0; e < bytes / es; ++e) {
    const uint32_t v = uint32_t(e * 2654435761u + salt);
    if (es == 4) {
      const float f = float(int(v % 2001) - 1000) / 256.0f;
      std::memcpy(p + 4 * e, &f, 4);
    } else {
      const uint16_t h = uint16_t(0x3000 + v % 0x1000) | uint16_t(v & 0x8000);  // finite in both formats
      std::memcpy(p + 2 * e, &h, 2);
    }
  }
}

}  // namespace

TEST_CASE("no RoPE call reads or writes a byte outside its rows, on any path, at any rotary width", "[guard][rope]") {
  Regions g;
  const std::vector<posenc_isa> isas = ref::paths();
  int64_t calls = 0, part_calls = 0;
  const int64_t n = 3;
  std::vector<double> freq;
  for (int64_t i = 0; i < 40; ++i) freq.push_back(1.0 / double(i + 1));
  for (RopeKernel kernel : ref::kAllRopeKernels)
    for (bool real : {false, true}) {  // integer positions, then the _real twin at real ones
      const size_t es = ref::format_size(ref::rope_format(kernel));
      for (int64_t r = 2; r <= 66; r += 2)
        for (int variant = 0; variant < 6; ++variant) {
          posenc_rope rope = posenc_rope_default(r);
          rope.pairs = variant % 2 ? POSENC_ROPE_INTERLEAVED : POSENC_ROPE_HALVES;
          rope.attention_scale = 1.25;
          if (variant == 3 && r <= 80) rope.freq = freq.data();        // explicit frequencies: r/2 of them read
          const int64_t tail = variant / 2 % 2 ? 1 + (r / 2) % 5 : 0;  // odd and even head_dim tails
          const int64_t h = r / 2;
          // variants 4 and 5: three axes, whose map (r/2 bytes) and 3n positions sit against guards too
          const int axes = variant >= 4 ? 3 : 1;
          std::vector<uint8_t> axis;
          for (int64_t i = 0; i < h; ++i) axis.push_back(uint8_t((i * 7) % 3));
          if (axes > 1) {
            rope.axes = axes;
            rope.axis = axis.data();
          }
          // q (or cos, or rope_copy_*'s x) and k (or sin, or the source rows of rope_copy_*, q's heads with
          // other strides); the cache's rows are h wide with strides h + gap
          const RopeTensor q{2, r + tail, variant % 3}, k{ref::is_copy(kernel) ? q.heads : 1, r + tail + 1, 2};
          const int64_t q_el = ref::is_cache(kernel) ? (n - 1) * (h + variant % 3) + h : q.elements(n, r);
          const int64_t k_el = ref::is_cache(kernel) ? (n - 1) * (h + 2) + h : k.elements(n, r);
          std::vector<int64_t> pos = {5, POSENC_PAD, 1000000};
          if (axes > 1) pos.insert(pos.end(), {-3, -3, -3, 40, 41, 42});  // axis 1 fixed, axis 2 consecutive
          std::vector<double> times = {5.25, -0.5, 1000000.75};           // read next to the guards as positions are
          if (axes > 1) times.insert(times.end(), {-3.5, -3.5, -3.5, 40.25, 41.0, 42.5});
          const bool explicit_positions = variant % 2 == 1;
          std::vector<unsigned char> q_in(size_t(q_el) * es), k_in(size_t(k_el) * es);
          fill_rope_input(q_in.data(), q_in.size(), es, uint32_t(r));
          fill_rope_input(k_in.data(), k_in.size(), es, uint32_t(r + 7));
          ref::RopeCall c;
          c.kernel = kernel;
          c.rope = &rope;
          c.first = 77;
          c.n = n;
          c.real = real;
          c.times = times.data();
          if (ref::is_cache(kernel)) {
            c.token_stride = h + variant % 3;
            c.k_token_stride = h + 2;
          } else {
            c.heads = q.heads;
            c.token_stride = q.token_stride();
            c.head_stride = q.head_dim;
            if (ref::is_qk(kernel)) {
              c.k_heads = k.heads;
              c.k_token_stride = k.token_stride();
              c.k_head_stride = k.head_dim;
            }
            if (ref::is_copy(kernel)) {
              c.src_token_stride = k.token_stride();
              c.src_head_stride = k.head_dim;
            }
          }
          // the scalar path in ordinary memory is the reference
          std::vector<unsigned char> q_want = q_in, k_want = k_in;
          c.positions = explicit_positions ? pos.data() : nullptr;
          c.x = q_want.data();
          c.k = k_want.data();
          c.src = k_in.data();  // rope_copy_*: read, never written (compared below)
          ref::on_path(POSENC_ISA_SCALAR, [&] { REQUIRE(ref::invoke(c) == POSENC_OK); });
          for (bool at_end : {true, false}) {
            c.positions =
                explicit_positions ? move_next_to_guard(g.positions, pos.data(), pos.size(), at_end) : nullptr;
            c.times = move_next_to_guard(g.times, times.data(), times.size(), at_end);
            if (axes > 1) rope.axis = move_next_to_guard(g.axis, axis.data(), axis.size(), at_end);
            unsigned char *qp = g.out.place(q_in.size(), at_end), *kp = g.x.place(k_in.size(), at_end);
            c.x = qp;
            c.k = kp;
            c.src = kp;
            for (posenc_isa isa : isas)
              for (bool parts : {false, true}) {  // the whole call, then its tokens one part each, the last first
                std::memcpy(qp, q_in.data(), q_in.size());
                std::memcpy(kp, k_in.data(), k_in.size());
                ref::on_path(isa, [&] { whole_or_parts(c, parts); });
                calls += parts ? 0 : 1;
                part_calls += parts ? 1 : 0;
                if (std::memcmp(qp, q_want.data(), q_in.size()) != 0 ||
                    std::memcmp(kp, k_want.data(), k_in.size()) != 0)
                  FAIL(ref::rope_name(kernel)
                       << (real ? " (real positions)" : "") << " r " << r << " variant " << variant << " path "
                       << posenc_isa_name(isa) << (at_end ? " at the end" : " at the start")
                       << (parts ? ", token by token as parts" : "")
                       << ": differs from the scalar path in ordinary memory");
              }
          }
        }
    }
  // kernels, integer and real, widths, variants, placements, paths
  CHECK(calls == int64_t(ref::kRopeKernels * 2 * 33 * 6 * 2 * isas.size()));
  CHECK(part_calls == calls);
}

// ---- RoPE by given rows: posenc_rope_cached_* / _copy_cached_* (h values a token) and posenc_rope_tables_*
// (d values a token) ----------------------------------------------------------------------------------------

namespace {

enum class Given { kCached, kCopyCached, kTables };

// One call of the three families in format es (4: f32, 2: bf16 with bf16 true, else f16); src is the copy's
// source (nullptr in place).
posenc_status given_call(Given g, size_t es, bool bf16, int64_t r, posenc_rope_pairs pairs, const float *c, int64_t cs,
                         const float *s, int64_t ss, int64_t n, const void *src, int64_t sts, int64_t shs, void *x,
                         int64_t heads, int64_t ts, int64_t hs, int64_t b, int64_t e) {
  posenc_rope rope = posenc_rope_default(r);
  rope.pairs = pairs;
  using U = uint16_t;
  if (g == Given::kTables) {
    const void *from = src ? src : x;
    const int64_t fts = src ? sts : ts, fhs = src ? shs : hs;
    if (es == 4)
      return posenc_rope_tables_f32_part(r, pairs, c, cs, s, ss, n, static_cast<const float *>(from), fts, fhs,
                                         static_cast<float *>(x), heads, ts, hs, b, e);
    return (bf16 ? posenc_rope_tables_bf16_part : posenc_rope_tables_f16_part)(
        r, pairs, c, cs, s, ss, n, static_cast<const U *>(from), fts, fhs, static_cast<U *>(x), heads, ts, hs, b, e);
  }
  if (g == Given::kCached) {
    if (es == 4)
      return posenc_rope_cached_f32_part(&rope, c, cs, s, ss, n, static_cast<float *>(x), heads, ts, hs, b, e);
    return (bf16 ? posenc_rope_cached_bf16_part : posenc_rope_cached_f16_part)(
        &rope, c, cs, s, ss, n, static_cast<U *>(x), heads, ts, hs, b, e);
  }
  if (es == 4)
    return posenc_rope_copy_cached_f32_part(&rope, c, cs, s, ss, n, static_cast<const float *>(src), sts, shs,
                                            static_cast<float *>(x), heads, ts, hs, b, e);
  return (bf16 ? posenc_rope_copy_cached_bf16_part : posenc_rope_copy_cached_f16_part)(
      &rope, c, cs, s, ss, n, static_cast<const U *>(src), sts, shs, static_cast<U *>(x), heads, ts, hs, b, e);
}

}  // namespace

TEST_CASE("no call by given rows reads or writes a byte outside its rows or tables, on any path", "[guard][rope]") {
  Regions g;
  const std::vector<posenc_isa> isas = ref::paths();
  int64_t calls = 0;
  const int64_t n = 3, heads = 2;
  for (Given family : {Given::kCached, Given::kCopyCached, Given::kTables})
    for (int fmt = 0; fmt < 3; ++fmt) {
      const size_t es = fmt == 0 ? 4 : 2;
      const bool bf16 = fmt == 1;
      for (int64_t r = 2; r <= 66; r += 2)
        for (int variant = 0; variant < 4; ++variant) {
          const posenc_rope_pairs pairs = variant % 2 ? POSENC_ROPE_INTERLEAVED : POSENC_ROPE_HALVES;
          const int64_t w = family == Given::kTables ? r : r / 2;  // table values a token
          // tables: rows of w floats, strides w + gap (variant 3 of the tables: one shared row, stride 0)
          const int64_t cs = family == Given::kTables && variant == 3 ? 0 : w + variant % 3, ss = w + 1;
          const size_t c_el = size_t((n - 1) * cs + w), s_el = size_t((n - 1) * ss + w);
          std::vector<float> cos(c_el), sin(s_el);
          for (size_t i = 0; i < c_el; ++i) cos[i] = std::cos(0.1f * float(i));
          for (size_t i = 0; i < s_el; ++i) sin[i] = std::sin(0.1f * float(i));
          // destination rows of r + tail elements, the last row's end at the buffer's end; the copy's (and
          // the tables call's, on odd variants) source rows in another layout
          const RopeTensor q{heads, r + (variant / 2), variant % 3}, src_t{heads, r + 1, 2};
          const bool copy = family == Given::kCopyCached || (family == Given::kTables && variant % 2 == 1);
          std::vector<unsigned char> x_in(size_t(q.elements(n, r)) * es), s_in(size_t(src_t.elements(n, r)) * es);
          fill_rope_input(x_in.data(), x_in.size(), es, uint32_t(r));
          fill_rope_input(s_in.data(), s_in.size(), es, uint32_t(r + 3));
          std::vector<unsigned char> want = x_in;
          ref::on_path(POSENC_ISA_SCALAR, [&] {
            REQUIRE(given_call(family, es, bf16, r, pairs, cos.data(), cs, sin.data(), ss, n,
                               copy ? s_in.data() : nullptr, src_t.token_stride(), src_t.head_dim, want.data(), heads,
                               q.token_stride(), q.head_dim, 0, n) == POSENC_OK);
          });
          for (bool at_end : {true, false}) {
            const float *c = move_next_to_guard(g.positions, cos.data(), c_el, at_end);
            const float *s = move_next_to_guard(g.times, sin.data(), s_el, at_end);
            unsigned char *xp = g.out.place(x_in.size(), at_end), *sp = g.x.place(s_in.size(), at_end);
            std::memcpy(sp, s_in.data(), s_in.size());
            for (posenc_isa isa : isas)
              for (bool parts : {false, true}) {
                std::memcpy(xp, x_in.data(), x_in.size());
                ref::on_path(isa, [&] {
                  if (!parts) {
                    REQUIRE(given_call(family, es, bf16, r, pairs, c, cs, s, ss, n, copy ? sp : nullptr,
                                       src_t.token_stride(), src_t.head_dim, xp, heads, q.token_stride(), q.head_dim, 0,
                                       n) == POSENC_OK);
                  } else {
                    for (int64_t t = n - 1; t >= 0; --t)
                      REQUIRE(given_call(family, es, bf16, r, pairs, c, cs, s, ss, n, copy ? sp : nullptr,
                                         src_t.token_stride(), src_t.head_dim, xp, heads, q.token_stride(), q.head_dim,
                                         t, t + 1) == POSENC_OK);
                  }
                });
                ++calls;
                if (std::memcmp(xp, want.data(), x_in.size()) != 0)
                  FAIL("family " << int(family) << " format " << fmt << " r " << r << " variant " << variant << " path "
                                 << posenc_isa_name(isa) << (at_end ? " at the end" : " at the start")
                                 << (parts ? ", token by token" : "") << ": differs from the scalar path");
                CHECK(std::memcmp(sp, s_in.data(), s_in.size()) == 0);  // the source is only read
              }
          }
        }
    }
  CHECK(calls == int64_t(3 * 3 * 33 * 4 * 2 * 2 * isas.size()));
}
