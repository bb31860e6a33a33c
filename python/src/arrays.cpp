// NumPy arrays and PyTorch CPU tensors as strided views, output arrays, status codes as exceptions.
#include "arrays.hpp"

#include <climits>
#include <string>
#include <vector>

namespace pyposenc {

namespace {

struct TypeInfo {
  Elem elem;
  const char *numpy;  // the NumPy dtype of a new array
  int64_t size;
};
const TypeInfo kTypes[] = {
    {Elem::F32, "float32", 4}, {Elem::BF16, "uint16", 2}, {Elem::F16, "float16", 2},
    {Elem::I32, "int32", 4},   {Elem::I64, "int64", 8},   {Elem::F64, "float64", 8},
};

[[noreturn]] void type_error(const std::string &msg) { throw py::type_error(msg); }
[[noreturn]] void value_error(const std::string &msg) { throw py::value_error(msg); }

std::string accepted(unsigned elems) {
  std::string s;
  for (const TypeInfo &t : kTypes)
    if (elems & bit(t.elem)) s += std::string(s.empty() ? "" : ", ") + elem_name(t.elem);
  return s;
}

bool numpy_elem(const py::dtype &dt, Elem *e) {
  const char kind = dt.kind();
  const auto size = dt.itemsize();
  if (kind == 'f' && size == 4)
    *e = Elem::F32;
  else if (kind == 'f' && size == 2)
    *e = Elem::F16;
  else if (kind == 'f' && size == 8)
    *e = Elem::F64;
  else if (kind == 'u' && size == 2)
    *e = Elem::BF16;  // bfloat16 bit patterns
  else if (kind == 'i' && size == 4)
    *e = Elem::I32;
  else if (kind == 'i' && size == 8)
    *e = Elem::I64;
  else if (size == 2 && py::str(dt.attr("name")).cast<std::string>() == "bfloat16")
    *e = Elem::BF16;  // ml_dtypes
  else
    return false;
  return true;
}

// torch is never imported here: a tensor can only exist once the user has imported it.
struct Torch {
  py::object tensor, strided, f32, bf16, f16, i32, i64, f64;
};
const Torch *torch_types() {
  static Torch *t = nullptr;  // built under the GIL, once torch is loaded; never freed (interpreter lifetime)
  if (t) return t;
  py::dict modules = py::module_::import("sys").attr("modules");
  if (!modules.contains("torch")) return nullptr;
  py::object torch = modules["torch"];
  t = new Torch{torch.attr("Tensor"),  torch.attr("strided"), torch.attr("float32"), torch.attr("bfloat16"),
                torch.attr("float16"), torch.attr("int32"),   torch.attr("int64"),   torch.attr("float64")};
  return t;
}

// Interned attribute names of a tensor (built once, under the GIL; kept for the interpreter's lifetime).
struct Names {
  PyObject *layout, *is_cpu, *dtype, *shape, *stride, *requires_grad, *data_ptr;
};
const Names &names() {
  static const Names n{PyUnicode_InternFromString("layout"),  PyUnicode_InternFromString("is_cpu"),
                       PyUnicode_InternFromString("dtype"),   PyUnicode_InternFromString("shape"),
                       PyUnicode_InternFromString("stride"),  PyUnicode_InternFromString("requires_grad"),
                       PyUnicode_InternFromString("data_ptr")};
  return n;
}

bool torch_elem(const Torch &T, py::handle dtype, Elem *e) {
  if (dtype.is(T.f32))
    *e = Elem::F32;
  else if (dtype.is(T.bf16))
    *e = Elem::BF16;
  else if (dtype.is(T.f16))
    *e = Elem::F16;
  else if (dtype.is(T.i32))
    *e = Elem::I32;
  else if (dtype.is(T.i64))
    *e = Elem::I64;
  else if (dtype.is(T.f64))
    *e = Elem::F64;
  else
    return false;
  return true;
}

bool is_tensor(py::handle obj, const Torch **T) {
  if (py::isinstance<py::array>(obj)) return false;
  *T = torch_types();
  return *T && PyObject_IsInstance(obj.ptr(), (*T)->tensor.ptr()) == 1;
}

void check_rank(int ndim, const Want &w) {
  if (ndim >= w.min_ndim && ndim <= w.max_ndim) return;
  value_error(std::string(w.name) + ": expected " + std::to_string(w.min_ndim) +
              (w.max_ndim > w.min_ndim ? " to " + std::to_string(w.max_ndim) : std::string()) + " dimensions, got " +
              std::to_string(ndim));
}

// Strides of axes of length <= 1 never separate two elements: 0, so that no caller reads them.
// Byte strides as read (at most 4 axes, as check_rank allows).
struct Strides {
  int64_t s[4] = {0, 0, 0, 0};
  int count = 0;
  void push_back(int64_t v) { s[count < 4 ? count++ : 3] = v; }
  int64_t operator[](int i) const { return s[i]; }
};

void finish(View &v, const Want &w, const Strides &byte_strides) {
  const int64_t size = elem_size(v.elem);
  bool empty = false;
  for (int i = 0; i < v.ndim; ++i) empty = empty || v.shape[i] == 0;
  for (int i = 0; i < v.ndim; ++i) {
    int64_t s = byte_strides[i];
    if (v.shape[i] <= 1 || empty) s = 0;
    if (s < 0) value_error(std::string(w.name) + ": negative strides are not supported (pass a copy)");
    if (s % size) value_error(std::string(w.name) + ": strides must be whole elements (pass a copy)");
    v.stride[i] = s / size;
  }
  if (!empty && v.ndim && v.shape[v.ndim - 1] > 1 && v.stride[v.ndim - 1] != 1)
    value_error(std::string(w.name) + ": the last axis must be contiguous (stride 1); pass a contiguous copy");
}

}  // namespace

const char *elem_name(Elem e) {
  switch (e) {
    case Elem::F32: return "float32";
    case Elem::BF16: return "bfloat16";
    case Elem::F16: return "float16";
    case Elem::I32: return "int32";
    case Elem::I64: return "int64";
    case Elem::F64: return "float64";
  }
  return "?";
}

int64_t elem_size(Elem e) { return kTypes[int(e)].size; }

int64_t View::extent_bytes() const {
  int64_t last = 0;
  for (int i = 0; i < ndim; ++i) {
    if (shape[i] == 0) return 0;
    last += (shape[i] - 1) * stride[i];
  }
  return (last + 1) * elem_size(elem);
}

View view_of(py::handle obj, const Want &w) {
  View v;
  Strides strides;
  const Torch *T = nullptr;
  if (py::isinstance<py::array>(obj)) {
    py::array a = py::reinterpret_borrow<py::array>(obj);
    if (!numpy_elem(a.dtype(), &v.elem) || !(w.elems & bit(v.elem)))
      type_error(std::string(w.name) + ": dtype " + py::str(a.dtype()).cast<std::string>() + " is not one of " +
                 accepted(w.elems) + (w.elems & bit(Elem::BF16) ? " (bfloat16 as uint16 bit patterns)" : ""));
    v.ndim = int(a.ndim());
    check_rank(v.ndim, w);
    for (int i = 0; i < v.ndim; ++i) {
      v.shape[i] = int64_t(a.shape(i));
      strides.push_back(int64_t(a.strides(i)));
    }
    if (w.write && !a.writeable()) value_error(std::string(w.name) + ": the array is read-only");
    v.data = static_cast<char *>(const_cast<void *>(a.data()));
    v.writeable = a.writeable();
  } else if (is_tensor(obj, &T)) {
    // raw C API with interned names: a decode step converts three tensors per call (docs/python.md, overhead)
    auto get = [&](PyObject *name) { return py::reinterpret_steal<py::object>(PyObject_GetAttr(obj.ptr(), name)); };
    auto call = [&](PyObject *name) {
      return py::reinterpret_steal<py::object>(PyObject_CallMethodObjArgs(obj.ptr(), name, nullptr));
    };
    const Names &N = names();
    py::object layout = get(N.layout), is_cpu = get(N.is_cpu);
    if (!layout || !is_cpu) throw py::error_already_set();
    if (!layout.is(T->strided)) type_error(std::string(w.name) + ": only strided (dense) tensors");
    if (is_cpu.ptr() != Py_True) type_error(std::string(w.name) + ": the tensor must be on the CPU");
    py::object dtype = get(N.dtype), shape = get(N.shape), st = call(N.stride), grad = get(N.requires_grad),
               ptr = call(N.data_ptr);
    if (!dtype || !shape || !st || !grad || !ptr) throw py::error_already_set();
    if (!torch_elem(*T, dtype, &v.elem) || !(w.elems & bit(v.elem)))
      type_error(std::string(w.name) + ": dtype " + py::str(dtype).cast<std::string>() + " is not one of " +
                 accepted(w.elems));
    if (!PyTuple_Check(shape.ptr()) || !PyTuple_Check(st.ptr())) type_error(std::string(w.name) + ": not a tensor");
    v.ndim = int(PyTuple_GET_SIZE(shape.ptr()));
    check_rank(v.ndim, w);
    for (int i = 0; i < v.ndim; ++i) {
      v.shape[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(shape.ptr(), i));
      strides.push_back(PyLong_AsLongLong(PyTuple_GET_ITEM(st.ptr(), i)) * elem_size(v.elem));
    }
    if (PyErr_Occurred()) throw py::error_already_set();
    if (w.write && grad.ptr() == Py_True)
      value_error(std::string(w.name) +
                  ": the tensor requires grad; write into it under torch.no_grad() "
                  "from a detached tensor, or use posenc.torch");
    v.data = reinterpret_cast<char *>(PyLong_AsVoidPtr(ptr.ptr()));
    v.writeable = true;
  } else {
    type_error(std::string(w.name) + ": expected a NumPy array or a CPU torch.Tensor, got " +
               py::str(py::type::handle_of(obj).attr("__name__")).cast<std::string>());
  }
  finish(v, w, strides);
  v.owner = py::reinterpret_borrow<py::object>(obj);
  return v;
}

bool is_torch_tensor(py::handle obj) {
  const Torch *T = nullptr;
  return is_tensor(obj, &T);
}

View index_array(py::handle obj, const char *name, Elem target, int min_ndim, int max_ndim) {
  const Want w{name, bit(target), min_ndim, max_ndim};
  const Torch *T = nullptr;
  if (py::isinstance<py::array>(obj) || is_tensor(obj, &T)) {
    // the fast path: already the right type and contiguous
    View v;
    try {
      v = view_of(obj, Want{name, bit(Elem::I32) | bit(Elem::I64) | kFloats | bit(Elem::F64), min_ndim, max_ndim});
    } catch (const py::builtin_exception &) {
      // not viewable as it is (a strided or narrow integer array): converted below; but a tensor that is not
      // on the CPU, or not dense, keeps its error
      if (T && (!py::object(obj.attr("is_cpu")).cast<bool>() || !py::object(obj.attr("layout")).is(T->strided))) throw;
      v.elem = Elem::F64;
    }
    bool contiguous = v.elem == target;
    int64_t expect = 1;
    for (int i = v.ndim - 1; i >= 0 && contiguous; --i) {
      if (v.shape[i] > 1 && v.stride[i] != expect) contiguous = false;
      expect *= v.shape[i];
    }
    if (contiguous) return v;
  }
  py::module_ np = py::module_::import("numpy");
  py::array a = np.attr("asarray")(obj);
  const char kind = a.dtype().kind();
  if (a.size() == 0) {
    a = np.attr("zeros")(a.attr("shape"), elem_name(target));
  } else {
    if (kind != 'i' && kind != 'u')
      type_error(std::string(name) + ": expected integers, got dtype " + py::str(a.dtype()).cast<std::string>());
    const bool wide = target == Elem::I64;
    // range: int64 ids above INT64_MAX exist only as uint64; int32 ids must fit int32
    if (kind == 'u' && a.dtype().itemsize() == 8) {
      if (a.attr("max")().cast<uint64_t>() > uint64_t(wide ? INT64_MAX : INT32_MAX)) check(POSENC_ERR_OUT_OF_RANGE);
    } else if (!wide && a.dtype().itemsize() == 8) {
      if (a.attr("max")().cast<int64_t>() > INT32_MAX || a.attr("min")().cast<int64_t>() < INT32_MIN)
        check(POSENC_ERR_OUT_OF_RANGE);
    }
    a = np.attr("ascontiguousarray")(a, elem_name(target));
  }
  return view_of(a, w);
}

View new_array(Elem e, int ndim, const int64_t *shape) {
  std::vector<py::ssize_t> s(shape, shape + ndim);
  py::array a(py::dtype(std::string(kTypes[int(e)].numpy)), s);
  View v = view_of(a, Want{"out", bit(e), ndim, ndim, true});
  v.elem = e;
  return v;
}

View output(py::handle out, const char *name, Elem e, int ndim, const int64_t *shape) {
  if (out.is_none()) return new_array(e, ndim, shape);
  return expect_output(view_of(out, Want{name, kFloats | bit(Elem::I32) | bit(Elem::I64), ndim, ndim, true}), name, e,
                       ndim, shape);
}

View expect_output(View v, const char *name, Elem e, int ndim, const int64_t *shape) {
  if (v.elem != e)
    type_error(std::string(name) + ": expected dtype " + elem_name(e) + ", got " + elem_name(v.elem) +
               (e == Elem::BF16 ? " (bfloat16 as uint16 bit patterns)" : ""));
  for (int i = 0; i < ndim; ++i)
    if (v.shape[i] != shape[i]) {
      std::string want = "(", got = "(";
      for (int k = 0; k < ndim; ++k) {
        want += std::to_string(shape[k]) + (k + 1 < ndim ? ", " : ")");
        got += std::to_string(v.shape[k]) + (k + 1 < ndim ? ", " : ")");
      }
      value_error(std::string(name) + ": expected shape " + want + ", got " + got);
    }
  return v;
}

Elem float_elem(py::handle dtype) {
  if (dtype.is_none()) return Elem::F32;
  const Torch *T = torch_types();
  Elem e;
  if (T && torch_elem(*T, dtype, &e) && (kFloats & bit(e))) return e;
  if (py::isinstance<py::str>(dtype)) {
    const std::string s = dtype.cast<std::string>();
    if (s == "bfloat16" || s == "bf16") return Elem::BF16;
  }
  py::dtype dt = py::dtype::from_args(py::reinterpret_borrow<py::object>(dtype));
  if (numpy_elem(dt, &e) && (kFloats & bit(e))) return e;
  type_error("dtype must be float32, bfloat16 or float16, got " + py::str(dtype).cast<std::string>());
}

bool overlap(const View &a, const View &b) {
  const int64_t na = a.extent_bytes(), nb = b.extent_bytes();
  if (!na || !nb) return false;
  return a.data < b.data + nb && b.data < a.data + na;
}

bool same_view(const View &a, const View &b) {
  if (a.data != b.data || a.elem != b.elem || a.ndim != b.ndim) return false;
  for (int i = 0; i < a.ndim; ++i)
    if (a.shape[i] != b.shape[i] || (a.shape[i] > 1 && a.stride[i] != b.stride[i])) return false;
  return true;
}

int64_t mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) check(POSENC_ERR_OVERFLOW);
  return r;
}

