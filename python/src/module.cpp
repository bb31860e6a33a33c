// The module posenc._posenc: enums, posenc.Spec, errors, ISA control and version; the kernels' bindings
// are in tables.cpp and rope.cpp.
#include <pybind11/operators.h>
#include <pybind11/pybind11.h>

#include <cctype>
#include <string>
#include <utility>
#include <vector>

#include "args.hpp"
#include "arrays.hpp"
#include "posenc/posenc.h"
#include "posenc/posenc.hpp"

namespace pyposenc {

void bind_tables(py::module_ &m);
void bind_rope(py::module_ &m);
void bind_timesteps(py::module_ &m);
void bind_threads(py::module_ &m);

namespace {

posenc_layout layout_arg(py::handle obj) {
  return enum_arg<posenc_layout>(obj, "layout",
                                 {{"interleaved", POSENC_INTERLEAVED},
                                  {"sin_cos_halves", POSENC_SIN_COS_HALVES},
                                  {"cos_sin_halves", POSENC_COS_SIN_HALVES}});
}

// Every path the C header names, by its posenc_isa_name ("scalar", "avx2", ...): posenc.h's enumerators run
// from 0 to POSENC_ISA_COUNT, so a new path appears here (and in the Isa enum below) without an edit.
std::vector<std::pair<std::string, posenc_isa>> isa_names() {
  std::vector<std::pair<std::string, posenc_isa>> v;
  for (int i = 0; i < POSENC_ISA_COUNT; ++i) v.emplace_back(posenc_isa_name(posenc_isa(i)), posenc_isa(i));
  return v;
}

posenc_isa isa_arg(py::handle obj) {
  static const std::vector<std::pair<std::string, posenc_isa>> names = isa_names();
  return enum_arg_of<posenc_isa>(obj, "isa", names);
}

posenc_spec make_spec(int64_t d_model, py::handle layout, double base, double freq_denominator, double position_scale) {
  posenc_spec s = posenc_spec_default(d_model);
  s.layout = layout_arg(layout);
  s.base = base;
  s.freq_denominator = freq_denominator;
  s.position_scale = position_scale;
  check(posenc_table_f32(&s, 0, 0, nullptr, d_model));  // an invalid spec raises where it is made
  return s;
}

std::string repr(const posenc_spec &s) {
  static const char *names[] = {"interleaved", "sin_cos_halves", "cos_sin_halves"};
  const int l = int(s.layout);
  return "posenc.Spec(d_model=" + std::to_string(s.d_model) + ", layout='" + (l >= 0 && l < 3 ? names[l] : "?") +
         "', base=" + py::repr(py::float_(s.base)).cast<std::string>() +
         ", freq_denominator=" + py::repr(py::float_(s.freq_denominator)).cast<std::string>() +
         ", position_scale=" + py::repr(py::float_(s.position_scale)).cast<std::string>() + ")";
}

bool operator==(const posenc_spec &a, const posenc_spec &b) {
  return a.d_model == b.d_model && a.layout == b.layout && a.base == b.base &&
         a.freq_denominator == b.freq_denominator && a.position_scale == b.position_scale;
}

void bind_spec(py::module_ &m) {
  using namespace pybind11::literals;
  using posenc::spec;
  py::class_<posenc_spec>(m, "Spec", R"(A sinusoidal encoding (posenc_spec). Immutable; equal fields encode identically.

Spec(d_model, layout="interleaved", base=10000.0, freq_denominator=0.0, position_scale=1.0)

Pair i of h = d_model // 2: w_i = base^(-i / D) (D = freq_denominator, or h when 0), angle
p * position_scale * w_i in exact arithmetic; the row holds sin and cos in the layout's order
("interleaved", "sin_cos_halves", "cos_sin_halves"); an odd d_model ends with one 0.0. An invalid spec raises
posenc.InvalidArgument here. Framework conventions: Spec.vaswani(d), marian(d), fairseq(d),
tensor2tensor(d, min_timescale, max_timescale), ctranslate2(d), ggml_timestep(d, max_period),
diffusers(d, flip_sin_to_cos, downscale_freq_shift, scale, max_period), dit(d, max_period),
flux(d, max_period, time_factor), whisper(channels, max_timescale).)")
      .def(py::init(&make_spec), "d_model"_a, "layout"_a = "interleaved", "base"_a = 10000.0,
           "freq_denominator"_a = 0.0, "position_scale"_a = 1.0)
      .def_property_readonly("d_model", [](const posenc_spec &s) { return s.d_model; })
      .def_property_readonly("layout", [](const posenc_spec &s) { return s.layout; })
      .def_property_readonly("base", [](const posenc_spec &s) { return s.base; })
      .def_property_readonly("freq_denominator", [](const posenc_spec &s) { return s.freq_denominator; })
      .def_property_readonly("position_scale", [](const posenc_spec &s) { return s.position_scale; })
      .def("__repr__", &repr)
      .def("__eq__", [](const posenc_spec &a, const posenc_spec &b) { return a == b; })
      .def("__ne__", [](const posenc_spec &a, const posenc_spec &b) { return !(a == b); })
      .def("__hash__",
           [](const posenc_spec &s) {
             return py::hash(py::make_tuple(s.d_model, int(s.layout), s.base, s.freq_denominator, s.position_scale));
           })
      .def(py::pickle(
          [](const posenc_spec &s) {
            return py::make_tuple(s.d_model, int(s.layout), s.base, s.freq_denominator, s.position_scale);
          },
          [](const py::tuple &t) {
            return make_spec(t[0].cast<int64_t>(), t[1], t[2].cast<double>(), t[3].cast<double>(), t[4].cast<double>());
          }))
      .def_static(
          "vaswani", [](int64_t d) { return spec::vaswani(d).c_spec(); }, "d_model"_a,
          "Vaswani et al., the PyTorch tutorial: interleaved, base 1e4, D = h; positions from 0.")
      .def_static(
          "marian", [](int64_t d) { return spec::marian(d).c_spec(); }, "d_model"_a,
          "HF MarianSinusoidalPositionalEmbedding: Vaswani's frequencies as sin|cos halves.")
      .def_static(
          "fairseq", [](int64_t d) { return spec::fairseq(d).c_spec(); }, "d_model"_a,
          "fairseq SinusoidalPositionalEmbedding: halves, D = h - 1 (positions padding_idx + 1 + i).")
      .def_static(
          "tensor2tensor", [](int64_t d, double lo, double hi) { return spec::tensor2tensor(d, lo, hi).c_spec(); },
          "d_model"_a, "min_timescale"_a = 1.0, "max_timescale"_a = 1.0e4,
          "tensor2tensor get_timing_signal_1d: halves, base max/min, D = max(h - 1, 1), positions times min.")
      .def_static(
          "ctranslate2", [](int64_t d) { return spec::ctranslate2(d).c_spec(); }, "d_model"_a,
          "CTranslate2 / OpenNMT-tf: halves, D = h - 1; their positions start at 1.")
      .def_static(
          "ggml_timestep", [](int64_t d, double period) { return spec::ggml_timestep(d, period).c_spec(); },
          "d_model"_a, "max_period"_a = 10000.0, "ggml timestep_embedding: cos first, base max_period, D = h.")
      .def_static(
          "diffusers",
          [](int64_t d, bool flip, double shift, double scale, double period) {
            return spec::diffusers(d, flip, shift, scale, period).c_spec();
          },
          "d_model"_a, "flip_sin_to_cos"_a = false, "downscale_freq_shift"_a = 1.0, "scale"_a = 1.0,
          "max_period"_a = 10000.0, "diffusers get_timestep_embedding.")
      .def_static(
          "dit", [](int64_t d, double period) { return spec::dit(d, period).c_spec(); }, "d_model"_a,
          "max_period"_a = 10000.0,
          "latent diffusion / DiT timestep_embedding: cos first, base max_period, D = h (ggml_timestep's fields).")
      .def_static(
          "flux", [](int64_t d, double period, double factor) { return spec::flux(d, period, factor).c_spec(); },
          "d_model"_a, "max_period"_a = 10000.0, "time_factor"_a = 1000.0,
          "Flux timestep_embedding: DiT's spec with position_scale = time_factor.")
      .def_static(
          "whisper", [](int64_t d, double timescale) { return spec::whisper(d, timescale).c_spec(); }, "channels"_a,
          "max_timescale"_a = 10000.0,
          "Whisper sinusoids (even channels): sin|cos halves, base max_timescale, D = h - 1; positions from 0.");
}

}  // namespace

}  // namespace pyposenc

