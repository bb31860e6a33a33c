// Bad input, every public kernel: the documented status, and not one byte of any buffer changed (outputs
// canary-filled, inputs compared with their copies). Every case starts from a call that succeeds, so the
// one argument a case breaks is what the status is about. n = 70 rows spans two 65-row blocks of the
// kernel: an implementation that checked a block's positions or tokens only when it reached that block
// would already have written the first one when the bad value is the last.
// Also: valid edge values (they must write exactly the rows), NaN and Inf in activations and embedding
// tables (IEEE propagation, element by element), a spec whose frequency table cannot be sized, and the
// ISA and enum functions given values outside their enums.
#include <catch2/catch.hpp>

#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "support/calls.hpp"
#include "support/halves.hpp"
#include "support/paths.hpp"
#include "support/rope.hpp"

namespace {

using ref::Kernel;
using ref::KernelTraits;

constexpr int64_t k2p31 = int64_t(1) << 31;
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// Out-of-range positions, the same for the table and the RoPE matrices: explicit ones (each put first and
// last of the 70) and implicit starts whose rows leave the range or wrap.
struct NamedValue {
  const char *name;
  int64_t value;
};
const NamedValue kBadPositions[] = {
    {"2^31", k2p31}, {"-2^31", -k2p31}, {"INT64_MAX", kI64Max}, {"INT64_MIN + 1", kI64Min + 1}};
const NamedValue kBadFirsts[] = {
    {"2^31 - 69 (last is 2^31)", k2p31 - 69},         {"-2^31", -k2p31},          {"INT64_MAX", kI64Max},
    {"INT64_MAX - 3 (first + n wraps)", kI64Max - 3}, {"POSENC_PAD", POSENC_PAD}, {"2^31", k2p31}};

// A successful call of one kernel with every buffer it reads or writes. Inputs hold finite values (the
// 0xA5 byte pattern is a small negative float, bfloat16 and binary16 alike); positions are a run with a
// POSENC_PAD in it and rows 20-29 at one repeated position (kernel.hpp takes those rows another way), all
// inside the learned table; token ids cover the embedding table.
struct Fixture {
  static constexpr int64_t kRows = 70, kVocab = 7, kPosRows = 80, kFirst = 2;
  Kernel kernel;
  const KernelTraits &t;
  posenc_spec spec;
  int64_t d;
  std::vector<int64_t> positions, positions_copy;
  std::vector<int32_t> tokens, tokens_copy;
  std::vector<double> times, times_copy;  // timesteps_*
  ref::Canary out, x, pos_table;
  ref::Call call;

  static size_t extent(int64_t rows, int64_t stride, int64_t width) { return size_t((rows - 1) * stride + width); }

  Fixture(Kernel k, int64_t d_model, posenc_layout layout)
      : kernel(k),
        t(ref::traits(k)),
        spec(posenc_spec_default(d_model)),
        d(d_model),
        out((extent(kRows, d_model + 3, d_model) + 32) * t.out_size, 0x5C),
        x(t.has_activations ? extent(kRows, d_model + 1, d_model) * t.in_size
          : t.has_table     ? extent(kVocab, d_model + 1, d_model) * t.in_size
                            : 0),
        pos_table(t.has_pos_table ? extent(kPosRows, d_model + 2, d_model) * 4 : 0) {
    spec.layout = layout;
    for (int64_t r = 0; r < kRows; ++r) {
      positions.push_back(r == 10 ? POSENC_PAD : r >= 20 && r < 30 ? 50 : r + 3);
      tokens.push_back(int32_t((r * 5 + 1) % kVocab));
      times.push_back(r % 3 == 0 ? double(r) : 0.25 * double(r) - 3.5);  // integer-valued and fractional
    }
    tokens[0] = 0;
    tokens[1] = int32_t(kVocab - 1);
    positions_copy = positions;
    tokens_copy = tokens;
    times_copy = times;
    call.kernel = k;
    call.spec = &spec;
    call.d_model = d;
    call.first = kFirst;
    call.n = kRows;
    call.positions = t.positions_required || t.positions_optional ? positions.data() : nullptr;
    call.times = t.times ? times.data() : nullptr;
    call.x = t.has_activations || t.has_table ? x.data() : nullptr;
    call.x_stride = d + 1;
    call.vocab = t.has_table ? kVocab : 0;
    call.tokens = t.has_table ? tokens.data() : nullptr;
    call.scale = 0.75f;
    call.pos_table = t.has_pos_table ? reinterpret_cast<const float *>(pos_table.data()) : nullptr;
    call.pos_rows = t.has_pos_table ? kPosRows : 0;
    call.pos_stride = d + 2;
    call.out = out.data();
    call.out_stride = d + 3;
  }

  // Every buffer exactly as the fixture made it, the mutated arrays excepted (the cases change them).
  bool inputs_intact() const { return x.intact() && pos_table.intact(); }
  bool arrays_as_built() const {
    return positions == positions_copy && tokens == tokens_copy &&
           std::memcmp(times.data(), times_copy.data(), times.size() * sizeof(double)) == 0;
  }