// ---- exceptions -----------------------------------------------------------------------------------------

namespace {
PyObject *g_errors[7] = {};  // by status; new references held for the interpreter's lifetime
}

void register_errors(py::module_ &m) {
  auto make = [&](const char *name, PyObject *base, const char *doc) {
    // both arms a py::tuple: pybind11 3's make_tuple returns typing::Tuple<...> of the arguments' types
    py::tuple bases = base ? py::tuple(py::make_tuple(py::handle(g_errors[0]), py::handle(base)))
                           : py::tuple(py::make_tuple(py::handle(PyExc_Exception)));
    PyObject *cls = PyErr_NewExceptionWithDoc((std::string("posenc.") + name).c_str(), doc, bases.ptr(), nullptr);
    if (!cls) throw py::error_already_set();
    m.add_object(name, py::handle(cls));
    return cls;
  };
  g_errors[0] = make("Error", nullptr,
                     "Base of every error the C library reports; .status is the posenc.Status, the message its "
                     "posenc_status_string.");
  PyObject *invalid =
      make("InvalidArgument", PyExc_ValueError, "POSENC_ERR_INVALID (a bad spec, size or stride) and POSENC_ERR_NULL.");
  g_errors[POSENC_ERR_NULL] = invalid;
  g_errors[POSENC_ERR_INVALID] = invalid;
  g_errors[POSENC_ERR_OUT_OF_RANGE] = make("OutOfRange", PyExc_IndexError,
                                           "POSENC_ERR_OUT_OF_RANGE: a token id, position or learned-table row "
                                           "outside its range.");
  g_errors[POSENC_ERR_OVERFLOW] =
      make("SizeOverflow", PyExc_OverflowError, "POSENC_ERR_OVERFLOW: an element or byte count does not fit.");
  g_errors[POSENC_ERR_UNSUPPORTED] =
      make("Unsupported", PyExc_RuntimeError, "POSENC_ERR_UNSUPPORTED: the requested or forced ISA is not available.");
  g_errors[POSENC_ERR_NO_MEMORY] =
      make("NoMemory", PyExc_MemoryError, "POSENC_ERR_NO_MEMORY: the one-time setup of a new spec could not allocate.");
}

void set_error(posenc_status s) {
  PyObject *cls = (int(s) > 0 && int(s) < 7) ? g_errors[s] : g_errors[0];
  py::object e = py::reinterpret_borrow<py::object>(cls)(posenc_status_string(s));
  e.attr("status") = py::cast(s);
  PyErr_SetObject(cls, e.ptr());
}

void check(posenc_status s) {
  if (s == POSENC_OK) return;
  set_error(s);
  throw py::error_already_set();
}

}  // namespace pyposenc
