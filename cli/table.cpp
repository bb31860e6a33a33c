// posenc table: one sinusoidal table from a spec or a framework's convention (posenc::spec's named
// constructors, docs/conventions.md), through posenc_table_* for a run of positions, posenc_rows_* for a
// list, or posenc_timesteps_* for real-valued positions (timesteps, docs/timesteps.md), given on the command
// line or read from a file (one value per line, or a .npy array).
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "cli.hpp"
#include "output.hpp"
#include "posenc/posenc.hpp"

namespace cli {
namespace {

enum Preset { kVaswani, kMarian, kFairseq, kT2t, kCtranslate2, kGgml, kDiffusers, kDit, kFlux, kWhisper };
const std::vector<std::string> kPresets = {"vaswani", "marian",    "fairseq", "t2t",  "ctranslate2",
                                           "ggml",    "diffusers", "dit",     "flux", "whisper"};
const std::vector<std::string> kLayouts = {"interleaved", "sin-cos-halves", "cos-sin-halves"};

struct TableOptions {
  std::optional<int64_t> d_model;
  Preset preset = kVaswani;
  bool have_preset = false;
  std::optional<int64_t> padding_idx;
  std::optional<double> min_timescale, max_timescale, max_period, downscale_freq_shift, time_factor;
  bool flip_sin_to_cos = false;
  std::optional<posenc_layout> layout;
  std::optional<double> base, denominator, scale;
  bool show_spec = false;
  std::string isa;
  // --timesteps LIST or --timesteps-file FILE: real-valued positions instead of integer ones
  std::optional<std::vector<double>> timesteps;
  std::optional<std::string> timesteps_file;
  PositionOptions positions;
  OutputOptions output;
};

// Reads the current option when it is one of the numbers.
bool read_number(Args &a, TableOptions &o) {
  using O = TableOptions;
  static const std::pair<const char *, std::optional<double> O::*> kNumbers[] = {
      {"--min-timescale", &O::min_timescale},
      {"--max-timescale", &O::max_timescale},
      {"--max-period", &O::max_period},
      {"--time-factor", &O::time_factor},
      {"--base", &O::base},
      {"--denominator", &O::denominator},
      {"--scale", &O::scale},
      {"--downscale-freq-shift", &O::downscale_freq_shift}};
  for (const auto &[option, field] : kNumbers)
    if (a.name() == option) {
      o.*field = number(a.value(), a.name());
      return true;
    }
  return false;
}

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
  read_options(argc, argv, [&](Args &a) {
    const std::string &n = a.name();
    if (o.positions.read(a) || o.output.read(a) || read_number(a, o)) return true;
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
    } else if (n == "--timesteps") {
      o.timesteps = numbers(a.value(), n);
    } else if (n == "--timesteps-file") {
      o.timesteps_file = a.value();
    } else if (n == "--flip-sin-to-cos") {
      a.flag();
      o.flip_sin_to_cos = true;
    } else if (n == "--layout") {
      o.layout = posenc_layout(choice(a.value(), n, kLayouts));
    } else if (n == "--show-spec") {
      a.flag();
      o.show_spec = true;
    } else if (n == "--isa") {
      o.isa = a.value();
    } else {
      return false;
    }
    return true;
  });
  if (!o.d_model) throw Usage("--d-model N is required");
  needs(o, o.padding_idx.has_value(), "--padding-idx", {kFairseq});
  needs(o, o.min_timescale.has_value(), "--min-timescale", {kT2t});
  needs(o, o.max_timescale.has_value(), "--max-timescale", {kT2t, kWhisper});
  needs(o, o.max_period.has_value(), "--max-period", {kGgml, kDiffusers, kDit, kFlux});
  needs(o, o.time_factor.has_value(), "--time-factor", {kFlux});
  needs(o, o.flip_sin_to_cos || o.downscale_freq_shift, "--flip-sin-to-cos and --downscale-freq-shift", {kDiffusers});
  if (o.timesteps && o.timesteps_file) throw Usage("--timesteps and --timesteps-file: give one of them");
  if ((o.timesteps || o.timesteps_file) && (o.positions.given() || o.padding_idx))
    throw Usage(std::string(o.timesteps ? "--timesteps" : "--timesteps-file") +
                " gives every position: no --first, --positions, --position-list or --padding-idx with it");
  o.output.check();
  return o;
}

// ---- --timesteps-file ----------------------------------------------------------------------------------

