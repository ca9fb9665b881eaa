// `import gpt2lab`: the library's public API from Python (docs/python.md).
// Thin by rule: every behaviour is the library's, so the module and the CLI
// agree by construction; this folder only converts values and manages the
// GIL and Ctrl-C.
#include <limits>

#include "bindings.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/version.h"

namespace gpt2lab::python {

void raise_if_stopped() {
  if (!stop_requested()) return;
  clear_stop_request();
  PyErr_SetNone(PyExc_KeyboardInterrupt);
  throw py::error_already_set();
}

namespace {

// The ids of an integer array read as T (int64, or uint64 for an unsigned
// one, whose large values would wrap to -1, the skipped target, as int64).
template <class T>
std::vector<int> checked_ids(const py::array& a, const char* what) {
  const auto wide = py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(a);
  std::vector<int> ids(static_cast<size_t>(wide.size()));
  const T* p = wide.data();
  for (size_t i = 0; i < ids.size(); ++i) {
    if (p[i] < T{0} ? p[i] < T(-1) : p[i] > T(std::numeric_limits<int>::max()))
      throw Error(std::string(what) + ": id " + std::to_string(p[i]) + " at index " + std::to_string(i) +
                  " is not a token id");
    ids[i] = static_cast<int>(p[i]);
  }
  return ids;
}

}  // namespace

std::vector<int> ids_from(const py::handle& obj, const char* what, int* rows) {
  const auto a = py::array::ensure(obj);
  const int want = rows ? 2 : 1;
  if (!a || (a.size() > 0 && a.dtype().kind() != 'i' && a.dtype().kind() != 'u'))
    throw Error(std::string(what) + ": expected token ids (a list or numpy array of integers)");
  if (rows && a.ndim() == 1) {
    *rows = 1;
  } else {
    if (a.ndim() != want)
      throw Error(std::string(what) + ": expected " + (rows ? "1 or 2" : "1") + " dimensions, got " +
                  std::to_string(a.ndim()));
    if (rows) *rows = static_cast<int>(a.shape(0));
  }
  constexpr auto kIntMax = std::numeric_limits<int>::max();
  if (a.size() > kIntMax || (rows && a.shape(0) > kIntMax))
    throw Error(std::string(what) + ": " + std::to_string(a.size()) + " ids are more than any model takes");
  if (a.dtype().kind() == 'u') return checked_ids<uint64_t>(a, what);
  return checked_ids<int64_t>(a, what);
}

py::array_t<int32_t> ids_array(std::vector<int>&& ids) {
  auto* owned = new std::vector<int>(std::move(ids));
  py::capsule free_it(owned, [](void* p) { delete static_cast<std::vector<int>*>(p); });
  return py::array_t<int32_t>(static_cast<py::ssize_t>(owned->size()), owned->data(), free_it);
}

nlohmann::json json_of(const py::handle& v, const char* what) {
  if (v.is_none()) return nullptr;
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>();
  if (py::isinstance<py::int_>(v)) {
    // Within 64 bits (up to 2**64 - 1: a seed), as the CLI's strict number
    // check takes them; the option's own range check follows. Beyond, no
    // option takes it: refused naming the value, never wrapped.
    int overflow = 0;
    const long long x = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
    if (overflow == 0) return static_cast<int64_t>(x);
    if (overflow < 0) return int_arg(v, what, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
    return seed_arg(v, what);
  }
  if (py::isinstance<py::float_>(v)) return v.cast<double>();
  if (py::isinstance<py::str>(v) || py::hasattr(v, "__fspath__")) return path_arg(v, what);
  throw Error(std::string(what) + ": expected a bool, number or string, got " +
              py::str(py::type::of(v).attr("__name__")).cast<std::string>());
}

py::object from_json(const nlohmann::json& j) { return py::module_::import("json").attr("loads")(j.dump()); }

}  // namespace gpt2lab::python

// The extension inside the package gpt2lab (python/gpt2lab/__init__.py).
PYBIND11_MODULE(_gpt2lab, m) {
  namespace py = pybind11;
  m.doc() = "GPT-2 training, inference and research engine (docs/python.md)";
  m.attr("__version__") = GPT2LAB_VERSION;
  // The library's one error type, with its message.
  py::register_exception<gpt2lab::Error>(m, "Error", PyExc_RuntimeError);
  gpt2lab::python::add_tokenizer(m);
  gpt2lab::python::add_model(m);
  gpt2lab::python::add_train(m);
}