  // After a successful call: the bytes outside the n rows of d elements (stride gaps, the tail) unchanged.
  bool only_rows_written() const {
    const unsigned char *b = out.data();
    const size_t es = t.out_size;
    const int64_t n = call.n, stride = call.out_stride;
    for (size_t k = 0; k < out.size(); ++k) {
      const int64_t e = int64_t(k / es);
      const bool in_row = e < n * stride && e % stride < d && e / stride < n;
      if (!in_row && b[k] != 0x5C) return false;
    }
    return true;
  }
};

// One bad argument (or a few, for the check order) and the status the header documents for it.
struct Case {
  std::string what;
  posenc_status want;
  std::function<bool(const KernelTraits &)> applies;
  std::function<void(Fixture &)> mutate;
  int64_t min_d = 1;  // frequency limits need a pair: a one-column row has no frequency to be too large
};

bool any(const KernelTraits &) { return true; }
bool spec_kernels(const KernelTraits &t) { return t.has_spec; }
bool learned(const KernelTraits &t) { return t.has_pos_table; }
bool explicit_positions(const KernelTraits &t) { return t.positions_required || t.positions_optional; }
bool implicit_positions(const KernelTraits &t) { return !t.positions_required && !t.times; }
bool timestep_kernels(const KernelTraits &t) { return t.times; }
bool table_sources(const KernelTraits &t) { return t.has_table; }

// A stride that makes rows - 1 strides plus d elements fit in int64 but their bytes not.
int64_t byte_overflow_stride(int64_t rows, size_t elem) { return (kI64Max / int64_t(elem)) / (rows - 1) + 1; }

void set_layout(posenc_spec &s, int v) { std::memcpy(&s.layout, &v, sizeof v); }

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::vector<Case> cases() {
  std::vector<Case> c;
  const auto add = [&](std::string what, posenc_status want, std::function<bool(const KernelTraits &)> applies,
                       std::function<void(Fixture &)> mutate) {
    c.push_back(Case{std::move(what), want, std::move(applies), std::move(mutate)});
  };
  // sizes and the n == 0 shortcut
  for (int64_t n : {int64_t(-1), int64_t(-70), kI64Min})
    add("n = " + std::to_string(n), POSENC_ERR_INVALID, any, [n](Fixture &f) { f.call.n = n; });
  add("n < 0 comes before NULL", POSENC_ERR_INVALID, any, [](Fixture &f) {
    f.call.n = -1;
    f.call.out = nullptr;
    f.call.spec = nullptr;
  });
  add("n = 0 with every pointer NULL and garbage strides", POSENC_OK, any, [](Fixture &f) {
    f.call = ref::Call{f.kernel};
    f.call.d_model = f.d;
    f.call.out_stride = f.call.x_stride = f.call.pos_stride = -5;
    f.call.vocab = f.call.pos_rows = -1;
  });
  add("n = 0 still validates a given spec", POSENC_ERR_INVALID, spec_kernels, [](Fixture &f) {
    f.call.n = 0;
    f.spec.base = kNaN;
    f.call.out = nullptr;
  });
  add("n = 0 still validates d_model", POSENC_ERR_INVALID, learned, [](Fixture &f) {
    f.call.n = 0;
    f.call.d_model = 0;
  });
  // NULL pointers
  add("out NULL", POSENC_ERR_NULL, any, [](Fixture &f) { f.call.out = nullptr; });
  add("spec NULL", POSENC_ERR_NULL, spec_kernels, [](Fixture &f) { f.call.spec = nullptr; });
  add(
      "positions NULL", POSENC_ERR_NULL, [](const KernelTraits &t) { return t.positions_required; },
      [](Fixture &f) { f.call.positions = nullptr; });
  add(
      "activations NULL", POSENC_ERR_NULL, [](const KernelTraits &t) { return t.has_activations; },
      [](Fixture &f) { f.call.x = nullptr; });
  add("embedding table NULL", POSENC_ERR_NULL, table_sources, [](Fixture &f) { f.call.x = nullptr; });
  add("tokens NULL", POSENC_ERR_NULL, table_sources, [](Fixture &f) { f.call.tokens = nullptr; });
  add("learned position table NULL", POSENC_ERR_NULL, learned, [](Fixture &f) { f.call.pos_table = nullptr; });
  add("NULL comes before a bad spec", POSENC_ERR_NULL, spec_kernels, [](Fixture &f) {
    f.call.out = nullptr;
    f.spec.base = -1.0;
  });
  add("NULL comes before a bad d_model", POSENC_ERR_NULL, learned, [](Fixture &f) {
    f.call.tokens = nullptr;
    f.call.d_model = -1;
  });
  // the spec
  for (int64_t d : {int64_t(0), int64_t(-1), kI64Min})
    add("d_model = " + std::to_string(d), POSENC_ERR_INVALID, any, [d](Fixture &f) {
      f.spec.d_model = d;
      f.call.d_model = d;
    });
  for (double base : {0.0, -0.0, -1.0, -std::numeric_limits<double>::denorm_min(), kNaN, -kNaN, kInf, -kInf})
    add("base = " + num(base), POSENC_ERR_INVALID, spec_kernels, [base](Fixture &f) { f.spec.base = base; });
  for (double den : {-1.0, -std::numeric_limits<double>::denorm_min(), kNaN, kInf, -kInf})
    add("freq_denominator = " + num(den), POSENC_ERR_INVALID, spec_kernels,
        [den](Fixture &f) { f.spec.freq_denominator = den; });
  for (double sc : {kNaN, kInf, -kInf})
    add("position_scale = " + num(sc), POSENC_ERR_INVALID, spec_kernels,
        [sc](Fixture &f) { f.spec.position_scale = sc; });
  for (double sc : {0x1p1000, -0x1p1000, std::numeric_limits<double>::max()}) {
    add("position_scale = " + num(sc), POSENC_ERR_INVALID, spec_kernels,
        [sc](Fixture &f) { f.spec.position_scale = sc; });
    c.back().min_d = 2;
  }
  add(
      "a frequency base^(-i/D) of 2^1000 or more", POSENC_ERR_INVALID, [](const KernelTraits &t) { return t.has_spec; },
      [](Fixture &f) {
        f.spec.base = 0.5;
        f.spec.freq_denominator = 1e-3;                            // w_(h-1) = 2^(1000 (h-1)): too large from h = 2 on
        if (f.spec.d_model < 4) f.spec.position_scale = 0x1p1000;  // one pair: w_0 = 1
      });
  c.back().min_d = 2;
  for (int layout : {3, -1, INT_MIN, INT_MAX})
    add("layout = " + std::to_string(layout), POSENC_ERR_INVALID, spec_kernels,
        [layout](Fixture &f) { set_layout(f.spec, layout); });
  add("a bad spec comes before a bad stride and an overflow", POSENC_ERR_INVALID, spec_kernels, [](Fixture &f) {
    f.spec.position_scale = kNaN;
    f.call.out_stride = kI64Max;
  });
  // strides and counts
  add("out_stride = d - 1", POSENC_ERR_INVALID, any, [](Fixture &f) { f.call.out_stride = f.d - 1; });
  for (int64_t s : {int64_t(0), int64_t(-1), kI64Min})
    add("out_stride = " + std::to_string(s), POSENC_ERR_INVALID, any, [s](Fixture &f) { f.call.out_stride = s; });
  add(
      "activation stride = d - 1", POSENC_ERR_INVALID, [](const KernelTraits &t) { return t.has_activations; },
      [](Fixture &f) { f.call.x_stride = f.d - 1; });
  add("embedding table stride = d - 1", POSENC_ERR_INVALID, table_sources,
      [](Fixture &f) { f.call.x_stride = f.d - 1; });
  add("embedding table stride = -1", POSENC_ERR_INVALID, table_sources, [](Fixture &f) { f.call.x_stride = -1; });
  add("learned table stride = d - 1", POSENC_ERR_INVALID, learned, [](Fixture &f) { f.call.pos_stride = f.d - 1; });
  add("vocab = -1", POSENC_ERR_INVALID, table_sources, [](Fixture &f) { f.call.vocab = -1; });
  add("pos_rows = -1", POSENC_ERR_INVALID, learned, [](Fixture &f) { f.call.pos_rows = -1; });
  add("out rows overflow int64 elements", POSENC_ERR_OVERFLOW, any,
      [](Fixture &f) { f.call.out_stride = kI64Max / 4; });
  add("out elements fit int64, their bytes do not", POSENC_ERR_OVERFLOW, any,
      [](Fixture &f) { f.call.out_stride = byte_overflow_stride(f.call.n, f.t.out_size); });
  add("n = INT64_MAX (never read past the 70 positions)", POSENC_ERR_OVERFLOW, any,
      [](Fixture &f) { f.call.n = kI64Max; });
  add("n = 2^62", POSENC_ERR_OVERFLOW, any, [](Fixture &f) { f.call.n = int64_t(1) << 62; });
  add("d_model = 2^62: one row's bytes overflow", POSENC_ERR_OVERFLOW, any, [](Fixture &f) {
    f.spec.d_model = f.call.d_model = int64_t(1) << 62;
    f.call.out_stride = f.call.x_stride = f.call.pos_stride = int64_t(1) << 62;
  });
  add(
      "activation rows overflow", POSENC_ERR_OVERFLOW, [](const KernelTraits &t) { return t.has_activations; },
      [](Fixture &f) { f.call.x_stride = byte_overflow_stride(f.call.n, 4); });
  add("embedding table rows overflow", POSENC_ERR_OVERFLOW, table_sources,
      [](Fixture &f) { f.call.x_stride = byte_overflow_stride(f.call.vocab, f.t.in_size); });
  add("vocab = INT64_MAX", POSENC_ERR_OVERFLOW, table_sources, [](Fixture &f) { f.call.vocab = kI64Max; });
  add("learned table rows overflow", POSENC_ERR_OVERFLOW, learned,
      [](Fixture &f) { f.call.pos_stride = byte_overflow_stride(f.call.pos_rows, 4); });
  add("pos_rows = INT64_MAX", POSENC_ERR_OVERFLOW, learned, [](Fixture &f) { f.call.pos_rows = kI64Max; });
  // (rows - 1) * stride near 2^126: its bytes would pass 2^127 (the fuzzer's find; UBSan checks the arithmetic)
  add("rows and stride INT64_MAX: the extent's bytes past 2^127", POSENC_ERR_OVERFLOW, learned, [](Fixture &f) {
    f.call.pos_rows = kI64Max;
    f.call.pos_stride = kI64Max;
  });
  add("n and out_stride INT64_MAX", POSENC_ERR_OVERFLOW, any, [](Fixture &f) {
    f.call.n = kI64Max;
    f.call.out_stride = kI64Max;
  });
  add("an overflow comes before a bad token and a bad position", POSENC_ERR_OVERFLOW, table_sources, [](Fixture &f) {
    f.call.vocab = kI64Max;
    f.tokens.back() = -1;
    f.positions.back() = kI64Max;
  });
  // positions, explicit: first and last of the 70, both signs
  for (const NamedValue &bp : kBadPositions)
    for (bool last : {false, true}) {
      const int64_t v = bp.value;
      add(
          std::string("explicit position ") + bp.name + (last ? " (last)" : " (first)"), POSENC_ERR_OUT_OF_RANGE,
          [](const KernelTraits &t) { return explicit_positions(t) && t.has_spec; },
          [v, last](Fixture &f) { (last ? f.positions.back() : f.positions.front()) = v; });
    }
  // positions, implicit first + r
  for (const NamedValue &bf : kBadFirsts) {
    const int64_t v = bf.value;
    add(
        std::string("first = ") + bf.name, POSENC_ERR_OUT_OF_RANGE,
        [](const KernelTraits &t) { return implicit_positions(t); },
        [v](Fixture &f) {
          f.call.first = v;
          f.call.positions = nullptr;
        });
  }
  // learned positions
  for (int64_t v : {int64_t(-1), int64_t(Fixture::kPosRows), kI64Max, kI64Min + 1, -k2p31})
    for (bool last : {false, true})
      add("learned position " + std::to_string(v) + (last ? " (last)" : " (first)"), POSENC_ERR_OUT_OF_RANGE, learned,
          [v, last](Fixture &f) { (last ? f.positions.back() : f.positions.front()) = v; });
  add("learned first + n - 1 = pos_rows", POSENC_ERR_OUT_OF_RANGE, learned, [](Fixture &f) {
    f.call.positions = nullptr;
    f.call.first = Fixture::kPosRows - Fixture::kRows + 1;
  });
  add("learned first = -1", POSENC_ERR_OUT_OF_RANGE, learned, [](Fixture &f) {
    f.call.positions = nullptr;
    f.call.first = -1;
  });
  add("learned pos_rows = 0", POSENC_ERR_OUT_OF_RANGE, learned, [](Fixture &f) { f.call.pos_rows = 0; });
  // token ids
  for (int32_t tok : {int32_t(-1), int32_t(Fixture::kVocab), INT32_MAX, INT32_MIN})
    for (bool last : {false, true})
      add("token " + std::to_string(tok) + (last ? " (last)" : " (first)"), POSENC_ERR_OUT_OF_RANGE, table_sources,
          [tok, last](Fixture &f) { (last ? f.tokens.back() : f.tokens.front()) = tok; });
  add("vocab = 0", POSENC_ERR_OUT_OF_RANGE, table_sources, [](Fixture &f) { f.call.vocab = 0; });
  // timesteps (posenc.h, "Real-valued positions")
  add("timesteps NULL", POSENC_ERR_NULL, timestep_kernels, [](Fixture &f) { f.call.times = nullptr; });
  add("NULL timesteps come before a bad spec", POSENC_ERR_NULL, timestep_kernels, [](Fixture &f) {
    f.call.times = nullptr;
    f.spec.base = -1.0;
  });
  for (double v :
       {kNaN, -kNaN, kInf, -kInf, double(k2p31), -double(k2p31), 1e300, std::nextafter(double(k2p31), 0.0) * 2})
    for (bool last : {false, true})
      add("timestep " + num(v) + (last ? " (last)" : " (first)"), POSENC_ERR_OUT_OF_RANGE, timestep_kernels,
          [v, last](Fixture &f) { (last ? f.times.back() : f.times.front()) = v; });
  for (double sc : {0x1p52, -0x1p52, 0x1p60}) {
    add("a frequency of " + num(sc) + " for timesteps", POSENC_ERR_INVALID, timestep_kernels,
        [sc](Fixture &f) { f.spec.position_scale = sc; });
    c.back().min_d = 2;
  }
  add("an overflow comes before a bad timestep", POSENC_ERR_OVERFLOW, timestep_kernels, [](Fixture &f) {
    f.call.out_stride = kI64Max / 4;
    f.times.back() = kNaN;
  });
  add("a frequency too large comes before a bad timestep", POSENC_ERR_INVALID, timestep_kernels, [](Fixture &f) {
    f.spec.position_scale = 0x1p53;
    f.times.back() = kNaN;
    if (f.spec.d_model < 2) f.spec.base = -1.0;  // no pair, no frequency: a bad base stands in
  });
  add("a bad token with implicit positions", POSENC_ERR_OUT_OF_RANGE, table_sources, [](Fixture &f) {
    f.call.positions = nullptr;
    f.tokens.back() = int32_t(Fixture::kVocab);
  });
  return c;
}

// The widths: one column, one pair, odd with tails on every path, and several full vectors.
const int64_t kWidths[] = {1, 2, 13, 40};

// c (a ref::Call or a ref::RopeCall) run as three parts, the last first (posenc.h, "Parts of a call"): every
// part returns POSENC_OK; the caller compares the bytes with the whole call's.
template <class Call>
void in_three_parts(Call c) {
  const int64_t n = c.n;
  c.part = true;
  const std::pair<int64_t, int64_t> thirds[] = {{2 * n / 3, n}, {n / 3, 2 * n / 3}, {0, n / 3}};
  for (const auto &r : thirds) {
    c.begin = r.first;
    c.end = r.second;
    CHECK(ref::invoke(c) == POSENC_OK);
  }
}

}  // namespace