std::string read_all(const std::string &path) {
  const bool in = path == "-";
  FILE *f = in ? stdin : std::fopen(path.c_str(), "rb");
  if (!f) throw IoError(path + ": " + std::strerror(errno));
  std::string data;
  char buf[65536];
  for (size_t got; (got = std::fread(buf, 1, sizeof buf, f)) > 0;) data.append(buf, got);
  const bool failed = std::ferror(f) != 0;
  const int err = errno;
  if (!in) std::fclose(f);
  if (failed) throw IoError((in ? std::string("standard input") : path) + ": " + std::strerror(err));
  return data;
}

// The value of key in a .npy header dict ({'descr': '<f8', 'fortran_order': False, 'shape': (3,), }): the text
// after "'key':" up to the next top-level comma (the shape's parentheses kept whole).
std::string npy_field(const std::string &dict, const std::string &key, const std::string &file) {
  const size_t at = dict.find("'" + key + "':");
  if (at == std::string::npos) throw Usage("--timesteps-file " + file + ": the .npy header has no '" + key + "'");
  size_t b = at + key.size() + 3, e = b;
  int depth = 0;
  for (; e < dict.size(); ++e) {
    const char c = dict[e];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if ((c == ',' && depth == 0) || c == '}') break;
  }
  while (b < e && dict[b] == ' ') ++b;
  while (e > b && dict[e - 1] == ' ') --e;
  return dict.substr(b, e - b);
}

// A NumPy .npy file (format 1.0, 2.0 or 3.0) holding a one-dimensional little-endian array of float64,
// float32, int64 or int32: its values as doubles (exactly; an int64 beyond 2^53 rounds, and is then refused
// by the library as every |t| >= 2^31 is).
std::vector<double> npy_values(const std::string &data, const std::string &file) {
  const std::string bad = "--timesteps-file " + file + ": ";
  const auto byte = [&](size_t i) { return size_t((unsigned char)data[i]); };
  if (data.size() < 10 || (data[6] != 1 && data[6] != 2 && data[6] != 3))
    throw Usage(bad + "not a .npy file of format 1, 2 or 3");
  const size_t start = data[6] == 1 ? 10 : 12;
  if (data.size() < start) throw Usage(bad + "a truncated .npy header");
  const size_t len = data[6] == 1 ? byte(8) | byte(9) << 8 : byte(8) | byte(9) << 8 | byte(10) << 16 | byte(11) << 24;
  if (data.size() < start + len) throw Usage(bad + "a truncated .npy header");
  const std::string dict = data.substr(start, len);
  const std::string descr = npy_field(dict, "descr", file), order = npy_field(dict, "fortran_order", file),
                    shape = npy_field(dict, "shape", file);
  struct Type {
    const char *descr;
    size_t size;
  };
  static const Type types[] = {{"'<f8'", 8}, {"'<f4'", 4}, {"'<i8'", 8}, {"'<i4'", 4}};
  const Type *type = nullptr;
  for (const Type &t : types)
    if (descr == t.descr) type = &t;
  if (!type)
    throw Usage(bad + "dtype " + descr + " (float64 '<f8', float32 '<f4', int64 '<i8' or int32 '<i4' are read)");
  // one dimension: "(N,)"; fortran_order does not matter for it, but is checked as NumPy writes it
  if (order != "False" && order != "True") throw Usage(bad + "fortran_order " + order);
  if (shape.size() < 4 || shape.front() != '(' || shape.compare(shape.size() - 2, 2, ",)") != 0)
    throw Usage(bad + "shape " + shape + " (one dimension, (N,), is read)");
  const std::string count_text = shape.substr(1, shape.size() - 3);
  const int64_t n = count(count_text, bad + "the shape's length");
  const size_t body = data.size() - start - len;
  if (uint64_t(n) > body / type->size || body != size_t(n) * type->size)
    throw Usage(bad + "shape " + shape + " and " + std::to_string(body) + " bytes of data");
  std::vector<double> t(static_cast<size_t>(n));
  const char *p = data.data() + start + len;
  const char kind = type->descr[2];
  for (size_t i = 0; i < t.size(); ++i, p += type->size) {
    if (kind == 'f' && type->size == 8) {
      std::memcpy(&t[i], p, 8);
    } else if (kind == 'f') {
      float f;
      std::memcpy(&f, p, 4);
      t[i] = double(f);
    } else if (type->size == 8) {
      int64_t v;
      std::memcpy(&v, p, 8);
      t[i] = double(v);
    } else {
      int32_t v;
      std::memcpy(&v, p, 4);
      t[i] = double(v);
    }
  }
  return t;
}

