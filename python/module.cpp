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
  // Unsigned ids are range-checked as unsigned: cast to int64, 2^63 + 5
  // would be reported as a negative id.
  if (a.dtype().kind() == 'u') {
    const auto u = py::array_t<uint64_t, py::array::c_style | py::array::forcecast>::ensure(a);
    for (py::ssize_t i = 0; i < u.size(); ++i)
      if (u.data()[i] > static_cast<uint64_t>(std::numeric_limits<int>::max()))
        throw Error(std::string(what) + ": id " + std::to_string(u.data()[i]) + " at index " + std::to_string(i) +
                    " is not a token id");
  }
  const auto wide = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(a);
  std::vector<int> ids(static_cast<size_t>(wide.size()));
  const int64_t* p = wide.data();
  for (size_t i = 0; i < ids.size(); ++i) {
    if (p[i] < -1 || p[i] > std::numeric_limits<int>::max())
      throw Error(std::string(what) + ": id " + std::to_string(p[i]) + " at index " + std::to_string(i) +
                  " is not a token id");
    ids[i] = static_cast<int>(p[i]);
  }
  return ids;
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
    // Past int64 a cast would fail with pybind11's own message; say which.
    const auto big = py::int_(py::reinterpret_borrow<py::object>(v));
    if (big >= py::int_(0) && big <= py::int_(std::numeric_limits<uint64_t>::max()) &&
        big > py::int_(std::numeric_limits<int64_t>::max()))
      return v.cast<uint64_t>();
    if (big < py::int_(std::numeric_limits<int64_t>::min()) || big > py::int_(std::numeric_limits<uint64_t>::max()))
      throw Error(std::string(what) + ": " + py::str(v).cast<std::string>() + " is out of range");
    return v.cast<int64_t>();
  }
  if (py::isinstance<py::float_>(v)) return v.cast<double>();
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if (py::hasattr(v, "__fspath__")) return py::module_::import("os").attr("fspath")(v).cast<std::string>();
  throw Error(std::string(what) + ": expected a bool, number or string, got " +
              py::str(py::type::of(v).attr("__name__")).cast<std::string>());
}

py::object from_json(const nlohmann::json& j) { return py::module_::import("json").attr("loads")(j.dump()); }

}  // namespace gpt2lab::python

PYBIND11_MODULE(gpt2lab, m) {
  namespace py = pybind11;
  m.doc() = "GPT-2 training, inference and research engine (docs/python.md)";
  m.attr("__version__") = GPT2LAB_VERSION;
  // The library's one error type, with its message.
  py::register_exception<gpt2lab::Error>(m, "Error", PyExc_RuntimeError);
  gpt2lab::python::add_tokenizer(m);
  gpt2lab::python::add_model(m);
  gpt2lab::python::add_train(m);
}
