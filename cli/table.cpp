// posenc table: one sinusoidal table from a spec or a framework's convention (posenc::spec's named
// constructors, docs/conventions.md), through posenc_table_* for a run of positions or posenc_rows_* for a
// list.
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "cli.hpp"
#include "output.hpp"
#include "posenc/posenc.hpp"

namespace cli {
namespace {

enum Preset { kVaswani, kMarian, kFairseq, kT2t, kCtranslate2, kGgml, kDiffusers };
const std::vector<std::string> kPresets = {"vaswani", "marian", "fairseq", "t2t", "ctranslate2", "ggml", "diffusers"};
const std::vector<std::string> kLayouts = {"interleaved", "sin-cos-halves", "cos-sin-halves"};

struct TableOptions {
  std::optional<int64_t> d_model;
  Preset preset = kVaswani;
  bool have_preset = false;
  std::optional<int64_t> padding_idx;
  std::optional<double> min_timescale, max_timescale, max_period, downscale_freq_shift;
  bool flip_sin_to_cos = false;
  std::optional<posenc_layout> layout;
  std::optional<double> base, denominator, scale;
  bool show_spec = false;
  std::string isa;
  PositionOptions positions;
  OutputOptions output;
};

// A preset's own option, given without that preset.
void needs(const TableOptions &o, bool given, const char *option, std::initializer_list<Preset> presets) {
  if (!given) return;
  for (Preset p : presets)
    if (o.have_preset && o.preset == p) return;
  std::string names;
  for (Preset p : presets) names += std::string(names.empty() ? "" : " or ") + kPresets[size_t(p)];
  throw Usage(std::string(option) + " applies to --preset " + names);
}

TableOptions parse(int argc, char **argv) {
  TableOptions o;
  Args a(argc, argv);
  while (a.next()) {
    const std::string &n = a.name();
    if (o.positions.read(a) || o.output.read(a)) continue;
    if (n == "--d-model") {
      o.d_model = integer(a.value(), n);
    } else if (n == "--preset") {
      std::string v = a.value();
      if (v == "tensor2tensor") v = "t2t";
      if (v == "opennmt") v = "ctranslate2";
      o.preset = Preset(choice(v, n, kPresets));
      o.have_preset = true;
    } else if (n == "--padding-idx") {
      o.padding_idx = integer(a.value(), n);
    } else if (n == "--min-timescale") {
      o.min_timescale = number(a.value(), n);
    } else if (n == "--max-timescale") {
      o.max_timescale = number(a.value(), n);
    } else if (n == "--max-period") {
      o.max_period = number(a.value(), n);
    } else if (n == "--downscale-freq-shift") {
      o.downscale_freq_shift = number(a.value(), n);
    } else if (n == "--flip-sin-to-cos") {
      a.flag();
      o.flip_sin_to_cos = true;
    } else if (n == "--layout") {
      o.layout = posenc_layout(choice(a.value(), n, kLayouts));
    } else if (n == "--base") {
      o.base = number(a.value(), n);
    } else if (n == "--denominator") {
      o.denominator = number(a.value(), n);
    } else if (n == "--scale") {
      o.scale = number(a.value(), n);
    } else if (n == "--show-spec") {
      a.flag();
      o.show_spec = true;
    } else if (n == "--isa") {
      o.isa = a.value();
    } else {
      throw Usage("unknown option " + n);
    }
  }
  if (!o.d_model) throw Usage("--d-model N is required");
  needs(o, o.padding_idx.has_value(), "--padding-idx", {kFairseq});
  needs(o, o.min_timescale || o.max_timescale, "--min-timescale and --max-timescale", {kT2t});
  needs(o, o.max_period.has_value(), "--max-period", {kGgml, kDiffusers});
  needs(o, o.flip_sin_to_cos || o.downscale_freq_shift, "--flip-sin-to-cos and --downscale-freq-shift",
        {kDiffusers});
  o.output.check();
  return o;
}

posenc::spec spec_of(const TableOptions &o) {
  const int64_t d = *o.d_model;
  posenc::spec s(d);
  switch (o.preset) {
    case kVaswani: s = posenc::spec::vaswani(d); break;
    case kMarian: s = posenc::spec::marian(d); break;
    case kFairseq: s = posenc::spec::fairseq(d); break;
    case kT2t:
      s = posenc::spec::tensor2tensor(d, o.min_timescale.value_or(1.0), o.max_timescale.value_or(1.0e4));
      break;
    case kCtranslate2: s = posenc::spec::ctranslate2(d); break;
    case kGgml: s = posenc::spec::ggml_timestep(d, o.max_period.value_or(1.0e4)); break;
    case kDiffusers:
      s = posenc::spec::diffusers(d, o.flip_sin_to_cos, o.downscale_freq_shift.value_or(1.0), 1.0,
                                  o.max_period.value_or(1.0e4));
      break;
  }
  if (o.layout) s = s.with_layout(posenc::layout(*o.layout));
  if (o.base) s = s.with_base(*o.base);
  if (o.denominator) s = s.with_freq_denominator(*o.denominator);
  if (o.scale) s = s.with_position_scale(*o.scale);
  return s;
}

// Where a preset's positions start (docs/conventions.md).
int64_t default_first(const TableOptions &o) {
  if (o.preset == kFairseq) return o.padding_idx.value_or(1) + 1;
  if (o.preset == kCtranslate2) return 1;
  return 0;
}

std::vector<std::string> column_names(const posenc::spec &s) {
  const int64_t d = s.d_model(), h = d / 2;
  std::vector<std::string> c(size_t(d > 0 ? d : 0));
  for (int64_t i = 0; i < h; ++i) {
    const std::string si = "sin" + std::to_string(i), ci = "cos" + std::to_string(i);
    switch (s.layout()) {
      case posenc::layout::interleaved: c[size_t(2 * i)] = si, c[size_t(2 * i + 1)] = ci; break;
      case posenc::layout::sin_cos_halves: c[size_t(i)] = si, c[size_t(h + i)] = ci; break;
      case posenc::layout::cos_sin_halves: c[size_t(i)] = ci, c[size_t(h + i)] = si; break;
    }
  }
  if (d % 2) c.back() = "zero";
  return c;
}

void show_spec(const posenc::spec &s, const Positions &p) {
  std::printf("d_model %lld\nlayout %s\nbase %.17g\nfreq_denominator %.17g\nposition_scale %.17g\n",
              (long long)s.d_model(), kLayouts[size_t(s.layout())].c_str(), s.base(), s.freq_denominator(),
              s.position_scale());
  if (p.is_list) std::printf("positions list of %lld\n", (long long)p.rows());
  else std::printf("first %lld\npositions %lld\n", (long long)p.first, (long long)p.n);
}

}  // namespace

int table_main(int argc, char **argv) {
  const TableOptions o = parse(argc, argv);
  if (!o.isa.empty()) force_isa(o.isa);
  const posenc::spec s = spec_of(o);
  const Positions p = o.positions.get(default_first(o));
  s.validate();  // the library's verdict on the spec before anything is allocated
  if (o.show_spec) {
    show_spec(s, p);
    return kExitOk;
  }
  Array t;
  t.rows = p.rows();
  t.cols = s.d_model();
  if (t.rows > 0 && t.cols > (int64_t(1) << 40) / t.rows) throw Usage("the table would have over 2^40 elements");
  t.columns = column_names(s);
  t.row_labels = o.output.format == Format::kCsv ? row_labels(p) : std::vector<std::string>();
  const size_t size = size_t(t.rows * t.cols);
  if (o.output.dtype == DType::kF32) {
    t.f32.resize(size);
    posenc::rows_view<float> out(t.f32.data(), t.rows, t.cols);
    if (p.is_list) posenc::rows_f32(s, p.list, out);
    else posenc::table_f32(s, p.first, out);
  } else {
    t.bits.resize(size);
    posenc::rows_view<uint16_t> out(t.bits.data(), t.rows, t.cols);
    const bool bf16 = o.output.dtype == DType::kBF16;
    if (p.is_list) bf16 ? posenc::rows_bf16(s, p.list, out) : posenc::rows_f16(s, p.list, out);
    else bf16 ? posenc::table_bf16(s, p.first, out) : posenc::table_f16(s, p.first, out);
  }
  write_arrays(o.output, {t});
  return kExitOk;
}

}  // namespace cli