// The timesteps of --timesteps-file: a .npy array (recognised by its magic), else text with one number per
// line (as --timesteps takes them; blank lines and the spaces around a number ignored). "-" is standard input.
std::vector<double> timesteps_from_file(const std::string &path) {
  const std::string data = read_all(path);
  if (data.compare(0, 6, "\x93NUMPY") == 0) return npy_values(data, path);
  std::vector<double> t;
  size_t at = 0;
  for (int64_t line = 1; at < data.size(); ++line) {
    size_t end = data.find('\n', at);
    if (end == std::string::npos) end = data.size();
    size_t b = at, e = end;
    while (b < e && std::strchr(" \t\r", data[b])) ++b;
    while (e > b && std::strchr(" \t\r", data[e - 1])) --e;
    if (e > b) t.push_back(number(data.substr(b, e - b), "--timesteps-file " + path + " line " + std::to_string(line)));
    at = end + 1;
  }
  return t;
}

// The shortest decimal that reads back as v (a CSV row label).
std::string shortest(double v) {
  char buf[40];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
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
    case kDit: s = posenc::spec::dit(d, o.max_period.value_or(1.0e4)); break;
    case kFlux: s = posenc::spec::flux(d, o.max_period.value_or(1.0e4), o.time_factor.value_or(1000.0)); break;
    case kWhisper: s = posenc::spec::whisper(d, o.max_timescale.value_or(1.0e4)); break;
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

void show_spec(const posenc::spec &s, const Positions &p, const std::vector<double> *timesteps) {
  std::printf("d_model %lld\nlayout %s\nbase %.17g\nfreq_denominator %.17g\nposition_scale %.17g\n",
              (long long)s.d_model(), kLayouts[size_t(s.layout())].c_str(), s.base(), s.freq_denominator(),
              s.position_scale());
  if (timesteps)
    std::printf("timesteps list of %lld\n", (long long)timesteps->size());
  else if (p.is_list)
    std::printf("positions list of %lld\n", (long long)p.rows());
  else
    std::printf("first %lld\npositions %lld\n", (long long)p.first, (long long)p.n);
}

}  // namespace

int table_main(int argc, char **argv) {
  const TableOptions o = parse(argc, argv);
  if (!o.isa.empty()) force_isa(o.isa);
  const posenc::spec s = spec_of(o);
  const Positions p = o.positions.get(default_first(o));
  s.validate();  // the library's verdict on the spec before anything is allocated
  std::optional<std::vector<double>> times = o.timesteps;
  if (o.timesteps_file) times = timesteps_from_file(*o.timesteps_file);
  if (o.show_spec) {
    show_spec(s, p, times ? &*times : nullptr);
    return kExitOk;
  }
  Array t;
  t.rows = times ? int64_t(times->size()) : p.rows();
  t.cols = s.d_model();
  if (t.rows > 0 && t.cols > (int64_t(1) << 40) / t.rows) throw Usage("the table would have over 2^40 elements");
  t.columns = column_names(s);
  t.row_labels = o.output.format == Format::kCsv && !times ? row_labels(p) : std::vector<std::string>();
  const size_t size = size_t(t.rows * t.cols);
  if (times) {
    if (o.output.format == Format::kCsv)
      for (double v : *times) t.row_labels.push_back(shortest(v));
    t.label_header = "timestep";
    if (o.output.dtype == DType::kF32) {
      t.f32.resize(size);
      posenc::timesteps_f32(s, *times, posenc::rows_view<float>(t.f32.data(), t.rows, t.cols));
    } else {
      t.bits.resize(size);
      posenc::rows_view<uint16_t> out(t.bits.data(), t.rows, t.cols);
      if (o.output.dtype == DType::kBF16)
        posenc::timesteps_bf16(s, *times, out);
      else
        posenc::timesteps_f16(s, *times, out);
    }
  } else if (o.output.dtype == DType::kF32) {
    t.f32.resize(size);
    posenc::rows_view<float> out(t.f32.data(), t.rows, t.cols);
    if (p.is_list)
      posenc::rows_f32(s, p.list, out);
    else
      posenc::table_f32(s, p.first, out);
  } else {
    t.bits.resize(size);
    posenc::rows_view<uint16_t> out(t.bits.data(), t.rows, t.cols);
    const bool bf16 = o.output.dtype == DType::kBF16;
    if (p.is_list)
      bf16 ? posenc::rows_bf16(s, p.list, out) : posenc::rows_f16(s, p.list, out);
    else
      bf16 ? posenc::table_bf16(s, p.first, out) : posenc::table_f16(s, p.first, out);
  }
  write_arrays(o.output, {t});
  return kExitOk;
}

}  // namespace cli
