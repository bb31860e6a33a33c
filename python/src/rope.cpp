// Rotary embeddings: posenc.Rope (a posenc_rope that owns its frequencies and its axis map), rope_init from an
// HF-style scaling dict, rope_sections (posenc_rope_sections), the cos/sin cache, the in-place rotations of q
// and k (posenc_rope_* of the C ABI) and the context shift, for one position per token or several (multi-axis
// RoPE: positions given axis-major, (A, n) or (A, batch, n)).
#include <pybind11/operators.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "args.hpp"
#include "arrays.hpp"
#include "posenc/posenc.h"
#include "posenc/posenc.hpp"
#include "threads.hpp"

namespace pyposenc {

namespace {

// posenc.Rope is the C++ wrapper's rope: it owns its explicit frequencies and its axis map.
using Rope = posenc::rope;

posenc_rope_pairs pairs_arg(py::handle obj) {
  static const auto names =
      enum_names(posenc_rope_pairs_name, {{"neox", POSENC_ROPE_HALVES}, {"gptj", POSENC_ROPE_INTERLEAVED}});
  return enum_arg_of<posenc_rope_pairs>(obj, "pairs", names);
}

posenc_rope_layout layout_arg(py::handle obj) {
  static const auto names = enum_names(posenc_rope_layout_name);
  return enum_arg_of<posenc_rope_layout>(obj, "layout", names);
}

// Any error of the spec itself, raised where the spec is made rather than at its first use.
void validate(const Rope &r) { check(posenc_rope_cache_f32(&r.c_rope(), nullptr, 0, 0, nullptr, 0, nullptr, 0)); }

std::vector<double> doubles(py::handle obj, const char *name, int64_t want) {
  std::vector<double> v;
  for (py::handle x : py::iter(py::module_::import("numpy").attr("asarray")(obj, "float64").attr("ravel")()))
    v.push_back(x.cast<double>());
  if (int64_t(v.size()) != want)
    throw py::value_error(std::string(name) + ": expected rotary_dim / 2 = " + std::to_string(want) + " values, got " +
                          std::to_string(v.size()));
  return v;
}

// The axis map: rotary_dim / 2 integers in [0, axes). A value that is no uint8 is past every axes (1..4):
// the C library's INVALID, as for a value >= axes.
std::vector<uint8_t> axis_map(py::handle obj, int64_t want) {
  py::module_ np = py::module_::import("numpy");
  py::array a = np.attr("asarray")(obj);
  const char kind = a.dtype().kind();
  if (a.size() && kind != 'i' && kind != 'u')
    throw py::type_error("axis: expected integers, got dtype " + py::str(a.dtype()).cast<std::string>());
  std::vector<uint8_t> v;
  bool bad = false;
  for (py::handle x : py::iter(a.attr("ravel")())) {
    const auto value = x.cast<long long>();
    bad = bad || value < 0 || value > 255;
    v.push_back(uint8_t(value));
  }
  if (int64_t(v.size()) != want)
    throw py::value_error("axis: expected rotary_dim / 2 = " + std::to_string(want) + " values, got " +
                          std::to_string(v.size()));
  if (bad) check(POSENC_ERR_INVALID);
  return v;
}

Rope make_rope(int64_t rotary_dim, py::handle pairs, double base, double position_scale, py::handle freq,
               double attention_scale, int64_t axes, py::handle axis) {
  posenc_rope c = posenc_rope_default(rotary_dim);
  if (axes < 0 || axes > 255) check(POSENC_ERR_INVALID);  // outside [1, 4]: the C library's INVALID
  c.pairs = pairs_arg(pairs);
  c.base = base;
  c.position_scale = position_scale;
  c.attention_scale = attention_scale;
  c.axes = int32_t(axes);
  std::vector<double> f;
  std::vector<uint8_t> map;
  if (!freq.is_none() || !axis.is_none())
    if (rotary_dim < 2 || rotary_dim % 2) check(POSENC_ERR_INVALID);
  if (!freq.is_none()) {
    f = doubles(freq, "freq", rotary_dim / 2);
    c.freq = f.data();
  }
  if (!axis.is_none()) {
    map = axis_map(axis, rotary_dim / 2);
    c.axis = map.data();
  }
  check(posenc_rope_cache_f32(&c, nullptr, 0, 0, nullptr, 0, nullptr, 0));  // axes, and the map against it
  if (c.axes == 1) c.axis = nullptr;  // one axis keeps no map: it can only hold zeros
  return Rope(c);                     // copies the frequencies and the map
}

// posenc_rope_sections on a copy of r: the pairs assigned to axes from up to four section sizes.
Rope rope_sections(const Rope &r, py::handle sections_obj, py::handle layout_obj) {
  const posenc_rope_layout layout = layout_arg(layout_obj);
  py::module_ np = py::module_::import("numpy");
  py::array a = np.attr("asarray")(sections_obj);
  const char kind = a.dtype().kind();
  if (a.size() && kind != 'i' && kind != 'u')
    throw py::type_error("sections: expected integers, got dtype " + py::str(a.dtype()).cast<std::string>());
  if (a.ndim() > 1 || a.size() > 4)
    throw py::value_error("sections: expected at most 4 sizes (one per axis), got shape " +
                          py::str(a.attr("shape")).cast<std::string>());
  std::array<int64_t, 4> s = {0, 0, 0, 0};
  size_t k = 0;
  for (py::handle x : py::iter(a.attr("ravel")())) s[k++] = x.cast<int64_t>();
  // vLLM's three-size mrope_section [t, h, 0] keeps the last pair for t (force_last); balanced reads s2 == 0
  // as the two-size form [h, w]: not the same map, so refused rather than read as the other
  int layout_int = 0;  // any int the caller gave: compared as one, never loaded as the enum
  static_assert(sizeof layout == sizeof layout_int, "posenc_rope_layout is int-sized");
  std::memcpy(&layout_int, &layout, sizeof layout_int);
  if (layout_int == int(POSENC_SECTIONS_BALANCED) && k == 3 && s[2] == 0)
    throw py::value_error(
        "sections: [t, h, 0] with layout 'balanced': vLLM reads three sizes with the last pair "
        "on t (force_last), posenc reads s2 == 0 as the two sizes [h, w]; [t, h, 0] has no "
        "posenc spelling");
  Rope out = r.with_sections(s, posenc::rope_layout(layout));  // posenc::error: the C status
  validate(out);
  return out;
}

template <class T>
T get(const py::dict &d, const char *key, T fallback) {
  if (!d.contains(key) || d[key].is_none()) return fallback;
  py::object v = d[key];
  if constexpr (std::is_same_v<T, int64_t>) {
    // lengths written as floats in some configs (8192.0): integral values only
    if (py::isinstance<py::float_>(v)) {
      const double f = v.cast<double>();
      if (f != std::floor(f) || !(std::fabs(f) < 0x1p62))
        throw py::value_error(std::string("scaling: ") + key + " must be an integer");
      return int64_t(f);
    }
  }
  try {
    return v.cast<T>();
  } catch (const py::cast_error &) {
    throw py::type_error(std::string("scaling: ") + key + " has the wrong type");
  }
}

// The keys of a scaling dict (docs/rope.md, "The keys of a scaling dict"), from the rope type's one definition
// (posenc_rope_type_keys): those posenc's scheme of that rope_type reads (its fields and the keys it accepts); those
// another runtime reads for the same rope_type to change the frequencies or the magnitude, which posenc's scheme
// would silently not apply (refused, by name); those every scheme may meet (read by the caller: the base, the
// rotary width, the axis layout, the lengths). Any other key gets a warning, as HF's validation gives one.
std::vector<std::string> keys_of(posenc_rope_type type, posenc_rope_keys which) {
  std::vector<std::string> out;
  const char *s = posenc_rope_type_keys(type, which);
  std::string k;
  for (const char *c = s ? s : "";; ++c) {
    if (*c == ' ' || *c == 0) {
      if (!k.empty()) out.push_back(k);
      k.clear();
      if (*c == 0) break;
    } else {
      k += *c;
    }
  }
  return out;
}
struct TypeKeys {
  std::vector<std::string> read, elsewhere;
};
const TypeKeys &type_keys(posenc_rope_type type) {
  static const std::vector<TypeKeys> k = [] {
    std::vector<TypeKeys> v;
    for (int t = 0; posenc_rope_type_name(posenc_rope_type(t)); ++t) {
      TypeKeys row{keys_of(posenc_rope_type(t), POSENC_ROPE_KEYS_FIELDS),
                   keys_of(posenc_rope_type(t), POSENC_ROPE_KEYS_ELSEWHERE)};
      for (std::string &a : keys_of(posenc_rope_type(t), POSENC_ROPE_KEYS_ACCEPTED)) row.read.push_back(a);
      v.push_back(std::move(row));
    }
    return v;
  }();
  return k[size_t(type)];
}
// The library's names of the rope types, then the aliases their definitions give
const std::vector<std::pair<std::string, posenc_rope_type>> &type_names() {
  static const auto names = [] {
    auto v = enum_names(posenc_rope_type_name);
    for (int t = 0; posenc_rope_type_name(posenc_rope_type(t)); ++t)
      for (std::string &a : keys_of(posenc_rope_type(t), POSENC_ROPE_KEYS_ALIASES))
        v.push_back({a, posenc_rope_type(t)});
    return v;
  }();
  return names;
}
// a table, laid out by hand
// clang-format off
const char *const kEveryScheme[] = {"rope_type", "type", "rope_theta", "partial_rotary_factor", "mrope_section",
                                    "mrope_interleaved", "xdrope_section", "max_position_embeddings",
                                    "original_max_position_embeddings", "seq_len", "truncate"};
// clang-format on

void check_keys(const py::dict &d, posenc_rope_type type, const std::string &type_name) {
  const TypeKeys *t = &type_keys(type);
  std::vector<std::string> unknown;
  for (const auto &item : d) {
    const std::string key = py::str(item.first);
    auto in = [&](const std::vector<std::string> &v) { return std::find(v.begin(), v.end(), key) != v.end(); };
    if (in(t->read) ||
        std::any_of(std::begin(kEveryScheme), std::end(kEveryScheme), [&](const char *k) { return key == k; }))
      continue;
    if (in(t->elsewhere))
      throw py::value_error("scaling[" + std::string(py::repr(item.first)) + "]: another runtime's " + type_name +
                            " reads it to change the frequencies or the magnitude, and posenc's " + type_name +
                            " does not (docs/rope.md, \"The keys of a scaling dict\")");
    unknown.push_back(key);
  }
  if (unknown.empty()) return;
  std::sort(unknown.begin(), unknown.end());
  std::string msg = "scaling: keys that rope_type " + type_name + " does not read:";
  for (const std::string &k : unknown) msg += " " + k;
  msg += " (ignored, as Hugging Face ignores them with a warning)";
  if (PyErr_WarnEx(PyExc_UserWarning, msg.c_str(), 2) != 0) throw py::error_already_set();
}

// posenc_rope_init from HF's rope_scaling / rope_parameters dict (docs/rope.md, "Scalings"): the keys of the
// scheme are read, the keys every scheme may meet are left to the caller, others refused or warned about
// (check_keys).
Rope rope_init(int64_t rotary_dim, double base, py::handle scaling_obj, py::handle pairs, py::handle max_pos,
               py::handle original_max_pos, py::handle seq_len) {
  const posenc_rope_pairs p = pairs_arg(pairs);
  if (scaling_obj.is_none()) {
    try {
      return Rope::init(rotary_dim, base, nullptr, posenc::rope_pairs(p));
    } catch (const posenc::error &e) {
      check(e.status());
    }
  }
  if (!py::isinstance<py::dict>(scaling_obj))
    throw py::type_error("scaling: expected a dict (HF rope_scaling) or None");
  const py::dict d = py::reinterpret_borrow<py::dict>(scaling_obj);
  py::object type_name = d.contains("rope_type") ? py::object(d["rope_type"])
                         : d.contains("type")    ? py::object(d["type"])
                                                 : py::object(py::str("default"));
  posenc_rope_scaling s{};
  // Grok's rope_scaling names its scheme by extra_method (Grok1ScalingRotaryEmbedding; "yarn_log" by default)
  const bool grok = py::isinstance<py::str>(type_name) && std::string(py::str(type_name)) == "grok1";
  if (grok) type_name = d.contains("extra_method") ? py::object(d["extra_method"]) : py::object(py::str("yarn_log"));
  // Grok's "yarn" and "yarn_linear" are one branch of Grok1ScalingRotaryEmbedding: vLLM's DeepSeek blend of
  // the interpolated and extrapolated frequencies (the same correction range and mask, extrapolation_factor
  // included), whose mscale the class leaves out of its cache: deepseek_yarn with attention 1 (below)
  const bool grok_yarn =
      grok && py::isinstance<py::str>(type_name) &&
      (std::string(py::str(type_name)) == "yarn" || std::string(py::str(type_name)) == "yarn_linear");
  s.type = grok_yarn ? POSENC_ROPE_TYPE_DEEPSEEK_YARN
                     : enum_arg_of<posenc_rope_type>(type_name, grok ? "extra_method" : "rope_type", type_names());
  if (grok && !grok_yarn && s.type != POSENC_ROPE_TYPE_YARN_LOG && s.type != POSENC_ROPE_TYPE_THETA_SCALE)
    throw py::value_error("scaling['extra_method']: " + std::string(py::repr(type_name)) +
                          " is not a Grok scheme posenc has (yarn_log, yarn, yarn_linear, theta_scale)");
  const bool xdrope = std::string(py::str(type_name)) == "xdrope";
  if (xdrope && !d.contains("alpha")) throw py::value_error("scaling: xdrope needs 'alpha' (vLLM's XDRotaryEmbedding)");
  // vLLM's get_rope builds MRotaryEmbeddingInterleaved for "openpangu" only with an mrope_section and a true
  // mrope_interleaved (a ValueError otherwise); its frequencies are the default ones
  const bool openpangu = std::string(py::str(type_name)) == "openpangu";
  if (openpangu && (!d.contains("mrope_section") || d["mrope_section"].is_none() || !d.contains("mrope_interleaved") ||
                    !py::bool_(d["mrope_interleaved"])))
    throw py::value_error(
        "scaling: openpangu needs 'mrope_section' and a true 'mrope_interleaved' (vLLM's get_rope; the caller "
        "applies mrope_section with rope_sections(rope, mrope_section, 'balanced'))");
  // every extra_method takes the class's keyword arguments, whichever scheme computes it
  check_keys(d, grok ? POSENC_ROPE_TYPE_YARN_LOG : s.type, std::string(py::str(type_name)));
  int64_t max_positions = max_pos.is_none() ? get<int64_t>(d, "max_position_embeddings", 0) : max_pos.cast<int64_t>();
  // Grok's rope_scaling holds the original length under max_position_embeddings (Grok1ScalingRotaryEmbedding's
  // argument): the dict's value is the scheme's L0, whatever the keyword says
  if ((grok || s.type == POSENC_ROPE_TYPE_YARN_LOG || s.type == POSENC_ROPE_TYPE_THETA_SCALE) &&
      d.contains("max_position_embeddings"))
    max_positions = get<int64_t>(d, "max_position_embeddings", 0);
  int64_t original = get<int64_t>(d, "original_max_position_embeddings", 0);
  if (!original && !original_max_pos.is_none()) original = original_max_pos.cast<int64_t>();
  s.factor = get<double>(d, "factor", 0.0);
  s.seq_len = seq_len.is_none() ? get<int64_t>(d, "seq_len", 0) : seq_len.cast<int64_t>();
  s.beta_fast = get<double>(d, "beta_fast", 0.0);
  s.beta_slow = get<double>(d, "beta_slow", 0.0);
  s.mscale = get<double>(d, "mscale", 0.0);
  s.mscale_all_dim = get<double>(d, "mscale_all_dim", 0.0);
  s.truncate = get<bool>(d, "truncate", true) ? 1 : 0;  // HF's default is true
  s.low_freq_factor = get<double>(d, "low_freq_factor", 0.0);
  s.high_freq_factor = get<double>(d, "high_freq_factor", 0.0);
  s.attention_factor = get<double>(d, "attention_factor", 0.0);
  if (grok || s.type == POSENC_ROPE_TYPE_YARN_LOG || s.type == POSENC_ROPE_TYPE_THETA_SCALE) {
    if (d.contains("scaling_factor")) s.factor = get<double>(d, "scaling_factor", 0.0);  // Grok's name for it
  }
  if (s.type == POSENC_ROPE_TYPE_NTK && d.contains("mixed_b") && !d["mixed_b"].is_none()) {
    s.mixed_b = get<double>(d, "mixed_b", 0.0);
    if (!(s.mixed_b > 0.0)) throw py::value_error("scaling['mixed_b']: a positive number (vLLM's mixed NTK)");
  }
  if (s.type == POSENC_ROPE_TYPE_DEEPSEEK_YARN || s.type == POSENC_ROPE_TYPE_YARN_LOG ||
      s.type == POSENC_ROPE_TYPE_TELECHAT3) {
    s.extrapolation_factor = get<double>(d, "extrapolation_factor", 0.0);
    if (d.contains("extrapolation_factor") && !(s.extrapolation_factor > 0.0))
      throw py::value_error("scaling['extrapolation_factor']: in (0, 1] for posenc's " +
                            std::string(py::str(type_name)));
    if (d.contains("truncate") && !get<bool>(d, "truncate", true))
      throw py::value_error("scaling['truncate']: vLLM's " + std::string(py::str(type_name)) +
                            " always floors / ceils the correction range; truncate false is not a scheme of it");
  }
  if (grok_yarn) {  // attention 1: mscale equal to mscale_all_dim, attn_factor taken and not applied
    s.mscale = s.mscale_all_dim = 1.0;
    s.attn_factor = 0.0;
  } else if (s.type == POSENC_ROPE_TYPE_DEEPSEEK_YARN || s.type == POSENC_ROPE_TYPE_TELECHAT3) {
    s.attn_factor = get<double>(d, "attn_factor", 0.0);
    if (d.contains("attn_factor") && !(s.attn_factor > 0.0))
      throw py::value_error("scaling['attn_factor']: a positive number");
    // vLLM's yarn_get_mscale(f, m) = 0.1 m ln f + 1 makes an explicit mscale 0 a numerator of 1 (DeepSeek-V4's
    // dict sets mscale 0 and mscale_all_dim 0: magnitude attn_factor). posenc_rope_scaling reads mscale 0 as
    // "unset", vLLM's default 1, so the ratio 1 / 1 is passed as two equal mscales; 1 / (0.1 m2 ln f + 1) has no
    // form in the struct (no checkpoint ships it) and is refused by name.
    if (s.type == POSENC_ROPE_TYPE_DEEPSEEK_YARN && d.contains("mscale") && s.mscale == 0.0) {
      if (s.mscale_all_dim != 0.0)
        throw py::value_error(
            "scaling['mscale'] = 0 with scaling['mscale_all_dim'] = " + std::to_string(s.mscale_all_dim) +
            ": vLLM's magnitude 1 / (0.1 mscale_all_dim ln factor + 1) has no form in posenc's deepseek_yarn "
            "(its mscale 0 means vLLM's default 1); mscale 0 is read with mscale_all_dim 0 only");
      s.mscale = s.mscale_all_dim = 1.0;  // 1 / 1, exactly vLLM's 1 / 1
    }
    if (s.type == POSENC_ROPE_TYPE_DEEPSEEK_YARN && d.contains("rope_dim") && !d["rope_dim"].is_none() &&
        get<int64_t>(d, "rope_dim", 0) != rotary_dim)
      throw py::value_error("scaling['rope_dim'] = " + std::to_string(get<int64_t>(d, "rope_dim", 0)) +
                            ": vLLM rotates rope_dim channels, and rotary_dim is " + std::to_string(rotary_dim));
  }
  if (s.type == POSENC_ROPE_TYPE_LONGROPE) {
    s.short_mscale = get<double>(d, "short_mscale", 0.0);
    s.long_mscale = get<double>(d, "long_mscale", 0.0);
  }
  // proportional reads the share of pairs that rotate from the dict (HF v5 keeps it there for Gemma 4); for
  // the other types partial_rotary_factor narrows rotary_dim, which the caller passes
  if (s.type == POSENC_ROPE_TYPE_PROPORTIONAL) s.partial_rotary_factor = get<double>(d, "partial_rotary_factor", 0.0);
  if (s.type == POSENC_ROPE_TYPE_DYNAMIC && d.contains("alpha")) {  // vLLM: "alpha" wins over "factor"
    s.alpha = get<double>(d, "alpha", 0.0);
    if (!(s.alpha > 0.0)) throw py::value_error("scaling['alpha']: a positive number (vLLM's NTK alpha)");
  }
  switch (s.type) {
    case POSENC_ROPE_TYPE_DYNAMIC:
      // HF's dynamic NTK measures the length against max_position_embeddings
      s.original_max_positions = max_positions ? max_positions : original;
      if (!s.seq_len) s.seq_len = s.original_max_positions;
      break;
    case POSENC_ROPE_TYPE_YARN:
    case POSENC_ROPE_TYPE_LONGROPE:
      s.original_max_positions = original ? original : max_positions;
      // HF v5: a missing factor is max_position_embeddings / original_max_position_embeddings (Phi-3)
      if (s.factor == 0.0 && original && max_positions) s.factor = double(max_positions) / double(original);
      break;
    default: s.original_max_positions = original ? original : max_positions;
  }
  std::vector<double> shorts, longs;
  if (s.type == POSENC_ROPE_TYPE_LONGROPE) {
    if (rotary_dim < 2 || rotary_dim % 2) check(POSENC_ERR_INVALID);
    if (!d.contains("short_factor") || !d.contains("long_factor"))
      throw py::value_error("scaling: longrope needs short_factor and long_factor");
    shorts = doubles(d["short_factor"], "short_factor", rotary_dim / 2);
    longs = doubles(d["long_factor"], "long_factor", rotary_dim / 2);
    s.short_factor = shorts.data();
    s.long_factor = longs.data();
  }
  try {
    return Rope::init(rotary_dim, base, &s, posenc::rope_pairs(p));
  } catch (const posenc::error &e) {
    check(e.status());
  }
  throw py::value_error("unreachable");
}

// ---- positions ----------------------------------------------------------------------------------------------

constexpr int64_t kGrain = posenc::cost_model::block_grain;  // pieces of whole blocks (threads.hpp)

// The positions of a RoPE call: a run from `first`, or explicit values, A * n of them per batch row, axis-major
// as the C calls take them (token t's position on axis a is row(b)[a * n + t]).
struct RopePositions {
  int64_t first = 0;
  int32_t axes = 1;
  int64_t n = 0;
  int64_t rows = 1;               // rows of values: 1 when one row serves every batch entry
  View v;                         // the caller's values as contiguous int64, or float64 when real (kept alive)
  std::vector<int64_t> gathered;  // (batch, A, n), regrouped from the caller's (A, batch, n)
  std::vector<double> gathered_real;
  const int64_t *base = nullptr;  // NULL: a run
  // real: floating-point positions, for the posenc_rope_*_real calls (posenc.h, "RoPE at real-valued
  // positions"), at real_base
  bool real = false;
  const double *real_base = nullptr;
  const int64_t *row(int64_t b) const { return base ? base + (rows > 1 ? b * axes * n : 0) : nullptr; }
  const double *real_row(int64_t b) const { return real_base + (rows > 1 ? b * axes * n : 0); }
};

// Whether positions are real numbers (a floating NumPy array or CPU tensor: the posenc_rope_*_real calls; an
// integer-valued one gives the integer call's bytes). Python lists and integer arrays stay integer positions.
bool floating_positions(py::handle obj) {
  if (obj.is_none()) return false;
  if (py::isinstance<py::array>(obj)) {
    const py::dtype dt = py::reinterpret_borrow<py::array>(obj).dtype();
    return dt.kind() == 'f' || py::str(dt.attr("name")).cast<std::string>() == "bfloat16";
  }
  return is_torch_tensor(obj) && py::bool_(obj.attr("is_floating_point")());
}

// Floating positions as contiguous float64 (exact from every float format), any shape of rank 1 to 3.
View real_positions_view(py::handle obj) {
  const Want want{"positions", bit(Elem::F64), 1, 3};
  if (is_torch_tensor(obj)) {
    py::object t = py::reinterpret_borrow<py::object>(obj).attr("detach")().attr("double")();
    return view_of(t.attr("contiguous")(), want);
  }
  py::module_ np = py::module_::import("numpy");
  return view_of(np.attr("ascontiguousarray")(obj, "float64"), want);
}

std::string shape_text(std::initializer_list<int64_t> dims) {
  std::string s = "(";
  for (int64_t d : dims) s += (s.size() > 1 ? ", " : "") + std::to_string(d);
  return s + (dims.size() == 1 ? ",)" : ")");
}

// positions: None, or for one axis (n,) / (batch, n) (positions_arg); for A > 1 axes (A, n) or the C ABI's flat
// (A * n,), shared by every batch row, or (A, batch, n). Any other shape raises ValueError naming it.
RopePositions rope_positions(py::handle obj, int64_t first, int32_t axes, int64_t batch, int64_t n) {
  RopePositions p;
  p.first = first;
  p.axes = axes < 1 ? 1 : axes;
  p.n = n;
  if (obj.is_none()) return p;
  if (floating_positions(obj)) {  // the same shapes as integer positions, as float64
    p.real = true;
    p.v = real_positions_view(obj);
    const View &v = p.v;
    const int64_t A = p.axes;
    const bool flat = v.ndim == 1 && v.shape[0] == A * n;
    const bool shared = (A > 1 && v.ndim == 2 && v.shape[0] == A && v.shape[1] == n);
    const bool per_row = A > 1 ? v.ndim == 3 && v.shape[0] == A && v.shape[1] == batch && v.shape[2] == n
                               : v.ndim == 2 && v.shape[0] == batch && v.shape[1] == n;
    if (!flat && !shared && !per_row) {
      std::string got = "(";
      for (int i = 0; i < v.ndim; ++i) got += (i ? ", " : "") + std::to_string(v.shape[i]);
      got += v.ndim == 1 ? ",)" : ")";
      throw py::value_error(
          "positions: expected shape " + (A > 1 ? shape_text({A, n}) + " or " : std::string()) + shape_text({A * n}) +
          (batch > 1
               ? " or " + (A > 1 ? shape_text({A, batch, n}) : shape_text({batch, n})) + " (one row per batch entry)"
               : std::string()) +
          ", got " + got);
    }
    p.real_base = v.ptr<double>();
    if (per_row && batch > 1) {
      p.rows = batch;
      if (A > 1) {  // (A, batch, n) regrouped as (batch, A, n), as for integers
        p.gathered_real.resize(size_t(batch * A * n));
        for (int64_t b = 0; b < batch; ++b)
          for (int64_t a = 0; a < A; ++a)
            std::copy(p.real_base + (a * batch + b) * n, p.real_base + (a * batch + b + 1) * n,
                      p.gathered_real.begin() + (b * A + a) * n);
        p.real_base = p.gathered_real.data();
      }
    }
    return p;
  }
  if (p.axes == 1) {
    const Positions one = positions_arg(obj, first, batch, n);
    p.v = one.v;
    p.rows = one.v.ndim == 2 ? one.v.shape[0] : 1;
    p.base = one.v.ptr<int64_t>();
    return p;
  }
  p.v = index_array(obj, "positions", Elem::I64, 1, 3);
  const View &v = p.v;
  const int64_t A = p.axes;
  const bool flat = v.ndim == 1 && v.shape[0] == A * n;
  const bool shared = v.ndim == 2 && v.shape[0] == A && v.shape[1] == n;
  const bool per_row = v.ndim == 3 && v.shape[0] == A && v.shape[1] == batch && v.shape[2] == n;
  if (!flat && !shared && !per_row) {
    std::string got = "(";
    for (int i = 0; i < v.ndim; ++i) got += (i ? ", " : "") + std::to_string(v.shape[i]);
    got += v.ndim == 1 ? ",)" : ")";
    throw py::value_error(
        "positions: expected shape " + shape_text({A, n}) + " (" + std::to_string(A) + " axes, " + std::to_string(n) +
        " tokens)" + (batch > 1 ? ", " + shape_text({A, batch, n}) + " (one row per batch entry)" : std::string()) +
        " or the flat axis-major " + shape_text({A * n}) + ", got " + got);
  }
  p.base = v.ptr<int64_t>();
  if (per_row && batch > 1) {  // each batch entry's A rows one after another, as one C call reads them
    p.rows = batch;
    p.gathered.resize(size_t(batch * A * n));
    const int64_t *src = v.ptr<int64_t>();
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t a = 0; a < A; ++a)
        std::copy(src + (a * batch + b) * n, src + (a * batch + b + 1) * n, p.gathered.begin() + (b * A + a) * n);
    p.base = p.gathered.data();
  }
  return p;
}

// ---- the cos/sin cache ------------------------------------------------------------------------------------

py::object rope_cache(const Rope &r, py::handle n_obj, int64_t first, py::handle positions, py::handle out,
                      bool twice) {
  const posenc_rope c = r.c_rope();
  const int64_t h = c.rotary_dim / 2;
  RopePositions p;
  p.first = first;
  int64_t n = -1;
  if (floating_positions(positions)) {  // real positions (posenc_rope_cache_real_f32)
    const View v = real_positions_view(positions);
    if (v.ndim > (c.axes > 1 ? 2 : 1))
      throw py::value_error("positions: real positions of rank " + std::to_string(v.ndim));
    n = c.axes > 1 ? (v.ndim == 2 ? v.shape[1] : v.shape[0] / c.axes) : v.shape[0];
    p = rope_positions(v.owner, first, c.axes, 1, n);
  } else if (!positions.is_none()) {
    // (n,) for one axis; (A, n) or the flat (A * n,) for A axes
    const View v = index_array(positions, "positions", Elem::I64, 1, c.axes > 1 ? 2 : 1);
    n = c.axes > 1 ? (v.ndim == 2 ? v.shape[1] : v.shape[0] / c.axes) : v.shape[0];
    p = rope_positions(v.owner, first, c.axes, 1, n);
  }
  if (!n_obj.is_none()) {
    const int64_t given = n_obj.cast<int64_t>();
    if (p.base && given != n)
      throw py::value_error("rope_cache: n = " + std::to_string(given) + " but " + std::to_string(n) + " positions" +
                            (c.axes > 1 ? " per axis" : ""));
    n = given;
  }
  // out: None, a (cos, sin) pair of (n, h) arrays, or one (n, rotary_dim) array [cos | sin] (vLLM); twice: a
  // pair of (n, rotary_dim) arrays whose rows hold their h values twice (HF's cat(freqs, freqs))
  const bool pair = py::isinstance<py::tuple>(out) || py::isinstance<py::list>(out);
  if (twice && !pair && !out.is_none())
    throw py::value_error("rope_cache: twice=True writes a (cos, sin) pair of (n, rotary_dim) arrays, not one array");
  if (n < 0 && !out.is_none()) {
    py::object first_out = pair ? py::object(out[py::int_(0)]) : py::reinterpret_borrow<py::object>(out);
    n = view_of(first_out, Want{"out", bit(Elem::F32), 2, 2, true}).shape[0];
  }
  if (n_obj.is_none() && positions.is_none() && out.is_none())
    throw py::type_error("rope_cache: give n, positions, or out=");
  check(posenc_rope_cache_f32(&c, nullptr, first, n < 0 ? n : 0, nullptr, h, nullptr, h));
  mul(n, c.rotary_dim);
  View cv, sv;
  py::object result;
  if (out.is_none() || pair) {
    const int64_t shape[2] = {n, twice ? c.rotary_dim : h};
    if (pair && py::len(out) != 2) throw py::value_error("out: expected (cos, sin)");
    const py::object none = py::none();
    cv = output(pair ? py::object(out[py::int_(0)]) : none, "out[0]", Elem::F32, 2, shape);
    sv = output(pair ? py::object(out[py::int_(1)]) : none, "out[1]", Elem::F32, 2, shape);
    result = py::make_tuple(cv.owner, sv.owner);
  } else {
    const int64_t shape[2] = {n, c.rotary_dim};
    cv = output(out, "out", Elem::F32, 2, shape);
    sv = cv;
    sv.data += h * 4;
    result = cv.owner;
  }
  const int64_t cs = row_stride(cv, 0, h), ss = row_stride(sv, 0, h);
  run_split({1, n, kGrain, rope_cycles(c.rotary_dim, 0, 4, c.axes)}, [&](int64_t, int64_t b, int64_t e) {
    const posenc_status st =
        p.real ? posenc_rope_cache_real_f32_part(&c, p.real_row(0), n, cv.ptr<float>(), cs, sv.ptr<float>(), ss, b, e)
               : posenc_rope_cache_f32_part(&c, p.row(0), first, n, cv.ptr<float>(), cs, sv.ptr<float>(), ss, b, e);
    if (st == POSENC_OK && twice)
      for (int64_t t = b; t < e; ++t) {
        float *cr = cv.ptr<float>() + t * cs, *sr = sv.ptr<float>() + t * ss;
        std::memcpy(cr + h, cr, sizeof(float) * size_t(h));
        std::memcpy(sr + h, sr, sizeof(float) * size_t(h));
      }
    return st;
  });
  return result;
}

// ---- rotations ----------------------------------------------------------------------------------------------

// x as (batch, tokens, heads, head_dim) from a view of rank 2 (tokens, head_dim), 3 (tokens, heads, head_dim)
// or 4 (batch, tokens, heads, head_dim).
struct Heads {
  View v;
  int64_t batch = 1, n = 0, heads = 0, dim = 0, batch_stride = 0, token_stride = 0, head_stride = 0;
};

// heads_first: rank 3 is (heads, tokens, head_dim) and rank 4 (batch, heads, tokens, head_dim), HF's.
Heads heads_of(py::handle obj, const char *name, int64_t rotary_dim, bool heads_first, bool write = true) {
  Heads x;
  x.v = view_of(obj, Want{name, kFloats, 2, 4, write});
  const View &v = x.v;
  const int b = v.ndim == 4 ? 1 : 0;  // axes before the token and head axes
  const int ta = v.ndim >= 3 && heads_first ? b + 1 : b, ha = v.ndim >= 3 ? (heads_first ? b : b + 1) : -1;
  x.batch = b ? v.shape[0] : 1;
  x.batch_stride = b ? v.stride[0] : 0;
  x.n = v.shape[ta];
  x.heads = ha >= 0 ? v.shape[ha] : 1;
  x.dim = v.shape[v.ndim - 1];
  x.token_stride = row_stride(v, ta, x.dim);
  x.head_stride = ha >= 0 ? row_stride(v, ha, x.dim) : x.dim;
  if (x.dim < rotary_dim)
    throw py::value_error(std::string(name) + ": head rows of " + std::to_string(x.dim) +
                          " elements, shorter than rotary_dim " + std::to_string(rotary_dim));
  return x;
}

// The C library refuses overlapping head rows within one call; the batch axis is this binding's, so the rows
// of different batch entries are checked here: disjoint extents, else every row start, sorted.
bool batches_overlap(const Heads *t, int count, int64_t r) {
  int64_t total = 0;
  for (int i = 0; i < count; ++i)
    if (t[i].batch > 1) total += t[i].batch;
  if (!total) return false;
  // sufficient: each tensor's batch blocks lie apart, and, when there are two, the blocks of one batch entry
  // lie before the next entry's blocks in both
  auto block = [](const Heads &x) {  // bytes from the first to past the last element of one batch entry
    return ((x.n - 1) * x.token_stride + (x.heads - 1) * x.head_stride + x.dim) * elem_size(x.v.elem);
  };
  bool simple = true;
  char *lo = nullptr, *hi = nullptr;
  for (int i = 0; i < count && simple; ++i) {
    if (!t[i].heads || !t[i].n) continue;
    if (block(t[i]) > t[i].batch_stride * elem_size(t[i].v.elem)) simple = false;
    char *a = t[i].v.data, *b = a + block(t[i]);
    lo = lo ? std::min(lo, a) : a;
    hi = hi ? std::max(hi, b) : b;
  }
  if (simple && count == 2 && t[1].heads && t[1].n && t[0].heads && t[0].n) {
    const int64_t bs0 = t[0].batch_stride * elem_size(t[0].v.elem), bs1 = t[1].batch_stride * elem_size(t[1].v.elem);
    simple = bs0 == bs1 && hi - lo <= bs0;  // a fused QKV buffer: q and k of one entry, then the next entry
    if (!simple) {                          // or q and k in buffers that do not meet at all
      const bool apart = t[0].v.data + (t[0].batch - 1) * bs0 + block(t[0]) <= t[1].v.data ||
                         t[1].v.data + (t[1].batch - 1) * bs1 + block(t[1]) <= t[0].v.data;
      simple = apart && block(t[0]) <= bs0 && block(t[1]) <= bs1;
    }
  }
  if (simple) return false;
  std::vector<const char *> starts;
  int64_t rows = 0;
  for (int i = 0; i < count; ++i) rows += t[i].batch * t[i].n * t[i].heads;
  if (rows > (int64_t(1) << 22)) throw py::value_error("q/k: a batch layout too large to check for overlapping rows");
  starts.reserve(size_t(rows));
  for (int i = 0; i < count; ++i) {
    const int64_t es = elem_size(t[i].v.elem);
    for (int64_t b = 0; b < t[i].batch; ++b)
      for (int64_t a = 0; a < t[i].n; ++a)
        for (int64_t j = 0; j < t[i].heads; ++j)
          starts.push_back(t[i].v.data + (b * t[i].batch_stride + a * t[i].token_stride + j * t[i].head_stride) * es);
  }
  std::sort(starts.begin(), starts.end());
  const int64_t len = r * elem_size(t[0].v.elem);
  for (size_t i = 1; i < starts.size(); ++i)
    if (starts[i] - starts[i - 1] < len) return true;
  return false;
}

// Tokens [begin, end) of batch entry b (posenc_rope_qk_*_part).
template <class T>
posenc_status rotate(const posenc_rope &c, const RopePositions &p, int64_t b, const Heads &q, const Heads *k,
                     int64_t begin, int64_t end) {
  T *qd = q.v.ptr<T>() + b * q.batch_stride;
  T *kd = k ? k->v.ptr<T>() + b * k->batch_stride : nullptr;
  const int64_t kh = k ? k->heads : 0, kts = k ? k->token_stride : 0, khs = k ? k->head_stride : 0;
  if (p.real) {
    const double *t = p.real_row(b);
    if constexpr (std::is_same_v<T, float>)
      return posenc_rope_qk_real_f32_part(&c, t, q.n, qd, q.heads, q.token_stride, q.head_stride, kd, kh, kts, khs,
                                          begin, end);
    else
      return q.v.elem == Elem::BF16 ? posenc_rope_qk_real_bf16_part(&c, t, q.n, qd, q.heads, q.token_stride,
                                                                    q.head_stride, kd, kh, kts, khs, begin, end)
                                    : posenc_rope_qk_real_f16_part(&c, t, q.n, qd, q.heads, q.token_stride,
                                                                   q.head_stride, kd, kh, kts, khs, begin, end);
  }
  if constexpr (std::is_same_v<T, float>) {
    return posenc_rope_qk_f32_part(&c, p.row(b), p.first, q.n, qd, q.heads, q.token_stride, q.head_stride, kd, kh, kts,
                                   khs, begin, end);
  } else {
    return q.v.elem == Elem::BF16 ? posenc_rope_qk_bf16_part(&c, p.row(b), p.first, q.n, qd, q.heads, q.token_stride,
                                                             q.head_stride, kd, kh, kts, khs, begin, end)
                                  : posenc_rope_qk_f16_part(&c, p.row(b), p.first, q.n, qd, q.heads, q.token_stride,
                                                            q.head_stride, kd, kh, kts, khs, begin, end);
  }
}

// q (and k) rotated in place by the spec c; `name` names a lone tensor in messages ("x", or "keys").
void apply(const posenc_rope &c, py::handle q_obj, py::handle k_obj, py::handle positions, int64_t first,
           bool heads_first, const char *name) {
  Heads t[2];
  t[0] = heads_of(q_obj, k_obj.is_none() ? name : "q", c.rotary_dim, heads_first);
  const bool has_k = !k_obj.is_none();
  if (has_k) {
    t[1] = heads_of(k_obj, "k", c.rotary_dim, heads_first);
    if (t[1].v.elem != t[0].v.elem) throw py::type_error("q and k must have the same dtype");
    if (t[1].v.ndim != t[0].v.ndim || t[1].batch != t[0].batch || t[1].n != t[0].n)
      throw py::value_error("q and k must have the same batch and token counts");
  }
  const RopePositions p = rope_positions(positions, first, c.axes, t[0].batch, t[0].n);
  if (t[0].batch > 1) {
    check(posenc_rope_cache_f32(&c, nullptr, first, 0, nullptr, 0, nullptr, 0));  // the spec first, as C does
    if (batches_overlap(t, has_k ? 2 : 1, c.rotary_dim)) check(POSENC_ERR_INVALID);
  }
  const int64_t elements = (t[0].heads + (has_k ? t[1].heads : 0)) * c.rotary_dim;  // rotated per token
  const double cycles = rope_cycles(c.rotary_dim, elements, double(elem_size(t[0].v.elem)), c.axes);
  run_split({t[0].batch, t[0].n, kGrain, cycles}, [&](int64_t b, int64_t begin, int64_t end) {
    return t[0].v.elem == Elem::F32 ? rotate<float>(c, p, b, t[0], has_k ? &t[1] : nullptr, begin, end)
                                    : rotate<uint16_t>(c, p, b, t[0], has_k ? &t[1] : nullptr, begin, end);
  });
}

// The rotation by full-width tables (posenc_rope_tables_*; docstring of rope_tables below).
py::object rope_tables(py::handle x_obj, py::handle cos_obj, py::handle sin_obj, const std::string &pairs,
                       bool heads_first, py::handle out_obj) {
  posenc_rope_pairs pr;
  if (posenc_rope_pairs_from_name(pairs.c_str(), &pr) != POSENC_OK)
    throw py::value_error("pairs: unknown pairing '" + pairs + "'");
  const bool in_place = out_obj.is_none() || out_obj.is(x_obj);
  const Heads x = heads_of(x_obj, "x", 2, heads_first, in_place);
  const Heads o = in_place ? x : heads_of(out_obj, "out", 2, heads_first);
  if (!in_place) {
    if (o.v.elem != x.v.elem) throw py::type_error("out must have x's dtype");
    if (o.v.ndim != x.v.ndim || o.batch != x.batch || o.n != x.n || o.heads != x.heads || o.dim != x.dim)
      throw py::value_error("out must have x's shape");
  }
  const int64_t d = x.dim;
  if (d % 2) throw py::value_error("x: head rows of " + std::to_string(d) + " elements, not an even count");
  auto table = [&](py::handle obj, const char *name, int64_t &row, int64_t &batch) {
    View v = view_of(obj, Want{name, bit(Elem::F32), 2, 3, false});
    const int b = v.ndim == 3 ? 1 : 0;
    if (v.shape[b] != x.n || v.shape[b + 1] != d || (b && v.shape[0] != x.batch && v.shape[0] != 1))
      throw py::value_error(std::string(name) + ": expected (tokens, d) = (" + std::to_string(x.n) + ", " +
                            std::to_string(d) + ") or (batch, tokens, d) float32 rows");
    row = v.shape[b] > 1 ? v.stride[b] : d;
    batch = b && v.shape[0] > 1 ? v.stride[0] : 0;
    return v;
  };
  int64_t cs = 0, ss = 0, cbs = 0, sbs = 0;
  const View cv = table(cos_obj, "cos", cs, cbs), sv = table(sin_obj, "sin", ss, sbs);
  if (x.batch > 1 && batches_overlap(&o, 1, d)) check(POSENC_ERR_INVALID);
  if (x.batch > 1) {  // the C calls check a batch entry's tables against its own rows; against the others' here
    const char *oa = o.v.data, *ob = oa + o.v.extent_bytes();
    for (const View *t : {&cv, &sv}) {
      const char *ta = t->data, *tb = ta + t->extent_bytes();
      if (ta < ob && oa < tb) check(POSENC_ERR_INVALID);
    }
  }
  if (!in_place && x.batch > 1) {  // batch entries are this binding's: the source apart from out, or the same rows
    const char *xa = x.v.data, *xb = xa + x.v.extent_bytes(), *oa = o.v.data, *ob = oa + o.v.extent_bytes();
    const bool same = xa == oa && x.batch_stride == o.batch_stride && x.token_stride == o.token_stride &&
                      x.head_stride == o.head_stride;
    if (!same && xa < ob && oa < xb) check(POSENC_ERR_INVALID);
  }
  const int64_t es = elem_size(x.v.elem);
  const double cycles = rope_cycles(d, x.heads * d, double(es), 1);
  run_split({x.batch, x.n, kGrain, cycles}, [&](int64_t b, int64_t begin, int64_t end) {
    const float *c = cv.ptr<float>() + b * cbs, *s = sv.ptr<float>() + b * sbs;
    const char *src = x.v.data + b * x.batch_stride * es;
    char *dst = o.v.data + b * o.batch_stride * es;
    if (x.v.elem == Elem::F32)
      return posenc_rope_tables_f32_part(d, pr, c, cs, s, ss, x.n, reinterpret_cast<const float *>(src), x.token_stride,
                                         x.head_stride, reinterpret_cast<float *>(dst), o.heads, o.token_stride,
                                         o.head_stride, begin, end);
    auto call = x.v.elem == Elem::BF16 ? posenc_rope_tables_bf16_part : posenc_rope_tables_f16_part;
    return call(d, pr, c, cs, s, ss, x.n, reinterpret_cast<const uint16_t *>(src), x.token_stride, x.head_stride,
                reinterpret_cast<uint16_t *>(dst), o.heads, o.token_stride, o.head_stride, begin, end);
  });
  return py::reinterpret_borrow<py::object>(in_place ? x_obj : out_obj);
}

// The context shift: the keys rotated by delta with attention scale 1 (docstring of rope_shift below).
py::object rope_shift(const Rope &r, py::handle keys, py::handle delta, bool heads_first) {
  posenc_rope c = r.c_rope();
  c.attention_scale = 1.0;
  py::module_ np = py::module_::import("numpy");
  py::object d = py::reinterpret_borrow<py::object>(delta);
  py::array a = np.attr("asarray")(delta);
  if (a.ndim() == 0) {  // one delta for every token (and every axis): llama.cpp's seq_add
    const char kind = a.dtype().kind();
    if (kind != 'i' && kind != 'u')
      throw py::type_error("delta: expected integers, got dtype " + py::str(a.dtype()).cast<std::string>());
    const Heads x = heads_of(keys, "keys", c.rotary_dim, heads_first);
    d = np.attr("full")(py::make_tuple(int64_t(c.axes) * x.n), a, "int64");
  }
  apply(c, keys, py::none(), d, 0, heads_first, "keys");
  return py::reinterpret_borrow<py::object>(keys);
}

// The same call `repeat` times without returning to Python: the kernel's own time per call, for the report's
// per-call overhead (the Python call's time minus this, in the same process).
double repeat_rope_qk(const Rope &r, py::handle q, py::handle k, py::handle positions, bool heads_first,
                      int64_t repeat) {
  const posenc_rope c = r.c_rope();
  apply(c, q, k, positions, 0, heads_first, "x");  // checks, and the first use of the spec
  Heads t[2];
  t[0] = heads_of(q, "q", c.rotary_dim, heads_first);
  if (!k.is_none()) t[1] = heads_of(k, "k", c.rotary_dim, heads_first);
  const RopePositions p = rope_positions(positions, 0, c.axes, t[0].batch, t[0].n);
  py::object clock = py::module_::import("time").attr("perf_counter");
  const double start = clock().cast<double>();
  run_batches(repeat, [&](int64_t) {
    return t[0].v.elem == Elem::F32 ? rotate<float>(c, p, 0, t[0], k.is_none() ? nullptr : &t[1], 0, t[0].n)
                                    : rotate<uint16_t>(c, p, 0, t[0], k.is_none() ? nullptr : &t[1], 0, t[0].n);
  });
  return (clock().cast<double>() - start) / double(repeat);
}

}  // namespace