TEST_CASE("bad input: the documented status, and not one byte written", "[hardening]") {
  const std::vector<Case> all = cases();
  int checked = 0;
  for (posenc_isa isa : ref::paths())
    ref::on_path(isa, [&] {
      for (Kernel k : ref::kAllKernels)
        for (int64_t d : kWidths) {
          const posenc_layout layout = d == 13 ? POSENC_SIN_COS_HALVES : POSENC_INTERLEAVED;
          {
            Fixture ok(k, d, layout);  // the unbroken call succeeds and writes only its rows
            INFO(ok.t.name << " d " << d << " path " << posenc_isa_name(isa));
            REQUIRE(ref::invoke(ok.call) == POSENC_OK);
            REQUIRE(ok.only_rows_written());
            REQUIRE(ok.inputs_intact());
            REQUIRE(ok.arrays_as_built());
          }
          for (const Case &c : all)
            for (int mode = 0; mode < ref::kPartModes; ++mode) {  // the call, and its _part twin on parts of it
              Fixture f(k, d, layout);
              if (!c.applies(f.t) || d < c.min_d) continue;
              c.mutate(f);
              ref::set_part_mode(f.call, mode);
              const std::vector<int64_t> positions = f.positions;
              const std::vector<int32_t> tokens = f.tokens;
              const std::vector<double> times = f.times;  // compared as bytes: some are NaN
              const posenc_status st = ref::invoke(f.call);
              INFO(f.t.name << " d " << d << " path " << posenc_isa_name(isa) << ": " << c.what << ", "
                            << ref::part_mode_name(mode));
              CHECK(st == c.want);
              CHECK(f.out.first_change() == -1);
              CHECK(f.inputs_intact());
              CHECK(f.positions == positions);
              CHECK(f.tokens == tokens);
              CHECK(std::memcmp(f.times.data(), times.data(), times.size() * sizeof(double)) == 0);
              ++checked;
            }
        }
    });
  CHECK(checked > 1000);
}

TEST_CASE("valid edge values succeed and write exactly the rows", "[hardening]") {
  const std::vector<std::pair<const char *, std::function<void(Fixture &)>>> edges = {
      {"positions +-(2^31 - 1)",
       [](Fixture &f) {
         if (f.t.has_pos_table) return;  // the learned table is indexed by the position
         f.positions.front() = k2p31 - 1;
         f.positions.back() = -(k2p31 - 1);
         f.call.first = -(k2p31 - 1);
       }},
      {"first + n - 1 = 2^31 - 1",
       [](Fixture &f) {
         if (f.t.has_pos_table) return;
         f.call.positions = f.t.positions_required ? f.call.positions : nullptr;
         f.call.first = k2p31 - Fixture::kRows;
       }},
      {"POSENC_PAD first and last", [](Fixture &f) { f.positions.front() = f.positions.back() = POSENC_PAD; }},
      {"every token the last id", [](Fixture &f) { f.tokens.assign(f.tokens.size(), int32_t(Fixture::kVocab - 1)); }},
      {"learned positions at both ends of the table",
       [](Fixture &f) {
         f.positions.front() = 0;
         f.positions.back() = Fixture::kPosRows - 1;
       }},
      {"freq_denominator = -0.0 (means h)", [](Fixture &f) { f.spec.freq_denominator = -0.0; }},
      {"base 1: every frequency 1", [](Fixture &f) { f.spec.base = 1.0; }},
      {"base at the smallest subnormal, D large",
       [](Fixture &f) {
         f.spec.base = std::numeric_limits<double>::denorm_min();
         f.spec.freq_denominator = 1e6;
       }},
      {"position_scale 0", [](Fixture &f) { f.spec.position_scale = 0.0; }},
      {"position_scale -1e-300", [](Fixture &f) { f.spec.position_scale = -1e-300; }},
      {"a large frequency, 2^300",
       [](Fixture &f) {
         if (f.t.times) return;  // timesteps take frequencies below 2^52 (their own edge below)
         f.spec.base = 0.5;
         f.spec.freq_denominator = f.spec.d_model / 2 >= 2 ? double(f.spec.d_model / 2 - 1) / 300.0 : 1.0;
       }},
      {"tight strides (= d)", [](Fixture &f) { f.call.out_stride = f.call.x_stride = f.call.pos_stride = f.d; }},
      {"timesteps +-(2^31 - 2^-22), tiny, subnormal and signed zero",
       [](Fixture &f) {
         const double big = std::nextafter(double(k2p31), 0.0);
         const double vals[] = {big, -big, 5e-324, -0.0, 0x1p-61, 1e-300};
         for (size_t k = 0; k < sizeof vals / sizeof vals[0]; ++k) f.times[k] = vals[k];
       }},
      {"a frequency just below 2^52 for timesteps", [](Fixture &f) { f.spec.position_scale = 0x1.fffp51; }},
  };
  for (posenc_isa isa : ref::paths())
    ref::on_path(isa, [&] {
      for (Kernel k : ref::kAllKernels)
        for (int64_t d : kWidths)
          for (const auto &e : edges) {
            Fixture f(k, d, d == 40 ? POSENC_COS_SIN_HALVES : POSENC_INTERLEAVED);
            e.second(f);
            INFO(f.t.name << " d " << d << " path " << posenc_isa_name(isa) << ": " << e.first);
            REQUIRE(ref::invoke(f.call) == POSENC_OK);
            CHECK(f.only_rows_written());
            CHECK(f.inputs_intact());
            // the same call in three parts, the last first: the same bytes
            Fixture g(k, d, d == 40 ? POSENC_COS_SIN_HALVES : POSENC_INTERLEAVED);
            e.second(g);
            in_three_parts(g.call);
            CHECK(std::memcmp(g.out.data(), f.out.data(), f.out.size()) == 0);
          }
    });
}

TEST_CASE("the ISA and name functions outside their enums", "[hardening]") {
  for (int v : {-1, 4, 5, 99, INT_MIN, INT_MAX}) {
    const posenc_isa isa = posenc_isa(v);
    INFO("isa value " << v);
    CHECK(posenc_isa_available(isa) == 0);
    CHECK(std::strcmp(posenc_isa_name(isa), "unknown") == 0);
    const posenc_isa before = posenc_active_isa();
    CHECK(posenc_force_isa(isa) == POSENC_ERR_INVALID);
    CHECK(posenc_active_isa() == before);
  }
  for (int v : {-1, 7, 1000, INT_MIN, INT_MAX}) {
    INFO("status value " << v);
    CHECK(std::strcmp(posenc_status_string(posenc_status(v)), "unknown status") == 0);
  }
}

// The one-time setup sizes its table from d_model. A d_model whose table size does not fit in size_t must
// be refused as NO_MEMORY, not wrap to a small allocation that the setup then writes past. With 36 doubles
// and one 48-byte exact lane per padded pair (5376 bytes per 16 pairs), the first value wraps around 2^64 to
// 4352 bytes, 2^61 - 2 wraps to 5376 bytes, and 2^60 asks for 2^63 bytes. The caller's buffer is small: the
// call fails before it could be touched, and must leave it alone.
TEST_CASE("a d_model whose frequency table cannot be sized is NO_MEMORY, nothing written", "[hardening]") {
  const int64_t wrap_pairs = ((int64_t(1) << 56) + 17) / 21 * 16 - 16;  // h with padded = 16 (2^56+17)/21
  for (int64_t d : {2 * wrap_pairs, int64_t(1) << 60, (int64_t(1) << 61) - 2}) {
    INFO("d_model " << d);
    posenc_spec s = posenc_spec_default(d);
    ref::Canary out(256, 0x5C);
    for (posenc_isa isa : ref::paths())
      ref::on_path(isa, [&] {
        CHECK(posenc_table_bf16(&s, 0, 1, reinterpret_cast<uint16_t *>(out.data()), d) == POSENC_ERR_NO_MEMORY);
      });
    CHECK(out.intact());
  }
}

// ---- NaN and Inf in activations and embedding tables --------------------------------------------------

namespace {

using ref::widen_bf16;
using ref::widen_f16;

// got must be fmaf's result, and where that is a NaN, the one posenc.h specifies: the first NaN among
// x, the position term and scale, quieted; +qNaN for an invalid operation (0 * inf, inf - inf).
bool ieee_same(float got, float want, float x, float y, float scale) {
  if (std::isnan(want)) {
    auto nan_bits = [](float v) { return std::isnan(v); };
    const float src = nan_bits(x) ? x : nan_bits(y) ? y : nan_bits(scale) ? scale : 0.0f;
    const uint32_t expect = std::isnan(src) ? (ref::bits_of_float(src) | 0x00400000u) : 0x7FC00000u;
    return ref::bits_of_float(got) == expect;
  }
  return ref::bits_of_float(got) == ref::bits_of_float(want);
}

// Specials, as float32 bits and as the same values in bfloat16 and binary16: quiet and signalling NaNs of
// both signs, infinities, a negative zero, the smallest subnormal, the largest finite value.
const uint32_t kSpecialF32[] = {0x7FC00000u, 0xFFC00001u, 0x7F800001u, 0x7F800000u,
                                0xFF800000u, 0x80000000u, 0x00000001u, 0x7F7FFFFFu};
const uint16_t kSpecialBF16[] = {0x7FC0, 0xFFC1, 0x7F81, 0x7F80, 0xFF80, 0x8000, 0x0001, 0x7F7F};
const uint16_t kSpecialF16[] = {0x7E00, 0xFE01, 0x7C01, 0x7C00, 0xFC00, 0x8000, 0x0001, 0x7BFF};

}  // namespace

