// Real-valued positions, the timestep embeddings of diffusion and flow-matching models
// (posenc_timesteps_f32 / _bf16 / _f16, posenc_timesteps_add_f32) for NumPy arrays and CPU tensors.
#include <pybind11/pybind11.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "args.hpp"
#include "arrays.hpp"
#include "posenc/posenc.h"
#include "threads.hpp"

namespace pyposenc {

namespace {

constexpr double kDirect = kTimestepValueCycles;  // each row by the direct method: no blocks (threads.hpp)

[[noreturn]] void not_numbers(const std::string &what) {
  throw py::type_error("timesteps: expected real numbers (float64, float32, float16, bfloat16 or integers), got " +
                       what);
}

// The timesteps as contiguous doubles: a C-contiguous float64 array or CPU tensor as it is (no copy); any other
// float or integer array, tensor or array-like converted to float64, which is exact for every float format
// (float32, float16, bfloat16) and for integers up to 2^53 (larger ones are past 2^31 either way and refused).
// A NumPy uint16 array is refused: posenc reads uint16 arrays as bfloat16 bit patterns elsewhere, and
// integer timesteps in it would be read as something else here.
View timesteps_arg(py::handle obj, int min_ndim, int max_ndim) {
  const Want want{"timesteps", bit(Elem::F64), min_ndim, max_ndim};
  if (is_torch_tensor(obj)) {
    const py::module_ torch = py::module_::import("torch");  // loaded already: obj is one of its tensors
    py::object t = py::reinterpret_borrow<py::object>(obj);
    py::object dtype = t.attr("dtype");
    if (dtype.is(torch.attr("bool")) || py::bool_(t.attr("is_complex")()))
      not_numbers("a tensor of " + py::str(dtype).cast<std::string>());
    if (!dtype.is(torch.attr("float64")) || !py::bool_(t.attr("is_contiguous")()))
      t = t.attr("detach")().attr("to")(torch.attr("float64")).attr("contiguous")();
    return view_of(t, want);
  }
  py::module_ np = py::module_::import("numpy");
  py::array a =
      py::isinstance<py::array>(obj) ? py::reinterpret_borrow<py::array>(obj) : py::array(np.attr("asarray")(obj));
  const py::dtype dt = a.dtype();
  const char kind = dt.kind();
  const bool bf16 = py::str(dt.attr("name")).cast<std::string>() == "bfloat16";  // ml_dtypes
  if (kind == 'u' && dt.itemsize() == 2)
    throw py::type_error(
        "timesteps: a uint16 NumPy array is ambiguous (posenc reads uint16 as bfloat16 bit "
        "patterns elsewhere): pass ml_dtypes.bfloat16 for those, int32 / int64 for integers");
  if (kind == 'O') {
    a = py::array(np.attr("asarray")(a, "float64"));  // Python numbers (ints beyond int64 among them)
  } else if (kind != 'f' && kind != 'i' && kind != 'u' && !bf16) {
    not_numbers("dtype " + py::str(py::handle(dt)).cast<std::string>());
  }
  const bool ready = a.dtype().kind() == 'f' && a.dtype().itemsize() == 8 && (a.flags() & py::array::c_style) &&
                     a.dtype().attr("isnative").cast<bool>();
  if (!ready) a = py::array(np.attr("ascontiguousarray")(a, "float64"));
  return view_of(a, want);
}

py::object timesteps(py::handle spec_obj, py::handle t_obj, py::handle dtype, py::handle out) {
  const posenc_spec spec = spec_arg(spec_obj);
  const RowsOutput ro = rows_output(dtype, out);
  const Elem e = ro.elem;
  check(posenc_timesteps_f32(&spec, nullptr, 0, nullptr, spec.d_model));  // the spec, as the C call checks it
  const View t = timesteps_arg(t_obj, 1, 1);
  const int64_t n = t.shape[0];
  View o = ro.make(n, spec.d_model);
  const int64_t stride = row_stride(o, 0, spec.d_model);
  const double *tv = t.ptr<double>();
  const double size = double(elem_size(e));
  run_split({1, n, 1, row_cycles(spec.d_model, size, 0, kDirect)}, [&](int64_t, int64_t b, int64_t end) {
    switch (e) {
      case Elem::BF16: return posenc_timesteps_bf16_part(&spec, tv, n, o.ptr<uint16_t>(), stride, b, end);
      case Elem::F16: return posenc_timesteps_f16_part(&spec, tv, n, o.ptr<uint16_t>(), stride, b, end);
      default: return posenc_timesteps_f32_part(&spec, tv, n, o.ptr<float>(), stride, b, end);
    }
  });
  return o.owner;
}

py::object timesteps_add(py::handle spec_obj, py::handle x_obj, py::handle t_obj, float scale, py::handle out) {
  const posenc_spec spec = spec_arg(spec_obj);
  const View x = view_of(x_obj, Want{"x", bit(Elem::F32), 2, 3});
  check(posenc_timesteps_add_f32(&spec, nullptr, spec.d_model, scale, nullptr, 0, nullptr, spec.d_model));
  const int k = x.ndim - 2;  // x: (n, d) or (batch, n, d)
  const int64_t batch = k ? x.shape[0] : 1, n = x.shape[k];
  expect_width("x", x.shape[k + 1], spec.d_model);
  const View t = timesteps_arg(t_obj, 1, 2);
  const int64_t t_rows = t.ndim == 2 ? t.shape[0] : batch, t_len = t.shape[t.ndim - 1];
  if (t_len != n || t_rows != batch || (t.ndim == 2 && k == 0)) {
    const std::string got =
        "(" + std::to_string(t.shape[0]) + (t.ndim == 2 ? ", " + std::to_string(t.shape[1]) : std::string(",")) + ")";
    throw py::value_error("timesteps: expected shape (" + std::to_string(n) + ",)" +
                          (k ? " or (" + std::to_string(batch) + ", " + std::to_string(n) + ")" : std::string()) +
                          " for x of " + std::to_string(n) + " rows" + (k ? " per batch entry" : std::string()) +
                          ", got " + got);
  }
  View o = output(out, "out", Elem::F32, x.ndim, x.shape);
  if (!same_view(o, x) && overlap(o, x)) throw py::value_error("out overlaps x (only out is x is allowed)");
  const int64_t xs = row_stride(x, k, spec.d_model), os = row_stride(o, k, spec.d_model);
  const int64_t xb = k ? x.stride[0] : 0, ob = k ? o.stride[0] : 0;
  const double *tv = t.ptr<double>();
  run_split({batch, n, 1, row_cycles(spec.d_model, 4, 4, kDirect)}, [&](int64_t b, int64_t begin, int64_t end) {
    return posenc_timesteps_add_f32_part(&spec, x.ptr<float>() + b * xb, xs, scale, tv + (t.ndim == 2 ? b * n : 0), n,
                                         o.ptr<float>() + b * ob, os, begin, end);
  });
  return o.owner;
}

}  // namespace

void bind_timesteps(py::module_ &m) {
  using namespace pybind11::literals;
  m.def("timesteps", &timesteps, "spec"_a, "timesteps"_a, py::kw_only(), "dtype"_a = py::none(), "out"_a = py::none(),
        R"(timesteps(spec, timesteps, *, dtype=None, out=None) -> ndarray

One row per real-valued position (the timestep embeddings of diffusion and flow-matching models), shape
(n, d_model): posenc_timesteps_f32 / _bf16 / _f16. timesteps: shape (n,), any finite |t| < 2^31, read as
float64 (no copy for a C-contiguous float64 array or CPU tensor; float32, float16, bfloat16 and integer
timesteps are converted exactly; a NumPy uint16 array is refused as ambiguous). Row r is the encoding of
timesteps[r] with the angle t * position_scale * w_i in exact arithmetic, every element correctly rounded; an
integer-valued t gives the bytes of rows() at that integer. spec: a posenc.Spec (Spec.diffusers, dit, flux,
ggml_timestep, whisper, ...) or an int d_model. dtype and out as in table(). NaN, infinities and |t| >= 2^31
raise posenc.OutOfRange; a spec with a frequency |position_scale * w_i| of 2^52 or more InvalidArgument.)");
  m.def("timesteps_add", &timesteps_add, "spec"_a, "x"_a, "timesteps"_a, py::kw_only(), "scale"_a = 1.0f,
        "out"_a = py::none(),
        R"(timesteps_add(spec, x, timesteps, *, scale=1.0, out=None) -> ndarray

out = fmaf(scale, x, PE(t)) element-wise, row r of x taking timesteps[r] (posenc_timesteps_add_f32). x:
float32, shape (n, d_model) or (batch, n, d_model), any row and batch strides; timesteps (n,) (shared by the
batch) or (batch, n), read as in timesteps(). out may be x (in place); a new array otherwise. Every
timestep is checked before the first batch row is written.)");
}

}  // namespace pyposenc
