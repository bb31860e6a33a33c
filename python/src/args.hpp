// Argument conversions shared by the binding's functions: specs, enum values given by name, optional
// positions, the batch loop that releases the GIL.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "arrays.hpp"
#include "posenc/posenc.h"

namespace pyposenc {

/** An enum argument: the enum value itself, its integer, or its name in any case ("interleaved"). */
/** The same over any range of (name, value) pairs (names as const char * or std::string). */
template <class E, class Names>
E enum_arg_of(py::handle obj, const char *what, const Names &names) {
  if (py::isinstance<py::str>(obj)) {
    std::string s = obj.cast<std::string>();
    for (char &c : s) c = char(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c == '-' ? '_' : c);
    for (const auto &n : names)
      if (s == n.first) return n.second;
    std::string all;
    for (const auto &n : names) all += std::string(all.empty() ? "" : ", ") + n.first;
    throw py::value_error(std::string(what) + ": unknown name '" + obj.cast<std::string>() + "' (one of " + all + ")");
  }
  // posenc's own enums convert to int; an integer outside the enum is the C library's to refuse (INVALID)
  return E(py::int_(py::reinterpret_borrow<py::object>(obj)).cast<int>());
}
template <class E>
E enum_arg(py::handle obj, const char *what, std::initializer_list<std::pair<const char *, E>> names) {
  return enum_arg_of<E>(obj, what, names);
}

/** An enumeration's (name, value) pairs from the library's one list of its names (posenc.h, "Names of the
 *  enumerations": name(v) for v = 0 .. the first NULL), then the binding's own aliases. */
template <class E>
std::vector<std::pair<std::string, E>> enum_names(const char *(*name)(E),
                                                  std::initializer_list<std::pair<const char *, E>> aliases = {}) {
  std::vector<std::pair<std::string, E>> out;
  for (int v = 0; name(E(v)); ++v) out.push_back({name(E(v)), E(v)});
  for (const auto &a : aliases) out.push_back({a.first, a.second});
  return out;
}

/** A posenc.Spec, or an int d_model for posenc_spec_default(d_model). */
posenc_spec spec_arg(py::handle obj);

/** Positions: None (a run from `first`), or integers of shape (n,) or (batch, n). */
struct Positions {
  bool given = false;
  View v;
  int64_t first = 0;
  const int64_t *row(int64_t b) const {
    return given ? v.ptr<int64_t>() + (v.ndim == 2 ? b * v.shape[1] : 0) : nullptr;
  }
};
Positions positions_arg(py::handle positions, int64_t first, int64_t batch, int64_t n);

/** The output of a call that writes (n, d) rows: `out` when given, which then also gives the dtype when dtype is
 *  None; else a new array of dtype (float32 when None). */
struct RowsOutput {
  View given;  // out, viewed, when has_out
  bool has_out = false;
  Elem elem = Elem::F32;
  /** out checked against (n, d) rows of elem, or a new array of them. */
  View make(int64_t n, int64_t d) const;
};
RowsOutput rows_output(py::handle dtype, py::handle out);

/** Refuses rows of `got` elements where the spec has d_model (ValueError naming the argument). */
void expect_width(const char *name, int64_t got, int64_t d_model);

/** The row stride of axis `axis` of a view (elements), or `fallback` when the axis has one element. */
inline int64_t row_stride(const View &v, int axis, int64_t fallback) {
  return v.shape[axis] > 1 ? v.stride[axis] : fallback;
}

/** Runs call(b) for b in [0, batch) without the GIL; stops at the first error status, which it raises. */
template <class F>
void run_batches(int64_t batch, F &&call) {
  posenc_status s = POSENC_OK;
  {
    py::gil_scoped_release nogil;
    for (int64_t b = 0; b < batch && s == POSENC_OK; ++b) s = call(b);
  }
  check(s);
}

}  // namespace pyposenc