TEST_CASE("NaN and Inf inputs propagate as fmaf says, with posenc.h's NaN rule, element by element",
          "[hardening][nan]") {
  const Kernel kernels[] = {Kernel::kAddF32, Kernel::kEmbedF32, Kernel::kEmbedBF16, Kernel::kEmbedF16,
                            Kernel::kEmbedLearnedF32};
  const float nanf = std::numeric_limits<float>::quiet_NaN(), inff = std::numeric_limits<float>::infinity();
  for (posenc_isa isa : ref::paths())
    ref::on_path(isa, [&] {
      for (Kernel k : kernels)
        for (int64_t d : {int64_t(1), int64_t(13), int64_t(40)})
          for (posenc_layout layout : {POSENC_INTERLEAVED, POSENC_SIN_COS_HALVES, POSENC_COS_SIN_HALVES})
            for (float scale : {1.0f, -2.5f, 0.0f, nanf, inff})
              for (bool in_place : {false, true}) {
                Fixture f(k, d, layout);
                if (in_place && !f.t.has_activations) continue;
                f.call.scale = scale;
                // specials at the first and last element of rows, the odd column, the middle (a partial
                // vector on the SIMD paths), and the last element of the last row
                const int64_t n = f.call.n, xs = f.call.x_stride, rows = f.t.has_activations ? n : Fixture::kVocab;
                std::vector<int64_t> spots = {0, d - 1, xs + d / 2, 3 * xs + d - 1, (rows - 1) * xs + d - 1};
                for (size_t s = 0; s < spots.size(); ++s) {
                  const size_t at = size_t(spots[s]), which = (s * 3 + size_t(d)) % 8;
                  if (f.t.in_size == 4)
                    std::memcpy(f.x.data() + 4 * at, &kSpecialF32[which], 4);
                  else if (k == Kernel::kEmbedBF16)
                    std::memcpy(f.x.data() + 2 * at, &kSpecialBF16[which], 2);
                  else
                    std::memcpy(f.x.data() + 2 * at, &kSpecialF16[which], 2);
                }
                if (f.t.has_pos_table) {  // the learned table's values are added as they are: NaN too
                  float v = nanf;
                  std::memcpy(f.pos_table.data() + 4 * size_t(f.call.pos_stride * 4 + d - 1), &v, 4);
                  v = -inff;
                  std::memcpy(f.pos_table.data() + 4 * size_t(f.call.pos_stride * 5), &v, 4);
                }
                if (in_place) {  // out = x: copy the activations to the output rows first
                  f.call.out_stride = f.call.x_stride;
                  std::memcpy(f.out.data(), f.x.data(), f.x.size());
                  f.call.x = f.out.data();
                }
                const std::vector<unsigned char> x(f.x.data(), f.x.data() + f.x.size());
                // PE of every row on this path (POSENC_PAD rows are zeros), or the learned table's rows
                std::vector<float> pe(size_t(n * d), 0.0f);
                if (f.t.has_spec) REQUIRE(posenc_rows_f32(&f.spec, f.positions.data(), n, pe.data(), d) == POSENC_OK);
                REQUIRE(ref::invoke(f.call) == POSENC_OK);
                const auto *out = reinterpret_cast<const float *>(f.out.data());
                for (int64_t r = 0; r < n; ++r) {
                  const int64_t xrow = f.t.has_activations ? r : f.tokens[size_t(r)];
                  const int64_t p = f.positions[size_t(r)];
                  for (int64_t e = 0; e < d; ++e) {
                    const size_t xi = size_t(xrow * xs + e);
                    float xv;
                    if (f.t.in_size == 4) {
                      std::memcpy(&xv, x.data() + 4 * xi, 4);
                    } else {
                      uint16_t hv;
                      std::memcpy(&hv, x.data() + 2 * xi, 2);
                      xv = k == Kernel::kEmbedBF16 ? widen_bf16(hv) : widen_f16(hv);
                    }
                    float pv = pe[size_t(r * d + e)];
                    if (f.t.has_pos_table && p != POSENC_PAD)
                      std::memcpy(&pv, f.pos_table.data() + 4 * size_t(p * f.call.pos_stride + e), 4);
                    const float want = std::fmaf(scale, xv, pv), got = out[r * f.call.out_stride + e];
                    if (!ieee_same(got, want, xv, pv, scale)) {
                      FAIL_CHECK(f.t.name << " path " << posenc_isa_name(isa) << " d " << d << " layout " << int(layout)
                                          << " scale " << scale << " in place " << in_place << " row " << r
                                          << " element " << e << ": got " << got << " want " << want << " (x " << xv
                                          << ", pe " << pv << ")");
                      return;
                    }
                  }
                }
                if (!in_place) CHECK(f.only_rows_written());
              }
    });
}

// ---- RoPE (posenc_rope_cache_f32, posenc_rope_*, posenc_rope_qk_*, posenc_rope_copy_*) -------------------

namespace {

using ref::RopeCall;
using ref::RopeKernel;

// A successful call of one RoPE function on one canary-filled buffer (0x5C bytes: a small finite value in
// float32, bfloat16 and binary16 alike) holding two tensors: q (or the cos rows, or rope_copy_*'s x) from
// element 0, k (or the sin rows, or the source rows of rope_copy_*, [T,H,D] with a gap) after it. 70 tokens with a
// POSENC_PAD and a repeated run, as above; head_dim r + 3 (partial rotary), token strides with a gap, explicit
// frequencies or base^(-2i/r).
struct RopeFixture {
  static constexpr int64_t kRows = 70, kHeads = 3, kKHeads = 2, kFirst = 5;
  RopeKernel kernel;
  size_t es;
  int64_t r, h, d;
  std::vector<double> freq, freq_copy;
  posenc_rope rope;
  std::vector<int64_t> positions, positions_copy;
  std::vector<uint8_t> axis;  // multi-axis specs (to_axes)
  int64_t k_offset;           // elements
  ref::Canary buf;
  RopeCall call;

  // A valid 3-axis spec (pairs on axes i % 3) with 3 * 70 positions: axis 0 as before, axis 1 fixed, axis 2
  // consecutive (an image row); the multi-axis cases start from it.
  void to_axes() {
    axis.clear();
    for (int64_t i = 0; i < h; ++i) axis.push_back(uint8_t(i % 3));
    rope.axes = 3;
    rope.axis = axis.data();
    positions.resize(size_t(3 * kRows));
    for (int64_t t = 0; t < kRows; ++t) {
      positions[size_t(kRows + t)] = 7;
      positions[size_t(2 * kRows + t)] = 100 + t;
    }
    call.positions = positions.data();
  }

  // room for q as a fused QKV buffer too (token stride (kHeads + 2 kKHeads) head_dim)
  static int64_t q_region(int64_t r) { return kRows * (kHeads + 2 * kKHeads) * (r + 3) + 8; }
  static int64_t k_region(int64_t r) { return kRows * (kHeads * (r + 3) + 2) + 8; }

  RopeFixture(RopeKernel k, int64_t rotary_dim, bool explicit_freq, posenc_rope_pairs pairs)
      : kernel(k),
        es(ref::format_size(ref::rope_format(k))),
        r(rotary_dim),
        h(rotary_dim / 2),
        d(rotary_dim + 3),
        rope(posenc_rope_default(rotary_dim)),
        k_offset(q_region(rotary_dim)),
        buf(size_t(q_region(rotary_dim) + k_region(rotary_dim)) * ref::format_size(ref::rope_format(k)), 0x5C) {
    for (int64_t i = 0; i < h; ++i) freq.push_back(i % 3 == 1 ? -0.5 / double(i + 1) : 1.0 / double(i + 1));
    freq_copy = freq;
    rope.pairs = pairs;
    rope.attention_scale = 1.369;
    rope.freq = explicit_freq ? freq.data() : nullptr;
    for (int64_t t = 0; t < kRows; ++t) positions.push_back(t == 10 ? POSENC_PAD : t >= 20 && t < 30 ? 50 : t + 3);
    positions_copy = positions;
    call.kernel = k;
    call.rope = &rope;
    call.positions = positions.data();
    call.first = kFirst;
    call.n = kRows;
    call.x = buf.data();
    call.k = buf.data() + size_t(k_offset) * es;
    if (ref::is_cache(k)) {
      call.token_stride = h + 1;    // cos_stride
      call.k_token_stride = h + 2;  // sin_stride
    } else {
      call.heads = kHeads;
      call.token_stride = kHeads * d + 1;
      call.head_stride = d;
      if (ref::is_qk(k)) {
        call.k_heads = kKHeads;
        call.k_token_stride = kKHeads * d + 2;
        call.k_head_stride = d;
      }
      if (ref::is_copy(k)) {
        call.src = call.k;
        call.k = nullptr;
        call.src_token_stride = kHeads * d + 2;
        call.src_head_stride = d;
      }
    }
  }