PYBIND11_MODULE(_posenc, m) {
  using namespace pyposenc;
  using namespace pybind11::literals;
  m.doc() = "posenc: exact sinusoidal positional encodings, the fused embedding-add, and rotary embeddings.";

  py::enum_<posenc_status>(m, "Status", "The C ABI's status codes (posenc_status).")
      .value("OK", POSENC_OK)
      .value("ERR_NULL", POSENC_ERR_NULL)
      .value("ERR_INVALID", POSENC_ERR_INVALID)
      .value("ERR_OUT_OF_RANGE", POSENC_ERR_OUT_OF_RANGE)
      .value("ERR_OVERFLOW", POSENC_ERR_OVERFLOW)
      .value("ERR_UNSUPPORTED", POSENC_ERR_UNSUPPORTED)
      .value("ERR_NO_MEMORY", POSENC_ERR_NO_MEMORY);
  py::enum_<posenc_layout>(m, "Layout", "Where sin and cos of pair i go in a row (posenc_layout).")
      .value("INTERLEAVED", POSENC_INTERLEAVED)
      .value("SIN_COS_HALVES", POSENC_SIN_COS_HALVES)
      .value("COS_SIN_HALVES", POSENC_COS_SIN_HALVES);
  py::enum_<posenc_rope_pairs>(m, "RopePairs", "Which two elements of a head row rotate together.")
      .value("HALVES", POSENC_ROPE_HALVES)
      .value("INTERLEAVED", POSENC_ROPE_INTERLEAVED);
  {
    py::enum_<posenc_isa> isa(m, "Isa", "Instruction-set paths (posenc_isa).");
    // the enum's names are the upper-case path names (SCALAR, AVX2, AVX512, NEON); pybind11 keeps the pointer
    static std::vector<std::string> upper;
    for (const auto &n : isa_names()) {
      std::string u = n.first;
      for (char &c : u) c = char(std::toupper(static_cast<unsigned char>(c)));
      upper.push_back(u);
    }
    for (int i = 0; i < POSENC_ISA_COUNT; ++i) isa.value(upper[size_t(i)].c_str(), posenc_isa(i));
  }

  register_errors(m);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const posenc::error &e) {
      set_error(e.status());
    }
  });

  m.attr("PAD") = py::int_(POSENC_PAD);
  bind_spec(m);
  bind_tables(m);
  bind_rope(m);
  bind_timesteps(m);
  bind_threads(m);

  m.def(
      "status_string", [](posenc_status s) { return posenc_status_string(s); }, "status"_a,
      "posenc_status_string: the static name of a status.");
  m.def("version", &posenc_version, "The library's version, \"MAJOR.MINOR.PATCH\".");
  m.def("active_isa", &posenc_active_isa,
        "The path kernels run on now (chosen at first use from POSENC_ISA or the best available, or forced).");
  m.def(
      "isa_name", [](py::handle isa) { return posenc_isa_name(isa_arg(isa)); }, "isa"_a,
      "\"scalar\", \"avx2\", \"avx512\", \"neon\"; \"unknown\" for any other value.");
  m.def(
      "isa_available", [](py::handle isa) { return posenc_isa_available(isa_arg(isa)) == 1; }, "isa"_a,
      "Whether the path is compiled in and this CPU and OS support it.");
  m.def(
      "available_isas",
      [] {
        py::list l;
        for (int i = 0; i < POSENC_ISA_COUNT; ++i)
          if (posenc_isa_available(posenc_isa(i))) l.append(posenc_isa(i));
        return l;
      },
      "The paths available here, scalar first.");
  m.def(
      "force_isa", [](py::handle isa) { check(posenc_force_isa(isa_arg(isa))); }, "isa"_a,
      "Process-wide: every later kernel call runs on this path (an Isa or its name). Raises posenc.Unsupported "
      "when it is not available here. Meant for tests and benchmarks.");
}
