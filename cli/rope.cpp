// posenc rope: the cos/sin cache of a rotary scheme for a range or a list of positions. The scheme is a
// model preset of posenc.hpp or built from explicit options through posenc_rope_init (and
// posenc_rope_sections for a multi-axis scheme), exactly as a caller of the C ABI would build it; the
// float32 rows come from posenc_rope_cache_f32, the bf16 / f16 rows from the library's own bf16 / f16
// rotation of unit vectors (x = 1, y = 0 turns into x' = c, y' = s, rounded once from the float32 c and s),
// so that every value written is the library's. A multi-axis scheme takes one position list per axis
// (--axis-positions), or one list or a run that every axis shares (text tokens).
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "cli.hpp"
#include "output.hpp"
#include "posenc/posenc.hpp"

namespace cli {
namespace {

// a table, laid out by hand
// clang-format off
const std::vector<std::string> kPresets = {"llama2",          "llama3.1",          "mistral-7b-v0.2",
                                           "qwen2",           "qwen2-yarn",        "phi3-mini-128k",
                                           "deepseek-v2",     "deepseek-v3",       "gpt-neox-20b",
                                           "gpt-j-6b",        "qwen2-vl",          "qwen2.5-vl",
                                           "qwen3-vl",        "glm-4v",            "qwen2-vl-vision",
                                           "qwen2.5-vl-vision", "qwen3-vl-vision", "pixtral",
                                           "llama4-vision",   "gemma4-global",     "gemma4-sliding",
                                           "minimax-m3",      "deepseek-v4",       "deepseek-v4-compress",
                                           "glm5",            "glm5-indexer",
                                           "flux",            "wan",               "hunyuan-video",
                                           "cogvideox",       "qwen-image"};
// clang-format on
// An enumeration's names in value order, from the library's one list of them (posenc.h, "Names of the
// enumerations"): name(v) for v = 0, 1, .. up to the first NULL.
template <class E>
std::vector<std::string> names_of(const char *(*name)(E)) {
  std::vector<std::string> out;
  for (int v = 0; name(E(v)); ++v) out.push_back(name(E(v)));
  return out;
}
const std::vector<std::string> kLayouts = names_of(posenc_rope_layout_name);
const std::vector<std::string> kTypes = names_of(posenc_rope_type_name);
const std::vector<std::string> kPairs = names_of(posenc_rope_pairs_name);

// The value named `text` ('-' read as '_', as the library's from_name functions read it).
int named(const std::string &text, const std::string &option, const std::vector<std::string> &names) {
  std::string t = text;
  for (char &c : t)
    if (c == '-') c = '_';
  return choice(t, option, names);
}

// A scaling parameter: its option, the dict key that names its posenc_rope_scaling field and, for a number, the
// field (the others are read by read_param). The rope types it applies to are those whose one definition reads the
// key (posenc_rope_type_keys, POSENC_ROPE_KEYS_FIELDS).
struct Param {
  const char *option;
  const char *key;
  double posenc_rope_scaling::*number = nullptr;
};
const std::vector<Param> &params() {
  using S = posenc_rope_scaling;
  static const std::vector<Param> p = {
      {"--factor", "factor", &S::factor},
      {"--partial-rotary-factor", "partial_rotary_factor", &S::partial_rotary_factor},
      {"--original", "original_max_position_embeddings"},
      {"--seq-len", "seq_len"},
      {"--alpha", "alpha", &S::alpha},
      {"--beta-fast", "beta_fast", &S::beta_fast},
      {"--beta-slow", "beta_slow", &S::beta_slow},
      {"--mscale", "mscale", &S::mscale},
      {"--mscale-all-dim", "mscale_all_dim", &S::mscale_all_dim},
      {"--mixed-b", "mixed_b", &S::mixed_b},
      {"--extrapolation-factor", "extrapolation_factor", &S::extrapolation_factor},
      {"--attn-factor", "attn_factor", &S::attn_factor},
      {"--short-mscale", "short_mscale", &S::short_mscale},
      {"--long-mscale", "long_mscale", &S::long_mscale},
      {"--truncate", "truncate"},
      {"--low-freq-factor", "low_freq_factor", &S::low_freq_factor},
      {"--high-freq-factor", "high_freq_factor", &S::high_freq_factor},
      {"--short-factor", "short_factor"},
      {"--long-factor", "long_factor"},
      {"--attention-factor", "attention_factor", &S::attention_factor},
  };
  return p;
}

// Whether rope type t's definition reads the field named `key`.
bool reads(posenc_rope_type t, const char *key) {
  const char *fields = posenc_rope_type_keys(t, POSENC_ROPE_KEYS_FIELDS);
  const size_t n = std::strlen(key);
  for (const char *c = fields; c && *c;) {
    const char *end = std::strchr(c, ' ');
    const size_t len = end ? size_t(end - c) : std::strlen(c);
    if (len == n && std::strncmp(c, key, n) == 0) return true;
    c = end ? end + 1 : c + len;
  }
  return false;
}

struct RopeOptions {
  std::optional<std::string> preset;
  std::optional<int64_t> rotary_dim;
  std::optional<double> base;
  std::optional<posenc_rope_type> type;
  posenc_rope_scaling scaling = [] {
    posenc_rope_scaling s = posenc::rope_scaling_of(posenc::rope_type::default_);
    s.truncate = 1;  // Hugging Face's default, which the options mirror
    return s;
  }();
  std::vector<double> short_factor, long_factor;
  std::vector<std::string> given;  // the scaling parameters given, by option name
  std::optional<posenc::rope_pairs> pairs;
  std::optional<double> position_scale, attention_scale;
  std::optional<std::vector<int64_t>> sections;
  std::optional<posenc::rope_layout> sections_layout;
  std::optional<std::vector<std::vector<int64_t>>> axis_lists;  // --axis-positions, one list per axis
  bool separate = false, show_spec = false;
  std::string isa;
  PositionOptions positions;
  OutputOptions output;
};

// --axis-positions LIST/LIST/...: one position list per axis, axis 0 first.
std::vector<std::vector<int64_t>> axis_lists(const std::string &text, const std::string &option) {
  std::vector<std::vector<int64_t>> lists;
  size_t at = 0;
  for (;;) {
    const size_t slash = text.find('/', at);
    lists.push_back(positions(text.substr(at, slash == std::string::npos ? std::string::npos : slash - at), option));
    if (slash == std::string::npos) break;
    at = slash + 1;
  }
  if (lists.size() > 4) throw Usage(option + ": at most 4 axes");
  for (const std::vector<int64_t> &l : lists)
    if (l.size() != lists[0].size()) throw Usage(option + ": every axis needs one position per row");
  return lists;
}

// The lists of --axis-positions one after another: axis-major, as posenc.h takes them.
Positions axis_major(const std::vector<std::vector<int64_t>> &lists) {
  Positions p;
  p.is_list = true;
  p.axes = int(lists.size());
  for (const std::vector<int64_t> &l : lists) p.list.insert(p.list.end(), l.begin(), l.end());
  return p;
}

// Reads the current option when it is a scaling parameter.
bool read_param(Args &a, RopeOptions &o) {
  const std::string &n = a.name();
  const auto p = std::find_if(params().begin(), params().end(), [&](const Param &q) { return n == q.option; });
  if (p == params().end()) return false;
  posenc_rope_scaling &s = o.scaling;
  if (p->number)
    s.*(p->number) = number(a.value(), n);
  else if (n == "--original")
    s.original_max_positions = integer(a.value(), n);
  else if (n == "--seq-len")
    s.seq_len = integer(a.value(), n);
  else if (n == "--truncate")
    s.truncate = choice(a.value(), n, {"0", "1"});
  else if (n == "--short-factor")
    o.short_factor = numbers(a.value(), n);
  else
    o.long_factor = numbers(a.value(), n);  // --long-factor
  o.given.push_back(n);
  return true;
}

RopeOptions parse(int argc, char **argv) {
  RopeOptions o;
  read_options(argc, argv, [&](Args &a) {
    const std::string &n = a.name();
    if (o.positions.read(a) || o.output.read(a) || read_param(a, o)) return true;
    if (n == "--preset")
      o.preset = kPresets[size_t(choice(a.value(), n, kPresets))];
    else if (n == "--rotary-dim")
      o.rotary_dim = integer(a.value(), n);
    else if (n == "--base")
      o.base = number(a.value(), n);
    else if (n == "--rope-type")
      o.type = posenc_rope_type(named(a.value(), n, kTypes));
    else if (n == "--pairs")
      o.pairs = posenc::rope_pairs(named(a.value(), n, kPairs));
    else if (n == "--position-scale")
      o.position_scale = number(a.value(), n);
    else if (n == "--attention-scale")
      o.attention_scale = number(a.value(), n);
    else if (n == "--cache-layout")
      o.separate = choice(a.value(), n, {"cos-sin", "separate"}) == 1;
    else if (n == "--sections")
      o.sections = integers(a.value(), n);
    else if (n == "--sections-layout")
      o.sections_layout = posenc::rope_layout(named(a.value(), n, kLayouts));
    else if (n == "--axis-positions")
      o.axis_lists = axis_lists(a.value(), n);
    else if (n == "--show-spec")
      a.flag(), o.show_spec = true;
    else if (n == "--isa")
      o.isa = a.value();
    else
      return false;
    return true;
  });
  if (o.sections_layout && !o.sections) throw Usage("--sections-layout needs --sections");
  if (o.sections && o.sections->size() > 4) throw Usage("--sections: at most 4 sections (one per axis)");
  if (o.axis_lists && o.positions.given())
    throw Usage("--axis-positions gives every position: no --position-list, --first or --positions with it");
  if (o.preset) {
    if (o.type || o.base || o.sections)
      throw Usage("a preset carries its own scheme: no --rope-type, --base or --sections with --preset");
    for (const std::string &g : o.given)
      if (g != "--seq-len" || *o.preset != "phi3-mini-128k")
        throw Usage(g + " does not apply to --preset " + *o.preset + " (it carries its own scaling)");
  } else {
    if (!o.rotary_dim) throw Usage("give --preset NAME or --rotary-dim R");
    const posenc_rope_type t = o.type.value_or(POSENC_ROPE_TYPE_DEFAULT);
    for (const std::string &g : o.given)
      for (const Param &p : params())
        if (g == p.option && !reads(t, p.key)) throw Usage(g + " does not apply to --rope-type " + kTypes[size_t(t)]);
  }
  o.output.check();
  return o;
}

// The preset of posenc.hpp; --rotary-dim applies to the presets whose head size varies across a family.
posenc::rope preset(const RopeOptions &o, int64_t seq_len) {
  const std::string &p = *o.preset;
  const int64_t r = o.rotary_dim.value_or(128);
  const bool sized = p == "llama2" || p == "llama3.1" || p == "mistral-7b-v0.2" || p == "qwen2" || p == "qwen2-yarn";
  if (!sized && o.rotary_dim) throw Usage("--rotary-dim does not apply to --preset " + p);
  if (p == "qwen2-vl") return posenc::rope::qwen2_vl();
  if (p == "qwen2.5-vl") return posenc::rope::qwen2_5_vl();
  if (p == "qwen3-vl") return posenc::rope::qwen3_vl();
  if (p == "glm-4v") return posenc::rope::glm4v();
  if (p == "qwen2-vl-vision") return posenc::rope::qwen2_vl_vision();
  if (p == "qwen2.5-vl-vision") return posenc::rope::qwen2_5_vl_vision();
  if (p == "qwen3-vl-vision") return posenc::rope::qwen3_vl_vision();
  if (p == "pixtral") return posenc::rope::pixtral();
  if (p == "llama4-vision") return posenc::rope::llama4_vision();
  if (p == "llama2") return posenc::rope::llama2(r);
  if (p == "llama3.1") return posenc::rope::llama3_1(r);
  if (p == "mistral-7b-v0.2") return posenc::rope::mistral_7b_v02(r);
  if (p == "qwen2") return posenc::rope::qwen2(r);
  if (p == "qwen2-yarn") return posenc::rope::qwen2(r, true);
  if (p == "phi3-mini-128k") return posenc::rope::phi3_mini_128k(seq_len);
  if (p == "deepseek-v2") return posenc::rope::deepseek_v2();
  if (p == "deepseek-v3") return posenc::rope::deepseek_v3();
  if (p == "gpt-neox-20b") return posenc::rope::gpt_neox_20b();
  if (p == "gemma4-global") return posenc::rope::gemma4_global();
  if (p == "gemma4-sliding") return posenc::rope::gemma4_sliding();
  if (p == "minimax-m3") return posenc::rope::minimax_m3();
  if (p == "deepseek-v4") return posenc::rope::deepseek_v4();
  if (p == "deepseek-v4-compress") return posenc::rope::deepseek_v4_compress();
  if (p == "glm5") return posenc::rope::glm5();
  if (p == "glm5-indexer") return posenc::rope::glm5_indexer();
  if (p == "flux") return posenc::rope::flux();
  if (p == "wan") return posenc::rope::wan();
  if (p == "hunyuan-video") return posenc::rope::hunyuan_video();
  if (p == "cogvideox") return posenc::rope::cogvideox();
  if (p == "qwen-image") return posenc::rope::qwen_image();
  return posenc::rope::gpt_j_6b();
}

posenc::rope build(RopeOptions &o, const Positions &pos) {
  // dynamic and longrope read the current sequence length: by default, as HF, the largest position + 1
  if (o.scaling.seq_len == 0) o.scaling.seq_len = pos.seq_len();
  posenc::rope r = o.preset ? preset(o, o.scaling.seq_len) : [&] {
    const int64_t h = *o.rotary_dim / 2;
    if ((!o.short_factor.empty() && int64_t(o.short_factor.size()) != h) ||
        (!o.long_factor.empty() && int64_t(o.long_factor.size()) != h))
      throw Usage("--short-factor and --long-factor need rotary_dim / 2 values each");
    o.scaling.short_factor = o.short_factor.empty() ? nullptr : o.short_factor.data();
    o.scaling.long_factor = o.long_factor.empty() ? nullptr : o.long_factor.data();
    o.scaling.type = o.type.value_or(POSENC_ROPE_TYPE_DEFAULT);
    const posenc::rope one = posenc::rope::init(*o.rotary_dim, o.base.value_or(1.0e4), o.type ? &o.scaling : nullptr);
    if (!o.sections) return one;
    std::array<int64_t, 4> s = {0, 0, 0, 0};
    std::copy(o.sections->begin(), o.sections->end(), s.begin());
    return one.with_sections(s, o.sections_layout.value_or(posenc::rope_layout::chunked));
  }();
  if (o.pairs) r = r.with_pairs(*o.pairs);
  if (o.position_scale) r = r.with_position_scale(*o.position_scale);
  if (o.attention_scale) r = r.with_attention_scale(*o.attention_scale);
  return r;
}

void show_spec(const posenc::rope &r) {
  std::printf("rotary_dim %lld\npairs %s\nbase %.17g\nposition_scale %.17g\nattention_scale %.17g\nfreq",
              (long long)r.rotary_dim(), posenc_rope_pairs_name(posenc_rope_pairs(r.pairs())), r.base(),
              r.position_scale(), r.attention_scale());
  if (r.freq().size() == 0) std::printf(" base^(-2i/r)");
  for (double f : r.freq()) std::printf(" %.17g", f);
  std::printf("\n");
  if (r.axes() == 1) return;
  std::printf("axes %d\naxis", int(r.axes()));
  for (uint8_t a : r.axis()) std::printf(" %d", int(a));
  std::printf("\n");
}

// The positions of the cache rows for a scheme of `axes` axes: a run stays a run (every axis first + t); a
// list of one axis is every axis's (a padding entry is pad on axis 0 and 0 on the others, which the library
// requires to be in range); a list of `axes` lists is taken as it is. Any other count is a usage error.
Positions for_axes(const Positions &pos, int axes) {
  if (!pos.is_list || pos.axes == axes) return pos;
  if (pos.axes != 1)
    throw Usage("--axis-positions gives " + std::to_string(pos.axes) + " lists; the scheme has " +
                std::to_string(axes) + (axes == 1 ? " axis" : " axes"));
  Positions p = pos;
  p.axes = axes;
  for (int a = 1; a < axes; ++a)
    for (int64_t v : pos.list) p.list.push_back(v == POSENC_PAD ? 0 : v);
  return p;
}

// The library's view of the positions.
posenc::positions lib_positions(const Positions &pos) {
  if (!pos.is_list) return posenc::positions(pos.first);
  return posenc::positions::axis_major(pos.list, pos.axes);
}

// The rows as vLLM's cos_sin_cache: n x r, cos in the first half of each row, sin in the second.
Array cos_sin_rows(const posenc::rope &r, const Positions &pos, DType dtype) {
  const int64_t n = pos.rows(), width = r.rotary_dim(), h = width / 2;
  if (n > 0 && width > (int64_t(1) << 40) / n) throw Usage("the cache would have over 2^40 elements");
  Array a;
  a.rows = n;
  a.cols = width;
  const posenc::positions p = lib_positions(pos);
  if (dtype == DType::kF32) {
    a.f32.resize(size_t(n * width));
    r.cache(p, posenc::rows_view<float>(a.f32.data(), n, width));
    return a;
  }
  // One head row per token, (1, ..., 1, 0, ..., 0) with halves pairs: pair i is (x_i, x_{i+h}) = (1, 0),
  // which the rotation turns into (c_i, s_i). A pad token is left as it was: its cache row is zeros.
  const uint16_t one = dtype == DType::kBF16 ? 0x3F80 : 0x3C00;
  a.bits.assign(size_t(n * width), 0);
  for (int64_t t = 0; t < n; ++t)
    for (int64_t i = 0; i < h; ++i) a.bits[size_t(t * width + i)] = one;
  const posenc::rope halves = r.with_pairs(posenc::rope_pairs::halves);
  const auto x = posenc::heads_view<uint16_t>::thd(a.bits.data(), n, 1, width);
  if (dtype == DType::kBF16)
    halves.apply_bf16(p, x);
  else
    halves.apply_f16(p, x);
  for (int64_t t = 0; t < n; ++t)
    if (pos.at(t) == POSENC_PAD)
      for (int64_t e = 0; e < width; ++e) a.bits[size_t(t * width + e)] = 0;
  return a;
}

std::vector<std::string> names(const char *what, int64_t h) {
  std::vector<std::string> c;
  for (int64_t i = 0; i < h; ++i) c.push_back(what + std::to_string(i));
  return c;
}

// The cos half or the sin half of each row.
Array half_of(const Array &a, bool sin) {
  Array out;
  out.name = sin ? "sin" : "cos";
  out.rows = a.rows;
  out.cols = a.cols / 2;
  for (int64_t t = 0; t < a.rows; ++t) {
    const int64_t from = t * a.cols + (sin ? out.cols : 0);
    if (!a.f32.empty())
      out.f32.insert(out.f32.end(), a.f32.begin() + from, a.f32.begin() + from + out.cols);
    else
      out.bits.insert(out.bits.end(), a.bits.begin() + from, a.bits.begin() + from + out.cols);
  }
  out.columns = names(out.name.c_str(), out.cols);
  out.row_labels = a.row_labels;
  out.label_header = a.label_header;
  return out;
}

}  // namespace

int rope_main(int argc, char **argv) {
  RopeOptions o = parse(argc, argv);
  if (!o.isa.empty()) force_isa(o.isa);
  const Positions given = o.axis_lists ? axis_major(*o.axis_lists) : o.positions.get(0);
  const posenc::rope r = build(o, given);
  r.validate();
  if (o.show_spec) {
    show_spec(r);
    return kExitOk;
  }
  const Positions pos = for_axes(given, r.axes());
  Array rows = cos_sin_rows(r, pos, o.output.dtype);
  if (o.output.format == Format::kCsv) {
    Positions labels = pos;
    labels.axes = r.axes();  // a run: each axis first + t
    rows.row_labels = row_labels(labels);
    rows.label_header = label_header(labels);
  }
  if (o.separate) {
    write_arrays(o.output, {half_of(rows, false), half_of(rows, true)});
  } else {
    rows.columns = names("cos", rows.cols / 2);
    for (const std::string &s : names("sin", rows.cols / 2)) rows.columns.push_back(s);
    write_arrays(o.output, {rows});
  }
  return kExitOk;
}

}  // namespace cli