  // The rows a successful call may write: r elements of each head row of q and k, h of each cache row.
  bool only_rows_written() const {
    std::vector<bool> row(buf.size() / es, false);
    const auto mark = [&](const void *base, int64_t heads, int64_t ts, int64_t hs, int64_t width) {
      if (!base) return;
      const int64_t off = (static_cast<const unsigned char *>(base) - buf.data()) / int64_t(es);
      for (int64_t t = 0; t < call.n; ++t)
        for (int64_t j = 0; j < heads; ++j)
          for (int64_t e = 0; e < width; ++e) row[size_t(off + t * ts + j * hs + e)] = true;
    };
    if (ref::is_cache(kernel)) {
      mark(call.x, 1, call.token_stride, 0, h);
      mark(call.k, 1, call.k_token_stride, 0, h);
    } else {
      mark(call.x, call.heads, call.token_stride, call.head_stride, r);
      if (ref::is_qk(kernel)) mark(call.k, call.k_heads, call.k_token_stride, call.k_head_stride, r);
    }
    for (size_t k = 0; k < buf.size(); ++k)
      if (!row[k / es] && buf.data()[k] != 0x5C) return false;
    return true;
  }
};

struct RopeCase {
  std::string what;
  posenc_status want;
  std::function<bool(RopeKernel)> applies;
  std::function<void(RopeFixture &)> mutate;
  int freq_mode = 0;  // 0: with and without explicit frequencies; 1: explicit only; 2: base^(-2i/r) only
};

bool rope_any(RopeKernel) { return true; }
bool rope_cache(RopeKernel k) { return ref::is_cache(k); }
bool rope_rows(RopeKernel k) { return !ref::is_cache(k); }  // rope_* and rope_qk_*
bool rope_qk(RopeKernel k) { return ref::is_qk(k); }
bool rope_copy(RopeKernel k) { return ref::is_copy(k); }

void set_pairs(posenc_rope &r, int v) { std::memcpy(&r.pairs, &v, sizeof v); }

std::vector<RopeCase> rope_cases() {
  std::vector<RopeCase> c;
  const auto add = [&](std::string what, posenc_status want, std::function<bool(RopeKernel)> applies,
                       std::function<void(RopeFixture &)> mutate, int freq_mode = 0) {
    c.push_back(RopeCase{std::move(what), want, std::move(applies), std::move(mutate), freq_mode});
  };
  // sizes and the n == 0 shortcut
  for (int64_t n : {int64_t(-1), int64_t(-70), kI64Min})
    add("n = " + std::to_string(n), POSENC_ERR_INVALID, rope_any, [n](RopeFixture &f) { f.call.n = n; });
  add("n < 0 comes before NULL", POSENC_ERR_INVALID, rope_any, [](RopeFixture &f) {
    f.call.n = -1;
    f.call.rope = nullptr;
    f.call.x = f.call.k = nullptr;
    f.call.src = nullptr;
  });
  add("n = 0 with every pointer NULL, garbage strides and head counts", POSENC_OK, rope_any, [](RopeFixture &f) {
    f.call = RopeCall{f.kernel};
    f.call.token_stride = f.call.head_stride = f.call.k_token_stride = f.call.k_head_stride = -5;
    f.call.src_token_stride = f.call.src_head_stride = -5;
    f.call.heads = f.call.k_heads = -1;
  });
  add("n = 0 still validates a given rope", POSENC_ERR_INVALID, rope_any, [](RopeFixture &f) {
    f.call.n = 0;
    f.rope.rotary_dim = 3;
    f.call.x = f.call.k = nullptr;
  });
  // NULL pointers
  add("rope NULL", POSENC_ERR_NULL, rope_any, [](RopeFixture &f) { f.call.rope = nullptr; });
  add("x / q / cos_out NULL", POSENC_ERR_NULL, rope_any, [](RopeFixture &f) { f.call.x = nullptr; });
  add("sin_out NULL", POSENC_ERR_NULL, rope_cache, [](RopeFixture &f) { f.call.k = nullptr; });
  add("k NULL with k_heads 2", POSENC_ERR_NULL, rope_qk, [](RopeFixture &f) { f.call.k = nullptr; });
  add("NULL comes before a bad rope", POSENC_ERR_NULL, rope_any, [](RopeFixture &f) {
    f.call.x = nullptr;
    f.rope.rotary_dim = 5;
  });
  add("src NULL", POSENC_ERR_NULL, rope_copy, [](RopeFixture &f) { f.call.src = nullptr; });
  add("src NULL comes before a bad rope and a negative src stride", POSENC_ERR_NULL, rope_copy, [](RopeFixture &f) {
    f.call.src = nullptr;
    f.rope.rotary_dim = 5;
    f.call.src_token_stride = -1;
  });
  // the spec
  for (int64_t r : {int64_t(0), int64_t(1), int64_t(3), int64_t(-2), kI64Min, (int64_t(1) << 62) + 1})
    add("rotary_dim = " + std::to_string(r), POSENC_ERR_INVALID, rope_any,
        [r](RopeFixture &f) { f.rope.rotary_dim = r; });
  for (int v : {2, -1, INT_MIN, INT_MAX})
    add("pairs = " + std::to_string(v), POSENC_ERR_INVALID, rope_any, [v](RopeFixture &f) { set_pairs(f.rope, v); });
  for (double base : {0.0, -0.0, -1.0, -std::numeric_limits<double>::denorm_min(), kNaN, -kNaN, kInf, -kInf})
    add(
        "base = " + num(base) + " (freq NULL)", POSENC_ERR_INVALID, rope_any,
        [base](RopeFixture &f) { f.rope.base = base; }, 2);
  for (double sc : {kNaN, kInf, -kInf})
    add("position_scale = " + num(sc), POSENC_ERR_INVALID, rope_any,
        [sc](RopeFixture &f) { f.rope.position_scale = sc; });
  for (double v : {kNaN, kInf, -kInf})
    for (bool last : {false, true})
      add(
          "frequency " + num(v) + (last ? " (last)" : " (first)"), POSENC_ERR_INVALID, rope_any,
          [v, last](RopeFixture &f) { (last ? f.freq.back() : f.freq.front()) = v; }, 1);
  for (double m : {0.0, -0.0, -1.0, kNaN, kInf, -kInf, 0x1p-65, std::nextafter(0x1p-64, 0.0),
                   std::nextafter(0x1p64, kInf), 0x1p65, -0x1p-64})
    add("attention_scale = " + num(m), POSENC_ERR_INVALID, rope_any,
        [m](RopeFixture &f) { f.rope.attention_scale = m; });
  add("a bad rope comes before a bad stride and an overflow", POSENC_ERR_INVALID, rope_any, [](RopeFixture &f) {
    f.rope.position_scale = kNaN;
    f.call.token_stride = kI64Max;
  });
  // head counts, strides and overlaps
  add("heads = -1", POSENC_ERR_INVALID, rope_rows, [](RopeFixture &f) { f.call.heads = -1; });
  add("k_heads = -1", POSENC_ERR_INVALID, rope_qk, [](RopeFixture &f) { f.call.k_heads = -1; });
  add("head_stride = r - 1 (heads overlap)", POSENC_ERR_INVALID, rope_rows,
      [](RopeFixture &f) { f.call.head_stride = f.r - 1; });
  add("head_stride = 0 (heads coincide)", POSENC_ERR_INVALID, rope_rows,
      [](RopeFixture &f) { f.call.head_stride = 0; });
  add("one head, token_stride = r - 1", POSENC_ERR_INVALID, rope_rows, [](RopeFixture &f) {
    f.call.heads = 1;
    f.call.token_stride = f.r - 1;
  });
  add("token_stride = 0 (tokens coincide)", POSENC_ERR_INVALID, rope_rows,
      [](RopeFixture &f) { f.call.token_stride = 0; });
  add("token_stride = head_stride (token 1 is head 1)", POSENC_ERR_INVALID, rope_rows,
      [](RopeFixture &f) { f.call.token_stride = f.call.head_stride; });
  add("[H,T,D] with head_stride (T-1)*D (head 1 starts at the last token)", POSENC_ERR_INVALID, rope_rows,
      [](RopeFixture &f) {
        f.call.token_stride = f.d;
        f.call.head_stride = (f.call.n - 1) * f.d;
      });
  add("[H,T,D] with head_stride T*D - 1 (one element shared)", POSENC_ERR_INVALID, rope_rows, [](RopeFixture &f) {
    f.call.token_stride = f.r;
    f.call.head_stride = f.call.n * f.r - 1;
  });
  add("k_head_stride = r - 1", POSENC_ERR_INVALID, rope_qk, [](RopeFixture &f) { f.call.k_head_stride = f.r - 1; });
  // rope_copy_*: negative source strides; source rows that meet x's rows without being them
  add("src_token_stride = -1", POSENC_ERR_INVALID, rope_copy, [](RopeFixture &f) { f.call.src_token_stride = -1; });
  add("src_head_stride = INT64_MIN", POSENC_ERR_INVALID, rope_copy,
      [](RopeFixture &f) { f.call.src_head_stride = kI64Min; });
  add("src_head_stride = -1 with heads 0 (strides are checked all the same)", POSENC_ERR_INVALID, rope_copy,
      [](RopeFixture &f) {
        f.call.heads = 0;
        f.call.src_head_stride = -1;
      });
  add("a negative src stride comes before an overflow of x", POSENC_ERR_INVALID, rope_copy, [](RopeFixture &f) {
    f.call.src_token_stride = -1;
    f.call.token_stride = kI64Max / 4;
  });
  add("src = x + 1, the same strides", POSENC_ERR_INVALID, rope_copy, [](RopeFixture &f) {
    f.call.src = static_cast<unsigned char *>(f.call.x) + f.es;
    f.call.src_token_stride = f.call.token_stride;
    f.call.src_head_stride = f.call.head_stride;
  });
  add("src = x with another token stride", POSENC_ERR_INVALID, rope_copy, [](RopeFixture &f) {
    f.call.src = f.call.x;
    f.call.src_head_stride = f.call.head_stride;
    f.call.src_token_stride = f.call.token_stride + 1;
  });
  add("src = x + head_dim: source head j is x's head j + 1", POSENC_ERR_INVALID, rope_copy, [](RopeFixture &f) {
    f.call.src = static_cast<unsigned char *>(f.call.x) + size_t(f.d) * f.es;
    f.call.src_token_stride = f.call.token_stride;
    f.call.src_head_stride = f.call.head_stride;
  });
  add("src rows in x's gaps, one element into x's next head", POSENC_ERR_INVALID, rope_copy, [](RopeFixture &f) {
    f.call.src = static_cast<unsigned char *>(f.call.x) + size_t(f.d - f.r + 1) * f.es;
    f.call.src_token_stride = f.call.token_stride;
    f.call.src_head_stride = f.call.head_stride;
  });
  add("src's first element is x's last", POSENC_ERR_INVALID, rope_copy, [](RopeFixture &f) {
    const int64_t last = ref::rope_extent(f.call.n, f.call.heads, f.call.token_stride, f.call.head_stride, f.r) - 1;
    f.call.src = static_cast<unsigned char *>(f.call.x) + size_t(last) * f.es;
  });
  add("src overlapping x comes before a bad position", POSENC_ERR_INVALID, rope_copy, [](RopeFixture &f) {
    f.call.src = static_cast<unsigned char *>(f.call.x) + f.es;
    f.positions.back() = kI64Max;
  });
  add("k_token_stride = 0", POSENC_ERR_INVALID, rope_qk, [](RopeFixture &f) { f.call.k_token_stride = 0; });
  add("k = q", POSENC_ERR_INVALID, rope_qk, [](RopeFixture &f) {
    f.call.k = f.call.x;
    f.call.k_token_stride = f.call.token_stride;
  });
  add("k's first element is q's last", POSENC_ERR_INVALID, rope_qk, [](RopeFixture &f) {
    const int64_t last = ref::rope_extent(f.call.n, f.call.heads, f.call.token_stride, f.call.head_stride, f.r) - 1;
    f.call.k = static_cast<unsigned char *>(f.call.x) + size_t(last) * f.es;
    f.call.k_heads = 1;
  });
  add("fused QKV with k = q + (q_heads - 1) * head_dim (k head 0 is q's last head)", POSENC_ERR_INVALID, rope_qk,
      [](RopeFixture &f) {
        f.call.k = static_cast<unsigned char *>(f.call.x) + size_t((f.call.heads - 1) * f.d) * f.es;
        f.call.k_token_stride = f.call.token_stride;
      });
  add("k rows between q's heads, one element into the next head", POSENC_ERR_INVALID, rope_qk, [](RopeFixture &f) {
    // q's head rows are r of every D = r + 3 elements: k's rows start one element before q's head 1
    f.call.k = static_cast<unsigned char *>(f.call.x) + size_t(f.d - 1) * f.es;
    f.call.k_heads = 1;
    f.call.k_token_stride = f.call.token_stride;
  });
  add("cos_stride = h - 1", POSENC_ERR_INVALID, rope_cache, [](RopeFixture &f) { f.call.token_stride = f.h - 1; });
  add("sin_stride = h - 1", POSENC_ERR_INVALID, rope_cache, [](RopeFixture &f) { f.call.k_token_stride = f.h - 1; });
  add("cos_stride = 0", POSENC_ERR_INVALID, rope_cache, [](RopeFixture &f) { f.call.token_stride = 0; });
  add("sin_out = cos_out", POSENC_ERR_INVALID, rope_cache, [](RopeFixture &f) {
    f.call.k = f.call.x;
    f.call.k_token_stride = f.call.token_stride;
  });
  add("vLLM layout off by one: sin_out = cos_out + h - 1", POSENC_ERR_INVALID, rope_cache, [](RopeFixture &f) {
    f.call.k = static_cast<unsigned char *>(f.call.x) + size_t(f.h - 1) * f.es;
    f.call.token_stride = f.call.k_token_stride = f.r;
  });
  add("sin rows start at cos's last row", POSENC_ERR_INVALID, rope_cache, [](RopeFixture &f) {
    f.call.k = static_cast<unsigned char *>(f.call.x) + size_t((f.call.n - 1) * f.call.token_stride) * f.es;
  });
  // element and byte counts. q's rows grown past the address space would also run into k's rows after it
  // (INVALID comes first, and where wrapped rows land is anyone's guess): those cases take k away.
  const auto no_k = [](RopeFixture &f) {
    if (!ref::is_qk(f.kernel)) return;
    f.call.k = nullptr;
    f.call.k_heads = 0;
  };
  add("token_stride = INT64_MAX / 4: elements overflow", POSENC_ERR_OVERFLOW, rope_any, [no_k](RopeFixture &f) {
    f.call.token_stride = kI64Max / 4;
    no_k(f);
  });
  add("token rows fit int64 elements, their bytes do not", POSENC_ERR_OVERFLOW, rope_any, [no_k](RopeFixture &f) {
    f.call.token_stride = byte_overflow_stride(f.call.n, f.es);
    no_k(f);
  });
  add("n = INT64_MAX (never read past the 70 positions)", POSENC_ERR_OVERFLOW, rope_any, [no_k](RopeFixture &f) {
    f.call.n = kI64Max;
    no_k(f);
  });
  add("n = 2^62", POSENC_ERR_OVERFLOW, rope_any, [no_k](RopeFixture &f) {
    f.call.n = int64_t(1) << 62;
    no_k(f);
  });
  add("n = 2^62, k rows only (q_heads 0, q NULL)", POSENC_ERR_OVERFLOW, rope_qk, [](RopeFixture &f) {
    f.call.n = int64_t(1) << 62;
    f.call.heads = 0;
    f.call.x = nullptr;
  });
  add("heads = 2^62", POSENC_ERR_OVERFLOW, rope_rows, [](RopeFixture &f) {
    f.call.heads = int64_t(1) << 62;
    f.call.token_stride = int64_t(1) << 62;  // heads then tokens: no overlap, only too large
    f.call.n = 1;
  });
  add("head rows overflow: heads 3, head_stride INT64_MAX / 2", POSENC_ERR_OVERFLOW, rope_rows, [](RopeFixture &f) {
    f.call.head_stride = kI64Max / 2;
    f.call.n = 1;
  });
  add("k rows overflow", POSENC_ERR_OVERFLOW, rope_qk,
      [](RopeFixture &f) { f.call.k_token_stride = byte_overflow_stride(f.call.n, f.es); });
  add("source rows overflow: src_token_stride INT64_MAX / 4", POSENC_ERR_OVERFLOW, rope_copy,
      [](RopeFixture &f) { f.call.src_token_stride = kI64Max / 4; });
  add("source rows fit int64 elements, their bytes do not", POSENC_ERR_OVERFLOW, rope_copy,
      [](RopeFixture &f) { f.call.src_token_stride = byte_overflow_stride(f.call.n, f.es); });
  add("source head rows overflow: src_head_stride INT64_MAX / 2", POSENC_ERR_OVERFLOW, rope_copy,
      [](RopeFixture &f) { f.call.src_head_stride = kI64Max / 2; });
  add("source rows that start at x and overflow: OVERFLOW, not an overlap", POSENC_ERR_OVERFLOW, rope_copy,
      [](RopeFixture &f) {
        f.call.src = f.call.x;
        f.call.src_head_stride = f.call.head_stride;
        f.call.src_token_stride = kI64Max / 4;
      });
  add("an overflow of the source comes before a bad position", POSENC_ERR_OVERFLOW, rope_copy, [](RopeFixture &f) {
    f.call.src_token_stride = kI64Max / 4;
    f.positions.front() = k2p31;
  });
  add("sin rows overflow", POSENC_ERR_OVERFLOW, rope_cache,
      [](RopeFixture &f) { f.call.k_token_stride = byte_overflow_stride(f.call.n, f.es); });
  add(
      "rotary_dim = 2^62: one row's bytes overflow", POSENC_ERR_OVERFLOW, rope_rows,
      [](RopeFixture &f) {
        f.rope.rotary_dim = int64_t(1) << 62;
        f.call.n = 1;
        f.call.heads = 1;
        f.call.k_heads = 0;
        f.call.k = nullptr;
      },
      2);
  add("an overflow comes before a bad position", POSENC_ERR_OVERFLOW, rope_any, [no_k](RopeFixture &f) {
    f.call.token_stride = kI64Max / 4;
    f.positions.back() = kI64Max;
    no_k(f);
  });
  // positions, explicit: first and last of the 70, both signs
  for (const NamedValue &bp : kBadPositions)
    for (bool last : {false, true}) {
      const int64_t v = bp.value;
      add(std::string("explicit position ") + bp.name + (last ? " (last)" : " (first)"), POSENC_ERR_OUT_OF_RANGE,
          rope_any, [v, last](RopeFixture &f) { (last ? f.positions.back() : f.positions.front()) = v; });
    }
  // multi-axis specs (posenc.h, "Multi-axis RoPE")
  for (int32_t axes : {0, -1, 5, INT32_MIN, INT32_MAX})
    add("axes = " + std::to_string(axes), POSENC_ERR_INVALID, rope_any, [axes](RopeFixture &f) {
      f.to_axes();
      f.rope.axes = axes;
    });
  add("axes 3, axis map NULL", POSENC_ERR_INVALID, rope_any, [](RopeFixture &f) {
    f.to_axes();
    f.rope.axis = nullptr;
  });
  for (uint8_t v : {uint8_t(3), uint8_t(255)})
    for (bool last : {false, true})
      add("axis entry " + std::to_string(v) + (last ? " (last)" : " (first)"), POSENC_ERR_INVALID, rope_any,
          [v, last](RopeFixture &f) {
            f.to_axes();
            (last ? f.axis.back() : f.axis.front()) = v;
          });
  add("axes 1 with a map naming axis 1", POSENC_ERR_INVALID, rope_any, [](RopeFixture &f) {
    f.to_axes();
    f.rope.axes = 1;
    f.axis.back() = 1;
  });
  add("NULL comes before a bad axis count", POSENC_ERR_NULL, rope_any, [](RopeFixture &f) {
    f.to_axes();
    f.rope.axes = 9;
    f.call.x = nullptr;
  });
  add("a bad axis map comes before an overflow", POSENC_ERR_INVALID, rope_any, [no_k](RopeFixture &f) {
    f.to_axes();
    f.axis.back() = 3;
    f.call.token_stride = kI64Max / 4;
    no_k(f);
  });
  for (const NamedValue &bp : kBadPositions)
    for (int64_t at : {RopeFixture::kRows, 3 * RopeFixture::kRows - 1}) {
      const int64_t v = bp.value;
      add(std::string("axis ") + (at == RopeFixture::kRows ? "1" : "2") + " position " + bp.name,
          POSENC_ERR_OUT_OF_RANGE, rope_any, [v, at](RopeFixture &f) {
            f.to_axes();
            f.positions[size_t(at)] = v;
          });
    }
  add("POSENC_PAD on axis 1", POSENC_ERR_OUT_OF_RANGE, rope_any, [](RopeFixture &f) {
    f.to_axes();
    f.positions[size_t(RopeFixture::kRows + 3)] = POSENC_PAD;
  });
  add("axes 3, first + t past 2^31 on every axis", POSENC_ERR_OUT_OF_RANGE, rope_any, [](RopeFixture &f) {
    f.to_axes();
    f.call.positions = nullptr;
    f.call.first = k2p31 - 69;
  });
  for (const NamedValue &bf : kBadFirsts) {
    const int64_t v = bf.value;
    add(std::string("first = ") + bf.name, POSENC_ERR_OUT_OF_RANGE, rope_any, [v](RopeFixture &f) {
      f.call.first = v;
      f.call.positions = nullptr;
    });
  }
  return c;
}

}  // namespace

