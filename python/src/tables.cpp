// Sinusoidal tables, rows, x + PE, the fused embedding and learned positions (posenc_table_* ...
// posenc_embed_learned_f32) for NumPy arrays and CPU tensors.
#include <pybind11/pybind11.h>

#include <cstdint>

#include "args.hpp"
#include "arrays.hpp"
#include "posenc/posenc.h"
#include "threads.hpp"

namespace pyposenc {

namespace {

constexpr int64_t kGrain = posenc::cost_model::block_grain;  // pieces of whole blocks (threads.hpp)
constexpr double kTurned = posenc::cost_model::turned;

py::object table(py::handle spec_obj, py::handle n_obj, int64_t first, py::handle dtype, py::handle out) {
  const posenc_spec spec = spec_arg(spec_obj);
  const RowsOutput ro = rows_output(dtype, out);  // out, when given, also gives the row count
  const Elem e = ro.elem;
  int64_t n;
  if (!n_obj.is_none()) {
    n = n_obj.cast<int64_t>();
  } else if (ro.has_out) {
    n = ro.given.shape[0];
  } else {
    throw py::type_error("table: give n, or out= with n rows");
  }
  // the spec (and n < 0) as the C library checks them, before an array is made
  check(posenc_table_f32(&spec, first, n < 0 ? n : 0, nullptr, spec.d_model));
  View o = ro.make(n, spec.d_model);
  const int64_t stride = row_stride(o, 0, spec.d_model);
  const double size = double(elem_size(e));
  run_split({1, n, kGrain, row_cycles(spec.d_model, size, 0, kTurned, 0)}, [&](int64_t, int64_t b, int64_t end) {
    switch (e) {
      case Elem::BF16: return posenc_table_bf16_part(&spec, first, n, o.ptr<uint16_t>(), stride, b, end);
      case Elem::F16: return posenc_table_f16_part(&spec, first, n, o.ptr<uint16_t>(), stride, b, end);
      default: return posenc_table_f32_part(&spec, first, n, o.ptr<float>(), stride, b, end);
    }
  });
  return o.owner;
}

py::object rows(py::handle spec_obj, py::handle positions, py::handle dtype, py::handle out) {
  const posenc_spec spec = spec_arg(spec_obj);
  const RowsOutput ro = rows_output(dtype, out);
  const Elem e = ro.elem;
  check(posenc_rows_f32(&spec, nullptr, 0, nullptr, spec.d_model));
  const View p = index_array(positions, "positions", Elem::I64, 1, 1);
  const int64_t n = p.shape[0];
  View o = ro.make(n, spec.d_model);
  const int64_t stride = row_stride(o, 0, spec.d_model);
  const int64_t *pos = p.ptr<int64_t>();
  const double size = double(elem_size(e));
  run_split({1, n, kGrain, row_cycles(spec.d_model, size, 0, kTurned)}, [&](int64_t, int64_t b, int64_t end) {
    switch (e) {
      case Elem::BF16: return posenc_rows_bf16_part(&spec, pos, n, o.ptr<uint16_t>(), stride, b, end);
      case Elem::F16: return posenc_rows_f16_part(&spec, pos, n, o.ptr<uint16_t>(), stride, b, end);
      default: return posenc_rows_f32_part(&spec, pos, n, o.ptr<float>(), stride, b, end);
    }
  });
  return o.owner;
}

// x, or out, shaped (n, d) or (batch, n, d): the batch count, n, and the view's axes as (batch, n, d).
struct Rows3 {
  int64_t batch, n, d, batch_stride, row_stride;
};
Rows3 rows3(const View &v) {
  const int k = v.ndim - 2;
  Rows3 r{k ? v.shape[0] : 1, v.shape[k], v.shape[k + 1], k ? v.stride[0] : 0, 0};
  r.row_stride = row_stride(v, k, r.d);
  return r;
}

py::object add(py::handle spec_obj, py::handle x_obj, py::handle positions, int64_t first, float scale,
               py::handle out) {
  const posenc_spec spec = spec_arg(spec_obj);
  const View x = view_of(x_obj, Want{"x", bit(Elem::F32), 2, 3});
  check(posenc_add_f32(&spec, nullptr, spec.d_model, scale, nullptr, first, 0, nullptr, spec.d_model));
  const Rows3 xr = rows3(x);
  expect_width("x", xr.d, spec.d_model);
  const Positions p = positions_arg(positions, first, xr.batch, xr.n);
  View o = output(out, "out", Elem::F32, x.ndim, x.shape);
  if (!same_view(o, x) && overlap(o, x)) throw py::value_error("out overlaps x (only out is x is allowed)");
  const Rows3 orr = rows3(o);
  const Split split{xr.batch, xr.n, kGrain, row_cycles(spec.d_model, 4, 4, kTurned)};
  run_split(split, [&](int64_t b, int64_t begin, int64_t end) {
    return posenc_add_f32_part(&spec, x.ptr<float>() + b * xr.batch_stride, xr.row_stride, scale, p.row(b), p.first,
                               xr.n, o.ptr<float>() + b * orr.batch_stride, orr.row_stride, begin, end);
  });
  return o.owner;
}

py::object embed(py::handle spec_obj, py::handle table_obj, py::handle tokens_obj, py::handle positions, int64_t first,
                 float scale, py::handle out) {
  const posenc_spec spec = spec_arg(spec_obj);
  const View t = view_of(table_obj, Want{"table", kFloats, 2, 2});
  check(posenc_embed_f32(&spec, nullptr, 0, spec.d_model, nullptr, scale, nullptr, first, 0, nullptr, spec.d_model));
  expect_width("table", t.shape[1], spec.d_model);
  const View tok = index_array(tokens_obj, "tokens", Elem::I32, 1, 2);
  const int64_t batch = tok.ndim == 2 ? tok.shape[0] : 1, n = tok.shape[tok.ndim - 1];
  const Positions p = positions_arg(positions, first, tok.ndim == 2 ? batch : 1, n);
  int64_t shape[3] = {batch, n, spec.d_model};
  if (tok.ndim == 1) shape[0] = n, shape[1] = spec.d_model;
  mul(mul(batch, n), spec.d_model);
  View o = output(out, "out", Elem::F32, tok.ndim + 1, shape);
  if (overlap(o, t)) throw py::value_error("out overlaps the embedding table");
  const Rows3 orr = rows3(o);
  const int64_t vocab = t.shape[0], ts = row_stride(t, 0, spec.d_model);
  const double in_size = double(elem_size(t.elem));
  const Split split{batch, n, kGrain, row_cycles(spec.d_model, 4, in_size, kTurned, 12)};
  run_split(split, [&](int64_t b, int64_t begin, int64_t end) {
    const int32_t *ids = tok.ptr<int32_t>() + b * n;
    float *dst = o.ptr<float>() + b * orr.batch_stride;
    switch (t.elem) {
      case Elem::BF16:
        return posenc_embed_bf16_part(&spec, t.ptr<uint16_t>(), vocab, ts, ids, scale, p.row(b), p.first, n, dst,
                                      orr.row_stride, begin, end);
      case Elem::F16:
        return posenc_embed_f16_part(&spec, t.ptr<uint16_t>(), vocab, ts, ids, scale, p.row(b), p.first, n, dst,
                                     orr.row_stride, begin, end);
      default:
        return posenc_embed_f32_part(&spec, t.ptr<float>(), vocab, ts, ids, scale, p.row(b), p.first, n, dst,
                                     orr.row_stride, begin, end);
    }
  });
  return o.owner;
}

py::object embed_learned(py::handle table_obj, py::handle tokens_obj, py::handle pos_obj, py::handle positions,
                         int64_t first, float scale, py::handle out) {
  const View t = view_of(table_obj, Want{"table", bit(Elem::F32), 2, 2});
  const View pt = view_of(pos_obj, Want{"pos_table", bit(Elem::F32), 2, 2});
  const int64_t d = t.shape[1];
  expect_width("pos_table", pt.shape[1], d);
  const View tok = index_array(tokens_obj, "tokens", Elem::I32, 1, 2);
  const int64_t batch = tok.ndim == 2 ? tok.shape[0] : 1, n = tok.shape[tok.ndim - 1];
  const Positions p = positions_arg(positions, first, tok.ndim == 2 ? batch : 1, n);
  int64_t shape[3] = {batch, n, d};
  if (tok.ndim == 1) shape[0] = n, shape[1] = d;
  mul(mul(batch, n), d);
  View o = output(out, "out", Elem::F32, tok.ndim + 1, shape);
  if (overlap(o, t) || overlap(o, pt)) throw py::value_error("out overlaps the embedding or position table");
  const Rows3 orr = rows3(o);
  const int64_t vocab = t.shape[0], ts = row_stride(t, 0, d), pos_rows = pt.shape[0], ps = row_stride(pt, 0, d);
  run_split({batch, n, 1, row_cycles(d, 4, 8, 0.0, 12)}, [&](int64_t b, int64_t begin, int64_t end) {
    return posenc_embed_learned_f32_part(d, t.ptr<float>(), vocab, ts, tok.ptr<int32_t>() + b * n, scale,
                                         pt.ptr<float>(), pos_rows, ps, p.row(b), p.first, n,
                                         o.ptr<float>() + b * orr.batch_stride, orr.row_stride, begin, end);
  });
  return o.owner;
}

}  // namespace

posenc_spec spec_arg(py::handle obj) {
  if (py::isinstance<posenc_spec>(obj)) return obj.cast<posenc_spec>();
  if (py::isinstance<py::int_>(obj)) return posenc_spec_default(obj.cast<int64_t>());
  throw py::type_error("spec: expected a posenc.Spec or an int d_model");
}

RowsOutput rows_output(py::handle dtype, py::handle out) {
  RowsOutput r;
  r.has_out = !out.is_none();
  if (r.has_out) r.given = view_of(out, Want{"out", kFloats, 2, 2, true});
  r.elem = !dtype.is_none() ? float_elem(dtype) : r.has_out ? r.given.elem : Elem::F32;
  return r;
}

View RowsOutput::make(int64_t n, int64_t d) const {
  const int64_t shape[2] = {n, d};
  mul(n, d);
  return has_out ? expect_output(given, "out", elem, 2, shape) : new_array(elem, 2, shape);
}

void expect_width(const char *name, int64_t got, int64_t d_model) {
  if (got != d_model)
    throw py::value_error(std::string(name) + ": rows of " + std::to_string(got) + " elements, the spec's d_model is " +
                          std::to_string(d_model));
}

Positions positions_arg(py::handle positions, int64_t first, int64_t batch, int64_t n) {
  Positions p;
  p.first = first;
  if (positions.is_none()) return p;
  p.given = true;
  p.v = index_array(positions, "positions", Elem::I64, 1, 2);
  const int64_t rows = p.v.ndim == 2 ? p.v.shape[0] : batch, len = p.v.shape[p.v.ndim - 1];
  if (len != n || rows != batch)
    throw py::value_error("positions: expected " + std::to_string(n) + " positions" +
                          (batch > 1 ? " (or " + std::to_string(batch) + " rows of them)" : std::string()) + ", got " +
                          std::to_string(p.v.ndim == 2 ? rows * len : len));
  return p;
}

void bind_tables(py::module_ &m) {
  using namespace pybind11::literals;
  m.def("table", &table, "spec"_a, "n"_a = py::none(), "first"_a = 0, py::kw_only(), "dtype"_a = py::none(),
        "out"_a = py::none(),
        R"(table(spec, n=None, first=0, *, dtype=None, out=None) -> ndarray

The rows for positions first .. first+n-1, shape (n, d_model): posenc_table_f32 / _bf16 / _f16.
spec is a posenc.Spec or an int d_model (Vaswani's convention). dtype: "float32" (default), "bfloat16"
(returned as uint16 bit patterns) or "float16"; with out= (a preallocated (n, d_model) array or CPU tensor,
rows may be strided, the last axis contiguous) the dtype is out's and n may be omitted. Every float32 is the
correctly rounded sin/cos of the exact angle; bf16/f16 are rounded to nearest-even from it. Runs without the
GIL. Raises posenc.InvalidArgument, OutOfRange, SizeOverflow, NoMemory or Unsupported with the C status;
nothing is written on error.)");
  m.def("rows", &rows, "spec"_a, "positions"_a, py::kw_only(), "dtype"_a = py::none(), "out"_a = py::none(),
        R"(rows(spec, positions, *, dtype=None, out=None) -> ndarray

One row per explicit position (any integer array-like of shape (n,)), shape (n, d_model); posenc.PAD gives
a zero row. dtype and out as in table(): posenc_rows_f32 / _bf16 / _f16.)");
  m.def("add", &add, "spec"_a, "x"_a, py::kw_only(), "positions"_a = py::none(), "first"_a = 0, "scale"_a = 1.0f,
        "out"_a = py::none(),
        R"(add(spec, x, *, positions=None, first=0, scale=1.0, out=None) -> ndarray

out = fmaf(scale, x, PE(position)) element-wise (posenc_add_f32). x: float32, shape (n, d_model) or
(batch, n, d_model) (any row and batch strides: a seq-first [seq, batch, d] array is x.transpose(1, 0, 2)).
positions: None (first, first+1, ...), shape (n,) shared by the batch, or (batch, n). out may be x (in
place); a new array otherwise. out and x sharing any address range otherwise raise ValueError (even
when their elements interleave without meeting).)");
  m.def("embed", &embed, "spec"_a, "table"_a, "tokens"_a, py::kw_only(), "positions"_a = py::none(), "first"_a = 0,
        "scale"_a = 1.0f, "out"_a = py::none(),
        R"(embed(spec, table, tokens, *, positions=None, first=0, scale=1.0, out=None) -> ndarray

The fused embedding: out[r] = fmaf(scale, table[tokens[r]], PE(position r)), no PE table made
(posenc_embed_f32 / _bf16 / _f16 by table's dtype: float32, bfloat16 (uint16 bits) or float16). table:
(vocab, d_model), rows may be strided. tokens: integers, shape (n,) or (batch, n); the output is
(n, d_model) or (batch, n, d_model), float32. positions as in add().)");
  m.def("embed_learned", &embed_learned, "table"_a, "tokens"_a, "pos_table"_a, py::kw_only(),
        "positions"_a = py::none(), "first"_a = 0, "scale"_a = 1.0f, "out"_a = py::none(),
        R"(embed_learned(table, tokens, pos_table, *, positions=None, first=0, scale=1.0, out=None) -> ndarray

Learned positions (BERT, GPT-2, a trained LSPE): out[r] = fmaf(scale, table[tokens[r]], pos_table[pos r])
(posenc_embed_learned_f32). table (vocab, d) and pos_table (pos_rows, d), float32; positions must lie in
[0, pos_rows), or be posenc.PAD (explicit positions only), which adds +0.0. Shapes as in embed().)");
}

}  // namespace pyposenc
