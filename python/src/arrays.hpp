// Arrays of the Python binding: NumPy arrays and PyTorch CPU tensors seen as one strided view (no copy),
// output arrays checked or allocated, and the status codes of the C ABI raised as Python exceptions.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include "posenc/posenc.h"

namespace pyposenc {

namespace py = pybind11;

/** Element types the C ABI reads or writes. bfloat16 arrives as uint16 bit patterns (NumPy has no
 *  bfloat16; ml_dtypes' bfloat16 and torch.bfloat16 are accepted too). */
enum class Elem { F32, BF16, F16, I32, I64, F64 };

const char *elem_name(Elem e);
int64_t elem_size(Elem e);

/** A strided view of someone else's memory: shape and strides in elements (not bytes). */
struct View {
  char *data = nullptr;
  Elem elem = Elem::F32;
  int ndim = 0;
  int64_t shape[4] = {0, 0, 0, 0};
  int64_t stride[4] = {0, 0, 0, 0};
  bool writeable = false;
  py::object owner;  // the array or tensor: keeps the memory alive while the GIL is released

  template <class T>
  T *ptr() const {
    return reinterpret_cast<T *>(data);
  }
  /** Bytes from the first to one past the last element (0 when empty). */
  int64_t extent_bytes() const;
};

/** What an argument may be: its name (for messages), the element types accepted, the ranks accepted. */
struct Want {
  const char *name;
  unsigned elems;  // bit (1 << int(Elem))
  int min_ndim, max_ndim;
  bool write = false;
};
constexpr unsigned bit(Elem e) { return 1u << unsigned(e); }
constexpr unsigned kFloats = bit(Elem::F32) | bit(Elem::BF16) | bit(Elem::F16);

/** The view of a NumPy array or CPU tensor (any other buffer: TypeError). Refuses, with a message naming the
 *  argument: a wrong element type, rank, negative or non-element-multiple strides, a last axis that is not
 *  contiguous (when it has more than one element), a read-only array or a tensor that requires grad when
 *  written. */
View view_of(py::handle obj, const Want &want);

/** Index arrays (positions, token ids): any integer array-like (a list, an array, a tensor), converted to a
 *  contiguous int64 / int32 array (no copy when it already is one). Values outside the target type: an
 *  OUT_OF_RANGE error, as the C ABI reports for an out-of-range position or id. */
View index_array(py::handle obj, const char *name, Elem target, int min_ndim, int max_ndim);

/** Whether obj is a torch.Tensor (torch is never imported: one exists only once the user has imported it). */
bool is_torch_tensor(py::handle obj);

/** A new C-contiguous NumPy array of the given element type (bfloat16 as uint16). */
View new_array(Elem e, int ndim, const int64_t *shape);

/** The output: `out` checked against shape and element type (None: a new array). */
View output(py::handle out, const char *name, Elem e, int ndim, const int64_t *shape);
/** An output already viewed (to read its dtype or row count first), checked against shape and element type. */
View expect_output(View v, const char *name, Elem e, int ndim, const int64_t *shape);

/** Element type from a dtype argument: "float32", "bfloat16", "float16", numpy dtypes, torch dtypes. */
Elem float_elem(py::handle dtype);

/** Whether two views' byte ranges intersect. */
bool overlap(const View &a, const View &b);
/** Same memory, same element type, same shape and strides: an in-place call. */
bool same_view(const View &a, const View &b);

/** Raises the posenc exception of a status (message: posenc_status_string); returns on POSENC_OK. */
void check(posenc_status s);
/** Sets (does not raise) the Python error of a status: for exception translators. */
void set_error(posenc_status s);
/** Registers the exception classes on the module (called once by the module init). */
void register_errors(py::module_ &m);

/** Checked int64 product (OVERFLOW status on overflow). */
int64_t mul(int64_t a, int64_t b);

}  // namespace pyposenc