// The real twin's positions for a fixture: the integer call's (first + t for a run, POSENC_PAD as 0.5) as
// doubles, axes x n of them while that is small; a call of huge n fails before it reads them (its count
// or extents), so a few values stand in.
std::vector<double> real_twin_positions(const RopeFixture &f) {
  const int64_t n = f.call.n, axes = f.rope.axes >= 1 && f.rope.axes <= 4 ? f.rope.axes : 1;
  std::vector<double> t;
  if (n < 0 || n > 4096) return std::vector<double>(16, 0.5);
  for (int64_t a = 0; a < axes; ++a)
    for (int64_t k = 0; k < n; ++k) {
      const size_t at = size_t(a * n + k);
      const int64_t p = !f.call.positions ? f.call.first + k : at < f.positions.size() ? f.positions[at] : 0;
      t.push_back(p == POSENC_PAD ? 0.5 : double(p));
    }
  if (t.empty()) t.push_back(0.5);
  return t;
}

TEST_CASE("RoPE bad input: the documented status, and not one byte written", "[hardening][rope]") {
  const std::vector<RopeCase> all = rope_cases();
  int checked = 0, checked_real = 0;
  for (posenc_isa isa : ref::paths())
    ref::on_path(isa, [&] {
      for (RopeKernel k : ref::kAllRopeKernels)
        for (int64_t r : {int64_t(2), int64_t(14), int64_t(64)})
          for (bool explicit_freq : {false, true}) {
            const posenc_rope_pairs pairs = r == 14 ? POSENC_ROPE_INTERLEAVED : POSENC_ROPE_HALVES;
            {
              RopeFixture ok(k, r, explicit_freq, pairs);
              INFO(ref::rope_name(k) << " r " << r << " path " << posenc_isa_name(isa));
              REQUIRE(ref::invoke(ok.call) == POSENC_OK);
              REQUIRE(ok.only_rows_written());
              REQUIRE(!ok.buf.intact());
            }
            for (const RopeCase &c : all)
              for (int mode = 0; mode < ref::kPartModes; ++mode) {  // the call, and its _part twin on parts of it
                if (!c.applies(k) || (c.freq_mode == 1 && !explicit_freq) || (c.freq_mode == 2 && explicit_freq))
                  continue;
                RopeFixture f(k, r, explicit_freq, pairs);
                c.mutate(f);
                ref::set_part_mode(f.call, mode);
                const std::vector<int64_t> positions = f.positions;
                const std::vector<double> freq = f.freq;  // compared as bytes: some are NaN
                const posenc_status st = ref::invoke(f.call);
                INFO(ref::rope_name(k) << " r " << r << (explicit_freq ? " explicit" : " base") << " path "
                                       << posenc_isa_name(isa) << ": " << c.what << ", " << ref::part_mode_name(mode));
                CHECK(st == c.want);
                CHECK(f.buf.first_change() == -1);
                CHECK(f.positions == positions);
                CHECK(std::memcmp(f.freq.data(), freq.data(), freq.size() * sizeof(double)) == 0);
                ++checked;
                // The twin at real-valued positions shares every check made before the positions' own, and
                // so every status other than the positions' (its own are in test_rope_real.cpp).
                if (c.want == POSENC_ERR_OUT_OF_RANGE) continue;
                RopeFixture g(k, r, explicit_freq, pairs);
                c.mutate(g);
                ref::set_part_mode(g.call, mode);
                const std::vector<double> t = real_twin_positions(g);
                g.call.real = true;
                g.call.times = t.data();
                if (c.want == POSENC_OK) continue;  // cases that only move the positions
                INFO("the real twin");
                CHECK(ref::invoke(g.call) == c.want);
                CHECK(g.buf.first_change() == -1);
                ++checked_real;
              }
          }
    });
  CHECK(checked > 1000);
  CHECK(checked_real > 1000);
}