void bind_rope(py::module_ &m) {
  using namespace pybind11::literals;
  py::enum_<posenc_rope_layout> layouts(
      m, "RopeLayout", "How rope_sections assigns pairs to axes (posenc_rope_layout; docs/api.md has the table).");
  for (const auto &[name, value] : enum_names(posenc_rope_layout_name)) {  // the library's list, upper-cased
    std::string upper = name;
    for (char &c : upper) c = char(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
    layouts.value(upper.c_str(), value);
  }

  py::class_<Rope> rope_class(m, "Rope",
                              R"(A RoPE spec (posenc_rope) that owns its explicit frequencies and axis map. Immutable.

Rope(rotary_dim, pairs="halves", base=10000.0, position_scale=1.0, freq=None, attention_scale=1.0, axes=1,
     axis=None)

f_i = base^(-2i/r), or the r/2 explicit doubles freq; angle p * position_scale * f_i in exact arithmetic;
cos and sin times attention_scale, each the float32 nearest the exact value. pairs: "halves" (HF
rotate_half, GPT-NeoX, vLLM is_neox_style) or "interleaved" (GPT-J, Meta's Llama, ggml mode 0).
Multi-axis RoPE (M-RoPE, 2-D vision RoPE): axes = A in 1..4 positions per token, and axis the r/2 integers
in [0, A) giving the axis whose position pair i rotates by (a_i = p[axis[i]] * position_scale * f_i);
rope_sections builds them from a model's section sizes. The calls then take positions of shape (A, n)
(axis-major), (A, batch, n), or the C ABI's flat (A * n,). An invalid spec raises posenc.InvalidArgument here.
Model presets: Rope.llama2(), llama3_1(), mistral_7b_v02(), qwen2(yarn=False), phi3_mini_128k(seq_len),
deepseek_v2(), deepseek_v3(), deepseek_v4(), deepseek_v4_compress(), glm5(), glm5_indexer(), gpt_neox_20b(),
gpt_j_6b(), minimax_m3(); multi-axis: qwen2_vl(), qwen2_5_vl(),
qwen3_vl(), glm4v() (3 axes: temporal, height, width), qwen2_vl_vision(), qwen2_5_vl_vision(), qwen3_vl_vision(),
pixtral(), llama4_vision() (2 axes).)");
  rope_class
      .def(py::init(&make_rope), "rotary_dim"_a, "pairs"_a = "halves", "base"_a = 10000.0, "position_scale"_a = 1.0,
           "freq"_a = py::none(), "attention_scale"_a = 1.0, "axes"_a = 1, "axis"_a = py::none())
      .def_property_readonly("rotary_dim", &Rope::rotary_dim)
      .def_property_readonly("pairs", [](const Rope &r) { return r.c_rope().pairs; })
      .def_property_readonly("base", &Rope::base)
      .def_property_readonly("position_scale", [](const Rope &r) { return r.c_rope().position_scale; })
      .def_property_readonly("attention_scale", [](const Rope &r) { return r.c_rope().attention_scale; })
      .def_property_readonly(
          "freq",
          [](const Rope &r) -> py::object {
            const posenc_rope &c = r.c_rope();
            if (!c.freq) return py::none();
            py::array_t<double> a(c.rotary_dim / 2);
            std::copy(c.freq, c.freq + c.rotary_dim / 2, a.mutable_data());
            return py::object(std::move(a));
          },
          "The explicit frequencies (a new float64 array), or None when f_i = base^(-2i/r).")
      .def_property_readonly(
          "axes", [](const Rope &r) { return r.axes(); }, "Positions per token: 1, or 2 to 4 for multi-axis RoPE.")
      .def_property_readonly(
          "axis",
          [](const Rope &r) -> py::object {
            const posenc::array_view<const uint8_t> m = r.axis();
            if (r.axes() == 1 || !m.size()) return py::none();
            py::array_t<uint8_t> a(py::ssize_t(m.size()));
            std::copy(m.begin(), m.end(), a.mutable_data());
            return py::object(std::move(a));
          },
          "The axis of each pair (a new uint8 array of rotary_dim / 2 entries), or None for one axis.")
      .def(
          "with_pairs", [](const Rope &r, py::handle p) { return r.with_pairs(posenc::rope_pairs(pairs_arg(p))); },
          "pairs"_a, "The same spec with other pairs (a checkpoint in the other layout).")
      .def(
          "with_position_scale",
          [](const Rope &r, double s) {
            Rope t = r.with_position_scale(s);
            validate(t);
            return t;
          },
          "position_scale"_a, "The same spec with another position_scale (its negative: the inverse rotation).")
      .def(
          "inverse", [](const Rope &r) { return r.inverse(); },
          R"(inverse() -> Rope

posenc_rope_inverse: the spec of the inverse rotation, position_scale negated (exactly). At position p it
writes the bytes of this spec at -p: the correctly rounded m cos and -m sin of the same angle, in every call.
DeepSeek-V4 rotates its attention output so (transformers' apply_rotary_pos_emb(o, cos, -sin), vLLM's
inverse=True); ggml's ROPE_BACK is the same. rope.inverse().inverse() == rope.)")
      .def(
          "with_attention_scale",
          [](const Rope &r, double s) {
            Rope t = r.with_attention_scale(s);
            validate(t);
            return t;
          },
          "attention_scale"_a, "The same spec with another attention scale.")
      .def(py::self == py::self)
      .def(py::self != py::self)
      .def("__repr__",
           [](const Rope &r) {
             const posenc_rope &c = r.c_rope();
             std::string s = "posenc.Rope(rotary_dim=" + std::to_string(c.rotary_dim) +
                             (c.pairs == POSENC_ROPE_HALVES ? ", pairs='halves'" : ", pairs='interleaved'");
             s += ", base=" + py::repr(py::float_(c.base)).cast<std::string>();
             if (c.position_scale != 1.0)
               s += ", position_scale=" + py::repr(py::float_(c.position_scale)).cast<std::string>();
             if (c.freq) s += ", freq=[" + std::to_string(c.rotary_dim / 2) + " values]";
             if (c.attention_scale != 1.0)
               s += ", attention_scale=" + py::repr(py::float_(c.attention_scale)).cast<std::string>();
             if (c.axes != 1)
               s += ", axes=" + std::to_string(c.axes) + ", axis=[" + std::to_string(c.rotary_dim / 2) + " values]";
             return s + ")";
           })
      .def_static("llama2", &Rope::llama2, "rotary_dim"_a = 128, "Llama 2: base 1e4, no scaling.")
      .def_static("llama3_1", &Rope::llama3_1, "rotary_dim"_a = 128,
                  "Llama 3.1: base 5e5, llama3 scaling (8, 1, 4, 8192).")
      .def_static("mistral_7b_v02", &Rope::mistral_7b_v02, "rotary_dim"_a = 128, "Mistral 7B v0.2: base 1e6.")
      .def_static("qwen2", &Rope::qwen2, "rotary_dim"_a = 128, "yarn"_a = false,
                  "Qwen2: base 1e6; yarn=True: the model cards' yarn factor 4, original 32768.")
      .def_static("phi3_mini_128k", &Rope::phi3_mini_128k, "seq_len"_a,
                  "Phi-3-mini-128k: LongRoPE, r = 96; the long factors when seq_len > 4096.");
  // the presets without arguments: name, maker, docstring
  struct Preset {
    const char *name;
    Rope (*make)();
    const char *doc;
  };
  static const Preset presets[] = {
      {"deepseek_v2", &Rope::deepseek_v2, "DeepSeek-V2: yarn factor 40, r = 64, interleaved."},
      {"deepseek_v3", &Rope::deepseek_v3, "DeepSeek-V3 / R1: as V2 with mscale 1."},
      {"gpt_neox_20b", &Rope::gpt_neox_20b, "GPT-NeoX-20B: r = 24 of head 96, halves."},
      {"gpt_j_6b", &Rope::gpt_j_6b, "GPT-J 6B: r = 64 of head 256, interleaved."},
      {"deepseek_v4", &Rope::deepseek_v4,
       "DeepSeek-V4 sliding layers: r = 64 of head 512, base 1e4, interleaved (GPT-J)."},
      {"deepseek_v4_compress", &Rope::deepseek_v4_compress,
       "DeepSeek-V4 compressed layers: as deepseek_v4, base 1.6e5, yarn factor 16 from 65536, attention 1."},
      {"glm5", &Rope::glm5, "GLM-5 MLA: r = 64, base 1e6, interleaved (rope_interleave)."},
      {"glm5_indexer", &Rope::glm5_indexer, "GLM-5 DSA indexer: r = 64 of 128, base 1e6, halves (transformers)."},
      {"minimax_m3", &Rope::minimax_m3, "MiniMax-M3 text: r = 64 of head 128 (partial), halves, base 5e6."},
      {"qwen2_vl", &Rope::qwen2_vl,
       "Qwen2-VL text M-RoPE: r = 128, base 1e6, chunked mrope_section [16, 24, 24] (temporal, height, width)."},
      {"qwen2_5_vl", &Rope::qwen2_5_vl, "Qwen2.5-VL text M-RoPE: as Qwen2-VL."},
      {"qwen3_vl", &Rope::qwen3_vl, "Qwen3-VL text M-RoPE: r = 128, base 5e6, interleaved mrope_section [24, 20, 20]."},
      {"glm4v", &Rope::glm4v,
       "GLM-4V / GLM-4.1V: r = 64 of head 128, interleaved pairs, base 1e4, chunked [8, 12, 12]."},
      {"qwen2_vl_vision", &Rope::qwen2_vl_vision,
       "The Qwen2-VL vision tower: head 80, 2-D (row, column), base 1e4, vision sections [20, 20]."},
      {"qwen2_5_vl_vision", &Rope::qwen2_5_vl_vision, "The Qwen2.5-VL vision tower: as Qwen2-VL's."},
      {"qwen3_vl_vision", &Rope::qwen3_vl_vision,
       "The Qwen3-VL vision tower: head 72, 2-D (row, column), vision sections [18, 18]."},
      {"pixtral", &Rope::pixtral,
       "Pixtral's vision encoder: head 64, 2-D (row, column), strided [16, 16]; HF's halves."},
      {"llama4_vision", &Rope::llama4_vision,
       "Llama 4's vision encoder: head 88, 2-D (column x + 1, row y + 1; the class token 0), vision [22, 22], "
       "interleaved pairs."},
  };
  for (const Preset &p : presets) rope_class.def_static(p.name, p.make, p.doc);
  rope_class.def(py::pickle(
      [](const Rope &r) {
        const posenc_rope &c = r.c_rope();
        py::object f = py::none(), a = py::none();
        if (c.freq) f = py::cast(std::vector<double>(c.freq, c.freq + c.rotary_dim / 2));
        if (c.axes != 1 && c.axis) a = py::cast(std::vector<int>(c.axis, c.axis + c.rotary_dim / 2));
        return py::make_tuple(c.rotary_dim, int(c.pairs), c.base, c.position_scale, f, c.attention_scale, c.axes, a);
      },
      [](const py::tuple &t) {
        // posenc 0.2's six fields (one axis), or eight
        const bool axes = py::len(t) >= 8;
        const py::object axis = axes ? py::object(t[7]) : py::object(py::none());
        return make_rope(t[0].cast<int64_t>(), t[1], t[2].cast<double>(), t[3].cast<double>(), t[4],
                         t[5].cast<double>(), axes ? t[6].cast<int64_t>() : 1, axis);
      }));

  m.def(
      "rope_types",
      [] {
        py::dict out;
        for (int t = 0; posenc_rope_type_name(posenc_rope_type(t)); ++t) {
          const posenc_rope_type type = posenc_rope_type(t);
          py::dict row;
          row["summary"] = posenc_rope_type_keys(type, POSENC_ROPE_KEYS_SUMMARY);
          row["fields"] = keys_of(type, POSENC_ROPE_KEYS_FIELDS);
          row["accepted"] = keys_of(type, POSENC_ROPE_KEYS_ACCEPTED);
          row["transformers"] = posenc_rope_type_keys(type, POSENC_ROPE_KEYS_TRANSFORMERS)
                                    ? py::object(py::cast(keys_of(type, POSENC_ROPE_KEYS_TRANSFORMERS)))
                                    : py::object(py::none());
          row["elsewhere"] = keys_of(type, POSENC_ROPE_KEYS_ELSEWHERE);
          row["aliases"] = keys_of(type, POSENC_ROPE_KEYS_ALIASES);
          out[posenc_rope_type_name(type)] = row;
        }
        return out;
      },
      R"(rope_types() -> dict

Each rope type's one definition (posenc_rope_type_keys; docs/rope.md, "One row per rope type"), by name: "summary"
(the formula in one line), "fields" (the scaling fields the scheme reads, by their dict keys), "accepted" (further
keys rope_init takes for it), "transformers" (the keys transformers' init function reads; None for vLLM's types),
"elsewhere" (keys another runtime reads for the type and posenc refuses by name), "aliases" (other names of it).)");
  m.def("rope_init", &rope_init, "rotary_dim"_a, "base"_a = 10000.0, "scaling"_a = py::none(), py::kw_only(),
        "pairs"_a = "halves", "max_position_embeddings"_a = py::none(),
        "original_max_position_embeddings"_a = py::none(), "seq_len"_a = py::none(),
        R"(rope_init(rotary_dim, base=10000.0, scaling=None, *, pairs="halves", max_position_embeddings=None,
          original_max_position_embeddings=None, seq_len=None) -> Rope

posenc_rope_init: the Rope of an HF rope_type, each frequency and the attention factor the correctly rounded
double of the formula's real value. scaling: HF's rope_scaling / rope_parameters dict ("rope_type" or the
legacy "type": default, linear, dynamic, yarn, llama3, longrope (or "su"), proportional, and vLLM's ntk,
deepseek_yarn (or deepseek_llama_scaling), grok1 (with extra_method yarn_log, theta_scale, or yarn and
yarn_linear: deepseek_yarn's frequencies with attention 1; yarn_log and theta_scale also by those names; the
dict's max_position_embeddings is Grok's original length), telechat3 (or telechat3-yarn), xdrope (dynamic alpha;
the caller applies xdrope_section), openpangu (default frequencies; needs mrope_section and a true
mrope_interleaved, which the caller applies with rope_sections(rope, mrope_section, "balanced")): docs/rope.md; factor,
original_max_position_embeddings, beta_fast, beta_slow, mscale, mscale_all_dim, truncate (default True),
low_freq_factor, high_freq_factor, short_factor, long_factor, attention_factor, dynamic's "alpha" (vLLM's
NTK alpha of HunYuan: base * alpha^(r/(r-2)), factor and lengths then unread), and for proportional
partial_rotary_factor: rotary_dim is then the whole head, of which int(p * rotary_dim // 2) pairs rotate).
rope_theta, partial_rotary_factor, mrope_section, mrope_interleaved, the lengths and truncate may be in any
dict (the caller applies them). A key another runtime reads for the same rope_type to change the frequencies
(vLLM's yarn "extrapolation_factor" / "attn_factor" / "apply_yarn_scaling") is a ValueError naming it;
any other key a UserWarning, as HF warns. longrope reads vLLM's "short_mscale" / "long_mscale".
The keywords give what HF reads from the model config outside the dict: max_position_embeddings (dynamic's
reference length; yarn/longrope derive a missing factor from it as HF v5 does), the original length when the
dict has none (Phi-3), and the current seq_len (dynamic, longrope; default: dynamic's reference length, and 0
for longrope, i.e. the short factors).)");
  m.def("rope_sections", &rope_sections, "rope"_a, "sections"_a, "layout"_a = "chunked",
        R"(rope_sections(rope, sections, layout="chunked") -> Rope

posenc_rope_sections: a new Rope whose pairs are assigned to axes from up to four section sizes, counted in
pairs (HF's mrope_section; a vision tower's [r/4, r/4]). With S the sum, pair i is in sector j = i mod S (a sum
below r/2 repeats, ggml's rule). layout (a posenc.RopeLayout or its name):
  "chunked"       sectors [0, s0) on axis 0, [s0, s0+s1) on axis 1, ...: Qwen2-VL / Qwen2.5-VL, GLM-4V, ggml MROPE
  "interleaved"   sector j on axis 1 if j%3 == 1 and j < 3 s1, on axis 2 if j%3 == 2 and j < 3 s2, else 0: Qwen3-VL
  "vision"        chunked, the frequency index restarting in each section (base^(-2k/h)): ViT 2-D RoPE
  "strided"       chunked, section a taking every A-th frequency from a: Pixtral
  "interleaved_4" as interleaved, but axis 0 only for j%3 == 0 and j < 3 s0, the rest on axis 3: ggml IMROPE
  "alternating"   sectors j < 2 s1 on axis 1 (even j) and 2 (odd j), s1 == s2, then s0 on axis 0: ERNIE-4.5-VL
                  (its mrope_section [h, w, t] is sections [t, h, w])
  "per_axis"      chunked, section a at its own width's frequencies base^(-k/s_a): Flux, Wan, HunyuanVideo,
                  CogVideoX, Qwen-Image (diffusers' get_1d_rotary_pos_embed per axis)
  "balanced"      each axis spread evenly, the least-placed share first, never twice running while another is
                  left, ties to the lower axis; three sizes [t, h, w] keep the last pair for t, two [h, w] take
                  position rows 0 and 1: openPangu-VL (vLLM's MRotaryEmbeddingInterleaved, its mrope_section)
A is 3 for interleaved and alternating, 4 for interleaved_4, 3 for balanced with three sizes and 2 with two,
else one more than the last non-zero section.
"vision", "strided" and "per_axis" replace the frequencies (each the double nearest the real value, from
rope.base); the others keep rope's (a scaled spec keeps its scaled frequencies). Every other field is kept.
posenc.InvalidArgument for a negative section, a sum of 0 or past r/2, an unknown layout value, alternating's
s1 != s2 or a fourth section, per_axis's lcm of the sections past 2^40, balanced's fourth section or three
sizes without t; ValueError for balanced's [t, h, 0] (vLLM's three sizes, which posenc would read as two).)");
  m.def("_repeat_rope_qk", &repeat_rope_qk, "rope"_a, "q"_a, "k"_a, "positions"_a, "heads_first"_a, "repeat"_a,
        "Benchmark helper: seconds per posenc_rope_qk_* call, the call repeated without Python in between "
        "(batch 1). Rotates q and k repeat + 1 times.");
  m.def("rope_cache", &rope_cache, "rope"_a, "n"_a = py::none(), "first"_a = 0, py::kw_only(),
        "positions"_a = py::none(), "out"_a = py::none(), "twice"_a = false,
        R"(rope_cache(rope, n=None, first=0, *, positions=None, out=None, twice=False) -> (cos, sin) or out

posenc_rope_cache_f32: for positions first .. first+n-1 (or the explicit positions, posenc.PAD giving zeros)
the rows of cos_i and sin_i (rotary_dim / 2 each), float32. For a multi-axis rope (A = rope.axes) the explicit
positions are (A, n), or the flat axis-major (A * n,), and pair i of row t takes positions[axis[i], t]; a run
gives every axis the position first + t. out: None (two new (n, r/2) arrays), a (cos, sin) pair of (n, r/2)
arrays (ONNX Runtime's cos_cache / sin_cache), or one (n, r) array that receives cos in its first half and sin
in the second (vLLM's cos_sin_cache), which is returned. Floating positions (a float64 / float32 / float16 /
bfloat16 array or CPU tensor) are real-valued positions (posenc_rope_cache_real_f32: t * position_scale * f_i
exactly, each value correctly rounded; an integer-valued one gives the integer position's bytes). twice=True:
cos and sin are (n, rotary_dim), each row its r/2 values twice (HF's cat(freqs, freqs)), into out=(cos, sin)
or two new arrays.)");
  m.def(
      "rope",
      [](const Rope &r, py::handle x, py::handle positions, int64_t first, bool heads_first) {
        apply(r.c_rope(), x, py::none(), positions, first, heads_first, "x");
        return py::reinterpret_borrow<py::object>(x);
      },
      "rope"_a, "x"_a, py::kw_only(), "positions"_a = py::none(), "first"_a = 0, "heads_first"_a = false,
      R"(rope(rope, x, *, positions=None, first=0, heads_first=False) -> x

Rotates x in place (posenc_rope_f32 / _bf16 / _f16 by dtype; bfloat16 as uint16 bits, or torch.bfloat16) and
returns it. x: (tokens, head_dim), (tokens, heads, head_dim) or (batch, tokens, heads, head_dim), any
non-negative strides with a contiguous last axis. heads_first=True reads rank 3 as (heads, tokens, head_dim)
and rank 4 as (batch, heads, tokens, head_dim), HF's [batch, heads, seq, head_dim]. Only the first rotary_dim elements of each
head row change. positions: None (first, first+1, ...), (tokens,), or (batch, tokens); for a multi-axis rope
(A = rope.axes) (A, tokens) or the flat axis-major (A * tokens,), shared by the batch, or (A, batch, tokens)
(HF's position_ids). posenc.PAD (on axis 0) leaves the token untouched. Floating positions (float arrays or
tensors, same shapes) are real-valued positions (posenc_rope_*_real: LTX-Video's midpoints, CogVideoX's
linspace grids), correctly rounded as integer ones are. A shape that does not fit raises
ValueError naming it; overlapping head rows raise posenc.InvalidArgument; nothing is written on error.)");
  m.def(
      "rope_qk",
      [](const Rope &r, py::handle q, py::handle k, py::handle positions, int64_t first, bool heads_first) {
        apply(r.c_rope(), q, k, positions, first, heads_first, "x");
        return py::make_tuple(q, k);
      },
      "rope"_a, "q"_a, "k"_a, py::kw_only(), "positions"_a = py::none(), "first"_a = 0, "heads_first"_a = false,
      R"(rope_qk(rope, q, k, *, positions=None, first=0, heads_first=False) -> (q, k)

q and k of the same tokens rotated in place in one pass (posenc_rope_qk_*), cos/sin made once per token for
the heads of both (GQA: different head counts). Shapes and positions as in rope(), same dtype, batch and token
counts; k may be None. Views of one fused QKV buffer are fine; q and k rows must not overlap.)");
  m.def("rope_tables", &rope_tables, "x"_a, "cos"_a, "sin"_a, py::kw_only(), "pairs"_a = "interleaved",
        "heads_first"_a = false, "out"_a = py::none(),
        R"(rope_tables(x, cos, sin, *, pairs="interleaved", heads_first=False, out=None) -> out (or x)

The rotation by full-width tables (posenc_rope_tables_*; diffusers' apply_rotary_emb): element j of every head
row of token t becomes the correctly rounded float32 of x_j cos[t, j] + x'_j sin[t, j] (then nearest-even
bfloat16 / float16 for those dtypes), x' the partner of j's pair with the pair's sign (-v for the first element
u, +u for the second v): pairs "interleaved" (elements 2i, 2i + 1; diffusers' use_real_unbind_dim=-1) or
"halves" (i, i + d/2; unbind_dim=-2). x: (tokens, d), (tokens, heads, d) or (batch, tokens, heads, d) as rope()
takes it (heads_first for (batch, heads, tokens, d)), float32 / bfloat16 / float16, every element rotated.
cos, sin: float32 (tokens, d), or (batch, tokens, d) with batch 1 or x's; rows may repeat (stride 0). out:
None rotates x in place; else an array of x's shape and dtype that receives the rows (x is only read). Tables
that overlap the output, or an output that partly overlaps x, raise posenc.InvalidArgument; nothing is written
on error.)");
  m.def("rope_shift", &rope_shift, "rope"_a, "keys"_a, "delta"_a, py::kw_only(), "heads_first"_a = false,
        R"(rope_shift(rope, keys, delta, *, heads_first=False) -> keys

The context shift (llama.cpp's KV-cache shift): keys cached after their rotation at positions p are moved to
p + delta, in place, by rotating them once more by delta, with attention scale 1 whatever rope's is. The angle
is linear in the position, so R(p + d) = R(d) R(p) pair by pair (per axis for a multi-axis rope: a pair turns
by the delta of its own axis). The scale is forced to 1 because a cached key already carries the scale m of its
first rotation (k' = m R(p) k): rotating it with m again would give m^2 R(p + d) k. The frequencies, pairs,
position_scale and axis map must be those the keys were rotated with (a dynamic-NTK or longrope spec of another
length is another rotation). keys: any layout rope() takes (heads_first for HF's [batch, kv_heads, seq, dim]),
float32 / bfloat16 / float16. delta: one integer for every token (and axis), or per token as rope()'s
positions ((tokens,), (batch, tokens); (A, tokens), (A, batch, tokens)); posenc.PAD leaves a token as it is.

Error: a rotation by float32 cos/sin c, s (each within 2^-25 of cos / sin, |cos|, |sin| <= 1) of a pair
v = (x, y), each element rounded once to a format of unit roundoff u (2^-24 float32, 2^-8 bfloat16, 2^-11
float16), is within eps |v| of the exact rotation, eps = 2^-24.5 + sqrt(2) u (1 + 2^-24.5): the cos/sin error as
a 2x2 matrix [[ec, -es], [es, ec]] has norm sqrt(ec^2 + es^2) <= 2^-24.5, and each output element is rounded
with an error of at most u |R v| (also a subnormal one, for |v| at least the format's smallest normal value),
sqrt(2) u |R v| for the pair, |R v| <= (1 + 2^-24.5) |v|. So shifting by d then by -d gives each pair back
within (2 + eps) eps |v|, and rotating k at p (scale 1) then shifting by d gives the rotation of k at p + d
within (3 + eps) eps |k|: three rotations, each within eps of the exact one. With an attention scale m the two
rotations with m have m |v| in place of |v| and cos/sin errors of half an ulp of values up to m.)");
}

}  // namespace pyposenc