TEST_CASE("RoPE valid edge values succeed and write exactly the rows", "[hardening][rope]") {
  const std::vector<std::pair<const char *, std::function<void(RopeFixture &)>>> edges = {
      {"positions +-(2^31 - 1)",
       [](RopeFixture &f) {
         f.positions.front() = k2p31 - 1;
         f.positions.back() = -(k2p31 - 1);
       }},
      {"first + n - 1 = 2^31 - 1",
       [](RopeFixture &f) {
         f.call.positions = nullptr;
         f.call.first = k2p31 - RopeFixture::kRows;
       }},
      {"first = -(2^31 - 1)",
       [](RopeFixture &f) {
         f.call.positions = nullptr;
         f.call.first = -(k2p31 - 1);
       }},
      {"POSENC_PAD first and last", [](RopeFixture &f) { f.positions.front() = f.positions.back() = POSENC_PAD; }},
      {"every position POSENC_PAD", [](RopeFixture &f) { f.positions.assign(f.positions.size(), POSENC_PAD); }},
      {"3 axes, an image row, a padding token", [](RopeFixture &f) { f.to_axes(); }},
      {"3 axes, axis positions +-(2^31 - 1)",
       [](RopeFixture &f) {
         f.to_axes();
         f.positions[size_t(RopeFixture::kRows)] = k2p31 - 1;
         f.positions.back() = -(k2p31 - 1);
       }},
      {"4 axes, first + t on every axis up to 2^31 - 1",
       [](RopeFixture &f) {
         f.to_axes();
         f.rope.axes = 4;
         f.call.positions = nullptr;
         f.call.first = k2p31 - RopeFixture::kRows;
       }},
      {"1 axis with an all-zero map",
       [](RopeFixture &f) {
         f.axis.assign(size_t(f.h), 0);
         f.rope.axis = f.axis.data();
       }},
      {"attention_scale 2^-64", [](RopeFixture &f) { f.rope.attention_scale = 0x1p-64; }},
      {"attention_scale 2^64", [](RopeFixture &f) { f.rope.attention_scale = 0x1p64; }},
      {"base NaN with explicit frequencies (base unused)",
       [](RopeFixture &f) {
         f.rope.freq = f.freq.data();
         f.rope.base = kNaN;
       }},
      {"explicit frequencies 0, -0 and negative",
       [](RopeFixture &f) {
         f.freq.front() = 0.0;
         f.freq.back() = f.freq.size() > 1 ? -0.0 : -3.0;
         f.rope.freq = f.freq.data();
       }},
      {"position_scale 0 and -0", [](RopeFixture &f) { f.rope.position_scale = f.r == 14 ? -0.0 : 0.0; }},
      {"position_scale -1e-300, base 1 (every frequency 1)",
       [](RopeFixture &f) {
         f.rope.position_scale = -1e-300;
         f.rope.base = 1.0;
       }},
      {"one token: token stride 0",
       [](RopeFixture &f) {
         if (ref::is_cache(f.kernel)) return;  // cache strides are >= h (posenc.h)
         f.call.n = 1;
         f.call.token_stride = f.call.k_token_stride = 0;
       }},
      {"one token: token strides INT64_MAX (they separate no rows)",
       [](RopeFixture &f) {
         f.call.n = 1;
         f.call.token_stride = f.call.k_token_stride = kI64Max;
       }},
      {"one head: head strides INT64_MAX (they separate no rows)",
       [](RopeFixture &f) {
         if (ref::is_cache(f.kernel)) return;
         f.call.heads = f.call.k_heads = 1;
         f.call.head_stride = f.call.k_head_stride = kI64Max;
       }},
      {"one token, heads exactly r apart",
       [](RopeFixture &f) {
         f.call.n = 1;
         f.call.head_stride = f.call.k_head_stride = f.r;
       }},
      {"one head, tokens exactly r apart (cache: h)",
       [](RopeFixture &f) {
         f.call.heads = f.call.k_heads = 1;
         f.call.token_stride = f.call.k_token_stride = ref::is_cache(f.kernel) ? f.h : f.r;
       }},
      {"one head: head stride 0",
       [](RopeFixture &f) {
         f.call.heads = f.call.k_heads = 1;
         f.call.head_stride = f.call.k_head_stride = 0;
       }},
      {"[H,T,D]: token stride D, head stride T*D",
       [](RopeFixture &f) {
         if (ref::is_cache(f.kernel)) return;
         f.call.token_stride = f.d;
         f.call.head_stride = RopeFixture::kRows * f.d;
       }},
      {"tight rows (partial rotary): head stride r, token stride heads*r",
       [](RopeFixture &f) {
         f.call.head_stride = f.call.k_head_stride = f.r;
         f.call.token_stride = f.call.heads * f.r;
         f.call.k_token_stride = f.call.k_heads * f.r;
         if (ref::is_cache(f.kernel)) f.call.token_stride = f.call.k_token_stride = f.h;
       }},
      {"fused QKV: k = q + q_heads * head_dim, one token stride",
       [](RopeFixture &f) {
         if (!ref::is_qk(f.kernel)) return;
         f.call.token_stride = f.call.k_token_stride = (RopeFixture::kHeads + 2 * RopeFixture::kKHeads) * f.d;
         f.call.k = static_cast<unsigned char *>(f.call.x) + size_t(RopeFixture::kHeads * f.d) * f.es;
       }},
      {"k right after q's last element",
       [](RopeFixture &f) {
         if (!ref::is_qk(f.kernel)) return;
         const int64_t e = ref::rope_extent(f.call.n, f.call.heads, f.call.token_stride, f.call.head_stride, f.r);
         f.call.k = static_cast<unsigned char *>(f.call.x) + size_t(e) * f.es;
         f.call.k_heads = 1;
       }},
      {"k NULL with k_heads 0",
       [](RopeFixture &f) {
         if (ref::is_cache(f.kernel)) return;
         f.call.k = nullptr;
         f.call.k_heads = 0;
       }},
      {"q NULL with q_heads 0",
       [](RopeFixture &f) {
         if (ref::is_cache(f.kernel)) return;
         f.call.x = nullptr;
         f.call.heads = 0;
       }},
      {"copy in place: src = x, the same strides",
       [](RopeFixture &f) {
         if (!ref::is_copy(f.kernel)) return;
         f.call.src = f.call.x;
         f.call.src_token_stride = f.call.token_stride;
         f.call.src_head_stride = f.call.head_stride;
       }},
      {"copy in place, one token: src = x, token strides that separate no rows differ",
       [](RopeFixture &f) {
         if (!ref::is_copy(f.kernel)) return;
         f.call.n = 1;
         f.call.src = f.call.x;
         f.call.src_token_stride = 5;
         f.call.src_head_stride = f.call.head_stride;
       }},
      {"copy: every head from one source row (src_head_stride 0)",
       [](RopeFixture &f) {
         if (ref::is_copy(f.kernel)) f.call.src_head_stride = 0;
       }},
      {"copy: one source row for every token (src_token_stride 0)",
       [](RopeFixture &f) {
         if (ref::is_copy(f.kernel)) f.call.src_token_stride = 0;
       }},
      {"copy: source rows one element apart",
       [](RopeFixture &f) {
         if (!ref::is_copy(f.kernel)) return;
         f.call.src_token_stride = 1;
         f.call.src_head_stride = 2;
       }},
      {"copy: source [H,T,D]",
       [](RopeFixture &f) {
         if (!ref::is_copy(f.kernel)) return;
         f.call.src_token_stride = f.d;
         f.call.src_head_stride = RopeFixture::kRows * f.d;
       }},
      {"copy: source right after x's last element",
       [](RopeFixture &f) {
         if (!ref::is_copy(f.kernel)) return;
         const int64_t e = ref::rope_extent(f.call.n, f.call.heads, f.call.token_stride, f.call.head_stride, f.r);
         f.call.src = static_cast<unsigned char *>(f.call.x) + size_t(e) * f.es;
       }},
      {"copy: source heads between x's heads (x head stride 2 D, src = x + D)",
       [](RopeFixture &f) {
         if (!ref::is_copy(f.kernel)) return;
         f.call.head_stride = f.call.src_head_stride = 2 * f.d;
         f.call.token_stride = f.call.src_token_stride = RopeFixture::kHeads * 2 * f.d + 1;
         f.call.src = static_cast<unsigned char *>(f.call.x) + size_t(f.d) * f.es;
       }},
      {"copy: src NULL with heads 0",
       [](RopeFixture &f) {
         if (!ref::is_copy(f.kernel)) return;
         f.call.src = nullptr;
         f.call.heads = 0;
       }},
      {"vLLM cos_sin_cache: sin_out = cos_out + h, strides r",
       [](RopeFixture &f) {
         if (!ref::is_cache(f.kernel)) return;
         f.call.k = static_cast<unsigned char *>(f.call.x) + size_t(f.h) * f.es;
         f.call.token_stride = f.call.k_token_stride = f.r;
       }},
  };
  for (posenc_isa isa : ref::paths())
    ref::on_path(isa, [&] {
      for (RopeKernel k : ref::kAllRopeKernels)
        for (int64_t r : {int64_t(2), int64_t(14), int64_t(64)})
          for (const auto &e : edges) {
            RopeFixture f(k, r, false, r == 64 ? POSENC_ROPE_INTERLEAVED : POSENC_ROPE_HALVES);
            e.second(f);
            const std::vector<double> freq = f.freq;
            INFO(ref::rope_name(k) << " r " << r << " path " << posenc_isa_name(isa) << ": " << e.first);
            const posenc_status st = ref::invoke(f.call);
            CHECK(st == POSENC_OK);
            if (st != POSENC_OK) continue;
            CHECK(f.only_rows_written());
            CHECK(f.freq == freq);
            // the same call in three parts, the last first: the same bytes
            RopeFixture g(k, r, false, r == 64 ? POSENC_ROPE_INTERLEAVED : POSENC_ROPE_HALVES);
            e.second(g);
            in_three_parts(g.call);
            CHECK(std::memcmp(g.buf.data(), f.buf.data(), f.buf.size()) == 0);
          }
    });
}

// ---- The range of a part (posenc.h, "Parts of a call") -------------------------------------------------

namespace {

// a table, laid out by hand
// clang-format off
const std::pair<int64_t, int64_t> kBadRanges[] = {
    {-1, 0}, {0, -1}, {1, 0}, {0, 71}, {70, 71}, {71, 71}, {-1, -1}, {kI64Min, 0}, {0, kI64Max}, {kI64Min, kI64Max},
    {kI64Max, kI64Max}, {69, 68}};
// clang-format on

// c (a ref::Call or a ref::RopeCall) made a call of n = 0: its part `range` is INVALID, [0, 0) is OK, and
// buf, the fixture's guarded output, is not written.
template <class Call, class Buffer>
void only_empty_part_of_nothing(Call c, const std::pair<int64_t, int64_t> &range, const Buffer &buf) {
  c.part = true;
  c.n = 0;
  c.begin = range.first;
  c.end = range.second;
  CHECK(ref::invoke(c) == POSENC_ERR_INVALID);
  c.begin = c.end = 0;
  CHECK(ref::invoke(c) == POSENC_OK);
  CHECK(buf.first_change() == -1);
}

}  // namespace

TEST_CASE("a part's range outside [0, n] is INVALID after the whole call's checks, nothing written",
          "[hardening][parts]") {
  int checked = 0;
  for (posenc_isa isa : ref::paths())
    ref::on_path(isa, [&] {
      for (Kernel k : ref::kAllKernels)
        for (const auto &range : kBadRanges) {
          Fixture f(k, 13, POSENC_INTERLEAVED);  // 70 rows
          f.call.part = true;
          f.call.begin = range.first;
          f.call.end = range.second;
          INFO(f.t.name << " [" << range.first << ", " << range.second << ") path " << posenc_isa_name(isa));
          CHECK(ref::invoke(f.call) == POSENC_ERR_INVALID);
          CHECK(f.out.first_change() == -1);
          // the whole call's status comes first: NULL, OVERFLOW, OUT_OF_RANGE in the last row
          Fixture g(k, 13, POSENC_INTERLEAVED);
          g.call.part = true;
          g.call.begin = range.first;
          g.call.end = range.second;
          g.call.out = nullptr;
          CHECK(ref::invoke(g.call) == POSENC_ERR_NULL);
          g.call.out = g.out.data();
          g.call.out_stride = kI64Max / 4;
          CHECK(ref::invoke(g.call) == POSENC_ERR_OVERFLOW);
          g.call.out_stride = 16;
          if (g.t.times)
            g.times.back() = kNaN;
          else if (g.t.has_table)
            g.tokens.back() = -1;
          else if (g.t.positions_required)
            g.positions.back() = k2p31;
          else
            g.call.first = k2p31 - Fixture::kRows + 1, g.call.positions = nullptr;
          CHECK(ref::invoke(g.call) == POSENC_ERR_OUT_OF_RANGE);
          CHECK(g.out.first_change() == -1);
          // n = 0: the range must be [0, 0)
          Fixture z(k, 13, POSENC_INTERLEAVED);
          only_empty_part_of_nothing(z.call, range, z.out);
          checked += 4;
        }
    });
  CHECK(checked > 100);
}

TEST_CASE("a RoPE part's range outside [0, n] is INVALID after the whole call's checks, nothing written",
          "[hardening][rope][parts]") {
  for (posenc_isa isa : ref::paths())
    ref::on_path(isa, [&] {
      for (RopeKernel k : ref::kAllRopeKernels)
        for (const auto &range : kBadRanges) {
          RopeFixture f(k, 14, false, POSENC_ROPE_HALVES);  // 70 tokens
          f.call.part = true;
          f.call.begin = range.first;
          f.call.end = range.second;
          INFO(ref::rope_name(k) << " [" << range.first << ", " << range.second << ") path " << posenc_isa_name(isa));
          CHECK(ref::invoke(f.call) == POSENC_ERR_INVALID);
          CHECK(f.buf.first_change() == -1);
          RopeFixture g(k, 14, false, POSENC_ROPE_HALVES);
          g.call.part = true;
          g.call.begin = range.first;
          g.call.end = range.second;
          g.call.rope = nullptr;
          CHECK(ref::invoke(g.call) == POSENC_ERR_NULL);
          g.call.rope = &g.rope;
          g.to_axes();
          g.positions[size_t(RopeFixture::kRows + 69)] = POSENC_PAD;  // axis 1, last token
          CHECK(ref::invoke(g.call) == POSENC_ERR_OUT_OF_RANGE);
          g.positions[size_t(RopeFixture::kRows + 69)] = 7;
          g.positions.back() = k2p31;  // axis 2, last token
          CHECK(ref::invoke(g.call) == POSENC_ERR_OUT_OF_RANGE);
          CHECK(g.buf.first_change() == -1);
          RopeFixture z(k, 14, false, POSENC_ROPE_HALVES);
          // n = 0: the range must be [0, 0)
          only_empty_part_of_nothing(z.call, range, z.buf);
        }
    });
}
